#include "probe/thread_load.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/util.h"

namespace gpuvet::probe {

std::optional<TaskStat> parse_task_stat(std::string_view line) {
  // "1430 (pt_data_worker) R 1 …": the name runs from the first '(' to the last ')'.
  const auto open = line.find('(');
  const auto close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  TaskStat t;
  t.name = std::string(line.substr(open + 1, close - open - 1)).substr(0, 64);
  // After ") ": field 3 (state) is index 0; utime is field 14, stime 15, processor 39.
  const auto rest = split(trim(line.substr(close + 1)), ' ');
  if (rest.size() < 13) return std::nullopt;
  const auto utime = parse_uint(rest[11]), stime = parse_uint(rest[12]);
  if (!utime || !stime) return std::nullopt;
  t.ticks = *utime + *stime;
  if (rest.size() > 36)
    if (auto cpu = parse_int(rest[36]); cpu && *cpu >= 0 && *cpu < (1 << 20))
      t.cpu = static_cast<int>(*cpu);
  return t;
}

namespace {

using Tasks = std::map<int, TaskStat>;  // tid → its reading

Tasks read_tasks(const FileSystem& fs, int pid, bool& cut) {
  Tasks out;
  const std::string dir = fmt::format("/proc/{}/task", pid);
  auto tids = fs.list_dir(dir);
  if (!tids.is_ok()) return out;
  for (const auto& name : tids.value()) {
    if (out.size() >= kMaxThreadsPerProcess) {
      cut = true;
      break;
    }
    auto tid = parse_int(name);
    if (!tid || *tid <= 0 || *tid > (std::int64_t{1} << 30)) continue;
    auto text = fs.read_file(dir + "/" + name + "/stat", 4096);
    if (!text.is_ok()) continue;  // the thread ended between the listing and the read
    auto t = parse_task_stat(text.value());
    if (!t) continue;
    if (auto sched = fs.read_file(dir + "/" + name + "/schedstat", 256); sched.is_ok()) {
      const auto fields = split(trim(sched.value()), ' ');
      if (!fields.empty()) t->run_ns = parse_uint(fields[0]);
    }
    out.emplace(static_cast<int>(*tid), std::move(*t));
  }
  return out;
}

}  // namespace

void sample_busy_threads(const FileSystem& fs, const Clock& clock,
                         std::vector<ProcessFacts>& processes, std::chrono::milliseconds window,
                         double ticks_per_s, std::vector<std::string>& notes) {
  if (window.count() <= 0 || ticks_per_s <= 0) return;  // 0: no host sampling asked
  window = std::max(window, kMinThreadWindow);
  std::vector<std::pair<ProcessFacts*, Tasks>> before;
  bool cut = false;
  std::size_t skipped = 0;
  for (auto& p : processes) {
    if (!p.local_pid) continue;
    if (before.size() >= kMaxThreadProcesses) {
      ++skipped;
      continue;
    }
    before.emplace_back(&p, read_tasks(fs, *p.local_pid, cut));
  }
  if (before.empty()) return;
  const auto start = clock.now();
  clock.sleep_for(window);
  double seconds = std::chrono::duration<double>(clock.now() - start).count();
  if (seconds <= 0) seconds = std::chrono::duration<double>(window).count();  // a fake clock
  std::map<int, std::vector<ThreadLoad>> busy_of_pid;
  for (auto& [p, first] : before) {
    const int pid = *p->local_pid;
    if (!busy_of_pid.count(pid)) {
      const Tasks second = read_tasks(fs, pid, cut);
      std::vector<ThreadLoad> busy;
      for (const auto& [tid, now] : second) {
        auto was = first.find(tid);
        if (was == first.end() || now.ticks < was->second.ticks) continue;
        double used_s = static_cast<double>(now.ticks - was->second.ticks) / ticks_per_s;
        if (now.run_ns && was->second.run_ns && *now.run_ns >= *was->second.run_ns)
          used_s = static_cast<double>(*now.run_ns - *was->second.run_ns) / 1e9;
        const double pct = std::min(100.0, used_s / seconds * 100.0);
        if (pct >= kBusyThreadPct) busy.push_back({tid, now.name, now.cpu, pct});
      }
      std::sort(busy.begin(), busy.end(),
                [](const ThreadLoad& a, const ThreadLoad& b) { return a.cpu_pct > b.cpu_pct; });
      if (busy.size() > kMaxBusyThreads) busy.resize(kMaxBusyThreads);
      busy_of_pid[pid] = std::move(busy);
    }
    p->busy_threads = busy_of_pid[pid];
  }
  if (cut)
    notes.push_back(
        fmt::format("threads of GPU processes: only the first {} of a process were "
                    "read",
                    kMaxThreadsPerProcess));
  if (skipped > 0)
    notes.push_back(
        fmt::format("threads of GPU processes: {} process(es) past the first {} not "
                    "read",
                    skipped, kMaxThreadProcesses));
}

}  // namespace gpuvet::probe
