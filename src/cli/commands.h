// cli/commands.h — the subcommand table. Each entry registers its options on a
// CLI11 subcommand and runs when chosen; help is generated from the table.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpuvet::cli {

// Process exit codes (Nagios style, see docs/findings.md).
enum ExitCode : int { kExitOk = 0, kExitWarning = 1, kExitCritical = 2, kExitUnusable = 3 };

struct Outcome {
  int exit_code = kExitUnusable;
  // A probe thread is still stuck in a driver call: main() then leaves through
  // _exit() after flushing, so no destructor waits on it.
  bool abandoned_probes = false;
};

struct Command {
  const char* name;
  const char* summary;
  // Adds the command's options to `app` and returns the function that runs it.
  std::function<std::function<Outcome()>(CLI::App& app)> setup;
};

const std::vector<Command>& commands();

// The whole command line: every command of the table as a subcommand of `app` (its options
// registered), the chosen one's function stored into `run` when parsed. main() parses with it;
// `gpuvet man` and `gpuvet completion` walk it, so neither can drift from the options.
void add_commands(CLI::App& app, std::function<Outcome()>& run);
inline constexpr const char* kAppDescription =
    "gpuvet: find out why a multi-GPU machine is slower, jerkier or flakier than it should be";

// The check of every floating-point option: a finite number in [lo, hi]. (CLI::Range lets
// NaN through, and a NaN timeout overflows the deadline arithmetic.)
CLI::Validator finite_range(double lo, double hi);

// Run before parsing: when the first word that is not an option is no command, says so on
// stderr with the nearest command and returns 3; otherwise nothing. (CLI11 alone would take
// `gpuvet culprit --help` for a request of the top-level help.)
std::optional<int> refuse_unknown_command(int argc, char** argv);

// Whether the command line asks for JSON (`--json` before a `--`).
bool json_requested(int argc, char** argv);

// The document a failed command prints with --json when it wrote nothing else
// (gpuvet.error/1): the command, the exit code, what it said on stderr, its arguments.
std::string error_document(int argc, char** argv, int exit_code, const std::string& stderr_text);

}  // namespace gpuvet::cli
