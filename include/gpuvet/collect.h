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

#include "gpuvet/env.h"
#include "gpuvet/facts.h"

namespace gpuvet {

struct CollectOptions {
  // Where /proc and /sys live; "/" on a live node, a fixture tree in tests.
  std::string root = "/";
  // NVML library to dlopen; empty means libnvidia-ml.so.1 from the loader path,
  // or GPUVET_NVML_LIBRARY when set.
  std::string nvml_library;
  bool nvml_library_given_by_user = false;
  std::chrono::milliseconds init_timeout{4000};
  std::chrono::milliseconds gpu_timeout{3000};
  std::chrono::milliseconds command_timeout{2000};  // dmesg and other helpers
  // Host pressure sample window; zero skips sampling.
  std::chrono::milliseconds pressure_window{500};
  bool kernel_log = true;
  // Use hwloc for the host topology (only when root is "/").
  bool hwloc = true;
};

// Why GPU facts are missing, as a stable name for scripts; "none" when present.
struct Collection {
  Facts facts;
  std::string nvml_failure = "none";  // see probe::nvml_failure_name
  std::string nvml_failure_message;   // the sentence for the user, empty when none
  // A probe thread is still stuck in a driver call: the process should leave
  // with _exit() once output is flushed rather than run library destructors.
  bool abandoned_probes = false;
};

struct Env {
  const FileSystem& fs;
  const CommandRunner& runner;
  const Clock& clock;
};

Collection collect_facts(const CollectOptions& options, const Env& env);

}  // namespace gpuvet
