// gpu/cuda_status.h — the one status of the GPU kit: CUDA and NCCL errors, missed deadlines
// and stops, as bench and scale see them.
//
// A GpuStatus is what a step of GPU work came to: ok, an error (with the cudaError_t when
// CUDA gave one, so a sticky error can be told apart), a wait past its deadline, or a stop
// because another part of the same run failed. `text` is ready to print: a CUDA error is
// "cudaErrorXxx: its description" (cuda_text), with the failing call in front where the
// caller names one ("cudaEventRecord: cudaErrorXxx: …"). `ranks` pins a failure of a set of
// ranks (one per GPU, as in nccl_comms.h) on the rank that failed, or on every rank still
// pending at a timeout, the first one named; the text of those is worded by
// Communicators::describe, which knows the devices and the deadline.
//
// The kit's functions that return one are [[nodiscard]] (the type is not: nvcc would warn on
// every `s = f()`). It is deliberately not gpuvet::Status (include/gpuvet/status.h, the API's error
// model): GPU failures stay inside bench and scale, which turn them into cells, notes and errors.
// A plain value: safe to copy between threads. The functions are thread-safe. Only built
// with GPUVET_CUDA; C++17, so CUDA sources can include it.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace gpuvet::gpu {

struct GpuStatus {
  enum class Kind { kOk, kError, kTimeout, kStopped };

  Kind kind = Kind::kOk;
  cudaError_t code = cudaSuccess;  // the CUDA error, when CUDA gave one
  std::string text;                // empty when ok; timeouts and stops may leave it empty
  std::vector<int> ranks;          // see the file comment; empty when not pinned on a rank

  bool ok() const { return kind == Kind::kOk; }
  bool is_error() const { return kind == Kind::kError; }
  bool is_timeout() const { return kind == Kind::kTimeout; }
  bool is_stopped() const { return kind == Kind::kStopped; }

  static GpuStatus error(std::string text, cudaError_t code = cudaSuccess) {
    GpuStatus s;
    s.kind = Kind::kError;
    s.code = code;
    s.text = std::move(text);
    return s;
  }
  static GpuStatus timeout(std::vector<int> pending = {}) {
    GpuStatus s;
    s.kind = Kind::kTimeout;
    s.ranks = std::move(pending);
    return s;
  }
  static GpuStatus stopped() {
    GpuStatus s;
    s.kind = Kind::kStopped;
    return s;
  }
};

// "cudaErrorIllegalAddress: an illegal memory access was encountered"
std::string cuda_text(cudaError_t e);

// ok for cudaSuccess; else an error carrying `e`, text cuda_text(e) ("what: " in front when
// given). Clears CUDA's last-error slot, so a non-sticky error does not show again at the
// next launch check.
[[nodiscard]] GpuStatus cuda_status(cudaError_t e);
[[nodiscard]] GpuStatus cuda_status(const char* what, cudaError_t e);

// An error with "what: " in front of its text; any other status unchanged.
[[nodiscard]] GpuStatus with_context(const std::string& what, GpuStatus s);

// A failure pinned on `rank`; ok unchanged.
[[nodiscard]] GpuStatus at_rank(int rank, GpuStatus s);

// Errors after which the device's context is corrupt until a reset: every later call on it
// fails too (illegal address, launch failure, uncorrectable ECC, …).
bool is_sticky(cudaError_t e);

// "20 s", "1.5 s", "0.001 s": a deadline as the timeout texts say it.
std::string seconds_text(std::chrono::milliseconds ms);

// What GPUVET_CUDA_TRY accepts: a GpuStatus, or a cudaError_t (as cuda_status(e)).
inline GpuStatus as_status(GpuStatus s) { return s; }
inline GpuStatus as_status(cudaError_t e) { return cuda_status(e); }

}  // namespace gpuvet::gpu

// Returns from the enclosing function (which returns GpuStatus) when `expr` — a GpuStatus or
// a cudaError_t — is not ok.
#define GPUVET_CUDA_TRY(expr)                                                     \
  do {                                                                            \
    ::gpuvet::gpu::GpuStatus gpuvet_try_status_ = ::gpuvet::gpu::as_status(expr); \
    if (!gpuvet_try_status_.ok()) return gpuvet_try_status_;                      \
  } while (0)
