// launch/process_group.cc — cgroup v2 leaves and /proc scans for the jobs' processes.
#include "process_group.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/util.h"

namespace gpuvet::launch {

namespace fs = std::filesystem;

std::optional<std::string> own_cgroup2_dir() {
  // The cgroup2 mount point: mountinfo field 5, where the filesystem type after " - " is
  // cgroup2.
  std::string mount;
  std::ifstream mi("/proc/self/mountinfo");
  for (std::string line; std::getline(mi, line);) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream words(line.substr(0, dash));
    std::string w;
    for (int i = 0; i < 5 && words >> w; ++i) {
    }
    mount = w;
    break;
  }
  if (mount.empty()) return std::nullopt;
  std::ifstream cg("/proc/self/cgroup");
  for (std::string line; std::getline(cg, line);) {
    if (!line.starts_with("0::")) continue;
    std::string path = line.substr(3);
    if (path.ends_with(" (deleted)")) return std::nullopt;
    return (fs::path(mount) / fs::path(path).relative_path()).lexically_normal().string();
  }
  return std::nullopt;
}

std::optional<CgroupLeaves> CgroupLeaves::make(const std::string& own_dir, int jobs,
                                               std::string& why) {
  CgroupLeaves c;
  // Inside our own cgroup: the leaves need no controller (membership and cgroup.kill work
  // without one), so the rule that a cgroup with processes may not give controllers to its
  // children does not apply, and a delegated cgroup (a Slurm step, a systemd --user scope)
  // is one we may write.
  const fs::path base = own_dir;
  c.parent_ = (base / fmt::format("gpuvet-launch-{}", ::getpid())).string();
  if (::mkdir(c.parent_.c_str(), 0755) != 0) {
    why = fmt::format("cannot make {}: {}", c.parent_, std::strerror(errno));
    c.parent_.clear();
    return std::nullopt;
  }
  for (int k = 0; k < jobs; ++k) {
    const std::string leaf = fmt::format("{}/job{}", c.parent_, k);
    if (::mkdir(leaf.c_str(), 0755) != 0) {
      why = fmt::format("cannot make {}: {}", leaf, std::strerror(errno));
      return std::nullopt;  // the destructor removes what was made
    }
    c.leaves_.push_back(leaf);
    const int fd = ::open((leaf + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      why = fmt::format("cannot open {}/cgroup.procs: {}", leaf, std::strerror(errno));
      return std::nullopt;
    }
    c.fds_.push_back(fd);
  }
  return c;
}

CgroupLeaves::CgroupLeaves(CgroupLeaves&& o) noexcept
    : parent_(std::move(o.parent_)), leaves_(std::move(o.leaves_)), fds_(std::move(o.fds_)) {
  o.parent_.clear();
  o.leaves_.clear();
  o.fds_.clear();
}

CgroupLeaves& CgroupLeaves::operator=(CgroupLeaves&& o) noexcept {
  std::swap(parent_, o.parent_);
  std::swap(leaves_, o.leaves_);
  std::swap(fds_, o.fds_);
  return *this;  // what was ours goes with o
}

CgroupLeaves::~CgroupLeaves() {
  for (int fd : fds_) ::close(fd);
  for (const auto& leaf : leaves_) ::rmdir(leaf.c_str());
  if (!parent_.empty()) ::rmdir(parent_.c_str());
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(f, text)) return std::nullopt;
  // "pid (comm) S ppid pgrp …": comm may hold spaces and parentheses; the last ')' ends it.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  ProcStat s;
  if (!(rest >> s.state >> s.ppid >> s.pgrp)) return std::nullopt;
  return s;
}

ProcessTable ProcessTable::read() {
  ProcessTable t;
  DIR* d = ::opendir("/proc");
  if (!d) return t;
  while (const dirent* e = ::readdir(d)) {
    auto pid = parse_int(e->d_name);
    if (!pid || *pid <= 0) continue;
    auto s = read_proc_stat(static_cast<pid_t>(*pid));
    if (s && s->state != 'Z' && s->state != 'X') t.live_.emplace_back(static_cast<pid_t>(*pid), *s);
  }
  ::closedir(d);
  return t;
}

std::vector<pid_t> ProcessTable::in_group(pid_t pgid) const {
  std::vector<pid_t> out;
  for (const auto& [pid, s] : live_)
    if (s.pgrp == pgid) out.push_back(pid);
  return out;
}

std::vector<pid_t> ProcessTable::children_of(pid_t parent) const {
  std::vector<pid_t> out;
  for (const auto& [pid, s] : live_)
    if (s.ppid == parent) out.push_back(pid);
  return out;
}

std::vector<pid_t> CgroupLeaves::members(int job) const {
  std::vector<pid_t> out;
  std::ifstream f(leaves_[job] + "/cgroup.procs");
  for (std::string line; std::getline(f, line);) {
    auto pid = parse_int(line);
    if (!pid) continue;
    auto s = read_proc_stat(static_cast<pid_t>(*pid));
    if (s && s->state != 'Z' && s->state != 'X') out.push_back(static_cast<pid_t>(*pid));
  }
  return out;
}

bool CgroupLeaves::kill_all(int job) const {
  const int fd = ::open((leaves_[job] + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    const bool ok = ::write(fd, "1", 1) == 1;
    ::close(fd);
    if (ok) return true;
  }
  for (pid_t p : members(job)) ::kill(p, SIGKILL);
  return false;
}

namespace {

// SIGKILL to every process listed in a cgroup.procs file; whether any was listed. System calls
// only: runs in the watchdog, a fork of a process that may have threads.
bool kill_listed(const char* procs_path) {
  const int fd = ::open(procs_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[8192];
  bool any = false;
  long pid = 0;
  bool in_number = false;
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] >= '0' && buffer[i] <= '9') {
        pid = pid * 10 + (buffer[i] - '0');
        in_number = true;
      } else {
        if (in_number && pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL), any = true;
        pid = 0;
        in_number = false;
      }
    }
  }
  if (in_number && pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL), any = true;
  ::close(fd);
  return any;
}

// Empties and removes the leaves (paths without the trailing file), then their parent: what a
// killed gpuvet leaves behind. System calls only (see kill_listed).
void kill_and_remove(const std::vector<std::string>& leaves,
                     const std::vector<std::string>& kill_paths,
                     const std::vector<std::string>& procs_paths, const std::string& parent) {
  for (const auto& k : kill_paths) {
    const int fd = ::open(k.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      [[maybe_unused]] auto n = ::write(fd, "1", 1);
      ::close(fd);
    }
  }
  // Without cgroup.kill (before Linux 5.14), and for processes that were forking meanwhile.
  const timespec pause{0, 20 * 1000 * 1000};
  for (int attempt = 0; attempt < 250; ++attempt) {  // 5 s at most
    bool any = false;
    for (const auto& p : procs_paths) any = kill_listed(p.c_str()) || any;
    if (!any) break;
    ::nanosleep(&pause, nullptr);
  }
  for (const auto& l : leaves) ::rmdir(l.c_str());
  if (!parent.empty()) ::rmdir(parent.c_str());
}

struct WatchdogMessage {
  char kind;  // 'G': a job's process group; 'D': done
  pid_t pid;
};

}  // namespace

std::vector<std::string> clean_stale_leaves(const std::string& own_dir) {
  std::vector<std::string> said;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(own_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("gpuvet-launch-") || !e.is_directory(ec)) continue;
    const auto pid = parse_int(std::string_view(name).substr(14));
    if (!pid || *pid <= 0 || *pid == ::getpid()) continue;
    // Still running as gpuvet: its leaves are in use. (A reused pid running something else
    // leaves them to us.)
    std::ifstream comm(fmt::format("/proc/{}/comm", *pid));
    std::string command;
    if (std::getline(comm, command) && command == "gpuvet") continue;
    std::vector<std::string> leaves, kills, procs;
    for (const auto& leaf : fs::directory_iterator(e.path(), ec))
      if (leaf.is_directory(ec)) {
        leaves.push_back(leaf.path().string());
        kills.push_back(leaf.path().string() + "/cgroup.kill");
        procs.push_back(leaf.path().string() + "/cgroup.procs");
      }
    std::size_t members = 0;
    for (const auto& p : procs) {
      std::ifstream f(p);
      for (std::string line; std::getline(f, line);) members += parse_int(line).has_value();
    }
    kill_and_remove(leaves, kills, procs, e.path().string());
    said.push_back(fmt::format(
        "{}: left by gpuvet pid {}, which was killed before it could clean up: {} process(es) "
        "still in it killed, the cgroup {}",
        e.path().string(), *pid, members,
        fs::exists(e.path()) ? "could not be removed" : "removed"));
  }
  return said;
}

std::optional<LaunchWatchdog> LaunchWatchdog::start(const CgroupLeaves* leaves, std::size_t jobs,
                                                    std::string& why) {
  // Everything the watchdog uses is built before fork: after it, system calls only.
  std::vector<std::string> dirs, kills, procs;
  std::string parent;
  if (leaves) {
    parent = leaves->parent();
    for (const auto& l : leaves->leaves()) {
      dirs.push_back(l);
      kills.push_back(l + "/cgroup.kill");
      procs.push_back(l + "/cgroup.procs");
    }
  }
  std::vector<pid_t> groups(jobs, 0);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    why = fmt::format("socketpair: {}", std::strerror(errno));
    return std::nullopt;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    why = fmt::format("fork: {}", std::strerror(errno));
    ::close(sv[0]);
    ::close(sv[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    const int fd = sv[1];
    ::setsid();  // out of the terminal's job control and of gpuvet's process group
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) ::sigaction(sig, &ignore, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (fd > 3) ::close_range(3, static_cast<unsigned>(fd) - 1, 0);
    ::close_range(static_cast<unsigned>(fd) + 1, ~0u, 0);
    std::size_t told = 0;
    for (;;) {
      WatchdogMessage m{};
      const ssize_t got = ::recv(fd, &m, sizeof m, 0);
      if (got == static_cast<ssize_t>(sizeof m)) {
        if (m.kind == 'D') ::_exit(0);
        if (m.kind == 'G' && told < groups.size()) groups[told++] = m.pid;
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      break;  // gpuvet is gone and never said done
    }
    for (std::size_t k = 0; k < told; ++k)
      if (groups[k] > 0) ::kill(-groups[k], SIGKILL);
    kill_and_remove(dirs, kills, procs, parent);
    ::_exit(0);
  }
  ::close(sv[1]);
  LaunchWatchdog w;
  w.pid_ = pid;
  w.fd_ = sv[0];
  return w;
}

LaunchWatchdog::LaunchWatchdog(LaunchWatchdog&& o) noexcept : pid_(o.pid_), fd_(o.fd_) {
  o.pid_ = -1;
  o.fd_ = -1;
}

void LaunchWatchdog::watch_group(pid_t pgid) {
  if (fd_ < 0) return;
  const WatchdogMessage m{'G', pgid};
  [[maybe_unused]] auto n = ::send(fd_, &m, sizeof m, MSG_NOSIGNAL);
}

void LaunchWatchdog::done() {
  if (fd_ < 0) return;
  const WatchdogMessage m{'D', 0};
  [[maybe_unused]] auto n = ::send(fd_, &m, sizeof m, MSG_NOSIGNAL);
  ::close(fd_);
  fd_ = -1;
}

LaunchWatchdog::~LaunchWatchdog() {
  done();
  if (pid_ > 0)
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

}  // namespace gpuvet::launch
