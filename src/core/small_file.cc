#include "core/small_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace gpuvet {
namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "of an unknown kind";
}

struct FileCloser {
  int fd;
  ~FileCloser() { ::close(fd); }
};

std::string limit_text(std::size_t max_bytes) {
  if (max_bytes % (std::size_t{1} << 20) == 0) return fmt::format("{} MiB", max_bytes >> 20);
  return fmt::format("{} bytes", max_bytes);
}

}  // namespace

Result<std::string> read_small_file(const std::string& path, std::size_t max_bytes,
                                    std::string_view what) {
  const auto cannot = [&] {
    return Status::invalid_input(
        fmt::format("cannot read {} {}: {}", what, path, std::strerror(errno)));
  };
  const auto not_regular = [&](mode_t mode) {
    return Status::invalid_input(
        fmt::format("{} {} is {}, not a regular file", what, path, file_kind(mode)));
  };
  const auto too_big = [&] {
    return Status::invalid_input(
        fmt::format("{}: {} larger than {}", path, what, limit_text(max_bytes)));
  };
  // Refused before it is opened for reading: a FIFO or a terminal would block, /dev/zero
  // never ends, and a directory reads as an empty file.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return cannot();
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) return too_big();
  // O_NONBLOCK: should the path be swapped for a FIFO after the stat, open does not wait
  // for a writer, and the fstat below refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return cannot();
  const FileCloser closer{fd};
  if (::fstat(fd, &st) != 0) return cannot();
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  // The buffer starts at the file's size plus one byte (to see a file that grew meanwhile)
  // and doubles only while the file keeps growing, to at most one byte more than the limit:
  // a 2 kB report read under a 64 MiB limit costs 2 kB, not 64 MiB of zeroed memory.
  const auto size = static_cast<std::uintmax_t>(st.st_size);
  std::string text(static_cast<std::size_t>(std::min<std::uintmax_t>(size, max_bytes)) + 1, '\0');
  std::size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      if (text.size() > max_bytes) break;
      text.resize(std::min(max_bytes + 1, text.size() * 2));
    }
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return cannot();
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max_bytes) return too_big();
  text.resize(got);
  return text;
}

}  // namespace gpuvet
