// gpu/cuda_status.cc — CUDA error text, sticky errors, GpuStatus helpers (cuda_status.h).
#include "gpu/cuda_status.h"

#include <fmt/format.h>

namespace gpuvet::gpu {

std::string cuda_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

GpuStatus cuda_status(cudaError_t e) {
  if (e == cudaSuccess) return {};
  (void)cudaGetLastError();  // clear a non-sticky error so the next launch check is clean
  return GpuStatus::error(cuda_text(e), e);
}

GpuStatus cuda_status(const char* what, cudaError_t e) {
  return with_context(what, cuda_status(e));
}

GpuStatus with_context(const std::string& what, GpuStatus s) {
  if (s.is_error()) s.text = what + ": " + s.text;
  return s;
}

GpuStatus at_rank(int rank, GpuStatus s) {
  if (!s.ok()) s.ranks = {rank};
  return s;
}

bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorExternalDevice:
      return true;
    default:
      return false;
  }
}

std::string seconds_text(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) return fmt::format("{} s", ms.count() / 1000);
  return fmt::format("{:g} s", static_cast<double>(ms.count()) / 1000.0);
}

}  // namespace gpuvet::gpu
