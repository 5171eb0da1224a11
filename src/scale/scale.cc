// `gpuvet scale` without the GPU: presets, statistics, the run plan, NVML sampling for the
// sustained mode. The renderers are in report/scale.cc; the GPU engine is scale_engine.cu
// (GPUVET_CUDA only).
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

#include "gpuvet/scale.h"
#include "probe/nvml_probe.h"
#include "scale/nvml_sampler.h"

#if GPUVET_HAVE_CUDA
#include <cuda_runtime.h>

#include "scale/scale_engine.h"
#endif

namespace gpuvet {

namespace {
constexpr std::size_t kMiB = 1u << 20;
}  // namespace

const std::vector<ScalePreset>& scale_presets() {
  // FLOPs: 6 × parameters × tokens for a transformer training step (forward + backward),
  // 2 × parameters per token for inference; a ResNet-50-sized CNN is ≈4.1 GFLOP forward per
  // 224² image, ×3 with the backward pass. Gradients are float32 (4 B per parameter); DDP's
  // default bucket is 25 MiB.
  static const std::vector<ScalePreset> kPresets = {
      {"cnn-small", "train",
       "ResNet-50-sized CNN, 32 images per GPU: 0.39 TFLOP and 25.6 M float32 gradients per step",
       3 * 4.1e9 * 32, static_cast<std::size_t>(25.6e6 * 4), 25 * kMiB, 1, 0, 0},
      {"llm-1b-layer", "train",
       "one layer of a 1B transformer (hidden 2048, 50 M parameters), 4096 tokens per GPU",
       6 * 50.3e6 * 4096, static_cast<std::size_t>(50.3e6 * 4), 25 * kMiB, 1, 0, 0},
      {"llm-7b-layer", "train",
       "one layer of a 7B transformer (hidden 4096, 201 M parameters), 2048 tokens per GPU",
       6 * 201.3e6 * 2048, static_cast<std::size_t>(201.3e6 * 4), 25 * kMiB, 1, 0, 0},
      {"decoder-7b", "infer",
       "7B decoder, batch 8, 32 layers, tensor-parallel: per token 8 × 2 × 7 GFLOP, one "
       "all-reduce of 8 × 4096 × 2 B per layer; 16 tokens per request",
       8 * 2 * 7e9, 0, 0, 32, 8 * 4096 * 2, 16},
  };
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
    if (run.gpus == 1 && run.throughput && !r.error)
      single[{run.workload, run.preset}] = *run.throughput;
  }
  for (auto& r : report.results) {
    const auto it = single.find({r.run.workload, r.run.preset});
    if (r.run.gpus > 1 && r.run.throughput && it != single.end() && it->second > 0)
      r.efficiency = *r.run.throughput / (r.run.gpus * it->second);
  }
}

namespace scale {

void NvmlSampler::start() {
  t0_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { loop(); });
}

std::vector<GpuSample> NvmlSampler::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

std::size_t NvmlSampler::samples_taken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_.size();
}

void NvmlSampler::loop() {
  struct MarkFinished {
    std::atomic<bool>& flag;
    ~MarkFinished() { flag = true; }
  } mark{finished_};
  probe::NvmlProbeOptions o;
  o.library_given_by_user = options_.nvml_library.has_value();
  o.library = options_.nvml_library.value_or("libnvidia-ml.so.1");
  o.init_timeout = options_.init_timeout;
  o.gpu_timeout = options_.gpu_timeout;
  o.cpu_affinity = false;
  o.samples_only = true;
  auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  };
  const auto loaded = probe::load_nvml(o);
  if (!loaded.library) {
    abandoned_probes_ = loaded.abandoned_threads;
    abandoned_count_ += loaded.abandoned_threads ? 1 : 0;
    notes_.push_back("no NVML samples: " + loaded.failure_message);
    return;
  }
  auto next = t0_;
  while (!stop_) {
    const probe::NvmlProbeResult r = probe::probe_nvml(o, loaded.library);
    const double t = since_start();
    if (r.abandoned_threads) {
      abandoned_probes_ = true;
      ++abandoned_count_;
    }
    if (r.failure != NvmlFailure::kNone) {
      notes_.push_back(fmt::format("NVML samples stopped at {:.1f} s: {}", t, r.failure_message));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& g : r.gpus) {
        if (g.unresponsive) continue;
        GpuSample s;
        s.gpu = g.index;
        s.t_s = t;
        s.sm_mhz = g.clocks.sm_mhz;
        s.gpu_c = g.thermal.gpu_c;
        s.power_w = g.power.draw_w;
        s.util_pct = g.utilization.gpu_pct;
        s.clock_event_mask = g.clock_events.active_mask;
        samples_.push_back(s);
      }
    }
    // A GPU that stopped answering is not asked again: a hung call would leave one more
    // thread inside the driver per sample.
    for (const auto& g : r.gpus)
      if (g.unresponsive &&
          std::find(o.skip_gpus.begin(), o.skip_gpus.end(), g.index) == o.skip_gpus.end()) {
        o.skip_gpus.push_back(g.index);
        notes_.push_back(
            fmt::format("GPU{} not sampled after {:.1f} s: {}", g.index, t, *g.unresponsive));
      }
    if (!r.gpus.empty() && o.skip_gpus.size() >= r.gpus.size()) {
      notes_.push_back("NVML samples stopped: no GPU answers");
      return;
    }
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(options_.interval_s));
    while (!stop_ && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace scale

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
  std::string error;
  report.peak_tflops = scale::measure_peak_tflops(0, &error);
  if (!report.peak_tflops) report.notes.push_back("FMA peak not measured: " + error);

  auto config_for = [&](const ScalePreset& preset, int n) {
    scale::EngineConfig c;
    c.preset = preset;
    if (options.flops > 0) c.preset.flops = options.flops;
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
    scale::SamplerOptions sampling;
    sampling.nvml_library = options.nvml_library;
    sampling.interval_s = options.sample_interval_s;
    scale::NvmlSampler sampler(std::move(sampling));
    if (options.progress)
      std::fprintf(stderr, "gpuvet scale: sustained %s on %d GPU(s) for %.0f s …\n",
                   preset.name.c_str(), n, options.duration_s);
    sampler.start();
    ScaleResult r = scale::run_config(c, &trace);
    trace.samples = sampler.stop();
    report.abandoned_probes = sampler.abandoned_probes();
    for (const auto& note : sampler.notes()) report.notes.push_back(note);
    report.results.push_back(std::move(r));
    report.sustained = std::move(trace);
  } else {
    for (const ScalePreset* preset : presets)
      for (int n : usable) {
        if (options.progress)
          std::fprintf(stderr, "gpuvet scale: %s on %d GPU(s) …\n", preset->name.c_str(), n);
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
