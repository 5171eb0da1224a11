#include "capture/nvsmi_monitor.h"

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "capture/nvsmi_topo.h"

namespace gpuvet::capture {
namespace {

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

bool has_note(const Facts& f, std::string_view needle) {
  for (const auto& n : f.notes)
    if (n.find(needle) != std::string::npos) return true;
  return false;
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
}  // namespace gpuvet::capture
