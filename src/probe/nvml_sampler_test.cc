// probe::NvmlSampler against the fake NVML: the scale sampler's hang handling, and what
// `gpuvet watch` adds (the health counters, a GPU subset, the host's PSI series).
#include "probe/nvml_sampler.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include "fakes/file_systems.h"

namespace gpuvet {
namespace {

// The sustained sampler against the fake NVML. GPU1 hangs in the first call of a sample
// for 600 s: after one stuck probe it is no longer asked, GPU0 goes on being sampled, and
// the report says a thread was left in the driver. Waits are bounded by sample counts and
// a generous cap, not by wall-clock expectations.
std::vector<GpuSample> sample_until(probe::NvmlSampler& sampler, std::size_t wanted) {
  sampler.start();
  for (int i = 0; i < 3000 && sampler.samples_taken() < wanted; ++i)  // at most ~60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return sampler.stop();
}

probe::SamplerOptions fake_sampling(const char* scenario) {
  ::setenv("GPUVET_FAKE_NVML_SCENARIO",
           (std::string(GPUVET_TEST_DATA) + "/scenarios/" + scenario).c_str(), 1);
  probe::SamplerOptions o;
  o.nvml_library = GPUVET_FAKE_NVML;
  o.interval_s = 0.05;
  o.gpu_timeout = std::chrono::milliseconds(300);
  return o;
}

TEST(NvmlSampler, HungGpuIsAbandonedOnceAndTheOthersAreStillSampled) {
  probe::NvmlSampler sampler(fake_sampling("fault-clock-hang.json"));
  const auto samples = sample_until(sampler, 6);
  ASSERT_GE(samples.size(), 6u);
  for (const auto& s : samples) {
    EXPECT_EQ(s.gpu, 0);
    EXPECT_TRUE(s.sm_mhz);
    EXPECT_TRUE(s.power_w);
  }
  EXPECT_TRUE(sampler.abandoned_probes());
  EXPECT_EQ(sampler.abandoned_count(), 1);  // one stuck thread, not one per sample
  ASSERT_EQ(sampler.notes().size(), 1u);
  EXPECT_NE(sampler.notes()[0].find("GPU1 not sampled"), std::string::npos) << sampler.notes()[0];
  EXPECT_NE(sampler.notes()[0].find("nvmlDeviceGetClockInfo"), std::string::npos);
}

TEST(NvmlSampler, HealthyGpusAreSampledWithoutAbandonedProbes) {
  probe::NvmlSampler sampler(fake_sampling("2gpu-pcie-sys.json"));
  const auto samples = sample_until(sampler, 6);
  ASSERT_GE(samples.size(), 6u);
  std::set<int> gpus;
  for (const auto& s : samples) gpus.insert(s.gpu);
  EXPECT_EQ(gpus, (std::set<int>{0, 1}));
  EXPECT_FALSE(sampler.abandoned_probes());
  EXPECT_TRUE(sampler.notes().empty()) << sampler.notes()[0];
}

// nvmlInit costs ~10 ms on an H100 (and its first queries as much again): the sampler keeps
// one init for the whole series and shuts it down once at the end. Catches an init (and a
// shutdown) per sample, which cost 34 ms of CPU per sample on the lent H100.
TEST(NvmlSampler, OneNvmlInitForTheWholeSeries) {
  void* fake = dlopen(GPUVET_FAKE_NVML, RTLD_NOW);
  ASSERT_NE(fake, nullptr) << dlerror();
  using Count = unsigned (*)();
  auto inits = reinterpret_cast<Count>(dlsym(fake, "gpuvetFakeNvmlInitCalls"));
  auto shutdowns = reinterpret_cast<Count>(dlsym(fake, "gpuvetFakeNvmlShutdownCalls"));
  ASSERT_TRUE(inits && shutdowns);
  const unsigned i0 = inits(), s0 = shutdowns();
  {
    probe::NvmlSampler sampler(fake_sampling("2gpu-pcie-sys.json"));
    const auto samples = sample_until(sampler, 12);  // 6 samples of 2 GPUs at least
    ASSERT_GE(samples.size(), 12u);
    EXPECT_FALSE(sampler.abandoned_probes());
  }
  EXPECT_EQ(inits() - i0, 1u);
  EXPECT_EQ(shutdowns() - s0, 1u);
  dlclose(fake);
}

TEST(NvmlSampler, InitHangStopsTheSamplerAndIsReportedAsAbandoned) {
  auto o = fake_sampling("fault-init-hang.json");
  o.init_timeout = std::chrono::milliseconds(300);
  probe::NvmlSampler sampler(o);
  sampler.start();
  for (int i = 0; i < 3000 && !sampler.finished(); ++i)  // at most ~60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto samples = sampler.stop();
  EXPECT_TRUE(samples.empty());
  EXPECT_TRUE(sampler.abandoned_probes());
  EXPECT_EQ(sampler.abandoned_count(), 1);
  ASSERT_EQ(sampler.notes().size(), 1u);
  EXPECT_NE(sampler.notes()[0].find("nvmlInit did not return"), std::string::npos)
      << sampler.notes()[0];
}

TEST(NvmlSampler, HealthCountersAreReadOnlyWhenAskedFor) {
  auto o = fake_sampling("h200-1gpu-load.json");
  {
    probe::NvmlSampler plain(o);
    const auto samples = sample_until(plain, 2);
    ASSERT_GE(samples.size(), 2u);
    EXPECT_FALSE(samples[0].margin_c);  // the scale sampler reads no more than it uses
    EXPECT_FALSE(samples[0].pcie_replays);
    EXPECT_TRUE(samples[0].clock_event_ns.empty());
  }
  o.health = true;
  probe::NvmlSampler health(o);
  const auto samples = sample_until(health, 2);
  ASSERT_GE(samples.size(), 2u);
  const GpuSample& s = samples[0];
  // The values of tests/scenarios/h200-1gpu-load.json.
  EXPECT_EQ(s.sm_mhz, 1500);
  EXPECT_EQ(s.mem_mhz, 3201);
  EXPECT_EQ(s.margin_c, 26);
  EXPECT_DOUBLE_EQ(s.power_limit_w.value_or(0), 700);
  EXPECT_EQ(s.mem_util_pct, 23);
  EXPECT_EQ(s.memory_used_bytes, 1704853504u);
  EXPECT_EQ(s.pcie_gen, 5);
  EXPECT_EQ(s.pcie_width, 16);
  EXPECT_EQ(s.pcie_replays, 0u);
  EXPECT_EQ(s.ecc_uncorrected, 0u);
  ASSERT_TRUE(s.clock_event_ns.count("power"));
  EXPECT_EQ(s.clock_event_ns.at("power"), 9368575000u);
}

TEST(NvmlSampler, ClockEventCountersAreReadEveryFewSecondsAndCarriedBetween) {
  // Bugs caught: the ~3 ms-per-reason counters read at every sample (most of a watch's CPU on
  // an H100), or the samples in between left without them (a Prometheus counter that comes
  // and goes).
  void* fake = dlopen(GPUVET_FAKE_NVML, RTLD_NOW);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto calls = reinterpret_cast<unsigned (*)()>(dlsym(fake, "gpuvetFakeNvmlViolationCalls"));
  ASSERT_TRUE(calls);
  auto o = fake_sampling("h200-1gpu-load.json");
  o.health = true;
  o.violation_interval_s = 3600;  // once in this test's life: at the first sample
  const unsigned c0 = calls();
  std::vector<GpuSample> samples;
  {
    probe::NvmlSampler sampler(o);
    samples = sample_until(sampler, 8);
  }
  ASSERT_GE(samples.size(), 8u);
  EXPECT_EQ(calls() - c0, 5u);  // five reasons, one GPU, one read
  for (const auto& s : samples) {
    ASSERT_TRUE(s.clock_event_ns.count("power")) << s.t_s;
    EXPECT_EQ(s.clock_event_ns.at("power"), 9368575000u);
  }
  o.violation_interval_s = 0;  // every sample
  const unsigned c1 = calls();
  std::size_t n = 0;
  {
    probe::NvmlSampler sampler(o);
    n = sample_until(sampler, 4).size();
  }
  EXPECT_EQ(calls() - c1, 5u * n);
  dlclose(fake);
}

TEST(NvmlSampler, OnlyTheChosenGpusAreKept) {
  auto o = fake_sampling("2gpu-pcie-sys.json");
  o.gpus = {1};
  probe::NvmlSampler sampler(o);
  const auto samples = sample_until(sampler, 3);
  ASSERT_GE(samples.size(), 3u);
  for (const auto& s : samples) EXPECT_EQ(s.gpu, 1);
}

// PSI "some" totals (µs) that grow by known amounts: each interval's share is the growth over
// the interval. The sampler's clock is real, so only bounds on the share are certain: a total
// that grows by 10 s per read over intervals of ≥ 0.05 s is pegged at 100 %, one that does not
// grow is 0 %, and a memory file that is missing gives no share.
TEST(NvmlSampler, HostPsiSharesComeFromTheTotalsBetweenSamples) {
  testing::MemoryFileSystem base({});
  auto psi = [](std::uint64_t total) {
    return "some avg10=0.00 avg60=0.00 avg300=0.00 total=" + std::to_string(total) +
           "\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
  };
  std::vector<std::string> io, cpu;
  for (std::uint64_t i = 0; i < 200; ++i) {
    io.push_back(psi(i * 10'000'000));  // +10 s per read
    cpu.push_back(psi(5));              // never moves
  }
  testing::SequencedFileSystem fs(base, {{"/proc/pressure/io", io}, {"/proc/pressure/cpu", cpu}});
  auto o = fake_sampling("h200-1gpu-idle.json");
  o.host_fs = &fs;
  probe::NvmlSampler sampler(o);
  sample_until(sampler, 4);
  const auto host = sampler.host_samples();
  ASSERT_GE(host.size(), 2u);  // the first reading only sets the origin
  for (const auto& h : host) {
    EXPECT_DOUBLE_EQ(h.psi_io_some_pct.value_or(-1), 100);
    EXPECT_DOUBLE_EQ(h.psi_cpu_some_pct.value_or(-1), 0);
    EXPECT_FALSE(h.psi_memory_some_pct);
  }
}

}  // namespace
}  // namespace gpuvet
