// The HTML report: inputs recognised by content (and refused with a sentence), findings worst
// first, what an input says escaped everywhere, a node with no GPU, watch lines as series,
// bench heat maps against expectations, the atomic write.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpuvet/html_report.h"
#include "html/documents.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

json finding(const std::string& id, const std::string& severity, const std::string& subject) {
  return {{"id", id},
          {"severity", severity},
          {"title", id + " title"},
          {"subjects", {subject}},
          {"evidence", id + " evidence on " + subject},
          {"meaning", "meaning of " + id},
          {"decision", "decision of " + id},
          {"decision_note", nullptr},
          {"action", "watch"},
          {"gpus", json::array()},
          {"observed", {{"quantity", "sm_clock"}, {"value", 1200}, {"unit", "MHz"}}},
          {"expected",
           {{"quantity", "sm_clock"}, {"value", 1700}, {"unit", "MHz"}, {"bound", "at-least"}}}};
}

json diagnose_doc(const std::string& gpu_name, const std::string& host) {
  json gpu = {
      {"index", 0},
      {"uuid", "GPU-1"},
      {"name", gpu_name},
      {"pci_bus_id", "0000:18:00.0"},
      {"pcie", {{"gen_current", 4}, {"gen_max", 4}, {"width_current", 8}, {"width_max", 16}}},
      {"clocks", {{"sm_mhz", 1410}, {"sm_max_mhz", 1410}}},
      {"clock_events", {{"active", {"sw_power_cap"}}}}};
  json gpu1 = gpu;
  gpu1["index"] = 1;
  return {{"schema", "gpuvet.report/1"},
          {"tool", {{"name", "gpuvet"}, {"version", "0.1.0"}, {"command", "diagnose"}}},
          {"host", {{"hostname", host}, {"collected_unix", 1796417810}}},
          {"gpus", {gpu, gpu1}},
          {"pairs",
           {{{"a", 0},
             {"b", 1},
             {"subject", "GPU0-GPU1"},
             {"path", "SYS"},
             {"p2p", {{"read", "CNS"}}}}}},
          // Input order is not severity order: the page must sort.
          {"findings",
           {finding("gpu-idle-while-peer-busy", "info", "GPU1"),
            finding("pcie-link-degraded", "warning", "GPU0"),
            finding("ecc-errors", "critical", "GPU1")}},
          {"bottleneck", "hardware"},
          {"verdict", "critical"},
          {"exit_code", 2},
          {"coverage", {{{"check", "ecc"}, {"title", "ECC"}, {"status", "partial"}}}},
          {"notes", {"a note"}}};
}

Result<std::string> render(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<HtmlReportInput> in;
  for (const auto& [name, text] : files) in.push_back({name, text});
  return render_html_report(in);
}

TEST(HtmlReport, FindingsComeWorstFirstWithEvidenceMeaningAndDecision) {
  auto page = render({{"d.json", diagnose_doc("NVIDIA H100", "node7").dump()}});
  ASSERT_TRUE(page.is_ok()) << page.status().message();
  const std::string& p = page.value();
  const auto critical = p.find("data-finding=\"ecc-errors\"");
  const auto warning = p.find("data-finding=\"pcie-link-degraded\"");
  const auto info = p.find("data-finding=\"gpu-idle-while-peer-busy\"");
  ASSERT_NE(critical, std::string::npos);
  EXPECT_LT(critical, warning);
  EXPECT_LT(warning, info);
  EXPECT_NE(p.find("ecc-errors evidence on GPU1"), std::string::npos);
  EXPECT_NE(p.find("meaning of ecc-errors"), std::string::npos);
  EXPECT_NE(p.find("decision of ecc-errors"), std::string::npos);
  EXPECT_NE(p.find("sm_clock: 1200 MHz (expected at least 1700 MHz)"), std::string::npos);
  EXPECT_NE(p.find("<span class=\"subject\">GPU1</span>"), std::string::npos);
  // The GPU table, the narrowed link marked, and both pair grids.
  EXPECT_EQ(count(p, "<tr data-gpu="), 2u);
  EXPECT_NE(p.find("<td class=\"bad\">Gen4/4 x8/16</td>"), std::string::npos);
  EXPECT_NE(p.find("<figure class=\"topology\">"), std::string::npos);
  EXPECT_NE(p.find("GPU0-GPU1: P2P read CNS"), std::string::npos);
  EXPECT_NE(p.find("2026-12-04"), std::string::npos);  // collected_unix, as UTC
  // Self-contained: no script, nothing fetched.
  EXPECT_EQ(p.find("<script"), std::string::npos);
  EXPECT_EQ(p.find("src="), std::string::npos);
  EXPECT_EQ(p.find("<link"), std::string::npos);
}

TEST(HtmlReport, MarkupInAGpuOrHostNameIsText) {
  const std::string evil = "<script>alert(1)</script>";
  json doc = diagnose_doc(evil, "<img src=x onerror=alert(2)>");
  doc["findings"][0]["evidence"] = "\"><svg onload=alert(3)>";
  doc["notes"] = {"</details><script>alert(4)</script>"};
  auto page = render({{"<b>file</b>.json", doc.dump()}});
  ASSERT_TRUE(page.is_ok()) << page.status().message();
  const std::string& p = page.value();
  EXPECT_EQ(p.find("<script"), std::string::npos);
  EXPECT_EQ(p.find("<img"), std::string::npos);
  EXPECT_EQ(p.find("<svg onload"), std::string::npos);
  EXPECT_EQ(p.find("<b>file"), std::string::npos);
  EXPECT_NE(p.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(p.find("<title>gpuvet report — &lt;img src=x onerror=alert(2)&gt;</title>"),
            std::string::npos);
}

TEST(HtmlReport, ANodeWithoutGpusStillRenders) {
  json doc = diagnose_doc("x", "empty-node");
  doc["gpus"] = json::array();
  doc["pairs"] = json::array();
  doc["findings"] = {finding("gpu-missing", "critical", "host")};
  doc["samples"] = json::array();
  auto page = render({{"d.json", doc.dump()}});
  ASSERT_TRUE(page.is_ok());
  EXPECT_EQ(page.value().find("<table class=\"gpus\">"), std::string::npos);
  EXPECT_NE(page.value().find("data-finding=\"gpu-missing\""), std::string::npos);
  // A recording with no GPU sample says so instead of drawing empty axes.
  json rec = doc;
  rec["tool"]["command"] = "watch";
  auto watched = render({{"rec.json", rec.dump()}});
  ASSERT_TRUE(watched.is_ok());
  EXPECT_NE(watched.value().find("No GPU samples in rec.json"), std::string::npos);
}

std::string watch_lines() {
  std::string out;
  for (int i = 0; i < 4; ++i) {
    json line = {{"schema", "gpuvet.watch/1"}, {"type", "interval"}, {"t_s", i * 1.0}};
    for (int g = 0; g < 2; ++g)
      line["gpus"].push_back({{"gpu", g},
                              {"t_s", i * 1.0},
                              {"sm_mhz", 1980 - (g == 1 ? 100 * i : 0)},
                              {"gpu_c", 50 + i},
                              {"power_w", 600.0},
                              // GPU1 at the power cap from the third interval on.
                              {"clock_event_mask", g == 1 && i >= 2 ? 4 : 0}});
    line["host"] = {{"t_s", i * 1.0}, {"psi_cpu_some_pct", 1.0}};
    out += line.dump() + "\n";
  }
  json verdict = {{"schema", "gpuvet.watch/1"},
                  {"type", "verdict"},
                  {"watched_s", 4.0},
                  {"findings", {finding("clocks-degrade-over-time", "warning", "GPU1")}},
                  {"notes", json::array()}};
  return out + verdict.dump() + "\n";
}

TEST(HtmlReport, WatchLinesBecomeOneLinePerGpuAndMetricWithReasonsShaded) {
  auto page = render({{"watch.jsonl", watch_lines()}});
  ASSERT_TRUE(page.is_ok()) << page.status().message();
  const std::string& p = page.value();
  for (const char* metric : {"sm_mhz", "gpu_c", "power_w"})
    for (const char* gpu : {"0", "1"})
      EXPECT_EQ(count(p, std::string("data-gpu=\"") + gpu + "\" data-metric=\"" + metric + "\""),
                1u)
          << metric << " GPU" << gpu;
  EXPECT_NE(p.find("data-finding=\"clocks-degrade-over-time\""), std::string::npos);
  // sw_power_cap (bit 2) shaded: in the three charts and in GPU1's lane only.
  EXPECT_EQ(count(p, "class=\"band\" data-reason=\"power cap\""), 3u);
  EXPECT_EQ(count(p, "class=\"lane-band\" data-gpu=\"GPU1\" data-reason=\"power cap\""), 1u);
  EXPECT_EQ(count(p, "data-gpu=\"GPU0\" data-reason"), 0u);
  EXPECT_NE(p.find("data-metric=\"psi_cpu_some_pct\""), std::string::npos);
}

TEST(HtmlReport, BenchCellsAreColouredByTheirShareOfTheExpectation) {
  json cell_ok = {{"value", 370.0}, {"expected", 400.0}, {"verified", true}};
  json cell_low = {{"value", 40.0}, {"expected", 400.0}};
  json na = {{"value", nullptr}, {"error", nullptr}};
  json bench = {{"schema", "gpuvet.bench/1"},
                {"cuda_available", true},
                {"results",
                 {{{"key", "p2p_read_ce"},
                   {"title", "P2P read"},
                   {"unit", "GB/s"},
                   {"rows", {"GPU0", "GPU1"}},
                   {"cols", {"GPU0", "GPU1"}},
                   {"cells", {{na, cell_ok}, {cell_low, na}}}}}}};
  auto page = render({{"bench.json", bench.dump()}});
  ASSERT_TRUE(page.is_ok()) << page.status().message();
  const std::string& p = page.value();
  EXPECT_NE(p.find("GPU0 → GPU1: 370 GB/s of 400 expected (92 %)"), std::string::npos);
  EXPECT_NE(p.find("GPU1 → GPU0: 40 GB/s of 400 expected (10 %)"), std::string::npos);
  EXPECT_NE(p.find("fill=\"#d73027\""), std::string::npos);  // the slow cell is red
  EXPECT_NE(p.find("fill=\"#66bd63\""), std::string::npos);  // the fast one green

  // Beside a diagnosis whose coverage says "measurements: not checked", the page that holds the
  // bench results does not repeat that gap; without them it does.
  json diag = diagnose_doc("NVIDIA H100", "node1");
  diag["coverage"].push_back({{"check", "measurements"},
                              {"title", "measurements"},
                              {"status", "not-checked"},
                              {"missing", "no bandwidth or scaling measurement"},
                              {"how_to_get", "run `gpuvet bench`"}});
  auto both = render({{"diag.json", diag.dump()}, {"bench.json", bench.dump()}});
  ASSERT_TRUE(both.is_ok()) << both.status().message();
  EXPECT_EQ(both.value().find("run `gpuvet bench`"), std::string::npos);
  EXPECT_NE(both.value().find("the bench / scale results on this page"), std::string::npos);
  auto alone = render({{"diag.json", diag.dump()}});
  ASSERT_TRUE(alone.is_ok());
  EXPECT_NE(alone.value().find("run `gpuvet bench`"), std::string::npos);
}

TEST(HtmlReport, ScaleResultsAreOneAgainstNBars) {
  json scale = {{"schema", "gpuvet.scale/1"},
                {"results",
                 {{{"workload", "train"},
                   {"preset", "p"},
                   {"gpus", 2},
                   {"throughput", 180.0},
                   {"p50_ms", 11.0},
                   {"p99_ms", 14.0},
                   {"efficiency", 0.9}},
                  {{"workload", "train"},
                   {"preset", "p"},
                   {"gpus", 1},
                   {"throughput", 100.0},
                   {"p50_ms", 10.0},
                   {"p99_ms", 10.5}}}},
                {"sustained", nullptr}};
  auto page = render({{"scale.json", scale.dump()}});
  ASSERT_TRUE(page.is_ok()) << page.status().message();
  const std::string& p = page.value();
  EXPECT_LT(p.find("<title>1 GPU: 100"), p.find("<title>2 GPUs: 180 · efficiency 90 %"));
  EXPECT_NE(p.find("p50 11 · p99 14 ms"), std::string::npos);
  EXPECT_EQ(count(p, "stroke-dasharray=\"4 3\""), 2u);  // the ideal outline and its legend
}

TEST(HtmlReport, UnknownOrBrokenInputsAreRefusedWithTheirName) {
  auto expect_refused = [](const std::string& text, const std::string& words) {
    auto page = render({{"ok.json", diagnose_doc("g", "h").dump()}, {"bad.json", text}});
    ASSERT_FALSE(page.is_ok());
    EXPECT_EQ(page.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(page.status().message().find("bad.json"), std::string::npos)
        << page.status().message();
    EXPECT_NE(page.status().message().find(words), std::string::npos) << page.status().message();
  };
  expect_refused("", "empty");
  expect_refused("nvidia-smi output\n", "not JSON");
  expect_refused("{\"schema\": \"other/2\"}", "schema \"other/2\"");
  expect_refused("{\"schema\": \"gpuvet.fleet/1\"}", "fleet");
  expect_refused("[1, 2]", "not a gpuvet document");
  expect_refused("{\"gpus\": []}", "not a gpuvet document");
  expect_refused("{\"schema\":\"gpuvet.watch/1\",\"type\":\"interval\"}\nnot json\n", "line 2");
  // Deep nesting is an error, not a crash.
  expect_refused(std::string(100000, '[') + std::string(100000, ']'), "not a gpuvet document");
  EXPECT_FALSE(render_html_report({}).is_ok());
}

TEST(HtmlReport, WrongTypesInsideAKnownDocumentDrawWhatTheyCan) {
  json doc = diagnose_doc("g", "h");
  doc["gpus"][0]["pcie"] = "x16";
  doc["gpus"][1] = 7;
  doc["findings"][0]["subjects"] = "GPU1";
  doc["pairs"] = {{{"a", "zero"}}};
  doc["coverage"] = {1, 2};
  auto page = render({{"d.json", doc.dump()}});
  ASSERT_TRUE(page.is_ok()) << page.status().message();
  EXPECT_EQ(count(page.value(), "<tr data-gpu="), 1u);
}

// A finding's card shows its severity's colour: the .sev-* border colours must come after the
// .finding and .card rules, whose border-left shorthand would otherwise reset them to grey.
// And "Over time" explains the findings: it comes right after them, before the GPU tables.
TEST(HtmlReport, SeverityColoursWinAndOverTimeFollowsTheFindings) {
  auto page = render({{"d.json", diagnose_doc("g", "h").dump()}, {"w", watch_lines()}});
  ASSERT_TRUE(page.is_ok()) << page.status().message();
  const std::string& p = page.value();
  const auto style_end = p.find("</style>");
  ASSERT_NE(style_end, std::string::npos);
  for (const char* base : {".finding{", ".card{"})
    for (const char* sev : {".sev-critical{", ".sev-warning{", ".sev-info{", ".sev-fail{"}) {
      const auto b = p.find(base), s = p.find(sev);
      ASSERT_LT(b, style_end) << base;
      ASSERT_LT(s, style_end) << sev;
      EXPECT_LT(b, s) << sev << " comes before " << base << " and loses to its border shorthand";
    }
  EXPECT_NE(p.find("class=\"finding sev-critical\""), std::string::npos);
  const auto findings = p.find("<section id=\"findings\">");
  const auto watch = p.find("<section id=\"watch\">");
  const auto gpus = p.find("<section id=\"gpus\">");
  ASSERT_NE(findings, std::string::npos);
  ASSERT_NE(watch, std::string::npos);
  ASSERT_NE(gpus, std::string::npos);
  EXPECT_LT(findings, watch);
  EXPECT_LT(watch, gpus);
  EXPECT_LT(p.find("href=\"#watch\""), p.find("href=\"#gpus\""));
}

TEST(HtmlReport, TheSameInputsGiveTheSameBytes) {
  const auto a = render({{"d.json", diagnose_doc("g", "h").dump()}, {"w", watch_lines()}});
  const auto b = render({{"d.json", diagnose_doc("g", "h").dump()}, {"w", watch_lines()}});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a.value(), b.value());
}

TEST(HtmlReport, DuplicateFindingsFromTwoInputsAreShownOnceWithBothSources) {
  const std::string d = diagnose_doc("g", "h").dump();
  auto page = render({{"first.json", d}, {"second.json", d}});
  ASSERT_TRUE(page.is_ok());
  EXPECT_EQ(count(page.value(), "data-finding=\"ecc-errors\""), 1u);
  EXPECT_NE(page.value().find("first.json, second.json"), std::string::npos);
}

TEST(HtmlReportFile, WrittenAtomicallyOrNotAtAll) {
  const fs::path dir = fs::temp_directory_path() / ("gpuvet-html-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "r.html").string();
  ASSERT_TRUE(write_file_atomically(out, "<p>one</p>").is_ok());
  ASSERT_TRUE(write_file_atomically(out, "<p>two</p>").is_ok());
  std::ifstream in(out);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "<p>two</p>");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  const Status missing = write_file_atomically((dir / "no" / "r.html").string(), "x");
  EXPECT_FALSE(missing.is_ok());
  EXPECT_NE(missing.message().find("does not exist"), std::string::npos);
  EXPECT_FALSE(write_file_atomically(dir.string(), "x").is_ok());
  // An unreadable input: the file functions say which.
  auto page = html_report_from_files({(dir / "absent.json").string()});
  ASSERT_FALSE(page.is_ok());
  EXPECT_NE(page.status().message().find("absent.json"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuvet

namespace gpuvet {
namespace {

// A big node's facts hold their pairs as a matrix: counted from its cells, not as none.
TEST(HtmlReport, PairsOfABigNodeAreCountedFromTheirMatrix) {
  auto doc = html::json::parse(R"J({"pairs": [], "pair_matrix": {"gpus": [0, 1, 2],
      "path": ["X NV18 SYS", "NV18 X -", "SYS - X"], "p2p": {}}})J");
  EXPECT_EQ(html::pair_count(doc), 2u);
  doc = html::json::parse(R"J({"pairs": [{"a": 0, "b": 1}]})J");
  EXPECT_EQ(html::pair_count(doc), 1u);
  EXPECT_EQ(html::pair_count(html::json::parse("{}")), 0u);
}

}  // namespace
}  // namespace gpuvet
