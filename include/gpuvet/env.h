// gpuvet/env.h — the seams through which gpuvet touches the operating system.
//
// Every source of facts reads files, runs commands and looks at the clock only
// through these interfaces, so tests can point it at a fixture tree, a fake
// command or a fake clock. Implementations are safe to use from one thread at a
// time unless they say otherwise; the real ones below are stateless and thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpuvet/status.h"

namespace gpuvet {

// Read-only view of a file tree. Paths are absolute ("/proc/stat"); a rooted
// implementation resolves them under its root directory, so a fixture tree
// laid out like / stands in for the live machine.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Reads at most max_bytes; procfs/sysfs files report size 0, so read until EOF.
  virtual Result<std::string> read_file(const std::string& path,
                                        std::size_t max_bytes = 4 << 20) const = 0;
  // Names of the entries (no "." or ".."), sorted.
  virtual Result<std::vector<std::string>> list_dir(const std::string& path) const = 0;
  // The canonical absolute path (symlinks resolved), expressed inside the root.
  virtual Result<std::string> real_path(const std::string& path) const = 0;
  virtual bool exists(const std::string& path) const = 0;
};

// root "/" is the live machine.
std::unique_ptr<FileSystem> make_rooted_file_system(std::string root);

struct CommandResult {
  int exit_code = -1;      // -1 when killed or not started
  std::string out;         // stdout, truncated at max_output
  std::string err;         // stderr, truncated at max_output
  bool timed_out = false;  // killed because it outlived its deadline
  double duration_s = 0;
};

// Runs a program (no shell) with a deadline; the whole process group is killed
// when the deadline passes, so a stuck child never hangs gpuvet.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Fails with kNotFound when the program does not exist.
  virtual Result<CommandResult> run(const std::vector<std::string>& argv,
                                    std::chrono::milliseconds timeout,
                                    std::size_t max_output = 64 << 20) const = 0;
};

std::unique_ptr<CommandRunner> make_process_runner();

// SIGINT and SIGTERM end gpuvet's children too. Every process that make_process_runner()
// starts leads its own process group (a terminal's ^C does not reach it, and a deadline can
// kill its grandchildren), so a signal to gpuvet alone would leave them running. While a
// child runs, its group is listed in a fixed-size lock-free table; after this call SIGINT and
// SIGTERM kill (SIGKILL) every listed group, then end gpuvet with the same signal and its
// default action. Call it once, early in main(); a signal ignored at that moment (nohup, a
// background job) stays ignored. Not for library code: it changes process-wide dispositions.
void kill_children_on_termination_signals();

// How many child process groups are running now (for tests and diagnostics).
int running_child_groups();

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point now() const = 0;
  virtual std::int64_t unix_now() const = 0;  // seconds since the epoch
  virtual void sleep_for(std::chrono::milliseconds d) const = 0;
};

std::unique_ptr<Clock> make_system_clock();

// The three seams as every source takes them. Borrowed references: whoever owns the objects
// (a SystemEnv, or a test's fakes) outlives each call made with it.
struct Env {
  const FileSystem& fs;
  const CommandRunner& runner;
  const Clock& clock;
};

// The real machine's seams, owned: files under `root` ("/" on a live node), processes run
// without a shell, the system clock. Not copyable or movable (env() refers to its members);
// the objects are stateless, so one SystemEnv may serve several threads.
class SystemEnv {
 public:
  explicit SystemEnv(std::string root = "/");
  SystemEnv(const SystemEnv&) = delete;
  SystemEnv& operator=(const SystemEnv&) = delete;

  const Env& env() const { return env_; }
  operator const Env&() const { return env_; }  // NOLINT: a SystemEnv is used as an Env

 private:
  std::unique_ptr<FileSystem> fs_;
  std::unique_ptr<CommandRunner> runner_;
  std::unique_ptr<Clock> clock_;
  Env env_;
};

}  // namespace gpuvet
