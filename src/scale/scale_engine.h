// scale/scale_engine.h — the GPU side of `gpuvet scale` (scale_engine.cu, GPUVET_CUDA only).
#pragma once

#include <string>
#include <vector>

#include "gpuvet/scale.h"

namespace gpuvet::scale {

// Measured dense bf16 GEMM rate of one GPU in TFLOP/s (one 8192³ cuBLASLt GEMM, best of 3;
// the WMMA fallback's 4096³ without cuBLASLt), `backend` saying which, or empty with `error`.
std::optional<double> measure_peak_tflops(int device, const std::string& cublas_library,
                                          std::string* backend, std::string* error);

// Test hook: make one checked result wrong on purpose, so the checks are seen to catch it.
enum class Plant { kNone, kGemm, kCollective };

struct EngineConfig {
  ScalePreset preset;        // with overrides applied
  std::vector<int> devices;  // CUDA ordinals, size N
  int warmup_steps = 3;
  int steps = 30;
  bool overlap = true;
  int grad_accumulation = 1;
  double request_rate_hz = 0;
  std::string nccl_library;
  std::string cublas_library;   // "" : $GPUVET_CUBLASLT_LIBRARY or libcublasLt.so.13
  bool flops_override = false;  // --flops: square GEMMs of that many FLOPs, not the layer
  std::chrono::milliseconds collective_timeout{20000};
  double duration_s = 0;  // sustained: run steps until this many seconds have passed
  double sample_interval_s = 1.0;
  Plant plant = Plant::kNone;
  // Tests: schedule and check the collectives even on one GPU (a one-rank communicator).
  bool force_collectives = false;
};

// Runs one configuration: fills step_ms, mean/compute/comm ms, achieved TFLOP/s, run
// (workload, preset, gpus, throughput, comm_share), the checks that failed (wrong_data) or
// error. For sustained runs also fills
// `trace->throughput` per interval (the caller samples NVML in parallel).
ScaleResult run_config(const EngineConfig& config, SustainedTrace* trace);

}  // namespace gpuvet::scale
