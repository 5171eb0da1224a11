#include "import/nvsmi_monitor.h"

#include <gtest/gtest.h>

#include "fixture_util.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "import/nvsmi_topo.h"

namespace gpuvet::import {
namespace {

using namespace gpuvet::testing;

std::string read_local(const std::string& name) {
  std::ifstream in(std::string(GPUVET_TEST_DATA) + "/fixtures/capture/topo/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const ProcessFacts* process(const Facts& f, int gpu, int pid) {
  for (const auto& p : f.processes)
    if (p.gpu == gpu && p.host_pid == pid) return &p;
  return nullptr;
}

// ------------------------------------------------------------------ pmon

TEST(Pmon, H100RepeatedSamplesOneProcessEach) {
  const std::string text = read_local("nvgpuexp-h100-80gb-hbm3-load-pmon.txt");
  EXPECT_GE(sniff_pmon(text), 90);
  EXPECT_EQ(sniff_dmon(text), 0);
  Facts f;
  ASSERT_TRUE(import_pmon(text, f).is_ok());
  ASSERT_EQ(f.processes.size(), 3u);
  EXPECT_EQ(process(f, 0, 11327)->name, "memhog");
  EXPECT_EQ(process(f, 0, 11328)->name, "memhog");
  EXPECT_EQ(process(f, 0, 11345)->name, "gpu_burn");
  EXPECT_FALSE(process(f, 0, 11345)->used_memory_bytes.has_value());  // no fb column
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_FALSE(has_note(f, "MIG"));
}

TEST(Pmon, MigModeDashCellsNoted) {
  const std::string text = read_local("nvgpuexp-h100-mig-load-pmon.txt");
  Facts f;
  ASSERT_TRUE(import_pmon(text, f).is_ok());
  ASSERT_EQ(f.processes.size(), 3u);
  EXPECT_EQ(process(f, 0, 21198)->name, "gpu_burn");
  EXPECT_TRUE(has_note(f, "MIG mode"));
}

TEST(Pmon, WindowsCgTypesNamesWithSpacesRepeatedHeader) {
  const std::string text = read_local("nvgpuexp-rtx2080super-windows-load-pmon.txt");
  EXPECT_GE(sniff_pmon(text), 90);
  Facts f;
  ASSERT_TRUE(import_pmon(text, f).is_ok());
  EXPECT_EQ(f.processes.size(), 21u);
  EXPECT_EQ(process(f, 0, 2140)->name, "dwm.exe");
  EXPECT_EQ(process(f, 0, 15964)->name, "NVIDIA Overlay.");
  EXPECT_EQ(process(f, 0, 2164)->name, "ApplicationFram");
  EXPECT_EQ(process(f, 0, 12940)->name, "ffmpeg.exe");
}

TEST(Pmon, FbColumnNoProcessRowsAndMultiGpu) {
  const std::string text =
      "# gpu        pid  type    fb    sm   mem   enc   dec   command\n"
      "# Idx          #   C/G    MB     %     %     %     %   name\n"
      "    0       4242     C  1024    50    20     -     -   python3 train.py\n"
      "    1          -     -     -     -     -     -     -   -\n"
      "    0       4242     C  2048    51    20     -     -   python3 train.py\n";
  EXPECT_GT(sniff_pmon(text), 0);
  Facts f;
  ASSERT_TRUE(import_pmon(text, f).is_ok());
  ASSERT_EQ(f.processes.size(), 1u);
  EXPECT_EQ(f.processes[0].name, "python3 train.py");
  EXPECT_EQ(f.processes[0].used_memory_bytes, 2048ull << 20);  // last sample
  ASSERT_EQ(f.gpus.size(), 2u);                                // GPU1 exists, idle
}

TEST(Pmon, NoHeaderIsInvalidInput) {
  Facts f;
  EXPECT_FALSE(import_pmon("    0   1234   C   1   1  x\n", f).is_ok());
  EXPECT_FALSE(f.notes.empty());
}

// ------------------------------------------------------------------ dmon

TEST(Dmon, H100LastSampleKept) {
  const std::string text = read_local("nvgpuexp-h100-80gb-hbm3-load-dmon.txt");
  EXPECT_GE(sniff_dmon(text), 90);
  EXPECT_EQ(sniff_pmon(text), 0);
  Facts f;
  ASSERT_TRUE(import_dmon(text, f).is_ok());
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_DOUBLE_EQ(*g.power.draw_w, 636.0);
  EXPECT_EQ(g.thermal.gpu_c, 65);
  EXPECT_EQ(g.thermal.memory_c, 59);
  EXPECT_EQ(g.utilization.gpu_pct, 100);
  EXPECT_EQ(g.utilization.memory_pct, 9);
  EXPECT_EQ(g.clocks.mem_mhz, 2619);
  EXPECT_EQ(g.clocks.sm_mhz, 1980);
  EXPECT_TRUE(has_note(f, "GPU0 5 samples, power 631-636 W, sm 100-100 %"));
}

TEST(Dmon, L40sDashMemoryTemperatureStaysUnknown) {
  const std::string text = read_local("nvgpuexp-l40s-load-dmon.txt");
  Facts f;
  ASSERT_TRUE(import_dmon(text, f).is_ok());
  const GpuFacts& g = f.gpus[0];
  EXPECT_FALSE(g.thermal.memory_c.has_value());
  EXPECT_EQ(g.thermal.gpu_c, 52);
  EXPECT_EQ(g.utilization.gpu_pct, 10);
  EXPECT_EQ(g.clocks.mem_mhz, 9001);
  EXPECT_EQ(g.clocks.sm_mhz, 2520);
  EXPECT_DOUBLE_EQ(*g.power.draw_w, 108.0);
}

TEST(Dmon, OldHeaderMultiGpuFbAndDates) {
  const std::string text =
      "#Date       Time        gpu   pwr  temp    sm   mem   enc   dec  mclk  pclk    fb\n"
      "#YYYYMMDD   HH:MM:SS    Idx     W     C     %     %     %     %   MHz   MHz    MB\n"
      " 20251202   10:00:00      0    70    40     5     1     0     0   877  1410   512\n"
      " 20251202   10:00:00      1    71    41     -     1     0     0   877  1410   256\n"
      " 20251202   10:00:01      0    80    42    90    30     0     0   877  1410  4096\n";
  EXPECT_GT(sniff_dmon(text), 0);
  Facts f;
  ASSERT_TRUE(import_dmon(text, f).is_ok());
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(*f.gpus[0].power.draw_w, 80.0);
  EXPECT_EQ(f.gpus[0].thermal.gpu_c, 42);
  EXPECT_EQ(f.gpus[0].utilization.gpu_pct, 90);
  EXPECT_EQ(f.gpus[0].memory.used_bytes, 4096ull << 20);
  EXPECT_FALSE(f.gpus[1].utilization.gpu_pct.has_value());
  EXPECT_FALSE(f.gpus[1].thermal.memory_c.has_value());
  EXPECT_TRUE(has_note(f, "GPU0 2 samples"));
  EXPECT_TRUE(has_note(f, "GPU1 1 samples"));
}

// ------------------------------------------------------------------ dmon time series

std::vector<const GpuSample*> samples_of(const Facts& f, int gpu) {
  std::vector<const GpuSample*> v;
  for (const auto& s : f.samples)
    if (s.gpu == gpu) v.push_back(&s);
  return v;
}

TEST(DmonSeries, DateTimeColumnsGiveTheTimesAcrossMidnight) {
  const std::string text =
      "#Date       Time        gpu   pwr  gtemp  mtemp    sm   mem   enc   dec  mclk  pclk\n"
      "#YYYYMMDD   HH:MM:SS    Idx     W      C      C     %     %     %     %   MHz   MHz\n"
      " 20240113   23:59:59      0   300     60     50    90    40     0     0  2619  1980\n"
      " 20240113   23:59:59      1   100     40     35     0     0     0     0  2619   345\n"
      " 20240114   00:00:01      0   310     61     51    95    41     0     0  2619  1965\n"
      " 20240114   00:00:01      1     -     41     35     1     0     0     0  2619   345\n"
      " 20240114   00:00:03      0   320     62     52   100    42     0     0  2619  1950\n";
  Facts f;
  ASSERT_TRUE(import_dmon(text, f).is_ok());
  ASSERT_EQ(f.samples.size(), 5u);
  // Ordered by (gpu, t_s).
  auto g0 = samples_of(f, 0);
  auto g1 = samples_of(f, 1);
  ASSERT_EQ(g0.size(), 3u);
  ASSERT_EQ(g1.size(), 2u);
  EXPECT_EQ(f.samples[0].gpu, 0);
  EXPECT_EQ(f.samples[3].gpu, 1);
  EXPECT_DOUBLE_EQ(g0[0]->t_s, 0.0);
  EXPECT_DOUBLE_EQ(g0[1]->t_s, 2.0);
  EXPECT_DOUBLE_EQ(g0[2]->t_s, 4.0);
  EXPECT_DOUBLE_EQ(g1[1]->t_s, 2.0);
  EXPECT_EQ(g0[1]->sm_mhz, 1965);
  EXPECT_EQ(g0[1]->gpu_c, 61);
  EXPECT_DOUBLE_EQ(*g0[1]->power_w, 310.0);
  EXPECT_EQ(g0[1]->util_pct, 95);
  EXPECT_FALSE(g0[1]->clock_event_mask.has_value());  // dmon has no such column
  EXPECT_FALSE(g1[1]->power_w.has_value());           // "-" stays unknown
  EXPECT_EQ(g1[1]->util_pct, 1);
  // The GPU facts still hold the last sample.
  EXPECT_DOUBLE_EQ(*f.gpus[0].power.draw_w, 320.0);
  EXPECT_EQ(f.gpus[0].clocks.sm_mhz, 1950);
  EXPECT_DOUBLE_EQ(*f.gpus[1].power.draw_w, 100.0);  // the last sample that had one
  EXPECT_TRUE(has_note(f, "dmon: time series of 5 samples of 2 GPU(s), t_s from the Date/Time"));
}

TEST(DmonSeries, TimeOnlyColumnWrapsAtMidnight) {
  const std::string text =
      "#Time        gpu   pwr    sm  pclk\n"
      "#HH:MM:SS    Idx     W     %   MHz\n"
      " 23:59:58      0    70     5  1410\n"
      " 23:59:59      0    71     6  1410\n"
      " 00:00:00      0    72     7  1400\n";
  Facts f;
  ASSERT_TRUE(import_dmon(text, f).is_ok());
  ASSERT_EQ(f.samples.size(), 3u);
  EXPECT_DOUBLE_EQ(f.samples[0].t_s, 0.0);
  EXPECT_DOUBLE_EQ(f.samples[1].t_s, 1.0);
  EXPECT_DOUBLE_EQ(f.samples[2].t_s, 2.0);
  EXPECT_EQ(f.samples[2].sm_mhz, 1400);
  EXPECT_FALSE(f.samples[2].gpu_c.has_value());  // no temperature column
  EXPECT_TRUE(has_note(f, "from the Time timestamps"));
}

TEST(DmonSeries, RowOrderTimesTheDelayOfThePrompt) {
  const std::string body =
      "# gpu   pwr gtemp    sm  pclk\n"
      "# Idx     W     C     %   MHz\n"
      "    0   200    50    80  1700\n"
      "    1   210    52    81  1710\n"
      "    0   220    51    82  1720\n"
      "    1   230    53    83  1730\n"
      "    0   240    54    84  1740\n";
  {
    Facts f;
    ASSERT_TRUE(import_dmon("$ nvidia-smi dmon -s pc -d 5 -c 3\n" + body, f).is_ok());
    ASSERT_EQ(f.samples.size(), 5u);
    auto g0 = samples_of(f, 0);
    ASSERT_EQ(g0.size(), 3u);
    EXPECT_DOUBLE_EQ(g0[2]->t_s, 10.0);
    EXPECT_DOUBLE_EQ(samples_of(f, 1)[1]->t_s, 5.0);
    EXPECT_EQ(g0[2]->sm_mhz, 1740);
    EXPECT_TRUE(has_note(f, "t_s = sample order x 5 s"));
  }
  {
    Facts f;
    ASSERT_TRUE(import_dmon(body, f).is_ok());
    auto g0 = samples_of(f, 0);
    ASSERT_EQ(g0.size(), 3u);
    EXPECT_DOUBLE_EQ(g0[1]->t_s, 1.0);
    EXPECT_DOUBLE_EQ(g0[2]->t_s, 2.0);
    EXPECT_DOUBLE_EQ(*g0[1]->power_w, 220.0);
    EXPECT_TRUE(has_note(f, "no timestamps: t_s is the sample order in seconds"));
  }
}

TEST(DmonSeries, OneSamplePerGpuIsNotASeries) {
  const std::string text =
      "# gpu   pwr gtemp    sm\n"
      "# Idx     W     C     %\n"
      "    0   200    50    80\n"
      "    1   210    52    81\n";
  Facts f;
  ASSERT_TRUE(import_dmon(text, f).is_ok());
  EXPECT_TRUE(f.samples.empty());
  EXPECT_FALSE(has_note(f, "time series"));
  EXPECT_EQ(f.gpus.size(), 2u);
}

TEST(SampleSeries, CapsTheWholeSeriesAndSaysSo) {
  Facts f;
  f.samples.resize(SampleSeries::kMaxSamples - 2);
  SampleSeries series(f, "dmon");
  for (int i = 0; i < 5; ++i) {
    GpuSample s;
    s.gpu = 3;
    s.util_pct = i;
    series.add(s, std::nullopt);
  }
  series.finish("", std::nullopt);
  ASSERT_EQ(f.samples.size(), SampleSeries::kMaxSamples);
  EXPECT_EQ(f.samples.back().util_pct, 1);
  EXPECT_DOUBLE_EQ(f.samples.back().t_s, 1.0);
  EXPECT_TRUE(has_note(f, "capped at 1000000 samples; 3 later rows"));
}

TEST(SampleSeries, DateAndClockHelpers) {
  EXPECT_EQ(SampleSeries::days_from_civil(1970, 1, 1), 0);
  EXPECT_EQ(SampleSeries::days_from_civil(2024, 1, 13), 19735);
  EXPECT_EQ(SampleSeries::days_from_civil(2000, 3, 1), 11017);
  EXPECT_FALSE(SampleSeries::days_from_civil(2024, 13, 1));
  EXPECT_FALSE(SampleSeries::days_from_civil(2024, 1, 32));
  EXPECT_DOUBLE_EQ(*SampleSeries::clock_seconds("09:41:02"), 9 * 3600 + 41 * 60 + 2);
  EXPECT_NEAR(*SampleSeries::clock_seconds("09:41:02.123"), 34862.123, 1e-9);
  EXPECT_FALSE(SampleSeries::clock_seconds("9:41:02"));
  EXPECT_FALSE(SampleSeries::clock_seconds("25:00:00"));
  EXPECT_FALSE(SampleSeries::clock_seconds("09:41:02.x"));
}

TEST(Dmon, MonitorsAreNotTopologyOutputs) {
  for (const char* name :
       {"nvgpuexp-h100-80gb-hbm3-load-dmon.txt", "nvgpuexp-rtx2080super-windows-load-pmon.txt"}) {
    const std::string text = read_local(name);
    EXPECT_EQ(sniff_topo_m(text), 0) << name;
    EXPECT_EQ(sniff_topo_p2p(text), 0) << name;
    EXPECT_EQ(sniff_nvlink_status(text), 0) << name;
  }
  const std::string topo = read_local("msccl-dgx1-8xv100-nv1-nv2-4x-mlx5-topo-m.txt");
  EXPECT_EQ(sniff_pmon(topo), 0);
  EXPECT_EQ(sniff_dmon(topo), 0);
}

}  // namespace
}  // namespace gpuvet::import
