#include "import/nvsmi_csv.h"

#include <gtest/gtest.h>

#include "fixture_util.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "import/nvsmi_text.h"
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
  Status st = import_nvsmi_query_csv(text, f);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return f;
}

using Records = std::vector<std::vector<std::string>>;

// ------------------------------------------------------------------ the RFC 4180 splitter

TEST(NvsmiCsvSplit, PlainQuotedAndEscaped) {
  EXPECT_EQ(split_csv("a, b ,c\n1,2,3\n"), (Records{{"a", "b", "c"}, {"1", "2", "3"}}));
  EXPECT_EQ(split_csv("\"x, y\",\"say \"\"hi\"\"\", z"), (Records{{"x, y", "say \"hi\"", "z"}}));
  EXPECT_EQ(split_csv("\"two\nlines\",b\r\nc,d\r\n"), (Records{{"two\nlines", "b"}, {"c", "d"}}));
  EXPECT_EQ(split_csv("a,,\n\n\n b \n"), (Records{{"a", "", ""}, {"b"}}));
  EXPECT_EQ(split_csv(" \" padded \" ,x"), (Records{{" padded ", "x"}}));
  EXPECT_EQ(split_csv("a,\"unterminated, runs\nto end"),
            (Records{{"a", "unterminated, runs\nto end"}}));
  EXPECT_EQ(split_csv("ab\"c,d"), (Records{{"ab\"c", "d"}}));
  EXPECT_EQ(split_csv("no newline at end"), (Records{{"no newline at end"}}));
  EXPECT_EQ(split_csv("x\ry\n"), (Records{{"x"}, {"y"}}));
  EXPECT_TRUE(split_csv("").empty());
  EXPECT_TRUE(split_csv("\n\r\n  \n").empty());
  EXPECT_EQ(split_csv("a\nb\nc\n", 2).size(), 2u);
  EXPECT_EQ(split_csv(std::string(100, 'x'), 10, 8), (Records{{"xxxxxxxx"}}));
}

// ------------------------------------------------------------------ golden files

TEST(NvsmiCsv, H100AllFieldsUnderLoad) {
  std::string text = read_file(kData + "nvgpuexp-h100-80gb-hbm3-load-query-gpu-allfields.csv");
  EXPECT_EQ(sniff_nvsmi_query_csv(text), 95);
  Facts f = import_ok(text);
  EXPECT_EQ(f.host.driver_version, "590.48.01");
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.uuid, "GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(g.vbios, "96.00.A5.00.01");
  EXPECT_EQ(g.pci_bus_id, "0000:00:09.0");
  EXPECT_EQ(g.pcie.gen_current, 5);
  EXPECT_EQ(g.pcie.gen_max, 5);
  EXPECT_EQ(g.pcie.gen_device_max, 5);
  EXPECT_EQ(g.pcie.width_current, 16);
  EXPECT_EQ(g.pcie.width_max, 16);
  EXPECT_EQ(g.persistence_mode, "enabled");
  EXPECT_EQ(g.pstate, 0);
  EXPECT_EQ(g.clock_events.active_mask, 0u);
  EXPECT_TRUE(g.clock_events.active.empty());
  EXPECT_EQ(g.clock_events.accumulated_ns.size(), 5u);
  EXPECT_EQ(g.clock_events.accumulated_ns.at("hw_power_brake"), 0u);
  EXPECT_EQ(g.memory.total_bytes, 81559 * kMiB);
  EXPECT_EQ(g.memory.used_bytes, 19818 * kMiB);
  EXPECT_EQ(g.utilization.gpu_pct, 100);
  EXPECT_EQ(g.ecc.enabled, true);
  EXPECT_EQ(g.ecc.pending_enabled, true);
  EXPECT_EQ(g.ecc.volatile_counts.corrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_counts.uncorrected, 0u);
  EXPECT_FALSE(g.ecc.retired_pages_sbe);  // [N/A]
  EXPECT_FALSE(g.ecc.retired_pages_pending);
  EXPECT_EQ(g.ecc.remapped_rows_correctable, 0);
  EXPECT_EQ(g.ecc.remapping_pending, false);
  EXPECT_EQ(g.ecc.remapping_failed, false);
  EXPECT_EQ(g.thermal.gpu_c, 59);
  EXPECT_EQ(g.thermal.margin_c, 26);
  EXPECT_EQ(g.thermal.memory_c, 54);
  EXPECT_DOUBLE_EQ(*g.power.draw_w, 631.95);
  EXPECT_DOUBLE_EQ(*g.power.limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*g.power.enforced_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*g.power.default_limit_w, 700.0);
  EXPECT_EQ(g.clocks.sm_mhz, 1980);
  EXPECT_EQ(g.clocks.sm_max_mhz, 1980);
  EXPECT_EQ(g.clocks.mem_max_mhz, 2619);
  EXPECT_EQ(g.mig_enabled, false);
  EXPECT_EQ(g.fabric.state, "completed");
  EXPECT_EQ(g.fabric.status, "SUCCESS");
  EXPECT_EQ(g.fabric.clique_id, 0u);
}

TEST(NvsmiCsv, L40sPowerCapCounter) {
  Facts f = import_ok(read_file(kData + "nvgpuexp-l40s-load-query-gpu-allfields.csv"));
  EXPECT_EQ(f.host.driver_version, "595.80");
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA L40S");
  EXPECT_EQ(g.clock_events.accumulated_ns.at("power"), 204642816ull * 1000);
  EXPECT_EQ(g.pcie.gen_max, 4);
  EXPECT_FALSE(g.mig_enabled);  // [N/A]
  EXPECT_FALSE(g.thermal.memory_c);
  EXPECT_FALSE(g.fabric.state);
  EXPECT_DOUBLE_EQ(*g.power.limit_w, 350.0);
  EXPECT_EQ(g.persistence_mode, "disabled");
}

TEST(NvsmiCsv, SharedSamplesWithoutPermissiveLicense) {
  fs::path dir = kShared + "/query-csv";
  GPUVET_REQUIRE_SHARED(dir);
  {
    Facts f = import_ok(read_file((dir / "hpe-dl380-2x-a100-pcie-query-gpu.csv").string()));
    ASSERT_EQ(f.gpus.size(), 2u);
    EXPECT_EQ(f.gpus[0].index, 0);
    EXPECT_EQ(f.gpus[1].index, 1);
    EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:8a:00.0");
    EXPECT_EQ(f.gpus[0].vbios, "92.00.25.00.08");
    EXPECT_EQ(f.gpus[0].thermal.gpu_c, 39);
    EXPECT_EQ(f.gpus[1].thermal.gpu_c, 37);
    EXPECT_EQ(f.gpus[0].memory.total_bytes, 40960 * kMiB);
    EXPECT_EQ(f.gpus[0].memory.used_bytes, 1 * kMiB);
    EXPECT_EQ(f.gpus[0].utilization.gpu_pct, 0);
  }
  {
    // nounits-style cells, no trailing newline.
    Facts f = import_ok(read_file((dir / "netdata-tesla-p100-query-gpu.csv").string()));
    ASSERT_EQ(f.gpus.size(), 1u);
    const GpuFacts& g = f.gpus[0];
    EXPECT_EQ(g.name, "Tesla P100-PCIE-16GB");
    EXPECT_EQ(g.uuid, "GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6");
    EXPECT_EQ(g.pstate, 0);
    EXPECT_EQ(g.memory.used_bytes, 0u);
    EXPECT_EQ(g.thermal.gpu_c, 37);
    EXPECT_DOUBLE_EQ(*g.power.draw_w, 28.16);
    EXPECT_EQ(g.clocks.sm_mhz, 405);
    EXPECT_EQ(g.clocks.mem_mhz, 715);
  }
}

TEST(NvsmiCsv, EverySharedCsvParses) {
  fs::path dir = kShared + "/query-csv";
  GPUVET_REQUIRE_SHARED(dir);
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string text = read_file(e.path().string());
    SCOPED_TRACE(e.path().filename().string());
    EXPECT_GT(sniff_nvsmi_query_csv(text), 50);
    EXPECT_EQ(sniff_nvsmi_xml(text), 0);
    EXPECT_EQ(sniff_nvsmi_q(text), 0);
    EXPECT_EQ(sniff_nvsmi_list(text), 0);
    Facts f = import_ok(text);
    ASSERT_GE(f.gpus.size(), 1u);
    EXPECT_TRUE(f.gpus[0].name && !f.gpus[0].name->empty());
    ++n;
  }
  EXPECT_GE(n, 4);
}

// ------------------------------------------------------------------ synthetic variants

TEST(NvsmiCsv, ThrottleMaskAndPerReasonColumns) {
  const char* text =
      "index, pci.bus_id, clocks_throttle_reasons.active, clocks_throttle_reasons.hw_slowdown, "
      "ecc.errors.uncorrected.aggregate.total, power.draw [W], memory.total [MiB]\n"
      "0, 00000000:18:00.0, 0x0000000000000004, Not Active, 0, 250.10 W, 81559 MiB\n"
      "1, 00000000:2A:00.0, 0x0000000000000088, Active, 7, [N/A], 81559 MiB\n";
  EXPECT_EQ(sniff_nvsmi_query_csv(text), 95);
  Facts f = import_ok(text);
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].clock_events.active_mask, 0x4u);
  EXPECT_EQ(f.gpus[0].clock_events.active, std::vector<std::string>{"sw_power_cap"});
  EXPECT_EQ(f.gpus[1].clock_events.active,
            (std::vector<std::string>{"hw_slowdown", "hw_power_brake_slowdown"}));
  EXPECT_EQ(f.gpus[1].ecc.aggregate_counts.uncorrected, 7u);
  EXPECT_FALSE(f.gpus[1].power.draw_w);
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:2a:00.0");
}

TEST(NvsmiCsv, PerReasonOnlyAndNoUnits) {
  const char* text =
      "index,clocks_event_reasons.gpu_idle,clocks_event_reasons.applications_clocks_setting,"
      "clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,"
      "clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,"
      "clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sync_boost,"
      "clocks_event_reasons.display_clocks_setting,memory.used [MiB],utilization.gpu [%]\n"
      "3,Not Active,Not Active,Active,Not Active,Not Active,Not Active,Active,Not Active,Not "
      "Active,512,88\n";
  Facts f = import_ok(text);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].index, 3);
  EXPECT_EQ(f.gpus[0].clock_events.active_mask, 0x24u);
  EXPECT_EQ(f.gpus[0].clock_events.active,
            (std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown"}));
  EXPECT_EQ(f.gpus[0].memory.used_bytes, 512 * kMiB);
  EXPECT_EQ(f.gpus[0].utilization.gpu_pct, 88);
}

TEST(NvsmiCsv, QuotedNameWithCommaAndRepeatedSamples) {
  const char* text =
      "index, name, temperature.gpu\n"
      "0, \"Weird, GPU\", 40\n"
      "index, name, temperature.gpu\n"
      "0, \"Weird, GPU\", 41\n"
      "1, Short, 3, extra\n";
  Facts f = import_ok(text);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "Weird, GPU");
  EXPECT_EQ(f.gpus[0].thermal.gpu_c, 41);  // the latest sample
  EXPECT_TRUE(has_note(f, "1 row(s) with a field count"));
  EXPECT_TRUE(has_note(f, "kept the latest"));
}

TEST(NvsmiCsvSeries, TimestampColumnGivesTheTimes) {
  const char* text =
      "timestamp, index, clocks.sm [MHz], temperature.gpu, power.draw [W], utilization.gpu [%], "
      "clocks_event_reasons.active\n"
      "2024/01/13 09:41:02.123, 0, 1980 MHz, 60, 300.50 W, 90 %, 0x0000000000000000\n"
      "2024/01/13 09:41:02.125, 1, 1410 MHz, 45, 120.00 W, 10 %, 0x0000000000000001\n"
      "2024/01/13 09:41:03.623, 0, 1755 MHz, 70, 350.00 W, 100 %, 0x0000000000000004\n"
      "2024/01/13 09:41:03.625, 1, 1410 MHz, 46, [N/A], 12 %, 0x0000000000000001\n";
  EXPECT_EQ(sniff_nvsmi_query_csv(text), 95);
  Facts f = import_ok(text);
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].clocks.sm_mhz, 1755);  // the last sample
  EXPECT_EQ(f.gpus[0].clock_events.active_mask, 0x4u);
  ASSERT_EQ(f.samples.size(), 4u);
  // Ordered by (gpu, t_s), from the first timestamp.
  const auto& s = f.samples;
  EXPECT_EQ(s[0].gpu, 0);
  EXPECT_EQ(s[1].gpu, 0);
  EXPECT_EQ(s[2].gpu, 1);
  EXPECT_EQ(s[3].gpu, 1);
  EXPECT_NEAR(s[0].t_s, 0.0, 1e-6);
  EXPECT_NEAR(s[1].t_s, 1.5, 1e-6);
  EXPECT_NEAR(s[2].t_s, 0.002, 1e-6);
  EXPECT_NEAR(s[3].t_s, 1.502, 1e-6);
  EXPECT_EQ(s[1].sm_mhz, 1755);
  EXPECT_EQ(s[1].gpu_c, 70);
  EXPECT_DOUBLE_EQ(*s[1].power_w, 350.0);
  EXPECT_EQ(s[1].util_pct, 100);
  EXPECT_EQ(s[1].clock_event_mask, 0x4u);
  EXPECT_EQ(s[0].clock_event_mask, 0u);  // known, and zero
  EXPECT_FALSE(s[3].power_w.has_value());
  EXPECT_TRUE(has_note(f, "time series of 4 samples of 2 GPU(s), t_s from the timestamp"));
}

TEST(NvsmiCsvSeries, RepeatedIndexesWithoutTimestampUseTheRowOrder) {
  const char* text =
      "index, power.draw [W]\n"
      "0, 100.00 W\n"
      "1, 50.00 W\n"
      "0, 110.00 W\n"
      "1, 55.00 W\n"
      "0, 120.00 W\n";
  Facts f = import_ok(text);
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(*f.gpus[0].power.draw_w, 120.0);
  ASSERT_EQ(f.samples.size(), 5u);
  EXPECT_EQ(f.samples[2].gpu, 0);
  EXPECT_DOUBLE_EQ(f.samples[2].t_s, 2.0);
  EXPECT_DOUBLE_EQ(*f.samples[2].power_w, 120.0);
  EXPECT_EQ(f.samples[4].gpu, 1);
  EXPECT_DOUBLE_EQ(f.samples[4].t_s, 1.0);
  EXPECT_FALSE(f.samples[4].clock_event_mask.has_value());  // no mask column
  EXPECT_FALSE(f.samples[4].sm_mhz.has_value());
  EXPECT_TRUE(has_note(f, "no timestamps: t_s is the sample order"));
}

TEST(NvsmiCsvSeries, WithoutIndexTheUuidTellsGpusApart) {
  const char* text =
      "timestamp, uuid, temperature.gpu\n"
      "2024/01/13 09:41:02.000, GPU-a, 40\n"
      "2024/01/13 09:41:02.000, GPU-b, 50\n"
      "2024/01/13 09:41:04.000, GPU-a, 41\n";
  Facts f = import_ok(text);
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].uuid, "GPU-a");
  EXPECT_EQ(f.gpus[0].thermal.gpu_c, 41);
  EXPECT_EQ(f.gpus[1].index, 1);
  ASSERT_EQ(f.samples.size(), 3u);
  EXPECT_DOUBLE_EQ(f.samples[1].t_s, 2.0);
  EXPECT_EQ(f.samples[1].gpu_c, 41);
}

TEST(NvsmiCsvSeries, OneRowPerGpuIsNoSeries) {
  std::string text = read_file(kData + "nvgpuexp-h100-80gb-hbm3-load-query-gpu-allfields.csv");
  Facts f = import_ok(text);
  EXPECT_TRUE(f.samples.empty());
  EXPECT_FALSE(has_note(f, "time series"));
}

TEST(NvsmiCsv, NoHeaderIsWeakAndNoted) {
  const char* text =
      "NVIDIA A100-PCIE-40GB, 00000000:12:00.0, 39, 0 %, 40960 MiB\n"
      "NVIDIA A100-PCIE-40GB, 00000000:8A:00.0, 37, 0 %, 40960 MiB\n";
  EXPECT_EQ(sniff_nvsmi_query_csv(text), 20);
  Facts f;
  EXPECT_FALSE(import_nvsmi_query_csv(text, f).is_ok());
  EXPECT_TRUE(f.gpus.empty());
  EXPECT_TRUE(has_note(f, "without header"));
}

// ------------------------------------------------------------------ sniffing and robustness

TEST(NvsmiCsv, SniffRejectsOtherFormats) {
  for (const char* file :
       {"gpuvet-h200-drv580-q.xml", "gpuvet-h200-drv580-q.txt", "telegraf-dual-rtx2070-v13.xml",
        "gpud-8x-h100-q-drv535.161-hw-power-brake-all-gpus.txt"})
    EXPECT_EQ(sniff_nvsmi_query_csv(read_file(kData + file)), 0) << file;
  EXPECT_EQ(sniff_nvsmi_query_csv("GPU 0: NVIDIA H100 (UUID: GPU-1)\n"), 0);
  EXPECT_EQ(sniff_nvsmi_query_csv("name,ms\nfoo,3\n"), 0);
  EXPECT_EQ(sniff_nvsmi_query_csv("a,b,c\n1,2,3\n"), 0);
  fs::path klog = std::string(GPUVET_TEST_DATA) + "/fixtures/kernel-log";
  if (fs::exists(klog))
    for (const auto& e : fs::directory_iterator(klog))
      if (e.is_regular_file()) {
        EXPECT_EQ(sniff_nvsmi_query_csv(read_file(e.path().string())), 0) << e.path();
      }
  std::mt19937 rng(9);
  std::string bytes(1 << 16, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  EXPECT_EQ(sniff_nvsmi_query_csv(bytes), 0);
}

TEST(NvsmiCsv, GarbageBinaryAndHugeInputsAreBounded) {
  std::mt19937 rng(13);
  std::string bytes(1 << 20, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  std::string quotes(10u << 20, '"');
  std::string commas(10u << 20, ',');
  std::string rows = "index, name, power.draw [W]\n";
  while (rows.size() < (10u << 20)) rows += "0, x, 1.0 W\n";
  for (const std::string* in : {&bytes, &quotes, &commas, &rows}) {
    auto t0 = std::chrono::steady_clock::now();
    Facts f;
    (void)sniff_nvsmi_query_csv(*in);
    (void)import_nvsmi_query_csv(*in, f);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 10.0);
  }
  std::string text = read_file(kData + "nvgpuexp-h100-80gb-hbm3-load-query-gpu-allfields.csv");
  Facts f;
  (void)import_nvsmi_query_csv(text.substr(0, text.size() / 2), f);
  EXPECT_FALSE(import_nvsmi_query_csv("", f).is_ok());
}

}  // namespace
}  // namespace gpuvet::import
