// The busy threads of GPU processes: /proc/<pid>/task/<tid>/stat read twice a window apart
// (SequencedFileSystem serves the two readings), names with spaces and parentheses, threads that
// end or start between the readings, and the cut.
#include "probe/thread_load.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "fakes/file_systems.h"

namespace gpuvet::probe {
namespace {

using namespace gpuvet::testing;  // NOLINT: test fakes

// A stat line with utime, stime and the processor field where the kernel puts them.
std::string stat_line(int tid, const std::string& name, unsigned utime, unsigned stime, int cpu) {
  std::string s = fmt::format(
      "{} ({}) R 1 1 1 0 -1 4194560 100 0 0 0 {} {} 0 0 20 0 9 0 100 "
      "1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 {} 0 0 "
      "0 0 0",
      tid, name, utime, stime, cpu);
  return s;
}

TEST(ThreadLoad, ParsesNamesWithSpacesAndParentheses) {
  auto t = parse_task_stat(stat_line(7, "pt data (worker)", 120, 30, 15));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->name, "pt data (worker)");
  EXPECT_EQ(t->ticks, 150u);
  EXPECT_EQ(t->cpu, 15);
  EXPECT_FALSE(parse_task_stat("7 (x R 1"));
  EXPECT_FALSE(parse_task_stat("7 (x) R 1 2"));
}

// Over 1 s at 100 ticks/s: the data worker used 98 ticks (98 %), the main thread 20 (20 %, not
// busy), a thread gone in the second reading and one new in it are not judged.
TEST(ThreadLoad, KeepsTheThreadsThatPeggedACpu) {
  MemoryFileSystem base({{"/proc/1430/task/1430/stat", ""},
                         {"/proc/1430/task/1431/stat", ""},
                         {"/proc/1430/task/1432/stat", ""}});
  SequencedFileSystem fs(
      base, {{"/proc/1430/task/1430/stat",
              {stat_line(1430, "python", 500, 100, 3), stat_line(1430, "python", 515, 105, 3)}},
             {"/proc/1430/task/1431/stat",
              {stat_line(1431, "pt_data_worker", 1000, 10, 15),
               stat_line(1431, "pt_data_worker", 1090, 18, 15)}},
             {"/proc/1430/task/1432/stat", {stat_line(1432, "gone", 1, 1, 0), "junk"}}});
  std::vector<ProcessFacts> procs(2);
  procs[0].host_pid = 1430;
  procs[0].local_pid = 1430;
  procs[0].gpu = 0;
  procs[1].host_pid = 99;  // not visible here: not read
  FakeClock clock;
  std::vector<std::string> notes;
  sample_busy_threads(fs, clock, procs, std::chrono::milliseconds(1000), 100, notes);
  EXPECT_EQ(clock.slept(), std::chrono::milliseconds(1000));
  ASSERT_EQ(procs[0].busy_threads.size(), 1u);
  const ThreadLoad& t = procs[0].busy_threads[0];
  EXPECT_EQ(t.tid, 1431);
  EXPECT_EQ(t.name, "pt_data_worker");
  EXPECT_EQ(t.cpu, 15);
  EXPECT_DOUBLE_EQ(t.cpu_pct, 98);
  EXPECT_TRUE(procs[1].busy_threads.empty());
  EXPECT_TRUE(notes.empty());
}

// schedstat's nanoseconds win over the ticks where the kernel has them: 0.3 s on a CPU over a
// 0.2 s window (the shortest) is capped at 100 %, 0.05 s is 25 % (not busy).
TEST(ThreadLoad, SchedstatNanosecondsOverTheShortestWindow) {
  MemoryFileSystem base({{"/proc/7/task/7/stat", ""},
                         {"/proc/7/task/7/schedstat", ""},
                         {"/proc/7/task/8/stat", ""},
                         {"/proc/7/task/8/schedstat", ""}});
  SequencedFileSystem fs(base,
                         {{"/proc/7/task/7/stat", {stat_line(7, "main", 0, 0, 1)}},
                          {"/proc/7/task/7/schedstat", {"1000000000 5 5\n", "1300000000 5 5\n"}},
                          {"/proc/7/task/8/stat", {stat_line(8, "idle", 0, 0, 2)}},
                          {"/proc/7/task/8/schedstat", {"0 1 1\n", "50000000 1 1\n"}}});
  std::vector<ProcessFacts> procs(1);
  procs[0].local_pid = 7;
  FakeClock clock;
  std::vector<std::string> notes;
  sample_busy_threads(fs, clock, procs, std::chrono::milliseconds(50), 100, notes);
  EXPECT_EQ(clock.slept(), kMinThreadWindow);
  ASSERT_EQ(procs[0].busy_threads.size(), 1u);
  EXPECT_EQ(procs[0].busy_threads[0].name, "main");
  EXPECT_DOUBLE_EQ(procs[0].busy_threads[0].cpu_pct, 100);
}

TEST(ThreadLoad, NoProcessVisibleSleepsNot) {
  MemoryFileSystem fs({});
  std::vector<ProcessFacts> procs(1);
  FakeClock clock;
  std::vector<std::string> notes;
  sample_busy_threads(fs, clock, procs, std::chrono::milliseconds(500), 100, notes);
  EXPECT_EQ(clock.slept(), std::chrono::milliseconds(0));
}

}  // namespace
}  // namespace gpuvet::probe
