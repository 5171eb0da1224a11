#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpuvet/report.h"

namespace gpuvet {
namespace {

Facts two_gpus() {
  Facts f;
  f.host.hostname = "node7";
  f.host.numa_nodes.push_back({0, {0, 1, 2, 3}, 1ull << 30, {10, 21}});
  GpuFacts g0;
  g0.index = 0;
  g0.name = "NVIDIA H100 80GB HBM3";
  g0.pcie.gen_current = 5;
  g0.cpu_affinity = {0, 1, 2, 3};
  GpuFacts g1;
  g1.index = 1;
  g1.unresponsive =
      "not responding: nvmlDeviceGetName did not return within 3.0 s (probe timed out)";
  f.gpus = {g0, g1};
  GpuPair p;
  p.a = 0;
  p.b = 1;
  p.path = PathType::kNVLink;
  p.nvlinks = 18;
  p.p2p_read = P2PStatus::kOk;
  p.p2p_write = P2PStatus::kChipsetNotSupported;
  f.pairs = {p};
  f.notes = {"a note"};
  return f;
}

TEST(JsonTest, UnknownIsNullNeverZero) {
  auto j = nlohmann::json::parse(facts_to_json(two_gpus()));
  EXPECT_EQ(j["schema"], "gpuvet.report/1");
  EXPECT_EQ(j["tool"]["name"], "gpuvet");
  EXPECT_EQ(j["host"]["hostname"], "node7");
  EXPECT_TRUE(j["host"]["kernel"].is_null());
  EXPECT_EQ(j["host"]["numa_nodes"][0]["cpus"], "0-3");
  EXPECT_EQ(j["host"]["numa_nodes"][0]["distances"][1], 21);
  EXPECT_EQ(j["gpus"][0]["pcie"]["gen_current"], 5);
  EXPECT_TRUE(j["gpus"][0]["pcie"]["width_current"].is_null());
  EXPECT_TRUE(j["gpus"][0]["clocks"]["sm_mhz"].is_null());
  EXPECT_EQ(j["gpus"][0]["cpu_affinity"], "0-3");
  EXPECT_TRUE(j["gpus"][0]["unresponsive"].is_null());
  EXPECT_NE(j["gpus"][1]["unresponsive"].get<std::string>().find("did not return"),
            std::string::npos);
  EXPECT_EQ(j["pairs"][0]["path"], "NV18");
  EXPECT_EQ(j["pairs"][0]["subject"], "GPU0-GPU1");
  EXPECT_EQ(j["pairs"][0]["p2p"]["read"], "OK");
  EXPECT_EQ(j["pairs"][0]["p2p"]["write"], "CNS");
  EXPECT_TRUE(j["pairs"][0]["p2p"]["atomics"].is_null());
  EXPECT_EQ(j["notes"][0], "a note");
}

TEST(JsonTest, ClockSeriesBindingsAndScaleRuns) {
  Facts f = two_gpus();
  auto empty = nlohmann::json::parse(facts_to_json(f));
  EXPECT_TRUE(empty["host"]["uptime_s"].is_null());
  EXPECT_TRUE(empty["host"]["collected_unix"].is_null());
  EXPECT_TRUE(empty["samples"].is_array() && empty["samples"].empty());
  EXPECT_TRUE(empty["numa_bindings"].is_array() && empty["numa_bindings"].empty());
  EXPECT_TRUE(empty["scale_runs"].is_array() && empty["scale_runs"].empty());

  f.host.uptime_s = 8123.77;
  f.host.collected_unix = 1764669600;
  GpuSample s;
  s.gpu = 1;
  s.t_s = 2.5;
  s.sm_mhz = 1980;
  s.power_w = 300.5;
  s.clock_event_mask = 0;
  f.samples = {s};
  f.numa_bindings = {{std::nullopt, {0, 1, 2, 3, 8}, {0}, "numactl --show"}};
  ScaleRun run;
  run.workload = "train";
  run.preset = "cnn-small";
  run.gpus = 2;
  run.throughput = 1000.0;
  f.scale_runs = {run};
  auto j = nlohmann::json::parse(facts_to_json(f));
  EXPECT_DOUBLE_EQ(j["host"]["uptime_s"].get<double>(), 8123.77);
  EXPECT_EQ(j["host"]["collected_unix"], 1764669600);
  EXPECT_EQ(j["samples"][0]["gpu"], 1);
  EXPECT_EQ(j["samples"][0]["t_s"], 2.5);
  EXPECT_EQ(j["samples"][0]["sm_mhz"], 1980);
  EXPECT_TRUE(j["samples"][0]["gpu_c"].is_null());
  EXPECT_EQ(j["samples"][0]["power_w"], 300.5);
  EXPECT_TRUE(j["samples"][0]["util_pct"].is_null());
  EXPECT_EQ(j["samples"][0]["clock_event_mask"], 0);  // known, and zero
  EXPECT_TRUE(j["numa_bindings"][0]["pid"].is_null());
  EXPECT_EQ(j["numa_bindings"][0]["cpus"], "0-3,8");
  EXPECT_EQ(j["numa_bindings"][0]["mems"], "0");
  EXPECT_EQ(j["numa_bindings"][0]["source"], "numactl --show");
  EXPECT_EQ(j["scale_runs"][0]["workload"], "train");
  EXPECT_EQ(j["scale_runs"][0]["gpus"], 2);
  EXPECT_EQ(j["scale_runs"][0]["throughput"], 1000.0);
  EXPECT_TRUE(j["scale_runs"][0]["p99_ms"].is_null());
}

TEST(JsonTest, InvalidUtf8FromADeviceDoesNotAbort) {
  Facts f = two_gpus();
  f.gpus[0].name = std::string("bad\xff\xfe name");
  auto text = facts_to_json(f);
  auto j = nlohmann::json::parse(text);  // throws on invalid UTF-8
  EXPECT_NE(j["gpus"][0]["name"].get<std::string>().find("name"), std::string::npos);
}

TEST(TextTest, ShowsUnresponsiveGpuMatrixAndNotes) {
  auto text = render_facts_text(two_gpus());
  EXPECT_NE(text.find("GPU1 not responding"), std::string::npos);
  EXPECT_NE(text.find("NV18"), std::string::npos);
  EXPECT_NE(text.find("OK/CNS/-/-"), std::string::npos);
  EXPECT_NE(text.find("a note"), std::string::npos);
  EXPECT_EQ(text.find("\x1b["), std::string::npos);  // no colour unless asked
}

// 8 GPUs, 28 pairs: one line per distinct P2P status, the odd pair named, no line longer than
// a terminal (the ungrouped line was 735 characters); a paste without P2P status says so once.
TEST(TextTest, P2pStatusIsGroupedNotOneEntryPerPair) {
  Facts f;
  for (int i = 0; i < 8; ++i) {
    GpuFacts g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    f.gpus.push_back(g);
  }
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      GpuPair p;
      p.a = a;
      p.b = b;
      f.pairs.push_back(p);
    }
  EXPECT_NE(render_facts_text(f).find("P2P status: not in the input"), std::string::npos);
  for (auto& p : f.pairs)
    p.p2p_read = p.p2p_write = p.p2p_nvlink = p.p2p_atomics = p.p2p_pcie = P2PStatus::kOk;
  f.pairs[27].p2p_nvlink = P2PStatus::kNotSupported;  // GPU6-GPU7
  const std::string text = render_facts_text(f);
  EXPECT_NE(text.find("P2P read/write/nvlink/atomics/pcie, 28 pairs:"), std::string::npos) << text;
  EXPECT_NE(text.find("OK/OK/OK/OK/OK      27 pairs (the others)"), std::string::npos) << text;
  EXPECT_NE(text.find("OK/OK/NS/OK/OK       1 pair: GPU6-GPU7"), std::string::npos) << text;
  std::size_t longest = 0, start = text.find("P2P read/");
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    longest = std::max(longest, nl - start);
  EXPECT_LE(longest, 100u) << text;
}

TEST(TextTest, NoGpuSaysSo) {
  Facts f;
  f.gpu_facts_unavailable = true;
  f.notes = {"NVIDIA driver library libnvidia-ml.so.1 not found"};
  auto text = render_facts_text(f);
  EXPECT_NE(text.find("No GPU facts"), std::string::npos);
  EXPECT_NE(text.find("libnvidia-ml.so.1 not found"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet
