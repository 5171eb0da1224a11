// The rules over time end to end: the gpuvet binary watches the fake NVML (a timeline in the
// scenario moves its readings while the watch runs), records the series with --record, and
// `gpuvet diagnose --from` judges the recording again. A temperature ramp that drops clocks
// with a thermal reason, one GPU of eight lagging its peers, and healthy busy and idle nodes
// that must stay quiet. The series last a few seconds, so the configs lower
// series_min_span_s; everything else is the defaults.
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "gpuvet/env.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::set<std::string> kOverTimeIds = {"clocks-degrade-over-time", "gpu-lags-peers",
                                            "thermal-margin-shrinking",
                                            "throttle-appears-over-time", "errors-during-watch"};

json read_scenario(const std::string& name) {
  std::ifstream in(std::string(GPUVET_TEST_DATA) + "/scenarios/" + name);
  return json::parse(in);
}

class Scratch {
 public:
  Scratch()
      : path_(fs::temp_directory_path() /
              ("gpuvet-watch-rules-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
    std::ofstream(path_ / "short.toml") << "[thresholds]\nseries_min_span_s = 1\n";
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path file(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

CommandResult run(const std::string& scenario, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "GPUVET_FAKE_NVML_SCENARIO=" + scenario, GPUVET_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = make_process_runner()->run(argv, std::chrono::seconds(60));
  EXPECT_TRUE(r.is_ok());
  if (!r.is_ok()) return {};
  EXPECT_FALSE(r.value().timed_out);
  return r.value();
}

struct Judged {
  CommandResult watch;  // the watch's own verdict (text)
  json report;          // diagnose --from the recording, --json
  int diagnose_exit = 0;
};

// `gpuvet watch` for `seconds` on `scenario`, then `gpuvet diagnose --from` its recording.
Judged watch_and_judge(const Scratch& dir, const json& scenario, double seconds) {
  const std::string path = dir.file("scenario.json");
  std::ofstream(path) << scenario.dump(2);
  const std::string record = dir.file("watch.json");
  const std::string config = dir.file("short.toml");
  Judged j;
  j.watch = run(
      path, {"watch", "--root", std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-1gpu-vm",
             "--no-kernel-log", "--sample-window", "0", "--nvml", GPUVET_FAKE_NVML, "--interval",
             "0.1", "--duration", std::to_string(seconds), "--record", record, "--config", config});
  EXPECT_TRUE(fs::exists(record)) << j.watch.out << j.watch.err;
  const auto d = run(path, {"diagnose", "--from", record, "--config", config, "--json"});
  j.diagnose_exit = d.exit_code;
  j.report = json::parse(d.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.report.is_discarded()) << d.out << d.err;
  return j;
}

// (id, subjects) of the over-time findings, with their severity.
std::vector<std::string> over_time(const json& report) {
  std::vector<std::string> v;
  if (!report.is_object() || !report.contains("findings")) return v;
  for (const auto& f : report["findings"]) {
    const std::string id = f.value("id", "");
    if (!kOverTimeIds.count(id)) continue;
    std::string s = id + " " + f.value("severity", "");
    for (const auto& subject : f["subjects"]) s += " " + subject.get<std::string>();
    v.push_back(s);
  }
  return v;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// A busy GPU of the scenario: a bf16 GEMM at 1980 MHz, 62 °C, 600 W, no clock limit.
void make_busy(json& gpu) {
  gpu["utilization"] = {{"gpu", 100}, {"memory", 60}};
  gpu["clocks"]["sm"] = 1980;
  gpu["clocks"]["graphics"] = 1980;
  gpu["clock_event_reasons"] = 0;
  gpu["temperature"] = 62;
  gpu["margin"] = 23;
  gpu["power"]["draw_w"] = 600;
  gpu["pstate"] = 0;
}

// Catches: the timeline not read by the sampler (nothing moves, nothing fires), the thermal
// reason lost between the fake, the recording and the rules, the watch's own verdict and
// diagnose --from disagreeing.
TEST(WatchRulesCli, ATemperatureRampThatDropsClocksWithAThermalReasonFires) {
  Scratch dir;
  json s = read_scenario("h200-1gpu-load.json");
  json& gpu = s["gpus"][0];
  make_busy(gpu);
  // Cool and fast for 1.5 s after NVML is loaded, heating over one second, then hot and slow
  // with the software thermal slowdown until the end.
  gpu["timeline"] = json::array({
      {{"t_s", 0},
       {"temperature", 62},
       {"margin", 25},
       {"sm_mhz", 1980},
       {"clock_event_reasons", 0}},
      {{"t_s", 1.5}, {"temperature", 62}, {"margin", 25}, {"sm_mhz", 1980}},
      {{"t_s", 2.5},
       {"temperature", 86},
       {"margin", 1},
       {"sm_mhz", 1500},
       {"clock_event_reasons", json::array({"sw_thermal_slowdown"})}},
  });
  const Judged j = watch_and_judge(dir, s, 4);
  const auto found = over_time(j.report);
  EXPECT_TRUE(contains(found, "clocks-degrade-over-time warning GPU0")) << joined(found);
  EXPECT_TRUE(contains(found, "thermal-margin-shrinking warning GPU0")) << joined(found);
  EXPECT_TRUE(contains(found, "throttle-appears-over-time warning GPU0")) << joined(found);
  EXPECT_FALSE(contains(found, "gpu-lags-peers warning GPU0")) << joined(found);  // alone
  for (const auto& f : j.report["findings"]) {
    if (f["id"] != "clocks-degrade-over-time") continue;
    EXPECT_NE(f["evidence"].get<std::string>().find("sw_thermal_slowdown"), std::string::npos)
        << f["evidence"];
  }
  // The watch said the same at its end, and exits 1 for the warnings.
  EXPECT_NE(j.watch.out.find("clocks-degrade-over-time GPU0"), std::string::npos) << j.watch.out;
  EXPECT_EQ(j.watch.exit_code, 1) << j.watch.out << j.watch.err;
}

// Catches: gpu-lags-peers naming the peers too, or missing the one GPU that makes the others
// wait, through the real sampler and the recording.
TEST(WatchRulesCli, OneGpuOfEightLaggingNamesOnlyThatGpu) {
  Scratch dir;
  json s = read_scenario("8gpu-nvlink-h100.json");
  for (auto& gpu : s["gpus"]) make_busy(gpu);
  json& slow = s["gpus"][3];
  slow["clocks"]["sm"] = 1410;
  slow["clocks"]["graphics"] = 1410;
  slow["temperature"] = 84;
  slow["margin"] = 1;
  slow["power"]["draw_w"] = 480;
  slow["clock_event_reasons"] = json::array({"hw_slowdown", "hw_thermal_slowdown"});
  const Judged j = watch_and_judge(dir, s, 2);
  std::vector<std::string> lags;
  for (const auto& f : over_time(j.report))
    if (f.rfind("gpu-lags-peers", 0) == 0) lags.push_back(f);
  EXPECT_EQ(lags, std::vector<std::string>{"gpu-lags-peers warning GPU3"}) << joined(lags);
  EXPECT_NE(j.watch.out.find("gpu-lags-peers GPU3"), std::string::npos) << j.watch.out;
}

// Catches: any over-time rule firing on a healthy busy node whose readings wobble as real
// ones do, or on an idle node.
TEST(WatchRulesCli, HealthySteadyAndIdleNodesStayQuiet) {
  {
    Scratch dir;
    json s = read_scenario("8gpu-nvlink-h100.json");
    int g = 0;
    for (auto& gpu : s["gpus"]) {
      make_busy(gpu);
      json tl = json::array();
      for (int i = 0; i <= 6; ++i)
        tl.push_back({{"t_s", i * 0.5},
                      {"sm_mhz", 1980 - ((i + g) % 3) * 15},
                      {"temperature", 62 + (i + g) % 2},
                      {"power_w", 600 + ((i + g) % 3) * 10}});
      gpu["timeline"] = tl;
      ++g;
    }
    const Judged j = watch_and_judge(dir, s, 3);
    EXPECT_TRUE(over_time(j.report).empty()) << joined(over_time(j.report));
    EXPECT_NE(j.watch.out.find("no clock, thermal, power or counter change over time"),
              std::string::npos)
        << j.watch.out;
  }
  {
    Scratch dir;
    const Judged j = watch_and_judge(dir, read_scenario("h200-1gpu-idle.json"), 3);
    EXPECT_TRUE(over_time(j.report).empty()) << joined(over_time(j.report));
    EXPECT_EQ(j.watch.exit_code, 0) << j.watch.out << j.watch.err;
  }
}

}  // namespace
}  // namespace gpuvet
