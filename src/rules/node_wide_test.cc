// Node-level findings (rules/node_wide.cc): one fault reported by every GPU of the node at
// once is one finding with all GPUs as subjects; a fault on some GPUs stays per GPU.
#include "rules/node_wide.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "fixture_util.h"
#include "import/load.h"
#include "rules/rule_test_util.h"

namespace gpuvet::rules {
namespace {

using testing::dump;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::run_group;
using testing::with_id;

Facts nvsmi_fixture(const std::string& name) {
  return import::import_text(
      gpuvet::testing::read_file(gpuvet::testing::fixture("capture/nvsmi/" + name)), name);
}

// gpud's 8× H100 VM capture (Apache-2.0, tests/fixtures/capture/nvsmi/README.md): replays
// 58..120 on every GPU.
TEST(NodeWide, ReplaysOnEveryGpuOfARealCaptureAreOneFinding) {
  const Facts f = nvsmi_fixture("gpud-8x-h100-passthrough-q-drv535.183-pcie-replays.txt");
  ASSERT_EQ(f.gpus.size(), 8u);
  const auto o = run_group(check_topology, f);
  const auto r = with_id(o, "pcie-replay-errors");
  ASSERT_EQ(r.size(), 1u) << dump(o);
  EXPECT_EQ(r[0].severity, Severity::kWarning);
  EXPECT_THAT(r[0].subjects,
              ElementsAre("GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7"));
  EXPECT_THAT(r[0].evidence, HasSubstr("all 8 GPUs of the node (GPU0–GPU7) report PCIe replays"));
  EXPECT_THAT(r[0].evidence, HasSubstr("what their links share"));
  ASSERT_TRUE(r[0].decision_note);
  EXPECT_THAT(*r[0].decision_note, HasSubstr("Node-level"));
}

// gpud's 8× H100 HGX capture: 43..82 replays, two GPUs under the warning count. Still one
// fault of the node, at the worst GPU's severity.
TEST(NodeWide, ReplaysOnEveryGpuAtMixedSeveritiesAreOneWarning) {
  const Facts f = nvsmi_fixture("gpud-8x-h100-q-drv535.161-hw-power-brake-all-gpus.txt");
  const auto o = run_group(check_topology, f);
  const auto r = with_id(o, "pcie-replay-errors");
  ASSERT_EQ(r.size(), 1u) << dump(o);
  EXPECT_EQ(r[0].severity, Severity::kWarning);
  EXPECT_EQ(r[0].subjects.size(), 8u);
  EXPECT_THAT(r[0].evidence, HasSubstr("some at or above 50"));
}

Facts four_gpus() {
  Facts f;
  for (int i = 0; i < 4; ++i) {
    GpuFacts g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + i * 0x10);
    f.gpus.push_back(g);
  }
  return f;
}

TEST(NodeWide, ReplaysOnSomeGpusStayPerGpu) {
  Facts f = four_gpus();
  f.gpus[2].pcie.replay_counter = 120;
  auto o = run_group(check_topology, f);
  auto r = with_id(o, "pcie-replay-errors");
  ASSERT_EQ(r.size(), 1u) << dump(o);
  EXPECT_THAT(r[0].subjects, ElementsAre("GPU2"));
  EXPECT_THAT(r[0].evidence, HasSubstr("GPU2 PCIe replay counter 120 (0000:38:00.0)"));
  EXPECT_THAT(r[0].evidence, ::testing::Not(HasSubstr("node")));
  f.gpus[0].pcie.replay_counter = 3;
  f.gpus[1].pcie.replay_counter = 7;  // three of four
  o = run_group(check_topology, f);
  EXPECT_EQ(with_id(o, "pcie-replay-errors").size(), 3u) << dump(o);
  f.gpus[3].pcie.replay_counter = 2;  // all four: one finding
  o = run_group(check_topology, f);
  r = with_id(o, "pcie-replay-errors");
  ASSERT_EQ(r.size(), 1u) << dump(o);
  EXPECT_THAT(r[0].evidence, HasSubstr("counters 2–120 (GPU0 3, GPU1 7, GPU2 120, GPU3 2)"));
  // A single GPU is never "the node".
  Facts one = four_gpus();
  one.gpus.resize(1);
  one.gpus[0].pcie.replay_counter = 80;
  o = run_group(check_topology, one);
  r = with_id(o, "pcie-replay-errors");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(r[0].evidence, ::testing::Not(HasSubstr("node")));
}

// The bus ids of four_gpus(), as nvidia-smi --query-gpu prints them (written for these tests).
const char* kQuery =
    "$ nvidia-smi --query-gpu=index,pci.bus_id,name --format=csv\n"
    "index, pci.bus_id, name\n"
    "0, 00000000:18:00.0, NVIDIA H100 80GB HBM3\n"
    "1, 00000000:28:00.0, NVIDIA H100 80GB HBM3\n"
    "2, 00000000:38:00.0, NVIDIA H100 80GB HBM3\n"
    "3, 00000000:48:00.0, NVIDIA H100 80GB HBM3\n";

std::string xid_line(double t, const char* bus, int code, const char* rest) {
  return fmt::format("[{:>12.6f}] NVRM: Xid (PCI:{}): {}, {}\n", t, bus, code, rest);
}

// dmesg lines in the driver's format (written for these tests): one job's processes killed on
// all four GPUs within a second.
TEST(NodeWide, Xid45OnEveryGpuAtOnceIsOneJobFinding) {
  std::string log = "$ dmesg\n";
  const char* buses[] = {"0000:18:00", "0000:28:00", "0000:38:00", "0000:48:00"};
  for (int i = 0; i < 4; ++i)
    log += xid_line(91234.5 + 0.2 * i, buses[i], 45,
                    fmt::format("pid=7{}1, name=python3, Ch 0000000{}", i, i + 1).c_str());
  const Facts f = import::import_text(std::string(kQuery) + log, "ticket.txt");
  ASSERT_EQ(f.kernel_log.xids.size(), 4u);
  const auto o = run_group(check_gpu_health, f);
  const auto x = with_id(o, "xid-error");
  ASSERT_EQ(x.size(), 1u) << dump(o);
  EXPECT_EQ(x[0].severity, Severity::kInfo);
  EXPECT_THAT(x[0].subjects, ElementsAre("GPU0", "GPU1", "GPU2", "GPU3"));
  EXPECT_THAT(x[0].evidence,
              HasSubstr("Xid 45 ×4 on all 4 GPUs of the node (GPU0–GPU3) within 1 s"));
  EXPECT_THAT(x[0].evidence, HasSubstr("one job's processes stopped on every GPU"));
  ASSERT_TRUE(x[0].bottleneck);
  EXPECT_EQ(*x[0].bottleneck, Bottleneck::kNone);
  ASSERT_TRUE(x[0].decision_note);
  EXPECT_THAT(*x[0].decision_note, HasSubstr("about the job"));
}

TEST(NodeWide, Xid79OnEveryGpuAtOnceIsOneHostFinding) {
  std::string log;
  const char* buses[] = {"0000:18:00", "0000:28:00", "0000:38:00", "0000:48:00"};
  for (int i = 0; i < 4; ++i)
    log += xid_line(500.0 + i, buses[i], 79, "pid=1234, GPU has fallen off the bus.");
  const Facts f = import::import_text(std::string(kQuery) + "$ dmesg\n" + log, "ticket.txt");
  const auto o = run_group(check_gpu_health, f);
  const auto x = with_id(o, "xid-error");
  ASSERT_EQ(x.size(), 1u) << dump(o);
  EXPECT_EQ(x[0].severity, Severity::kCritical);
  EXPECT_EQ(x[0].subjects.size(), 4u);
  EXPECT_THAT(x[0].evidence, HasSubstr("within 3 s"));
  EXPECT_THAT(x[0].evidence, HasSubstr("the host's PCIe"));
  EXPECT_THAT(*x[0].decision_note, HasSubstr("ipmitool sel list"));
  EXPECT_THAT(*x[0].decision_note, HasSubstr("RESTART_BM"));  // the code's own note is kept
}

TEST(NodeWide, XidOnSomeGpusOrHoursApartStaysPerGpu) {
  const char* buses[] = {"0000:18:00", "0000:28:00", "0000:38:00", "0000:48:00"};
  std::string some;
  for (int i = 0; i < 2; ++i) some += xid_line(500.0 + i, buses[i], 79, "pid=1, fallen off.");
  auto f = import::import_text(std::string(kQuery) + "$ dmesg\n" + some, "t.txt");
  auto o = run_group(check_gpu_health, f);
  auto x = with_id(o, "xid-error");
  ASSERT_EQ(x.size(), 2u) << dump(o);
  for (const auto& one : x) {
    EXPECT_EQ(one.subjects.size(), 1u);
    EXPECT_THAT(one.evidence, ::testing::Not(HasSubstr("of the node")));
  }
  std::string apart;  // every GPU, but an hour between each: four faults, not one
  for (int i = 0; i < 4; ++i) apart += xid_line(500.0 + 3600 * i, buses[i], 79, "pid=1, off.");
  f = import::import_text(std::string(kQuery) + "$ dmesg\n" + apart, "t.txt");
  o = run_group(check_gpu_health, f);
  EXPECT_EQ(with_id(o, "xid-error").size(), 4u) << dump(o);
  // Different codes on every GPU are not one event either.
  std::string mixed;
  for (int i = 0; i < 4; ++i) mixed += xid_line(500.0, buses[i], i < 2 ? 79 : 13, "pid=1, x.");
  f = import::import_text(std::string(kQuery) + "$ dmesg\n" + mixed, "t.txt");
  o = run_group(check_gpu_health, f);
  EXPECT_EQ(with_id(o, "xid-error").size(), 4u) << dump(o);
}

TEST(NodeWide, GpuSpanAndEveryGpu) {
  EXPECT_EQ(gpu_span({3, 1, 2}), "GPU1–GPU3");
  EXPECT_EQ(gpu_span({0, 2}), "GPU0, GPU2");
  EXPECT_EQ(gpu_span({0, 1}), "GPU0, GPU1");
  Facts f = four_gpus();
  EXPECT_TRUE(every_gpu(f, {3, 2, 1, 0}));
  EXPECT_FALSE(every_gpu(f, {0, 1, 2}));
  EXPECT_FALSE(every_gpu(f, {0, 1, 2, 2}));
  f.gpus.resize(1);
  EXPECT_FALSE(every_gpu(f, {0}));
}

}  // namespace
}  // namespace gpuvet::rules
