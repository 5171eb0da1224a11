// cli/standard_streams.h — gpuvet's standard output is its result: a report that was not
// fully written (a full disk, a closed stdout) must not pass for a run that did its job.
//
// main() makes one StandardOutput before anything else and calls finish() last; in between
// std::cout writes through it. Used on main's thread only.
#pragma once

#include <cstddef>
#include <streambuf>
#include <string>

namespace gpuvet::cli {

class StandardOutput {
 public:
  // A standard stream the caller closed (`>&-`) is opened on /dev/null, so that no file
  // gpuvet opens later takes its descriptor (and a bundle file receives the report); that
  // stdout was closed is remembered. std::cout then writes through a buffer that keeps
  // the reason of the first failed write.
  StandardOutput();
  // Flushes what is left and gives std::cout its own buffer back.
  ~StandardOutput();
  StandardOutput(const StandardOutput&) = delete;
  StandardOutput& operator=(const StandardOutput&) = delete;

  // Flushes and closes standard output. When anything written to it was lost, says
  // "gpuvet: cannot write the output: <reason>" on stderr and returns 3 (kExitUnusable);
  // otherwise returns exit_code. A closed pipe still ends gpuvet quietly through SIGPIPE.
  int finish(int exit_code);

  // Whether anything was written to standard output so far.
  bool anything_written() const { return buffer_.written() > 0; }

 private:
  // Writes to file descriptor 1; after the first failed write() it keeps its errno and
  // drops the rest.
  class Buffer : public std::streambuf {
   public:
    Buffer();
    int error() const { return error_; }
    std::size_t written() const { return written_ + static_cast<std::size_t>(pptr() - pbase()); }
    bool drain();

   protected:
    int_type overflow(int_type ch) override;
    int sync() override;

   private:
    int error_ = 0;
    std::size_t written_ = 0;
    char data_[1 << 16];
  };

  Buffer buffer_;
  std::streambuf* original_ = nullptr;
  bool stdout_was_closed_ = false;
  bool finished_ = false;
};

// std::cerr through a copy: everything still goes to standard error, and the first
// kKept bytes are kept, so a failure can be told again in a JSON error document.
class ErrorCopy {
 public:
  ErrorCopy();
  ~ErrorCopy();
  ErrorCopy(const ErrorCopy&) = delete;
  ErrorCopy& operator=(const ErrorCopy&) = delete;
  const std::string& text() const { return buffer_.kept; }

 private:
  static constexpr std::size_t kKept = 4096;
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(std::streambuf* to) : to_(to) {}
    std::string kept;

   protected:
    int_type overflow(int_type ch) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override { return to_->pubsync(); }

   private:
    std::streambuf* to_;
  };
  Buffer buffer_;
  std::streambuf* original_ = nullptr;
};

}  // namespace gpuvet::cli
