// probe/kernel_log_source.h — the live kernel log: Xid events and "fallen off the bus"
// reports of the machine gpuvet runs on.
//
// read_live_kernel_log() reads the kernel ring buffer through /dev/kmsg (a KmsgReader), falls
// back to running `dmesg` when that fails (dmesg_restrict, containers without /dev/kmsg), and
// hands the text to import::parse_kernel_log(). It never fails: when neither source answers,
// the KernelLog says so (readable=false, why_unreadable naming each attempt and its error).
// /proc/stat's btime, read through the FileSystem, turns seconds-since-boot into wall-clock
// times. The KmsgReader is a seam of its own because /dev/kmsg is a character device whose
// reads return one record each and end with EAGAIN, which FileSystem::read_file does not model.
//
// Readers and the function are stateless; safe to use from several threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gpuvet/env.h"
#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::probe {

class KmsgReader {
 public:
  virtual ~KmsgReader() = default;
  // Every record currently in the kernel ring buffer, in /dev/kmsg's text format
  // ("prio,seq,usec,flags;text\n" each). Stops at the end of the buffer (EAGAIN, or EOF for a
  // plain file), at the size cap, or when `timeout` has passed, returning what it has read.
  // Fails with kPermissionDenied, kNotFound or kUnavailable when it cannot read at all.
  virtual Result<std::string> read_all(std::chrono::milliseconds timeout) const = 0;
};

// Reads the file or character device at `path` (non-blocking), up to max_bytes.
std::unique_ptr<KmsgReader> make_kmsg_reader(std::string path, std::size_t max_bytes = 64 << 20);
// The same for ROOT/dev/kmsg: pass the root given to make_rooted_file_system ("/" when live).
std::unique_ptr<KmsgReader> make_rooted_kmsg_reader(const std::string& root);

// /proc/stat "btime": boot time in seconds since the epoch; empty when unreadable.
std::optional<std::int64_t> read_boot_unix_time(const FileSystem& fs);

// The live kernel log. source is "/dev/kmsg" or "dmesg", whichever answered. When neither
// did: readable=false and why_unreadable like "/dev/kmsg: permission denied; dmesg: exit 1:
// dmesg: read kernel buffer failed: Operation not permitted". Each attempt gets `timeout`.
KernelLog read_live_kernel_log(const FileSystem& fs, const KmsgReader& kmsg,
                               const CommandRunner& runner, std::chrono::milliseconds timeout);

}  // namespace gpuvet::probe
