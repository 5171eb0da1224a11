// gpuvet/bundle.h — `gpuvet capture OUTDIR`: save what a ticket needs from a live node.
//
// Runs every triage command that exists here (each under a deadline, none needing root
// where avoidable), stores their raw outputs, gpuvet's own facts as JSON and a manifest
// (what ran, exit codes, durations, tool versions). `gpuvet diagnose --from OUTDIR` reads the
// bundle back to the same findings. With redaction, serial numbers, UUIDs and host names are
// replaced consistently in every file, so a bundle can leave the site. Not thread-safe per
// call (writes OUTDIR); independent calls on different directories may run in parallel.
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
};

struct CaptureSummary {
  int ran = 0;                     // commands that started
  int missing = 0;                 // not installed here
  int failed = 0;                  // non-zero exit or timed out
  std::vector<std::string> files;  // written, relative to out_dir
  bool abandoned_probes = false;   // a GPU probe is still stuck in the driver (see collect.h)
};

Result<CaptureSummary> capture_bundle(const CaptureOptions& options, const CollectOptions& collect,
                                      const Env& env);

}  // namespace gpuvet
