// `gpuvet bench`: run the measurements, print them like the reference tools with the
// comparison against what the links should give, and judge them with the rules.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/bench.h"
#include "gpuvet/collect.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "live.h"

namespace gpuvet::cli {

namespace {

// The findings the measurements themselves can raise (a catalog column); they decide the
// exit code.
bool is_bench_finding(const std::string& id) { return finding_measured_by(id, kByBench); }

struct BenchArgs {
  bool json = false;
  bool quick = false;
  bool full = false;
  bool list = false;
  std::vector<std::string> only;
  std::string nccl_lib;
  std::string nvml;
  int samples = 0;
  double collective_timeout_s = 20;
  bool plant_corruption = false;
  std::string match;
};

}  // namespace

std::function<Outcome()> setup_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  app.add_flag("--json", args->json, "Print JSON (schema gpuvet.bench/1)");
  auto* quick = app.add_flag("--quick", args->quick,
                             "The quick suite (default): is every link as fast as it should be");
  auto* full =
      app.add_flag("--full", args->full, "Every benchmark, full message-size sweeps, more samples")
          ->excludes(quick);
  app.add_option("--match", args->match,
                 "nvbandwidth: only the benchmarks nvbandwidth also has, at its buffer size, "
                 "copies per sample and sample count (512 MiB × 16 × 3), for a side-by-side")
      ->check(CLI::IsMember({"nvbandwidth"}))
      ->excludes(quick)
      ->excludes(full);
  app.add_option("--only", args->only, "Run only these benchmark keys (see --list)");
  app.add_flag("--list", args->list, "List the benchmarks and exit");
  app.add_option("--nccl-lib", args->nccl_lib,
                 "libnccl.so.2 to load (default $GPUVET_NCCL_LIBRARY, then the loader path); "
                 "e.g. the one inside a PyTorch install");
  app.add_option("--nvml", args->nvml, "NVML library for the topology facts");
  app.add_option("--samples", args->samples, "Samples per measurement (median reported)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--collective-timeout", args->collective_timeout_s,
                 "Seconds a collective may take before its communicators are aborted")
      ->check(finite_range(1.0, 3600.0));
  // Verification self-check: corrupts one copy on purpose; the run must report wrong data.
  app.add_flag("--plant-corruption", args->plant_corruption)->group("");
  return [args]() -> Outcome {
    if (args->list) {
      for (const auto& b : bench_catalog())
        std::cout << fmt::format(
            "{:<30} {:<6} {}{}{}\n", b.key, b.unit, b.title, b.quick ? "" : "  (--full)",
            b.nvbandwidth ? fmt::format("  [nvbandwidth {}]", b.nvbandwidth) : "");
      return {kExitOk, false};
    }
    BenchOptions options;
    options.full = args->full;
    options.only = args->only;
    options.nccl_library = args->nccl_lib;
    options.samples = args->samples;
    options.progress = true;  // drawn on stderr only when it is a terminal
    options.collective_timeout =
        std::chrono::milliseconds(static_cast<long long>(args->collective_timeout_s * 1000));
    options.plant_corruption = args->plant_corruption;
    options.match = args->match;
    // Unknown keys are refused before the node is probed (run_benchmarks would only note it).
    if (const Status s = validate_bench_selection(options); !s.is_ok()) {
      std::cerr << "gpuvet: " << s.message() << "\n";
      return {kExitUnusable, false};
    }

    // The topology, links and NUMA placement the expectations and host buffers need.
    CollectOptions co;
    co.nvml_library = nvml_library_choice(args->nvml);
    co.pressure_window = std::chrono::milliseconds(0);
    co.kernel_log = false;
    const SystemEnv env;
    Collection c = collect_facts(co, env);

    BenchReport report = run_benchmarks(c.facts, options);
    attach_expectations(report, c.facts);
    Facts judged = c.facts;
    judged.measurements = bench_measurements(report);
    const Diagnosis d = diagnose(judged);
    if (args->json) {
      std::cout << bench_to_json(report) << "\n";
    } else {
      std::cout << render_bench_text(report) << render_bench_verdict(report, d);
    }
    if (!report.cuda_available) {
      std::cerr << "gpuvet: no benchmark could run here (see the notes)\n";
      return {kExitUnusable, c.abandoned_probes};
    }
    int code = kExitOk;
    for (const auto& f : d.findings)
      if (is_bench_finding(f.id)) code = std::max(code, severity_exit_code(f.severity));
    for (const auto& m : report.results)
      if (m.error) code = std::max(code, int{kExitWarning});
    // Wrong data is data-corruption (critical) whether or not a rule saw the cell.
    if (bench_has_wrong_data(report)) code = int{kExitCritical};
    return {code, c.abandoned_probes};
  };
}

}  // namespace gpuvet::cli
