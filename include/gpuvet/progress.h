// gpuvet/progress.h — the status line of a long run (bench, scale, watch --duration,
// gate --profile full): `[k/N] what … elapsed` on a terminal, rewritten in place.
//
// A Progress draws only when it was asked to and its file descriptor is a terminal
// (isatty): on a pipe, a file or a closed descriptor every call does nothing, so a program
// reading gpuvet's stderr never sees a carriage return. The line is cut to the terminal's
// width, so the carriage return always lands on the line it drew. While a step is shown, a
// ticker thread redraws it once a second with the elapsed time; clear() takes the line away
// (before other output reaches the same terminal) until the next step(). The destructor
// clears the line. One thread drives a Progress; the ticker only draws under its lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace gpuvet {

class Progress {
 public:
  // Draws on `fd` when `wanted` and `fd` is a terminal. `total` is N, the number of steps
  // (0: not known, the count is then shown as `[k]`).
  Progress(int fd, bool wanted, int total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Whether anything is drawn at all.
  bool active() const { return active_; }

  // The next step (k + 1 of N) and what it is; the elapsed time counts from construction.
  void step(std::string what);
  // Takes the line off the terminal until the next step().
  void clear();

 private:
  void draw_locked();
  void clear_locked();
  void tick();

  const int fd_;
  const bool active_;
  const int total_;
  const std::chrono::steady_clock::time_point t0_;
  std::mutex mu_;
  std::condition_variable cv_;
  int k_ = 0;
  std::string what_;
  bool shown_ = false;
  std::size_t drawn_columns_ = 0;
  bool stop_ = false;
  std::thread ticker_;
};

// The line itself, without the carriage return: "[3/13] host_to_device_ce … 12 s", cut to
// `width` columns (counted in UTF-8 code points) with "…" when it does not fit.
std::string progress_line(int k, int total, std::string_view what, double elapsed_s, int width);

// "0 s", "59 s", "1 min 05 s", "2 h 03 min".
std::string format_elapsed(double seconds);

}  // namespace gpuvet
