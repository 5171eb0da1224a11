// gpuvet/collect.h — gather the facts of the live node.
//
// collect_facts() runs every live source (NVML, sysfs/procfs, hwloc, the kernel
// log, host pressure sampling), each under its own deadline, and merges them
// into one Facts. It never blocks past options.budget plus a small margin:
// a source that does not answer becomes a note (and, for a GPU, an
// "unresponsive" mark) instead of a hang. Safe to call from any thread; it
// keeps no state between calls.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuvet/env.h"
#include "gpuvet/facts.h"

namespace gpuvet {

struct CollectOptions {
  // Where /proc and /sys live; "/" on a live node, a fixture tree in tests.
  std::string root = "/";
  // NVML library to dlopen, as the user named it (--nvml, GPUVET_NVML_LIBRARY): then a
  // missing or invalid file is bad input. Empty: libnvidia-ml.so.1 from the loader path,
  // and its absence only means "no NVIDIA driver here".
  std::optional<std::string> nvml_library;
  std::chrono::milliseconds init_timeout{4000};
  std::chrono::milliseconds gpu_timeout{3000};
  std::chrono::milliseconds command_timeout{2000};  // dmesg and other helpers
  // Host pressure sample window; zero skips sampling.
  std::chrono::milliseconds pressure_window{500};
  bool kernel_log = true;
  // Use hwloc for the host topology (only when root is "/").
  bool hwloc = true;
};

// Why GPU facts are missing.
enum class NvmlFailure {
  kNone,
  kLibraryMissing,   // no libnvidia-ml.so.1: no NVIDIA driver installed here
  kLibraryInvalid,   // the file is not NVML (garbage, wrong architecture)
  kStubLibrary,      // the CUDA toolkit's link-time stub
  kDriverNotLoaded,  // library present, kernel module not loaded
  kVersionMismatch,  // library and kernel module from different driver versions
  kNoPermission,     // /dev/nvidia* not accessible
  kInitTimeout,      // nvmlInit did not return in time
  kInitFailed,       // any other nvmlInit error
  kCountFailed,      // nvmlDeviceGetCount failed
};
// A stable name for scripts and manifests: "none", "library-missing", "driver-not-loaded", …
const char* nvml_failure_name(NvmlFailure f);

struct Collection {
  Facts facts;
  NvmlFailure nvml_failure = NvmlFailure::kNone;
  std::string nvml_failure_message;  // the sentence for the user, empty when none
  // NVML calls outside a GPU's own probe that did not return in time (a system
  // query, the GPU pair query), one sentence each: facts were left unread because
  // NVML hung, even though every GPU may be listed.
  std::vector<std::string> nvml_timeouts;
  // A probe thread is still stuck in a driver call: the process should leave
  // with _exit() once output is flushed rather than run library destructors.
  bool abandoned_probes = false;
};

Collection collect_facts(const CollectOptions& options, const Env& env);

}  // namespace gpuvet
