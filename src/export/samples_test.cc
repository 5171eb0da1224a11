// apply_samples: a watch interval's readings over the collection's, for `watch --prom`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuvet/prometheus.h"

namespace gpuvet {
namespace {

MetricsSnapshot collected() {
  MetricsSnapshot s;
  s.hostname = "node-1";
  s.driver_version = "580.159.04";
  for (int i = 0; i < 3; ++i) {
    GpuMetrics g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
    g.model_name = "NVIDIA H100";
    g.sm_clock_hz = 345e6;
    g.sm_clock_max_hz = 1980e6;
    g.temperature_c = 31;
    g.power_w = 71;
    g.power_limit_w = 700;
    g.enforced_power_limit_w = 700;
    g.memory_total_bytes = 80ull << 30;
    g.pcie_generation = 5;
    g.pcie_generation_max = 5;
    g.pcie_replays = 0;
    g.nvlink_links = 18;
    g.nvlink_links_up = 18;
    s.gpus.push_back(g);
  }
  return s;
}

// Catches: the collection's readings rendered as if current (the sample ignored), a reading
// the sample lacks left at its old value, and GPUs outside --gpus still exported.
TEST(ApplySamples, TheLatestSampleWinsAndOnlyWatchedGpusStay) {
  MetricsSnapshot s = collected();
  GpuSample a;
  a.gpu = 0;
  a.t_s = 1;
  a.sm_mhz = 1200;
  a.gpu_c = 70;
  a.power_w = 650.5;
  a.power_limit_w = 600;
  a.util_pct = 100;
  a.clock_event_mask = 0x4;  // sw_power_cap
  a.clock_event_ns = {{"power", 2'500'000'000ull}};
  a.pcie_replays = 7;
  a.nvlinks_up = 17;
  GpuSample older = a;
  older.t_s = 0;
  older.sm_mhz = 1980;
  apply_samples(s, {0, 2}, {older, a});
  ASSERT_EQ(s.gpus.size(), 2u);
  const GpuMetrics& g0 = s.gpus[0];
  EXPECT_EQ(g0.index, 0);
  EXPECT_EQ(g0.sm_clock_hz, 1200e6);
  EXPECT_EQ(g0.temperature_c, 70);
  EXPECT_EQ(g0.power_w, 650.5);
  EXPECT_EQ(g0.enforced_power_limit_w, 600);
  EXPECT_EQ(g0.power_limit_w, 700);  // the management limit is the collection's
  EXPECT_EQ(g0.utilization_ratio, 1.0);
  EXPECT_EQ(g0.clock_event_mask, 0x4u);
  EXPECT_DOUBLE_EQ(g0.clock_event_seconds.at("power"), 2.5);
  EXPECT_EQ(g0.pcie_replays, 7u);
  EXPECT_EQ(g0.nvlink_links_up, 17);
  EXPECT_EQ(g0.nvlink_links, 18);
  EXPECT_FALSE(g0.pcie_generation.has_value());  // the sample did not read it
  // Identity and maxima stay.
  EXPECT_EQ(g0.uuid, "GPU-0");
  EXPECT_EQ(g0.sm_clock_max_hz, 1980e6);
  EXPECT_EQ(g0.memory_total_bytes, 80ull << 30);
  // GPU 2 is watched but did not answer this interval: no readings, identity kept.
  const GpuMetrics& g2 = s.gpus[1];
  EXPECT_EQ(g2.index, 2);
  EXPECT_EQ(g2.uuid, "GPU-2");
  EXPECT_FALSE(g2.temperature_c.has_value());
  EXPECT_FALSE(g2.sm_clock_hz.has_value());

  const std::string text = render_prometheus(s);
  EXPECT_NE(text.find("gpuvet_gpu_sm_clock_hertz{gpu=\"0\",UUID=\"GPU-0\""), std::string::npos);
  EXPECT_NE(text.find(" 1200000000\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpu=\"1\""), std::string::npos) << text;
  EXPECT_EQ(text.find("1980000000\ngpuvet_gpu_sm_clock_hertz"), std::string::npos);
}

// The healthy counterpart: every GPU watched (no --gpus), each with its sample.
TEST(ApplySamples, NoGpuListKeepsEveryGpu) {
  MetricsSnapshot s = collected();
  std::vector<GpuSample> latest;
  for (int i = 0; i < 3; ++i) {
    GpuSample g;
    g.gpu = i;
    g.gpu_c = 40 + i;
    latest.push_back(g);
  }
  apply_samples(s, {}, latest);
  ASSERT_EQ(s.gpus.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.gpus[i].temperature_c, 40 + i);
}

}  // namespace
}  // namespace gpuvet
