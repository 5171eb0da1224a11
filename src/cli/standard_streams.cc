#include "standard_streams.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "commands.h"

namespace gpuvet::cli {

StandardOutput::Buffer::Buffer() { setp(data_, data_ + sizeof data_); }

bool StandardOutput::Buffer::drain() {
  const char* p = pbase();
  std::size_t left = static_cast<std::size_t>(pptr() - pbase());
  while (left > 0 && error_ == 0) {
    const ssize_t n = ::write(STDOUT_FILENO, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
      break;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
    written_ += static_cast<std::size_t>(n);
  }
  setp(data_, data_ + sizeof data_);
  return error_ == 0;
}

StandardOutput::Buffer::int_type StandardOutput::Buffer::overflow(int_type ch) {
  if (!drain()) return traits_type::eof();
  if (!traits_type::eq_int_type(ch, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
  }
  return traits_type::not_eof(ch);
}

int StandardOutput::Buffer::sync() { return drain() ? 0 : -1; }

StandardOutput::StandardOutput() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == STDOUT_FILENO) stdout_was_closed_ = true;
    // open() returns the lowest free descriptor, which is `fd` (the lower ones are open).
    const int null = ::open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
    if (null >= 0 && null != fd) {
      ::dup2(null, fd);
      ::close(null);
    }
  }
  original_ = std::cout.rdbuf(&buffer_);
}

StandardOutput::~StandardOutput() {
  if (!finished_) buffer_.drain();
  std::cout.rdbuf(original_);
}

int StandardOutput::finish(int exit_code) {
  finished_ = true;
  buffer_.drain();
  int error = buffer_.error();
  // Nothing else writes to stdio's stdout, but a close can report a write-behind error.
  errno = 0;
  if (std::fflush(stdout) != 0 && error == 0) error = errno != 0 ? errno : EIO;
  errno = 0;
  if (std::fclose(stdout) != 0 && error == 0) error = errno != 0 ? errno : EIO;
  if (stdout_was_closed_) error = EBADF;
  if (error == 0) return exit_code;
  std::cerr << "gpuvet: cannot write the output: " << std::strerror(error) << "\n";
  return kExitUnusable;
}

ErrorCopy::ErrorCopy() : buffer_(std::cerr.rdbuf()) { original_ = std::cerr.rdbuf(&buffer_); }

ErrorCopy::~ErrorCopy() { std::cerr.rdbuf(original_); }

ErrorCopy::Buffer::int_type ErrorCopy::Buffer::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  const char c = traits_type::to_char_type(ch);
  if (kept.size() < kKept) kept += c;
  return to_->sputc(c);
}

std::streamsize ErrorCopy::Buffer::xsputn(const char* s, std::streamsize n) {
  if (kept.size() < kKept)
    kept.append(s, std::min<std::size_t>(static_cast<std::size_t>(n), kKept - kept.size()));
  return to_->sputn(s, n);
}

}  // namespace gpuvet::cli
