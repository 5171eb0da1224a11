// bundle/bundle.h — `gpuvet capture OUTDIR`: save what a ticket needs from a live node.
//
// Runs every listed command that exists here (each under a deadline, none
// needing root where avoidable), stores their raw outputs, gpuvet's own facts
// as JSON, and a manifest (what ran, exit codes, durations, tool versions).
// `gpuvet facts --from OUTDIR` reads the bundle back. With redaction, serial
// numbers, UUIDs and host names are replaced consistently in every file (the
// same value always becomes the same token), so a bundle can leave the site.
// Not thread-safe per call (writes OUTDIR); independent calls may run in parallel.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gpuvet/collect.h"
#include "gpuvet/env.h"
#include "gpuvet/status.h"

namespace gpuvet::bundle {

struct CaptureCommand {
  std::string file;               // output file name inside the bundle
  std::vector<std::string> argv;  // run without a shell
};

// The commands a bundle holds (nvidia-smi in its modes, the kernel log, NUMA,
// CPU, disk and network tools).
std::vector<CaptureCommand> capture_commands();

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

// Replaces serials, GPU/MIG UUIDs and host names with stable tokens.
class Redactor {
 public:
  // Values known from the live facts (serials, host name) are always replaced;
  // UUID-shaped strings are found by pattern.
  void add_serial(const std::string& serial);
  void add_hostname(const std::string& hostname);
  std::string apply(const std::string& text);
  const std::map<std::string, std::string>& mapping() const { return tokens_; }

 private:
  std::string token_for(const std::string& value, const char* kind);
  std::map<std::string, std::string> tokens_;  // original → token
  std::vector<std::string> serials_;
  std::vector<std::string> hostnames_;
  int next_serial_ = 1, next_uuid_ = 1, next_host_ = 1;
};

Result<CaptureSummary> capture_bundle(const CaptureOptions& options, const CollectOptions& collect,
                                      const Env& env);

}  // namespace gpuvet::bundle
