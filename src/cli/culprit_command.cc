// `gpuvet culprit FILES…|DIR`: which rank of a hung distributed job did not arrive. Reads,
// offline, what the job left (per-rank PyTorch logs, flight-recorder dumps, NCCL RAS status,
// NCCL logs, kernel logs) through the importers, judges them with the rules (analyse_hang and
// the collective-hang-* findings), and prints the culprit first (or gpuvet.culprit/1).
#include <algorithm>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
#include "gpuvet/report.h"
#include "live.h"

namespace gpuvet::cli {

namespace {

struct CulpritArgs {
  std::vector<std::string> paths;
  bool json = false;
  bool verbose = false;
  bool no_color = false;
  std::string step_regex;
};

constexpr std::size_t kMaxCulpritInputs = std::size_t{1} << 18;

bool is_hang_finding(const Finding& f) { return f.id.rfind("collective-hang", 0) == 0; }
bool is_job_finding(const Finding& f) { return f.id.rfind("job-", 0) == 0; }

// What explains a hang where no rank is singled out: NCCL's own errors, a transport or a GPU
// that failed under the job.
bool explains_hang(const Finding& f) {
  static constexpr const char* kIds[] = {
      "nccl-error",  "gpu-unresponsive",   "p2p-unavailable", "acs-blocks-p2p",
      "iommu-fault", "nccl-degraded-path", "fabric-degraded", "data-corruption"};
  return f.severity >= Severity::kWarning &&
         std::any_of(std::begin(kIds), std::end(kIds), [&](const char* id) { return f.id == id; });
}

// An input that was listed but could not be read: the culprit may be in it.
bool unreadable_note(const std::string& note) {
  return note.find(": cannot open") != std::string::npos ||
         note.find(": cannot read") != std::string::npos ||
         note.find(": directory not read") != std::string::npos;
}

Outcome run_culprit(const CulpritArgs& args) {
  std::vector<std::string> paths = args.paths;
  // A job's per-rank logs: as many files as ranks. Past kMaxCulpritInputs the cut is an input
  // problem (said on stderr and in --json), never a rank silently "missing".
  ImportOptions options;
  options.max_files = kMaxCulpritInputs;
  options.step_regex = args.step_regex;
  if (!options.step_regex.empty())
    if (Status st = check_step_regex(options.step_regex); !st.is_ok()) {
      std::cerr << "gpuvet: " << st.message() << "\n";
      return {kExitUnusable, false};
    }
  Result<Facts> imported = paths.size() == 1 && paths.front() == "-" ? import_from("-", options)
                                                                     : import_paths(paths, options);
  if (!imported.is_ok()) {
    std::cerr << "gpuvet: " << imported.status().message() << "\n";
    return {kExitUnusable, false};
  }
  const Facts& facts = imported.value();

  CulpritReport report;
  report.analysis = analyse_hang(facts);
  {
    std::set<std::pair<std::string, int>> job;
    for (const auto& r : facts.job_ranks) job.insert({r.source, r.rank.value_or(-1)});
    report.job_ranks = job.size();
  }
  for (const auto& f : facts.imported) report.inputs.push_back(f.path + ": " + f.format);
  report.problems = facts.input_problems;
  for (const auto& n : facts.notes)
    if ((unreadable_note(n) || n.find("records not kept") != std::string::npos) &&
        std::find(report.problems.begin(), report.problems.end(), n) == report.problems.end())
      report.problems.push_back(n);

  const Diagnosis d = diagnose(facts);
  // The hang findings, and the Xid findings about the culprits' GPUs (their bus ids).
  std::vector<std::string> culprit_buses;
  for (const auto& g : report.analysis.groups)
    for (const auto& h : g.ranks)
      if (h.pci_bus_id &&
          std::find(g.culprits.begin(), g.culprits.end(), h.rank) != g.culprits.end())
        culprit_buses.push_back(*h.pci_bus_id);
  const bool culprit_named =
      std::any_of(report.analysis.groups.begin(), report.analysis.groups.end(),
                  [](const HangGroup& g) { return g.hang && !g.culprits.empty(); });
  for (const auto& f : d.findings) {
    // A slow job rather than a hung one: the rank the others wait for, with the figures.
    bool keep = is_hang_finding(f) || explains_hang(f) || is_job_finding(f);
    // An Xid on a culprit's GPU; with no culprit named, any Xid that is not history.
    if (!keep && f.id == "xid-error")
      keep = culprit_named ? std::any_of(culprit_buses.begin(), culprit_buses.end(),
                                         [&](const std::string& b) {
                                           return f.evidence.find(b) != std::string::npos;
                                         })
                           : f.severity >= Severity::kWarning;
    if (keep) {
      report.findings.push_back(f);
      report.worst = std::max(report.worst, f.severity);
    }
  }
  report.notes = facts.notes;

  int code = severity_exit_code(report.worst);
  std::string why_unusable;
  if (!any_recognised(facts)) {
    why_unusable = "nothing among the inputs is a supported output (see gpuvet formats)";
  } else if (!report.analysis.any_collective_state && report.problems.empty() &&
             report.findings.empty()) {
    why_unusable =
        "no collective state among the inputs: no PyTorch watchdog line, flight-recorder dump, "
        "NCCL RAS status, NCCL init line, profiler trace or step-time log (give the per-rank "
        "logs or traces of the job)";
  }
  if (!why_unusable.empty() || (!report.problems.empty() && report.worst < Severity::kCritical))
    code = kExitUnusable;
  report.exit_code = code;

  if (args.json) {
    std::cout << culprit_to_json(facts, report) << "\n";
  } else {
    TextOptions text;
    LiveArgs colour;
    colour.no_color = args.no_color;
    text.color = use_color(colour);
    text.verbose = args.verbose;
    text.width = stdout_text_width();
    std::cout << render_culprit_text(report, text);
  }
  if (!why_unusable.empty()) std::cerr << "gpuvet: " << why_unusable << "\n";
  for (const auto& p : report.problems) std::cerr << "gpuvet: " << p << "\n";
  return {code, false};
}

}  // namespace

std::function<Outcome()> setup_culprit(CLI::App& app) {
  auto args = std::make_shared<CulpritArgs>();
  app.add_option("inputs", args->paths,
                 "What the hung or slow job left: per-rank logs, flight-recorder dumps (JSON), "
                 "ncclras output (text or -f json), kernel logs, PyTorch profiler traces, "
                 "step-time logs; files or directories; - reads a paste on standard input")
      ->required();
  app.add_flag("--json", args->json, "Print JSON (schema gpuvet.culprit/1, docs/culprit.md)");
  app.add_flag("-v,--verbose", args->verbose, "Also list every input read and the notes");
  app.add_flag("--no-color", args->no_color, "No ANSI colours even on a terminal");
  app.add_option("--step-regex", args->step_regex,
                 "Read step times from the logs with this RE2 pattern (named groups ms, s or "
                 "items_per_s, and step, rank): the rank the others wait for");
  return [args]() -> Outcome { return run_culprit(*args); };
}

}  // namespace gpuvet::cli
