// gpuvet/scale.h — the scaling test: the same synthetic training step and the same synthetic
// inference request on 1 GPU and on N, with time per step as a distribution, throughput,
// scaling efficiency, the compute/communication split and tail latencies.
//
// Training (data parallel): per GPU a compute phase of known FLOPs (the bf16 tensor-core
// GEMMs of a transformer layer's forward and backward pass, through cuBLASLt) producing gradients,
// then the gradient all-reduce through NCCL in buckets, overlapped with the compute (bucket k is
// reduced while chunk k+1 computes) or not. Inference (tensor parallel): per token and layer a
// compute phase split over the GPUs, then a small all-reduce on the critical path; requests arrive
// at a fixed rate and their latency is measured from arrival to last token. Needs a CUDA build
// (GPUVET_CUDA) and NCCL for N > 1; every collective has a deadline and a stuck rank is named.
// Memory use is checked against free memory first. Not thread-safe: one run at a time.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gpuvet/env.h"
#include "gpuvet/facts.h"

namespace gpuvet {

// How a preset spreads over N GPUs: data parallel (PyTorch DDP: every GPU the whole step,
// gradients all-reduced in buckets), fully sharded (FSDP full shard / ZeRO-3: parameters
// all-gathered per layer, gradients reduce-scattered) or tensor parallel (Megatron: each
// layer's projections split over the GPUs, two all-reduces per layer).
enum class Parallelism { kDataParallel, kFullySharded, kTensorParallel };
const char* parallelism_name(Parallelism p);  // "ddp", "fsdp", "tp"

struct ScalePreset {
  std::string name;      // "cnn-small", "llm-7b-layer", "llm-7b-fsdp", "decoder-7b", …
  std::string workload;  // "train" or "infer"
  std::string description;
  // train: per GPU per step. infer: per token, for the whole model (split over N GPUs).
  double flops = 0;
  std::size_t grad_bytes = 0;        // train: gradients all-reduced per step (per GPU)
  std::size_t bucket_bytes = 0;      // train: all-reduce bucket size (DDP default 25 MiB)
  int layers = 1;                    // transformer layers per step (train) or pass (infer)
  std::size_t activation_bytes = 0;  // infer: bytes of one all-reduce (rows × hidden × 2 B)
  int tokens_per_request = 0;        // infer: passes per request (decode: tokens; prefill: 1)
  // Transformer layer shapes (0: none, square GEMMs of `flops`): train runs each layer's
  // forward and backward projections for `tokens` rows; infer each layer's share per GPU for
  // `tokens` rows (decode: the batch; prefill: batch × prompt length).
  int hidden = 0;
  int ffn = 0;     // MLP width (gate and up are 2 × ffn wide: SwiGLU)
  int tokens = 0;  // train: tokens per GPU per step; infer: rows per pass
  Parallelism parallelism = Parallelism::kDataParallel;
};

// The built-in presets, shaped like real models (see docs/measurement.md for the numbers).
const std::vector<ScalePreset>& scale_presets();
const ScalePreset* find_scale_preset(const std::string& name);

struct ScaleOptions {
  std::vector<std::string> presets;  // empty: every preset
  std::vector<int> gpu_counts;       // empty: 1, 2, 4, … up to every GPU (and the total)
  int warmup_steps = 3;
  int steps = 30;              // timed steps (train) or requests (infer) per config
  bool overlap = true;         // train: overlap the bucket all-reduces with compute
  int grad_accumulation = 1;   // train: compute phases per all-reduce
  double request_rate_hz = 0;  // infer: 0 = back to back; else fixed arrivals
  // Overrides of the preset (0 = preset value).
  double flops = 0;
  std::size_t grad_bytes = 0;
  std::size_t bucket_bytes = 0;
  double duration_s = 0;  // > 0: sustained mode on the largest GPU count, sampling NVML
  double sample_interval_s = 1.0;
  std::string nccl_library;
  std::string cublas_library;  // --cublas-lib; "" = $GPUVET_CUBLASLT_LIBRARY, libcublasLt.so.13
  std::optional<std::string> nvml_library;  // as CollectOptions::nvml_library
  std::chrono::milliseconds collective_timeout{20000};
  bool progress = false;  // [k/N] status line on stderr when it is a terminal
};

// One configuration's outcome; `run` is what the rules read (Facts::scale_runs).
struct ScaleResult {
  ScaleRun run;
  std::vector<double> step_ms;  // every timed step (train) or request latency (infer)
  std::optional<double> mean_ms;
  std::optional<double> compute_ms;       // mean per step, measured with events
  std::optional<double> comm_ms;          // mean collective time per step (overlapped or not)
  std::optional<double> exposed_comm_ms;  // mean collective time with no compute under it
  // train: the same step with only its GEMMs, and with only its all-reduces (0 on 1 GPU)
  std::optional<double> compute_alone_ms;
  std::optional<double> comm_alone_ms;
  // train: how much longer the step's compute took than the same compute alone, the cost of
  // the collectives' SMs and memory traffic beside it (counted in comm_share)
  std::optional<double> overlap_slowdown_ms;
  std::optional<double> achieved_tflops;       // GEMM FLOPs / compute time, per GPU
  std::optional<std::string> compute_backend;  // "cublaslt-bf16" or "wmma-bf16-fallback"
  std::optional<double> efficiency;            // throughput(N) / (N × throughput(1)), N > 1
  std::optional<std::string> error;            // what failed (OOM check, NCCL, timeout, …)
  // Results that failed their check (a GEMM's sampled outputs against an fp32 reference, a
  // collective's elements against the exact sum): data-corruption, whatever the timings say.
  struct WrongData {
    int gpu = 0;
    std::string what;
  };
  std::vector<WrongData> wrong_data;
  std::vector<std::string> notes;
};

// Sustained mode: throughput per interval and the NVML samples taken alongside.
struct SustainedTrace {
  std::string preset;
  int gpus = 0;
  std::vector<std::pair<double, double>> throughput;  // (seconds from start, items/s)
  std::vector<GpuSample> samples;
};

struct ScaleReport {
  std::vector<ScaleResult> results;
  std::optional<double> peak_tflops;       // measured dense bf16 GEMM rate of GPU0 (peak_method)
  std::optional<std::string> peak_method;  // "cuBLASLt bf16 8192³", …
  std::optional<SustainedTrace> sustained;
  std::vector<std::string> notes;
  bool ran = false;  // false: nothing could run here (no CUDA, no GPU); notes say why
  double wall_ms = 0;
  // An NVML sample was abandoned with its thread still inside the driver: leave with
  // _exit() once output is flushed (as Collection::abandoned_probes).
  bool abandoned_probes = false;
};

// Runs every configuration on this machine. The sustained mode's samples come from NVML
// alone (options.nvml_library, loaded once); `env` outlives the call.
ScaleReport run_scale(const ScaleOptions& options, const Env& env);

// Percentile (0..100) of a sample, linear interpolation; empty for an empty sample.
std::optional<double> percentile(std::vector<double> values, double p);

// Fills run.p50/p95/p99/max and efficiency from step_ms and throughput, across results.
void summarise_scale(ScaleReport& report);

// What the rules judge of a report: the runs that finished (scale_runs), every failed check as
// a measurement with wrong data (data-corruption), the sustained samples and throughput.
Facts scale_facts(const ScaleReport& report);

}  // namespace gpuvet
