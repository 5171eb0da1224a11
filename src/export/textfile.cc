// node_exporter's textfile collector file, written so the collector never reads half of it.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "gpuvet/prometheus.h"

namespace gpuvet {

namespace {

std::string directory_of(const std::string& path) {
  const std::filesystem::path p(path);
  const auto parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

Status check_textfile_target(const std::string& path) {
  if (path.empty()) return Status::invalid_input("--prom: no file name");
  if (std::filesystem::path(path).filename().empty())
    return Status::invalid_input(fmt::format("--prom {}: names a directory, not a file", path));
  const std::string dir = directory_of(path);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return Status::invalid_input(fmt::format("--prom {}: directory {} does not exist", path, dir));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return Status::invalid_input(
        fmt::format("--prom {}: cannot write in directory {} ({}); the file is written there as a "
                    "temporary file, then renamed",
                    path, dir, std::strerror(errno)));
  if (std::filesystem::is_directory(path, ec))
    return Status::invalid_input(fmt::format("--prom {}: is a directory", path));
  return Status::ok();
}

Status write_textfile(const std::string& path, const std::string& text) {
  if (Status s = check_textfile_target(path); !s.is_ok()) return s;
  // Same directory (rename is atomic only within one file system), a name node_exporter does
  // not read (it reads *.prom), unique per process.
  const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return Status::invalid_input(
        fmt::format("--prom {}: cannot create {}: {}", path, tmp, std::strerror(errno)));
  const auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status::invalid_input(
        fmt::format("--prom {}: {} {}: {}", path, what, tmp, std::strerror(err)));
  };
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot sync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::invalid_input(
        fmt::format("--prom {}: cannot close {}: {}", path, tmp, std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::invalid_input(
        fmt::format("--prom {}: cannot rename {} onto it: {}", path, tmp, std::strerror(err)));
  }
  // The rename itself reaches the disk with the directory.
  const int dfd = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

Result<ListenAddress> parse_listen_address(const std::string& text) {
  ListenAddress a;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return Status::invalid_input(
          fmt::format("--listen {}: expected [IPv6]:PORT, e.g. [::1]:9401", text));
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon)
      return Status::invalid_input(fmt::format(
          "--listen {}: expected HOST:PORT, e.g. 127.0.0.1:9401 ([::1]:9401 for IPv6)", text));
    a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return Status::invalid_input(fmt::format("--listen {}: '{}' is not a port number", text, port));
  a.port = std::stoi(port);
  if (a.port > 65535)
    return Status::invalid_input(fmt::format("--listen {}: port {} is above 65535", text, a.port));
  if (a.host.empty()) a.host = "0.0.0.0";
  // 127.0.0.0/8 written as an address, not a name that merely starts like one.
  const bool dotted = a.host.find_first_not_of("0123456789.") == std::string::npos;
  a.loopback = a.host == "localhost" || a.host == "::1" || (dotted && a.host.starts_with("127."));
  return a;
}

}  // namespace gpuvet
