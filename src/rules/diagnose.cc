// The rules engine: runs the rule groups over the facts, orders the findings by the
// article's triage order, decides the bottleneck class and recognises symptom patterns.
#include <algorithm>
#include <ctime>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "gpuvet/diagnose.h"
#include "rules/catalog_table.h"
#include "rules/rule.h"

namespace gpuvet {
namespace {

TriageStep step_of(const Finding& f) {
  const CatalogEntry* e = find_catalog_entry(f.id);
  return e ? e->step : TriageStep::kSystem;
}

Bottleneck class_of(const Finding& f) {
  if (f.bottleneck) return *f.bottleneck;
  const CatalogEntry* e = find_catalog_entry(f.id);
  return e ? e->bottleneck : Bottleneck::kUnknown;
}

// Worst first; at equal severity the triage step (confirm → classify → topology → system →
// framework), so a framework hint never sits above an open hardware or topology finding.
void order_findings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::make_tuple(-static_cast<int>(a.severity), static_cast<int>(step_of(a)), a.id,
                           a.subjects) < std::make_tuple(-static_cast<int>(b.severity),
                                                         static_cast<int>(step_of(b)), b.id,
                                                         b.subjects);
  });
  findings.erase(std::unique(findings.begin(), findings.end(),
                             [](const Finding& a, const Finding& b) {
                               return a.id == b.id && a.subjects == b.subjects &&
                                      a.evidence == b.evidence;
                             }),
                 findings.end());
}

std::string subjects_text(const Finding& f) {
  std::string s;
  for (const auto& x : f.subjects) s += (s.empty() ? "" : ", ") + x;
  return s;
}

void decide_bottleneck(const Facts& facts, const Thresholds& t, Diagnosis& d) {
  for (const auto& f : d.findings) {
    if (f.severity < Severity::kWarning) break;
    const Bottleneck b = class_of(f);
    if (b == Bottleneck::kNone) continue;
    d.bottleneck = b;
    d.bottleneck_reason =
        f.id + (f.subjects.empty() ? "" : " (" + subjects_text(f) + ")") + ": " + f.evidence;
    return;
  }
  if (facts.gpus.empty()) {
    d.bottleneck = Bottleneck::kUnknown;
    d.bottleneck_reason = "no GPU facts to judge from";
    return;
  }
  // Nothing wrong found. GPUs that are all busy at full clocks are limited by the work
  // itself; otherwise there is no bottleneck to name.
  const bool all_busy_at_speed =
      std::all_of(facts.gpus.begin(), facts.gpus.end(), [&](const GpuFacts& g) {
        if (!rules::is_busy(facts, g, t)) return false;
        if (!g.clocks.sm_mhz || !g.clocks.sm_max_mhz || *g.clocks.sm_max_mhz <= 0) return false;
        return *g.clocks.sm_mhz >= t.clocks_below_fraction * *g.clocks.sm_max_mhz;
      });
  if (all_busy_at_speed) {
    d.bottleneck = Bottleneck::kCompute;
    d.bottleneck_reason = "every GPU is busy at full clocks and nothing else limits it";
  } else {
    d.bottleneck = Bottleneck::kNone;
    d.bottleneck_reason = "no warning or critical finding";
  }
}

void recognise_symptoms(Diagnosis& d) {
  for (const auto& rule : rules::kSymptomRules) {
    SymptomMatch m;
    m.id = rule.symptom;
    for (const auto& f : d.findings) {
      const CatalogEntry* e = find_catalog_entry(f.id);
      const Severity needed =
          e && e->default_severity == Severity::kInfo ? Severity::kInfo : Severity::kWarning;
      if (f.severity < needed) continue;
      if (std::none_of(std::begin(rule.any_of), std::end(rule.any_of),
                       [&](const char* id) { return id && f.id == id; }))
        continue;
      m.because.push_back(f.subjects.empty() ? f.id : f.id + " (" + subjects_text(f) + ")");
    }
    if (!m.because.empty()) d.symptoms.push_back(std::move(m));
  }
}

// What the facts could not show, said once each, so "no finding" is never read as "checked".
void coverage_notes(const Facts& facts, std::vector<std::string>& notes) {
  auto add = [&](std::string s) {
    if (std::find(notes.begin(), notes.end(), s) == notes.end()) notes.push_back(std::move(s));
  };
  const bool offline = !facts.imported.empty();
  if (!offline && !facts.kernel_log.readable && !facts.kernel_log.source.empty())
    add("Xid check skipped: kernel log " + facts.kernel_log.source + " not readable" +
        (facts.kernel_log.why_unreadable ? " (" + *facts.kernel_log.why_unreadable + ")" : ""));
  if (!offline && facts.kernel_log.source.empty())
    add("Xid check skipped: the kernel log was not read");
  if (!offline && !facts.host.pressure)
    add("CPU, disk and NIC pressure not sampled: cpu-saturated, io-bound and network-saturated "
        "not checked");
  if (facts.scale_runs.empty())
    add("no 1-vs-N scaling measurement: run `gpuvet scale` to confirm the problem on wall-clock "
        "time, not utilisation");
}

// Parts of the playbook an input can cover without listing the GPUs: the kernel log (Xids,
// AER, IOMMU, the driver's failures), NCCL and hang logs, lspci, DCGM, benchmarks.
bool judged_without_gpus(const Facts& f) {
  // A kernel log is judged whole: no Xid, AER, IOMMU fault or driver failure in it is an
  // answer for that part.
  static constexpr std::string_view kParts[] = {"kernel-log",
                                                "nccl-debug-log",
                                                "nccl-tests",
                                                "nccl-ras",
                                                "nccl-ras-json",
                                                "pytorch-flight-recorder",
                                                "lspci",
                                                "dcgmi-diag",
                                                "dcgmi-health",
                                                "nvbandwidth",
                                                "bandwidthTest",
                                                "p2pBandwidthLatencyTest",
                                                "simpleP2P",
                                                "mpstat",
                                                "iostat-x",
                                                "sar-net-dev",
                                                "psi"};
  for (const auto& imp : f.imported)
    for (auto part : kParts)
      if (imp.format == part) return true;
  // The user's job (traces, Inspector output, step logs) is judged whole without a GPU's facts.
  return !f.processes.empty() || !f.nccl_events.empty() || !f.collective_ranks.empty() ||
         !f.health_checks.empty() || !f.measurements.empty() || !f.job_ranks.empty();
}

}  // namespace

Diagnosis diagnose(const Facts& facts, const DiagnoseOptions& options) {
  rules::Context c{facts, options.thresholds, options};
  rules::Emitter e;
  rules::check_inventory(c, e);
  rules::check_gpu_health(c, e);
  rules::check_topology(c, e);
  rules::check_host(c, e);
  rules::check_mapping(c, e);
  rules::check_collectives(c, e);
  rules::check_host_threads(c, e);
  rules::check_job(c, e);  // after the GPU checks: a straggler cites its GPU's findings
  rules::check_measurements(c, e);  // last: it looks at what the others found

  Diagnosis d;
  d.findings = e.take_findings();
  for (auto& f : d.findings)
    if (!find_catalog_entry(f.id))  // a rule bug must still show, never vanish
      f.evidence = "(uncatalogued id) " + f.evidence;
  order_findings(d.findings);
  d.worst = Severity::kOk;
  for (const auto& f : d.findings) d.worst = std::max(d.worst, f.severity);
  // Acks hold against the wall clock: an offline paste is judged by today's acks.
  apply_acks(d, options.acks,
             options.now_unix.value_or(static_cast<std::int64_t>(std::time(nullptr))));
  decide_bottleneck(facts, options.thresholds, d);
  recognise_symptoms(d);
  // Offline input that describes no GPU. A part of the playbook it does cover (a kernel log,
  // an NCCL or hang log, lspci, a benchmark, DCGM) is judged in full, and a note says the GPU
  // checks were not done; input with nothing to judge at all is incomplete (exit 3), since
  // "no finding" would be read as "checked". (Live, no GPU is the finding gpu-missing.)
  if (!facts.imported.empty() && facts.gpus.empty()) {
    if (judged_without_gpus(facts))
      d.notes.push_back(
          "GPU checks not done: no nvidia-smi, topo or gpuvet output in the input (paste "
          "`nvidia-smi -q` and `nvidia-smi topo -m` for them); what the input covers was judged");
    else
      d.incomplete.push_back(
          "GPUs could not be judged: no GPU facts in the input (no nvidia-smi, topo or gpuvet "
          "output was recognised)");
  }
  for (const auto& p : facts.input_problems) d.incomplete.push_back(p);
  d.notes.insert(d.notes.begin(), d.incomplete.begin(), d.incomplete.end());
  for (const auto& n : facts.notes)
    if (std::find(d.incomplete.begin(), d.incomplete.end(), n) == d.incomplete.end())
      d.notes.push_back(n);
  for (auto& n : e.take_notes()) d.notes.push_back(std::move(n));
  coverage_notes(facts, d.notes);
  if (auto n = acs_unknown_note(facts)) d.notes.push_back(std::move(*n));
  d.coverage = compute_coverage(facts);
  return d;
}

int diagnosis_exit_code(const Diagnosis& d) {
  if (d.worst < Severity::kCritical && !d.incomplete.empty()) return 3;
  return severity_exit_code(d.worst);
}

int severity_exit_code(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return 2;
    case Severity::kWarning:
      return 1;
    default:
      return 0;
  }
}

}  // namespace gpuvet
