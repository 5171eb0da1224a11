// The NVML probe against the fake NVML library (tests/fake_nvml), loaded
// through the same dlopen path as the driver's libnvidia-ml.so.1.
#include "probe/nvml_probe.h"

#include "gpuvet/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

namespace gpuvet::probe {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string scenario(const std::string& name) {
  return std::string(GPUVET_TEST_DATA) + "/scenarios/" + name;
}

NvmlProbeResult probe_with(const std::string& scenario_file,
                           const std::string& library = GPUVET_FAKE_NVML,
                           milliseconds gpu_timeout = milliseconds(3000),
                           milliseconds init_timeout = milliseconds(3000)) {
  ::setenv("GPUVET_FAKE_NVML_SCENARIO", scenario_file.c_str(), 1);
  NvmlProbeOptions o;
  o.library = library;
  o.library_given_by_user = true;
  o.gpu_timeout = gpu_timeout;
  o.init_timeout = init_timeout;
  return probe_nvml(o);
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(NvmlProbeTest, H200IdleReadsEveryField) {
  auto r = probe_with(scenario("h200-1gpu-idle.json"));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  EXPECT_EQ(r.driver_version.value_or(""), "580.159.04");
  EXPECT_EQ(r.cuda_driver_version.value_or(""), "13.0");
  EXPECT_NE(r.symbol_versions.find("nvmlInit_v2"), std::string::npos);
  EXPECT_NE(r.library_path.find("nvidia-ml-fake"), std::string::npos);
  ASSERT_EQ(r.gpus.size(), 1u);
  const auto& g = r.gpus[0];
  EXPECT_FALSE(g.unresponsive);
  EXPECT_EQ(g.name.value_or(""), "NVIDIA H200");
  EXPECT_EQ(g.pci_bus_id.value_or(""), "0000:00:06.0");
  EXPECT_EQ(g.pcie.gen_current, 5);
  EXPECT_EQ(g.pcie.gen_max, 5);
  EXPECT_EQ(g.pcie.width_current, 16);
  EXPECT_EQ(g.pcie.width_max, 16);
  EXPECT_EQ(g.pcie.replay_counter, 0u);
  EXPECT_EQ(g.clocks.sm_mhz, 345);
  EXPECT_EQ(g.clocks.sm_max_mhz, 1980);
  EXPECT_EQ(g.clocks.mem_max_mhz, 3201);
  EXPECT_EQ(g.clock_events.active, std::vector<std::string>{"idle"});
  EXPECT_EQ(g.clock_events.accumulated_ns.at("power"), 0u);
  EXPECT_EQ(g.clock_events.accumulated_ns.count("low_utilization"),
            0u);  // idle time is not a limit
  EXPECT_EQ(g.clock_events.accumulated_ns.size(), 5u);
  EXPECT_EQ(g.thermal.gpu_c, 38);
  EXPECT_EQ(g.thermal.margin_c, 49);
  EXPECT_EQ(g.thermal.slowdown_c, 89);
  ASSERT_TRUE(g.power.draw_w);
  EXPECT_NEAR(*g.power.draw_w, 79.218, 1e-6);
  EXPECT_EQ(g.power.limit_w, 700.0);
  EXPECT_EQ(g.power.default_limit_w, 700.0);
  EXPECT_EQ(g.ecc.enabled, true);
  EXPECT_EQ(g.ecc.volatile_counts.uncorrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_counts.corrected, 0u);
  EXPECT_EQ(g.ecc.remapping_pending, false);
  EXPECT_EQ(g.memory.total_bytes, 150754820096u);
  EXPECT_EQ(g.mig_enabled, false);
  EXPECT_EQ(g.persistence_mode.value_or(""), "enabled");
  EXPECT_EQ(g.cpu_affinity.size(), 16u);
  EXPECT_TRUE(g.nvlinks.empty());  // NVLink disabled: every NVLink call NOT_SUPPORTED
  EXPECT_EQ(g.fabric.state.value_or(""), "not_supported");
  EXPECT_TRUE(g.unreadable.empty()) << g.unreadable.front();
  EXPECT_TRUE(r.pairs.empty());
  EXPECT_FALSE(r.abandoned_threads);
}

TEST(NvmlProbeTest, OldDriverFallsBackToUnversionedSymbols) {
  auto r = probe_with(scenario("h200-1gpu-idle.json"), GPUVET_FAKE_NVML_OLD);
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  EXPECT_NE(r.symbol_versions.find("nvmlInit"), std::string::npos);
  EXPECT_EQ(r.symbol_versions.find("nvmlInit_v2"), std::string::npos);
  EXPECT_NE(r.symbol_versions.find("nvmlDeviceGetCurrentClocksThrottleReasons"), std::string::npos);
  ASSERT_EQ(r.gpus.size(), 1u);
  const auto& g = r.gpus[0];
  EXPECT_EQ(g.name.value_or(""), "NVIDIA H200");
  EXPECT_EQ(g.pci_bus_id.value_or(""), "0000:00:06.0");
  EXPECT_EQ(g.clock_events.active, std::vector<std::string>{"idle"});
  // Symbols the old driver lacks leave their fields empty, they do not fail the probe.
  EXPECT_FALSE(g.thermal.margin_c);
  EXPECT_FALSE(g.ecc.remapping_pending);
  EXPECT_FALSE(g.fabric.state);
  EXPECT_EQ(g.thermal.gpu_c, 38);
}

// The driver's recovery action is NVML field 230: read live (in nvidia-smi's words), unknown
// where the driver lacks the call (the old fake) or the field.
TEST(NvmlProbeTest, RecoveryActionIsReadFromTheFieldValues) {
  auto r = probe_with(scenario("fault-recovery-reset.json"));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].recovery_action, "Reset");
  auto idle = probe_with(scenario("h200-1gpu-idle.json"));
  ASSERT_EQ(idle.gpus.size(), 1u);
  EXPECT_FALSE(idle.gpus[0].recovery_action) << *idle.gpus[0].recovery_action;
  auto old = probe_with(scenario("fault-recovery-reset.json"), GPUVET_FAKE_NVML_OLD);
  ASSERT_EQ(old.gpus.size(), 1u);
  EXPECT_FALSE(old.gpus[0].recovery_action);
}

TEST(NvmlProbeTest, LoadedGpuShowsPowerCapAndProcess) {
  auto r = probe_with(scenario("h200-1gpu-load.json"));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_TRUE(has(r.gpus[0].clock_events.active, "sw_power_cap"));
  EXPECT_EQ(r.gpus[0].utilization.gpu_pct, 100);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].gpu, 0);
  EXPECT_GT(r.processes[0].host_pid, 0);
  EXPECT_TRUE(r.processes[0].name);
  EXPECT_TRUE(r.processes[0].used_memory_bytes);
}

TEST(NvmlProbeTest, LostGpuIsReportedAndOthersAreComplete) {
  auto r = probe_with(scenario("fault-gpu-lost.json"));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.gpus.size(), 3u);
  ASSERT_TRUE(r.gpus[1].unresponsive);
  EXPECT_NE(r.gpus[1].unresponsive->find("GPU_IS_LOST"), std::string::npos);
  for (int i : {0, 2}) {
    EXPECT_FALSE(r.gpus[i].unresponsive);
    EXPECT_TRUE(r.gpus[i].name);
    EXPECT_TRUE(r.gpus[i].clocks.sm_max_mhz);
  }
  // Pairs involving the lost GPU are not queried.
  for (const auto& p : r.pairs) EXPECT_TRUE(p.a != 1 && p.b != 1);
  EXPECT_EQ(r.pairs.size(), 1u);
}

TEST(NvmlProbeTest, HungGpuTimesOutWhileTheOtherIsReported) {
  const auto start = std::chrono::steady_clock::now();
  auto r = probe_with(scenario("fault-hang.json"), GPUVET_FAKE_NVML, milliseconds(500));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(5));  // the scenario hangs for 30 s
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_FALSE(r.gpus[0].unresponsive);
  EXPECT_EQ(r.gpus[0].name.value_or(""), "NVIDIA A100-SXM4-80GB");
  ASSERT_TRUE(r.gpus[1].unresponsive);
  EXPECT_NE(r.gpus[1].unresponsive->find("nvmlDeviceGetName did not return within 0.5 s"),
            std::string::npos)
      << *r.gpus[1].unresponsive;
  EXPECT_TRUE(r.abandoned_threads);
}

TEST(NvmlProbeTest, InitHangTimesOut) {
  const auto start = std::chrono::steady_clock::now();
  auto r = probe_with(scenario("fault-init-hang.json"), GPUVET_FAKE_NVML, milliseconds(500),
                      milliseconds(300));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.failure, NvmlFailure::kInitTimeout);
  EXPECT_NE(r.failure_message.find("nvmlInit did not return within 0.3 s"), std::string::npos)
      << r.failure_message;
  EXPECT_TRUE(r.gpus.empty());
  EXPECT_TRUE(r.abandoned_threads);
}

TEST(NvmlProbeTest, VersionMismatchSaysWhatToDo) {
  auto r = probe_with(scenario("fault-init-mismatch.json"));
  EXPECT_EQ(r.failure, NvmlFailure::kVersionMismatch);
  EXPECT_NE(r.failure_message.find("reboot"), std::string::npos);
}

TEST(NvmlProbeTest, DriverNotLoaded) {
  auto r = probe_with(scenario("fault-driver-not-loaded.json"));
  EXPECT_EQ(r.failure, NvmlFailure::kDriverNotLoaded);
  EXPECT_NE(r.failure_message.find("not loaded"), std::string::npos);
}

TEST(NvmlProbeTest, FailingCallsAreListedNotFatal) {
  auto r = probe_with(scenario("fault-call-errors.json"));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_GE(r.gpus.size(), 1u);
  const auto& g = r.gpus[0];
  EXPECT_FALSE(g.unresponsive);
  EXPECT_FALSE(g.pcie.replay_counter);  // NOT_SUPPORTED: empty, and not listed as a failure
  EXPECT_TRUE(has(g.unreadable, "ecc.mode: NO_PERMISSION"));
  EXPECT_TRUE(has(g.unreadable, "processes: UNKNOWN"));
  EXPECT_FALSE(g.ecc.enabled);
  EXPECT_TRUE(g.name);
  EXPECT_TRUE(g.clocks.sm_max_mhz);
  for (const auto& u : g.unreadable)
    EXPECT_EQ(u.find("pcie.replay_counter"), std::string::npos) << u;
}

TEST(NvmlProbeTest, MalformedScenarioIsAClearInitError) {
  auto r = probe_with(scenario("malformed.json"));
  EXPECT_EQ(r.failure, NvmlFailure::kInitFailed);
  EXPECT_NE(r.failure_message.find("malformed.json"), std::string::npos) << r.failure_message;
}

TEST(NvmlProbeTest, NvSwitchBoardShowsNv18BetweenAllPairs) {
  auto r = probe_with(scenario("8gpu-nvlink-h100.json"));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.gpus.size(), 8u);
  ASSERT_EQ(r.pairs.size(), 28u);
  for (const auto& p : r.pairs) {
    EXPECT_EQ(p.path, PathType::kNVLink) << p.a << "-" << p.b;
    EXPECT_EQ(p.nvlinks, 18) << p.a << "-" << p.b;
    EXPECT_EQ(p.p2p_read, P2PStatus::kOk);
  }
  for (const auto& g : r.gpus) {
    EXPECT_EQ(g.nvlinks.size(), 18u);
    EXPECT_EQ(g.fabric.state.value_or(""), "completed");
  }
}

TEST(NvmlProbeTest, DirectNvlinkBoardMapsRemoteGpus) {
  auto r = probe_with(scenario("4gpu-nvlink-direct.json"));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.gpus.size(), 4u);
  int linked_pairs = 0;
  for (const auto& p : r.pairs)
    if (p.path == PathType::kNVLink) {
      ++linked_pairs;
      EXPECT_GT(p.nvlinks.value_or(0), 0);
    }
  EXPECT_GT(linked_pairs, 0);
  bool mapped = false;
  for (const auto& g : r.gpus)
    for (const auto& l : g.nvlinks) mapped |= l.remote_gpu.has_value();
  EXPECT_TRUE(mapped);
}

TEST(NvmlProbeTest, PcieBoxAcrossSocketsIsSysWithoutP2P) {
  auto r = probe_with(scenario("2gpu-pcie-sys.json"));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.pairs.size(), 1u);
  EXPECT_EQ(r.pairs[0].path, PathType::kSYS);
  ASSERT_TRUE(r.pairs[0].p2p_read);
  EXPECT_NE(*r.pairs[0].p2p_read, P2PStatus::kOk);
}

TEST(NvmlProbeTest, MissingLibraryIsNotNoGpu) {
  auto r = probe_with(scenario("h200-1gpu-idle.json"), "/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(r.failure, NvmlFailure::kLibraryMissing);
  NvmlProbeOptions o;
  o.library = "libgpuvet-no-such-nvml.so.1";  // default-path style: no driver installed
  auto d = probe_nvml(o);
  EXPECT_EQ(d.failure, NvmlFailure::kLibraryMissing);
  EXPECT_NE(d.failure_message.find("no NVIDIA driver"), std::string::npos);
}

TEST(NvmlProbeTest, GarbageFileIsInvalidLibrary) {
  auto path = fs::temp_directory_path() / ("gpuvet-garbage-" + std::to_string(::getpid()) + ".so");
  {
    std::ofstream f(path, std::ios::binary);
    for (int i = 0; i < 4096; ++i) f.put(static_cast<char>((i * 7919) & 0xff));
  }
  auto r = probe_with(scenario("h200-1gpu-idle.json"), path.string());
  EXPECT_EQ(r.failure, NvmlFailure::kLibraryInvalid);
  EXPECT_NE(r.failure_message.find("not a shared library"), std::string::npos) << r.failure_message;
  fs::remove(path);
}

TEST(NvmlProbeTest, ElfThatIsNotNvmlIsInvalid) {
  // The fake's own test binary is an ELF file but has no nvmlInit: any non-NVML
  // shared object behaves the same. Use libc, which every machine has.
  auto r = probe_with(scenario("h200-1gpu-idle.json"), "libc.so.6");
  EXPECT_EQ(r.failure, NvmlFailure::kLibraryInvalid);
  EXPECT_NE(r.failure_message.find("not NVML"), std::string::npos) << r.failure_message;
}

TEST(NvmlProbeTest, StubLibraryIsRecognised) {
  auto dir =
      fs::temp_directory_path() / ("gpuvet-cuda-" + std::to_string(::getpid())) / "lib64" / "stubs";
  fs::create_directories(dir);
  fs::copy_file(GPUVET_FAKE_NVML, dir / "libnvidia-ml.so", fs::copy_options::overwrite_existing);
  auto r = probe_with(scenario("h200-1gpu-idle.json"), (dir / "libnvidia-ml.so").string());
  EXPECT_EQ(r.failure, NvmlFailure::kStubLibrary);
  EXPECT_NE(r.failure_message.find("stub"), std::string::npos);
  EXPECT_TRUE(r.gpus.empty());
}

// A library path that is not a regular file is refused before anything opens it:
// opening a FIFO for reading would wait for a writer forever.
TEST(NvmlProbeTest, FifoDirectoryAndDeviceAreRefusedWithoutOpeningThem) {
  auto dir = fs::temp_directory_path() / ("gpuvet-nvml-kinds-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto fifo = dir / "libnvidia-ml.so.1";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = probe_with(scenario("h200-1gpu-idle.json"), fifo.string());
  EXPECT_EQ(f.failure, NvmlFailure::kLibraryInvalid);
  EXPECT_NE(f.failure_message.find("a FIFO (named pipe), not a shared library"), std::string::npos)
      << f.failure_message;
  EXPECT_FALSE(f.abandoned_threads);
  auto d = probe_with(scenario("h200-1gpu-idle.json"), dir.string());
  EXPECT_EQ(d.failure, NvmlFailure::kLibraryInvalid);
  EXPECT_NE(d.failure_message.find("a directory"), std::string::npos) << d.failure_message;
  auto z = probe_with(scenario("h200-1gpu-idle.json"), "/dev/null");
  EXPECT_EQ(z.failure, NvmlFailure::kLibraryInvalid);
  EXPECT_NE(z.failure_message.find("a character device"), std::string::npos) << z.failure_message;
  fs::remove_all(dir);
}

TEST(NvmlProbeTest, DriverVersionHangNamesTheCallAndEveryGpuIsStillProbed) {
  auto r =
      probe_with(scenario("fault-driver-version-hang.json"), GPUVET_FAKE_NVML, milliseconds(300));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.gpus.size(), 8u);
  for (const auto& g : r.gpus) {
    EXPECT_FALSE(g.unresponsive) << *g.unresponsive;
    EXPECT_EQ(g.name.value_or(""), "NVIDIA H100 80GB HBM3");
  }
  EXPECT_EQ(r.pairs.size(), 28u);
  EXPECT_FALSE(r.driver_version);
  ASSERT_EQ(r.timeouts.size(), 1u);
  EXPECT_NE(r.timeouts[0].find("nvmlSystemGetDriverVersion did not return within 0.3 s"),
            std::string::npos)
      << r.timeouts[0];
  EXPECT_TRUE(r.abandoned_threads);
}

TEST(NvmlProbeTest, ProcessNameHangKeepsTheNvlinksAndProcessesReadBefore) {
  auto r =
      probe_with(scenario("fault-process-name-hang.json"), GPUVET_FAKE_NVML, milliseconds(300));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.gpus.size(), 8u);
  const auto& g = r.gpus[0];
  ASSERT_TRUE(g.unresponsive);
  EXPECT_NE(g.unresponsive->find("nvmlSystemGetProcessName did not return"), std::string::npos)
      << *g.unresponsive;
  EXPECT_EQ(g.nvlinks.size(), 18u);
  EXPECT_EQ(g.name.value_or(""), "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].gpu, 0);
  EXPECT_EQ(r.processes[0].host_pid, 1);
  EXPECT_FALSE(r.processes[0].name);  // the lookup that hung
  EXPECT_TRUE(r.abandoned_threads);
}

TEST(NvmlProbeTest, PairQueryHangIsRecordedAndBothGpusOfThePairAreNamed) {
  auto r = probe_with(scenario("fault-pair-hang.json"), GPUVET_FAKE_NVML, milliseconds(300));
  ASSERT_EQ(r.failure, NvmlFailure::kNone) << r.failure_message;
  ASSERT_EQ(r.gpus.size(), 8u);
  ASSERT_EQ(r.timeouts.size(), 1u);
  EXPECT_NE(
      r.timeouts[0].find(
          "nvmlDeviceGetTopologyCommonAncestor for GPU0 and GPU1 did not return within 0.3 s"),
      std::string::npos)
      << r.timeouts[0];
  ASSERT_TRUE(r.gpus[0].unresponsive);
  EXPECT_NE(r.gpus[0].unresponsive->find("with GPU1"), std::string::npos);
  ASSERT_TRUE(r.gpus[1].unresponsive);
  EXPECT_NE(r.gpus[1].unresponsive->find("with GPU0"), std::string::npos);
  for (int i = 2; i < 8; ++i) EXPECT_FALSE(r.gpus[i].unresponsive) << i;
  EXPECT_EQ(r.gpus[0].nvlinks.size(), 18u);  // what each GPU answered itself stays
  EXPECT_TRUE(r.abandoned_threads);
}

TEST(NvmlProbeTest, OneLoadedLibraryServesRepeatedProbesAndSkipsStuckGpus) {
  ::setenv("GPUVET_FAKE_NVML_SCENARIO", scenario("fault-clock-hang.json").c_str(), 1);
  NvmlProbeOptions o;
  o.library = GPUVET_FAKE_NVML;
  o.library_given_by_user = true;
  o.gpu_timeout = milliseconds(300);
  o.samples_only = true;
  auto loaded = load_nvml(o);
  ASSERT_TRUE(loaded.library) << loaded.failure_message;
  auto first = probe_nvml(o, loaded.library);
  ASSERT_EQ(first.failure, NvmlFailure::kNone) << first.failure_message;
  ASSERT_EQ(first.gpus.size(), 2u);
  EXPECT_TRUE(first.gpus[0].clocks.sm_mhz);
  EXPECT_TRUE(first.gpus[0].thermal.gpu_c);
  EXPECT_FALSE(first.gpus[0].name);  // samples only: no identity queries
  EXPECT_TRUE(first.pairs.empty());
  ASSERT_TRUE(first.gpus[1].unresponsive);
  EXPECT_NE(first.gpus[1].unresponsive->find("nvmlDeviceGetClockInfo"), std::string::npos);
  EXPECT_TRUE(first.abandoned_threads);
  o.skip_gpus = {1};
  auto second = probe_nvml(o, loaded.library);
  ASSERT_EQ(second.failure, NvmlFailure::kNone) << second.failure_message;
  EXPECT_FALSE(second.abandoned_threads);  // GPU1 was not asked again
  ASSERT_EQ(second.gpus.size(), 2u);
  EXPECT_TRUE(second.gpus[0].thermal.gpu_c);
  ASSERT_TRUE(second.gpus[1].unresponsive);
  EXPECT_NE(second.gpus[1].unresponsive->find("not probed"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet::probe

namespace gpuvet::probe {
namespace {}  // namespace
}  // namespace gpuvet::probe
