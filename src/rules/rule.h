// rules/rule.h — what a rule sees and how it reports: the private seam between the engine
// (diagnose.cc) and the rule groups (rules_*.cc).
//
// A rule group is a plain function of (Context, Emitter&). It reads the facts, decides,
// and emits {id, severity, subjects, evidence}; meaning and decision come from the
// catalog. Rules never throw and never do I/O. Benign cases (an idle GPU downshifting,
// a VM hiding its PCIe link, a one-GPU box without P2P) emit nothing, or a note when the
// check could not be made.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"
#include "hw/facts_query.h"
#include "rules/catalog_table.h"

namespace gpuvet::rules {

struct Context {
  const Facts& facts;
  const Thresholds& t;
  const DiagnoseOptions& options;
};

class Emitter {
 public:
  // With the catalog's default severity. `id` is checked against the catalog when gpuvet is
  // compiled (FindingId, rules/catalog_table.h).
  // Each add returns the finding it added (valid until the next add), for measure().
  Finding& add(FindingId id, std::vector<std::string> subjects, std::string evidence);
  Finding& add(FindingId id, Severity severity, std::vector<std::string> subjects,
               std::string evidence);
  // The full form: a more precise bottleneck class and an instance-specific decision;
  // `finding.id` is set from `id`.
  Finding& add(FindingId id, Finding finding);
  void note(std::string text);

  const std::vector<Finding>& findings() const { return findings_; }
  const std::vector<std::string>& notes() const { return notes_; }
  std::vector<Finding> take_findings() { return std::move(findings_); }
  std::vector<std::string> take_notes() { return std::move(notes_); }

 private:
  std::vector<Finding> findings_;
  std::vector<std::string> notes_;
};

// ---- shared reading helpers (rule.cc)

std::string gpu_subject(int index);                      // "GPU3"
std::string pair_subject(int a, int b);                  // "GPU0-GPU1" (smaller index first)
std::string gpu_set_subject(const std::set<int>& gpus);  // {0,1,2,3,8} → "GPU0–3,8"

// The GPU pairs one cause applies to, for one finding however many there are (a 1024-GPU node
// has half a million SYS pairs; a finding per pair made diagnose quadratic and its JSON
// gigabytes). Each pair is given with its sides when the cause has them: `a` from the first
// side (say NUMA node 0), `b` from the second.
struct PairSet {
  std::vector<std::pair<int, int>> pairs;

  // Each pair's own subject ("GPU0-GPU4") up to kListed pairs, so that acknowledgements and
  // baselines keep naming pairs on ordinary nodes; past that one compact subject (compact()).
  static constexpr std::size_t kListed = 64;
  std::vector<std::string> subjects() const;
  // "GPU0–3 × GPU4–7" (every pair across two sets), "all 28 pairs of GPU0–7", or "N pairs
  // among GPU0–1023".
  std::string compact() const;
  // For evidence: the one pair's subject, "N pairs (GPU0–3 × GPU4–7)", or compact() where it
  // says the count itself ("all 28 pairs of GPU0–7").
  std::string phrase() const;
};
// Lookups shared with bench and scale (hw/facts_query.h), named here as the rules use them.
using hw::find_gpu;
using hw::find_gpu_by_bus;
using hw::format_number;
using hw::gpu_node;
using hw::node_cpus;
using hw::pcie_gbps;

// Share of the power limit drawn now (draw / enforced or management limit), when both known.
std::optional<double> power_fraction(const GpuFacts& g);
// Share of memory used, when both known.
std::optional<double> memory_fraction(const GpuFacts& g);

// Busy: utilisation at or above busy_util_pct, or (utilisation unknown) drawing at least
// busy_power_fraction of the limit.
bool is_busy(const Facts& f, const GpuFacts& g, const Thresholds& t);
// Idle: utilisation at or under idle_util_pct (or the only clock-event reason is "idle")
// and no compute process on it. Unknown is neither busy nor idle.
bool is_idle(const Facts& f, const GpuFacts& g, const Thresholds& t);
// A short "util 97 %, 280/300 W, P0" phrase for evidence; empty parts omitted.
std::string load_phrase(const GpuFacts& g);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

// Records the numbers a rule compared (JSON `observed`, `expected`): `observed` of
// `quantity` in `unit` against `expected`, which is the least (kAtLeast), the most (kAtMost)
// or the exact value the rule accepts. Returns `f`.
Finding& measure(Finding& f, std::string quantity, std::string unit, double observed,
                 double expected, Bound bound);

// ---- rule groups

void check_inventory(const Context& c, Emitter& e);   // gpu-missing, gpu-unresponsive,
                                                      // heterogeneous-gpus, driver-slow
void check_gpu_health(const Context& c, Emitter& e);  // thermal, power, clocks, ECC, Xid,
                                                      // utilization-misleading, drift
// Over a time series (rules_time.cc), from check_gpu_health: drift, a GPU lagging its peers,
// thermal margin, late clock limits, counters rising.
void check_over_time(const Context& c, Emitter& e);
void check_topology(const Context& c, Emitter& e);      // PCIe, pairs, P2P, NVLink, fabric,
                                                        // ACS, NCCL log
void check_host(const Context& c, Emitter& e);          // cpu-saturated, io-bound,
                                                        // network-saturated
void check_mapping(const Context& c, Emitter& e);       // processes, memory, NUMA binding
void check_measurements(const Context& c, Emitter& e);  // bandwidth, scaling, tail latency
// A distributed job's hang (rules_hang.cc): collective-hang-culprit, -frozen-process,
// -transport, collective-hang, from analyse_hang().
void check_collectives(const Context& c, Emitter& e);
// The user's job (rules_job.cc): job-breakdown, job-input-starved, job-launch-bound,
// job-host-sync, job-comm-exposed, job-straggler-rank, job-step-time-drift; and, live,
// gpu-waits-on-host-thread.
void check_job(const Context& c, Emitter& e);
void check_host_threads(const Context& c, Emitter& e);

}  // namespace gpuvet::rules
