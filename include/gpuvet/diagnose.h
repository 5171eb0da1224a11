// gpuvet/diagnose.h — the findings catalog, the rules engine and the verdict.
//
// `diagnose` reads a Facts model (live or imported, with any measurements in it) and
// returns findings: each names a catalog id, a severity, the subjects it is about and the
// concrete evidence it came from. What a finding means and what to do next live in the
// catalog (one append-only table, docs/findings.md is generated from it), so rules only
// say *what they saw*. From the findings come the bottleneck class and the article's
// symptom patterns, and the findings are ordered by the triage order: worst first, and at
// equal severity the article's five steps (is it real → what class → topology → system
// things → only then the framework).
//
// Everything here is a pure function of its inputs: thread-safe, no I/O except
// load_thresholds().
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/severity.h"
#include "gpuvet/status.h"

namespace gpuvet {

enum class Bottleneck {
  kNone,
  kUnknown,
  kComms,
  kCpu,
  kIo,
  kThermal,
  kMapping,
  kHardware,
  kCompute,
  kMemory,
};
const char* bottleneck_name(Bottleneck b);  // "none", "unknown", "comms", …

// The article's "Mode d'intervention rapide", in order.
enum class TriageStep {
  kConfirm = 1,    // is the problem real (wall clock, not utilisation); is every GPU there
  kClassify = 2,   // which class: compute, memory, comms, CPU, I/O, thermal
  kTopology = 3,   // links, P2P, NVLink, NUMA locality
  kSystem = 4,     // clocks and throttling, Xid and ECC, disk and network
  kFramework = 5,  // only then NCCL settings, buckets, batch sizes
};
const char* triage_step_name(TriageStep s);  // "confirm", "classify", …

// The measuring commands whose verdict a finding also decides (their report section and
// exit code), besides diagnose, which reports every finding.
enum MeasuredBy : unsigned {
  kByDiagnoseOnly = 0,
  kByBench = 1u << 0,
  kByScale = 1u << 1,
  kByWatch = 1u << 2,  // a time series (gpuvet watch, scale --duration, a recorded dmon)
};

// What to do about a finding, from a small fixed set (JSON `action`, docs/json-schema.md):
//   none             nothing to do (a fact worth knowing, or an expected state)
//   watch            nothing now; keep an eye on it (a counter that may rise, old history)
//   fix-config       a setting is wrong: BIOS, driver, power cap, affinity, NCCL, fabric manager
//   reseat-or-rma    the hardware is suspect: reseat, swap the riser or cable, or return it
//   drain            take the node (or GPU) out of service now: it cannot run jobs correctly
//   fix-application  the job itself is the cause: its code, launch, binding or data path
// kUnset is not an action: a catalog row without one (a test checks every row has one).
enum class Action { kUnset, kNone, kWatch, kFixConfig, kReseatOrRma, kDrain, kFixApplication };
const char* action_name(Action a);  // "none", "watch", …; "" for kUnset
std::optional<Action> parse_action(std::string_view name);

struct CatalogEntry {
  const char* id;        // stable kebab-case id, never renamed
  const char* title;     // one line
  const char* category;  // "topology", "pcie", "nvlink", "thermal", "power", …
  Severity default_severity;
  TriageStep step;
  Bottleneck bottleneck;  // the class this finding points at (kNone: not a bottleneck)
  const char* fires_when;
  const char* meaning;
  const char* decision;
  const char* article;                     // "task 2", "symptom 1", "story 3", "measurement", …
  unsigned measured_by = kByDiagnoseOnly;  // MeasuredBy bits
  Action action = Action::kUnset;          // what to do about it by default
};

// Every entry, in catalog order (append-only).
std::span<const CatalogEntry> finding_catalog();
const CatalogEntry* find_catalog_entry(std::string_view id);
// Whether the finding `id` decides the verdict of `command` (kByBench or kByScale).
bool finding_measured_by(std::string_view id, MeasuredBy command);

// Whether an expected value is the least acceptable, the most acceptable or the exact one.
enum class Bound { kAtLeast, kAtMost, kExactly };
const char* bound_name(Bound b);  // "at-least", "at-most", "exactly"

// One number of a finding: what was observed, or what was expected (a threshold, a rating).
struct FindingValue {
  std::string quantity;  // snake_case: "sm_clock", "pcie_width", "temperature", "bandwidth", …
  double value = 0;
  std::string unit;               // "MHz", "lanes", "C", "W", "GB/s", "count", "fraction", …
  Bound bound = Bound::kExactly;  // meaningful for `expected` only
};

// An operator's acknowledgement of a known condition, from acks.toml: while it holds, the
// finding is shown as acknowledged and does not move a verdict or an exit code.
struct AckNote {
  std::string reason;
  std::int64_t expires_unix = 0;
  std::optional<std::string> by;
};

struct Finding {
  std::string id;
  Severity severity = Severity::kInfo;
  std::vector<std::string> subjects;  // "GPU0", "GPU0-GPU1", "pid 42", "nvme0n1", "eth0"
  std::string evidence;               // what was seen, with numbers
  // A rule may name the class more precisely than the catalog does (scaling-inefficient:
  // comms or compute or cpu). Empty: the catalog's.
  std::optional<Bottleneck> bottleneck;
  // Extra decision text for this instance (e.g. "fix the topology findings first").
  std::optional<std::string> decision_note;
  // The number the rule compared and what it compared it with (JSON `observed`, `expected`);
  // empty when the finding is not a comparison of numbers.
  std::optional<FindingValue> observed;
  std::optional<FindingValue> expected;
  // The action for this instance when its severity calls for another than the catalog's
  // (a recent Xid 79: drain; the same Xid days ago: watch). Empty: the catalog's.
  std::optional<Action> action;
  // Set when an unexpired ack covers it (its id, every subject, its severity or worse).
  std::optional<AckNote> acknowledged;
  // What fault this is, more precisely than its id, for the fleet's memory of repairs
  // ("xid-79"). Empty: the id (see finding_fault).
  std::optional<std::string> fault;
};

// The action a finding calls for: its own, else its catalog row's, else none.
Action finding_action(const Finding& f);
// What to do, as a sentence: the catalog row's decision when the finding's action is the row's,
// else the sentence of its own action (a rule that changed the action to fix-config must not
// print the row's "reseat"). The finding's decision_note comes before it where shown.
std::string finding_decision(const Finding& f);
// The fault a repair addresses (JSON `fault`): for a warning or worse whose action is to reseat,
// return or drain, its own fault key ("xid-79") else its id ("gpu-unresponsive"); empty for
// anything else (a setting, a job, something to watch). The fleet counts these per node and
// GPU to tell a fault that comes back after each reset from one a reset cured.
std::optional<std::string> finding_fault(const Finding& f);

struct SymptomPattern {
  const char* id;  // "util-high-wallclock-worse", …
  const char* title;
  const char* root_cause;
  const char* fix;
  const char* article;  // "symptom 1"
};
std::span<const SymptomPattern> symptom_catalog();

struct SymptomMatch {
  std::string id;
  std::vector<std::string> because;  // finding ids (and subjects) that make it match
};

// Every threshold a rule uses, with its default. Overridable from a TOML file.
struct Thresholds {
  double busy_util_pct = 50;            // a GPU at or above this utilisation is busy
  double busy_power_fraction = 0.5;     // … or drawing this share of its power limit
  double idle_util_pct = 5;             // at or below: idle
  double clocks_below_fraction = 0.85;  // busy SM clock under this share of max
  int thermal_margin_c = 5;             // T.Limit margin at or under: at the slowdown point
  int hot_temp_c = 83;                  // when the GPU gives no limit: NVIDIA's usual target
  int slowdown_headroom_c = 3;          // within this of the slowdown temperature
  double power_at_limit_fraction = 0.97;
  double power_limit_below_default_fraction = 0.95;
  double memory_full_fraction = 0.95;
  double memory_imbalance_full_fraction = 0.90;
  double memory_imbalance_empty_fraction = 0.10;
  double cpu_pegged_pct = 95;
  double iowait_pct = 10;
  double psi_io_some_pct = 20;  // PSI: share of time some task waited for I/O
  double disk_util_pct = 90;
  double nic_util_pct = 80;
  double nic_unknown_speed_gbit_s = 7;  // line rate unknown: a 10 GbE link is near full here
  double xid_window_h = 24;             // older Xids are history (info)
  double h2d_fraction = 0.6;            // measured host↔device under this share of the link
  double p2p_fraction = 0.6;            // measured peer bandwidth under this share of the path
  double scaling_efficiency = 0.8;
  double comm_share_high = 0.3;
  double tail_p99_ratio = 1.5;              // p99(N)/p99(1) at or above
  double clock_drift_fraction = 0.10;       // sustained: SM clock or throughput falls this much
  double gpu_lags_peers_fraction = 0.9;     // a busy GPU's clock under this share of its peers'
  double series_min_span_s = 60;            // a time series shorter than this shows no trend
  double misleading_power_fraction = 0.35;  // util ≥ 90 % while power under this share
  double driver_call_slow_ms = 1000;        // an NVML call this slow is itself a finding
  int pcie_replay_warn_count = 50;          // fewer replays since driver load: info only
  int pcie_aer_corrected_warn_count = 10;   // fewer corrected AER errors in the log: info only
  // The job's own time (profiler traces, step logs): shares of the step, median over steps.
  double job_input_idle_fraction = 0.15;     // GPU idle while the host is in the data loader
  double job_launch_idle_fraction = 0.15;    // gaps between kernels no longer than a launch
  double job_sync_idle_fraction = 0.10;      // GPU idle after the host synchronised
  double job_comm_exposed_fraction = 0.15;   // communication with no compute beside it
  double job_straggler_cost_fraction = 0.10;  // what the last rank to arrive costs the others
  double job_step_drift_fraction = 0.15;     // last quarter's median step over the first's
};

// Reads a TOML file with a [thresholds] table (keys as above). Unknown keys and
// wrong types are errors (exit code 3 at the CLI), never silently ignored.
Result<Thresholds> load_thresholds(const std::string& path);
Result<Thresholds> parse_thresholds(std::string_view toml_text, const std::string& origin);

struct ThresholdInfo {
  std::string name;  // the TOML key
  double value;
  std::string description;
};
// Every threshold with its value in `t` and what it decides, in documentation order.
std::vector<ThresholdInfo> describe_thresholds(const Thresholds& t);

// One entry of acks.toml (`[[ack]]`: finding, subjects, severity, reason, expires, by). It
// silences a finding only for the subjects it lists and up to the severity it names; a new
// subject, a worse severity or an expired ack is never silenced. Like Alertmanager's
// silences, every ack in force is said in the report.
struct Ack {
  std::string finding;
  std::vector<std::string> subjects;
  Severity severity = Severity::kWarning;
  std::string reason;
  std::int64_t expires_unix = 0;  // the end of the day it names (UTC), or its exact time
  std::optional<std::string> by;
  std::string origin;  // "acks.toml, ack 2"
};

// kInvalidInput naming the file and the entry: unknown keys, a missing id, subject, reason or
// expiry, a finding id not in the catalog, an expiry more than a year ahead.
Result<std::vector<Ack>> parse_acks(std::string_view toml_text, const std::string& origin,
                                    std::int64_t now_unix);
Result<std::vector<Ack>> load_acks(const std::string& path, std::int64_t now_unix);

struct DiagnoseOptions {
  std::optional<int> expect_gpus;  // --expect-gpus N
  Thresholds thresholds;
  std::vector<Ack> acks;  // applied last: acknowledged findings leave the verdict
  // Wall clock and uptime "now" for Xid ages. Empty (offline): the capture's own time, or
  // the latest event in it.
  std::optional<std::int64_t> now_unix;
  std::optional<double> now_uptime_s;
};

// Coverage: which of the playbook's checks ran on what evidence (src/rules/coverage.cc). A
// check is "checked" only when the facts its rules need are there for every GPU (or for the
// host), "partial" when for some, "not-checked" when for none, "not-applicable" when the
// machine has nothing to check (peer checks on a one-GPU box).
enum class CoverageStatus { kChecked, kPartial, kNotChecked, kNotApplicable };
const char* coverage_status_name(CoverageStatus s);  // "checked", "partial", …

struct CoverageItem {
  // Stable id, never renamed: "gpu-inventory", "topology", "p2p", "nvlink", "pcie-link",
  // "acs-iommu", "numa-affinity", "clocks-throttle", "power", "thermal", "ecc", "xid",
  // "processes", "host-cpu", "host-io", "host-network", "measurements".
  std::string check;
  std::string title;  // for people: "ECC", "ACS/IOMMU", "host CPU"
  CoverageStatus status = CoverageStatus::kNotChecked;
  std::string evidence;    // the sources it ran on: "live NVML", "nvidia-smi, topo-m"
  std::string missing;     // what is not known, and for which GPUs (empty when checked)
  std::string how_to_get;  // the command that would provide it (empty when checked)
  // A measurement the node's state does not need (bench, scale): its absence does not stop
  // an all-clear, but it is still said.
  bool optional = false;
};

// The coverage of `facts`, in playbook order.
std::vector<CoverageItem> compute_coverage(const Facts& facts);
// PIX/PXB/NODE GPU pairs whose ACS state is unknown, said with the command to paste; empty
// when every such pair's ACS state is known (or there is none).
std::optional<std::string> acs_unknown_note(const Facts& facts);

struct Diagnosis {
  std::vector<Finding> findings;  // triage order: worst first, then step, then id
  Bottleneck bottleneck = Bottleneck::kUnknown;
  std::string bottleneck_reason;  // which finding (or what) decided the class
  std::vector<SymptomMatch> symptoms;
  std::vector<std::string> notes;  // what could not be checked and why
  Severity worst = Severity::kOk;
  // Why the input does not allow a full verdict (offline input without any GPU facts, a
  // capture bundle without its manifest, two GPUs on one PCI address). Each is also a note.
  // Non-empty: exit 3 ("could not do its job") unless a finding is critical.
  std::vector<std::string> incomplete;
  std::vector<CoverageItem> coverage;  // which checks ran on what evidence (compute_coverage)
};

Diagnosis diagnose(const Facts& facts, const DiagnoseOptions& options = {});

// ---- a distributed job's hang: which rank did not arrive (src/rules/rules_hang.cc)
//
// The per-rank collective state of Facts::collective_ranks (PyTorch logs, flight-recorder
// dumps, NCCL RAS), joined by rank within each process group and judged: the collective the
// ranks wait in is the highest last-enqueued sequence number among them; a rank below it did
// not arrive; one that enqueued it but did not complete it while its peers did is stuck inside;
// a few ranks one op ahead of all the others ran ahead (a desynchronised code path); every rank
// at -1 is a frozen process, not comms; every rank with nothing completed is a transport that
// never worked. The findings collective-hang-* are made from this; `gpuvet culprit` shows it.

// One rank of a process group as the analysis sees it.
struct HangRank {
  int rank = 0;
  // "waiting" (in the collective, like its peers), "did-not-arrive", "stuck-inside",
  // "ran-ahead", "frozen", "missing" (no input names it), "silent" (its NCCL lines name it,
  // nothing says where its collectives stood), "done" (completed everything it enqueued, no
  // hang), "ras-missing", "ras-dead", "ras-outlier".
  std::string place;
  std::optional<std::int64_t> last_enqueued;
  std::optional<std::int64_t> last_started;
  std::optional<std::int64_t> last_completed;
  bool timed_out = false;  // its own watchdog timed out
  std::optional<std::string> host;
  std::optional<int> pid;
  std::optional<int> cuda_dev;
  std::optional<std::string> gpu_uuid;
  std::optional<std::string> pci_bus_id;
  std::vector<std::string> errors;   // its own log's error lines
  std::vector<std::string> kernel;   // the kernel log's Xids on its GPU ("Xid 79 …")
  std::vector<std::string> sources;  // inputs that name it ("rank3.log", …)
};

struct HangGroup {
  std::string pg;  // PyTorch PG id ("0"), "?" when the logs print none; RAS: the communicator
  std::optional<std::string> pg_name;
  // "did-not-arrive", "stuck-inside", "ran-ahead", "frozen-process", "transport-never-worked",
  // "all-stuck", "missing-ranks", "ras-missing", "ras-mismatch", "no-hang"
  std::string signature;
  bool hang = false;  // a watchdog timeout, a stuck watchdog or RAS trouble in this group
  std::optional<std::int64_t> seq;  // the collective the others wait in
  std::optional<std::string> op;    // its type ("ALLREDUCE", "nccl:all_reduce")
  std::optional<std::int64_t> timeout_ms;
  std::optional<int> world_size;
  std::vector<int> culprits;    // the ranks named, in order
  std::vector<HangRank> ranks;  // every rank known, by rank
  std::string summary;          // one sentence: what the signature means here
};

struct HangAnalysis {
  std::vector<HangGroup> groups;      // groups with a hang first, then by PG
  bool any_collective_state = false;  // the facts hold some rank's collective state
  bool any_hang() const;
};

HangAnalysis analyse_hang(const Facts& facts);

// The exit code a finding of this severity calls for: 0 ok/info, 1 warning, 2 critical.
int severity_exit_code(Severity s);
// Marks the findings an unexpired ack covers and notes every ack in force or expired; the
// verdict (worst) then leaves the acknowledged ones out. diagnose() calls it.
void apply_acks(Diagnosis& d, const std::vector<Ack>& acks, std::int64_t now_unix);

// 2 when a finding is critical; else 3 when the verdict is incomplete (Diagnosis::incomplete);
// else severity_exit_code of the worst finding.
int diagnosis_exit_code(const Diagnosis& d);

}  // namespace gpuvet
