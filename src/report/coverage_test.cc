// The coverage part of the report: the line under the verdict never claims an all-clear for
// checks that did not run, the Coverage section names each gap's command, the JSON array.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
#include "gpuvet/report.h"
#include "report/coverage.h"

namespace gpuvet {
namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The text with its word wrap undone: a newline and the indent after it become one space.
std::string unwrapped(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' && i + 1 < s.size() && s[i + 1] == ' ') {
      while (i + 1 < s.size() && s[i + 1] == ' ') ++i;
      out += ' ';
      continue;
    }
    out += s[i];
  }
  return out;
}

CoverageItem cov(const char* check, const char* title, CoverageStatus s, const char* how = "",
                 bool optional = false) {
  CoverageItem c;
  c.check = check;
  c.title = title;
  c.status = s;
  c.evidence = "topo-m";
  if (s != CoverageStatus::kChecked) c.missing = "something unknown";
  c.how_to_get = how;
  c.optional = optional;
  return c;
}

constexpr auto kOk = CoverageStatus::kChecked;
constexpr auto kPart = CoverageStatus::kPartial;
constexpr auto kNot = CoverageStatus::kNotChecked;
constexpr auto kNa = CoverageStatus::kNotApplicable;

Diagnosis with(std::vector<CoverageItem> items) {
  Diagnosis d;
  d.coverage = std::move(items);
  d.worst = Severity::kOk;
  d.bottleneck = Bottleneck::kNone;
  d.bottleneck_reason = "no warning or critical finding";
  return d;
}

Diagnosis some_unchecked() {
  return with({cov("topology", "topology", kOk), cov("p2p", "P2P", kOk),
               cov("clocks-throttle", "clocks", kPart, "paste `nvidia-smi -q -d CLOCK`"),
               cov("ecc", "ECC", kNot, "paste `nvidia-smi -q -d ECC`"),
               cov("xid", "Xid", kNot, "paste `sudo dmesg -T`"),
               cov("host-cpu", "host CPU", kNot, "paste `mpstat -P ALL 1 5`"),
               cov("host-io", "host I/O", kNot, "paste `iostat -x 1 5`"),
               cov("host-network", "host network", kNot, "paste `sar -n DEV 1 5`"),
               cov("measurements", "measurements", kNot, "run `gpuvet bench`", true)});
}

TEST(CoverageText, HeadlineListsWhatWasAndWasNotChecked) {
  const Diagnosis d = some_unchecked();
  EXPECT_FALSE(report::coverage_complete(d));
  EXPECT_EQ(report::coverage_headline(d),
            "OK for what was checked (topology, P2P; partly: clocks); not checked: ECC, Xid, host "
            "— see Coverage");
}

TEST(CoverageText, HostChecksAreNamedOneByOneWhenTheyDiffer) {
  Diagnosis d = some_unchecked();
  d.coverage[5].status = kOk;  // host CPU from mpstat
  const std::string h = report::coverage_headline(d);
  EXPECT_TRUE(has(h, "(topology, P2P, host CPU; partly: clocks)")) << h;
  EXPECT_TRUE(has(h, "not checked: ECC, Xid, host I/O, host network")) << h;
}

TEST(CoverageText, WithAFindingTheHeadlineDoesNotSayOk) {
  Diagnosis d = some_unchecked();
  d.worst = Severity::kWarning;
  const std::string h = report::coverage_headline(d);
  EXPECT_EQ(h.rfind("Checked: topology, P2P; partly: clocks; not checked: ECC, Xid, host", 0), 0u)
      << h;
  d.worst = Severity::kOk;
  d.incomplete = {"GPUs could not be judged"};
  EXPECT_FALSE(has(report::coverage_headline(d), "OK")) << report::coverage_headline(d);
}

TEST(CoverageText, NothingCheckedSaysSo) {
  const Diagnosis d = with({cov("ecc", "ECC", kNot), cov("xid", "Xid", kNot)});
  EXPECT_EQ(report::coverage_headline(d),
            "Nothing the playbook checks could be checked: not checked: ECC, Xid — see Coverage");
}

TEST(CoverageText, CompleteWhenOnlyOptionalOrNotApplicableChecksDidNotRun) {
  const Diagnosis d = with({cov("topology", "topology", kNa), cov("ecc", "ECC", kOk),
                            cov("measurements", "measurements", kNot, "run `gpuvet bench`", true)});
  EXPECT_TRUE(report::coverage_complete(d));
  EXPECT_EQ(report::coverage_headline(d), "");
  const std::string text = render_diagnosis_text(Facts{}, d);
  EXPECT_TRUE(has(text, "No finding: nothing the playbook checks is wrong here.")) << text;
  EXPECT_TRUE(has(text, "run `gpuvet bench`")) << text;  // still said in the section
}

TEST(CoverageText, ReportNeverSaysNothingIsWrongAboutUncheckedThings) {
  const Diagnosis d = some_unchecked();
  const std::string text = render_diagnosis_text(Facts{}, d);
  EXPECT_FALSE(has(text, "nothing the playbook checks is wrong")) << text;
  // The qualifier sits right under the verdict line.
  const auto verdict = text.find("OK — 0 critical");
  ASSERT_NE(verdict, std::string::npos) << text;
  const auto next = text.find('\n', verdict);
  EXPECT_EQ(text.compare(next + 1, 29, "OK for what was checked (topo"), 0) << text;
  // The section: the checked ones in one line, each gap with its command.
  EXPECT_TRUE(has(text, "\nCoverage\n")) << text;
  EXPECT_TRUE(has(text, "  checked      topology, P2P, measurements") == false) << text;
  EXPECT_TRUE(has(text, "  checked      topology, P2P\n")) << text;
  EXPECT_TRUE(has(text,
                  "  partly       clocks — something unknown: paste `nvidia-smi -q -d "
                  "CLOCK`"))
      << text;
  EXPECT_TRUE(has(text, "  not checked  ECC — something unknown: paste `nvidia-smi -q -d ECC`"))
      << text;
  EXPECT_TRUE(has(text, "               Xid — something unknown: paste `sudo dmesg -T`")) << text;
  EXPECT_FALSE(has(text, "(topo-m)")) << text;  // evidence only with -v
  TextOptions v;
  v.verbose = true;
  EXPECT_TRUE(has(render_diagnosis_text(Facts{}, d, v), "topology (topo-m), P2P (topo-m)"));
}

TEST(CoverageJson, DiagnoseDocumentHasTheCoverageArray) {
  const Diagnosis d = some_unchecked();
  const auto j = nlohmann::json::parse(diagnosis_to_json(Facts{}, d));
  ASSERT_TRUE(j["coverage"].is_array());
  ASSERT_EQ(j["coverage"].size(), d.coverage.size());
  const auto& first = j["coverage"][0];
  EXPECT_EQ(first["check"], "topology");
  EXPECT_EQ(first["title"], "topology");
  EXPECT_EQ(first["status"], "checked");
  EXPECT_EQ(first["evidence"], "topo-m");
  EXPECT_TRUE(first["missing"].is_null());
  EXPECT_TRUE(first["how_to_get"].is_null());
  EXPECT_EQ(first["optional"], false);
  EXPECT_EQ(j["coverage"][2]["status"], "partial");
  EXPECT_EQ(j["coverage"][3]["status"], "not-checked");
  EXPECT_EQ(j["coverage"][3]["how_to_get"], "paste `nvidia-smi -q -d ECC`");
  EXPECT_EQ(j["coverage"][8]["optional"], true);
  // The keys that were there before stay.
  for (const char* k : {"findings", "bottleneck", "verdict", "exit_code", "notes"})
    EXPECT_TRUE(j.contains(k)) << k;
}

// End to end on a real paste: a topo -m alone is no all-clear.
TEST(CoverageText, TopoOnlyPasteSaysWhatItDidNotCheck) {
  const std::string path =
      std::string(GPUVET_SHARED_FIXTURES) + "/topo/autodl-2x-rtx2080ti-pix-topo-m.txt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared corpus absent";
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  const Facts f = import_text(ss.str(), "topo.txt");
  const Diagnosis d = diagnose(f);
  const std::string text = render_diagnosis_text(f, d);
  EXPECT_FALSE(has(text, "nothing the playbook checks is wrong")) << text;
  EXPECT_TRUE(has(text, "OK for what was checked (")) << text;
  EXPECT_TRUE(has(unwrapped(text), "not checked: ")) << text;
  for (const char* c : {"ECC", "Xid", "host", "ACS/IOMMU"})
    EXPECT_TRUE(has(text.substr(0, text.find("see Coverage")), c)) << c << "\n" << text;
  EXPECT_TRUE(has(text, "GPU0-GPU1 (PIX)")) << text;
  const auto j = nlohmann::json::parse(diagnosis_to_json(f, d));
  bool acs = false;
  for (const auto& c : j["coverage"])
    if (c["check"] == "acs-iommu") {
      acs = true;
      EXPECT_EQ(c["status"], "not-checked");
    }
  EXPECT_TRUE(acs);
}

}  // namespace
}  // namespace gpuvet
