// The engine on its own: the catalog is complete and consistent, findings come out in
// triage order, the verdict, exit codes and bottleneck follow, thresholds load from TOML.
#include "gpuvet/diagnose.h"

#include <gtest/gtest.h>

#include "gpuvet/import.h"

#include <set>
#include <string>

namespace gpuvet {
namespace {

// The minimum catalog of the contract (shared/spec/findings.md): never renamed or dropped.
const char* const kContractIds[] = {
    "gpu-missing",
    "pcie-link-degraded",
    "pcie-replay-errors",
    "gpu-pair-crosses-numa",
    "p2p-unavailable",
    "nvlink-down",
    "thermal-throttle",
    "power-throttle",
    "clocks-below-target",
    "ecc-errors",
    "xid-error",
    "cpu-saturated",
    "io-bound",
    "network-saturated",
    "gpu-shared-by-processes",
    "nccl-degraded-path",
    "memory-imbalance",
    "numa-misbinding",
    "h2d-bandwidth-low",
    "p2p-bandwidth-low",
    "scaling-inefficient",
    "tail-latency-amplified",
    "clocks-degrade-over-time",
    "heterogeneous-gpus",
    "gpu-unresponsive",
    "utilization-misleading",
    "fabric-degraded",
    "acs-blocks-p2p",
};

TEST(Catalog, HoldsEveryContractIdOnceWithText) {
  for (const char* id : kContractIds) EXPECT_NE(find_catalog_entry(id), nullptr) << id;
  std::set<std::string> ids;
  for (const auto& e : finding_catalog()) {
    EXPECT_TRUE(ids.insert(e.id).second) << "duplicate " << e.id;
    for (const char* text : {e.title, e.category, e.fires_when, e.meaning, e.decision, e.article})
      EXPECT_GT(std::string(text).size(), 2u) << e.id;
    for (char ch : std::string(e.id))
      EXPECT_TRUE((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-') << e.id;
  }
  EXPECT_EQ(find_catalog_entry("no-such-finding"), nullptr);
}

TEST(Catalog, EightSymptomPatterns) {
  EXPECT_EQ(symptom_catalog().size(), 8u);
  for (const auto& s : symptom_catalog()) EXPECT_GT(std::string(s.fix).size(), 10u) << s.id;
}

GpuFacts gpu(int index) {
  GpuFacts g;
  g.index = index;
  g.name = "NVIDIA H200";
  return g;
}

TEST(Diagnose, WorstFirstThenTriageStep) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  f.gpus[0].pcie.width_current = 8;  // warning, topology step
  f.gpus[0].pcie.width_max = 16;
  f.gpus[1].unresponsive = "timed out after 3 s in nvmlDeviceGetName";  // critical
  f.gpus[1].ecc.enabled = true;
  f.gpus[1].ecc.volatile_counts.corrected = 4;  // warning, system step
  const Diagnosis d = diagnose(f);
  ASSERT_GE(d.findings.size(), 3u);
  EXPECT_EQ(d.findings[0].id, "gpu-unresponsive");
  EXPECT_EQ(d.findings[1].id, "pcie-link-degraded");
  EXPECT_EQ(d.findings[2].id, "ecc-errors");
  EXPECT_EQ(d.worst, Severity::kCritical);
  EXPECT_EQ(diagnosis_exit_code(d), 2);
  EXPECT_EQ(d.bottleneck, Bottleneck::kHardware);
  EXPECT_NE(d.bottleneck_reason.find("gpu-unresponsive"), std::string::npos);
}

bool has_note(const Diagnosis& d, const std::string& part) {
  for (const auto& n : d.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

TEST(Diagnose, OfflineInputWithoutGpuFactsIsIncompleteNotOk) {
  const Facts f = import_text(
      "Architecture:        x86_64\nCPU(s):              64\nModel name:          AMD EPYC\n",
      "lscpu.txt");
  ASSERT_TRUE(f.gpus.empty());
  const Diagnosis d = diagnose(f);
  EXPECT_EQ(d.worst, Severity::kOk);
  ASSERT_EQ(d.incomplete.size(), 1u);
  EXPECT_TRUE(has_note(d, "GPUs could not be judged: no GPU facts in the input"));
  EXPECT_EQ(diagnosis_exit_code(d), 3);
}

TEST(Diagnose, AKernelLogAloneIsJudgedForWhatItCovers) {
  // A kernel log alone: no GPU facts, but an Xid 79 is still critical, and the log is an
  // answer for its part of the playbook (not an incomplete input); a note says what else to
  // paste.
  const Facts f = import_text(
      "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen "
      "off the bus.\n",
      "dmesg.txt");
  ASSERT_TRUE(f.gpus.empty());
  const Diagnosis d = diagnose(f);
  EXPECT_EQ(d.worst, Severity::kCritical);
  EXPECT_TRUE(d.incomplete.empty());
  EXPECT_TRUE(has_note(d, "GPU checks not done"));
  EXPECT_EQ(diagnosis_exit_code(d), 2);
}

TEST(Diagnose, InputProblemsMakeTheVerdictIncomplete) {
  Facts f;
  f.gpus = {gpu(0)};
  f.imported = {{"bundle/nvidia-smi-q.xml", "nvidia-smi-q-xml", {}}};
  f.input_problems = {"bundle: looks like a gpuvet capture bundle but has no manifest.json"};
  const Diagnosis d = diagnose(f);
  EXPECT_EQ(d.incomplete, f.input_problems);
  EXPECT_TRUE(has_note(d, "has no manifest.json"));
  EXPECT_EQ(diagnosis_exit_code(d), 3);
}

TEST(Diagnose, LiveFactsWithoutGpusAreNotMarkedIncomplete) {
  // Live collection reports the absence as gpu-missing; the offline rule must not apply.
  Facts f;
  f.sources = {{"nvml", true, "libnvidia-ml.so.1", 30, {}}};
  const Diagnosis d = diagnose(f);
  EXPECT_TRUE(d.incomplete.empty());
  EXPECT_EQ(diagnosis_exit_code(d), 2);
}

TEST(Diagnose, NothingWrongIsNoneOrComputeOrUnknown) {
  Facts empty;
  Diagnosis d = diagnose(empty);
  EXPECT_EQ(d.bottleneck, Bottleneck::kUnknown);
  EXPECT_EQ(diagnosis_exit_code(d), 0);

  Facts idle;
  idle.gpus = {gpu(0)};
  idle.gpus[0].utilization.gpu_pct = 0;
  d = diagnose(idle);
  EXPECT_EQ(d.bottleneck, Bottleneck::kNone);

  Facts busy;
  busy.gpus = {gpu(0)};
  busy.gpus[0].utilization.gpu_pct = 100;
  busy.gpus[0].clocks.sm_mhz = 1980;
  busy.gpus[0].clocks.sm_max_mhz = 1980;
  d = diagnose(busy);
  EXPECT_EQ(d.bottleneck, Bottleneck::kCompute);
  EXPECT_EQ(diagnosis_exit_code(d), 0);
}

TEST(Diagnose, NotesSayWhatWasNotChecked) {
  Facts f;
  f.gpus = {gpu(0)};
  f.kernel_log.source = "/dev/kmsg";
  f.kernel_log.readable = false;
  f.kernel_log.why_unreadable = "Operation not permitted";
  const Diagnosis d = diagnose(f);
  bool xid_note = false, pressure_note = false;
  for (const auto& n : d.notes) {
    xid_note |= n.find("Xid check skipped") != std::string::npos &&
                n.find("Operation not permitted") != std::string::npos;
    pressure_note |= n.find("not sampled") != std::string::npos;
  }
  EXPECT_TRUE(xid_note);
  EXPECT_TRUE(pressure_note);
}

TEST(Thresholds, OverridesFromToml) {
  auto t = parse_thresholds(
      "[thresholds]\nbusy_util_pct = 60\nhot_temp_c = 80\n"
      "scaling_efficiency = 0.9\n",
      "test.toml");
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(t.value().busy_util_pct, 60);
  EXPECT_EQ(t.value().hot_temp_c, 80);
  EXPECT_DOUBLE_EQ(t.value().scaling_efficiency, 0.9);
  EXPECT_EQ(t.value().iowait_pct, Thresholds{}.iowait_pct);  // untouched default
}

TEST(Thresholds, BadFilesAreErrorsNotDefaults) {
  for (const char* bad : {"[thresholds]\nbusy_util_pc = 60\n",  // typo
                          "[thresholds]\nbusy_util_pct = \"sixty\"\n",
                          "[thresholds]\nhot_temp_c = 80.5\n",  // integer key
                          "[thresholds]\niowait_pct = -1\n", "[threshold]\niowait_pct = 5\n",
                          "[thresholds\n", "thresholds = 3\n"}) {
    auto t = parse_thresholds(bad, "bad.toml");
    EXPECT_FALSE(t.is_ok()) << bad;
  }
  EXPECT_FALSE(load_thresholds("/nonexistent/gpuvet.toml").is_ok());
  EXPECT_TRUE(parse_thresholds("", "empty.toml").is_ok());
}

TEST(Thresholds, DescribedForTheDocs) {
  const auto all = describe_thresholds(Thresholds{});
  EXPECT_GE(all.size(), 26u);
  for (const auto& t : all) EXPECT_FALSE(t.description.empty()) << t.name;
}

}  // namespace
}  // namespace gpuvet
