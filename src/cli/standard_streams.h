// cli/standard_streams.h — gpuvet's standard output is its result: a report that was not
// fully written (a full disk, a closed stdout) must not pass for a run that did its job.
//
// main() makes one StandardOutput before anything else and calls finish() last; in between
// std::cout writes through it. Used on main's thread only.
#pragma once

#include <streambuf>

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

 private:
  // Writes to file descriptor 1; after the first failed write() it keeps its errno and
  // drops the rest.
  class Buffer : public std::streambuf {
   public:
    Buffer();
    int error() const { return error_; }
    bool drain();

   protected:
    int_type overflow(int_type ch) override;
    int sync() override;

   private:
    int error_ = 0;
    char data_[1 << 16];
  };

  Buffer buffer_;
  std::streambuf* original_ = nullptr;
  bool stdout_was_closed_ = false;
  bool finished_ = false;
};

}  // namespace gpuvet::cli
