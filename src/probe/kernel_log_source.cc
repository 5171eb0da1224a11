#include "probe/kernel_log_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "core/util.h"
#include "import/kernel_log.h"

namespace gpuvet::probe {
namespace {

class FileKmsgReader final : public KmsgReader {
 public:
  FileKmsgReader(std::string path, std::size_t max_bytes)
      : path_(std::move(path)), max_bytes_(max_bytes) {}

  Result<std::string> read_all(std::chrono::milliseconds timeout) const override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // Non-blocking: on the character device, EAGAIN marks the end of the buffer instead of
    // a read that waits for the next kernel message.
    int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return status_from_errno(path_, errno);
    std::string data;
    // Each read of /dev/kmsg returns one record and fails with EINVAL when the buffer is
    // smaller than the record; records are at most a few KiB.
    char buf[16384];
    while (data.size() < max_bytes_ && std::chrono::steady_clock::now() < deadline) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EAGAIN || err == EWOULDBLOCK) break;
        // The ring buffer overwrote records we had not read yet; the next read resumes at the
        // oldest record still there.
        if (err == EPIPE) continue;
        ::close(fd);
        if (!data.empty()) return data;
        return status_from_errno(path_, err);
      }
      if (n == 0) break;  // a plain file (fixture, saved copy)
      data.append(buf, std::min(static_cast<std::size_t>(n), max_bytes_ - data.size()));
    }
    ::close(fd);
    return data;
  }

 private:
  std::string path_;
  std::size_t max_bytes_;
};

// Why an attempt failed, for why_unreadable: "permission denied", "not found", or the message.
std::string describe(const Status& status) {
  switch (status.code()) {
    case StatusCode::kPermissionDenied:
    case StatusCode::kNotFound:
      return status_code_name(status.code());
    default:
      return status.to_string();
  }
}

std::string first_line(std::string_view s) {
  s = trim(s);
  std::size_t nl = s.find('\n');
  return std::string(trim(s.substr(0, nl)).substr(0, 300));
}

}  // namespace

std::unique_ptr<KmsgReader> make_kmsg_reader(std::string path, std::size_t max_bytes) {
  return std::make_unique<FileKmsgReader>(std::move(path), max_bytes);
}

std::unique_ptr<KmsgReader> make_rooted_kmsg_reader(const std::string& root) {
  std::string base = root;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return make_kmsg_reader(base + "/dev/kmsg");
}

std::optional<std::int64_t> read_boot_unix_time(const FileSystem& fs) {
  auto stat = fs.read_file("/proc/stat");
  if (!stat.is_ok()) return std::nullopt;
  for (std::string_view line : split_lines(stat.value())) {
    if (!starts_with(line, "btime ")) continue;
    auto v = parse_int(line.substr(6));
    if (v && *v > 0) return v;
    return std::nullopt;
  }
  return std::nullopt;
}

KernelLog read_live_kernel_log(const FileSystem& fs, const KmsgReader& kmsg,
                               const CommandRunner& runner, std::chrono::milliseconds timeout) {
  KernelLog log;
  const auto boot = read_boot_unix_time(fs);

  auto records = kmsg.read_all(timeout);
  if (records.is_ok()) {
    log.source = "/dev/kmsg";
    log.readable = true;
    import::parse_kernel_log(records.value(), log, boot);
    return log;
  }
  std::string why = "/dev/kmsg: " + describe(records.status());

  // dmesg reads the same buffer through syslog(2); it helps where /dev/kmsg is missing (some
  // containers) or where a setuid/capability-granted dmesg is installed.
  auto ran = runner.run({"dmesg"}, timeout);
  if (!ran.is_ok()) {
    why += "; dmesg: " + describe(ran.status());
  } else if (ran.value().timed_out) {
    why += "; dmesg: timed out after " + std::to_string(timeout.count()) + " ms";
  } else if (ran.value().exit_code != 0) {
    const CommandResult& r = ran.value();
    std::string detail = first_line(r.err.empty() ? r.out : r.err);
    why += "; dmesg: exit " + std::to_string(r.exit_code) + (detail.empty() ? "" : ": " + detail);
  } else {
    log.source = "dmesg";
    log.readable = true;
    import::parse_kernel_log(ran.value().out, log, boot);
    return log;
  }

  log.source = "kernel-log";
  log.readable = false;
  log.why_unreadable = std::move(why);
  return log;
}

}  // namespace gpuvet::probe
