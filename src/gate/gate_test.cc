#include <gtest/gtest.h>

#include <string>

#include "gpuvet/gate.h"
#include "gpuvet/report.h"

namespace gpuvet {
namespace {

// Two GPUs on one PCIe switch, P2P working.
Facts two_gpu_node() {
  Facts f;
  f.host.hostname = "node7";
  for (int i = 0; i < 2; ++i) {
    GpuFacts g;
    g.index = i;
    g.name = "NVIDIA L40S";
    g.pcie.gen_max = 4;
    g.pcie.width_max = 16;
    g.pcie.width_current = 16;
    g.numa_node = 0;
    g.power.limit_w = 350;
    f.gpus.push_back(g);
  }
  GpuPair p;
  p.a = 0;
  p.b = 1;
  p.path = PathType::kPIX;
  p.p2p_read = P2PStatus::kOk;
  f.pairs.push_back(p);
  return f;
}

Baseline baseline_of(const Facts& f, std::vector<Floor> floors = {}) {
  auto b = parse_baseline(baseline_toml(node_print(f), floors, "live", "2026-12-03"),
                          "/etc/gpuvet/model-a.toml");
  EXPECT_TRUE(b.is_ok()) << b.status().to_string();
  return b.value();
}

GateReport gate(const Baseline& b, const Facts& f, GateOptions o = {},
                std::vector<BandwidthValue> bw = {}) {
  return judge_gate(b, f, diagnose(f), std::move(bw), o);
}

TEST(Gate, AMatchingNodePassesWithExitZeroInEveryStyle) {
  const Facts f = two_gpu_node();
  for (auto style : {ExitStyle::kGpuvet, ExitStyle::kNagios, ExitStyle::kNpd, ExitStyle::kSlurm}) {
    GateOptions o;
    o.exit_style = style;
    const GateReport r = gate(baseline_of(f), f, o);
    EXPECT_EQ(r.verdict, GateVerdict::kPass) << r.reason;
    EXPECT_EQ(r.exit_code, 0) << exit_style_name(style);
    EXPECT_EQ(r.reason.rfind("gpuvet: pass, 2 GPU(s) match model-a.toml@", 0), 0u) << r.reason;
  }
}

TEST(Gate, ALostP2pPathFailsWithTheReasonAndEachStylesExitCode) {
  const Facts good = two_gpu_node();
  Facts f = good;
  f.pairs[0].path = PathType::kSYS;
  f.pairs[0].p2p_read = P2PStatus::kNotSupported;
  const struct {
    ExitStyle style;
    int code;
  } styles[] = {{ExitStyle::kGpuvet, 2},
                {ExitStyle::kNagios, 2},
                {ExitStyle::kNpd, 1},
                {ExitStyle::kSlurm, 1}};
  for (const auto& s : styles) {
    GateOptions o;
    o.exit_style = s.style;
    const GateReport r = gate(baseline_of(good), f, o);
    EXPECT_EQ(r.verdict, GateVerdict::kFail);
    EXPECT_EQ(r.exit_code, s.code) << exit_style_name(s.style);
    EXPECT_EQ(r.reason, "gpuvet: GPU0-GPU1 path SYS (baseline PIX); P2P NS");
    EXPECT_EQ(r.brief, "GPU0-1 path SYS<PIX");
    EXPECT_EQ(r.causes, 2);
    ASSERT_FALSE(r.diagnosis.findings.empty());
    EXPECT_EQ(r.diagnosis.findings[0].id, "baseline-deviation");
    EXPECT_NE(r.diagnosis.findings[0].evidence.find("baseline /etc/gpuvet/model-a.toml@"),
              std::string::npos);
  }
}

TEST(Gate, FailOnChoosesWhetherAWarningFailsTheNode) {
  const Facts good = two_gpu_node();
  Facts f = good;
  f.gpus[1].power.limit_w = 300;  // a configuration deviation: warning
  GateOptions o;
  GateReport r = gate(baseline_of(good), f, o);
  EXPECT_EQ(r.verdict, GateVerdict::kPass) << r.reason;
  EXPECT_EQ(r.exit_code, 1);  // Nagios WARNING, though the node passes
  o.fail_on = Severity::kWarning;
  o.exit_style = ExitStyle::kSlurm;
  r = gate(baseline_of(good), f, o);
  EXPECT_EQ(r.verdict, GateVerdict::kFail);
  EXPECT_EQ(r.exit_code, 1);
  // The rules see it too (one GPU's limit differs from its peer's).
  EXPECT_EQ(r.reason,
            "gpuvet: GPU1 power limit 300 W (baseline 350 W); heterogeneous-gpus GPU0,GPU1");
}

// A healthy node running a job: its CPUs pegged (cpu-saturated, a warning) is transient host
// state, shown but never the verdict: PASS and exit 0 in every style, the line and the code
// agreeing. --fail-on-host (with --fail-on warning) makes it fail.
TEST(Gate, TransientHostLoadIsShownButNeverFailsTheGate) {
  Facts f = two_gpu_node();
  f.host.pressure = HostPressure{};
  f.host.pressure->window_s = 1;
  for (int c = 0; c < 8; ++c) f.host.pressure->cores.push_back({c, 99.5, 0, 0});
  const Diagnosis d = diagnose(f);
  bool saturated = false;
  for (const auto& x : d.findings) saturated = saturated || x.id == "cpu-saturated";
  ASSERT_TRUE(saturated) << "the rules see the load";
  for (auto style : {ExitStyle::kGpuvet, ExitStyle::kNagios, ExitStyle::kNpd, ExitStyle::kSlurm}) {
    GateOptions o;
    o.exit_style = style;
    o.fail_on = Severity::kWarning;
    const GateReport r = judge_gate(baseline_of(f), f, d, {}, o);
    EXPECT_EQ(r.verdict, GateVerdict::kPass) << r.reason;
    EXPECT_EQ(r.exit_code, 0) << exit_style_name(style) << ": " << r.reason;
    EXPECT_EQ(r.reason.rfind("gpuvet: pass, 2 GPU(s) match", 0), 0u) << r.reason;
    bool noted = false;
    for (const auto& n : r.notes)
      noted = noted || n.find("not judged: cpu-saturated") != std::string::npos;
    EXPECT_TRUE(noted);
  }
  GateOptions o;
  o.fail_on = Severity::kWarning;
  o.fail_on_host = true;
  const GateReport r = judge_gate(baseline_of(f), f, d, {}, o);
  EXPECT_EQ(r.verdict, GateVerdict::kFail);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.reason.find("cpu-saturated"), std::string::npos) << r.reason;
}

// A critical finding is never behind "+N more": the reason line is worst first.
TEST(Gate, TheReasonLineIsWorstFirst) {
  const Facts good = two_gpu_node();
  Facts f = good;
  f.gpus[1].power.limit_w = 300;                  // a deviation, warning
  f.gpus[0].ecc.volatile_counts.uncorrected = 3;  // a present hardware fault, critical
  GateOptions o;
  o.fail_on = Severity::kWarning;
  const GateReport r = gate(baseline_of(good), f, o);
  EXPECT_EQ(r.verdict, GateVerdict::kFail);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.reason.rfind("gpuvet: ecc-errors GPU0", 0), 0u) << r.reason;
}

// A warning below --fail-on passes the node, and the line says the warning the exit code 1
// stands for.
TEST(Gate, APassWithWarningsSaysThemOnItsLine) {
  const Facts good = two_gpu_node();
  Facts f = good;
  f.gpus[1].power.limit_w = 300;
  const GateReport r = gate(baseline_of(good), f);
  EXPECT_EQ(r.verdict, GateVerdict::kPass);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(
      r.reason.rfind("gpuvet: pass with warnings: GPU1 power limit 300 W (baseline 350 W)", 0), 0u)
      << r.reason;
}

// E2: control characters and bytes that are not UTF-8 (a GPU name, a host name) never reach
// the JUnit file: XML 1.0 refuses them even as character references.
TEST(Gate, JunitIsValidXmlWhateverTheNamesHold) {
  const Facts good = two_gpu_node();
  Facts f = good;
  f.host.hostname = std::string("node\x1b[31m7\a");
  f.gpus[1].name = std::string("NVIDIA \x01L40S\xff\xfe");
  GateOptions o;
  o.fail_on = Severity::kWarning;
  const std::string xml = gate_junit_xml(gate(baseline_of(good), f, o));
  for (unsigned char c : xml)
    EXPECT_TRUE(c >= 0x20 || c == '\n' || c == '\t' || c == '\r') << int(c);
  EXPECT_EQ(xml.find("&#"), std::string::npos) << xml;
  EXPECT_EQ(xml.find("\xff"), std::string::npos);
  EXPECT_NE(xml.find("node\xEF\xBF\xBD[31m7\xEF\xBF\xBD"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure"), std::string::npos) << xml;
}

// One cause, one line: a GPU that stopped answering is "GPU1 lost (…)", first, not a list of
// values unknown; they are grouped under it.
TEST(Gate, ALostGpuIsOneLineFirstWithItsValuesUnderIt) {
  const Facts good = two_gpu_node();
  Facts f = good;
  f.gpus[1] = GpuFacts{};
  f.gpus[1].index = 1;
  f.gpus[1].unresponsive = "fell off the bus";
  f.pairs[0].p2p_read.reset();
  f.pairs[0].path = PathType::kUnknown;
  for (auto style : {ExitStyle::kGpuvet, ExitStyle::kSlurm}) {
    GateOptions o;
    o.exit_style = style;
    const GateReport r = gate(baseline_of(good), f, o);
    EXPECT_EQ(r.verdict, GateVerdict::kFail) << r.reason;
    EXPECT_EQ(r.reason.rfind("gpuvet: GPU1 lost (fell off the bus)", 0), 0u) << r.reason;
    EXPECT_EQ(r.brief, "GPU1 lost");
    ASSERT_FALSE(r.deviations.empty());
    EXPECT_EQ(r.deviations[0].what, "lost");
    EXPECT_NE(r.deviations[0].evidence.find("could not be checked"), std::string::npos)
        << r.deviations[0].evidence;
    int about_gpu1 = 0;
    for (const auto& d : r.deviations)
      for (const auto& s : d.subjects) about_gpu1 += s.find("GPU1") != std::string::npos;
    EXPECT_EQ(about_gpu1, 1) << "everything about GPU1 under its one line";
  }
}

TEST(Gate, AnUnreadableValueIsUnknownNeverPass) {
  const Facts good = two_gpu_node();
  Facts f = good;
  f.pairs[0].p2p_read.reset();
  const struct {
    ExitStyle style;
    int code;
  } styles[] = {{ExitStyle::kGpuvet, 3},
                {ExitStyle::kNagios, 3},
                {ExitStyle::kNpd, 2},
                {ExitStyle::kSlurm, 2}};
  for (const auto& s : styles) {
    GateOptions o;
    o.exit_style = s.style;
    const GateReport r = gate(baseline_of(good), f, o);
    EXPECT_EQ(r.verdict, GateVerdict::kUnknown);
    EXPECT_EQ(r.exit_code, s.code) << exit_style_name(s.style);
    EXPECT_EQ(r.reason, "gpuvet: unknown: GPU0-GPU1 P2P unknown");
  }
}

TEST(Gate, TheReasonStaysWithinEightyAsciiCharactersAndCountsTheRest) {
  Facts good;
  for (int i = 0; i < 8; ++i) {
    GpuFacts g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3 \xe2\x80\x94 test";  // a non-ASCII name
    g.pcie.width_max = 16;
    g.pcie.width_current = 16;
    good.gpus.push_back(g);
  }
  Facts f = good;
  for (auto& g : f.gpus) g.pcie.width_current = 8;
  const GateReport r = gate(baseline_of(good), f);
  EXPECT_EQ(r.verdict, GateVerdict::kFail);
  EXPECT_LE(r.reason.size(), 80u) << r.reason;
  for (unsigned char c : r.reason) EXPECT_TRUE(c >= 0x20 && c < 0x7F) << r.reason;
  EXPECT_NE(r.reason.find("more"), std::string::npos) << r.reason;
  EXPECT_EQ(
      r.reason.rfind("gpuvet: GPU0 PCIe width x8 (baseline at least x16); GPU1 PCIe width x8;", 0),
      0u)
      << "reason: " << r.reason;
}

TEST(Gate, FloorsAreJudgedOnlyByTheFullProfile) {
  const Facts f = two_gpu_node();
  const Baseline b = baseline_of(f, {{{"h2d", "GPU0", std::nullopt, 20.0}, "bench"}});
  GateReport r = gate(b, f, {}, {{"h2d", "GPU0", std::nullopt, 9.0}});
  EXPECT_EQ(r.verdict, GateVerdict::kPass);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("not checked"), std::string::npos);
  GateOptions full;
  full.profile = GateProfile::kFull;
  r = gate(b, f, full, {{"h2d", "GPU0", std::nullopt, 9.0}});
  EXPECT_EQ(r.verdict, GateVerdict::kFail);
  EXPECT_EQ(r.diagnosis.findings[0].id, "baseline-bandwidth-below-floor");
  r = gate(b, f, full, {});
  EXPECT_EQ(r.verdict, GateVerdict::kUnknown);  // not measured: cannot pass
}

TEST(Gate, TheUnusableLineIsAsciiAndFitsEightyCharactersWhateverTheMessage) {
  EXPECT_EQ(gate_unusable_line("baseline x.toml: gpu_count is not a number"),
            "gpuvet: unknown: baseline x.toml: gpu_count is not a number");
  const std::string line =
      gate_unusable_line("caf\xC3\xA9 \x1b]0;title\x07 " + std::string(200, 'x'));
  EXPECT_EQ(line.size(), 80u);
  EXPECT_EQ(line.substr(0, 24), "gpuvet: unknown: caf? ?]");
  EXPECT_EQ(line.substr(77), "...");
  for (unsigned char c : line) EXPECT_TRUE(c >= 0x20 && c < 0x7F) << int(c);
}

}  // namespace
}  // namespace gpuvet
