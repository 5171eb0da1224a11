// cli/build_info.h — which build this is, for `gpuvet --version` (the value is generated at
// build time by cmake/build_info.cmake).
#pragma once

#include <string>

namespace gpuvet::cli {

struct BuildInfo {
  const char* version;     // "0.1.0"
  const char* commit;      // "abc123def456", "…-dirty", "unknown"
  const char* build_type;  // "Release", "RelWithDebInfo", …
  bool cuda;               // the CUDA/NCCL measurements compiled in (bench, scale)
  bool portable;           // third-party libraries linked statically
};
extern const BuildInfo kBuildInfo;

// The --version text: version, commit, build type, and what is compiled in or loaded at run
// time (NVML always, CUDA runtime static, NCCL and cuBLASLt by dlopen when CUDA is in).
std::string version_text();

}  // namespace gpuvet::cli
