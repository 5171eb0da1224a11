// probe/thread_load.h — which threads of the GPU processes keep a CPU busy: two readings of
// /proc/<pid>/task/<tid>/stat (utime + stime, the CPU it last ran on, its name) a window apart.
//
// /proc/<pid>/task/<tid>/schedstat's first field (time on a CPU, nanoseconds) is used where the
// kernel has it: clock ticks (10 ms) are too coarse for a short window.
//
// A GPU that runs a process at low utilisation while one of that process's threads pegs a core
// is waiting on that thread (a data-loader worker, the Python thread launching kernels); the
// rules name both (gpu-waits-on-host-thread). Reads go through a gpuvet::FileSystem; at most
// kMaxThreadsPerProcess threads of at most kMaxThreadProcesses processes are read, each cut
// said in `notes`. Stateless.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/env.h"
#include "gpuvet/facts.h"

namespace gpuvet::probe {

inline constexpr std::size_t kMaxThreadsPerProcess = 4096;
inline constexpr std::size_t kMaxThreadProcesses = 64;
// Threads at or above this share of one CPU over the window are kept, busiest first, at most
// kMaxBusyThreads per process.
inline constexpr double kBusyThreadPct = 50;
inline constexpr std::size_t kMaxBusyThreads = 3;

// One line of /proc/<pid>/task/<tid>/stat: the name (comm, in parentheses, may itself hold
// spaces and parentheses), utime + stime in clock ticks, the CPU it last ran on.
struct TaskStat {
  std::string name;
  std::uint64_t ticks = 0;
  std::optional<int> cpu;
  std::optional<std::uint64_t> run_ns;  // from schedstat
};
std::optional<TaskStat> parse_task_stat(std::string_view line);

// The shortest window the threads are measured over (the host sample window may be shorter).
inline constexpr std::chrono::milliseconds kMinThreadWindow{200};

// Fills busy_threads of every process whose local_pid is known: reads its tasks, sleeps
// `window` (at least kMinThreadWindow; 0 reads nothing) on `clock`, reads them again. ticks_per_s
// is the kernel's USER_HZ (sysconf(_SC_CLK_TCK), 100 on Linux).
void sample_busy_threads(const FileSystem& fs, const Clock& clock,
                         std::vector<ProcessFacts>& processes, std::chrono::milliseconds window,
                         double ticks_per_s, std::vector<std::string>& notes);

}  // namespace gpuvet::probe
