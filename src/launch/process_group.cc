// launch/process_group.cc — cgroup v2 leaves and /proc scans for the jobs' processes.
#include "process_group.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
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

}  // namespace gpuvet::launch
