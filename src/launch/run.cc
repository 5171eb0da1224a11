// launch/run.cc — start the jobs, check them, wait, stop the group on the first failure.
//
// The main thread owns the jobs: it blocks SIGCHLD/SIGINT/SIGTERM/SIGHUP before any thread
// starts (every thread inherits the mask, so only its signalfd sees them) and polls that
// descriptor. Two helper threads read NVML: the mapping check (each job's processes on the
// GPUs) and the sampler (clocks and temperature over the run). Between fork and exec the
// child makes only system calls (no allocation: the parent has threads), and tells the
// parent through a close-on-exec pipe what it could not do.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <istream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/util.h"
#include "gpuvet/launch.h"
#include "hw/facts_query.h"
#include "launch/command.h"
#include "probe/nvml_probe.h"
#include "probe/nvml_sampler.h"
#include "probe/process_binding.h"
#include "process_group.h"

namespace gpuvet {

namespace {

constexpr std::size_t kMaxThroughputLine = std::size_t{1} << 16;

// One line of `in` into `line` (without its newline); a line longer than `cap` is read past and
// dropped whole, and `cut` set. False at the end of the input.
bool read_capped_line(std::istream& in, std::string& line, std::size_t cap, bool& cut) {
  for (;;) {
    line.clear();
    bool too_long = false;
    int c = 0;
    bool any = false;
    while ((c = in.get()) != std::char_traits<char>::eof()) {
      any = true;
      if (c == '\n') break;
      if (line.size() < cap)
        line += static_cast<char>(c);
      else
        too_long = true;
    }
    if (!any) return false;
    if (!too_long) return true;
    cut = true;  // skipped: the next line
  }
}

using SteadyClock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using launch::CgroupLeaves;

// What the child reports before exec: a stage and an errno. kExec is fatal.
enum Stage : int { kCgroup = 1, kCpus, kMems, kLog, kParentGone, kExec };
struct ChildReport {
  int stage;
  int err;
};

const char* stage_name(int stage) {
  switch (stage) {
    case kCgroup:
      return "joining its cgroup";
    case kCpus:
      return "binding its CPUs";
    case kMems:
      return "binding its memory";
    case kLog:
      return "opening its log";
    case kParentGone:
      return "starting (gpuvet went away)";
    case kExec:
      return "exec";
  }
  return "?";
}

// Everything the child needs, built before fork.
struct Spawn {
  std::vector<std::string> env_storage;
  std::vector<char*> argv, envp;
  cpu_set_t cpus;
  bool bind_cpus = false;
  NodeMask nodemask;
  int mem_mode = 0;  // 0: none
  int log_fd = -1;
  int cgroup_fd = -1;
  // Descriptors from 3 up that the job keeps (what gpuvet was started with, and the report
  // pipe until exec), sorted; every other one is closed before exec. fd_limit bounds the
  // close() loop where close_range is missing.
  std::vector<int> keep_fds;
  unsigned fd_limit = 1u << 16;
};

// Closes [first, last] (syscalls only: runs between fork and exec).
void close_span(unsigned first, unsigned last, unsigned fd_limit) {
  if (first > last) return;
  if (::close_range(first, last, 0) == 0) return;
  for (unsigned fd = first; fd <= last && fd < fd_limit; ++fd) ::close(static_cast<int>(fd));
}

[[noreturn]] void child(const Spawn& s, int report_fd, pid_t parent, const sigset_t& unblock) {
  auto report = [&](int stage) {
    ChildReport r{stage, errno};
    [[maybe_unused]] auto n = ::write(report_fd, &r, sizeof r);
  };
  if (s.cgroup_fd >= 0 && ::write(s.cgroup_fd, "0", 1) != 1) report(kCgroup);
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    report(kParentGone);
    ::_exit(127);
  }
  if (s.bind_cpus && ::sched_setaffinity(0, sizeof s.cpus, &s.cpus) != 0) report(kCpus);
  if (s.mem_mode &&
      ::syscall(SYS_set_mempolicy, s.mem_mode, s.nodemask.bits, NodeMask::kMaxNodes) != 0)
    report(kMems);
  if (s.log_fd >= 0) {
    if (::dup2(s.log_fd, 1) < 0 || ::dup2(s.log_fd, 2) < 0) report(kLog);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
  ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  // NVML's device files and the like stay with gpuvet: the job gets what gpuvet was given.
  unsigned from = 3;
  for (int k : s.keep_fds) {
    if (k < static_cast<int>(from)) continue;
    close_span(from, static_cast<unsigned>(k) - 1, s.fd_limit);
    from = static_cast<unsigned>(k) + 1;
  }
  close_span(from, ~0u, s.fd_limit);
  ::execve(s.argv[0], s.argv.data(), s.envp.data());
  report(kExec);
  ::_exit(127);
}

Spawn prepare(const JobPlan& j, const LaunchOptions& o,
              const std::vector<std::pair<std::string, std::string>>& extra_env) {
  Spawn s;
  auto overrides = j.env;
  overrides.insert(overrides.end(), extra_env.begin(), extra_env.end());
  s.env_storage = environment_with(overrides);
  for (auto& e : s.env_storage) s.envp.push_back(e.data());
  s.envp.push_back(nullptr);
  for (const auto& a : j.argv) s.argv.push_back(const_cast<char*>(a.c_str()));
  s.argv.push_back(nullptr);
  CPU_ZERO(&s.cpus);
  for (int c : j.cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &s.cpus), s.bind_cpus = true;
  s.nodemask = NodeMask::of(j.mems);
  if (!j.mems.empty()) s.mem_mode = o.mem == MemBind::kPreferred ? kMpolPreferred : kMpolBind;
  return s;
}

double seconds_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

// The task's memory policy as /proc/PID/numa_maps shows it on its first mapping: "bind:1",
// "prefer:0", "default".
std::optional<std::string> read_mem_policy(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/numa_maps", pid));
  std::string line;
  if (!std::getline(f, line)) return std::nullopt;
  std::istringstream words(line);
  std::string address, policy;
  if (!(words >> address >> policy)) return std::nullopt;
  return policy;
}

std::optional<std::string> read_cpus_allowed(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(f, line);)
    if (line.starts_with("Cpus_allowed_list:"))
      return std::string(trim(std::string_view(line).substr(18)));
  return std::nullopt;
}

std::vector<std::string> tail_lines(const std::string& path, std::size_t n) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 16384);
  f.seekg(from);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::deque<std::string> lines;
  for (auto l : split_lines(text)) {
    lines.emplace_back(l.substr(0, 300));
    if (lines.size() > n) lines.pop_front();
  }
  if (from > 0 && lines.size() == n + 1) lines.pop_front();
  return {lines.begin(), lines.end()};
}

// The mapping check: which GPU each job's processes run on, through NVML, until every job
// was seen, the deadline, or stop.
class MappingCheck {
 public:
  MappingCheck(std::vector<pid_t> leaders, std::vector<std::string> leaf_paths,
               const std::optional<std::string>& library, double timeout_s)
      : leaders_(std::move(leaders)),
        leaves_(std::move(leaf_paths)),
        seen_(leaders_.size()),
        library_(library),
        timeout_s_(timeout_s) {
    if (timeout_s_ > 0) thread_ = std::thread([this] { loop(); });
  }
  ~MappingCheck() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_; }
  std::vector<std::vector<std::pair<int, int>>> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  std::vector<std::string> notes() const {
    std::lock_guard lock(mu_);
    return notes_;
  }
  bool abandoned() const { return abandoned_; }

 private:
  // The job a local PID belongs to: its cgroup leaf or its process group.
  std::optional<std::size_t> job_of(pid_t pid) const {
    if (!leaves_.empty()) {
      std::ifstream f(fmt::format("/proc/{}/cgroup", pid));
      for (std::string line; std::getline(f, line);)
        if (line.starts_with("0::"))
          for (std::size_t k = 0; k < leaves_.size(); ++k)
            if (line.ends_with(leaves_[k])) return k;
    }
    auto s = launch::read_proc_stat(pid);
    if (!s) return std::nullopt;
    for (std::size_t k = 0; k < leaders_.size(); ++k)
      if (s->pgrp == leaders_[k]) return k;
    return std::nullopt;
  }

  void loop() {
    const auto deadline = SteadyClock::now() + std::chrono::duration<double>(timeout_s_);
    probe::NvmlProbeOptions po;
    if (library_) po.library = *library_, po.library_given_by_user = true;
    po.cpu_affinity = false;
    po.init_timeout = std::chrono::milliseconds(4000);
    po.gpu_timeout = std::chrono::milliseconds(3000);
    auto real = make_rooted_file_system("/");
    while (!stop_ && SteadyClock::now() < deadline) {
      auto r = probe::probe_nvml(po);
      if (r.abandoned_threads) {
        abandoned_ = true;
        std::lock_guard lock(mu_);
        notes_.push_back("the GPU mapping check stopped: NVML did not answer in time");
        break;
      }
      if (r.failure != NvmlFailure::kNone) {
        std::lock_guard lock(mu_);
        notes_.push_back("the GPU mapping check could not read NVML: " + r.failure_message);
        break;
      }
      bool all = true;
      {
        std::vector<std::string> ignored;
        std::lock_guard lock(mu_);
        for (auto& p : r.processes) {
          probe::read_process_binding(*real, p, ignored);
          if (!p.local_pid) continue;
          auto k = job_of(*p.local_pid);
          if (!k) continue;
          auto& s = seen_[*k];
          if (std::ranges::none_of(s, [&](auto& e) { return e.first == p.gpu; }))
            s.emplace_back(p.gpu, *p.local_pid);
        }
        for (const auto& s : seen_) all = all && !s.empty();
      }
      if (all) break;
      for (int i = 0; i < 5 && !stop_; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    done_ = true;
  }

  const std::vector<pid_t> leaders_;
  const std::vector<std::string> leaves_;
  mutable std::mutex mu_;
  std::vector<std::vector<std::pair<int, int>>> seen_;
  std::vector<std::string> notes_;
  std::optional<std::string> library_;
  double timeout_s_;
  std::atomic<bool> stop_{false}, done_{false}, abandoned_{false};
  std::thread thread_;
};

Finding finding(const char* id, Severity sev, std::vector<std::string> subjects,
                std::string evidence) {
  Finding f;
  f.id = id;
  f.severity = sev;
  f.subjects = std::move(subjects);
  f.evidence = std::move(evidence);
  return f;
}

std::string describe_end(const JobResult& j) {
  if (!j.start_error.empty()) return "did not start: " + j.start_error;
  if (j.signal)
    return fmt::format("killed by signal {} ({}){}", *j.signal, strsignal(*j.signal),
                       j.stopped_by_gpuvet ? ", stopped by gpuvet" : "");
  if (j.exit_code) return fmt::format("exited {}", *j.exit_code);
  return "still running";
}

}  // namespace

LaunchReport run_launch(const std::vector<JobPlan>& plan, const LaunchOptions& o,
                        const std::optional<std::string>& nvml_library,
                        const Inheritance& inherited,
                        const std::function<void(const std::string&)>& progress) {
  LaunchReport report;
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const auto t0 = SteadyClock::now();
  const pid_t self = ::getpid();
  const std::size_t n = plan.size();
  report.jobs.resize(n);
  for (std::size_t k = 0; k < n; ++k) report.jobs[k].plan = plan[k];

  // Signals: ours alone through the signalfd, before any thread exists.
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  ::sigprocmask(SIG_BLOCK, &mask, &old_mask);
  const int sfd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  // Process control: a cgroup leaf per job, else process groups.
  std::optional<CgroupLeaves> cgroups;
  std::string why_not = "not asked for (--no-cgroup)";
  if (o.use_cgroup) {
    if (auto own = launch::own_cgroup2_dir()) {
      for (auto& note : launch::clean_stale_leaves(*own)) report.notes.push_back(std::move(note));
      cgroups = CgroupLeaves::make(*own, static_cast<int>(n), why_not);
    } else {
      why_not = "no cgroup v2 hierarchy for this process";
    }
  }
  report.control = cgroups ? "cgroup v2 " + cgroups->parent()
                           : "process groups, gpuvet as child subreaper (cgroup: " + why_not + ")";
  // Stops the jobs if gpuvet itself is killed (SIGKILL, OOM) before it can.
  std::string why_no_watchdog;
  std::optional<launch::LaunchWatchdog> watchdog =
      launch::LaunchWatchdog::start(cgroups ? &*cgroups : nullptr, n, why_no_watchdog);
  if (!watchdog)
    report.notes.push_back("no watchdog (" + why_no_watchdog +
                           "): if gpuvet is killed with SIGKILL, its jobs outlive it");
  const pid_t watchdog_pid = watchdog ? watchdog->pid() : -1;
  // The processes handed to us as subreaper, less the watchdog (our own child).
  auto orphans_in = [&](const launch::ProcessTable& procs) {
    auto v = procs.children_of(self);
    std::erase(v, watchdog_pid);
    return v;
  };

  // Checkpoint slots for `gpuvet ckpt-slot` inside the jobs.
  std::vector<std::pair<std::string, std::string>> extra_env;
  if (o.ckpt_slots > 0) {
    std::string dir = o.ckpt_dir;
    if (dir.empty())
      dir = o.log_dir.empty() ? fmt::format("/tmp/gpuvet-ckpt-{}", self)
                              : (fs::path(o.log_dir) / "ckpt-slots").string();
    std::error_code ec;
    fs::create_directories(dir, ec);
    extra_env = {{"GPUVET_CKPT_SLOTS", std::to_string(o.ckpt_slots)}, {"GPUVET_CKPT_DIR", dir}};
  }

  // What every job keeps of our descriptors (each also keeps its report pipe until exec).
  std::vector<int> keep_fds;
  for (int fd : inherited.fds)
    if (fd > 2) keep_fds.push_back(fd);  // inherited.fds is sorted
  unsigned fd_limit = 1u << 16;
  if (const long max = ::sysconf(_SC_OPEN_MAX); max > 0)
    fd_limit = static_cast<unsigned>(std::min<long>(max, 1L << 20));

  // Start every job.
  std::vector<pid_t> leaders(n, 0);
  std::vector<bool> reaped(n, false), ended(n, false);
  for (std::size_t k = 0; k < n; ++k) {
    JobResult& jr = report.jobs[k];
    Spawn s = prepare(plan[k], o, extra_env);
    if (!plan[k].log_path.empty())
      s.log_fd = ::open(plan[k].log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    else if (o.job_output_to_stderr)
      s.log_fd = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (cgroups) s.cgroup_fd = cgroups->procs_fd(static_cast<int>(k));
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) {
      jr.start_error = fmt::format("pipe: {}", std::strerror(errno));
      ended[k] = reaped[k] = true;
      continue;
    }
    s.keep_fds = keep_fds;
    s.keep_fds.insert(std::upper_bound(s.keep_fds.begin(), s.keep_fds.end(), pipefd[1]), pipefd[1]);
    s.fd_limit = fd_limit;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipefd[0]);
      child(s, pipefd[1], self, mask);
    }
    ::close(pipefd[1]);
    if (s.log_fd >= 0) ::close(s.log_fd);
    if (pid < 0) {
      jr.start_error = fmt::format("fork: {}", std::strerror(errno));
      ::close(pipefd[0]);
      ended[k] = reaped[k] = true;
      continue;
    }
    ::setpgid(pid, pid);  // also here: no race with a signal to the group before the child's
    if (watchdog) watchdog->watch_group(pid);
    leaders[k] = pid;
    jr.pid = pid;
    jr.start_s = seconds_since(t0);
    ChildReport r{};
    while (true) {
      const ssize_t got = ::read(pipefd[0], &r, sizeof r);
      if (got == static_cast<ssize_t>(sizeof r)) {
        if (r.stage == kExec)
          jr.start_error = fmt::format("exec {}: {}", plan[k].argv[0], std::strerror(r.err));
        else
          jr.bind_errors.push_back(
              fmt::format("{}: {}", stage_name(r.stage), std::strerror(r.err)));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      break;  // EOF: exec succeeded (or the child died)
    }
    ::close(pipefd[0]);
    if (jr.start_error.empty()) {
      jr.cpus_read_back = read_cpus_allowed(pid);
      jr.mem_policy_read_back = read_mem_policy(pid);
    }
    say(fmt::format("job {} on GPU{} (node {}): pid {}{}", plan[k].rank, plan[k].gpu,
                    plan[k].numa ? std::to_string(*plan[k].numa) : "?", pid,
                    jr.start_error.empty() ? "" : ", " + jr.start_error));
  }

  // The helper threads (the signal mask is already theirs).
  std::vector<std::string> leaf_names;
  if (cgroups)
    for (std::size_t k = 0; k < n; ++k)
      leaf_names.push_back(
          fmt::format("/{}/job{}", fs::path(cgroups->parent()).filename().string(), k));
  MappingCheck mapping(leaders, leaf_names, nvml_library, o.check_timeout_s);
  std::unique_ptr<probe::NvmlSampler> sampler;
  const double sampler_t0 = seconds_since(t0);
  if (o.sample_interval_s > 0) {
    probe::SamplerOptions so;
    so.nvml_library = nvml_library;
    so.interval_s = o.sample_interval_s;
    for (const auto& j : plan) so.gpus.push_back(j.gpu);
    sampler = std::make_unique<probe::NvmlSampler>(so);
    sampler->start();
  }

  // Wait.
  std::size_t live_seen = 0;
  bool stopping = false, killed = false;
  SteadyClock::time_point kill_at{};
  std::set<std::pair<std::size_t, int>> mismatches_seen;
  // A job's live processes: its cgroup leaf's, and its process group's in `procs`.
  auto members = [&](std::size_t k, const launch::ProcessTable& procs) {
    std::vector<pid_t> m = cgroups ? cgroups->members(static_cast<int>(k)) : std::vector<pid_t>{};
    if (leaders[k] > 0)
      for (pid_t p : procs.in_group(leaders[k]))
        if (std::ranges::find(m, p) == m.end()) m.push_back(p);
    return m;
  };
  auto signal_all = [&](int sig) {
    const auto procs = launch::ProcessTable::read();
    for (std::size_t k = 0; k < n; ++k) {
      if (leaders[k] <= 0) continue;
      if (sig == SIGKILL && cgroups) cgroups->kill_all(static_cast<int>(k));
      for (pid_t p : members(k, procs)) ::kill(p, sig);
      ::kill(-leaders[k], sig);
    }
    for (pid_t p : orphans_in(procs)) ::kill(p, sig);  // orphans that left their group
  };
  auto stop_group = [&](const std::string& why) {
    if (stopping) return;
    stopping = true;
    report.stop_reason = why;
    say(fmt::format("stopping every job: {} (SIGTERM, SIGKILL after {} s)", why,
                    hw::format_number(o.grace_s, 1)));
    signal_all(SIGTERM);
    kill_at = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                       std::chrono::duration<double>(o.grace_s));
  };
  // Left behind by a job whose leader ended: SIGKILL now (a job that is over has nothing to
  // save), counted.
  std::vector<std::set<pid_t>> swept(n);
  auto sweep_job = [&](std::size_t k, const launch::ProcessTable& procs) {
    auto m = members(k, procs);
    if (m.empty()) return;
    swept[k].insert(m.begin(), m.end());  // a process killed a moment ago may still be listed
    report.jobs[k].left_behind = static_cast<int>(swept[k].size());
    if (cgroups) cgroups->kill_all(static_cast<int>(k));
    for (pid_t p : m) ::kill(p, SIGKILL);
  };

  while (true) {
    // Reap everything: our jobs, and orphans handed to us as subreaper.
    while (true) {
      int status = 0;
      const pid_t p = ::waitpid(-1, &status, WNOHANG);
      if (p <= 0) break;
      for (std::size_t k = 0; k < n; ++k) {
        if (leaders[k] != p || reaped[k]) continue;
        reaped[k] = ended[k] = true;
        JobResult& jr = report.jobs[k];
        jr.end_s = seconds_since(t0);
        if (WIFEXITED(status)) jr.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) jr.signal = WTERMSIG(status), jr.stopped_by_gpuvet = stopping;
        say(fmt::format("job {} on GPU{} {} after {} s", jr.plan.rank, jr.plan.gpu,
                        describe_end(jr), hw::format_number(jr.end_s - jr.start_s, 1)));
        const bool failed =
            jr.start_error.size() || (jr.exit_code && *jr.exit_code != 0) || jr.signal;
        if (failed && !report.first_failure && !(jr.signal && stopping))
          report.first_failure = static_cast<int>(k);
        if (!stopping) sweep_job(k, launch::ProcessTable::read());
        if (failed && !stopping && !o.keep_going)
          stop_group(
              fmt::format("job {} on GPU{} {}", jr.plan.rank, jr.plan.gpu, describe_end(jr)));
      }
    }
    // Jobs that failed to exec never had a live leader to reap: handled above through
    // waitpid too (the child _exit(127)s).

    // The mapping check's verdicts, as they come.
    for (const auto& [k, seen] : [&] {
           std::vector<std::pair<std::size_t, std::vector<std::pair<int, int>>>> v;
           auto s = mapping.seen();
           for (std::size_t k = 0; k < s.size(); ++k) v.emplace_back(k, s[k]);
           return v;
         }()) {
      for (auto [gpu, pid] : seen) {
        if (gpu == plan[k].gpu || !mismatches_seen.insert({k, gpu}).second) continue;
        if (o.strict && !stopping)
          stop_group(fmt::format("--strict: job {} (pid {}) runs on GPU{}, not on its GPU{}",
                                 plan[k].rank, pid, gpu, plan[k].gpu));
      }
    }

    const bool all_reaped = std::ranges::all_of(reaped, [](bool b) { return b; });
    if (all_reaped) {
      // The leaders are gone; what is left of their groups goes now.
      const auto procs = launch::ProcessTable::read();
      bool any = false;
      for (std::size_t k = 0; k < n; ++k)
        if (!members(k, procs).empty()) any = true;
      const auto orphans = orphans_in(procs);
      if (!any && orphans.empty()) break;
      if (!stopping) {
        for (std::size_t k = 0; k < n; ++k) sweep_job(k, procs);
        for (pid_t p : orphans) ::kill(p, SIGKILL);
      }
    }
    if (stopping && !killed && SteadyClock::now() >= kill_at) {
      killed = true;
      say("grace period over: SIGKILL");
      signal_all(SIGKILL);
      kill_at = SteadyClock::now() + std::chrono::seconds(5);  // how long SIGKILL may take
    } else if (killed && SteadyClock::now() >= kill_at) {
      break;  // what is still there is reported as left over
    }

    // --watch: one line per sampled interval, every job's GPU on it.
    if (o.live && sampler) {
      auto fresh = sampler->samples_since(live_seen);
      live_seen += fresh.size();
      std::map<double, std::vector<const GpuSample*>> by_time;
      for (const auto& sample : fresh) by_time[sample.t_s].push_back(&sample);
      for (const auto& [t, at] : by_time) {
        std::string line = fmt::format("{:>6.1f} s", t + sampler_t0);
        for (std::size_t k = 0; k < n; ++k)
          for (const GpuSample* g : at) {
            if (g->gpu != plan[k].gpu) continue;
            line += fmt::format(" | job{} GPU{} {} MHz {} C {} W", plan[k].rank, g->gpu,
                                g->sm_mhz ? std::to_string(*g->sm_mhz) : "?",
                                g->gpu_c ? std::to_string(*g->gpu_c) : "?",
                                g->power_w ? hw::format_number(*g->power_w, 0) : "?");
            if (g->clock_event_mask)
              for (const auto& r : clock_event_names(*g->clock_event_mask))
                if (r != "idle" && r != "gpu_idle") line += " " + r;
            if (ended[k]) line += " (ended)";
          }
        say(line);
      }
    }

    pollfd pfd{sfd, POLLIN, 0};
    ::poll(&pfd, 1, 100);
    signalfd_siginfo si{};
    while (::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      const int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        if (!report.interrupted_by) report.interrupted_by = sig;
        const char* name = sigabbrev_np(sig);
        stop_group(fmt::format("gpuvet received SIG{}", name ? name : "?"));
      }
    }
  }

  report.wall_s = seconds_since(t0);
  mapping.stop();
  std::vector<GpuSample> samples;
  if (sampler) samples = sampler->stop();

  // Whatever is still alive now was not stopped.
  const auto procs = launch::ProcessTable::read();
  for (std::size_t k = 0; k < n; ++k)
    for (pid_t p : members(k, procs)) report.leftover_pids.push_back(p);
  for (pid_t p : orphans_in(procs))
    if (std::ranges::find(report.leftover_pids, p) == report.leftover_pids.end())
      report.leftover_pids.push_back(p);
  cgroups.reset();
  watchdog.reset();  // told "done": it exits without killing anything
  ::close(sfd);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  // Per job: the mapping, the series of its GPU, its throughput, its log.
  const auto seen = mapping.seen();
  for (const auto& note : mapping.notes()) report.notes.push_back(note);
  std::optional<re2::RE2> re;
  if (!o.throughput_regex.empty()) re.emplace(o.throughput_regex, re2::RE2::Quiet);
  bool long_lines = false;
  for (std::size_t k = 0; k < n; ++k) {
    JobResult& jr = report.jobs[k];
    jr.seen_on = seen.size() > k ? seen[k] : std::vector<std::pair<int, int>>{};
    std::vector<int> sm;
    std::set<std::string> reasons;
    for (const auto& s : samples) {
      const double t = s.t_s + sampler_t0;
      if (s.gpu != jr.plan.gpu || t < jr.start_s || (jr.end_s > 0 && t > jr.end_s)) continue;
      if (s.sm_mhz) sm.push_back(*s.sm_mhz);
      if (s.gpu_c) jr.temp_c_max = std::max(jr.temp_c_max.value_or(*s.gpu_c), *s.gpu_c);
      if (s.power_w) jr.power_w_max = std::max(jr.power_w_max.value_or(*s.power_w), *s.power_w);
      if (s.clock_event_mask)
        for (const auto& r : clock_event_names(*s.clock_event_mask))
          if (r != "idle" && r != "gpu_idle") reasons.insert(r);
    }
    if (!sm.empty()) {
      std::ranges::sort(sm);
      jr.sm_mhz_min = sm.front();
      jr.sm_mhz_max = sm.back();
      jr.sm_mhz_median = sm[sm.size() / 2];
    }
    jr.clock_events.assign(reasons.begin(), reasons.end());
    const bool failed =
        !jr.start_error.empty() || (jr.exit_code && *jr.exit_code != 0) || jr.signal;
    if (!jr.plan.log_path.empty() && failed) jr.log_tail = tail_lines(jr.plan.log_path, 10);
    if (re && re->ok() && !jr.plan.log_path.empty()) {
      std::ifstream f(jr.plan.log_path);
      std::vector<double> values;
      std::string line, number;
      // Lines up to kMaxThroughputLine bytes are matched; a longer one (a progress bar that
      // never ends its line) is skipped whole and said in a note.
      while (read_capped_line(f, line, kMaxThroughputLine, long_lines)) {
        if (!re2::RE2::PartialMatch(line, *re, &number)) continue;
        if (auto v = parse_double(number)) values.push_back(*v);
      }
      jr.throughput_lines = static_cast<int>(values.size());
      if (!values.empty()) {
        jr.throughput_last = values.back();
        std::ranges::sort(values);
        jr.throughput_median = values[values.size() / 2];
      }
    }
  }

  if (long_lines)
    report.notes.push_back(
        fmt::format("--throughput-regex: log lines longer than {} KiB were skipped",
                    kMaxThroughputLine / 1024));

  // Findings.
  for (std::size_t k = 0; k < n; ++k) {
    const JobResult& jr = report.jobs[k];
    const std::string subject = fmt::format("job{}", jr.plan.rank);
    const std::string gpu = fmt::format("GPU{}", jr.plan.gpu);
    // The binding: what the plan could not do, what the child could not do, what /proc says.
    std::vector<std::string> binding = jr.plan.notes;
    for (const auto& e : jr.bind_errors) binding.push_back(e);
    if (!jr.plan.cpus.empty() && jr.cpus_read_back &&
        parse_cpu_list(*jr.cpus_read_back) != std::optional(jr.plan.cpus))
      binding.push_back(fmt::format("CPUs read back {} instead of {}", *jr.cpus_read_back,
                                    format_cpu_list(jr.plan.cpus)));
    if (!jr.plan.mems.empty() && jr.mem_policy_read_back) {
      const std::string want = fmt::format(
          "{}:{}", o.mem == MemBind::kPreferred ? "prefer" : "bind", format_cpu_list(jr.plan.mems));
      if (*jr.mem_policy_read_back != want)
        binding.push_back(fmt::format("memory policy read back {} instead of {}",
                                      *jr.mem_policy_read_back, want));
    }
    if (!binding.empty())
      report.findings.push_back(
          finding("launch-binding-mismatch", Severity::kWarning, {subject, gpu},
                  fmt::format("job {} on {}: {}", jr.plan.rank, gpu, fmt::join(binding, "; "))));
    for (auto [g, pid] : jr.seen_on)
      if (g != jr.plan.gpu)
        report.findings.push_back(
            finding("launch-gpu-mismatch", Severity::kWarning, {subject, fmt::format("GPU{}", g)},
                    fmt::format("job {} was given {} ({}) but NVML shows its pid {} on GPU{}",
                                jr.plan.rank, gpu, jr.plan.uuid, pid, g)));
    if (jr.seen_on.empty() && o.check_timeout_s > 0 && jr.start_error.empty() && mapping.done() &&
        jr.end_s - jr.start_s > 1.0)
      report.findings.push_back(finding(
          "launch-job-not-on-gpu", Severity::kInfo, {subject, gpu},
          fmt::format("NVML never listed a process of job {} on any GPU (looked for {} s or "
                      "until it ended)",
                      jr.plan.rank, hw::format_number(o.check_timeout_s, 0))));
    if (jr.left_behind > 0)
      report.findings.push_back(
          finding("launch-processes-left-behind", Severity::kWarning, {subject, gpu},
                  fmt::format("job {} left {} process(es) running after its main process ended "
                              "(killed by gpuvet)",
                              jr.plan.rank, jr.left_behind)));
  }
  if (report.first_failure) {
    const JobResult& jr = report.jobs[*report.first_failure];
    std::string evidence =
        fmt::format("job {} on GPU{} {} after {} s, first of {} job(s){}", jr.plan.rank,
                    jr.plan.gpu, describe_end(jr), hw::format_number(jr.end_s - jr.start_s, 1), n,
                    n == 1                       ? ""
                    : report.stop_reason.empty() ? "; the others were left running (--keep-going)"
                                                 : "; gpuvet stopped the others");
    if (!jr.log_tail.empty()) evidence += "; last log line: " + jr.log_tail.back();
    report.findings.push_back(
        finding("launch-job-failed", Severity::kCritical,
                {fmt::format("job{}", jr.plan.rank), fmt::format("GPU{}", jr.plan.gpu)},
                std::move(evidence)));
  }
  if (!report.leftover_pids.empty())
    report.findings.push_back(
        finding("launch-processes-left-behind", Severity::kWarning, {"host"},
                fmt::format("{} process(es) of the jobs still alive after SIGKILL: {}",
                            report.leftover_pids.size(), fmt::join(report.leftover_pids, ", "))));
  std::ranges::stable_sort(report.findings, [](const Finding& a, const Finding& b) {
    return static_cast<int>(a.severity) > static_cast<int>(b.severity);
  });

  if (report.interrupted_by)
    report.exit_code = 128 + *report.interrupted_by;
  else if (report.first_failure) {
    const JobResult& jr = report.jobs[*report.first_failure];
    report.exit_code = jr.signal ? 128 + *jr.signal : jr.exit_code.value_or(127);
  } else if (!report.stop_reason.empty())
    report.exit_code = 2;  // --strict stopped a group that had not failed
  return report;
}

}  // namespace gpuvet
