// src/gate/gate.cc — the gate's verdict, reason line and exit code, and floors from measured
// bandwidth.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "core/util.h"
#include "gpuvet/gate.h"

namespace gpuvet {

const char* gate_verdict_name(GateVerdict v) {
  switch (v) {
    case GateVerdict::kPass:
      return "pass";
    case GateVerdict::kFail:
      return "fail";
    case GateVerdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

const char* gate_profile_name(GateProfile p) { return p == GateProfile::kFull ? "full" : "quick"; }

Result<ExitStyle> parse_exit_style(std::string_view name) {
  if (name == "gpuvet") return ExitStyle::kGpuvet;
  if (name == "nagios") return ExitStyle::kNagios;
  if (name == "npd") return ExitStyle::kNpd;
  if (name == "slurm") return ExitStyle::kSlurm;
  return Status::invalid_input(
      fmt::format("unknown exit style '{}' (gpuvet, nagios, npd or slurm)", name));
}

const char* exit_style_name(ExitStyle s) {
  switch (s) {
    case ExitStyle::kGpuvet:
      return "gpuvet";
    case ExitStyle::kNagios:
      return "nagios";
    case ExitStyle::kNpd:
      return "npd";
    case ExitStyle::kSlurm:
      return "slurm";
  }
  return "gpuvet";
}

int gate_unusable_exit_code(ExitStyle s) { return s == ExitStyle::kNpd ? 2 : 3; }

std::vector<Floor> floors_from(const std::vector<BandwidthValue>& bandwidth, double fraction,
                               std::string_view source) {
  // One floor per (key, subject): the best value measured (all-reduce: at its largest size).
  std::map<std::pair<std::string, std::string>, BandwidthValue> best;
  for (const auto& v : bandwidth) {
    auto [it, fresh] = best.emplace(std::pair{v.key, v.subject}, v);
    if (fresh) continue;
    if (v.key == "allreduce_busbw" ? v.size_bytes > it->second.size_bytes
                                   : v.gbps > it->second.gbps)
      it->second = v;
  }
  std::vector<Floor> out;
  for (const auto& [k, v] : best) {
    Floor f;
    f.value = v;
    f.value.gbps = std::floor(v.gbps * fraction * 10.0) / 10.0;
    f.source = fmt::format("{:.0f} % of {:.1f} GB/s measured {}", fraction * 100.0, v.gbps, source);
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

const char* finding_id(const Deviation& d) {
  if (d.unknown) return "baseline-value-unknown";
  return d.floor ? "baseline-bandwidth-below-floor" : "baseline-deviation";
}

std::string ascii(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F)
      out += static_cast<char>(c);
    else if (c >= 0xC0 || c < 0x80)  // one '?' per character, not per byte
      out += '?';
  }
  return out;
}

// What one item of the reason line says, with and without its subject.
constexpr std::size_t kBriefWidth = 20;  // sinfo -R's default REASON column

struct ReasonItem {
  std::string subject;
  std::string text;        // "path SYS (baseline PIX)"
  std::string short_text;  // "path SYS": when the subject repeats
  Severity severity = Severity::kWarning;
  std::string brief;  // the cause in a few words, for the Slurm drain reason
};

// "GPU0-GPU1" → "GPU0-1": pair subjects in fewer characters.
std::string short_subject(const std::string& s) {
  const auto dash = s.find("-GPU");
  return dash == std::string::npos ? s : s.substr(0, dash + 1) + s.substr(dash + 4);
}

// A deviation in a few words: "GPU1 lost", "GPU3 PCIe width x8<x16", "GPU0-1 path SYS<PIX".
std::string brief_of(const Deviation& d) {
  const std::string subject =
      d.subjects.empty() ? std::string() : short_subject(d.subjects[0]) + " ";
  if (d.what == "lost") return subject + "lost";
  if (d.unknown) return subject + d.what + "?";
  std::string what = d.what;
  if (what == "GPU count") what = "GPUs";
  if (what.rfind("PCIe ", 0) == 0) what = "PCIe";
  if (what == "power limit") what = "power";
  const std::string with = subject + what + " " + d.found + "<" + d.expected;
  return with.size() <= kBriefWidth ? with : subject + what + " " + d.found;
}

// Transient host state: what the load of the moment makes of the node (CPUs pegged, iowait and
// I/O pressure, a saturated NIC, clocks under load). Shown by the gate, never its verdict unless
// --fail-on-host: a healthy node running a job must not be drained for being busy.
bool transient_host_state(const std::string& id) {
  if (id == "clocks-below-target") return true;
  const CatalogEntry* e = find_catalog_entry(id);
  if (!e) return false;
  const std::string_view c = e->category;
  return c == "host-cpu" || c == "host-io" || c == "network";
}

std::string reason_line(const std::vector<ReasonItem>& items, std::string_view head) {
  constexpr std::size_t kMax = 80;
  std::string line = "gpuvet: " + std::string(head);
  std::string last_subject;
  std::size_t used = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    const bool same = !it.subject.empty() && it.subject == last_subject;
    // The first item says what the baseline expected; later ones only what was found.
    const std::string& text = i == 0 ? it.text : it.short_text;
    std::string piece =
        same ? it.short_text : (it.subject.empty() ? text : it.subject + " " + text);
    const std::string sep = i == 0 ? "" : "; ";
    const std::size_t left = items.size() - i - 1;
    const std::string more = left > 0 ? fmt::format("; +{} more", left) : "";
    if (line.size() + sep.size() + piece.size() + more.size() > kMax) {
      if (i == 0) {  // the first item alone is too long: cut it
        line += piece.substr(0, kMax - std::min(kMax, line.size() + more.size() + 3)) + "...";
        used = 1;
      }
      break;
    }
    line += sep + piece;
    last_subject = it.subject;
    used = i + 1;
  }
  if (used < items.size()) {
    const std::string more = fmt::format("; +{} more", items.size() - used);
    if (line.size() + more.size() <= kMax) line += more;
  }
  if (line.size() > kMax) line.resize(kMax);
  return ascii(line);
}

}  // namespace

namespace {

// Whether a deviation's subject is GPU `gpu` or a pair holding it ("GPU0-GPU1").
bool names_gpu(const std::string& subject, const std::string& gpu) {
  if (subject == gpu) return true;
  const auto dash = subject.find('-');
  return dash != std::string::npos &&
         (subject.substr(0, dash) == gpu || subject.substr(dash + 1) == gpu);
}

}  // namespace

// The reason line's few words for why a GPU is lost; the whole text stays in the evidence.
std::string short_cause(const std::string& what) {
  const std::string lower = to_lower(what);
  auto has = [&](const char* w) { return lower.find(w) != std::string::npos; };
  if (has("fallen off") || has("fell off")) return "fell off the bus";
  if (has("gpu is lost")) return "NVML: GPU is lost";
  if (has("requires reset") || has("reset required")) return "needs a reset";
  if (has("timed out") || has("did not answer") || has("not answer")) return "not answering";
  return what.size() > 30 ? what.substr(0, 27) + "..." : what;
}

void group_under_lost_gpus(const Facts& facts, std::vector<Deviation>& deviations) {
  std::vector<Deviation> lost;
  for (const auto& g : facts.gpus) {
    if (!g.unresponsive) continue;
    const std::string gpu = fmt::format("GPU{}", g.index);
    std::vector<std::string> values;
    std::vector<Deviation> kept;
    for (auto& d : deviations) {
      bool mine = false;
      for (const auto& s : d.subjects) mine = mine || names_gpu(s, gpu);
      if (mine)
        values.push_back(d.what);
      else
        kept.push_back(std::move(d));
    }
    deviations = std::move(kept);
    const std::string why = short_cause(*g.unresponsive);
    Deviation d;
    d.key = "gpu." + gpu + ".lost";
    d.subjects = {gpu};
    d.what = "lost";
    d.severity = Severity::kCritical;
    d.expected = "answering";
    d.found = "lost (" + why + ")";
    d.evidence = fmt::format("{} stopped answering ({})", gpu, *g.unresponsive);
    if (!values.empty())
      d.evidence += fmt::format("; {} value(s) it holds could not be checked: {}", values.size(),
                                fmt::join(values, ", "));
    lost.push_back(std::move(d));
  }
  deviations.insert(deviations.begin(), std::make_move_iterator(lost.begin()),
                    std::make_move_iterator(lost.end()));
}

bool gate_counts(const Finding& f, const GateOptions& options) {
  if (f.acknowledged) return false;  // shown as acknowledged, never the verdict
  return options.fail_on_host || !transient_host_state(f.id);
}

std::string gate_unusable_line(std::string_view message) {
  std::string line = ascii("gpuvet: unknown: " + std::string(message));
  if (line.size() > 80) line = line.substr(0, 77) + "...";
  return line;
}

GateReport judge_gate(const Baseline& baseline, const Facts& facts, Diagnosis diagnosis,
                      std::vector<BandwidthValue> bandwidth, const GateOptions& options) {
  GateReport r;
  r.baseline_path = baseline.origin;
  r.baseline_digest = baseline.digest;
  r.baseline_name = baseline.name;
  r.options = options;
  r.collected_unix = facts.host.collected_unix;
  r.uptime_s = facts.host.uptime_s;
  r.node = node_print(facts);
  r.node.bandwidth = std::move(bandwidth);
  const bool floors = options.profile == GateProfile::kFull;
  r.deviations = compare(baseline, r.node, floors);
  group_under_lost_gpus(facts, r.deviations);
  if (!floors && !baseline.floors.empty())
    r.notes.push_back(
        fmt::format("{} bandwidth floor(s) not checked: --profile quick measures "
                    "nothing (--profile full runs the bench)",
                    baseline.floors.size()));

  // One finding per deviation, before the diagnose findings of the same severity.
  std::vector<Finding> findings;
  const std::string where =
      fmt::format("baseline {}@{}", baseline.origin, baseline.digest.substr(0, 8));
  for (const auto& d : r.deviations) {
    Finding f;
    f.id = finding_id(d);
    f.severity = d.unknown ? Severity::kWarning : d.severity;
    f.subjects = d.subjects.empty() ? std::vector<std::string>{"host"} : d.subjects;
    f.evidence =
        fmt::format("{}; expected {}, found {}, {}", d.evidence, d.expected, d.found, where);
    findings.push_back(std::move(f));
  }
  for (auto& f : diagnosis.findings) findings.push_back(std::move(f));
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return static_cast<int>(a.severity) > static_cast<int>(b.severity);
  });
  diagnosis.findings = std::move(findings);
  diagnosis.worst = Severity::kOk;
  for (const auto& f : diagnosis.findings) diagnosis.worst = std::max(diagnosis.worst, f.severity);
  r.diagnosis = std::move(diagnosis);

  // The verdict: deviations and findings at --fail-on or worse fail the node, worst first, so
  // a critical one is never behind "+N more"; transient host state counts only when asked.
  auto counts = [&](const Finding& f) { return gate_counts(f, options); };
  std::vector<ReasonItem> failing, unknown, warnings;
  Severity judged = Severity::kOk;  // the worst of what the verdict counts
  for (const auto& d : r.deviations) {
    ReasonItem item{
        d.subjects.empty() ? "" : d.subjects.front(),
        d.unknown          ? d.what + " unknown"
        : d.what == "lost" ? d.found
                           : fmt::format("{} {} (baseline {})", d.what, d.found, d.expected),
        d.unknown ? d.what + " unknown" : d.what + " " + d.found, d.severity, brief_of(d)};
    if (d.unknown) {
      unknown.push_back(std::move(item));
      continue;
    }
    judged = std::max(judged, d.severity);
    (d.severity >= options.fail_on ? failing : warnings).push_back(std::move(item));
  }
  std::vector<std::string> not_judged;
  for (const auto& f : r.diagnosis.findings) {
    if (f.id.rfind("baseline-", 0) == 0 || f.severity < Severity::kWarning) continue;
    if (!counts(f)) {
      if (std::find(not_judged.begin(), not_judged.end(), f.id) == not_judged.end())
        not_judged.push_back(f.id);
      continue;
    }
    judged = std::max(judged, f.severity);
    std::string subjects;
    for (std::size_t i = 0; i < f.subjects.size() && i < 2; ++i)
      subjects += (i ? "," : "") + f.subjects[i];
    if (f.subjects.size() > 2) subjects += ",...";
    const std::string text = f.id + (subjects.empty() ? "" : " " + subjects);
    (f.severity >= options.fail_on ? failing : warnings)
        .push_back({"", text, text, f.severity,
                    f.id + (f.subjects.empty() ? "" : " " + short_subject(f.subjects[0]))});
  }
  if (!not_judged.empty())
    r.notes.push_back(fmt::format(
        "transient host state shown, not judged: {} (--fail-on-host to fail the node on it)",
        fmt::join(not_judged, ", ")));
  auto worst_first = [](std::vector<ReasonItem>& v) {
    std::stable_sort(v.begin(), v.end(), [](const ReasonItem& a, const ReasonItem& b) {
      return static_cast<int>(a.severity) > static_cast<int>(b.severity);
    });
  };
  worst_first(failing);
  worst_first(warnings);
  const bool incomplete = !r.diagnosis.incomplete.empty() || facts.gpu_facts_unavailable;
  if (!failing.empty()) {
    r.verdict = GateVerdict::kFail;
    r.reason = reason_line(failing, "");
    r.brief = failing.front().brief;
    r.causes = static_cast<int>(failing.size());
  } else if (!unknown.empty() || incomplete) {
    r.verdict = GateVerdict::kUnknown;
    if (unknown.empty() && incomplete)
      unknown.push_back({"",
                         r.diagnosis.incomplete.empty() ? std::string("no GPU facts")
                                                        : r.diagnosis.incomplete.front(),
                         ""});
    r.reason = reason_line(unknown, "unknown: ");
    r.brief = unknown.front().brief.empty() ? "unknown" : unknown.front().brief;
    r.causes = static_cast<int>(unknown.size());
  } else if (!warnings.empty()) {
    // Passes, but the warnings below --fail-on are said on the line the exit code goes with.
    r.verdict = GateVerdict::kPass;
    r.reason = reason_line(warnings, "pass with warnings: ");
  } else {
    r.verdict = GateVerdict::kPass;
    r.reason = ascii(fmt::format("gpuvet: pass, {} GPU(s) match {}@{}", r.node.gpu_count,
                                 baseline.origin.substr(baseline.origin.rfind('/') + 1),
                                 baseline.digest.substr(0, 8)));
    if (r.reason.size() > 80) r.reason.resize(80);
  }

  switch (options.exit_style) {
    case ExitStyle::kGpuvet:
    case ExitStyle::kNagios:
      // What the verdict counted: transient host state moves neither the line nor the code.
      if (judged == Severity::kCritical)
        r.exit_code = 2;
      else if (r.verdict == GateVerdict::kUnknown)
        r.exit_code = 3;
      else
        r.exit_code = severity_exit_code(judged);
      break;
    case ExitStyle::kNpd:
    case ExitStyle::kSlurm:
      r.exit_code = r.verdict == GateVerdict::kPass ? 0 : r.verdict == GateVerdict::kFail ? 1 : 2;
      break;
  }
  return r;
}

}  // namespace gpuvet
