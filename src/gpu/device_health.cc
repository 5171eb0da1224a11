// gpu/device_health.cc — devices after a sticky CUDA error (device_health.h).
#include "gpu/device_health.h"

namespace gpuvet::gpu {

void DeviceHealth::record(int device, const GpuStatus& s) {
  if (device < 0 || !is_sticky(s.code)) return;
  std::lock_guard<std::mutex> lock(mu_);
  dead_.emplace(device, s.text);
}

bool DeviceHealth::usable(int device) const { return dead_reason(device).empty(); }

std::string DeviceHealth::dead_reason(int device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = dead_.find(device);
  return it == dead_.end() ? std::string() : it->second;
}

GpuStatus DeviceHealth::check(int device) const {
  std::string why = dead_reason(device);
  if (why.empty()) return {};
  return GpuStatus::error("not run: GPU" + std::to_string(device) + " unusable after " + why);
}

}  // namespace gpuvet::gpu
