// `gpuvet scale` without the GPU: presets, statistics, the run plan, NVML sampling for the
// sustained mode. The renderers are in report/scale.cc; the GPU engine is scale_engine.cu
// (GPUVET_CUDA only).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpuvet/progress.h"
#include "gpuvet/scale.h"
#include "probe/nvml_probe.h"
#include "probe/nvml_sampler.h"

#if GPUVET_HAVE_CUDA
#include <cuda_runtime.h>

#include "scale/scale_engine.h"
#endif

namespace gpuvet {

namespace {
constexpr std::size_t kMiB = 1u << 20;
}  // namespace

const char* parallelism_name(Parallelism p) {
  switch (p) {
    case Parallelism::kDataParallel:
      return "ddp";
    case Parallelism::kFullySharded:
      return "fsdp";
    case Parallelism::kTensorParallel:
      return "tp";
  }
  return "?";
}

const std::vector<ScalePreset>& scale_presets() {
  // Transformer presets are LLaMA-shaped layers: attention QKV and output projections (4 h²
  // parameters) and a SwiGLU MLP (gate, up, down: 3 h f), computed as the bf16 GEMMs of
  // those shapes (step_schedule.cc). FLOPs: 6 × parameters × tokens for a training step
  // (forward + backward), 2 × parameters per row of a forward pass. Gradients are float32 (4 B
  // per parameter), as PyTorch DDP and FSDP reduce them under bf16 autocast (parameters and
  // gradients stay float32); DDP's default bucket is 25 MiB. A ResNet-50-sized CNN is 4.1 G
  // multiply-accumulates (8.2 GFLOP) forward per 224² image, ×3 with the backward pass, run as
  // square bf16 GEMMs.
  static const std::vector<ScalePreset> kPresets = [] {
    const auto layer_params = [](double h, double f) { return 4 * h * h + 3 * h * f; };
    const auto train_layers = [&](const char* name, const char* what, int h, int f, int tokens,
                                  int layers, Parallelism par) {
      const double params = layer_params(h, f) * layers;
      ScalePreset p;
      p.name = name, p.workload = "train", p.description = what;
      p.flops = 6 * params * tokens;
      p.grad_bytes = static_cast<std::size_t>(params * 4);
      p.bucket_bytes = 25 * kMiB;
      p.layers = layers;
      p.hidden = h, p.ffn = f, p.tokens = tokens;
      p.parallelism = par;
      return p;
    };
    const auto tp_infer = [&](const char* name, const char* what, int rows, int passes) {
      ScalePreset p;
      p.name = name, p.workload = "infer", p.description = what;
      p.layers = 32;
      p.flops = 32 * 2.0 * rows * layer_params(4096, 11008);
      p.activation_bytes = static_cast<std::size_t>(rows) * 4096 * 2;
      p.tokens_per_request = passes;
      p.hidden = 4096, p.ffn = 11008, p.tokens = rows;
      p.parallelism = Parallelism::kTensorParallel;
      return p;
    };
    ScalePreset cnn;
    cnn.name = "cnn-small", cnn.workload = "train";
    cnn.description =
        "ResNet-50-sized CNN, 32 images per GPU, data parallel: 0.79 TFLOP (as square bf16 "
        "GEMMs) and 25.6 M float32 gradients per step";
    cnn.flops = 3 * 2 * 4.1e9 * 32;
    cnn.grad_bytes = static_cast<std::size_t>(25.6e6 * 4);
    cnn.bucket_bytes = 25 * kMiB;
    std::vector<ScalePreset> v = {
        cnn,
        train_layers("llm-1b-layer",
                     "one layer of a 1B LLaMA-shaped transformer (hidden 2048, MLP 5504, 50.6 M "
                     "parameters), 4096 tokens per GPU, data parallel (DDP buckets)",
                     2048, 5504, 4096, 1, Parallelism::kDataParallel),
        train_layers("llm-7b-layer",
                     "one layer of LLaMA-7B (hidden 4096, MLP 11008, 202 M parameters), 2048 "
                     "tokens per GPU, data parallel (DDP buckets)",
                     4096, 11008, 2048, 1, Parallelism::kDataParallel),
        train_layers("llm-7b-fsdp",
                     "4 layers of LLaMA-7B (809 M parameters), 2048 tokens per GPU, fully "
                     "sharded (FSDP / ZeRO-3): bf16 all-gather per layer before forward and "
                     "backward, fp32 reduce-scatter of its gradients",
                     4096, 11008, 2048, 4, Parallelism::kFullySharded),
        tp_infer("decoder-7b",
                 "LLaMA-7B decode, batch 8, 32 layers, tensor parallel: per token and layer the "
                 "projections' bf16 GEMMs split over the GPUs, an all-reduce of 8 × 4096 × 2 B "
                 "after attention and after the MLP; 16 tokens per request",
                 8, 16),
        tp_infer("prefill-7b",
                 "LLaMA-7B prefill, batch 8 × 512-token prompts, 32 layers, tensor parallel: "
                 "4096 rows per GEMM, an all-reduce of 4096 × 4096 × 2 B after attention and "
                 "after the MLP of each layer",
                 8 * 512, 1),
    };
    return v;
  }();
  return kPresets;
}

const ScalePreset* find_scale_preset(const std::string& name) {
  for (const auto& p : scale_presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::optional<double> percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

void summarise_scale(ScaleReport& report) {
  std::map<std::pair<std::string, std::string>, double> single;  // (workload, preset) → thr(1)
  for (auto& r : report.results) {
    ScaleRun& run = r.run;
    run.p50_ms = percentile(r.step_ms, 50);
    run.p95_ms = percentile(r.step_ms, 95);
    run.p99_ms = percentile(r.step_ms, 99);
    if (!r.step_ms.empty()) {
      run.max_ms = *std::max_element(r.step_ms.begin(), r.step_ms.end());
      double sum = 0;
      for (double x : r.step_ms) sum += x;
      r.mean_ms = sum / static_cast<double>(r.step_ms.size());
    }
    if (run.gpus == 1 && run.throughput && !r.error && !run.offered_rate_hz)
      single[{run.workload, run.preset}] = *run.throughput;
  }
  // At a fixed offered load every configuration serves the same requests per second, so
  // efficiency compares latency: ideal N-way tensor parallelism answers N times sooner.
  std::map<std::pair<std::string, std::string>, double> single_p50;
  for (const auto& r : report.results)
    if (r.run.gpus == 1 && r.run.offered_rate_hz && r.run.p50_ms && !r.error)
      single_p50[{r.run.workload, r.run.preset}] = *r.run.p50_ms;
  for (auto& r : report.results) {
    if (r.run.gpus < 2) continue;
    const std::pair key{r.run.workload, r.run.preset};
    if (r.run.offered_rate_hz) {
      const auto it = single_p50.find(key);
      if (r.run.p50_ms && *r.run.p50_ms > 0 && it != single_p50.end())
        r.efficiency = it->second / (r.run.gpus * *r.run.p50_ms);
      continue;
    }
    const auto it = single.find(key);
    if (r.run.throughput && it != single.end() && it->second > 0)
      r.efficiency = *r.run.throughput / (r.run.gpus * it->second);
  }
}

Facts scale_facts(const ScaleReport& report) {
  Facts judged;
  for (const auto& r : report.results) {
    if (!r.error) judged.scale_runs.push_back(r.run);
    // A result that failed its check is wrong data, whatever else the run measured.
    for (const auto& w : r.wrong_data) {
      Measurement m;
      m.tool = "gpuvet scale";
      m.test = fmt::format("{} on {} GPU{}", r.run.preset, r.run.gpus, r.run.gpus == 1 ? "" : "s");
      m.src_gpu = w.gpu;
      m.wrong_data = w.what;
      judged.measurements.push_back(std::move(m));
    }
  }
  if (report.sustained) {
    judged.samples = report.sustained->samples;
    for (const auto& [t_s, items_per_s] : report.sustained->throughput)
      judged.throughput_samples.push_back(
          {t_s, items_per_s, report.sustained->preset, report.sustained->gpus});
  }
  return judged;
}

ScaleReport run_scale(const ScaleOptions& options, [[maybe_unused]] const Env& env) {
  ScaleReport report;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<const ScalePreset*> presets;
  if (options.presets.empty()) {
    for (const auto& p : scale_presets()) presets.push_back(&p);
  } else {
    for (const auto& name : options.presets) {
      const ScalePreset* p = find_scale_preset(name);
      if (!p) {
        report.notes.push_back("unknown preset '" + name + "'");
        return report;
      }
      presets.push_back(p);
    }
  }
#if !GPUVET_HAVE_CUDA
  report.notes.push_back(
      "this gpuvet was built without CUDA (configure with -DGPUVET_CUDA=ON, or use "
      "scripts/build-portable): the scaling test cannot run");
#else
  ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    report.notes.push_back(std::string("CUDA unavailable: ") +
                           (e != cudaSuccess
                                ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)
                                : "no GPU"));
    return report;
  }
  report.ran = true;
  std::vector<int> counts = options.gpu_counts;
  if (counts.empty()) {
    for (int n = 1; n < count; n *= 2) counts.push_back(n);
    counts.push_back(count);
  }
  std::vector<int> usable;
  for (int n : counts) {
    if (n >= 1 && n <= count && std::find(usable.begin(), usable.end(), n) == usable.end())
      usable.push_back(n);
    else if (n > count)
      report.notes.push_back(fmt::format("{} GPUs asked, {} present: skipped", n, count));
  }
  std::sort(usable.begin(), usable.end());
  std::string error, method;
  report.peak_tflops = scale::measure_peak_tflops(0, options.cublas_library, &method, &error);
  if (report.peak_tflops)
    report.peak_method = method;
  else
    report.notes.push_back("dense bf16 GEMM peak not measured: " + error);

  auto config_for = [&](const ScalePreset& preset, int n) {
    scale::EngineConfig c;
    c.preset = preset;
    if (options.flops > 0) {
      c.preset.flops = options.flops;
      c.flops_override = true;
    }
    c.cublas_library = options.cublas_library;
    if (options.grad_bytes > 0) c.preset.grad_bytes = options.grad_bytes;
    if (options.bucket_bytes > 0) c.preset.bucket_bytes = options.bucket_bytes;
    for (int i = 0; i < n; ++i) c.devices.push_back(i);
    c.warmup_steps = options.warmup_steps;
    c.steps = options.steps;
    c.overlap = options.overlap;
    c.grad_accumulation = options.grad_accumulation;
    c.request_rate_hz = options.request_rate_hz;
    c.nccl_library = options.nccl_library;
    c.collective_timeout = options.collective_timeout;
    return c;
  };
  if (options.duration_s > 0) {
    const ScalePreset& preset = *presets.front();
    const int n = usable.back();
    scale::EngineConfig c = config_for(preset, n);
    c.duration_s = options.duration_s;
    c.sample_interval_s = options.sample_interval_s;
    SustainedTrace trace;
    trace.preset = preset.name;
    trace.gpus = n;
    probe::SamplerOptions sampling;
    sampling.nvml_library = options.nvml_library;
    sampling.interval_s = options.sample_interval_s;
    probe::NvmlSampler sampler(std::move(sampling));
    Progress progress(STDERR_FILENO, options.progress, 1);
    progress.step(fmt::format("sustained {} on {} GPU(s) for {}", preset.name, n,
                              format_elapsed(options.duration_s)));
    sampler.start();
    ScaleResult r = scale::run_config(c, &trace);
    trace.samples = sampler.stop();
    report.abandoned_probes = sampler.abandoned_probes();
    for (const auto& note : sampler.notes()) report.notes.push_back(note);
    report.results.push_back(std::move(r));
    report.sustained = std::move(trace);
  } else {
    Progress progress(STDERR_FILENO, options.progress,
                      static_cast<int>(presets.size() * usable.size()));
    for (const ScalePreset* preset : presets)
      for (int n : usable) {
        progress.step(fmt::format("{} on {} GPU(s)", preset->name, n));
        report.results.push_back(scale::run_config(config_for(*preset, n), nullptr));
      }
  }
#endif
  summarise_scale(report);
  report.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace gpuvet
