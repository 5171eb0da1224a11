// bundle/bundle.h — the inside of `gpuvet capture` (gpuvet/bundle.h): the command list, the
// redactor and the file-writing seam, for the capture code and its tests.
//
// With redaction, every serial number, UUID and host name learnt from any output (or from
// gpuvet's own facts) is replaced in every file, the same value always by the same token; MAC
// addresses, IPv4/IPv6 addresses and the user part of /home/<user> paths are found by shape.
// A Redactor is used by one thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/bundle.h"
#include "gpuvet/collect.h"
#include "gpuvet/env.h"
#include "gpuvet/status.h"

namespace gpuvet::bundle {

struct CaptureCommand {
  std::string file;               // output file name inside the bundle
  std::vector<std::string> argv;  // run without a shell
  // The file the command prints, when it only prints one: read from a saved tree (--root)
  // instead of running the command on this machine.
  std::string prints_file;
};

// The commands a bundle holds (nvidia-smi in its modes, the kernel log, NUMA,
// CPU, disk and network tools).
std::vector<CaptureCommand> capture_commands();

// The public entry point and its options (gpuvet/bundle.h).
using gpuvet::capture_bundle;
using gpuvet::CaptureOptions;
using gpuvet::CaptureSummary;

// Where a bundle's files are written. The real one writes with POSIX calls and checks write,
// fsync and close; tests wrap it to inject failures. Used from one thread.
class FileWriter {
 public:
  virtual ~FileWriter() = default;
  // Creates `path` (it must not exist) holding exactly `data`. The error's message is the
  // system's reason ("No space left on device"), without the path.
  virtual Status write_file(const std::string& path, const std::string& data) const = 0;
};

std::unique_ptr<FileWriter> make_posix_file_writer();

// capture_bundle() with its files written through `writer`.
Result<CaptureSummary> capture_bundle_with(const CaptureOptions& options,
                                           const CollectOptions& collect, const Env& env,
                                           const FileWriter& writer);

// The classes a Redactor replaces, in the manifest's spelling.
inline constexpr const char* kRedactedClasses[] = {"serial", "uuid", "hostname",
                                                   "mac",    "ip",   "home-path"};

// Replaces serials, UUIDs, host names, MAC/IP addresses and /home/<user> with stable tokens.
class Redactor {
 public:
  struct Count {
    int values = 0;        // distinct originals
    int replacements = 0;  // occurrences replaced
  };

  // Values known from gpuvet's facts.
  void add_serial(const std::string& serial);
  void add_hostname(const std::string& hostname);  // an FQDN also adds its first label
  void add_uuid(const std::string& uuid);
  // Learns the serials (nvidia-smi -q text and XML, the `serial` column of --query-gpu CSV),
  // UUIDs and host names (sysstat headers, syslog-style kernel log lines) one output prints.
  // Learn from every output first, then apply() to each, so nothing learnt late leaks early.
  void learn(std::string_view text);
  // Learns from `text` too, then replaces everything known in it.
  std::string apply(const std::string& text);

  const std::map<std::string, std::string>& mapping() const { return tokens_; }
  // Per class of kRedactedClasses.
  const std::map<std::string, Count>& counts() const { return counts_; }

 private:
  std::string token_for(const std::string& value, const std::string& kind);
  std::string replace_uuids(const std::string& text);
  std::string replace_literals(const std::string& text, const std::vector<std::string>& values,
                               const std::string& kind);
  std::string replace_hostname(const std::string& text, const std::string& host);
  std::string replace_macs(const std::string& text);
  std::string replace_ipv4(const std::string& text);
  std::string replace_ipv6(const std::string& text);
  std::string replace_home_users(const std::string& text);

  std::map<std::string, std::string> tokens_;  // original (lower case) → token
  std::map<std::string, Count> counts_;
  std::vector<std::string> serials_;    // as printed
  std::vector<std::string> hostnames_;  // lower case, short names
  std::vector<std::string> uuids_;      // lower case, 32 hex digits without dashes
  std::map<std::string, int> next_;     // per kind
};

}  // namespace gpuvet::bundle
