// cli/live.h — the options shared by commands that read the live node (facts, diagnose):
// NVML library, sysfs root, probe timeouts, host sampling, kernel log, --from.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "gpuvet/collect.h"
#include "gpuvet/status.h"

namespace gpuvet::cli {

struct LiveArgs {
  bool json = false;
  bool verbose = false;
  bool no_color = false;
  std::string nvml;
  std::string root = "/";
  double gpu_timeout_s = 3.0;
  double init_timeout_s = 4.0;
  double sample_window_s = 0.05;
  bool no_kernel_log = false;
  std::string from;
};

// Registers the options above on `app`; `sample_default_s` is the command's default window.
void add_live_options(CLI::App& app, LiveArgs& args);

CollectOptions collect_options(const LiveArgs& args);

// Colour only on a TTY, never with --no-color or NO_COLOR.
bool use_color(const LiveArgs& args);

// --from PATH: a file or directory, or "-" for a paste on standard input (at most 256 MiB).
Result<Facts> import_from(const std::string& path);

// Whether any input of an import was recognised (else --from is exit 3).
bool any_recognised(const Facts& facts);

}  // namespace gpuvet::cli
