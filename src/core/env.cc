#include "gpuvet/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

namespace gpuvet {
namespace {

// The process groups of running children, for the SIGINT/SIGTERM handler. A signal handler
// can reach only globals, and may use only lock-free atomics: a fixed table of slots, 0 free.
constexpr std::size_t kChildSlots = 256;
std::atomic<pid_t> g_child_groups[kChildSlots];
static_assert(std::atomic<pid_t>::is_always_lock_free);

// The slot taken, or kChildSlots when the table is full (the child is then only bounded by
// its own deadline).
std::size_t register_child_group(pid_t pgid) {
  for (std::size_t i = 0; i < kChildSlots; ++i) {
    pid_t expected = 0;
    if (g_child_groups[i].compare_exchange_strong(expected, pgid)) return i;
  }
  return kChildSlots;
}

void unregister_child_group(std::size_t slot) {
  if (slot < kChildSlots) g_child_groups[slot].store(0);
}

extern "C" void kill_child_groups_and_reraise(int sig) {
  const int saved_errno = errno;
  for (auto& slot : g_child_groups) {
    const pid_t p = slot.load();
    if (p <= 0) continue;
    ::kill(-p, SIGKILL);
    ::kill(p, SIGKILL);  // in case the child has not made its group yet
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered with the default action once this handler returns
  errno = saved_errno;
}

class RootedFileSystem final : public FileSystem {
 public:
  explicit RootedFileSystem(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    if (root_ == "/") root_.clear();
  }

  Result<std::string> read_file(const std::string& path, std::size_t max_bytes) const override {
    const std::string full = resolve(path);
    int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return status_from_errno(path, errno);
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Status::invalid_input(path + ": is a directory");
    }
    std::string data;
    char buf[65536];
    while (data.size() < max_bytes) {
      ssize_t n = ::read(fd, buf, std::min(sizeof buf, max_bytes - data.size()));
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        if (err == EAGAIN && !data.empty()) return data;
        return status_from_errno(path, err);
      }
      if (n == 0) break;
      data.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return data;
  }

  Result<std::vector<std::string>> list_dir(const std::string& path) const override {
    DIR* dir = ::opendir(resolve(path).c_str());
    if (!dir) return status_from_errno(path, errno);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(dir)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<std::string> real_path(const std::string& path) const override {
    char buf[PATH_MAX];
    if (!::realpath(resolve(path).c_str(), buf)) return status_from_errno(path, errno);
    std::string p = buf;
    if (!root_.empty()) {
      char rootbuf[PATH_MAX];
      std::string root = ::realpath(root_.c_str(), rootbuf) ? rootbuf : root_;
      if (p.compare(0, root.size(), root) != 0 || (p.size() > root.size() && p[root.size()] != '/'))
        return Status::invalid_input(path + ": resolves outside the root");
      if (p.size() == root.size()) return std::string("/");
      return p.substr(root.size());
    }
    return p;
  }

  bool exists(const std::string& path) const override {
    struct stat st {};
    return ::stat(resolve(path).c_str(), &st) == 0;
  }

 private:
  std::string resolve(const std::string& path) const { return root_ + path; }
  std::string root_;
};

class ProcessRunner final : public CommandRunner {
 public:
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                            std::size_t max_output) const override {
    if (argv.empty()) return Status::invalid_input("empty command");
    int out_pipe[2], err_pipe[2], exec_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return status_from_errno("pipe", errno);
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      close_both(out_pipe);
      return status_from_errno("pipe", errno);
    }
    if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
      close_both(out_pipe);
      close_both(err_pipe);
      return status_from_errno("pipe", errno);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    const auto start = std::chrono::steady_clock::now();
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
      close_both(out_pipe);
      close_both(err_pipe);
      close_both(exec_pipe);
      return status_from_errno("fork", errno);
    }
    if (pid == 0) {
      // Child: own process group so a timeout kills grandchildren too.
      ::setpgid(0, 0);
      // If gpuvet dies before it has listed this child (a signal right after fork), the
      // kernel ends the child instead of leaving it behind.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
      ::dup2(out_pipe[1], 1);
      ::dup2(err_pipe[1], 2);
      ::execvp(args[0], args.data());
      int err = errno;
      ssize_t ignored = ::write(exec_pipe[1], &err, sizeof err);
      (void)ignored;
      ::_exit(127);
    }
    const std::size_t slot = register_child_group(pid);
    ::setpgid(pid, pid);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    ::close(exec_pipe[1]);
    int exec_errno = 0;
    ssize_t got = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno);
    ::close(exec_pipe[0]);
    if (got == sizeof exec_errno) {
      ::close(out_pipe[0]);
      ::close(err_pipe[0]);
      ::waitpid(pid, nullptr, 0);
      unregister_child_group(slot);
      return status_from_errno(argv[0], exec_errno);
    }

    CommandResult result;
    const auto deadline = start + timeout;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        result.timed_out = true;
        break;
      }
      int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), INT_MAX)));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
        if (r <= 0) {
          ::close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
          continue;
        }
        auto room = max_output > sinks[i]->size() ? max_output - sinks[i]->size() : 0;
        sinks[i]->append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(r)));
      }
    }
    for (auto& f : fds)
      if (f.fd >= 0) ::close(f.fd);

    int status = 0;
    if (result.timed_out) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    } else {
      // Output closed; the child may still linger (it closed stdout). Bound the wait too.
      while (true) {
        pid_t w = ::waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) break;
        if (std::chrono::steady_clock::now() >= deadline) {
          result.timed_out = true;
          ::kill(-pid, SIGKILL);
          ::waitpid(pid, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    unregister_child_group(slot);
    if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    result.duration_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

 private:
  static void close_both(int p[2]) {
    ::close(p[0]);
    ::close(p[1]);
  }
};

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override {
    return std::chrono::steady_clock::now();
  }
  std::int64_t unix_now() const override { return static_cast<std::int64_t>(std::time(nullptr)); }
  void sleep_for(std::chrono::milliseconds d) const override { std::this_thread::sleep_for(d); }
};

}  // namespace

std::unique_ptr<FileSystem> make_rooted_file_system(std::string root) {
  return std::make_unique<RootedFileSystem>(std::move(root));
}
std::unique_ptr<CommandRunner> make_process_runner() { return std::make_unique<ProcessRunner>(); }
std::unique_ptr<Clock> make_system_clock() { return std::make_unique<SystemClock>(); }

void kill_children_on_termination_signals() {
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = kill_child_groups_and_reraise;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sa.sa_flags = SA_RESTART;
    ::sigaction(sig, &sa, nullptr);
  }
}

int running_child_groups() {
  int n = 0;
  for (const auto& slot : g_child_groups) n += slot.load() > 0 ? 1 : 0;
  return n;
}

SystemEnv::SystemEnv(std::string root)
    : fs_(make_rooted_file_system(std::move(root))),
      runner_(make_process_runner()),
      clock_(make_system_clock()),
      env_{*fs_, *runner_, *clock_} {}

}  // namespace gpuvet
