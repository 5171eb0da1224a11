// import/job_timeline.h — one rank's timeline (the GPU's kernels and copies, the host's steps,
// data loading, synchronisations and host-side collectives) split step by step into the figures
// of JobStep. The split is defined in docs/job.md beside Holistic Trace Analysis's terms.
//
// Pure functions of their input, O(n log n) in the spans, no I/O; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpuvet/facts.h"

namespace gpuvet::import {

// What a span of the GPU's timeline does: a compute kernel, a communication kernel (NCCL), a
// copy or memset.
enum class GpuWork : std::uint8_t { kCompute, kComm, kCopy };

struct GpuSpan {
  double start_us = 0;
  double end_us = 0;
  GpuWork work = GpuWork::kCompute;
};

// What a span of the host's timeline is: a step (ProfilerStep#N), the data loader handing out a
// batch, a synchronisation with the GPU (cudaStreamSynchronize, cudaDeviceSynchronize, a blocking
// copy, `.item()`), a collective executed by the host (gloo), a kernel launch call.
enum class HostWork : std::uint8_t { kStep, kDataLoader, kSync, kCollective, kLaunch };

struct HostSpan {
  double start_us = 0;
  double end_us = 0;
  HostWork work = HostWork::kStep;
  std::int64_t step = 0;  // kStep: its number
};

struct Timeline {
  std::vector<GpuSpan> gpu;
  std::vector<HostSpan> host;
};

// An idle gap between kernels no longer than this is launch latency (the host enqueues kernels
// about as fast as they run); so is a longer one during which the host was launching the next
// kernels (it was late: the GPU waited on its dispatch). HTA's idle-time breakdown uses the same
// kind of threshold and calls the second "host wait".
inline constexpr double kLaunchGapUs = 50.0;

// The steps of `timeline` in time order, each split (JobStep): only the host's kStep spans make
// steps; overlapping steps are cut at the next one's start. The GPU idle while the host is inside
// a collective (gloo runs them on the host) is exposed communication, not idle. `has_gpu` false (a trace without
// GPU activity) leaves the GPU figures empty. At most max_steps; a cut adds a line to `notes`.
// Sorts the timeline's spans in place.
std::vector<JobStep> split_steps(Timeline& timeline, bool has_gpu, std::size_t max_steps,
                                 std::vector<std::string>& notes);

}  // namespace gpuvet::import
