// Findings about GPU pairs on nodes of any size: one finding per cause, its pairs compacted,
// never one per pair (a 1024-GPU node has half a million SYS pairs), and a cost that grows
// with the input, not with its square.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
#include "gpuvet/report.h"
#include "growth_util.h"
#include "large_inputs.h"

namespace gpuvet {
namespace {

using testing::topo_islands;

std::vector<const Finding*> with_id(const Diagnosis& d, std::string_view id) {
  std::vector<const Finding*> out;
  for (const auto& f : d.findings)
    if (f.id == id) out.push_back(&f);
  return out;
}

TEST(PairScale, EightGpusOnTwoSocketsAreOneFindingNamingEverySysPair) {
  const Facts f = import_text(topo_islands(8, 4), "topo.txt", {});
  ASSERT_EQ(f.gpus.size(), 8u);
  const Diagnosis d = diagnose(f);
  const auto v = with_id(d, "gpu-pair-crosses-numa");
  ASSERT_EQ(v.size(), 1u);
  // Sixteen pairs, each named (acknowledgements and baselines name pairs on ordinary nodes).
  EXPECT_EQ(v[0]->subjects.size(), 16u);
  EXPECT_EQ(v[0]->subjects.front(), "GPU0-GPU4");
  EXPECT_NE(v[0]->evidence.find("16 pairs (GPU0–3 × GPU4–7) path SYS"), std::string::npos)
      << v[0]->evidence;
  EXPECT_NE(v[0]->evidence.find("(GPU0–3 on NUMA node 0, GPU4–7 on node 1)"), std::string::npos)
      << v[0]->evidence;
}

TEST(PairScale, AThousandGpusGiveAFewFindingsAndASmallReport) {
  const Facts f = import_text(topo_islands(1024), "topo.txt", {});
  ASSERT_EQ(f.gpus.size(), 1024u);
  const Diagnosis d = diagnose(f);
  const auto v = with_id(d, "gpu-pair-crosses-numa");
  // Across the two NUMA nodes, and between the islands inside each node.
  ASSERT_EQ(v.size(), 3u);
  std::vector<std::string> subjects;
  for (const auto* x : v) {
    ASSERT_EQ(x->subjects.size(), 1u) << x->evidence;
    subjects.push_back(x->subjects[0]);
  }
  std::sort(subjects.begin(), subjects.end());
  EXPECT_EQ(subjects[0], "129024 pairs among GPU0–511");
  EXPECT_EQ(subjects[1], "129024 pairs among GPU512–1023");
  EXPECT_EQ(subjects[2], "GPU0–511 × GPU512–1023");
  EXPECT_LT(d.findings.size(), 20u);
  // The report stays small: the facts (every pair) are most of it, the findings a few lines.
  const std::string text = render_diagnosis_text(f, d);
  EXPECT_LT(text.size(), 20'000u);
  const std::string facts = render_facts_text(f);
  EXPECT_LT(facts.size(), 1'000'000u);
  EXPECT_NE(facts.find("the matrix is shown up to 64"), std::string::npos);
}

// The facts of a big node as report/1: the pairs as a matrix, read back the same.
TEST(PairScale, TheJsonOfAThousandGpusHoldsEveryPairInAMatrixAndReadsBack) {
  const Facts f = import_text(topo_islands(1024), "topo.txt", {});
  const std::string json = facts_to_json(f);
  EXPECT_LT(json.size(), 8'000'000u);
  const auto doc = nlohmann::json::parse(json);
  EXPECT_TRUE(doc["pairs"].empty());
  EXPECT_EQ(doc["pair_matrix"]["gpus"].size(), 1024u);
  EXPECT_EQ(doc["pair_matrix"]["path"][0].get<std::string>().substr(0, 12), "X NV18 NV18 ");
  const Facts back = import_text(json, "facts.json", {});
  ASSERT_EQ(back.pairs.size(), f.pairs.size());
  for (std::size_t i = 0; i < f.pairs.size(); i += 997) {
    EXPECT_EQ(back.pairs[i].a, f.pairs[i].a);
    EXPECT_EQ(back.pairs[i].b, f.pairs[i].b);
    EXPECT_EQ(back.pairs[i].path, f.pairs[i].path);
    EXPECT_EQ(back.pairs[i].nvlinks, f.pairs[i].nvlinks);
  }
  // A node of 64 GPUs keeps one object per pair.
  const Facts small = import_text(topo_islands(64), "topo.txt", {});
  const auto small_doc = nlohmann::json::parse(facts_to_json(small));
  EXPECT_EQ(small_doc["pairs"].size(), 2016u);
  EXPECT_FALSE(small_doc.contains("pair_matrix"));
}

// Import, diagnose and render at n GPUs and at twice as many (four times the pairs and bytes).
TEST(PairScale, DiagnosingABigNodeGrowsWithItsPairsNotTheirSquare) {
  auto work = [](std::size_t cells) {
    const int n = static_cast<int>(std::lround(std::sqrt(static_cast<double>(cells))));
    const Facts f = import_text(topo_islands(n), "topo.txt", {});
    const Diagnosis d = diagnose(f);
    EXPECT_FALSE(render_diagnosis_text(f, d).empty());
    EXPECT_FALSE(render_facts_text(f).empty());
  };
  testing::expect_linear_growth("diagnose_topo", work, 128 * 128, 4);
}

}  // namespace
}  // namespace gpuvet
