#include <fmt/format.h>

#include "gpuvet/facts.h"
#include "gpuvet/severity.h"

namespace gpuvet {

const char* path_type_name(PathType type) {
  switch (type) {
    case PathType::kNVLink:
      return "NV";
    case PathType::kPIX:
      return "PIX";
    case PathType::kPXB:
      return "PXB";
    case PathType::kPHB:
      return "PHB";
    case PathType::kNODE:
      return "NODE";
    case PathType::kSYS:
      return "SYS";
    case PathType::kSelf:
      return "X";
    case PathType::kUnknown:
      return "?";
  }
  return "?";
}

const char* p2p_status_code(P2PStatus status) {
  switch (status) {
    case P2PStatus::kOk:
      return "OK";
    case P2PStatus::kChipsetNotSupported:
      return "CNS";
    case P2PStatus::kGpuNotSupported:
      return "GNS";
    case P2PStatus::kTopologyNotSupported:
      return "TNS";
    case P2PStatus::kDisabledByRegkey:
      return "DR";
    case P2PStatus::kNotSupported:
      return "NS";
    case P2PStatus::kUnknown:
      return "U";
  }
  return "U";
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kOk:
      return "ok";
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "unknown";
}

std::vector<std::string> clock_event_names(std::uint64_t mask) {
  // nvmlClocksEventReason* / nvmlClocksThrottleReason* bits (nvml.h, driver 580).
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {0x1, "idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"},
  };
  std::vector<std::string> out;
  std::uint64_t known = 0;
  for (auto [bit, name] : kNames) {
    known |= bit;
    if (mask & bit) out.emplace_back(name);
  }
  if (mask & ~known) out.push_back(fmt::format("other_0x{:x}", mask & ~known));
  return out;
}

}  // namespace gpuvet
