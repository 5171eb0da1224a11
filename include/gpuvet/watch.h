// gpuvet/watch.h — `gpuvet watch`: every GPU followed through NVML alone, interval after
// interval, with the host's PSI beside it, judged at the end by the rules over time.
//
// One collection of the node's facts at the start (identity, limits, topology: what the
// rules compare against); then a light sampler on its own thread that reads only NVML
// (one loaded library, the probe watchdog, no sysfs walk) and /proc/pressure. The caller
// takes each interval as it comes (a live display, JSON lines) and, at the end, the facts
// with the whole series in them for `diagnose`. One thread drives a Watch.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuvet/collect.h"
#include "gpuvet/env.h"
#include "gpuvet/facts.h"

namespace gpuvet {

struct WatchOptions {
  double interval_s = 1.0;
  double duration_s = 0;   // 0: until stop is asked for
  std::vector<int> gpus;   // only these GPU indices (empty: all)
  CollectOptions collect;  // the collection at the start; its NVML library is the sampler's
  bool host_psi = true;    // read /proc/pressure under collect.root each interval
};

// The samples of one interval: every watched GPU that answered, and the host.
struct WatchInterval {
  double t_s = 0;  // seconds since sampling began
  std::vector<GpuSample> gpus;
  std::optional<HostSample> host;
};

class Watch {
 public:
  Watch(WatchOptions options, const Env& env);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // Collects the node's facts and starts sampling. The facts are there to read after it
  // returns, with or without GPUs (a node without a driver is watched for nothing: check
  // facts().gpus before looping).
  const Collection& start();
  const Facts& facts() const { return collection_.facts; }

  // Waits for the next interval's samples, for the end of the duration, or for `stop`,
  // polling every few milliseconds. Empty when sampling is over (duration reached, stop
  // asked for, or the sampler gave up: notes() say why).
  std::optional<WatchInterval> next(const std::atomic<bool>& stop);

  // Stops sampling; the start's facts with the series in samples and host_samples, and
  // the sampler's notes among the facts' notes.
  Facts finish();
  // A probe thread was left inside NVML (at the start or while sampling).
  bool abandoned_probes() const;
  double elapsed_s() const;

 private:
  struct Impl;
  WatchOptions options_;
  const Env& env_;
  Collection collection_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuvet
