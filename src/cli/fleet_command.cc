// `gpuvet fleet ingest DB PATH…` and `gpuvet fleet report DB`: the fleet history and the nodes
// that drifted from their like.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/fleet.h"
#include "gpuvet/report.h"

namespace gpuvet::cli {
namespace {

// Files read and written per transaction: a killed ingest loses at most one batch (which
// the next ingest adds), and memory stays bounded however many files there are.
constexpr std::size_t kBatchFiles = 500;
// Files are read and parsed on this many threads at most (each holds one file's text).
constexpr unsigned kMaxReadThreads = 4;

struct IngestArgs {
  std::string db;
  std::vector<std::string> paths;
};

struct ReportArgs {
  std::string db;
  std::string group_by = "model";
  double max_drain_share = 0.2;
  double stale_after_h = 24;
  int repairs_before_rma = 2;
  bool json = false;
  bool no_color = false;
};

// Reads `files` (parsing, hashing) on up to `threads` threads; the results in file order.
std::vector<Result<FleetFile>> read_files(const std::vector<std::string>& files,
                                          const KnownFleetFiles& known, unsigned threads) {
  std::vector<std::optional<Result<FleetFile>>> slots(files.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++)
      slots[i].emplace(read_fleet_file(files[i], known));
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  std::vector<Result<FleetFile>> out;
  out.reserve(files.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

Outcome run_ingest(const IngestArgs& args) {
  auto store = FleetStore::open(args.db, /*create=*/true);
  if (!store.is_ok()) {
    std::cerr << "gpuvet: " << terminal_safe(store.status().message()) << "\n";
    return {kExitUnusable, false};
  }
  // The files already in the history are skipped before they are parsed.
  auto known = store.value()->known_files();
  if (!known.is_ok()) {
    std::cerr << "gpuvet: " << terminal_safe(known.status().message()) << "\n";
    return {kExitUnusable, false};
  }
  const FleetInputs inputs = fleet_input_files(args.paths);
  std::vector<std::string> problems = inputs.problems;
  IngestSummary total;
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxReadThreads);
  for (std::size_t first = 0; first < inputs.files.size(); first += kBatchFiles) {
    const std::size_t last = std::min(inputs.files.size(), first + kBatchFiles);
    const std::vector<std::string> names(inputs.files.begin() + static_cast<std::ptrdiff_t>(first),
                                         inputs.files.begin() + static_cast<std::ptrdiff_t>(last));
    std::vector<FleetDocument> batch;
    std::vector<std::pair<std::string, int>> batch_files;
    int skipped_documents = 0;
    for (auto& file : read_files(names, known.value(), threads)) {
      ++total.files;
      if (!file.is_ok()) {
        problems.push_back(file.status().message());
        continue;
      }
      if (file.value().known_documents) {
        skipped_documents += *file.value().known_documents;
        continue;
      }
      batch_files.emplace_back(file.value().byte_hash,
                               static_cast<int>(file.value().documents.size()));
      for (auto& d : file.value().documents) batch.push_back(std::move(d));
    }
    total.documents += skipped_documents;
    total.already_present += skipped_documents;
    if (batch.empty() && batch_files.empty()) continue;
    auto done = store.value()->ingest(batch, batch_files);
    if (!done.is_ok()) {
      std::cerr << "gpuvet: " << terminal_safe(done.status().message()) << "\n";
      return {kExitUnusable, false};
    }
    total.documents += done.value().documents;
    total.added += done.value().added;
    total.already_present += done.value().already_present;
  }
  std::cout << fmt::format(
      "{}: {} file(s), {} report(s): {} added, {} already there{}\n", terminal_safe(args.db),
      total.files, total.documents, total.added, total.already_present,
      problems.empty() ? "" : fmt::format("; {} input(s) not used", problems.size()));
  for (const auto& p : problems) std::cerr << "gpuvet: " << terminal_safe(p) << "\n";
  if (inputs.files.empty() && problems.empty()) {
    std::cerr << "gpuvet: no *.json report under " << fmt::format("{}", fmt::join(args.paths, ", "))
              << "\n";
    return {kExitUnusable, false};
  }
  return {problems.empty() ? kExitOk : kExitUnusable, false};
}

Outcome run_report(const ReportArgs& args) {
  const auto fail = [](const std::string& message) -> Outcome {
    std::cerr << "gpuvet: " << terminal_safe(message) << "\n";
    return {kExitUnusable, false};
  };
  auto grouping = parse_fleet_grouping(args.group_by);
  if (!grouping.is_ok()) return fail(grouping.status().message());
  auto store = FleetStore::open(args.db, /*create=*/false);
  if (!store.is_ok()) return fail(store.status().message());
  auto history = store.value()->load();
  if (!history.is_ok()) return fail(history.status().message());
  if (history.value().empty()) return fail(args.db + " holds no report yet");
  FleetOptions options;
  options.now_unix = static_cast<std::int64_t>(std::time(nullptr));
  options.group_by = grouping.value();
  options.max_drain_share = args.max_drain_share;
  options.stale_after_s = static_cast<std::int64_t>(args.stale_after_h * 3600);
  options.repairs_before_rma = args.repairs_before_rma;
  const FleetReport report = fleet_report(history.value(), options);
  if (args.json) {
    JsonOptions j;
    j.command = "fleet report";
    std::cout << fleet_to_json(report, args.db, j) << "\n";
  } else {
    ColorContext cc;
    cc.no_color_flag = args.no_color;
    cc.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
    cc.term = std::getenv("TERM");
    cc.no_color = std::getenv("NO_COLOR");
    TextOptions t;
    t.color = color_wanted(cc);
    std::cout << render_fleet_text(report, args.db, t);
  }
  return {report.exit_code, false};
}

}  // namespace

std::function<Outcome()> setup_fleet(CLI::App& app) {
  app.require_subcommand(1);
  auto ingest_args = std::make_shared<IngestArgs>();
  auto report_args = std::make_shared<ReportArgs>();

  CLI::App* ingest = app.add_subcommand(
      "ingest",
      "Add node reports (gpuvet gate, diagnose, facts or bench --json; one or many per file, "
      "or directories of *.json) to the history; a report already there is not added again");
  ingest->add_option("db", ingest_args->db, "The fleet history (SQLite; created when missing)")
      ->required();
  ingest->add_option("paths", ingest_args->paths, "Report files or directories")->required();

  CLI::App* rep = app.add_subcommand(
      "report",
      "Group like nodes and name the outliers: a fingerprint unlike the group's or its last "
      "pass, a bandwidth far below the group's; the faults that came back after repairs and the "
      "failure taxonomy (exit 0 none, 1 measured only, 2 fingerprint or a current RMA case)");
  rep->add_option("db", report_args->db, "The fleet history")->required();
  rep->add_option("--group-by", report_args->group_by,
                  "model: same GPU model and count; baseline: same gate baseline")
      ->check(CLI::IsMember({"model", "baseline"}));
  rep->add_option("--max-drain-share", report_args->max_drain_share,
                  "The circuit breaker: recommend draining at most this share of a group at once")
      ->check(finite_range(0.0, 1.0));
  rep->add_option("--stale-after", report_args->stale_after_h,
                  "Hours without a report, before the newest one, after which a node is stale")
      ->check(finite_range(0.0, 24.0 * 3650));
  rep->add_option("--repairs-before-rma", report_args->repairs_before_rma,
                  "A fault on one GPU that comes back after more than this many repairs (a "
                  "report without it in between, or a reboot) is for hardware inspection / RMA")
      ->check(CLI::Range(0, 1000));
  rep->add_flag("--json", report_args->json, "Print gpuvet.fleet/1 JSON");
  rep->add_flag("--no-color", report_args->no_color, "No ANSI colours");

  return [=]() -> Outcome {
    if (ingest->parsed()) return run_ingest(*ingest_args);
    return run_report(*report_args);
  };
}

}  // namespace gpuvet::cli
