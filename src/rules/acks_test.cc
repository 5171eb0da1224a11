// Acks: an operator silences a known condition for its subjects, up to its severity, until it
// expires; anything else still counts. Each test says which plausible bug it catches.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "gpuvet/baseline.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/gate.h"
#include "gpuvet/report.h"

namespace gpuvet {
namespace {

constexpr std::int64_t kNow = 1796601600;  // 2026-12-07 00:00 UTC

// Two GPUs, GPU1 with a volatile uncorrectable ECC error (critical) and GPU0 with a corrected
// one only (no finding).
Facts ecc_node(int bad_gpu = 1) {
  Facts f;
  for (int i = 0; i < 2; ++i) {
    GpuFacts g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.ecc.enabled = true;
    g.ecc.volatile_counts.uncorrected = i == bad_gpu ? 2 : 0;
    f.gpus.push_back(g);
  }
  return f;
}

std::vector<Ack> acks(const std::string& toml) {
  auto a = parse_acks(toml, "acks.toml", kNow);
  EXPECT_TRUE(a.is_ok()) << a.status().message();
  return a.is_ok() ? a.value() : std::vector<Ack>{};
}

Diagnosis judged(const Facts& f, const std::vector<Ack>& a) {
  DiagnoseOptions o;
  o.now_unix = kNow;
  o.acks = a;
  return diagnose(f, o);
}

const Finding* find(const Diagnosis& d, const std::string& id) {
  for (const auto& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

const char* kAckGpu1 = R"([[ack]]
finding = "ecc-errors"
subjects = ["GPU1"]
severity = "critical"
reason = "RMA 4411, swap on 12-15"
expires = 2026-12-20
by = "oncall"
)";

// Catches: an ack that hides the finding instead of marking it, or one that still counts.
TEST(Acks, AnAckedFindingIsShownAndLeavesTheVerdict) {
  const Diagnosis plain = judged(ecc_node(), {});
  ASSERT_NE(find(plain, "ecc-errors"), nullptr);
  EXPECT_EQ(diagnosis_exit_code(plain), 2);
  const Diagnosis d = judged(ecc_node(), acks(kAckGpu1));
  const Finding* f = find(d, "ecc-errors");
  ASSERT_NE(f, nullptr) << "an ack never hides the finding";
  ASSERT_TRUE(f->acknowledged);
  EXPECT_EQ(f->acknowledged->reason, "RMA 4411, swap on 12-15");
  EXPECT_EQ(f->severity, Severity::kCritical) << "its own severity is kept";
  EXPECT_LT(d.worst, Severity::kCritical);
  EXPECT_LT(diagnosis_exit_code(d), 2);
  bool noted = false;
  for (const auto& n : d.notes) noted = noted || n.find("acknowledged until 2026-12-20") == 0;
  EXPECT_TRUE(noted) << "every ack in force is said";
  const std::string text = render_diagnosis_text(ecc_node(), d);
  EXPECT_NE(text.find("[acknowledged until"), std::string::npos) << text;
  EXPECT_NE(text.find("0 critical, 0 warnings, 0 info, 1 acknowledged"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(diagnosis_to_json(ecc_node(), d));
  bool in_json = false;
  for (const auto& x : json["findings"])
    in_json = in_json || (x["id"] == "ecc-errors" && x["acknowledged"].is_object() &&
                          x["acknowledged"]["reason"] == "RMA 4411, swap on 12-15" &&
                          x["acknowledged"]["by"] == "oncall");
  EXPECT_TRUE(in_json) << json["findings"].dump();
}

// Catches: an ack matched by id alone (another GPU's new fault silenced), a worse severity
// silenced, an expired ack still holding.
TEST(Acks, ANewSubjectAWorseSeverityOrAnExpiredAckIsNeverSilenced) {
  // The same fault on GPU0: not acknowledged.
  const Diagnosis other = judged(ecc_node(0), acks(kAckGpu1));
  ASSERT_NE(find(other, "ecc-errors"), nullptr);
  EXPECT_FALSE(find(other, "ecc-errors")->acknowledged);
  EXPECT_EQ(diagnosis_exit_code(other), 2);
  // Acknowledged as a warning: the critical error still counts.
  std::string warning = kAckGpu1;
  warning.replace(warning.find("\"critical\""), 10, "\"warning\"");
  const Diagnosis worse = judged(ecc_node(), acks(warning));
  EXPECT_FALSE(find(worse, "ecc-errors")->acknowledged);
  EXPECT_EQ(diagnosis_exit_code(worse), 2);
  // Expired yesterday: counts again, and says so.
  std::string old = kAckGpu1;
  old.replace(old.find("2026-12-20"), 10, "2026-12-06");
  const Diagnosis expired = judged(ecc_node(), acks(old));
  EXPECT_FALSE(find(expired, "ecc-errors")->acknowledged);
  EXPECT_EQ(diagnosis_exit_code(expired), 2);
  bool said = false;
  for (const auto& n : expired.notes) said = said || n.find("ack expired") == 0;
  EXPECT_TRUE(said);
}

// Catches: a gate that fails (or drains) a node on an acknowledged fault.
TEST(Acks, AGatePassesANodeWhoseOnlyFaultIsAcknowledged) {
  const Facts f = ecc_node();
  auto b = parse_baseline(baseline_toml(node_print(f), {}, "live", "2026-12-07"), "b.toml");
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  GateOptions o;
  o.exit_style = ExitStyle::kSlurm;
  EXPECT_EQ(judge_gate(b.value(), f, judged(f, {}), {}, o).verdict, GateVerdict::kFail);
  const GateReport r = judge_gate(b.value(), f, judged(f, acks(kAckGpu1)), {}, o);
  EXPECT_EQ(r.verdict, GateVerdict::kPass) << r.reason;
  EXPECT_EQ(r.exit_code, 0);
}

// Catches: a typo that silences nothing without a word, an ack for ever.
TEST(Acks, AMalformedAcksFileIsRefusedNamingTheEntry) {
  const struct {
    std::string text, says;
  } bad[] = {
      {"[[ack]]\nfinding = \"ecc-error\"\nsubjects = [\"GPU1\"]\nreason = \"x\"\nexpires = "
       "2026-12-20\n",
       "acks.toml, ack 1: 'finding' must be a finding id"},
      {"[[ack]]\nfinding = \"ecc-errors\"\nreason = \"x\"\nexpires = 2026-12-20\n",
       "'subjects' must list"},
      {"[[ack]]\nfinding = \"ecc-errors\"\nsubjects = [\"GPU1\"]\nexpires = 2026-12-20\n",
       "'reason' says why"},
      {"[[ack]]\nfinding = \"ecc-errors\"\nsubjects = [\"GPU1\"]\nreason = \"x\"\n",
       "'expires' is a date"},
      {"[[ack]]\nfinding = \"ecc-errors\"\nsubjects = [\"GPU1\"]\nreason = \"x\"\nexpires = "
       "2031-01-01\n",
       "more than a year ahead"},
      {"[[ack]]\nfinding = \"ecc-errors\"\nsubjects = [\"GPU1\"]\nreason = \"x\"\nexpires = "
       "2026-12-20\nseverity = \"fatal\"\n",
       "'severity' is info, warning or critical"},
      {"[[ack]]\nfinding = \"ecc-errors\"\nsubject = [\"GPU1\"]\n", "unknown key 'subject'"},
      {"ack = 1\n", "'ack' must be [[ack]] tables"},
  };
  for (const auto& c : bad) {
    auto a = parse_acks(c.text, "acks.toml", kNow);
    ASSERT_FALSE(a.is_ok()) << c.says;
    EXPECT_NE(a.status().message().find(c.says), std::string::npos)
        << a.status().message() << "\nwanted: " << c.says;
  }
  // A date-time with its offset, and a string date, are expiries too.
  auto t = parse_acks(
      "[[ack]]\nfinding = \"ecc-errors\"\nsubjects = [\"GPU1\"]\nreason = \"x\"\nexpires = "
      "2026-12-08T12:00:00+02:00\n[[ack]]\nfinding = \"ecc-errors\"\nsubjects = [\"GPU0\"]\n"
      "reason = \"y\"\nexpires = \"2026-12-09\"\n",
      "acks.toml", kNow);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(t.value()[0].expires_unix, kNow + 86400 + 10 * 3600);
  EXPECT_EQ(t.value()[1].expires_unix, kNow + 3 * 86400 - 1);
}

}  // namespace
}  // namespace gpuvet
