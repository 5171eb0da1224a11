// progress/progress.cc — the `[k/N] what … elapsed` status line on a terminal.
#include "gpuvet/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

#include <fmt/format.h>

namespace gpuvet {

namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

std::size_t columns_of(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += is_continuation(c) ? 0 : 1;
  return n;
}

// The first `columns` code points of `s`.
std::string_view first_columns(std::string_view s, std::size_t columns) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (is_continuation(static_cast<unsigned char>(s[i]))) continue;
    if (seen == columns) return s.substr(0, i);
    ++seen;
  }
  return s;
}

int terminal_width(int fd) {
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a terminal that went away: the status line is not worth an error
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string format_elapsed(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  const long long s = static_cast<long long>(seconds);
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
}

std::string progress_line(int k, int total, std::string_view what, double elapsed_s, int width) {
  const std::string count = total > 0 ? fmt::format("[{}/{}] ", k, total) : fmt::format("[{}] ", k);
  const std::string tail = " … " + format_elapsed(elapsed_s);
  std::string line = count + std::string(what) + tail;
  const std::size_t room = width > 0 ? static_cast<std::size_t>(width) : 0;
  if (columns_of(line) <= room) return line;
  // Shorten what the step is, keep the count and the time; a very narrow terminal gets
  // what fits of the whole line.
  const std::size_t fixed = columns_of(count) + columns_of(tail) + 1;
  if (room > fixed) return count + std::string(first_columns(what, room - fixed)) + "…" + tail;
  return std::string(first_columns(line, room));
}

Progress::Progress(int fd, bool wanted, int total)
    : fd_(fd),
      active_(wanted && ::isatty(fd) == 1),
      total_(total),
      t0_(std::chrono::steady_clock::now()) {
  if (active_) ticker_ = std::thread([this] { tick(); });
}

Progress::~Progress() {
  if (!active_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    clear_locked();
  }
  cv_.notify_all();
  ticker_.join();
}

void Progress::step(std::string what) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  ++k_;
  what_ = std::move(what);
  shown_ = true;
  draw_locked();
}

void Progress::clear() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  clear_locked();
  shown_ = false;
}

void Progress::draw_locked() {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  // One column short of the width: a line that fills the last column wraps on some terminals.
  // A step past the announced count (a run that took one more step) shows k/k, not k/N < k.
  const int total = total_ > 0 ? std::max(total_, k_) : 0;
  const std::string line = progress_line(k_, total, what_, elapsed, terminal_width(fd_) - 1);
  const std::size_t columns = columns_of(line);
  // Spaces over what is left of a longer previous line: works on a terminal without escapes.
  std::string out = "\r" + line;
  if (drawn_columns_ > columns) out += std::string(drawn_columns_ - columns, ' ') + "\r" + line;
  write_all(fd_, out);
  drawn_columns_ = columns;
}

void Progress::clear_locked() {
  if (drawn_columns_ == 0) return;
  write_all(fd_, "\r" + std::string(drawn_columns_, ' ') + "\r");
  drawn_columns_ = 0;
}

void Progress::tick() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::seconds(1));
    if (!stop_ && shown_) draw_locked();
  }
}

}  // namespace gpuvet
