// scale/scale_engine.h — the GPU side of `gpuvet scale` (scale_engine.cu, GPUVET_CUDA only).
#pragma once

#include <string>
#include <vector>

#include "gpuvet/scale.h"

namespace gpuvet::scale {

// Measured FMA peak of one GPU in TFLOP/s (same precision as the GEMM kernel), or empty
// with `error` set.
std::optional<double> measure_peak_tflops(int device, std::string* error);

struct EngineConfig {
  ScalePreset preset;        // with overrides applied
  std::vector<int> devices;  // CUDA ordinals, size N
  int warmup_steps = 3;
  int steps = 30;
  bool overlap = true;
  int grad_accumulation = 1;
  double request_rate_hz = 0;
  std::string nccl_library;
  std::chrono::milliseconds collective_timeout{20000};
  double duration_s = 0;  // sustained: run steps until this many seconds have passed
  double sample_interval_s = 1.0;
};

// Runs one configuration: fills step_ms, mean/compute/comm ms, achieved TFLOP/s, run
// (workload, preset, gpus, throughput, comm_share) or error. For sustained runs also fills
// `trace->throughput` per interval (the caller samples NVML in parallel).
ScaleResult run_config(const EngineConfig& config, SustainedTrace* trace);

}  // namespace gpuvet::scale
