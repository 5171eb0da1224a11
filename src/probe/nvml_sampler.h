// probe/nvml_sampler.h — a time series of every GPU read through NVML alone, every
// interval: clocks, clock-event reasons, temperature, power and utilisation (what
// `gpuvet scale --duration` needs), and with `health` the counters `gpuvet watch` follows
// (T.Limit margin, power limit, memory, PCIe link and replays, ECC, NVLink states,
// accumulated clock-event time). With `host_fs`, the host's PSI beside it.
//
// The sampler owns one thread. It loads NVML once, on that thread under the init
// deadline, and reuses the library for every sample. A GPU whose probe did not return by
// its deadline is not asked again (its thread may still be inside the driver); a hang or
// failure of NVML's initialisation stops the sampling. Either way the process has a
// thread stuck in the driver and must leave through _exit: abandoned_probes() says so.
// start() and stop() from one thread; samples_taken() and finished() from any; the rest
// after stop().
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpuvet/env.h"
#include "gpuvet/facts.h"

namespace gpuvet::probe {

struct SamplerOptions {
  std::optional<std::string> nvml_library;  // as CollectOptions::nvml_library
  double interval_s = 1.0;
  std::chrono::milliseconds init_timeout{4000};
  std::chrono::milliseconds gpu_timeout{3000};
  bool health = false;    // NvmlProbeOptions::sample_health
  std::vector<int> gpus;  // only these indices (empty: all)
  // With health: how often to read the accumulated clock-event times (NVML's violation
  // counters, ~3 ms per reason per GPU on an H100, most of a sample's cost). They are
  // cumulative, so a sample in between carries the last values read; 0: every sample.
  double violation_interval_s = 10.0;
  // Read /proc/pressure/{cpu,io,memory} through this each interval (null: no host series).
  const FileSystem* host_fs = nullptr;
};

class NvmlSampler {
 public:
  explicit NvmlSampler(SamplerOptions options) : options_(std::move(options)) {}
  ~NvmlSampler() { stop(); }
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  void start();
  // Stops and joins the thread (bounded by the NVML deadlines); returns every sample.
  std::vector<GpuSample> stop();

  std::size_t samples_taken() const;
  // Samples [from, samples_taken()) so far, and the host series likewise: for a live
  // display while the sampler runs.
  std::vector<GpuSample> samples_since(std::size_t from) const;
  std::vector<HostSample> host_samples_since(std::size_t from) const;
  // After stop(): the host series.
  std::vector<HostSample> host_samples() const { return host_samples_since(0); }
  // The thread has given up on its own (NVML failed or hung): stop() returns at once.
  bool finished() const { return finished_; }
  // A probe thread was left inside NVML: leave with _exit, not through destructors.
  bool abandoned_probes() const { return abandoned_probes_; }
  // How many probes were abandoned (at most one per GPU, plus one for initialisation).
  int abandoned_count() const { return abandoned_count_; }
  // Why a GPU, or all of them, stopped being sampled.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  void loop();
  void sample_host(double t);

  const SamplerOptions options_;
  std::chrono::steady_clock::time_point t0_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  mutable std::mutex mu_;
  std::vector<GpuSample> samples_;
  std::vector<HostSample> host_samples_;
  // The PSI totals of the previous host sample (µs), cpu/io/memory.
  std::optional<std::uint64_t> psi_prev_[3];
  double psi_prev_t_ = 0;
  // Written by the sampler thread, read after it is joined.
  bool abandoned_probes_ = false;
  int abandoned_count_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace gpuvet::probe
