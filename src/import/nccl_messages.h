// import/nccl_messages.h — what each of NCCL's own WARN messages means, from NCCL's source.
//
// NCCL's WARN() is its error level: in every release from 2.4 to 2.29, nearly every WARN in
// src/ is printed on the way to returning an error code (ncclSystemError, ncclInternalError,
// ncclRemoteError, ncclUnhandledCudaError, ncclInvalidUsage). The exceptions are few and
// recognisable by their words: notices that a setting was clamped or ignored, topology
// detection that could not resolve a path and carries on, and a transport NCCL gave up for a
// slower one. The table in nccl_messages.cc lists those exceptions (each with the release that
// prints it); every other WARN is an error. Stateless, thread-safe.
#pragma once

#include <span>
#include <string_view>

namespace gpuvet::import {

enum class NcclWarnClass {
  kError,        // a failure: the call that printed it returns an error
  kDegradation,  // NCCL carries on with a slower path (CollNet off, fewer rings, IB port event)
  kBenign,       // a setting clamped or ignored, a topology detail NCCL works around
};

struct NcclWarnForm {
  std::string_view words;  // literal words of NCCL's format string, found in the message
  NcclWarnClass cls;
  std::string_view source;  // where NCCL prints it (file, releases)
};

// The class of the text after "NCCL WARN ". Linear in the message; no allocation.
NcclWarnClass classify_nccl_warn(std::string_view message);

// The exceptions (degradation and benign forms), for the catalog and the tests.
std::span<const NcclWarnForm> nccl_warn_exceptions();

std::string_view nccl_warn_class_name(NcclWarnClass c);

}  // namespace gpuvet::import
