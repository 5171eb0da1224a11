// cli/live.h — the options shared by commands that read the live node (facts, diagnose):
// NVML library, sysfs root, probe timeouts, host sampling, kernel log, --from.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "gpuvet/collect.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
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
  std::string step_regex;  // --step-regex, with --from
};

// Registers the options above on `app`.
void add_live_options(CLI::App& app, LiveArgs& args);
// Only those that steer the live probes (--nvml, --root, timeouts, --sample-window,
// --no-kernel-log): for commands that never print a report or read --from.
void add_probe_options(CLI::App& app, LiveArgs& args);

// --prom FILE: the metrics of this run for node_exporter's textfile collector. Checked before
// the (possibly long) collection, written after it; a failure is said on stderr (exit 3).
bool prom_target_usable(const std::string& path);
bool write_prom_file(const std::string& path, const Facts& facts, const Diagnosis* diagnosis,
                     std::optional<int> expect_gpus, std::optional<double> duration_s);

CollectOptions collect_options(const LiveArgs& args);

// The configuration file to read: --config, else $GPUVET_CONFIG, else /etc/gpuvet/gpuvet.toml
// when it exists, else none (""). A file named by the flag or the variable must exist (the
// reader says so); the default one is optional.
std::string config_file(const std::string& flag);

// The acks in force (docs/findings.md, "Acknowledging a known condition"): --ack FILE, else
// /etc/gpuvet/acks.toml when it exists, into `options.acks`. A file that cannot be read or
// parsed is an error the caller turns into exit 3: a broken acks file silences nothing.
Status load_acks_option(const std::string& flag, DiagnoseOptions& options);
inline constexpr const char* kAckHelp =
    "Acknowledged known conditions (TOML [[ack]]: finding, subjects, severity, reason, "
    "expires); default /etc/gpuvet/acks.toml when it exists";
// What `gpuvet findings --config-template` prints: every threshold commented out at its
// default, with what it decides.
std::string config_template_toml();

// The NVML library the user chose: --nvml, else $GPUVET_NVML_LIBRARY, else none (the
// default libnvidia-ml.so.1, whose absence only means no driver here).
std::optional<std::string> nvml_library_choice(const std::string& flag);

// The user named an NVML library and it is missing or not NVML: bad input (exit 3).
bool nvml_library_unusable(const Collection& c, const CollectOptions& o);

// Colour only on a TTY, never with --no-color or NO_COLOR.
bool use_color(const LiveArgs& args);

// Columns for the text output: the terminal's when stdout is one (TIOCGWINSZ), else
// $COLUMNS, else 100; clamped to [60, 200] (text_width_wanted).
int stdout_text_width();

// --from PATH: a file or directory, or "-" for a paste on standard input (at most 256 MiB).
Result<Facts> import_from(const std::string& path, const ImportOptions& options = {});

// Whether any input of an import was recognised (else --from is exit 3).
bool any_recognised(const Facts& facts);

// "nothing in PATH is a supported output (gpuvet formats lists them)", with the input's own
// problems (a directory cut at the file cap, an unfinished bundle) after it: the reason may be
// that the file that matters was never read.
std::string nothing_recognised(const std::string& path, const Facts& facts);

}  // namespace gpuvet::cli
