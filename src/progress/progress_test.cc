// The status line: drawn on a terminal (a pseudo-terminal here), never on a pipe.
#include "gpuvet/progress.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace gpuvet {
namespace {

// Everything readable on `fd` during `wait`.
std::string drain(int fd, std::chrono::milliseconds wait) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0 || !(p.revents & POLLIN)) break;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

struct Pty {
  int master = -1, slave = -1;
  explicit Pty(int columns = 100) {
    struct winsize ws {};
    ws.ws_col = static_cast<unsigned short>(columns);
    ws.ws_row = 24;
    if (::openpty(&master, &slave, nullptr, nullptr, &ws) != 0) master = slave = -1;
  }
  ~Pty() {
    if (master >= 0) ::close(master);
    if (slave >= 0) ::close(slave);
  }
};

int count(const std::string& s, const std::string& needle) {
  int n = 0;
  for (auto at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

// Catches: a Progress that asks isatty(STDERR) or nothing at all instead of its own
// descriptor, and one that ignores `wanted`.
TEST(Progress, DrawsOnATerminalOnly) {
  Pty pty;
  if (pty.master < 0) GTEST_SKIP() << "no pseudo-terminal here";
  {
    Progress p(pty.slave, true, 13);
    EXPECT_TRUE(p.active());
    p.step("host_to_device_ce");
    p.step("device_to_host_ce");
  }
  const std::string drawn = drain(pty.master, std::chrono::milliseconds(300));
  EXPECT_NE(drawn.find("\r[1/13] host_to_device_ce … 0 s"), std::string::npos) << drawn;
  EXPECT_NE(drawn.find("\r[2/13] device_to_host_ce … 0 s"), std::string::npos) << drawn;
  // Cleared at the end: the last thing on the line is blanks and a carriage return.
  EXPECT_EQ(drawn.back(), '\r') << drawn;

  {
    Progress unwanted(pty.slave, false, 13);
    EXPECT_FALSE(unwanted.active());
    unwanted.step("host_to_device_ce");
  }
  EXPECT_EQ(drain(pty.master, std::chrono::milliseconds(200)), "");

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    Progress piped(fds[1], true, 13);
    EXPECT_FALSE(piped.active());
    piped.step("host_to_device_ce");
    piped.clear();
  }
  ::close(fds[1]);
  char c;
  EXPECT_EQ(::read(fds[0], &c, 1), 0);  // nothing, not even a carriage return
  ::close(fds[0]);
}

// Catches: a ticker that draws over other output after clear(), and one that never redraws
// (the elapsed time frozen during a long step).
TEST(Progress, TicksWhileShownAndStaysAwayAfterClear) {
  Pty pty;
  if (pty.master < 0) GTEST_SKIP() << "no pseudo-terminal here";
  Progress p(pty.slave, true, 4);
  p.step("interval");
  const std::string ticking = drain(pty.master, std::chrono::milliseconds(2300));
  EXPECT_GE(count(ticking, "[1/4] interval … "), 2) << ticking;
  p.clear();
  drain(pty.master, std::chrono::milliseconds(100));
  const std::string after = drain(pty.master, std::chrono::milliseconds(1500));
  EXPECT_EQ(after.find('['), std::string::npos) << after;
  p.step("interval");
  EXPECT_NE(drain(pty.master, std::chrono::seconds(1)).find("[2/4] interval"), std::string::npos);
}

// Catches: a line longer than the terminal (it wraps, and the next carriage return no longer
// lands on it) and a cut in the middle of a UTF-8 sequence.
TEST(Progress, TheLineFitsTheTerminal) {
  EXPECT_EQ(progress_line(3, 13, "host_to_device_ce", 12.4, 100),
            "[3/13] host_to_device_ce … 12 s");
  EXPECT_EQ(progress_line(2, 0, "x", 0, 100), "[2] x … 0 s");
  const std::string cut = progress_line(3, 13, "sustained llama-8b-dp on 8 GPU(s)", 75, 30);
  EXPECT_EQ(cut, "[3/13] sustained… … 1 min 15 s") << cut;
  const std::string narrow = progress_line(3, 13, "é", 5, 4);
  EXPECT_EQ(narrow, "[3/1");
  const std::string accents = progress_line(1, 2, "ééééééééééééééééééé", 0, 16);
  EXPECT_EQ(accents, "[1/2] ééé… … 0 s") << accents;

  Pty pty(40);
  if (pty.master < 0) GTEST_SKIP() << "no pseudo-terminal here";
  {
    Progress p(pty.slave, true, 8);
    p.step(std::string(200, 'x'));
  }
  const std::string drawn = drain(pty.master, std::chrono::milliseconds(300));
  const auto start = drawn.find("\r[1/8]");
  ASSERT_NE(start, std::string::npos) << drawn;
  const auto end = drawn.find('\r', start + 1);
  // 39 columns: one short of the width. "…" is three bytes and one column, twice here.
  EXPECT_EQ(drawn.substr(start + 1, end - start - 1).size(), 39u + 2u * 2u) << drawn;
}

TEST(Progress, ElapsedReadsLikeAClock) {
  EXPECT_EQ(format_elapsed(0), "0 s");
  EXPECT_EQ(format_elapsed(59.9), "59 s");
  EXPECT_EQ(format_elapsed(65), "1 min 05 s");
  EXPECT_EQ(format_elapsed(7380), "2 h 03 min");
  EXPECT_EQ(format_elapsed(-1), "0 s");
}

}  // namespace
}  // namespace gpuvet
