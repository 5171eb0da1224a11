// gpu/device_health.h — which GPUs of a run are unusable after a sticky CUDA error.
//
// After a sticky error (is_sticky: illegal address, uncorrectable ECC, …) a device's context
// fails every later call until a reset, which gpuvet must not do behind the caller's back. A
// run owns one DeviceHealth and passes it down; every measurement records its failures in
// it and checks it before using a device, so later work says why it did not run instead of
// failing again with a stray error. Nothing is process-wide: two runs have two of these.
// Thread-safe: every member may be called from any thread (one mutex inside).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "gpu/cuda_status.h"

namespace gpuvet::gpu {

class DeviceHealth {
 public:
  DeviceHealth() = default;
  DeviceHealth(const DeviceHealth&) = delete;
  DeviceHealth& operator=(const DeviceHealth&) = delete;

  // Remembers `device` as unusable when `s` is a sticky CUDA error; the first one is kept.
  // Anything else (device < 0, another error, ok) is ignored.
  void record(int device, const GpuStatus& s);

  bool usable(int device) const;
  // The sticky error's text, empty while the device is usable.
  std::string dead_reason(int device) const;
  // ok while usable, else an error "not run: GPU3 unusable after cudaErrorXxx: …".
  [[nodiscard]] GpuStatus check(int device) const;

 private:
  mutable std::mutex mu_;
  std::map<int, std::string> dead_;  // device → text of its sticky error
};

}  // namespace gpuvet::gpu
