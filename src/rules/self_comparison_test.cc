// Figures judged against each other when no expected figure is known: peer access slower than
// copies through host memory (p2pBandwidthLatencyTest's two matrices), and the same host copy
// run twice at rates more than 2x apart (two bandwidthTest runs). And NCCL 2.3's WARN lines,
// which lack the word NCCL.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
#include "rules/rule_test_util.h"

namespace gpuvet {
namespace {

// The findings of one id in a diagnosis.
std::vector<Finding> ids(const Diagnosis& d, const std::string& id) {
  return rules::testing::with_id(d.findings, id);
}

std::string p2p_test(const char* enabled_01) {
  return std::string(
             "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
             "Device: 0, NVIDIA RTX A6000, pciBusID: 1, pciDeviceID: 0, pciDomainID:0\n"
             "Device: 1, NVIDIA RTX A6000, pciBusID: 2, pciDeviceID: 0, pciDomainID:0\n"
             "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
             "   D\\D     0      1\n"
             "     0 672.70  13.10\n"
             "     1  13.20 674.10\n"
             "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"
             "   D\\D     0      1\n"
             "     0 673.40  ") +
         enabled_01 +
         "\n"
         "     1  21.90 673.90\n";
}

TEST(SelfComparison, PeerAccessSlowerThanHostCopiesIsP2pBandwidthLow) {
  const Diagnosis slow = diagnose(import_text(p2p_test(" 1.60"), "p2p.txt"));
  auto f = ids(slow, "p2p-bandwidth-low");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_NE(f[0].evidence.find("ACS"), std::string::npos) << f[0].evidence;
  // Faster with peer access than without: nothing to say.
  EXPECT_TRUE(
      ids(diagnose(import_text(p2p_test("21.80"), "p2p.txt")), "p2p-bandwidth-low").empty());
}

std::string bandwidth_test(const char* gbps) {
  return std::string(
             "[CUDA Bandwidth Test] - Starting...\n"
             "Running on...\n\n"
             " Device 0: Tesla P100-PCIE-16GB\n"
             " Quick Mode\n\n"
             " Host to Device Bandwidth, 1 Device(s)\n"
             " PINNED Memory Transfers\n"
             "   Transfer Size (Bytes)\tBandwidth(GB/s)\n"
             "   32000000\t\t\t") +
         gbps + "\n\n";
}

TEST(SelfComparison, TheSameHostCopyTwiceAsSlowInAnotherRunIsH2dBandwidthLow) {
  Facts f = import_text(bandwidth_test("12.1"), "numa0.txt");
  Facts g = import_text(bandwidth_test("3.8"), "numa1.txt");
  for (auto& m : g.measurements) f.measurements.push_back(m);
  auto low = ids(diagnose(f), "h2d-bandwidth-low");
  ASSERT_FALSE(low.empty());
  bool spread = false;
  for (const auto& x : low) spread = spread || x.evidence.find("NUMA") != std::string::npos;
  EXPECT_TRUE(spread);
  // Two runs within 2x of each other: nothing from this rule.
  Facts same = import_text(bandwidth_test("12.1"), "a.txt");
  for (auto& m : import_text(bandwidth_test("11.0"), "b.txt").measurements)
    same.measurements.push_back(m);
  for (const auto& x : ids(diagnose(same), "h2d-bandwidth-low"))
    EXPECT_EQ(x.evidence.find("another"), std::string::npos) << x.evidence;
}

TEST(OldNcclLogs, WarnWithoutTheWordNcclIsRead) {
  const Facts f = import_text(
      "e66aa18dc444:3171:3171 [0] misc/ibvwrap.cu:61 WARN Failed to open libibverbs.so[.1]\n"
      "e66aa18dc444:3171:3171 [0] include/socket.h:311 WARN Socket creation failed : Address "
      "family not supported by protocol\n",
      "nccl.log");
  ASSERT_FALSE(f.imported.empty());
  EXPECT_EQ(f.imported[0].format, "nccl-debug-log");
  auto e = ids(diagnose(f), "nccl-error");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].evidence.find("Socket creation failed"), std::string::npos) << e[0].evidence;
  // Prose with the word WARN is not a log line.
  const Facts prose = import_text("Note: the WARN level is noisy, see docs.\n", "note.txt");
  EXPECT_TRUE(prose.nccl_events.empty());
}

}  // namespace
}  // namespace gpuvet
