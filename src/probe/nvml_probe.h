// probe/nvml_probe.h — GPU facts from NVML, every call under a deadline.
//
// probe_nvml() loads the library, initialises it, and reads each GPU on its own
// thread. A GPU that does not answer within gpu_timeout is reported as
// unresponsive (with the call it was stuck in) while the others are reported in
// full. Nothing here blocks longer than init_timeout + 2 × gpu_timeout.
// Stateless; call from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gpuvet/collect.h"
#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::probe {

struct NvmlProbeOptions {
  std::string library = "libnvidia-ml.so.1";
  bool library_given_by_user = false;  // --nvml / GPUVET_NVML_LIBRARY: a bad path is bad input
  std::chrono::milliseconds init_timeout{4000};
  std::chrono::milliseconds gpu_timeout{3000};
  // nvmlDeviceGetCpuAffinity costs ~13 ms per GPU on an H200 VM; the caller
  // can read the same locality from sysfs (local_cpulist) instead.
  bool cpu_affinity = true;
};

using gpuvet::nvml_failure_name;
using gpuvet::NvmlFailure;  // public (gpuvet/collect.h): scripts and the CLI read it

struct NvmlProbeResult {
  NvmlFailure failure = NvmlFailure::kNone;
  std::string failure_message;  // a sentence for the user, with the cure where known
  std::string library_path;     // what was loaded
  std::string symbol_versions;
  std::optional<std::string> driver_version;
  std::optional<std::string> nvml_version;
  std::optional<std::string> cuda_driver_version;
  std::vector<GpuFacts> gpus;
  std::vector<GpuPair> pairs;
  std::vector<ProcessFacts> processes;  // host PIDs as NVML reports them, names where NVML knows
  std::vector<std::string> notes;
  bool abandoned_threads = false;  // a probe thread is still stuck inside the library
  double duration_ms = 0;
  // Total time per NVML entry point over all GPUs (and nvmlInit), slowest first.
  std::vector<std::pair<std::string, double>> call_ms;
};

NvmlProbeResult probe_nvml(const NvmlProbeOptions& options);

}  // namespace gpuvet::probe
