// cli/commands.h — the subcommand table. Each entry registers its options on a
// CLI11 subcommand and runs when chosen; help is generated from the table.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
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

}  // namespace gpuvet::cli
