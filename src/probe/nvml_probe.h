// probe/nvml_probe.h — GPU facts from NVML, every call under a deadline.
//
// probe_nvml() loads the library, initialises it, and reads each GPU on its own
// thread. Loading (the file check, dlopen and the library's constructors) and
// nvmlInit share one deadline, init_timeout. A GPU that does not answer within
// gpu_timeout is reported as unresponsive (with the call it was stuck in) while
// the others are reported in full. Nothing here blocks longer than
// init_timeout + 2 × gpu_timeout. Stateless; call from any thread.
//
// A caller that probes repeatedly (the scale sampler) loads once with
// load_nvml() and passes the library to each probe_nvml(); the library stays
// loaded while any copy of the reference, or any abandoned probe thread, holds it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuvet/collect.h"
#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::probe {

class NvmlLibrary;
using NvmlLibraryRef = std::shared_ptr<const NvmlLibrary>;

struct NvmlProbeOptions {
  std::string library = "libnvidia-ml.so.1";
  bool library_given_by_user = false;  // --nvml / GPUVET_NVML_LIBRARY: a bad path is bad input
  std::chrono::milliseconds init_timeout{4000};
  std::chrono::milliseconds gpu_timeout{3000};
  // nvmlDeviceGetCpuAffinity costs ~13 ms per GPU on an H200 VM; the caller
  // can read the same locality from sysfs (local_cpulist) instead.
  bool cpu_affinity = true;
  // Only what a time series needs (clocks, clock events, temperature, power,
  // utilisation): no identity, ECC, NVLink, processes or pairs.
  bool samples_only = false;
  // With samples_only: also the counters a watch follows (PCIe link and replays, memory
  // use and ECC counts, NVLink states), still without identity, processes or pairs.
  bool sample_health = false;
  // A sampler keeps NVML initialised between its calls: nvmlInit and its first queries cost
  // ~10 ms each on an H100/H200, every sample. keep_init leaves NVML initialised at the end
  // (the caller shuts it down); init_held says an earlier call left it so: no nvmlInit then.
  // The accumulated clock-event (violation) times: ~3 ms per policy per GPU on an H100
  // (16.5 ms of the 56 ms of a full probe), the largest part of a watch sample. A sampler
  // reads them every few seconds only (SamplerOptions::violation_interval_s).
  bool violation_counters = true;
  bool keep_init = false;
  bool init_held = false;
  // GPUs not to touch (a probe thread may still be stuck in one of them).
  std::vector<int> skip_gpus;
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
  // NVML calls outside a GPU's own probe (system queries, the pair query) that did
  // not return by their deadline, one sentence each. A GPU's own hang is its
  // `unresponsive`; a hang in loading, nvmlInit or the count is failure kInitTimeout.
  std::vector<std::string> timeouts;
  bool abandoned_threads = false;  // a probe thread is still stuck inside the library
  double duration_ms = 0;
  // Total time per NVML entry point over all GPUs (and nvmlInit), slowest first.
  std::vector<std::pair<std::string, double>> call_ms;
};

NvmlProbeResult probe_nvml(const NvmlProbeOptions& options);

struct NvmlLoadResult {
  NvmlLibraryRef library;  // null unless the load succeeded
  NvmlFailure failure = NvmlFailure::kNone;
  std::string failure_message;
  bool abandoned_threads = false;  // the load did not return in time and still runs
};

// Loads options.library on a watchdog thread and waits for it until `deadline`.
NvmlLoadResult load_nvml(const NvmlProbeOptions& options,
                         std::chrono::steady_clock::time_point deadline);
NvmlLoadResult load_nvml(const NvmlProbeOptions& options);  // deadline: now + init_timeout

// Probes through a library load_nvml() returned (options.library is ignored).
NvmlProbeResult probe_nvml(const NvmlProbeOptions& options, const NvmlLibraryRef& library);

}  // namespace gpuvet::probe
