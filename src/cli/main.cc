// gpuvet — why a multi-GPU machine is slower, jerkier or flakier than it should be.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "build_info.h"
#include "commands.h"
#include "gpuvet/env.h"
#include "standard_streams.h"

int main(int argc, char** argv) {
  gpuvet::kill_children_on_termination_signals();
#ifdef GPUVET_PORTABLE
  // The static hwloc must not load the host's hwloc plugins (built for another hwloc).
  ::setenv("HWLOC_PLUGINS_PATH", "/nonexistent/gpuvet-no-hwloc-plugins", 0);
#endif
  gpuvet::cli::StandardOutput output;
  const gpuvet::cli::ErrorCopy errors;
  // With --json, a failure still prints one JSON document (gpuvet.error/1) when the command
  // wrote nothing to standard output, so a pipeline never parses an empty stdout.
  const auto done = [&](int code) {
    if (code != 0 && !output.anything_written() && gpuvet::cli::json_requested(argc, argv))
      std::cout << gpuvet::cli::error_document(argc, argv, code, errors.text()) << "\n";
    return output.finish(code);
  };
  if (const auto refused = gpuvet::cli::refuse_unknown_command(argc, argv)) return *refused;
  CLI::App app{gpuvet::cli::kAppDescription};
  std::function<gpuvet::cli::Outcome()> run;
  gpuvet::cli::add_commands(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return output.finish(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return output.finish(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return output.finish(app.exit(e));
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return done(gpuvet::cli::kExitUnusable);
  }
  gpuvet::cli::Outcome outcome;
  try {
    if (run) outcome = run();
  } catch (const std::exception& e) {
    std::cerr << "gpuvet: " << e.what() << "\n";
    outcome.exit_code = gpuvet::cli::kExitUnusable;
  }
  const int code = done(outcome.exit_code);
  if (outcome.abandoned_probes) {
    std::fflush(nullptr);
    ::_exit(code);
  }
  return code;
}
