// `gpuvet scale` output: one row per configuration (step or request percentiles, throughput,
// efficiency, comm share, GEMM rate), the sustained trace, notes; and the same as
// gpuvet.scale/1 JSON.
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpuvet/report.h"
#include "gpuvet/scale.h"
#include "report/json_document.h"

namespace gpuvet {

namespace {
std::string ms(const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : "-"; }
}  // namespace

std::string render_scale_text(const ScaleReport& report) {
  std::ostringstream o;
  o << fmt::format("{:<14} {:>4} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>8}\n",
                   "preset", "gpus", "items/s", "mean ms", "p50", "p95", "p99", "max", "comm %",
                   "eff", "TFLOP/s");
  for (const auto& r : report.results) {
    const ScaleRun& run = r.run;
    if (r.error) {
      o << fmt::format("{:<14} {:>4}  ERROR {}\n", run.preset, run.gpus, *r.error);
      continue;
    }
    o << fmt::format("{:<14} {:>4} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>8}\n",
                     run.preset, run.gpus,
                     run.throughput ? fmt::format("{:.2f}", *run.throughput) : "-", ms(r.mean_ms),
                     ms(run.p50_ms), ms(run.p95_ms), ms(run.p99_ms), ms(run.max_ms),
                     run.comm_share ? fmt::format("{:.1f}", *run.comm_share * 100) : "-",
                     r.efficiency ? fmt::format("{:.2f}", *r.efficiency) : "-",
                     r.achieved_tflops ? fmt::format("{:.1f}", *r.achieved_tflops) : "-");
  }
  o << "(train: ms per step, items/s = GPUs × accumulated batches per second; infer: ms per "
       "request, requests per second; comm % = communication with no compute under it, plus "
       "the compute the collectives slowed, over the step)\n";
  for (const auto& r : report.results)
    for (const auto& w : r.wrong_data)
      o << fmt::format("WRONG DATA {} on {} GPU{} (GPU{}): {}\n", r.run.preset, r.run.gpus,
                       r.run.gpus == 1 ? "" : "s", w.gpu, w.what);
  for (const auto& r : report.results) {
    if (r.error || !r.compute_alone_ms || !r.mean_ms) continue;
    o << fmt::format("{} on {} GPU{}: ", r.run.preset, r.run.gpus, r.run.gpus == 1 ? "" : "s");
    if (r.comm_alone_ms && *r.comm_alone_ms > 0)
      o << fmt::format(
          "communication alone would take {:.2f} ms of the {:.2f} ms step (compute alone {:.2f} "
          "ms; {:.2f} ms of it exposed; compute slowed by overlap {:.2f} ms)\n",
          *r.comm_alone_ms, *r.mean_ms, *r.compute_alone_ms, r.exposed_comm_ms.value_or(0),
          r.overlap_slowdown_ms.value_or(0));
    else
      o << fmt::format("compute alone {:.2f} ms of the {:.2f} ms step; nothing to all-reduce\n",
                       *r.compute_alone_ms, *r.mean_ms);
  }
  if (report.peak_tflops)
    o << fmt::format("dense bf16 GEMM of GPU0: {:.1f} TFLOP/s (measured: {})\n",
                     *report.peak_tflops, report.peak_method.value_or("?"));
  if (report.sustained) {
    const auto& s = *report.sustained;
    o << fmt::format("\nsustained {} on {} GPU(s): time, items/s, then per GPU SM MHz / °C / W\n",
                     s.preset, s.gpus);
    for (const auto& [t, thr] : s.throughput) {
      o << fmt::format("  {:>6.0f} s {:>10.2f}", t, thr);
      // The NVML sample nearest in time, per GPU.
      std::map<int, const GpuSample*> nearest;
      for (const auto& x : s.samples) {
        auto& best = nearest[x.gpu];
        if (!best || std::abs(x.t_s - t) < std::abs(best->t_s - t)) best = &x;
      }
      for (const auto& [gpu, x] : nearest)
        o << fmt::format("   GPU{} {} MHz {} °C {} W", gpu,
                         x->sm_mhz ? std::to_string(*x->sm_mhz) : "-",
                         x->gpu_c ? std::to_string(*x->gpu_c) : "-",
                         x->power_w ? fmt::format("{:.0f}", *x->power_w) : "-");
      o << "\n";
    }
  }
  for (const auto& r : report.results)
    for (const auto& n : r.notes)
      o << "note (" << r.run.preset << ", " << r.run.gpus << "): " << n << "\n";
  for (const auto& n : report.notes) o << "note: " << n << "\n";
  o << fmt::format("total {:.1f} s\n", report.wall_ms / 1000.0);
  // Device names and error texts come from the driver and libraries.
  return terminal_safe(o.str());
}

std::string scale_to_json(const ScaleReport& report, int indent) {
  using json = nlohmann::ordered_json;
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  json results = json::array();
  for (const auto& r : report.results) {
    json wrong = json::array();
    for (const auto& w : r.wrong_data) wrong.push_back({{"gpu", w.gpu}, {"what", w.what}});
    const ScalePreset* preset = find_scale_preset(r.run.preset);
    results.push_back(
        {{"workload", r.run.workload},
         {"preset", r.run.preset},
         {"parallelism", preset ? json(parallelism_name(preset->parallelism)) : json(nullptr)},
         {"gpus", r.run.gpus},
         {"throughput", opt(r.run.throughput)},
         {"mean_ms", opt(r.mean_ms)},
         {"p50_ms", opt(r.run.p50_ms)},
         {"p95_ms", opt(r.run.p95_ms)},
         {"p99_ms", opt(r.run.p99_ms)},
         {"max_ms", opt(r.run.max_ms)},
         {"comm_share", opt(r.run.comm_share)},
         {"compute_ms", opt(r.compute_ms)},
         {"comm_ms", opt(r.comm_ms)},
         {"exposed_comm_ms", opt(r.exposed_comm_ms)},
         {"compute_alone_ms", opt(r.compute_alone_ms)},
         {"comm_alone_ms", opt(r.comm_alone_ms)},
         {"overlap_slowdown_ms", opt(r.overlap_slowdown_ms)},
         {"achieved_tflops", opt(r.achieved_tflops)},
         {"compute_backend", opt(r.compute_backend)},
         {"efficiency", opt(r.efficiency)},
         {"step_ms", r.step_ms},
         {"wrong_data", wrong},
         {"error", r.error ? json(*r.error) : json(nullptr)},
         {"notes", r.notes}});
  }
  json sustained = nullptr;
  if (report.sustained) {
    json thr = json::array();
    for (const auto& [t, v] : report.sustained->throughput) thr.push_back({t, v});
    json samples = json::array();
    for (const auto& s : report.sustained->samples)
      samples.push_back({{"gpu", s.gpu},
                         {"t_s", s.t_s},
                         {"sm_mhz", s.sm_mhz ? json(*s.sm_mhz) : json(nullptr)},
                         {"gpu_c", s.gpu_c ? json(*s.gpu_c) : json(nullptr)},
                         {"power_w", opt(s.power_w)},
                         {"util_pct", s.util_pct ? json(*s.util_pct) : json(nullptr)}});
    sustained = {{"preset", report.sustained->preset},
                 {"gpus", report.sustained->gpus},
                 {"throughput", thr},
                 {"samples", samples}};
  }
  json doc = {{"schema", "gpuvet.scale/1"},
              {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}}},
              {"ran", report.ran},
              {"peak_tflops", opt(report.peak_tflops)},
              {"peak_method", opt(report.peak_method)},
              {"results", results},
              {"sustained", sustained},
              {"notes", report.notes},
              {"wall_ms", report.wall_ms}};
  return report::dump_document(doc, indent);
}

}  // namespace gpuvet
