// `gpuvet scale`: the same training step and inference request on 1 GPU and on N, judged
// by the rules (scaling-inefficient, tail-latency-amplified, clocks-degrade-over-time).
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/collect.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "gpuvet/scale.h"
#include "live.h"

namespace gpuvet::cli {

namespace {

// The findings a scaling run decides (a catalog column).
bool is_scale_finding(const std::string& id) { return finding_measured_by(id, kByScale); }

}  // namespace

std::function<Outcome()> setup_scale(CLI::App& app) {
  auto o = std::make_shared<ScaleOptions>();
  auto json = std::make_shared<bool>(false);
  auto list = std::make_shared<bool>(false);
  auto no_overlap = std::make_shared<bool>(false);
  auto timeout_s = std::make_shared<double>(20.0);
  app.add_flag("--json", *json, "Print JSON (schema gpuvet.scale/1)");
  app.add_flag("--list", *list, "List the presets and exit");
  app.add_option("--preset", o->presets, "Presets to run (default: all; see --list)");
  app.add_option("--gpus", o->gpu_counts, "GPU counts to compare (default 1, 2, 4, … and all)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--steps", o->steps, "Timed steps (train) or requests (infer) per configuration")
      ->check(CLI::Range(2, 100000));
  app.add_option("--warmup", o->warmup_steps, "Untimed steps first")->check(CLI::Range(0, 1000));
  app.add_flag("--no-overlap", *no_overlap, "Train: all-reduce after the compute, not during");
  app.add_option("--accumulate", o->grad_accumulation, "Train: compute phases per all-reduce")
      ->check(CLI::Range(1, 1024));
  app.add_option("--rate", o->request_rate_hz,
                 "Infer: requests per second arriving (0: back to back)")
      ->check(finite_range(0.0, 1e6));
  app.add_option("--flops", o->flops, "Override the preset's FLOPs per step / per token")
      ->check(finite_range(1e6, 1e18));
  // Checked as numbers first: an unsigned option would take -1 for 2^64 - 1.
  app.add_option("--grad-bytes", o->grad_bytes, "Override the gradient bytes per step")
      ->check(finite_range(0.0, 0x1p40));
  app.add_option("--bucket-bytes", o->bucket_bytes, "Override the all-reduce bucket size")
      ->check(finite_range(0.0, 0x1p40));
  app.add_option("--duration", o->duration_s,
                 "Sustained mode: run the first preset for this many seconds on the most GPUs, "
                 "sampling clocks, temperature and power")
      ->check(finite_range(0.0, 86400.0));
  app.add_option("--sample-interval", o->sample_interval_s, "Sustained mode: seconds per sample")
      ->check(finite_range(0.1, 600.0));
  app.add_option("--nccl-lib", o->nccl_library, "libnccl.so.2 to load");
  app.add_option("--cublas-lib", o->cublas_library,
                 "libcublasLt.so.13 to load for the bf16 GEMMs (else $GPUVET_CUBLASLT_LIBRARY, "
                 "the loader's path, /usr/local/cuda/lib64)");
  auto nvml = std::make_shared<std::string>();
  app.add_option("--nvml", *nvml, "NVML library for the sustained-mode samples");
  app.add_option("--collective-timeout", *timeout_s,
                 "Seconds a collective may take before the run is aborted and the rank named")
      ->check(finite_range(1.0, 3600.0));
  return [=]() -> Outcome {
    if (*list) {
      for (const auto& p : scale_presets())
        std::cout << fmt::format("{:<14} {:<6} {}\n", p.name, p.workload, p.description);
      return {kExitOk, false};
    }
    for (const auto& name : o->presets)
      if (!find_scale_preset(name)) {
        std::cerr << "gpuvet: unknown preset '" << name << "' (gpuvet scale --list)\n";
        return {kExitUnusable, false};
      }
    ScaleOptions options = *o;
    options.overlap = !*no_overlap;
    options.collective_timeout =
        std::chrono::milliseconds(static_cast<long long>(*timeout_s * 1000));
    options.progress = true;  // drawn on stderr only when it is a terminal
    options.nvml_library = nvml_library_choice(*nvml);
    const SystemEnv env;
    ScaleReport report = run_scale(options, env);
    const Facts judged = scale_facts(report);
    const Diagnosis d = diagnose(judged);
    if (*json) {
      std::cout << scale_to_json(report) << "\n";
    } else {
      std::cout << render_scale_text(report);
      bool header = false;
      for (const auto& f : d.findings) {
        if (!is_scale_finding(f.id)) continue;
        if (!header) std::cout << "\nVerdict\n";
        header = true;
        std::cout << "  " << severity_name(f.severity) << "  " << f.id << ": "
                  << terminal_safe(f.evidence) << "\n";
      }
      if (!header && report.ran)
        std::cout << "\nVerdict: no scaling, tail-latency or drift finding.\n";
    }
    if (!report.ran) {
      std::cerr << "gpuvet: the scaling test could not run here (see the notes)\n";
      return {kExitUnusable, report.abandoned_probes};
    }
    int code = kExitOk;
    for (const auto& f : d.findings)
      if (is_scale_finding(f.id)) code = std::max(code, severity_exit_code(f.severity));
    for (const auto& r : report.results)
      if (r.error) code = std::max(code, int{kExitWarning});
    return {code, report.abandoned_probes};
  };
}

}  // namespace gpuvet::cli
