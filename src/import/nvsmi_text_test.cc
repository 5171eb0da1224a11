#include "import/nvsmi_text.h"

#include <gtest/gtest.h>

#include "fixture_util.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "import/nvsmi_csv.h"
#include "import/nvsmi_xml.h"

namespace gpuvet::import {
namespace {

using namespace gpuvet::testing;

namespace fs = std::filesystem;

const std::string kData = std::string(GPUVET_TEST_DATA) + "/fixtures/capture/nvsmi/";
const std::string kShared = GPUVET_SHARED_FIXTURES;
constexpr std::uint64_t kMiB = 1024ull * 1024;

Facts import_ok(const std::string& text) {
  Facts f;
  Status st = import_nvsmi_q(text, f);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return f;
}

std::string with_crlf(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

// ------------------------------------------------------------------ nvidia-smi -q golden files

void expect_h200_idle(const Facts& f) {
  EXPECT_EQ(f.host.driver_version, "580.159.04");
  EXPECT_EQ(f.host.cuda_driver_version, "13.0");
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.uuid, "GPU-3bcf3a98-62d3-78f0-d2ea-5983ac5c88c7");
  EXPECT_EQ(g.serial, "1653724025415");
  EXPECT_EQ(g.vbios, "96.00.A5.00.1A");
  EXPECT_EQ(g.pci_bus_id, "0000:00:06.0");
  EXPECT_EQ(g.pcie.gen_current, 5);
  EXPECT_EQ(g.pcie.gen_max, 5);
  EXPECT_EQ(g.pcie.gen_device_max, 5);
  EXPECT_EQ(g.pcie.width_current, 16);
  EXPECT_EQ(g.pcie.width_max, 16);
  EXPECT_EQ(g.pcie.replay_counter, 0u);
  EXPECT_EQ(g.clocks.sm_mhz, 375);
  EXPECT_EQ(g.clocks.mem_mhz, 3201);
  EXPECT_EQ(g.clocks.sm_max_mhz, 1980);
  EXPECT_EQ(g.clocks.mem_max_mhz, 3201);
  EXPECT_EQ(g.clock_events.active_mask, 0x1u);
  EXPECT_EQ(g.clock_events.active, std::vector<std::string>{"idle"});
  EXPECT_EQ(g.clock_events.accumulated_ns.size(), 5u);
  EXPECT_EQ(g.clock_events.accumulated_ns.at("sync_boost"), 0u);
  EXPECT_EQ(g.thermal.gpu_c, 39);
  EXPECT_EQ(g.thermal.margin_c, 48);
  EXPECT_EQ(g.thermal.memory_c, 41);
  EXPECT_FALSE(g.thermal.slowdown_c);  // "-2 C" is relative to T.Limit
  EXPECT_DOUBLE_EQ(*g.power.draw_w, 117.95);
  EXPECT_DOUBLE_EQ(*g.power.limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*g.power.enforced_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*g.power.default_limit_w, 700.0);
  EXPECT_EQ(g.ecc.enabled, true);
  EXPECT_EQ(g.ecc.pending_enabled, true);
  EXPECT_EQ(g.ecc.volatile_counts.corrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_counts.uncorrected, 0u);
  EXPECT_FALSE(g.ecc.retired_pages_sbe);
  EXPECT_EQ(g.ecc.remapped_rows_correctable, 0);
  EXPECT_EQ(g.ecc.remapping_pending, false);
  EXPECT_EQ(g.ecc.remapping_failed, false);
  EXPECT_EQ(g.memory.total_bytes, 143771 * kMiB);
  EXPECT_EQ(g.memory.used_bytes, 0u);
  EXPECT_EQ(g.utilization.gpu_pct, 0);
  EXPECT_EQ(g.utilization.memory_pct, 0);
  EXPECT_EQ(g.mig_enabled, false);
  EXPECT_EQ(g.persistence_mode, "enabled");
  EXPECT_EQ(g.pstate, 0);
  EXPECT_FALSE(g.fabric.state);
  EXPECT_TRUE(f.processes.empty());  // "Processes : None"
}

TEST(NvsmiText, H200Driver580) {
  std::string text = read_file(kData + "gpuvet-h200-drv580-q.txt");
  EXPECT_EQ(sniff_nvsmi_q(text), 100);
  Facts f = import_ok(text);
  expect_h200_idle(f);
  EXPECT_TRUE(f.notes.empty());
  // "Timestamp : Wed Dec  2 11:35:48 2026": when the paste was taken (read as UTC).
  EXPECT_EQ(f.host.collected_unix, 1796211348);
}

TEST(NvsmiText, WindowsLineEndingsReadTheSame) {
  Facts f = import_ok(with_crlf(read_file(kData + "gpuvet-h200-drv580-q.txt")));
  expect_h200_idle(f);
}

TEST(NvsmiText, H200UnderLoad) {
  Facts f = import_ok(read_file(kData + "gpuvet-h200-drv580-q-load.txt"));
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.clock_events.active, std::vector<std::string>{"sw_power_cap"});
  EXPECT_EQ(g.clock_events.active_mask, 0x4u);
  EXPECT_EQ(g.clock_events.accumulated_ns.at("power"), 7598828ull * 1000);
  EXPECT_EQ(g.utilization.gpu_pct, 99);
  EXPECT_EQ(g.thermal.margin_c, 29);
  ASSERT_EQ(f.processes.size(), 1u);
  EXPECT_EQ(f.processes[0].host_pid, 1171);
  EXPECT_EQ(f.processes[0].name, "python3");
  EXPECT_EQ(f.processes[0].used_memory_bytes, 1002 * kMiB);
}

TEST(NvsmiText, EightH100HwPowerBrakeAndReplays) {
  Facts f = import_ok(read_file(kData + "gpud-8x-h100-q-drv535.161-hw-power-brake-all-gpus.txt"));
  EXPECT_EQ(f.host.driver_version, "535.161.08");
  EXPECT_EQ(f.host.cuda_driver_version, "12.2");
  ASSERT_EQ(f.gpus.size(), 8u);
  const char* buses[] = {"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0",
                         "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0"};
  const std::uint64_t replays[] = {67, 63, 52, 43, 49, 53, 82, 67};
  for (int i = 0; i < 8; ++i) {
    const GpuFacts& g = f.gpus[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.pci_bus_id, buses[i]);
    EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.pcie.replay_counter, replays[i]);
    EXPECT_EQ(g.clock_events.active_mask, 0x88u);
    EXPECT_EQ(g.clock_events.active,
              (std::vector<std::string>{"hw_slowdown", "hw_power_brake_slowdown"}));
    EXPECT_EQ(g.fabric.state, "completed");
    EXPECT_EQ(g.fabric.status, "SUCCESS");
  }
  EXPECT_EQ(f.gpus[0].uuid, "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa");
  EXPECT_EQ(f.gpus[0].clocks.sm_mhz, 86);
  EXPECT_EQ(f.gpus[0].thermal.margin_c, 56);
  EXPECT_DOUBLE_EQ(*f.gpus[0].power.draw_w, 67.74);
}

TEST(NvsmiText, PassthroughOneGpuCappedThreeWays) {
  Facts f = import_ok(read_file(kData + "gpud-8x-h100-passthrough-q-drv535.183-pcie-replays.txt"));
  ASSERT_EQ(f.gpus.size(), 8u);
  EXPECT_EQ(f.gpus[0].pcie.replay_counter, 120u);
  EXPECT_EQ(f.gpus[2].clock_events.active_mask, 0xa4u);
  EXPECT_EQ(
      f.gpus[2].clock_events.active,
      (std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown", "hw_power_brake_slowdown"}));
  EXPECT_EQ(f.gpus[2].memory.used_bytes, 9221 * kMiB);
}

TEST(NvsmiText, A10RemappedRowsPending) {
  Facts f = import_ok(read_file(kData + "gpud-a10-passthrough-q-remapped-rows-pending.txt"));
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA A10");
  EXPECT_EQ(g.ecc.remapped_rows_correctable, 0);
  EXPECT_EQ(g.ecc.remapped_rows_uncorrectable, 4);
  EXPECT_EQ(g.ecc.remapping_pending, true);
  EXPECT_EQ(g.ecc.remapping_failed, false);
  // Absolute thresholds on this driver.
  EXPECT_EQ(g.thermal.slowdown_c, 98);
  EXPECT_EQ(g.thermal.shutdown_c, 101);
  EXPECT_EQ(g.thermal.gpu_max_operating_c, 91);
  EXPECT_FALSE(g.thermal.margin_c);
}

TEST(NvsmiText, OldPowerReadingsAndFilteredOutput) {
  Facts f = import_ok(read_file(kData + "llmaction-h800-q-i0.txt"));
  EXPECT_EQ(f.host.driver_version, "525.105.17");
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA H800");
  EXPECT_EQ(g.pci_bus_id, "0000:18:00.0");
  EXPECT_DOUBLE_EQ(*g.power.draw_w, 74.71);
  EXPECT_DOUBLE_EQ(*g.power.limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*g.power.enforced_limit_w, 700.0);
  EXPECT_EQ(g.thermal.slowdown_c, 89);
  EXPECT_EQ(g.thermal.margin_c, 51);
  EXPECT_EQ(g.ecc.enabled, false);
  EXPECT_TRUE(has_note(f, "Attached GPUs says 8 but the output shows 1"));
}

TEST(NvsmiText, WindowsDeprecatedAnnotationsAndWddmProcesses) {
  Facts f = import_ok(read_file(kData + "nvgpuexp-rtx2080super-windows-load-q.txt"));
  EXPECT_EQ(f.host.driver_version, "610.62");
  EXPECT_EQ(f.host.cuda_driver_version, "13.3");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "NVIDIA GeForce RTX 2080 SUPER");
  EXPECT_EQ(f.gpus[0].thermal.slowdown_c, 97);
  EXPECT_FALSE(f.gpus[0].thermal.margin_c);  // "GPU Current T.Limit Temp : N/A"
  ASSERT_FALSE(f.processes.empty());
  EXPECT_EQ(f.processes[0].host_pid, 2140);
  EXPECT_EQ(f.processes[0].name, "C:\\Windows\\System32\\dwm.exe");
  EXPECT_FALSE(f.processes[0].used_memory_bytes);  // "Not available in WDDM driver model"
}

TEST(NvsmiText, MigModeWithDevices) {
  Facts f = import_ok(read_file(kData + "nvgpuexp-h100-mig-idle-q.txt"));
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].mig_enabled, true);
  EXPECT_FALSE(f.gpus[0].ecc.remapped_rows_correctable);  // "Remapped Rows : N/A"
  EXPECT_TRUE(has_note(f, "4 MIG device(s)"));
  EXPECT_EQ(f.gpus[0].fabric.clique_id, 0u);
}

TEST(NvsmiText, SwPowerCapOnLoadedGpus) {
  Facts f = import_ok(read_file(kData + "gpud-8x-rtx4090-q-drv535-host-a-sw-power-cap.txt"));
  ASSERT_EQ(f.gpus.size(), 8u);
  EXPECT_EQ(f.gpus[1].clock_events.active, std::vector<std::string>{"sw_power_cap"});
  EXPECT_EQ(f.gpus[1].utilization.gpu_pct, 97);
  EXPECT_DOUBLE_EQ(*f.gpus[1].power.draw_w, 445.38);
  EXPECT_EQ(f.gpus[0].pcie.gen_current, 1);
  EXPECT_EQ(f.gpus[0].pcie.gen_max, 4);
  EXPECT_EQ(f.gpus[0].ecc.enabled, false);
  EXPECT_FALSE(f.gpus[0].serial);
}

TEST(NvsmiText, SharedExcerptsWithoutLicense) {
  fs::path dir = kShared + "/nvsmi-text";
  GPUVET_REQUIRE_SHARED(dir);
  {
    Facts f = import_ok(read_file(
        (dir / "mleng-8x-a100-sxm4-80gb-q-ecc-remapped-rows-pending-excerpt.txt").string()));
    ASSERT_EQ(f.gpus.size(), 1u);
    EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:10:1c.0");
    EXPECT_EQ(f.gpus[0].ecc.volatile_counts.corrected, 177u);
    EXPECT_EQ(f.gpus[0].ecc.aggregate_counts.corrected, 177u);
    EXPECT_EQ(f.gpus[0].ecc.remapped_rows_correctable, 1);
    EXPECT_EQ(f.gpus[0].ecc.remapping_pending, true);
  }
  {
    std::string text =
        read_file((dir / "mleng-sram-uncorrectable-ecc-errors-excerpt.txt").string());
    EXPECT_GT(sniff_nvsmi_q(text), 20);
    Facts f = import_ok(text);
    ASSERT_EQ(f.gpus.size(), 1u);
    EXPECT_EQ(f.gpus[0].ecc.volatile_counts.uncorrected, 1u);
    EXPECT_EQ(f.gpus[0].ecc.aggregate_counts.uncorrected, 5u);
    EXPECT_EQ(f.gpus[0].ecc.aggregate_counts.corrected, 0u);
  }
  {
    Facts f = import_ok(read_file((dir / "hpe-dl380-2x-a100-pcie-q-d-performance.txt").string()));
    ASSERT_EQ(f.gpus.size(), 2u);
    EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:8a:00.0");
    EXPECT_EQ(f.gpus[0].clock_events.active, std::vector<std::string>{"idle"});
    EXPECT_EQ(f.gpus[0].pstate, 0);
    EXPECT_FALSE(f.gpus[0].name);
  }
  {
    Facts f =
        import_ok(read_file((dir / "princeton-della-h100-80gb-hbm3-nvidia-smi-a.txt").string()));
    EXPECT_EQ(f.host.driver_version, "545.23.08");  // no blank line after the banner
    ASSERT_EQ(f.gpus.size(), 1u);
    EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:19:00.0");
  }
  {
    Facts f = import_ok(
        read_file((dir / "princeton-della-gh200-480gb-nvidia-smi-a-head-excerpt.txt").string()));
    ASSERT_EQ(f.gpus.size(), 1u);
    EXPECT_EQ(f.gpus[0].pci_bus_id, "0009:01:00.0");
    EXPECT_EQ(f.gpus[0].name, "GH200 480GB");
  }
}

// ------------------------------------------------------------------ synthetic variants

TEST(NvsmiText, SingleSectionOutputs) {
  const char* clocks =
      "\n==============NVSMI LOG==============\n\n"
      "Timestamp                                 : Mon Jan  1 00:00:00 2024\n"
      "Driver Version                            : 470.82.01\n"
      "CUDA Version                              : 11.4\n\n"
      "Attached GPUs                             : 1\n"
      "GPU 00000000:3B:00.0\n"
      "    Clocks\n"
      "        Graphics                          : 1410 MHz\n"
      "        SM                                : 1410 MHz\n"
      "        Memory                            : 1215 MHz\n"
      "        Video                             : 1275 MHz\n"
      "    Max Clocks\n"
      "        SM                                : 1410 MHz\n"
      "        Memory                            : 1215 MHz\n";
  EXPECT_EQ(sniff_nvsmi_q(clocks), 100);
  Facts f = import_ok(clocks);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(f.gpus[0].clocks.sm_mhz, 1410);
  EXPECT_EQ(f.gpus[0].clocks.mem_max_mhz, 1215);
  EXPECT_FALSE(f.gpus[0].name);

  const char* temps =
      "GPU 00000000:3B:00.0\n"
      "    Temperature\n"
      "        GPU Current Temp                  : 45 C\n"
      "        GPU Shutdown Temp                 : 90 C\n"
      "        GPU Slowdown Temp                 : 87 C\n"
      "        GPU Max Operating Temp            : 83 C\n"
      "        Memory Current Temp               : 50 C\n"
      "        Memory Max Operating Temp         : 85 C\n";
  EXPECT_GE(sniff_nvsmi_q(temps), 50);
  f = import_ok(temps);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].thermal.gpu_c, 45);
  EXPECT_EQ(f.gpus[0].thermal.shutdown_c, 90);
  EXPECT_EQ(f.gpus[0].thermal.slowdown_c, 87);
  EXPECT_EQ(f.gpus[0].thermal.gpu_max_operating_c, 83);
  EXPECT_EQ(f.gpus[0].thermal.memory_max_c, 85);
  EXPECT_EQ(f.gpus[0].thermal.memory_c, 50);
}

TEST(NvsmiText, OldEccLayoutAndSiblingProcesses) {
  const char* text =
      "==============NVSMI LOG==============\n"
      "Driver Version                      : 418.67\n"
      "Attached GPUs                       : 1\n"
      "GPU 00000000:04:00.0\n"
      "    Product Name                    : Tesla V100-SXM2-16GB\n"
      "    Clocks Throttle Reasons\n"
      "        Idle                        : Not Active\n"
      "        Applications Clocks Setting : Not Active\n"
      "        SW Power Cap                : Not Active\n"
      "        HW Slowdown                 : Active\n"
      "            HW Thermal Slowdown     : Active\n"
      "            HW Power Brake Slowdown : Not Active\n"
      "        Sync Boost                  : Not Active\n"
      "        SW Thermal Slowdown         : Not Active\n"
      "        Display Clock Setting       : Not Active\n"
      "    Ecc Mode\n"
      "        Current                     : Enabled\n"
      "        Pending                     : Disabled\n"
      "    ECC Errors\n"
      "        Volatile\n"
      "            Single Bit\n"
      "                Device Memory       : 3\n"
      "                Register File       : 1\n"
      "                Total               : 4\n"
      "            Double Bit\n"
      "                Device Memory       : 2\n"
      "                Register File       : N/A\n"
      "                Total               : N/A\n"
      "    Retired Pages\n"
      "        Single Bit ECC              : 5\n"
      "        Double Bit ECC              : 1\n"
      "        Pending                     : Yes\n"
      "    Processes\n"
      "        Process ID                  : 4242\n"
      "        Type                        : C\n"
      "        Name                        : python\n"
      "        Used GPU Memory             : 300 MiB\n"
      "        Process ID                  : 4243\n"
      "        Type                        : C\n"
      "        Name                        : train.py\n"
      "        Used GPU Memory             : 2 GiB\n";
  Facts f = import_ok(text);
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.clock_events.active_mask, 0x48u);
  EXPECT_EQ(g.clock_events.active,
            (std::vector<std::string>{"hw_slowdown", "hw_thermal_slowdown"}));
  EXPECT_EQ(g.ecc.enabled, true);
  EXPECT_EQ(g.ecc.pending_enabled, false);
  EXPECT_EQ(g.ecc.volatile_counts.corrected, 4u);    // the Total line
  EXPECT_EQ(g.ecc.volatile_counts.uncorrected, 2u);  // Total N/A: sum of locations
  EXPECT_EQ(g.ecc.retired_pages_sbe, 5);
  EXPECT_EQ(g.ecc.retired_pages_dbe, 1);
  EXPECT_EQ(g.ecc.retired_pages_pending, true);
  ASSERT_EQ(f.processes.size(), 2u);
  EXPECT_EQ(f.processes[0].host_pid, 4242);
  EXPECT_EQ(f.processes[0].name, "python");
  EXPECT_EQ(f.processes[0].used_memory_bytes, 300 * kMiB);
  EXPECT_EQ(f.processes[1].name, "train.py");
  EXPECT_EQ(f.processes[1].used_memory_bytes, 2048 * kMiB);
}

TEST(NvsmiText, RefusedDisplayFlagIsANote) {
  const char* text =
      "Failed to parse --display/-d flags: 'PCI' is not a valid option.\n"
      "Please run 'nvidia-smi -h' for help.\n";
  int s = sniff_nvsmi_q(text);
  EXPECT_GT(s, 0);
  EXPECT_LT(s, 50);
  Facts f;
  EXPECT_TRUE(import_nvsmi_q(text, f).is_ok());
  EXPECT_TRUE(f.gpus.empty());
  EXPECT_TRUE(has_note(f, "refused"));
}

// ------------------------------------------------------------------ nvidia-smi -L

TEST(NvsmiList, GpusAndMigDevices) {
  const char* text =
      "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)\n"
      "  MIG 1g.10gb     Device  0: (UUID: MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee)\n"
      "  MIG 1g.10gb     Device  1: (UUID: MIG-aaaaaaaa-bbbb-cccc-dddd-ffffffffffff)\n"
      "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-66666666-2222-3333-4444-555555555555)\r\n"
      "GPU 2: Tesla K80 (S/N: 0324614093385) (UUID: GPU-77777777-2222-3333-4444-555555555555)\n";
  EXPECT_EQ(sniff_nvsmi_list(text), 95);
  Facts f;
  ASSERT_TRUE(import_nvsmi_list(text, f).is_ok());
  ASSERT_EQ(f.gpus.size(), 3u);
  EXPECT_EQ(f.gpus[0].index, 0);
  EXPECT_EQ(f.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(f.gpus[0].uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(f.gpus[0].mig_enabled, true);
  EXPECT_FALSE(f.gpus[1].mig_enabled);
  EXPECT_EQ(f.gpus[1].uuid, "GPU-66666666-2222-3333-4444-555555555555");
  EXPECT_EQ(f.gpus[2].name, "Tesla K80");
  EXPECT_EQ(f.gpus[2].serial, "0324614093385");
  EXPECT_TRUE(has_note(f, "GPU0: 2 MIG device(s)"));
}

TEST(NvsmiList, SharedSample) {
  std::string path = kShared + "/nvsmi-text/hpe-dl380-2x-a100-pcie-list-gpus.txt";
  GPUVET_REQUIRE_SHARED(path);
  std::string text = read_file(path);
  EXPECT_GT(sniff_nvsmi_list(text), 0);
  EXPECT_EQ(sniff_nvsmi_q(text), 0);
  Facts f;
  ASSERT_TRUE(import_nvsmi_list(text, f).is_ok());
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[1].index, 1);
  EXPECT_EQ(f.gpus[1].name, "NVIDIA A100-PCIE-40GB");
  EXPECT_EQ(f.gpus[1].uuid, "GPU-14ac2834-0d81-0508-69eb-e25264c08d21");
}

// ------------------------------------------------------------------ every shared file

TEST(NvsmiText, EverySharedTextFileParses) {
  fs::path dir = kShared + "/nvsmi-text";
  GPUVET_REQUIRE_SHARED(dir);
  int q = 0, l = 0, other = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string text = read_file(e.path().string());
    std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    EXPECT_EQ(sniff_nvsmi_xml(text), 0);
    EXPECT_EQ(sniff_nvsmi_query_csv(text), 0);
    int sq = sniff_nvsmi_q(text), sl = sniff_nvsmi_list(text);
    if (name.find("default-table") != std::string::npos) {
      // The plain `nvidia-smi` table is another importer's format.
      EXPECT_EQ(sq, 0);
      EXPECT_EQ(sl, 0);
      ++other;
      continue;
    }
    ASSERT_TRUE(sq > 0 || sl > 0);
    EXPECT_TRUE(sq == 0 || sl == 0);
    Facts f;
    Status st = sq > 0 ? import_nvsmi_q(text, f) : import_nvsmi_list(text, f);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_GE(f.gpus.size(), 1u);
    // -d sections and excerpts carry no "Product Name"; full outputs must give it.
    if (text.find("Product Name") != std::string::npos || sl > 0) {
      EXPECT_TRUE(f.gpus[0].name && !f.gpus[0].name->empty());
    }
    (sq > 0 ? q : l)++;
  }
  EXPECT_GE(q, 20);
  EXPECT_GE(l, 1);
  EXPECT_EQ(other, 2);
}

// ------------------------------------------------------------------ sniffing and robustness

TEST(NvsmiText, SniffRejectsOtherFormats) {
  for (const char* file : {"gpuvet-h200-drv580-q.xml", "telegraf-quadro-p400-drv418.xml",
                           "nvgpuexp-h100-80gb-hbm3-load-query-gpu-allfields.csv"}) {
    std::string text = read_file(kData + file);
    EXPECT_EQ(sniff_nvsmi_q(text), 0) << file;
    EXPECT_EQ(sniff_nvsmi_list(text), 0) << file;
  }
  EXPECT_EQ(sniff_nvsmi_list(read_file(kData + "gpuvet-h200-drv580-q.txt")), 0);
  fs::path klog = std::string(GPUVET_TEST_DATA) + "/fixtures/kernel-log";
  if (fs::exists(klog))
    for (const auto& e : fs::directory_iterator(klog))
      if (e.is_regular_file()) {
        std::string text = read_file(e.path().string());
        EXPECT_EQ(sniff_nvsmi_q(text), 0) << e.path();
        EXPECT_EQ(sniff_nvsmi_list(text), 0) << e.path();
      }
  std::mt19937 rng(3);
  std::string bytes(1 << 16, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  EXPECT_EQ(sniff_nvsmi_q(bytes), 0);
  EXPECT_EQ(sniff_nvsmi_list(bytes), 0);
}

TEST(NvsmiText, GarbageBinaryAndHugeInputsAreBounded) {
  std::mt19937 rng(5);
  std::string bytes(1 << 20, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  // Each line one space deeper: a 10 MB staircase must not recurse 10^5 deep.
  std::string stairs;
  for (int i = 0; stairs.size() < (10u << 20); ++i)
    stairs += std::string(i % 200000, ' ') + "Clocks Event Reasons\n";
  std::string deep = "GPU 00000000:01:00.0\n";
  for (int i = 1; deep.size() < (10u << 20); ++i)
    deep += std::string(i, ' ') + "HW Slowdown : Active\n";
  std::string many;
  while (many.size() < (10u << 20)) many += "GPU 0: X (UUID: GPU-1)\n    Product Name : x\n";
  std::string one_line(10u << 20, 'a');
  for (const std::string* in : {&bytes, &stairs, &deep, &many, &one_line}) {
    auto t0 = std::chrono::steady_clock::now();
    Facts f1, f2;
    (void)sniff_nvsmi_q(*in);
    (void)sniff_nvsmi_list(*in);
    (void)import_nvsmi_q(*in, f1);
    (void)import_nvsmi_list(*in, f2);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 10.0);
  }
  std::string text = read_file(kData + "gpuvet-h200-drv580-q.txt");
  for (std::size_t cut : {std::size_t{0}, std::size_t{10}, text.size() / 3, text.size() - 7}) {
    Facts f;
    (void)import_nvsmi_q(text.substr(0, cut), f);
  }
  Facts f;
  EXPECT_FALSE(import_nvsmi_q("", f).is_ok());
  EXPECT_FALSE(import_nvsmi_list("hello\n", f).is_ok());
}

}  // namespace
}  // namespace gpuvet::import
