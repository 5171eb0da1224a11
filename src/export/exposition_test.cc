// Tests of the Prometheus metrics (export/): the exposition format (escaping, one HELP/TYPE
// per family, no timestamps), base units, no sample for an unknown reading, dcgm-exporter's
// label set on per-GPU series, findings and verdict, the textfile writer, --listen parsing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <cctype>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/util.h"
#include "gpuvet/prometheus.h"

namespace gpuvet {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A sample line split: name, labels in order, value.
struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string value;
  std::string label(const std::string& key) const {
    for (const auto& [k, v] : labels)
      if (k == key) return v;
    return "<absent>";
  }
};

// A strict reader of the subset of the format the renderer writes: it fails the test on any
// line that is not a HELP, a TYPE or `name{k="v",…} value` with no timestamp.
std::vector<Sample> parse_samples(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  // Prometheus' grammar: [a-zA-Z_:][a-zA-Z0-9_:]* for names, no ':' in label names.
  auto name_ok = [](const std::string& n, bool colon) {
    if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
    for (char c : n)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && !(colon && c == ':'))
        return false;
    return true;
  };
  while (std::getline(in, line)) {
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) continue;
    EXPECT_FALSE(line.empty() || line[0] == '#') << "unexpected line: " << line;
    Sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    EXPECT_TRUE(name_ok(s.name, true)) << line;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const auto eq = line.find('=', i);
        const std::string key = line.substr(i, eq - i);
        EXPECT_TRUE(name_ok(key, false)) << line;
        EXPECT_EQ(line[eq + 1], '"') << line;
        std::string value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        s.labels.emplace_back(key, value);
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    EXPECT_EQ(line[i], ' ') << line;
    s.value = line.substr(i + 1);
    EXPECT_EQ(s.value.find(' '), std::string::npos)
        << "a timestamp or junk after the value: " << line;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Sample> named(const std::vector<Sample>& all, const std::string& name) {
  std::vector<Sample> out;
  for (const auto& s : all)
    if (s.name == name) out.push_back(s);
  return out;
}

GpuFacts h200(int index) {
  GpuFacts g;
  g.index = index;
  g.uuid = "GPU-2f4e0c1a-0000-4000-8000-00000000000" + std::to_string(index);
  g.name = "NVIDIA H200";
  g.pci_bus_id = index == 0 ? "0000:18:00.0" : "0000:2a:00.0";
  g.clocks.sm_mhz = 1980;
  g.clocks.sm_max_mhz = 1980;
  g.clocks.mem_mhz = 3201;
  g.thermal.gpu_c = 41;
  g.thermal.margin_c = 46;
  g.power.draw_w = 118.5;
  g.power.limit_w = 700;
  g.utilization.gpu_pct = 87;
  g.memory.total_bytes = 150754820096ULL;
  g.memory.used_bytes = 0;
  g.clock_events.active_mask = 0x4;  // sw_power_cap
  g.clock_events.accumulated_ns["power"] = 2500000000ULL;
  g.pcie.gen_current = 5;
  g.pcie.gen_max = 5;
  g.pcie.width_current = 16;
  g.pcie.width_max = 16;
  g.pcie.replay_counter = 3;
  g.ecc.volatile_counts.corrected = 0;
  g.ecc.volatile_counts.uncorrected = 0;
  for (int l = 0; l < 18; ++l) {
    NvLink link;
    link.link = l;
    link.active = l != 7;
    g.nvlinks.push_back(link);
  }
  return g;
}

Facts two_gpus() {
  Facts f;
  f.host.hostname = "gpu-node-07";
  f.host.driver_version = "580.159.04";
  f.host.collected_unix = 1764669600;
  f.gpus = {h200(0), h200(1)};
  return f;
}

TEST(PromExposition, PerGpuSeriesCarryDcgmExportersLabelsInItsOrder) {
  const auto samples = parse_samples(render_prometheus(snapshot_from_facts(two_gpus(), nullptr)));
  const auto temp = named(samples, "gpuvet_gpu_temperature_celsius");
  ASSERT_EQ(temp.size(), 2u);
  std::vector<std::string> keys;
  for (const auto& [k, v] : temp[0].labels) keys.push_back(k);
  EXPECT_THAT(keys, ElementsAre("gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname",
                                "DCGM_FI_DRIVER_VERSION"));
  EXPECT_EQ(temp[0].label("gpu"), "0");
  EXPECT_EQ(temp[0].label("UUID"), "GPU-2f4e0c1a-0000-4000-8000-000000000000");
  EXPECT_EQ(temp[0].label("pci_bus_id"), "00000000:18:00.0");  // as NVML and DCGM write it
  EXPECT_EQ(temp[1].label("pci_bus_id"), "00000000:2A:00.0");
  EXPECT_EQ(temp[1].label("device"), "nvidia1");
  EXPECT_EQ(temp[0].label("modelName"), "NVIDIA H200");
  EXPECT_EQ(temp[0].label("hostname"), "gpu-node-07");
  EXPECT_EQ(temp[0].label("DCGM_FI_DRIVER_VERSION"), "580.159.04");
  EXPECT_EQ(temp[0].value, "41");
  // Every per-GPU family has the same identity labels, so one on(UUID) works for all.
  for (const auto& s : samples) {
    if (!s.name.starts_with("gpuvet_gpu_")) continue;
    EXPECT_NE(s.label("UUID"), "<absent>") << s.name;
    EXPECT_NE(s.label("pci_bus_id"), "<absent>") << s.name;
  }
}

TEST(PromExposition, UnitsAreBaseUnits) {
  const auto samples = parse_samples(render_prometheus(snapshot_from_facts(two_gpus(), nullptr)));
  auto value = [&](const std::string& name) {
    const auto v = named(samples, name);
    return v.empty() ? std::string("<none>") : v[0].value;
  };
  EXPECT_EQ(std::stod(value("gpuvet_gpu_sm_clock_hertz")), 1980e6);  // MHz × 1e6
  EXPECT_EQ(std::stod(value("gpuvet_gpu_sm_clock_max_hertz")), 1980e6);
  EXPECT_EQ(std::stod(value("gpuvet_gpu_memory_clock_hertz")), 3201e6);
  EXPECT_EQ(std::stod(value("gpuvet_gpu_utilization_ratio")), 0.87);  // percent / 100
  EXPECT_EQ(value("gpuvet_gpu_power_watts"), "118.5");
  EXPECT_EQ(value("gpuvet_gpu_power_limit_watts"), "700");
  EXPECT_EQ(value("gpuvet_gpu_thermal_margin_celsius"), "46");
  EXPECT_EQ(value("gpuvet_gpu_memory_total_bytes"), "150754820096");  // exact, not 1.5e+11
  EXPECT_EQ(value("gpuvet_gpu_memory_used_bytes"), "0");              // a real zero stays
  EXPECT_EQ(value("gpuvet_gpu_pcie_link_generation"), "5");
  EXPECT_EQ(value("gpuvet_gpu_pcie_link_width_max"), "16");
  EXPECT_EQ(value("gpuvet_gpu_pcie_replays_total"), "3");
  EXPECT_EQ(value("gpuvet_gpu_nvlink_links"), "18");
  EXPECT_EQ(value("gpuvet_gpu_nvlink_links_up"), "17");
  EXPECT_EQ(value("gpuvet_last_collect_timestamp_seconds"), "1764669600");
  const auto power = named(samples, "gpuvet_gpu_clock_event_seconds_total");
  ASSERT_EQ(power.size(), 2u);
  EXPECT_EQ(power[0].label("reason"), "power");
  EXPECT_EQ(std::stod(power[0].value), 2.5);  // ns → s
}

TEST(PromExposition, UnknownReadingHasNoSampleNeverZero) {
  Facts f = two_gpus();
  f.gpus[1].thermal.gpu_c.reset();
  f.gpus[1].power.draw_w.reset();
  f.gpus[1].clock_events.active_mask.reset();
  f.gpus[1].pcie.replay_counter.reset();
  f.gpus[1].nvlinks.clear();  // not read: no "0 of 0 links"
  for (auto& g : f.gpus) g.thermal.memory_c.reset();
  const std::string text = render_prometheus(snapshot_from_facts(f, nullptr));
  const auto samples = parse_samples(text);
  for (const char* name :
       {"gpuvet_gpu_temperature_celsius", "gpuvet_gpu_power_watts", "gpuvet_gpu_pcie_replays_total",
        "gpuvet_gpu_nvlink_links", "gpuvet_gpu_nvlink_links_up"}) {
    const auto v = named(samples, name);
    ASSERT_EQ(v.size(), 1u) << name;
    EXPECT_EQ(v[0].label("gpu"), "0") << name;
  }
  for (const auto& s : named(samples, "gpuvet_gpu_clock_event_active"))
    EXPECT_EQ(s.label("gpu"), "0") << "GPU1's mask is unknown: no reason series at all";
  // A family no GPU knows is left out whole, HELP and TYPE included.
  EXPECT_THAT(text, Not(HasSubstr("gpuvet_gpu_memory_temperature_celsius")));
  // No GPU facts at all (driver not loaded): no GPU count either, rather than "0 GPUs".
  Facts none;
  none.gpu_facts_unavailable = true;
  EXPECT_THAT(render_prometheus(snapshot_from_facts(none, nullptr)),
              Not(HasSubstr("gpuvet_gpus_visible")));
  // Saved outputs without any GPU (a dmesg alone) say nothing about the count either.
  Facts dmesg_only;
  dmesg_only.imported.push_back({"dmesg.txt", "dmesg", {}});
  EXPECT_THAT(render_prometheus(snapshot_from_facts(dmesg_only, nullptr)),
              Not(HasSubstr("gpuvet_gpus_visible")));
  // A live node with the driver and no GPU has a count, and it is 0.
  Facts empty_live;
  EXPECT_THAT(render_prometheus(snapshot_from_facts(empty_live, nullptr)),
              HasSubstr("gpuvet_gpus_visible 0\n"));
}

TEST(PromExposition, HelpAndTypeOncePerFamilyBeforeItsSamples) {
  Facts f = two_gpus();
  Diagnosis d;
  d.worst = Severity::kWarning;
  d.findings.push_back({"pcie-link-degraded", Severity::kWarning, {"GPU1"}, "x8 of x16", {}, {}});
  const std::string text = render_prometheus(snapshot_from_facts(f, &d));
  std::istringstream in(text);
  std::string line;
  std::map<std::string, int> help, type;
  std::set<std::string> closed;  // families whose samples have ended
  std::string current;
  while (std::getline(in, line)) {
    if (line.starts_with("# HELP ")) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      ++help[name];
      if (!current.empty()) closed.insert(current);
      current = name;
      EXPECT_EQ(type.count(name), 0u) << "HELP after TYPE for " << name;
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      std::istringstream words(line.substr(7));
      std::string name, kind;
      words >> name >> kind;
      ++type[name];
      EXPECT_EQ(name, current) << "TYPE without its HELP just before";
      EXPECT_THAT((std::vector<std::string>{"gauge", "counter"}), testing::Contains(kind));
      if (kind == "counter") {
        EXPECT_TRUE(name.ends_with("_total")) << name;
      }
      continue;
    }
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name, current) << "sample outside its family block: " << line;
    EXPECT_EQ(closed.count(name), 0u) << "family written twice: " << name;
  }
  EXPECT_GT(help.size(), 20u);
  for (const auto& [name, n] : help) {
    EXPECT_EQ(n, 1) << name;
    EXPECT_EQ(type[name], 1) << name;
  }
}

// E7: a label value that is not UTF-8 (a GPU name from a broken VBIOS) leaves the exposition
// valid UTF-8: promtool and Prometheus refuse the whole scrape otherwise.
TEST(PromExposition, LabelValuesThatAreNotUtf8AreReplaced) {
  EXPECT_EQ(escape_label_value("L40S\xFF\xFE"), "L40S\xEF\xBF\xBD\xEF\xBF\xBD");
  Facts f = two_gpus();
  f.gpus[0].name = "NVIDIA \xC3(bad";
  const std::string text = render_prometheus(snapshot_from_facts(f, nullptr));
  EXPECT_EQ(valid_utf8(text), text);
  EXPECT_THAT(text, HasSubstr("modelName=\"NVIDIA \xEF\xBF\xBD(bad\""));
}

TEST(PromExposition, LabelValuesAndHelpAreEscaped) {
  EXPECT_EQ(escape_label_value(R"(a\b"c)"
                               "\nd"),
            R"(a\\b\"c\nd)");
  Facts f = two_gpus();
  f.gpus[0].name = "Weird \"GPU\"\\\nname";
  f.host.hostname = "host\"1";
  const std::string text = render_prometheus(snapshot_from_facts(f, nullptr));
  EXPECT_THAT(text, HasSubstr(R"(modelName="Weird \"GPU\"\\\nname")"));
  EXPECT_THAT(text, HasSubstr(R"(hostname="host\"1")"));
  // One line per sample still: the newline did not break the line.
  const auto temp = named(parse_samples(text), "gpuvet_gpu_temperature_celsius");
  ASSERT_EQ(temp.size(), 2u);
  EXPECT_EQ(temp[0].label("modelName"), "Weird \"GPU\"\\\nname");
}

TEST(PromExposition, ClockEventReasonsOneSeriesPerReason) {
  Facts f = two_gpus();
  f.gpus[1].clock_events.active_mask = 0x1 | 0x40;  // idle + hw_thermal_slowdown
  const auto samples = parse_samples(render_prometheus(snapshot_from_facts(f, nullptr)));
  std::map<std::string, std::string> gpu0, gpu1;
  for (const auto& s : named(samples, "gpuvet_gpu_clock_event_active"))
    (s.label("gpu") == "0" ? gpu0 : gpu1)[s.label("reason")] = s.value;
  EXPECT_EQ(gpu0.size(), 9u);
  EXPECT_EQ(gpu0["sw_power_cap"], "1");
  EXPECT_EQ(gpu0["idle"], "0");
  EXPECT_EQ(gpu0["hw_slowdown"], "0");
  EXPECT_EQ(gpu1["sw_power_cap"], "0");
  EXPECT_EQ(gpu1["idle"], "1");
  EXPECT_EQ(gpu1["hw_thermal_slowdown"], "1");
  EXPECT_EQ(gpu1["sw_thermal_slowdown"], "0");
  // An import that names the active reasons without NVML's mask.
  Facts named_only = two_gpus();
  named_only.gpus[0].clock_events.active_mask.reset();
  named_only.gpus[0].clock_events.active = {"hw_slowdown"};
  for (const auto& s :
       named(parse_samples(render_prometheus(snapshot_from_facts(named_only, nullptr))),
             "gpuvet_gpu_clock_event_active"))
    if (s.label("gpu") == "0") {
      EXPECT_EQ(s.value, s.label("reason") == "hw_slowdown" ? "1" : "0");
    }
}

TEST(PromExposition, FindingsVerdictAndExitCode) {
  Facts f = two_gpus();
  Diagnosis d;
  d.worst = Severity::kCritical;
  d.findings.push_back({"gpu-missing", Severity::kCritical, {}, "7 of 8", {}, {}});
  d.findings.push_back({"pcie-link-degraded", Severity::kWarning, {"GPU1"}, "x8", {}, {}});
  // The same id about the same subject twice is one series (a duplicate fails the scrape).
  d.findings.push_back({"pcie-link-degraded", Severity::kWarning, {"GPU1"}, "gen4", {}, {}});
  d.findings.push_back({"p2p-disabled", Severity::kWarning, {"GPU0-GPU1"}, "", {}, {}});
  const auto samples = parse_samples(render_prometheus(snapshot_from_facts(f, &d)));
  const auto findings = named(samples, "gpuvet_finding");
  ASSERT_EQ(findings.size(), 3u);
  EXPECT_EQ(findings[0].label("id"), "gpu-missing");
  EXPECT_EQ(findings[0].label("severity"), "critical");
  EXPECT_EQ(findings[0].label("subject"), "");
  EXPECT_EQ(findings[0].label("UUID"), "<absent>");
  EXPECT_EQ(findings[1].label("subject"), "GPU1");
  EXPECT_EQ(findings[1].label("category"), "pcie");
  EXPECT_EQ(findings[1].label("UUID"), "GPU-2f4e0c1a-0000-4000-8000-000000000001");
  EXPECT_EQ(findings[2].label("UUID"), "<absent>");  // a pair is no single GPU
  for (const auto& s : findings) EXPECT_EQ(s.value, "1");
  std::map<std::string, std::string> verdict;
  for (const auto& s : named(samples, "gpuvet_verdict")) verdict[s.label("verdict")] = s.value;
  EXPECT_EQ(verdict, (std::map<std::string, std::string>{
                         {"ok", "0"}, {"info", "0"}, {"warning", "0"}, {"critical", "1"}}));
  const auto code = named(samples, "gpuvet_diagnose_exit_code");
  ASSERT_EQ(code.size(), 1u);
  EXPECT_EQ(code[0].value, "2");
  // Facts alone: no verdict, no findings family.
  const std::string facts_only = render_prometheus(snapshot_from_facts(f, nullptr));
  EXPECT_THAT(facts_only, Not(HasSubstr("gpuvet_verdict")));
  EXPECT_THAT(facts_only, HasSubstr("gpuvet_build_info{version=\"" GPUVET_VERSION "\"} 1\n"));
}

TEST(PromExposition, DcgmBusIdForm) {
  EXPECT_EQ(dcgm_pci_bus_id("0000:18:00.0"), "00000000:18:00.0");
  EXPECT_EQ(dcgm_pci_bus_id("0000:bd:00.0"), "00000000:BD:00.0");
  EXPECT_EQ(dcgm_pci_bus_id("00000000:BD:00.0"), "00000000:BD:00.0");
}

TEST(PromTextfile, WritesAtomicallyAndReplaces) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuvet-prom-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "gpuvet.prom").string();
  ASSERT_TRUE(write_textfile(path, "a 1\n").is_ok());
  ASSERT_TRUE(write_textfile(path, "b 2\n").is_ok());
  std::ifstream in(path);
  std::string body((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(body, "b 2\n");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "gpuvet.prom") << "temporary file left behind";
  }
  EXPECT_EQ(files, 1);
  const Status missing = write_textfile((dir / "nope" / "gpuvet.prom").string(), "x 1\n");
  EXPECT_FALSE(missing.is_ok());
  EXPECT_THAT(missing.message(), HasSubstr("does not exist"));
  EXPECT_FALSE(write_textfile(dir.string() + "/", "x 1\n").is_ok());
  if (::geteuid() != 0) {  // root writes anywhere
    std::filesystem::permissions(
        dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    const Status denied = write_textfile(path, "c 3\n");
    EXPECT_FALSE(denied.is_ok());
    EXPECT_THAT(denied.message(), HasSubstr("cannot write in directory"));
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  }
  std::filesystem::remove_all(dir);
}

TEST(PromListen, ParsesAndKnowsLoopback) {
  auto a = parse_listen_address("127.0.0.1:9401");
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a.value().host, "127.0.0.1");
  EXPECT_EQ(a.value().port, 9401);
  EXPECT_TRUE(a.value().loopback);
  auto v6 = parse_listen_address("[::1]:0");
  ASSERT_TRUE(v6.is_ok());
  EXPECT_EQ(v6.value().host, "::1");
  EXPECT_TRUE(v6.value().loopback);
  EXPECT_TRUE(parse_listen_address("localhost:9401").value().loopback);
  auto any = parse_listen_address(":9401");
  ASSERT_TRUE(any.is_ok());
  EXPECT_EQ(any.value().host, "0.0.0.0");
  EXPECT_FALSE(any.value().loopback);
  EXPECT_FALSE(parse_listen_address("0.0.0.0:9401").value().loopback);
  EXPECT_FALSE(parse_listen_address("10.1.2.3:9401").value().loopback);
  EXPECT_FALSE(parse_listen_address("127.evil.example:9401").value().loopback);
  EXPECT_FALSE(parse_listen_address("[::]:9401").value().loopback);
  for (const char* bad : {"9401", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:-1",
                          "::1:9401", "[::1]9401", "127.0.0.1:94x1"})
    EXPECT_FALSE(parse_listen_address(bad).is_ok()) << bad;
}

}  // namespace
}  // namespace gpuvet
