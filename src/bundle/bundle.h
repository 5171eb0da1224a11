// bundle/bundle.h — the inside of `gpuvet capture` (gpuvet/bundle.h): the command list and
// the redactor, for the capture code and its tests.
//
// With redaction, serial numbers, UUIDs and host names are replaced consistently in every
// file (the same value always becomes the same token). A Redactor is used by one thread.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gpuvet/bundle.h"
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

// The public entry point and its options (gpuvet/bundle.h).
using gpuvet::capture_bundle;
using gpuvet::CaptureOptions;
using gpuvet::CaptureSummary;

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

}  // namespace gpuvet::bundle
