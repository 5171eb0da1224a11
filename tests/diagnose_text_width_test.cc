// The diagnose terminal report on real inputs (the article's task outputs, and every
// nvidia-smi text and kernel-log file of the shared corpus): at 60 and at 160 columns, plain
// and verbose, no line passes the width except one holding a single token too long for it,
// and the 8-GPU power-brake paste is one line per finding id.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
#include "gpuvet/report.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

std::size_t columns(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char ch : s)
    if ((ch & 0xC0) != 0x80) ++n;
  return n;
}

// Lines wider than `width` that are not one long token (after at most a label).
std::vector<std::string> too_wide(const std::string& text, std::size_t width) {
  std::vector<std::string> bad;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (columns(line) <= width) continue;
    std::istringstream ws(line);
    std::vector<std::string> words;
    for (std::string w; ws >> w;) words.push_back(w);
    std::size_t longest = 0;
    for (const auto& w : words) longest = std::max(longest, columns(w));
    if (!(words.size() <= 2 && longest > width - 12)) bad.push_back(line);
  }
  return bad;
}

void expect_fits(const std::string& path) {
  auto facts = import_path(path);
  if (!facts.is_ok()) return;  // not an input of its own (a README beside the files)
  const Diagnosis d = diagnose(facts.value());
  for (int width : {60, 160})
    for (bool verbose : {false, true}) {
      TextOptions o;
      o.width = width;
      o.verbose = verbose;
      const std::string t = render_diagnosis_text(facts.value(), d, o);
      const auto bad = too_wide(t, static_cast<std::size_t>(width));
      EXPECT_TRUE(bad.empty()) << path << " at " << width << (verbose ? " -v" : "") << ": "
                               << (bad.empty() ? "" : bad.front()) << "\n"
                               << t;
    }
}

TEST(DiagnoseTextWidth, ArticleTasksFitTheWidth) {
  for (const auto& e : fs::directory_iterator(testing::fixture("article")))
    if (e.path().extension() == ".txt") expect_fits(e.path().string());
}

TEST(DiagnoseTextWidth, SharedCorpusFitsTheWidth) {
  GPUVET_REQUIRE_SHARED(testing::shared("nvsmi-text"));
  int files = 0;
  for (const char* folder : {"nvsmi-text", "nvsmi-xml", "host", "nccl-log", "p2p"}) {
    if (!fs::is_directory(testing::shared(folder))) continue;
    for (const auto& e : fs::recursive_directory_iterator(testing::shared(folder)))
      if (e.is_regular_file()) {
        expect_fits(e.path().string());
        ++files;
      }
  }
  EXPECT_GT(files, 20);
}

TEST(DiagnoseTextWidth, PowerBrakeOnEightGpusIsOneLinePerFindingId) {
  const std::string rel = "nvsmi-text/gpud-8x-h100-q-drv535.161-hw-power-brake-all-gpus.txt";
  GPUVET_REQUIRE_SHARED(testing::shared(rel));
  auto facts = import_path(testing::shared(rel));
  ASSERT_TRUE(facts.is_ok());
  const Diagnosis d = diagnose(facts.value());
  const std::string t = render_diagnosis_text(facts.value(), d);
  std::size_t replay_findings = 0, replay_subjects = 0;
  for (const auto& f : d.findings)
    if (f.id == "pcie-replay-errors") {
      ++replay_findings;
      replay_subjects += f.subjects.size();
    }
  ASSERT_GT(replay_subjects, 3u) << "the paste has replays on several GPUs";
  EXPECT_EQ(replay_findings, 1u) << "replays on every GPU are one node-wide finding";
  std::size_t blocks = 0;
  for (auto at = t.find("\nWARNING  pcie-replay-errors"); at != std::string::npos;
       at = t.find("\nWARNING  pcie-replay-errors", at + 1))
    ++blocks;
  EXPECT_EQ(blocks, 1u) << t;
  bool summary_line = false;
  std::istringstream summary(t);
  for (std::string line; std::getline(summary, line);)
    summary_line = summary_line || (line.rfind("  WARNING   power-throttle ", 0) == 0 &&
                                    line.find(" GPU0–7 ") != std::string::npos);
  EXPECT_TRUE(summary_line) << t;
  std::istringstream in(t);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  EXPECT_LT(n, 80u) << "140 lines before grouping (the Coverage part adds about 15)\n" << t;
}

}  // namespace
}  // namespace gpuvet
