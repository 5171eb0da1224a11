// `gpuvet culprit`: the text report (culprit first) and the gpuvet.culprit/1 document.
#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpuvet/report.h"
#include "report/json_document.h"
#include "report/text_layout.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;
using report::opt;

std::string seq(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "-"; }

std::string who(const HangRank& h) {
  std::vector<std::string> parts;
  if (h.host) parts.push_back("host " + *h.host);
  if (h.pid) parts.push_back(fmt::format("pid {}", *h.pid));
  std::string gpu;
  if (h.cuda_dev) gpu = fmt::format("GPU {}", *h.cuda_dev);
  if (h.pci_bus_id) gpu += (gpu.empty() ? "GPU " : " ") + *h.pci_bus_id;
  if (h.gpu_uuid) gpu += (gpu.empty() ? "GPU " : " ") + *h.gpu_uuid;
  if (!gpu.empty()) parts.push_back(gpu);
  return report::join(parts, ", ");
}

std::string group_title(const HangGroup& g) {
  if (g.signature == "ras-missing" || g.signature == "ras-mismatch")
    return "NCCL communicator " + g.pg;
  std::string s = g.pg == "?" ? "process group (not printed)" : "PG " + g.pg;
  if (g.pg_name) s += " (" + *g.pg_name + ")";
  if (g.world_size) s += fmt::format(", {} ranks", *g.world_size);
  return s;
}

std::string op(const HangGroup& g) {
  std::string s = g.op ? *g.op + " " : std::string();
  return g.seq && *g.seq >= 0 ? s + "seq " + seq(g.seq) + " — " : s;
}

const char* place_words(const std::string& place) {
  if (place == "did-not-arrive") return "did not arrive";
  if (place == "stuck-inside") return "stuck inside";
  if (place == "ran-ahead") return "ran ahead";
  if (place == "frozen") return "frozen";
  if (place == "missing") return "no input";
  if (place == "silent") return "no state";
  if (place == "ras-missing") return "RAS: missing";
  if (place == "ras-dead") return "RAS: dead";
  if (place == "ras-outlier") return "RAS: outlier";
  if (place == "ras-ahead") return "RAS: ran ahead";
  if (place == "desync") return "other operation";
  if (place == "failed") return "failed first";
  if (place == "own-error") return "own error";
  return place.c_str();
}

std::string wrap(std::string_view text, const TextOptions& o, std::size_t indent) {
  return std::string(indent, ' ') +
         report::wrap_text(terminal_safe(text), static_cast<std::size_t>(std::max(o.width, 40)),
                           indent, indent);
}

void rank_table(std::string& out, const HangGroup& g) {
  if (g.ranks.empty()) return;
  out += fmt::format("  {:>5}  {:<15} {:>9} {:>9} {:>9}  {}\n", "rank", "place", "enqueued",
                     "started", "completed", "who");
  for (const auto& h : g.ranks) {
    std::string row = fmt::format(
        "  {:>5}  {:<15} {:>9} {:>9} {:>9}  {}", h.rank, place_words(h.place), seq(h.last_enqueued),
        h.last_started && *h.last_started >= 0 ? seq(h.last_started) : "-", seq(h.last_completed),
        terminal_safe(who(h)));
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out += row + "\n";
  }
}

}  // namespace

std::string render_culprit_text(const CulpritReport& r, const TextOptions& o) {
  std::string out;
  const HangAnalysis& a = r.analysis;
  // Ranks some input speaks of (a rank only known to be missing is not "seen").
  std::set<int> seen;
  for (const auto& g : a.groups)
    for (const auto& h : g.ranks)
      if (h.place != "missing") seen.insert(h.rank);
  const std::size_t ranks = seen.size();
  out += fmt::format("gpuvet culprit: {} input{} read", r.inputs.size(),
                     r.inputs.size() == 1 ? "" : "s");
  if (ranks > 0 || r.job_ranks == 0)
    out += fmt::format(", {} rank{} seen", ranks, ranks == 1 ? "" : "s");
  if (r.job_ranks > 0)
    out += fmt::format(", {} rank{} in the job's traces or step logs", r.job_ranks,
                       r.job_ranks == 1 ? "" : "s");
  out += "\n";
  // A slow job (profiler traces, step logs, NCCL Inspector) rather than a hung one: the rank
  // the others wait for comes first.
  const auto straggler = std::find_if(r.findings.begin(), r.findings.end(), [](const Finding& f) {
    return f.id == "job-straggler-rank";
  });
  const bool job = std::any_of(r.findings.begin(), r.findings.end(),
                               [](const Finding& f) { return f.id.rfind("job-", 0) == 0; });
  if (!a.any_hang()) {
    if (straggler != r.findings.end()) {
      for (const auto& f : r.findings)
        if (f.id == "job-straggler-rank")
          out += "\n" +
                 wrap("STRAGGLER " + (f.subjects.empty() ? "?" : f.subjects.front()) + ": " +
                          terminal_safe(f.evidence),
                      o, 2) +
                 "\n";
    } else if (job) {
      out +=
          "\nNo straggler: no rank made the others wait in these traces or logs (the figures "
          "are under Findings).\n";
    } else if (a.any_collective_state) {
      out +=
          "\nNo hang: no watchdog timeout, no frozen watchdog, no rank behind its peers and no "
          "NCCL RAS error in these inputs.\n";
    } else {
      out +=
          "\nNo collective state in these inputs: no PyTorch watchdog line, flight-recorder "
          "dump, NCCL RAS status or NCCL init line was recognised.\n";
    }
  }
  for (const auto& g : a.groups) {
    if (!g.hang) continue;
    out += "\n";
    if (!g.culprits.empty()) {
      for (int c : g.culprits) {
        const HangRank* h = nullptr;
        for (const auto& x : g.ranks)
          if (x.rank == c) h = &x;
        if (!h) continue;
        // RAS outliers of one query may still be in flight: named, not yet blamed.
        out += fmt::format("{} rank {}: {}", h->place == "ras-outlier" ? "OUTLIER" : "CULPRIT", c,
                           place_words(h->place));
        const std::string w = who(*h);
        out += w.empty() ? "\n" : " — " + terminal_safe(w) + "\n";
        if (h->last_enqueued || h->last_completed)
          out += fmt::format("  last enqueued {}, completed {}\n", seq(h->last_enqueued),
                             seq(h->last_completed));
        for (const auto& e : h->errors)
          out += wrap(e.rfind("NCCL RAS:", 0) == 0 ? e : "its log: " + e, o, 2) + "\n";
        for (const auto& k : h->kernel) out += wrap("kernel log: " + k, o, 2) + "\n";
        if (!h->sources.empty())
          out += wrap("from: " + report::join(h->sources, ", "), o, 2) + "\n";
      }
    } else {
      out += g.signature == "frozen-process" ? "NO SINGLE CULPRIT: every rank is frozen\n"
             : g.signature == "transport-never-worked"
                 ? "NO SINGLE CULPRIT: no rank ever completed a collective\n"
                 : "NO SINGLE CULPRIT\n";
    }
    out += wrap(fmt::format("{}: {}{}: {}", group_title(g), op(g), g.signature, g.summary), o, 2) +
           "\n\n";
    rank_table(out, g);
  }
  for (const auto& g : a.groups) {
    if (g.hang) continue;
    out += "\n" + wrap(fmt::format("{}: {} — {}", group_title(g), g.signature, g.summary), o, 0) +
           "\n";
    rank_table(out, g);
  }
  if (!r.findings.empty()) out += "\nFindings:\n";
  for (const auto& f : r.findings) {
    const CatalogEntry* e = find_catalog_entry(f.id);
    out += fmt::format("\n{} {}  {}\n", severity_name(f.severity), f.id,
                       terminal_safe(report::compact_subjects(f.subjects)));
    out += wrap(f.evidence, o, 2) + "\n";
    if (e) {
      out += wrap(std::string("Meaning: ") + e->meaning, o, 2) + "\n";
      out += wrap(std::string("Decision: ") + (f.decision_note ? *f.decision_note : e->decision), o,
                  2) +
             "\n";
    }
    out += fmt::format("  Action: {}\n", action_name(finding_action(f)));
  }
  if (!r.problems.empty()) {
    out += "\nInputs that could not be used:\n";
    for (const auto& p : r.problems) out += wrap("- " + p, o, 2) + "\n";
  }
  if (o.verbose && !r.inputs.empty()) {
    out += "\nInputs:\n";
    for (const auto& i : r.inputs) out += wrap("- " + i, o, 2) + "\n";
  }
  if (!r.notes.empty() && o.verbose) {
    out += "\nNotes:\n";
    for (const auto& n : r.notes) out += wrap("- " + n, o, 2) + "\n";
  }
  return out;
}

std::string culprit_to_json(const Facts& facts, const CulpritReport& r, int indent) {
  json groups = json::array();
  json culprits = json::array();
  for (const auto& g : r.analysis.groups) {
    json ranks = json::array();
    for (const auto& h : g.ranks) {
      json one = {{"rank", h.rank},
                  {"place", h.place},
                  {"last_enqueued", opt(h.last_enqueued)},
                  {"last_started", opt(h.last_started)},
                  {"last_completed", opt(h.last_completed)},
                  {"timed_out", h.timed_out},
                  {"host", opt(h.host)},
                  {"pid", opt(h.pid)},
                  {"cuda_dev", opt(h.cuda_dev)},
                  {"gpu_uuid", opt(h.gpu_uuid)},
                  {"pci_bus_id", opt(h.pci_bus_id)},
                  {"errors", h.errors},
                  {"kernel_log", h.kernel},
                  {"sources", h.sources}};
      if (std::find(g.culprits.begin(), g.culprits.end(), h.rank) != g.culprits.end() && g.hang) {
        json c = one;
        c["pg"] = g.pg;
        c["signature"] = g.signature;
        c["seq"] = opt(g.seq);
        c["op"] = opt(g.op);
        culprits.push_back(std::move(c));
      }
      ranks.push_back(std::move(one));
    }
    groups.push_back({{"pg", g.pg},
                      {"pg_name", opt(g.pg_name)},
                      {"hang", g.hang},
                      {"signature", g.signature},
                      {"seq", opt(g.seq)},
                      {"op", opt(g.op)},
                      {"timeout_ms", opt(g.timeout_ms)},
                      {"world_size", opt(g.world_size)},
                      {"culprits", g.culprits},
                      {"summary", g.summary},
                      {"ranks", std::move(ranks)}});
  }
  json findings = report::findings_json(r.findings, facts);
  const char* verdict = !r.problems.empty() && r.exit_code == 3 ? "unusable"
                        : r.analysis.any_hang()                 ? "hang"
                        : r.analysis.any_collective_state       ? "no-hang"
                                                                : "no-collective-state";
  json doc = {
      {"schema", "gpuvet.culprit/1"},
      {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}, {"command", "culprit"}}},
      {"verdict", verdict},
      {"severity", severity_name(r.worst)},
      {"exit_code", r.exit_code},
      {"culprits", std::move(culprits)},
      {"groups", std::move(groups)},
      {"findings", std::move(findings)},
      {"inputs", r.inputs},
      {"problems", r.problems},
      {"notes", r.notes},
  };
  return report::dump_document(doc, indent);
}

}  // namespace gpuvet
