// launch/process_group.h — the jobs' processes as the kernel sees them: a cgroup v2 leaf per
// job where gpuvet may make one (membership that no fork or setsid escapes, cgroup.kill), else
// the job's process group; gpuvet itself is the child subreaper, so a process whose parent
// died comes back to it instead of init. Linux only. One thread uses an instance.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuvet::launch {

// The cgroup v2 directory this process is in (from /proc/self/mountinfo and
// /proc/self/cgroup), or empty when there is none (a v1-only host) or it cannot be read.
std::optional<std::string> own_cgroup2_dir();

// One leaf per job under a private parent made inside gpuvet's own cgroup.
class CgroupLeaves {
 public:
  // Makes DIR/gpuvet-launch-<pid>/job<k> for k < jobs; empty when any step fails (`why`).
  static std::optional<CgroupLeaves> make(const std::string& own_dir, int jobs, std::string& why);
  CgroupLeaves(CgroupLeaves&&) noexcept;
  CgroupLeaves& operator=(CgroupLeaves&&) noexcept;
  ~CgroupLeaves();  // removes the directories (empty by then, or left for the kernel)

  const std::string& parent() const { return parent_; }
  const std::vector<std::string>& leaves() const { return leaves_; }
  // An open cgroup.procs of job k, for the child to write "0" into before exec.
  int procs_fd(int job) const { return fds_[job]; }
  std::vector<pid_t> members(int job) const;  // live processes, zombies excluded
  // SIGKILL the whole leaf at once (cgroup.kill, kernel 5.14); else each member. Returns
  // whether cgroup.kill was used.
  bool kill_all(int job) const;

 private:
  CgroupLeaves() = default;
  std::string parent_;
  std::vector<std::string> leaves_;
  std::vector<int> fds_;
};

// Leaves a gpuvet that was killed before it could clean up left in `own_dir`
// (gpuvet-launch-<pid> whose pid is no longer a running gpuvet): what is in them is killed
// (cgroup.kill, else each member) and they are removed. One sentence per leaf parent handled.
std::vector<std::string> clean_stale_leaves(const std::string& own_dir);

// A process that outlives gpuvet to stop what it started when gpuvet itself is killed
// (SIGKILL from the scheduler, the OOM killer), which no signal handler sees. It sits in its
// own session, ignores SIGINT/TERM/HUP, and waits on a socket: gpuvet tells it each job's
// process group and says "done" once it has cleaned up itself. End of file without "done"
// (gpuvet died) → SIGKILL to every job group and leaf (cgroup.kill, else each member), then
// the leaves are removed. Without a cgroup, a process that left its job's group (setsid) is out
// of its reach: only the cgroup holds every descendant.
class LaunchWatchdog {
 public:
  // `leaves`: the jobs' cgroup leaves (may be null); `jobs`: how many groups it may be told.
  static std::optional<LaunchWatchdog> start(const CgroupLeaves* leaves, std::size_t jobs,
                                             std::string& why);
  LaunchWatchdog(LaunchWatchdog&&) noexcept;
  LaunchWatchdog& operator=(LaunchWatchdog&&) = delete;
  ~LaunchWatchdog();  // done(), then reaps it

  pid_t pid() const { return pid_; }
  void watch_group(pid_t pgid);
  void done();

 private:
  LaunchWatchdog() = default;
  pid_t pid_ = -1;
  int fd_ = -1;
};

// /proc/PID/stat state letter and process group; empty when the process is gone.
struct ProcStat {
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
};
std::optional<ProcStat> read_proc_stat(pid_t pid);

// One reading of /proc: every live (not zombie) process with its parent and group. A
// supervisor asks several questions of one instant (each job's group, gpuvet's orphans) from
// one scan, not one scan per question.
class ProcessTable {
 public:
  static ProcessTable read();
  std::vector<pid_t> in_group(pid_t pgid) const;       // process group `pgid`
  std::vector<pid_t> children_of(pid_t parent) const;  // orphans the subreaper received

 private:
  std::vector<std::pair<pid_t, ProcStat>> live_;
};

}  // namespace gpuvet::launch
