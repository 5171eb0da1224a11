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

}  // namespace gpuvet
