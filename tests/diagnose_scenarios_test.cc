// diagnose_scenarios_test.cc — the article's 14 tasks and 8 symptom patterns, end to end:
// input (the article's own example outputs in real formats, fake-NVML scenarios, or facts
// shaped like a measurement) → the expected finding ids, severities and subjects, and no
// other warning or critical finding.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "bundle/bundle.h"
#include "gpuvet/collect.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "import/load.h"

namespace gpuvet {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string task_text(int n) {
  char name[32];
  std::snprintf(name, sizeof name, "task-%02d.txt", n);
  return read_file(std::string(GPUVET_TEST_DATA) + "/fixtures/article/" + name);
}

// Imports the given tasks' outputs as one pasted session.
Facts import_tasks(std::initializer_list<int> tasks) {
  std::string text;
  for (int t : tasks) text += task_text(t) + "\n";
  return import::import_text(text, "article");
}

struct Expected {
  std::string id;
  Severity severity;
  std::string subject;  // one of the finding's subjects ("" = any)
};

std::string dump(const Diagnosis& d) {
  std::string s;
  for (const auto& f : d.findings) {
    s += std::string(severity_name(f.severity)) + " " + f.id + " [";
    for (const auto& x : f.subjects) s += x + " ";
    s += "] " + f.evidence + "\n";
  }
  s += "bottleneck: " + std::string(bottleneck_name(d.bottleneck)) + " — " + d.bottleneck_reason +
       "\n";
  for (const auto& m : d.symptoms) s += "symptom: " + m.id + "\n";
  return s;
}

bool matches(const Finding& f, const Expected& e) {
  if (f.id != e.id || f.severity != e.severity) return false;
  return e.subject.empty() ||
         std::find(f.subjects.begin(), f.subjects.end(), e.subject) != f.subjects.end();
}

// Every expected finding is there, and every warning/critical finding was expected.
void expect_exactly(const Diagnosis& d, const std::vector<Expected>& expected) {
  for (const auto& e : expected)
    EXPECT_TRUE(std::any_of(d.findings.begin(), d.findings.end(),
                            [&](const Finding& f) { return matches(f, e); }))
        << "missing " << e.id << " " << severity_name(e.severity) << " " << e.subject << "\n"
        << dump(d);
  for (const auto& f : d.findings) {
    if (f.severity < Severity::kWarning) continue;
    EXPECT_TRUE(std::any_of(expected.begin(), expected.end(),
                            [&](const Expected& e) { return matches(f, e); }))
        << "unexpected " << f.id << " " << severity_name(f.severity) << "\n"
        << dump(d);
  }
}

bool has_symptom(const Diagnosis& d, const std::string& id) {
  return std::any_of(d.symptoms.begin(), d.symptoms.end(),
                     [&](const SymptomMatch& m) { return m.id == id; });
}

const Finding* find(const Diagnosis& d, const std::string& id) {
  for (const auto& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

constexpr Severity kInfo = Severity::kInfo;
constexpr Severity kWarning = Severity::kWarning;
constexpr Severity kCritical = Severity::kCritical;

// ------------------------------------------------------------------ the 14 tasks

TEST(ArticleDiagnose, Task01BothGpusPresentOrMissing) {
  const Facts f = import_tasks({1});
  DiagnoseOptions o;
  o.expect_gpus = 2;
  Diagnosis d = diagnose(f, o);
  expect_exactly(d, {});
  EXPECT_EQ(diagnosis_exit_code(d), 0);
  o.expect_gpus = 4;
  d = diagnose(f, o);
  expect_exactly(d, {{"gpu-missing", kCritical, ""}});
  EXPECT_NE(find(d, "gpu-missing")->evidence.find("2 of 4"), std::string::npos) << dump(d);
  EXPECT_EQ(diagnosis_exit_code(d), 2);
  EXPECT_EQ(d.bottleneck, Bottleneck::kHardware);
}

TEST(ArticleDiagnose, Task02LinkX8OfX16) {
  const Diagnosis d = diagnose(import_tasks({2}));
  expect_exactly(d, {{"pcie-link-degraded", kWarning, "GPU0"}});
  EXPECT_NE(find(d, "pcie-link-degraded")->evidence.find("x8"), std::string::npos) << dump(d);
  EXPECT_TRUE(has_symptom(d, "servers-differ")) << dump(d);
  EXPECT_EQ(d.bottleneck, Bottleneck::kHardware);
}

TEST(ArticleDiagnose, Task03SysPathIsInfo) {
  const Diagnosis d = diagnose(import_tasks({3}));
  expect_exactly(d, {{"gpu-pair-crosses-numa", kInfo, "GPU0-GPU1"}});
  EXPECT_EQ(diagnosis_exit_code(d), 0);
}

TEST(ArticleDiagnose, Task04P2pOkAndNotOk) {
  expect_exactly(diagnose(import_tasks({4})), {});
  std::string text = task_text(4);
  // The same output for P2P reads (-p2p r) on a box where they are refused. (-p2p n asks
  // about NVLink, which a PCIe box does not have: NS there is no fault by itself.)
  for (std::size_t at = text.find("OK"); at != std::string::npos; at = text.find("OK", at))
    text.replace(at, 2, "NS");
  const auto cmd = text.find("-p2p n");
  ASSERT_NE(cmd, std::string::npos);
  text.replace(cmd, 6, "-p2p r");
  // The matrix names no GPU model: NS is what GeForce cards always answer, so alone it is info.
  expect_exactly(diagnose(import::import_text(text, "task-04-ns")),
                 {{"p2p-unavailable", kInfo, "GPU0-GPU1"}});
  // Beside an nvidia-smi -L of datacenter cards it is a fault.
  const std::string named =
      "$ nvidia-smi -L\n"
      "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-0b0ddd3d-0000-0000-0000-000000000000)\n"
      "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-0b0ddd3d-0000-0000-0000-000000000001)\n";
  expect_exactly(diagnose(import::import_text(named + text, "task-04-ns")),
                 {{"p2p-unavailable", kWarning, "GPU0-GPU1"}});
}

TEST(ArticleDiagnose, Task05HotPowerCappedSlowGpu0) {
  const Diagnosis d = diagnose(import_tasks({5}));
  expect_exactly(d, {{"clocks-below-target", kWarning, "GPU0"},
                     {"power-throttle", kWarning, "GPU0"},
                     {"thermal-throttle", kWarning, "GPU0"}});
  EXPECT_NE(find(d, "clocks-below-target")->evidence.find("1410"), std::string::npos) << dump(d);
  EXPECT_EQ(d.bottleneck, Bottleneck::kThermal);
  EXPECT_TRUE(has_symptom(d, "degrades-over-time")) << dump(d);
}

TEST(ArticleDiagnose, Task06AggregateSingleBitEcc) {
  const Diagnosis d = diagnose(import_tasks({6}));
  expect_exactly(d, {{"ecc-errors", kWarning, ""}});
  EXPECT_NE(find(d, "ecc-errors")->evidence.find("2"), std::string::npos) << dump(d);
}

TEST(ArticleDiagnose, Task07XidAndFallenOffTheBus) {
  const Diagnosis d = diagnose(import_tasks({7}));
  const Finding* lost = find(d, "gpu-unresponsive");
  ASSERT_NE(lost, nullptr) << dump(d);
  EXPECT_EQ(lost->severity, kCritical);
  const Finding* xid = find(d, "xid-error");
  ASSERT_NE(xid, nullptr) << dump(d);
  EXPECT_NE(xid->evidence.find("31"), std::string::npos) << dump(d);
  // The paste's own time is "now": the Xid is current, not history.
  EXPECT_GE(xid->severity, kWarning) << dump(d);
  EXPECT_EQ(d.findings.front().id, "gpu-unresponsive") << dump(d);
  EXPECT_EQ(diagnosis_exit_code(d), 2);
  EXPECT_EQ(d.bottleneck, Bottleneck::kHardware);
}

TEST(ArticleDiagnose, Task07XidMonthsOldIsHistory) {
  DiagnoseOptions o;
  o.now_unix = 1768297262 + 40 * 86400;  // 40 days after the article's Jan 13 2026 09:41
  const Diagnosis d = diagnose(import_tasks({7}), o);
  const Finding* xid = find(d, "xid-error");
  ASSERT_NE(xid, nullptr) << dump(d);
  EXPECT_EQ(xid->severity, kInfo) << dump(d);
}

TEST(ArticleDiagnose, Task08PeggedCores) {
  const Diagnosis d = diagnose(import_tasks({8}));
  expect_exactly(d, {{"cpu-saturated", kWarning, ""}});
  EXPECT_EQ(d.bottleneck, Bottleneck::kCpu);
}

TEST(ArticleDiagnose, Task09StorageBound) {
  const Diagnosis d = diagnose(import_tasks({9}));
  expect_exactly(d, {{"io-bound", kWarning, "nvme0n1"}});
  EXPECT_EQ(d.bottleneck, Bottleneck::kIo);
}

TEST(ArticleDiagnose, Task10NicNearLineRate) {
  const Diagnosis d = diagnose(import_tasks({10}));
  expect_exactly(d, {{"network-saturated", kWarning, "eth0"}});
}

TEST(ArticleDiagnose, Task11TwoProcessesOnGpu0) {
  const Diagnosis d = diagnose(import_tasks({11}));
  expect_exactly(d, {{"gpu-shared-by-processes", kWarning, "GPU0"}});
  EXPECT_EQ(d.bottleneck, Bottleneck::kMapping);
  EXPECT_TRUE(has_symptom(d, "one-busy-one-idle")) << dump(d);
}

TEST(ArticleDiagnose, Task12NcclSeesX8) {
  const Diagnosis d = diagnose(import_tasks({12}));
  expect_exactly(d, {{"nccl-degraded-path", kWarning, ""}});
  EXPECT_EQ(d.bottleneck, Bottleneck::kComms);
}

TEST(ArticleDiagnose, Task13MemoryImbalance) {
  const Diagnosis d = diagnose(import_tasks({13}));
  expect_exactly(d, {{"memory-imbalance", kWarning, ""}});
  EXPECT_TRUE(has_symptom(d, "one-busy-one-idle")) << dump(d);
}

TEST(ArticleDiagnose, Task14ShellBindingVersusGpuNodes) {
  // numactl --show in the launching shell, with task 3's topology (GPU1 on node 1).
  const Diagnosis d = diagnose(import_tasks({3, 14}));
  expect_exactly(d, {{"numa-misbinding", kInfo, ""}, {"gpu-pair-crosses-numa", kInfo, ""}});
}

// A GPU process bound to the other socket, seen live (fixture tree + fake NVML).
Facts collect_fixture(const std::string& sysroot, const std::string& scenario) {
  const std::string root = std::string(GPUVET_TEST_DATA) + "/fixtures/" + sysroot;
  ::setenv("GPUVET_FAKE_NVML_SCENARIO",
           (std::string(GPUVET_TEST_DATA) + "/scenarios/" + scenario).c_str(), 1);
  auto fs = make_rooted_file_system(root);
  auto runner = make_process_runner();
  auto clock = make_system_clock();
  CollectOptions o;
  o.root = root;
  o.nvml_library = GPUVET_FAKE_NVML;
  o.pressure_window = std::chrono::milliseconds(0);
  o.kernel_log = false;
  return collect_facts(o, Env{*fs, *runner, *clock}).facts;
}

TEST(ArticleDiagnose, Task14LiveProcessOnTheWrongNode) {
  const Diagnosis d = diagnose(collect_fixture("sysroot-2numa-4gpu", "sysroot-2numa-4gpu.json"));
  const Finding* f = find(d, "numa-misbinding");
  ASSERT_NE(f, nullptr) << dump(d);
  EXPECT_EQ(f->severity, kWarning);
  EXPECT_EQ(f->subjects.front(), "pid 4242") << dump(d);
}

// ------------------------------------------------------------------ healthy and faulty nodes

TEST(ScenarioDiagnose, H200IdleAndUnderLoadHaveNoWarning) {
  for (const char* scenario : {"h200-1gpu-idle.json", "h200-1gpu-load.json"}) {
    const Diagnosis d = diagnose(collect_fixture("sysroot-1gpu-vm", scenario));
    expect_exactly(d, {});
    EXPECT_EQ(diagnosis_exit_code(d), 0) << scenario << "\n" << dump(d);
  }
}

TEST(ScenarioDiagnose, DegradedMixNamesEachGpu) {
  const Diagnosis d = diagnose(collect_fixture("sysroot-2numa-4gpu", "degraded-mix.json"));
  EXPECT_TRUE(std::any_of(d.findings.begin(), d.findings.end(), [](const Finding& f) {
    return f.id == "pcie-link-degraded" && f.subjects == std::vector<std::string>{"GPU0"};
  })) << dump(d);
  EXPECT_TRUE(std::any_of(d.findings.begin(), d.findings.end(), [](const Finding& f) {
    return f.id == "thermal-throttle" && f.subjects == std::vector<std::string>{"GPU1"};
  })) << dump(d);
  int ecc_critical = 0;
  for (const auto& f : d.findings)
    if (f.id == "ecc-errors" && f.severity == kCritical) ++ecc_critical;
  EXPECT_EQ(ecc_critical, 2) << dump(d);
  EXPECT_EQ(diagnosis_exit_code(d), 2);
  EXPECT_EQ(d.bottleneck, Bottleneck::kHardware);
}

TEST(ScenarioDiagnose, LostGpuIsCriticalOthersStillReported) {
  const Diagnosis d = diagnose(collect_fixture("sysroot-2numa-4gpu", "fault-gpu-lost.json"));
  const Finding* f = find(d, "gpu-unresponsive");
  ASSERT_NE(f, nullptr) << dump(d);
  EXPECT_EQ(f->subjects.front(), "GPU1");
  EXPECT_EQ(diagnosis_exit_code(d), 2);
}

// Live, the driver's recovery action "Reset" (NVML field 230) on a GPU that otherwise answers:
// critical, the node drained, the action named.
TEST(ScenarioDiagnose, ARecoveryActionFromNvmlIsCritical) {
  const Diagnosis d = diagnose(collect_fixture("sysroot-1gpu-vm", "fault-recovery-reset.json"));
  const Finding* f = find(d, "gpu-unresponsive");
  ASSERT_NE(f, nullptr) << dump(d);
  EXPECT_EQ(f->severity, kCritical);
  EXPECT_EQ(f->subjects.front(), "GPU0");
  EXPECT_NE(f->evidence.find("recovery action is \"Reset\""), std::string::npos) << f->evidence;
  EXPECT_EQ(finding_action(*f), Action::kDrain);
  EXPECT_EQ(diagnosis_exit_code(d), 2);
}

TEST(ScenarioDiagnose, DriverNotLoadedIsGpuMissing) {
  const Diagnosis d =
      diagnose(collect_fixture("sysroot-2numa-4gpu", "fault-driver-not-loaded.json"));
  expect_exactly(d, {{"gpu-missing", kCritical, ""}});
}

TEST(ScenarioDiagnose, HealthyNvlinkNodesAreQuiet) {
  // HGX H100 8-GPU behind NVSwitch (every pair NV18) and HGX H100 4-GPU with direct NVLink:
  // the multi-GPU topology and NVLink rules must stay quiet on healthy nodes.
  for (const char* scenario : {"8gpu-nvlink-h100.json", "4gpu-nvlink-direct.json"}) {
    const Diagnosis d = diagnose(collect_fixture("sysroot-2numa-4gpu", scenario));
    expect_exactly(d, {});
    EXPECT_EQ(diagnosis_exit_code(d), 0) << scenario << "\n" << dump(d);
  }
}

TEST(ScenarioDiagnose, PcieDualSocketIdleIsQuiet) {
  // Two L40S on different sockets, idle at Gen1, CNS across the socket link: all by design.
  const Diagnosis d = diagnose(collect_fixture("sysroot-2numa-4gpu", "2gpu-pcie-sys.json"));
  expect_exactly(d, {});
}

// A node where no triage command is installed: the bundle holds gpuvet's own facts only.
class NothingInstalled final : public CommandRunner {
 public:
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds,
                            std::size_t) const override {
    return Status::not_found(argv[0] + ": No such file or directory");
  }
};

std::vector<std::string> finding_lines(const Diagnosis& d) {
  std::vector<std::string> v;
  for (const auto& f : d.findings) {
    std::string s = std::string(severity_name(f.severity)) + " " + f.id;
    for (const auto& x : f.subjects) s += " " + x;
    v.push_back(s + ": " + f.evidence);
  }
  v.push_back(std::string("bottleneck ") + bottleneck_name(d.bottleneck));
  return v;
}

TEST(ScenarioDiagnose, BundleGivesTheLiveFindings) {
  for (bool redact : {false, true}) {
    const std::string root = std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-2numa-4gpu";
    const Facts live = collect_fixture("sysroot-2numa-4gpu", "degraded-mix.json");
    const auto dir = std::filesystem::temp_directory_path() /
                     ("gpuvet-diag-bundle-" + std::to_string(::getpid()) + (redact ? "r" : ""));
    std::filesystem::remove_all(dir);
    auto fs = make_rooted_file_system(root);
    auto clock = make_system_clock();
    NothingInstalled runner;
    CollectOptions o;
    o.root = root;
    o.nvml_library = GPUVET_FAKE_NVML;
    o.pressure_window = std::chrono::milliseconds(0);
    o.kernel_log = false;
    bundle::CaptureOptions c;
    c.out_dir = dir.string();
    c.redact = redact;
    ASSERT_TRUE(bundle::capture_bundle(c, o, Env{*fs, runner, *clock}).is_ok());
    auto back = import::import_path(dir.string());
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    const Diagnosis from_live = diagnose(live);
    const Diagnosis from_bundle = diagnose(back.value());
    EXPECT_GE(from_live.findings.size(), 4u);
    EXPECT_EQ(finding_lines(from_live), finding_lines(from_bundle)) << "redact " << redact;
    std::filesystem::remove_all(dir);
  }
}

// ------------------------------------------------------------------ the 8 symptom patterns

GpuFacts busy_gpu(int index, int util = 100) {
  GpuFacts g;
  g.index = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.utilization.gpu_pct = util;
  g.clocks.sm_mhz = 1980;
  g.clocks.sm_max_mhz = 1980;
  g.power.draw_w = 600;
  g.power.limit_w = 700;
  g.power.default_limit_w = 700;
  g.memory.total_bytes = 80ull << 30;
  g.memory.used_bytes = 40ull << 30;
  return g;
}

ScaleRun run(const char* workload, int gpus, double thr, double p99, double comm) {
  ScaleRun r;
  r.workload = workload;
  r.preset = "preset";
  r.gpus = gpus;
  r.throughput = thr;
  r.p50_ms = p99 / 2;
  r.p99_ms = p99;
  r.comm_share = comm;
  return r;
}

TEST(SymptomDiagnose, S1UtilisationHighWallClockWorse) {
  Facts f;
  f.gpus = {busy_gpu(0), busy_gpu(1)};
  f.scale_runs = {run("train", 1, 1000, 20, 0.02), run("train", 2, 1200, 30, 0.45)};
  const Diagnosis d = diagnose(f);
  expect_exactly(d, {{"scaling-inefficient", kWarning, ""}});
  EXPECT_TRUE(has_symptom(d, "util-high-wallclock-worse")) << dump(d);
  EXPECT_EQ(d.bottleneck, Bottleneck::kComms);
  // Plumbing is sound, so the framework hint follows, last.
  ASSERT_NE(find(d, "tune-framework"), nullptr) << dump(d);
  EXPECT_EQ(d.findings.back().id, "tune-framework") << dump(d);
}

TEST(SymptomDiagnose, S1FrameworkHintNeverAboveTopology) {
  Facts f;
  f.gpus = {busy_gpu(0), busy_gpu(1)};
  f.gpus[0].pcie.width_current = 8;
  f.gpus[0].pcie.width_max = 16;
  f.scale_runs = {run("train", 1, 1000, 20, 0.02), run("train", 2, 1200, 30, 0.45)};
  const Diagnosis d = diagnose(f);
  EXPECT_EQ(find(d, "tune-framework"), nullptr) << dump(d);
  EXPECT_NE(find(d, "pcie-link-degraded"), nullptr) << dump(d);
}

TEST(SymptomDiagnose, S2OneBusyOneIdle) {
  Facts f;
  f.gpus = {busy_gpu(0), busy_gpu(1, 0)};
  f.gpus[1].power.draw_w = 70;
  f.gpus[1].memory.used_bytes = 0;
  ProcessFacts p;
  p.host_pid = 100;
  p.gpu = 0;
  f.processes = {p};
  const Diagnosis d = diagnose(f);
  expect_exactly(d, {{"gpu-idle-while-peer-busy", kWarning, "GPU1"}});
  EXPECT_TRUE(has_symptom(d, "one-busy-one-idle")) << dump(d);
}

TEST(SymptomDiagnose, S3ClocksFallOverMinutes) {
  Facts f;
  f.gpus = {busy_gpu(0)};
  for (int i = 0; i < 40; ++i) {
    GpuSample s;
    s.gpu = 0;
    s.t_s = i * 10.0;
    s.sm_mhz = i < 20 ? 1980 : 1500;
    s.gpu_c = i < 20 ? 60 : 86;
    s.util_pct = 100;
    f.samples.push_back(s);
  }
  const Diagnosis d = diagnose(f);
  expect_exactly(d, {{"clocks-degrade-over-time", kWarning, "GPU0"}});
  EXPECT_TRUE(has_symptom(d, "degrades-over-time")) << dump(d);
}

TEST(SymptomDiagnose, S4NcclTimeout) {
  Facts f;
  NcclEvent e;
  e.kind = "timeout";
  e.rank = 1;
  e.detail = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=51, OpType=ALLREDUCE)";
  f.nccl_events = {e};
  const Diagnosis d = diagnose(f);
  expect_exactly(d, {{"nccl-error", kCritical, ""}});
  EXPECT_TRUE(has_symptom(d, "hangs-nccl-timeout")) << dump(d);
}

TEST(SymptomDiagnose, S5EveryGpuFull) {
  Facts f;
  f.gpus = {busy_gpu(0), busy_gpu(1)};
  for (auto& g : f.gpus) g.memory.used_bytes = 79ull << 30;
  const Diagnosis d = diagnose(f);
  expect_exactly(d, {{"memory-near-full", kInfo, ""}});
  EXPECT_TRUE(has_symptom(d, "oom-despite-more-gpus")) << dump(d);
}

TEST(SymptomDiagnose, S6ThroughputUpP99Worse) {
  Facts f;
  f.gpus = {busy_gpu(0), busy_gpu(1)};
  f.scale_runs = {run("infer", 1, 100, 21, 0.0), run("infer", 2, 170, 38, 0.3)};
  const Diagnosis d = diagnose(f);
  expect_exactly(d, {{"tail-latency-amplified", kWarning, ""}});
  EXPECT_TRUE(has_symptom(d, "throughput-up-p99-worse")) << dump(d);
}

TEST(SymptomDiagnose, S7ServersDifferHeterogeneousNode) {
  Facts f;
  f.gpus = {busy_gpu(0), busy_gpu(1)};
  f.gpus[1].vbios = "96.00.99.00.01";
  f.gpus[0].vbios = "96.00.61.00.01";
  const Diagnosis d = diagnose(f);
  expect_exactly(d, {{"heterogeneous-gpus", kWarning, ""}});
  EXPECT_TRUE(has_symptom(d, "servers-differ")) << dump(d);
}

TEST(SymptomDiagnose, S8IoSlowsWhileTraining) {
  const Diagnosis d = diagnose(import_tasks({9, 10}));
  expect_exactly(d, {{"io-bound", kWarning, "nvme0n1"}, {"network-saturated", kWarning, "eth0"}});
  EXPECT_TRUE(has_symptom(d, "io-slows-during-training")) << dump(d);
}

// ------------------------------------------------------------------ the report

TEST(DiagnoseReport, JsonFollowsTheContract) {
  const Facts f = import_tasks({2, 7});
  const Diagnosis d = diagnose(f);
  const std::string j = diagnosis_to_json(f, d, JsonOptions{"diagnose --from", 2});
  for (const char* key :
       {"\"schema\": \"gpuvet.report/1\"", "\"findings\"", "\"bottleneck\"", "\"evidence\"",
        "\"meaning\"", "\"decision\"", "\"notes\"", "\"subjects\"", "\"severity\": \"critical\""})
    EXPECT_NE(j.find(key), std::string::npos) << key;
}

TEST(DiagnoseReport, TextShowsWorstFirstWithEvidenceMeaningDecision) {
  const Facts f = import_tasks({2, 7});
  const Diagnosis d = diagnose(f);
  const std::string t = render_diagnosis_text(f, d);
  const auto critical = t.find("CRITICAL");
  const auto warning = t.find("WARNING ");
  ASSERT_NE(critical, std::string::npos) << t;
  ASSERT_NE(warning, std::string::npos) << t;
  EXPECT_LT(critical, warning) << t;
  EXPECT_NE(t.find("seen:"), std::string::npos) << t;
  EXPECT_NE(t.find("means:"), std::string::npos) << t;
  EXPECT_NE(t.find("do:"), std::string::npos) << t;
  EXPECT_EQ(t.find("\x1b["), std::string::npos) << "colour without a TTY";
}

}  // namespace
}  // namespace gpuvet
