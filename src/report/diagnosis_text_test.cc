// The diagnose terminal report's layout: the count header, one summary line per finding id,
// blocks for warning/critical, one entry per info id, the width, and what -v adds.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "gpuvet/report.h"
#include "report/diagnosis_text.h"
#include "report/text_layout.h"

namespace gpuvet {
namespace {

using report::display_width;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Lines over `width`, except one that holds a single word too long for it (after at most a
// label such as "seen:").
std::vector<std::string> too_wide(const std::string& text, std::size_t width) {
  std::vector<std::string> bad;
  for (const auto& l : lines(text)) {
    if (display_width(l) <= width) continue;
    const auto w = words(l);
    const auto longest = std::max_element(w.begin(), w.end(), [](const auto& a, const auto& b) {
      return display_width(a) < display_width(b);
    });
    const bool one_long_token =
        longest != w.end() && w.size() <= 2 && display_width(*longest) > width - 12;
    if (!one_long_token) bad.push_back(l);
  }
  return bad;
}

Finding finding(std::string id, Severity s, std::vector<std::string> subjects,
                std::string evidence) {
  Finding f;
  f.id = std::move(id);
  f.severity = s;
  f.subjects = std::move(subjects);
  f.evidence = std::move(evidence);
  return f;
}

const std::string kLongPath =
    "/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:10.0/0000:03:00.0/config";

// One critical, three warning ids (pcie-replay-errors on two GPUs as two findings), two info
// ids, and more notes than the report shows by default.
Diagnosis sample() {
  Diagnosis d;
  d.findings = {
      finding("gpu-unresponsive", Severity::kCritical, {"GPU1"},
              "GPU1 (0000:3b:00.0) did not answer NVML within 3 s; read " + kLongPath +
                  " for the link state"),
      finding("pcie-link-degraded", Severity::kWarning, {"GPU3"},
              "GPU3 PCIe Gen4 x8 of max x16 (0000:65:00.0): 15.8 of 31.5 GB/s per direction"),
      finding("pcie-replay-errors", Severity::kWarning, {"GPU0"},
              "GPU0 PCIe replay counter 67 (0000:19:00.0)"),
      finding("pcie-replay-errors", Severity::kWarning, {"GPU2"},
              "GPU2 PCIe replay counter 52 (0000:4c:00.0)"),
      finding("power-throttle", Severity::kWarning,
              {"GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7"},
              "all 8 GPUs of the node (GPU0–GPU7) report the same: hw_power_brake_slowdown active "
              "(external power-brake signal) at idle (68–72 W)"),
      finding("xid-error", Severity::kInfo, {"GPU2"}, "Xid 13 ×1 on GPU2, 30 h ago"),
      finding("p2p-unavailable", Severity::kInfo,
              {"GPU0-GPU1", "GPU0-GPU2", "GPU0-GPU3", "GPU1-GPU2", "GPU1-GPU3", "GPU2-GPU3"},
              "peer access is not supported between the GeForce GPUs (expected on GeForce)"),
  };
  d.findings[5].decision_note = "Decision note only verbose shows.";
  d.worst = Severity::kCritical;
  d.bottleneck = Bottleneck::kHardware;
  d.bottleneck_reason = "gpu-unresponsive: a GPU does not answer";
  for (int i = 1; i <= 13; ++i) d.notes.push_back("note number " + std::to_string(i));
  return d;
}

std::string render(const Diagnosis& d, int width, bool verbose = false) {
  TextOptions o;
  o.width = width;
  o.verbose = verbose;
  Facts f;
  f.host.hostname = "node7";
  return render_diagnosis_text(f, d, o);
}

TEST(DiagnosisText, HeaderCountsEachFindingIdOnce) {
  const auto ls = lines(render(sample(), 100));
  ASSERT_GE(ls.size(), 2u);
  EXPECT_EQ(ls[0], "gpuvet diagnose — node7 · no GPU facts");
  EXPECT_EQ(ls[1],
            "CRITICAL — 1 critical, 3 warnings, 2 info · bottleneck: hardware (gpu-unresponsive "
            "GPU1)");
}

// A paste with nvidia-smi's clock says when it was taken; a GPU without a name (it stopped
// answering) does not make the node "mixed GPUs".
TEST(DiagnosisText, HeaderSaysWhenAPasteWasTakenAndIgnoresNamelessGpus) {
  Facts f;
  f.host.hostname = "node7";
  f.host.collected_unix = 1722424959;
  f.imported.push_back({"q.txt", "nvidia-smi-q"});
  for (int i = 0; i < 2; ++i) {
    GpuFacts g;
    g.index = i;
    if (i == 0) g.name = "NVIDIA H100 80GB HBM3";
    f.gpus.push_back(g);
  }
  const auto ls = lines(render_diagnosis_text(f, Diagnosis{}, TextOptions{}));
  ASSERT_FALSE(ls.empty());
  EXPECT_EQ(ls[0],
            "gpuvet diagnose — node7 · 2× NVIDIA H100 80GB HBM3 · offline input captured "
            "2024-07-31 11:22");
}

TEST(DiagnosisText, HeaderSaysOneWarningAndNoFinding) {
  Diagnosis one;
  one.findings = {finding("pcie-replay-errors", Severity::kWarning, {"GPU0"}, "x"),
                  finding("pcie-replay-errors", Severity::kWarning, {"GPU1"}, "y")};
  one.worst = Severity::kWarning;
  one.bottleneck = Bottleneck::kHardware;
  one.bottleneck_reason = "pcie-replay-errors: replays";
  EXPECT_EQ(lines(render(one, 100))[1],
            "WARNING — 0 critical, 1 warning, 0 info · bottleneck: hardware (pcie-replay-errors "
            "GPU0–1)");
  Diagnosis none;
  none.bottleneck = Bottleneck::kNone;
  none.bottleneck_reason = "no warning or critical finding";
  const std::string t = render(none, 100);
  EXPECT_EQ(lines(t)[1],
            "OK — 0 critical, 0 warnings, 0 info · bottleneck: none — no warning or critical "
            "finding");
  EXPECT_NE(t.find("No finding: nothing the playbook checks is wrong here."), std::string::npos);
}

TEST(DiagnosisText, OneSummaryLinePerFindingIdWithCompactSubjects) {
  for (int width : {100, 160}) {
    const std::string t = render(sample(), width);
    const auto ls = lines(t);
    // The summary follows the headline and a blank line, worst first, one entry per id; a
    // title too long for its column continues under itself.
    ASSERT_GE(ls.size(), 9u) << t;
    EXPECT_EQ(ls[2], "") << t;
    std::vector<std::string> entries;
    for (std::size_t i = 3; i < ls.size() && !ls[i].empty(); ++i) {
      if (ls[i].rfind("  CRITICAL", 0) == 0 || ls[i].rfind("  WARNING", 0) == 0 ||
          ls[i].rfind("  info", 0) == 0)
        entries.push_back(ls[i]);
      else
        EXPECT_EQ(ls[i].rfind(std::string(40, ' '), 0), 0u) << "a title continues: " << ls[i];
    }
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"CRITICAL", "gpu-unresponsive"},
        {"WARNING", "pcie-link-degraded"},
        {"WARNING", "pcie-replay-errors"},
        {"WARNING", "power-throttle"},
        {"info", "xid-error"},
        {"info", "p2p-unavailable"}};
    ASSERT_EQ(entries.size(), expected.size()) << t;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      const auto w = words(entries[k]);
      ASSERT_GE(w.size(), 3u) << entries[k];
      EXPECT_EQ(w[0], expected[k].first) << entries[k];
      EXPECT_EQ(w[1], expected[k].second) << entries[k];
    }
    EXPECT_NE(entries[2].find("  GPU0,2  "), std::string::npos) << entries[2];
    EXPECT_NE(entries[3].find("  GPU0–7  "), std::string::npos) << entries[3];
    EXPECT_NE(entries[5].find("  all 6 pairs of GPU0–3  "), std::string::npos) << entries[5];
    // The titles start in one column, the one after the widest subjects.
    const std::string a = std::string(find_catalog_entry("power-throttle")->title).substr(0, 10);
    const std::string b =
        std::string(find_catalog_entry("pcie-link-degraded")->title).substr(0, 10);
    ASSERT_NE(entries[3].find(a), std::string::npos) << entries[3];
    ASSERT_NE(entries[1].find(b), std::string::npos) << entries[1];
    EXPECT_EQ(display_width(entries[3].substr(0, entries[3].find(a))),
              display_width(entries[1].substr(0, entries[1].find(b))));
    if (width == 160) {
      for (const auto& e : entries) EXPECT_LE(display_width(e), 160u);
    }
  }
}

TEST(DiagnosisText, AFindingOnManyGpusIsOneBlock) {
  Diagnosis d;
  for (int g = 0; g < 8; ++g)
    d.findings.push_back(
        finding("pcie-replay-errors", Severity::kWarning, {"GPU" + std::to_string(g)},
                "GPU" + std::to_string(g) + " PCIe replay counter " + std::to_string(60 + g)));
  d.worst = Severity::kWarning;
  const std::string t = render(d, 100);
  EXPECT_EQ(count(t, "WARNING  pcie-replay-errors"), 1u) << t;
  EXPECT_EQ(count(t, "  means:   "), 1u) << t;
  EXPECT_NE(t.find("WARNING  pcie-replay-errors  GPU0–7  [topology]"), std::string::npos) << t;
  EXPECT_NE(t.find("  seen:    GPU0 PCIe replay counter 60\n           GPU1 PCIe replay counter "
                   "61\n           … 6 more like it: GPU2–7 (-v shows each)\n"),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("counter 67"), std::string::npos) << t;
  const std::string v = render(d, 100, true);
  for (int g = 0; g < 8; ++g)
    EXPECT_NE(v.find("GPU" + std::to_string(g) + " PCIe replay counter " + std::to_string(60 + g)),
              std::string::npos)
        << v;
  EXPECT_EQ(v.find("more like it"), std::string::npos) << v;
}

TEST(DiagnosisText, ThreeMembersAreAllShown) {
  Diagnosis d;
  for (int g = 0; g < 3; ++g)
    d.findings.push_back(finding("pcie-replay-errors", Severity::kWarning,
                                 {"GPU" + std::to_string(g)}, "replays " + std::to_string(g)));
  d.worst = Severity::kWarning;
  const std::string t = render(d, 100);
  for (int g = 0; g < 3; ++g) EXPECT_NE(t.find("replays " + std::to_string(g)), std::string::npos);
  EXPECT_EQ(t.find("more like it"), std::string::npos) << t;
}

TEST(DiagnosisText, BlocksForWarningAndCriticalOneEntryForInfo) {
  const std::string t = render(sample(), 100);
  EXPECT_EQ(count(t, "  seen:    "), 4u) << t;  // 1 critical + 3 warning ids
  EXPECT_EQ(count(t, "  means:   "), 4u) << t;
  EXPECT_NE(t.find("\nAlso noted\n  info  xid-error  GPU2: Xid 13 ×1 on GPU2, 30 h ago\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("  info  p2p-unavailable  all 6 pairs of GPU0–3: peer access"),
            std::string::npos)
      << t;
  EXPECT_LT(t.find("CRITICAL gpu-unresponsive  GPU1  [confirm]"), t.find("WARNING  pcie-link"))
      << t;
}

TEST(DiagnosisText, VerboseShowsWhatTheDefaultHides) {
  const std::string plain = render(sample(), 100);
  const std::string verbose = render(sample(), 100, true);
  // Info decisions.
  EXPECT_EQ(plain.find("Decision note only verbose shows."), std::string::npos) << plain;
  EXPECT_NE(verbose.find("        do: Decision note only verbose shows."), std::string::npos)
      << verbose;
  // Full subject lists behind a compact form.
  EXPECT_EQ(plain.find("GPU1-GPU3"), std::string::npos) << plain;
  EXPECT_NE(
      verbose.find("subjects: GPU0-GPU1, GPU0-GPU2, GPU0-GPU3, GPU1-GPU2, GPU1-GPU3, GPU2-GPU3"),
      std::string::npos)
      << verbose;
  EXPECT_EQ(plain.find("GPU0, GPU1, GPU2, GPU3, GPU4"), std::string::npos) << plain;
  EXPECT_NE(verbose.find("  subjects: GPU0, GPU1, GPU2, GPU3, GPU4, GPU5, GPU6, GPU7\n"),
            std::string::npos)
      << verbose;
  // All notes.
  EXPECT_NE(plain.find("  - note number 12\n"), std::string::npos);
  EXPECT_EQ(plain.find("note number 13"), std::string::npos) << plain;
  EXPECT_NE(plain.find("  … 1 more (-v shows all)"), std::string::npos) << plain;
  EXPECT_NE(verbose.find("  - note number 13\n"), std::string::npos) << verbose;
}

TEST(DiagnosisText, NoLinePassesTheWidthButALongToken) {
  for (int width : {60, 80, 100, 160}) {
    for (bool verbose : {false, true}) {
      const std::string t = render(sample(), width, verbose);
      const auto bad = too_wide(t, static_cast<std::size_t>(width));
      EXPECT_TRUE(bad.empty()) << "width " << width << ": " << (bad.empty() ? "" : bad.front())
                               << "\n"
                               << t;
      EXPECT_NE(t.find(kLongPath), std::string::npos) << "the path is never broken\n" << t;
    }
  }
}

TEST(DiagnosisText, UsesTheWidthItIsGiven) {
  const auto widest = [](const std::string& t) {
    std::size_t w = 0;
    for (const auto& l : lines(t))
      if (l.find(kLongPath) == std::string::npos) w = std::max(w, display_width(l));
    return w;
  };
  const std::string narrow = render(sample(), 60), wide = render(sample(), 160);
  EXPECT_GT(lines(narrow).size(), lines(render(sample(), 100)).size());
  EXPECT_GT(lines(render(sample(), 100)).size(), lines(wide).size());
  EXPECT_GT(widest(wide), 100u) << wide;  // a meaning that fills more than 100 columns
  EXPECT_LE(widest(narrow), 60u) << narrow;
  EXPECT_GT(widest(narrow), 50u) << narrow;  // and the narrow one fills its lines
}

TEST(DiagnosisText, NarrowSummaryPutsTheTitleUnderTheId) {
  Diagnosis d;
  d.findings = {finding("gpu-shared-by-processes", Severity::kWarning,
                        {"GPU0", "GPU1", "pid 24819", "pid 24820"}, "2 processes share GPU0")};
  d.worst = Severity::kWarning;
  auto ls = lines(render(d, 60));
  // The headline wraps at 60 columns; the summary starts after the first blank line.
  ls.erase(ls.begin(), std::find(ls.begin(), ls.end(), std::string()) - 2);
  ASSERT_GE(ls.size(), 6u);
  EXPECT_EQ(ls[3], "  WARNING   gpu-shared-by-processes");
  EXPECT_EQ(ls[4], "      GPU0–1, pid 24819, pid 24820");
  EXPECT_EQ(ls[5], std::string("      ") + find_catalog_entry("gpu-shared-by-processes")->title);
  // With room for the subjects beside the id, they stay there.
  auto wider = lines(render(d, 70));
  wider.erase(wider.begin(), std::find(wider.begin(), wider.end(), std::string()) - 2);
  EXPECT_EQ(wider[3], "  WARNING   gpu-shared-by-processes  GPU0–1, pid 24819, pid 24820");
  EXPECT_EQ(wider[4], std::string("      ") + find_catalog_entry("gpu-shared-by-processes")->title);
}

TEST(DiagnosisText, SymptomCausesNameCompactSubjectsUnlessVerbose) {
  Diagnosis d = sample();
  d.symptoms = {
      {"degrades-over-time",
       {"power-throttle (GPU0, GPU1, GPU2, GPU3, GPU4, GPU5, GPU6, GPU7)", "x-y (a, b)"}}};
  const std::string t = render(d, 100), v = render(d, 100, true);
  EXPECT_NE(t.find("because: power-throttle (GPU0–7), x-y (a, b)\n"), std::string::npos) << t;
  EXPECT_NE(v.find("because: power-throttle (GPU0, GPU1, GPU2, GPU3, GPU4, GPU5, GPU6, GPU7), x-y"),
            std::string::npos)
      << v;
}

TEST(GroupFindings, SameIdAndSeverityIsOneGroupInFirstOrder) {
  const Diagnosis d = sample();
  const auto groups = report::group_findings(d.findings);
  ASSERT_EQ(groups.size(), 6u);
  EXPECT_EQ(groups[2].first().id, "pcie-replay-errors");
  EXPECT_EQ(groups[2].members.size(), 2u);
  EXPECT_EQ(groups[2].subjects, (std::vector<std::string>{"GPU0", "GPU2"}));
  // Same id at another severity stays apart.
  std::vector<Finding> two = {finding("xid-error", Severity::kWarning, {"GPU0"}, "a"),
                              finding("xid-error", Severity::kInfo, {"GPU1"}, "b")};
  EXPECT_EQ(report::group_findings(two).size(), 2u);
  EXPECT_EQ(report::finding_counts(report::group_findings(two)), "0 critical, 1 warning, 1 info");
}

}  // namespace
}  // namespace gpuvet
