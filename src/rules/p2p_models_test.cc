// p2p-unavailable and the GPU model (rules_topology.cc check_p2p): a topo -p2p matrix carries
// no GPU names, so the names come from another output of the same input through the merge;
// with no name at all, an NS is not read as a datacenter card's fault. Matrices and -L lines
// written for these tests in nvidia-smi's format (the layout of the AutoDL 2× RTX 2080 Ti
// paste in the shared corpus); the 8× RTX 4090 -q is gpud's (Apache-2.0,
// tests/fixtures/capture/nvsmi/README.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "fixture_util.h"
#include "import/load.h"
#include "rules/rule_test_util.h"

namespace gpuvet::rules {
namespace {

using testing::dump;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_group;
using testing::with_id;

// `nvidia-smi topo -p2p <which>` for n GPUs, every pair answering `code`.
std::string p2p(char which, int n, const std::string& code) {
  std::string s = std::string("$ nvidia-smi topo -p2p ") + which + "\n \t";
  for (int i = 0; i < n; ++i) s += "GPU" + std::to_string(i) + "\t";
  s += "\n";
  for (int i = 0; i < n; ++i) {
    s += " GPU" + std::to_string(i) + "\t";
    for (int j = 0; j < n; ++j) s += (i == j ? std::string("X") : code) + "\t";
    s += "\n";
  }
  s += "\nLegend:\n\n  X    = Self\n  OK   = Status Ok\n  CNS  = Chipset not supported\n"
       "  GNS  = GPU not supported\n  TNS  = Topology not supported\n  NS   = Not supported\n"
       "  U    = Unknown\n";
  return s;
}

std::string list(const std::string& name, int n) {
  std::string s = "$ nvidia-smi -L\n";
  for (int i = 0; i < n; ++i)
    s += "GPU " + std::to_string(i) + ": " + name +
         " (UUID: GPU-5e1a0c8d-0000-0000-0000-00000000000" + std::to_string(i) + ")\n";
  return s;
}

std::vector<Finding> p2p_findings(const std::string& text) {
  const Facts f = import::import_text(text, "ticket.txt");
  const auto o = run_group(check_topology, f);
  auto v = with_id(o, "p2p-unavailable");
  EXPECT_FALSE(v.empty()) << dump(o);
  return v;
}

TEST(P2pModels, MatrixAloneWithNsDoesNotAssumeADatacenterCard) {
  const auto v = p2p_findings(p2p('r', 2, "NS"));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  EXPECT_THAT(v[0].evidence, HasSubstr("the GPU model is not in the input"));
  EXPECT_THAT(v[0].evidence, HasSubstr("nvidia-smi -L"));
}

// The real AutoDL 2× RTX 2080 Ti paste (shared corpus; no license, so read from there).
TEST(P2pModels, RealAutodlMatrixAloneIsInfo) {
  const std::string path =
      gpuvet::testing::shared("p2p/autodl-2x-rtx2080ti-topo-p2p-p-not-supported.txt");
  GPUVET_REQUIRE_SHARED(path);
  // Read as the corpus holds it: without its prompt line (the matrix is then taken as read).
  const auto v = p2p_findings(gpuvet::testing::read_file(path));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo) << v[0].evidence;
}

TEST(P2pModels, GeForceNamesFromAnotherOutputMakeItExpected) {
  for (const std::string& session : {list("NVIDIA GeForce RTX 2080 Ti", 2) + p2p('r', 2, "NS"),
                                     p2p('w', 2, "NS") + list("NVIDIA GeForce RTX 2080 Ti", 2)}) {
    const auto v = p2p_findings(session);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].severity, Severity::kInfo);
    EXPECT_THAT(v[0].evidence, HasSubstr("GeForce cards"));
    EXPECT_THAT(v[0].evidence, Not(HasSubstr("model is not in the input")));
  }
  // gpud's real 8× RTX 4090 nvidia-smi -q beside a matrix of all eight.
  const std::string q = gpuvet::testing::read_file(
      gpuvet::testing::fixture("capture/nvsmi/gpud-8x-rtx4090-q-drv535-host-a-sw-power-cap.txt"));
  const auto v = p2p_findings("$ nvidia-smi -q\n" + q + p2p('r', 8, "NS"));
  // One finding for the one answer all 28 pairs give, each pair named.
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo) << v[0].evidence;
  EXPECT_EQ(v[0].subjects.size(), 28u);
  EXPECT_THAT(v[0].evidence, HasSubstr("all 28 pairs of GPU0–7 P2P read NS"));
  EXPECT_THAT(v[0].evidence, HasSubstr("GeForce cards"));
}

TEST(P2pModels, DatacenterNamesOrPlatformCodesStayWarnings) {
  auto v = p2p_findings(list("NVIDIA H100 80GB HBM3", 2) + p2p('r', 2, "NS"));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning) << v[0].evidence;
  // CNS names the chipset whatever the card; U and TNS likewise.
  for (const char* code : {"CNS", "TNS", "U"}) {
    v = p2p_findings(p2p('r', 2, code));
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].severity, Severity::kWarning) << code << ": " << v[0].evidence;
  }
  // One datacenter card named, the other not: not a GeForce pair.
  v = p2p_findings("$ nvidia-smi -L\nGPU 0: NVIDIA L4 (UUID: GPU-5e1a0c8d-1)\n" +
                   p2p('r', 2, "NS"));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning) << v[0].evidence;
  // Healthy: OK everywhere says nothing, names or not.
  const Facts ok = import::import_text(p2p('r', 4, "OK"), "ok.txt");
  EXPECT_TRUE(with_id(run_group(check_topology, ok), "p2p-unavailable").empty());
}

}  // namespace
}  // namespace gpuvet::rules
