#include "import/nvsmi_xml.h"

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
#include "import/nvsmi_text.h"

namespace gpuvet::import {
namespace {

using namespace gpuvet::testing;

namespace fs = std::filesystem;

const std::string kData = std::string(GPUVET_TEST_DATA) + "/fixtures/capture/nvsmi/";
const std::string kShared = GPUVET_SHARED_FIXTURES;

Facts import_ok(const std::string& text) {
  Facts f;
  Status st = import_nvsmi_xml(text, f);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return f;
}

constexpr std::uint64_t kMiB = 1024ull * 1024;

// ------------------------------------------------------------------ golden files

TEST(NvsmiXml, H200Driver580) {
  Facts f = import_ok(read_file(kData + "gpuvet-h200-drv580-q.xml"));
  EXPECT_EQ(f.host.driver_version, "580.159.04");
  EXPECT_EQ(f.host.cuda_driver_version, "13.0");
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.index, 0);
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
  EXPECT_EQ(g.clocks.sm_mhz, 405);
  EXPECT_EQ(g.clocks.mem_mhz, 3201);
  EXPECT_EQ(g.clocks.sm_max_mhz, 1980);
  EXPECT_EQ(g.clocks.mem_max_mhz, 3201);
  EXPECT_EQ(g.clock_events.active_mask, 0x1u);
  EXPECT_EQ(g.clock_events.active, std::vector<std::string>{"idle"});
  EXPECT_EQ(g.clock_events.accumulated_ns.size(), 5u);
  EXPECT_EQ(g.clock_events.accumulated_ns.at("power"), 0u);
  EXPECT_EQ(g.clock_events.accumulated_ns.at("hw_power_brake"), 0u);
  EXPECT_EQ(g.thermal.gpu_c, 39);
  EXPECT_EQ(g.thermal.margin_c, 47);
  EXPECT_EQ(g.thermal.memory_c, 41);
  // T.Limit-relative thresholds (-8, -2, 0) are not absolute temperatures.
  EXPECT_FALSE(g.thermal.slowdown_c);
  EXPECT_FALSE(g.thermal.shutdown_c);
  EXPECT_FALSE(g.thermal.gpu_max_operating_c);
  EXPECT_DOUBLE_EQ(*g.power.draw_w, 124.40);
  EXPECT_DOUBLE_EQ(*g.power.limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*g.power.enforced_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*g.power.default_limit_w, 700.0);
  EXPECT_EQ(g.ecc.enabled, true);
  EXPECT_EQ(g.ecc.pending_enabled, true);
  EXPECT_EQ(g.ecc.volatile_counts.corrected, 0u);
  EXPECT_EQ(g.ecc.volatile_counts.uncorrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_counts.corrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_counts.uncorrected, 0u);
  EXPECT_FALSE(g.ecc.retired_pages_sbe);  // N/A
  EXPECT_FALSE(g.ecc.retired_pages_pending);
  EXPECT_EQ(g.ecc.remapped_rows_correctable, 0);
  EXPECT_EQ(g.ecc.remapped_rows_uncorrectable, 0);
  EXPECT_EQ(g.ecc.remapping_pending, false);
  EXPECT_EQ(g.ecc.remapping_failed, false);
  EXPECT_EQ(g.memory.total_bytes, 143771 * kMiB);
  EXPECT_EQ(g.memory.used_bytes, 0u);
  EXPECT_EQ(g.utilization.gpu_pct, 0);
  EXPECT_EQ(g.mig_enabled, false);
  EXPECT_EQ(g.persistence_mode, "enabled");
  EXPECT_EQ(g.pstate, 0);
  EXPECT_FALSE(g.fabric.state);  // N/A
  EXPECT_TRUE(f.processes.empty());
  EXPECT_TRUE(f.notes.empty());
}

TEST(NvsmiXml, Driver418ThrottleNamesAndAbsoluteTemps) {
  Facts f = import_ok(read_file(kData + "telegraf-quadro-p400-drv418.xml"));
  EXPECT_EQ(f.host.driver_version, "418.43");
  EXPECT_EQ(f.host.cuda_driver_version, "10.1");
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "Quadro P400");
  EXPECT_EQ(g.pci_bus_id, "0000:43:00.0");
  EXPECT_EQ(g.pcie.gen_current, 1);
  EXPECT_EQ(g.pcie.gen_max, 3);
  EXPECT_FALSE(g.pcie.gen_device_max);  // not in this DTD
  EXPECT_EQ(g.clock_events.active_mask, 0x1u);
  EXPECT_EQ(g.clock_events.active, std::vector<std::string>{"idle"});
  EXPECT_TRUE(g.clock_events.accumulated_ns.empty());
  EXPECT_EQ(g.thermal.gpu_c, 33);
  EXPECT_EQ(g.thermal.slowdown_c, 100);
  EXPECT_EQ(g.thermal.shutdown_c, 103);
  EXPECT_FALSE(g.thermal.margin_c);
  EXPECT_FALSE(g.power.draw_w);  // N/A on this board
  EXPECT_FALSE(g.ecc.enabled);
  EXPECT_FALSE(g.ecc.volatile_counts.corrected);
  EXPECT_EQ(g.memory.total_bytes, 1998 * kMiB);
  EXPECT_EQ(g.pstate, 8);
  EXPECT_EQ(g.persistence_mode, "disabled");
}

TEST(NvsmiXml, A100MigAndAttachedGpusMismatch) {
  Facts f = import_ok(read_file(kData + "telegraf-a100-sxm4-80gb-mig-drv535.xml"));
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.pci_bus_id, "0000:01:00.0");
  EXPECT_EQ(g.mig_enabled, true);
  EXPECT_EQ(g.pcie.gen_current, 4);
  EXPECT_EQ(g.thermal.gpu_c, 27);
  EXPECT_EQ(g.thermal.slowdown_c, 89);
  EXPECT_EQ(g.thermal.shutdown_c, 92);
  EXPECT_EQ(g.thermal.gpu_max_operating_c, 85);
  EXPECT_EQ(g.thermal.memory_max_c, 95);
  EXPECT_EQ(g.thermal.memory_c, 44);
  EXPECT_DOUBLE_EQ(*g.power.draw_w, 67.03);
  EXPECT_DOUBLE_EQ(*g.power.limit_w, 500.0);
  EXPECT_EQ(g.ecc.enabled, true);
  EXPECT_EQ(g.ecc.aggregate_counts.uncorrected, 0u);
  EXPECT_FALSE(g.ecc.remapped_rows_correctable);  // <remapped_rows>N/A</remapped_rows>
  EXPECT_EQ(g.clock_events.active_mask, 0u);
  EXPECT_TRUE(g.clock_events.active.empty());
  EXPECT_TRUE(has_note(f, "attached_gpus says 4 but the XML holds 1"));
  EXPECT_TRUE(has_note(f, "4 MIG device(s)"));
}

TEST(NvsmiXml, AdaCountersAndProcesses) {
  Facts f = import_ok(read_file(kData + "telegraf-rtx4000-sff-ada-drv595-v13.xml"));
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA RTX 4000 SFF Ada Generation");
  EXPECT_EQ(g.clock_events.accumulated_ns.at("power"), 4251825415ull * 1000);
  EXPECT_EQ(g.clock_events.accumulated_ns.at("thermal"), 0u);
  EXPECT_EQ(g.thermal.margin_c, 49);
  EXPECT_EQ(g.ecc.enabled, false);
  EXPECT_EQ(g.memory.total_bytes, 20475 * kMiB);
  EXPECT_EQ(g.memory.used_bytes, 3534 * kMiB);
  ASSERT_EQ(f.processes.size(), 4u);
  EXPECT_EQ(f.processes[0].host_pid, 1842);
  EXPECT_EQ(f.processes[0].gpu, 0);
  EXPECT_EQ(f.processes[0].name, "cosmic-comp");
  EXPECT_EQ(f.processes[0].used_memory_bytes, 410 * kMiB);
}

TEST(NvsmiXml, VgpuGuestLeavesPcieEmpty) {
  Facts f = import_ok(read_file(kData + "telegraf-grid-p4-1q-vgpu.xml"));
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "GRID P4-1Q");
  EXPECT_EQ(g.pci_bus_id, "0000:00:0b.0");
  EXPECT_FALSE(g.pcie.gen_current);
  EXPECT_FALSE(g.pcie.gen_max);
  EXPECT_FALSE(g.pcie.width_current);
  EXPECT_FALSE(g.pcie.replay_counter);
  EXPECT_FALSE(g.serial);
  EXPECT_FALSE(g.ecc.volatile_counts.corrected);
  EXPECT_EQ(g.memory.total_bytes, 1024 * kMiB);
  ASSERT_FALSE(f.processes.empty());
  EXPECT_EQ(f.processes[0].host_pid, 1188);
  EXPECT_FALSE(f.processes[0].name);  // empty <process_name/>
  EXPECT_FALSE(f.processes[0].used_memory_bytes);
}

TEST(NvsmiXml, WindowsWddm) {
  Facts f = import_ok(read_file(kData + "telegraf-rtx3080-win-drv536-v12.xml"));
  EXPECT_EQ(f.host.driver_version, "536.40");
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA GeForce RTX 3080");
  EXPECT_FALSE(g.persistence_mode);  // N/A on Windows
  EXPECT_DOUBLE_EQ(*g.power.default_limit_w, 320.0);
  EXPECT_DOUBLE_EQ(*g.power.enforced_limit_w, 336.0);
  EXPECT_EQ(g.pcie.gen_max, 4);
}

TEST(NvsmiXml, TwoGpusIndexedByElementOrder) {
  Facts f = import_ok(read_file(kData + "telegraf-dual-rtx2070-v13.xml"));
  ASSERT_EQ(f.gpus.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const GpuFacts& g = f.gpus[i];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.name, "NVIDIA GeForce RTX 2070");
    EXPECT_EQ(g.pcie.gen_current, 1);
    EXPECT_EQ(g.pcie.gen_max, 3);
    EXPECT_EQ(g.pcie.width_current, 8);
    EXPECT_EQ(g.pcie.width_max, 16);
  }
  EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:01:00.0");
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:02:00.0");
  EXPECT_EQ(f.gpus[1].clock_events.accumulated_ns.at("power"), 306441670452ull * 1000);
}

TEST(NvsmiXml, SharedP100AggregateSingleBitAndRetiredPages) {
  std::string path = kShared + "/nvsmi-xml/netdata-tesla-p100-pcie-16gb-drv510.xml";
  GPUVET_REQUIRE_SHARED(path);
  Facts f = import_ok(read_file(path));
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "Tesla P100-PCIE-16GB");
  EXPECT_EQ(g.ecc.aggregate_counts.corrected, 3u);
  EXPECT_EQ(g.ecc.aggregate_counts.uncorrected, 0u);
  EXPECT_EQ(g.ecc.volatile_counts.corrected, 0u);
  EXPECT_EQ(g.ecc.retired_pages_sbe, 0);
  EXPECT_EQ(g.ecc.retired_pages_dbe, 0);
  EXPECT_EQ(g.ecc.retired_pages_pending, false);
}

TEST(NvsmiXml, SharedRtx4090HostLimitedGen) {
  std::string path = kShared + "/nvsmi-xml/netdata-rtx4090-drv535.xml";
  GPUVET_REQUIRE_SHARED(path);
  Facts f = import_ok(read_file(path));
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].pcie.gen_max, 3);
  EXPECT_EQ(f.gpus[0].pcie.gen_current, 1);
}

// ------------------------------------------------------------------ synthetic DTD variants

TEST(NvsmiXml, PerLocationCountsSummedWhenNoTotal) {
  const char* xml = R"(<?xml version="1.0" ?>
<nvidia_smi_log><driver_version>470.1</driver_version><attached_gpus>1</attached_gpus>
<gpu id="00000000:3B:00.0"><product_name>Tesla V100</product_name>
<ecc_errors><volatile><single_bit><device_memory>2</device_memory><register_file>1</register_file>
<l1_cache>N/A</l1_cache><total>N/A</total></single_bit>
<double_bit><device_memory>0</device_memory></double_bit></volatile>
<aggregate><sram_correctable>4</sram_correctable><sram_uncorrectable_parity>1</sram_uncorrectable_parity>
<sram_uncorrectable_secded>2</sram_uncorrectable_secded><dram_correctable>5</dram_correctable>
<dram_uncorrectable>3</dram_uncorrectable><sram_threshold_exceeded>No</sram_threshold_exceeded></aggregate>
</ecc_errors>
<retired_pages><multiple_single_bit_retirement><retired_count>2</retired_count></multiple_single_bit_retirement>
<double_bit_retirement><retired_count>1</retired_count></double_bit_retirement>
<pending_blacklist>No</pending_blacklist><pending_retirement>Yes</pending_retirement></retired_pages>
<remapped_rows><remapped_row_corr>1</remapped_row_corr><remapped_row_unc>2</remapped_row_unc>
<remapped_row_pending>Yes</remapped_row_pending><remapped_row_failure>No</remapped_row_failure></remapped_rows>
<clocks_throttle_reasons><clocks_throttle_reason_sw_power_cap>Active</clocks_throttle_reason_sw_power_cap>
<clocks_throttle_reason_hw_slowdown>Active</clocks_throttle_reason_hw_slowdown></clocks_throttle_reasons>
<fabric><state>In Progress</state><status>Success</status><cliqueId>7</cliqueId>
<clusterUuid>abc</clusterUuid></fabric>
<minor_number>5</minor_number>
</gpu></nvidia_smi_log>)";
  Facts f = import_ok(xml);
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.index, 0);  // not <minor_number>
  EXPECT_EQ(g.pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(g.ecc.volatile_counts.corrected, 3u);
  EXPECT_EQ(g.ecc.volatile_counts.uncorrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_counts.corrected, 9u);
  EXPECT_EQ(g.ecc.aggregate_counts.uncorrected, 6u);
  EXPECT_EQ(g.ecc.retired_pages_sbe, 2);
  EXPECT_EQ(g.ecc.retired_pages_dbe, 1);
  EXPECT_EQ(g.ecc.retired_pages_pending, true);
  EXPECT_EQ(g.ecc.remapped_rows_correctable, 1);
  EXPECT_EQ(g.ecc.remapped_rows_uncorrectable, 2);
  EXPECT_EQ(g.ecc.remapping_pending, true);
  EXPECT_EQ(g.ecc.remapping_failed, false);
  // Only two of nine reasons were printed: names yes, a full mask no.
  EXPECT_EQ(g.clock_events.active, (std::vector<std::string>{"sw_power_cap", "hw_slowdown"}));
  EXPECT_FALSE(g.clock_events.active_mask);
  EXPECT_EQ(g.fabric.state, "in_progress");
  EXPECT_EQ(g.fabric.status, "SUCCESS");
  EXPECT_EQ(g.fabric.clique_id, 7u);
  EXPECT_EQ(g.fabric.cluster_uuid, "abc");
}

TEST(NvsmiXml, MissingValueSpellingsLeaveFieldsEmpty) {
  const char* xml = R"(<nvidia_smi_log><gpu id="00000000:01:00.0">
<product_name>X</product_name><serial>[Not Supported]</serial><uuid>Unknown Error</uuid>
<vbios_version>[N/A]</vbios_version><performance_state>Unknown Error</performance_state>
<display_mode>Requested functionality has been deprecated</display_mode>
<fb_memory_usage><total>Requested functionality has been deprecated</total></fb_memory_usage>
<temperature><gpu_temp>N/A</gpu_temp></temperature></gpu></nvidia_smi_log>)";
  Facts f = import_ok(xml);
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "X");
  EXPECT_FALSE(g.serial);
  EXPECT_FALSE(g.uuid);
  EXPECT_FALSE(g.vbios);
  EXPECT_FALSE(g.pstate);
  EXPECT_FALSE(g.memory.total_bytes);
  EXPECT_FALSE(g.thermal.gpu_c);
}

TEST(NvsmiXml, TruncatedDocumentReadsWhatCameBefore) {
  std::string text = read_file(kData + "gpuvet-h200-drv580-q.xml");
  std::string cut = text.substr(0, text.find("<clocks>"));
  Facts f;
  Status st = import_nvsmi_xml(cut, f);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(f.gpus[0].thermal.gpu_c, 39);
  EXPECT_FALSE(f.gpus[0].clocks.sm_max_mhz);
  EXPECT_TRUE(has_note(f, "XML damaged"));
}

// ------------------------------------------------------------------ every shared file

TEST(NvsmiXml, EverySharedXmlParses) {
  fs::path dir = kShared + "/nvsmi-xml";
  GPUVET_REQUIRE_SHARED(dir);
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string text = read_file(e.path().string());
    SCOPED_TRACE(e.path().filename().string());
    EXPECT_EQ(sniff_nvsmi_xml(text), 100);
    EXPECT_EQ(sniff_nvsmi_q(text), 0);
    EXPECT_EQ(sniff_nvsmi_list(text), 0);
    EXPECT_EQ(sniff_nvsmi_query_csv(text), 0);
    Facts f;
    Status st = import_nvsmi_xml(text, f);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_GE(f.gpus.size(), 1u);
    EXPECT_TRUE(f.gpus[0].name && !f.gpus[0].name->empty());
    EXPECT_TRUE(f.host.driver_version);
    ++n;
  }
  EXPECT_GE(n, 20);
}

// ------------------------------------------------------------------ sniffing and robustness

// Every shared sample of another family (topo, nvlink, p2p, pmon/dmon, kernel log, NCCL, …)
// is none of the four nvidia-smi formats.
TEST(NvsmiSniff, OtherFamiliesSniffZero) {
  GPUVET_REQUIRE_SHARED(kShared);
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(kShared)) {
    if (!e.is_regular_file()) continue;
    std::string family = e.path().parent_path().filename().string();
    if (family == "nvsmi-xml" || family == "nvsmi-text" || family == "query-csv") continue;
    if (e.path().parent_path() == fs::path(kShared)) continue;  // PROVENANCE.md
    std::string text = read_file(e.path().string());
    SCOPED_TRACE(e.path().string());
    EXPECT_EQ(sniff_nvsmi_xml(text), 0);
    EXPECT_EQ(sniff_nvsmi_q(text), 0);
    EXPECT_EQ(sniff_nvsmi_list(text), 0);
    EXPECT_EQ(sniff_nvsmi_query_csv(text), 0);
    ++n;
  }
  EXPECT_GT(n, 20);
}

TEST(NvsmiXml, SniffRejectsOtherFormats) {
  EXPECT_EQ(sniff_nvsmi_xml(read_file(kData + "gpuvet-h200-drv580-q.txt")), 0);
  EXPECT_EQ(sniff_nvsmi_xml(read_file(kData + "nvgpuexp-l40s-load-query-gpu-allfields.csv")), 0);
  EXPECT_EQ(sniff_nvsmi_xml("GPU 0: NVIDIA H100 (UUID: GPU-1)\n"), 0);
  EXPECT_EQ(sniff_nvsmi_xml("<?xml version=\"1.0\"?><system version=\"1\"><cpu/></system>"), 0);
  fs::path klog = std::string(GPUVET_TEST_DATA) + "/fixtures/kernel-log";
  if (fs::exists(klog))
    for (const auto& e : fs::directory_iterator(klog))
      if (e.is_regular_file()) {
        EXPECT_EQ(sniff_nvsmi_xml(read_file(e.path().string())), 0) << e.path();
      }
  std::mt19937 rng(7);
  std::string bytes(1 << 16, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  EXPECT_EQ(sniff_nvsmi_xml(bytes), 0);
}

TEST(NvsmiXml, GarbageBinaryAndHugeInputsAreBounded) {
  std::mt19937 rng(11);
  std::string bytes(1 << 20, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  std::string nested;
  nested.reserve(10u << 20);
  nested += "<nvidia_smi_log>";
  while (nested.size() < (10u << 20)) nested += "<gpu>";
  std::string many = "<nvidia_smi_log>";
  while (many.size() < (10u << 20))
    many += "<gpu id=\"0:1:0.0\"><product_name>x</product_name></gpu>\n";
  many += "</nvidia_smi_log>";
  for (const std::string* in : {&bytes, &nested, &many}) {
    auto t0 = std::chrono::steady_clock::now();
    Facts f;
    (void)import_nvsmi_xml(*in, f);
    (void)sniff_nvsmi_xml(*in);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 10.0);
  }
  Facts f;
  EXPECT_FALSE(import_nvsmi_xml("", f).is_ok());
  EXPECT_FALSE(import_nvsmi_xml(bytes, f).is_ok());
}

}  // namespace
}  // namespace gpuvet::import
