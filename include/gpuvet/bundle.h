// gpuvet/bundle.h — `gpuvet capture OUTDIR`: save what a ticket needs from a live node.
//
// Runs every triage command that exists here (each under a deadline, none needing root
// where avoidable), stores their raw outputs, gpuvet's own facts as JSON and a manifest
// (what ran, exit codes, durations, tool versions). `gpuvet diagnose --from OUTDIR` reads the
// bundle back to the same findings. With redaction, serial numbers, UUIDs, host names (and
// their FQDNs), MAC and IP addresses and /home/<user> paths are replaced consistently in every
// file, so a bundle can leave the site; the manifest says what was replaced.
//
// The bundle is written into a private temporary directory next to OUTDIR and renamed into
// place at the end, so OUTDIR never holds a partial bundle: a failed write (a full disk) is an
// error naming the file, and nothing is left under OUTDIR's name; a capture interrupted while
// its commands run leaves nothing at all. OUTDIR must be new or empty;
// of two captures into one directory at the same time exactly one succeeds. Independent calls
// may run in parallel.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gpuvet/collect.h"
#include "gpuvet/env.h"
#include "gpuvet/status.h"

namespace gpuvet {

struct CaptureOptions {
  std::string out_dir;
  bool redact = false;
  std::chrono::milliseconds command_timeout{20000};
  int parallel = 4;  // commands run at once
  // When collect.root is not "/" (a saved tree of another machine) the commands are not run:
  // they would describe this machine. Files the tree itself holds (/proc/driver/nvidia/…) are
  // copied from it instead. Set this only when env.runner answers for the tree's machine (a
  // test's fake node).
  bool run_commands_with_root = false;
};

struct CaptureSummary {
  int ran = 0;                     // commands that started
  int missing = 0;                 // not installed here
  int failed = 0;                  // non-zero exit or timed out
  int not_run = 0;                 // not run because collect.root names a saved tree
  std::vector<std::string> files;  // written, relative to out_dir
  bool abandoned_probes = false;   // a GPU probe is still stuck in the driver (see collect.h)
};

Result<CaptureSummary> capture_bundle(const CaptureOptions& options, const CollectOptions& collect,
                                      const Env& env);

}  // namespace gpuvet
