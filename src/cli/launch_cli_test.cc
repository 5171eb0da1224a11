// `gpuvet launch` and `gpuvet ckpt-slot` through the binary, with real processes: the fake NVML
// on a two-node sysfs tree whose nodes are this machine's CPUs 0 and 1, jobs that record what
// they were given (CUDA_VISIBLE_DEVICES, Cpus_allowed_list, the memory policy in numa_maps) and
// register on "their" GPU as a CUDA program would appear to NVML. Each test names the plausible
// bug it is there to catch.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fixture_util.h"
#include "gpuvet/env.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// The job every test launches: records what it got into $OUT/job<rank>.txt, registers its PID on
// a GPU with the fake NVML (its own, or $WRONG_GPU_UUID for rank $WRONG_RANK), then behaves as
// the test asks: rank $FAIL_RANK exits 3 after 0.3 s; every job leaves a grandchild that ignores
// SIGTERM (its PID in $OUT/grandchild<rank>) unless NO_GRANDCHILD is set; the others sleep
// $SLEEP seconds and exit 0.
constexpr const char* kJob = R"JOB(#!/bin/bash
out="$OUT/job$1.txt"
{
  echo "uuid=$CUDA_VISIBLE_DEVICES"
  echo "rank=$GPUVET_LOCAL_RANK"
  echo "arg=$2"
  echo "cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
  echo "mem=$(head -1 /proc/self/numa_maps | cut -d' ' -f2)"
  echo "ppid=$PPID"
  echo "gpu_uuid=$GPUVET_GPU_UUID"
  echo "numa=$GPUVET_NUMA_NODE"
  echo "held=$(ls -l /proc/self/fd | grep -c held-by-nvml)"
} > "$out.tmp" && mv "$out.tmp" "$out"
gpu="$CUDA_VISIBLE_DEVICES"
[ "$1" = "${WRONG_RANK:-x}" ] && gpu="$WRONG_GPU_UUID"
echo $$ >> "$GPUVET_FAKE_NVML_PROCESS_DIR/$gpu"
if [ -z "$NO_GRANDCHILD" ]; then
  setsid bash -c 'trap "" TERM; sleep 60' </dev/null >/dev/null 2>&1 &
  echo $! > "$OUT/grandchild$1"
fi
if [ -n "$LONG_LINE" ]; then head -c 3000000 /dev/zero | tr '\0' '7'; echo; echo "job $1: 123.5 TFLOP/s"; fi
if [ "$1" = "${FAIL_RANK:-x}" ]; then sleep 0.3; echo "job $1: out of patience"; exit 3; fi
sleep "${SLEEP:-0.5}"
[ -n "$LEAK" ] && { setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $! > "$OUT/leak$1"; }
exit 0
)JOB";

class LaunchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    if (!CPU_ISSET(0, &set) || !CPU_ISSET(1, &set))
      GTEST_SKIP() << "needs CPUs 0 and 1 (one per node of the fixture)";
    dir_ = fs::path(::testing::TempDir()) /
           ("gpuvet-launch-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "procs");
    fs::create_directories(dir_ / "out");
    // The four-GPU, two-node tree, its nodes shrunk to CPU 0 and CPU 1 of this machine.
    fs::copy(fixture("sysroot-2numa-4gpu"), dir_ / "root",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    std::ofstream(dir_ / "root/sys/devices/system/node/node0/cpulist") << "0\n";
    std::ofstream(dir_ / "root/sys/devices/system/node/node1/cpulist") << "1\n";
    std::ofstream(dir_ / "job.sh") << kJob;
    fs::permissions(dir_ / "job.sh", fs::perms::owner_all);
  }
  void TearDown() override {
    // Whatever a failed test left alive goes (by the PIDs the jobs wrote down).
    for (const auto& name : {"grandchild", "leak"})
      for (int r = 0; r < 4; ++r)
        if (auto pid = read_pid(std::string(name) + std::to_string(r))) ::kill(*pid, SIGKILL);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::vector<std::string> env(const std::map<std::string, std::string>& extra) const {
    std::vector<std::string> e = {
        "env", "GPUVET_FAKE_NVML_SCENARIO=" + fixture("../scenarios/sysroot-2numa-4gpu.json"),
        "GPUVET_FAKE_NVML_PROCESS_DIR=" + (dir_ / "procs").string(),
        "OUT=" + (dir_ / "out").string()};
    for (const auto& [k, v] : extra) e.push_back(k + "=" + v);
    return e;
  }
  std::vector<std::string> argv(const std::vector<std::string>& options,
                                const std::map<std::string, std::string>& extra = {},
                                bool with_job = true) const {
    std::vector<std::string> a = env(extra);
    for (const auto& w :
         std::vector<std::string>{GPUVET_BINARY, "launch", "--nvml", GPUVET_FAKE_NVML, "--root",
                                  (dir_ / "root").string(), "-q"})
      a.push_back(w);
    a.insert(a.end(), options.begin(), options.end());
    if (with_job) {
      a.push_back("--");
      a.push_back((dir_ / "job.sh").string());
      a.push_back("{rank}");
      a.push_back("{gpu}:{numa}");
    }
    return a;
  }
  CommandResult run(const std::vector<std::string>& a) const {
    auto r = make_process_runner()->run(a, std::chrono::seconds(60));
    EXPECT_TRUE(r.is_ok());
    return r.is_ok() ? r.value() : CommandResult{};
  }
  std::map<std::string, std::string> job_record(int rank) const {
    std::map<std::string, std::string> kv;
    std::ifstream f(dir_ / "out" / ("job" + std::to_string(rank) + ".txt"));
    for (std::string line; std::getline(f, line);)
      if (auto eq = line.find('='); eq != std::string::npos)
        kv[line.substr(0, eq)] = line.substr(eq + 1);
    return kv;
  }
  std::optional<pid_t> read_pid(const std::string& name) const {
    std::ifstream f(dir_ / "out" / name);
    pid_t pid = 0;
    if (f >> pid && pid > 0) return pid;
    return std::nullopt;
  }
  // Whether a PID the jobs wrote down still runs (a zombie counts as gone).
  bool alive(const std::string& name) const {
    auto pid = read_pid(name);
    if (!pid) return false;
    std::ifstream stat("/proc/" + std::to_string(*pid) + "/stat");
    std::string text;
    if (!std::getline(stat, text)) return false;
    const auto close = text.rfind(')');
    return close != std::string::npos && text.size() > close + 2 && text[close + 2] != 'Z';
  }
  // Bad input: exit 3, `needle` on stderr, and job `rank`'s command never ran.
  void expect_refused(const std::vector<std::string>& a, const std::string& needle,
                      int rank) const {
    auto r = run(a);
    EXPECT_EQ(r.exit_code, 3) << needle << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out" / ("job" + std::to_string(rank) + ".txt"))) << needle;
  }
  static std::string fixture(const std::string& rel) {
    return std::string(GPUVET_TEST_DATA) + "/fixtures/" + rel;
  }

  fs::path dir_;
};

TEST_F(LaunchCli, EachJobGetsItsOwnUuidAndItsNodesCpusAndMemory) {
  // Bugs caught: an index in CUDA_VISIBLE_DEVICES, binding by rank instead of the GPU's node,
  // a memory policy never applied, a job reported on a GPU it does not use.
  auto r = run(argv({"--per-gpu", "--json", "--check-timeout", "10"},
                    {{"NO_GRANDCHILD", "1"},
                     {"SLEEP", "2"},
                     {"GPUVET_FAKE_NVML_HOLD_FD", (dir_ / "held-by-nvml").string()}}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["schema"], "gpuvet.launch/1");
  ASSERT_EQ(doc["jobs"].size(), 4u);
  for (int k = 0; k < 4; ++k) {
    const json& j = doc["jobs"][k];
    const auto rec = job_record(k);
    const int node = k < 2 ? 0 : 1;  // GPU0/1 under socket 0, GPU2/3 under socket 1
    EXPECT_EQ(rec.at("uuid"), j["uuid"].get<std::string>());
    EXPECT_TRUE(rec.at("uuid").starts_with("GPU-")) << rec.at("uuid");
    EXPECT_EQ(rec.at("rank"), std::to_string(k));
    EXPECT_EQ(rec.at("arg"), std::to_string(k) + ":" + std::to_string(node));
    EXPECT_EQ(rec.at("cpus"), std::to_string(node));
    EXPECT_EQ(rec.at("held"), "0");  // NVML's descriptor stays with gpuvet
    EXPECT_EQ(j["numa_node"], node);
    EXPECT_EQ(j["cpus_read_back"], std::to_string(node));
    // This machine has memory on node 0 only: node-0 jobs are bound to it, node-1 jobs are
    // left unbound and told.
    EXPECT_EQ(rec.at("mem"), node == 0 ? "bind:0" : "default");
    ASSERT_EQ(j["seen_on"].size(), 1u) << j.dump();
    EXPECT_EQ(j["seen_on"][0]["gpu"], k);
    EXPECT_EQ(j["exit_code"], 0);
  }
  std::map<std::string, int> ids;
  for (const auto& f : doc["findings"]) ids[f["id"]]++;
  EXPECT_EQ(ids["launch-binding-mismatch"], 2) << doc["findings"].dump(1);
  EXPECT_EQ(ids.count("launch-gpu-mismatch"), 0u);
  EXPECT_EQ(ids.count("launch-job-failed"), 0u);
}

void expect_group_stopped_fast(const json& doc, int failed_rank) {
  ASSERT_EQ(doc["first_failure"], failed_rank);
  const double failed_at = doc["jobs"][failed_rank]["end_s"];
  for (const auto& j : doc["jobs"]) {
    if (j["rank"] == failed_rank) continue;
    EXPECT_TRUE(j["stopped_by_gpuvet"]) << j.dump();
    EXPECT_LT(j["end_s"].get<double>() - failed_at, 2.0) << j.dump();
  }
}

TEST_F(LaunchCli, WatchPrintsEachJobsGpuIntervalByInterval) {
  // Bug caught: --watch silent, or a job's line showing another job's GPU.
  std::vector<std::string> a = argv(
      {"--per-gpu", "--watch", "--sample-interval", "0.2", "--check-timeout", "0", "--gpus", "1,2"},
      {{"NO_GRANDCHILD", "1"}, {"SLEEP", "1.5"}});
  std::erase(a, std::string("-q"));
  auto r = run(a);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int lines = 0;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    if (line.find(" | job0 GPU1 ") == std::string::npos) continue;
    ++lines;
    EXPECT_NE(line.find(" | job1 GPU2 "), std::string::npos) << line;
    EXPECT_NE(line.find(" MHz "), std::string::npos) << line;
  }
  EXPECT_GE(lines, 3) << r.err;
}

TEST_F(LaunchCli, OneJobExitingThreeStopsTheWholeTreeAtOnceAndGpuvetExitsThree) {
  // Bugs caught: waiting for the others' own ends (60 s), a grandchild that ignores SIGTERM
  // surviving, the exit code of the last job instead of the first failure.
  const auto t0 = Clock::now();
  auto r = run(argv({"--per-gpu", "--json", "--grace", "1", "--check-timeout", "0", "--log-dir",
                     (dir_ / "logs").string()},
                    {{"FAIL_RANK", "2"}, {"SLEEP", "60"}}));
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_LT(wall, 10.0);
  const json doc = json::parse(r.out);
  expect_group_stopped_fast(doc, 2);
  const json& failed = doc["jobs"][2];
  ASSERT_FALSE(failed["log_tail"].empty());
  EXPECT_EQ(failed["log_tail"].back(), "job 2: out of patience");
  for (int k = 0; k < 4; ++k) EXPECT_FALSE(alive("grandchild" + std::to_string(k))) << k;
  EXPECT_TRUE(doc["leftover_pids"].empty());
  EXPECT_EQ(doc["findings"][0]["id"], "launch-job-failed");
}

// E11: a job log with a 3 MB line (a progress bar that never ends its line) and a pattern with
// nested repetition: read in linear time (RE2), the long line skipped and said, the job's own
// figure found, no crash after every job succeeded.
TEST_F(LaunchCli, ThroughputRegexSurvivesALongLogLine) {
  auto r =
      run(argv({"--per-gpu", "--json", "--check-timeout", "0", "--gpus", "1", "--log-dir",
                (dir_ / "logs").string(), "--throughput-regex", "(([0-9]+)*\\.?[0-9]*) TFLOP/s"},
               {{"NO_GRANDCHILD", "1"}, {"LONG_LINE", "1"}, {"SLEEP", "0.1"}}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["jobs"].size(), 1u);
  EXPECT_EQ(doc["jobs"][0]["throughput"]["lines"], 1) << doc["jobs"][0];
  EXPECT_EQ(doc["jobs"][0]["throughput"]["median"], 123.5) << doc["jobs"][0];
  bool said = false;
  for (const auto& n : doc["notes"])
    said = said || n.get<std::string>().find("longer than 64 KiB") != std::string::npos;
  EXPECT_TRUE(said) << doc["notes"];
}

TEST_F(LaunchCli, WithoutACgroupTheProcessGroupsAndTheSubreaperStillCatchEveryone) {
  // Bug caught: the fallback path (no cgroup v2 to write: a container, cgroup v1) leaking the
  // setsid grandchildren, which left the jobs' process groups.
  auto r = run(argv({"--per-gpu", "--json", "--grace", "1", "--check-timeout", "0", "--no-cgroup"},
                    {{"FAIL_RANK", "0"}, {"SLEEP", "60"}}));
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  const json doc = json::parse(r.out);
  EXPECT_TRUE(doc["control"].get<std::string>().starts_with("process groups")) << doc["control"];
  expect_group_stopped_fast(doc, 0);
  for (int k = 0; k < 4; ++k) EXPECT_FALSE(alive("grandchild" + std::to_string(k))) << k;
}

TEST_F(LaunchCli, KeepGoingLetsTheOthersFinishAndStillReportsTheFailure) {
  auto r = run(argv({"--per-gpu", "--json", "--keep-going", "--check-timeout", "0"},
                    {{"FAIL_RANK", "1"}, {"SLEEP", "1"}, {"NO_GRANDCHILD", "1"}}));
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["first_failure"], 1);
  EXPECT_TRUE(doc["stop_reason"].is_null());
  for (int k : {0, 2, 3}) {
    EXPECT_EQ(doc["jobs"][k]["exit_code"], 0);
    EXPECT_FALSE(doc["jobs"][k]["stopped_by_gpuvet"]);
  }
}

TEST_F(LaunchCli, ProcessesAJobLeavesBehindAreKilledAndReported) {
  // Bug caught: the orphaned data-loader worker that keeps holding the GPU after a clean exit.
  auto r = run(argv({"--per-gpu", "--json", "--check-timeout", "0", "--gpus", "1"},
                    {{"NO_GRANDCHILD", "1"}, {"LEAK", "1"}, {"SLEEP", "0.2"}}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["jobs"].size(), 1u);
  EXPECT_EQ(doc["jobs"][0]["gpu"], 1);
  EXPECT_EQ(doc["jobs"][0]["left_behind"], 1);
  EXPECT_FALSE(alive("leak0"));
  bool reported = false;
  for (const auto& f : doc["findings"]) reported |= f["id"] == "launch-processes-left-behind";
  EXPECT_TRUE(reported);
}

TEST_F(LaunchCli, AJobOnAnotherGpuIsAMismatchAndStrictStopsTheGroup) {
  // Bug caught: trusting CUDA_VISIBLE_DEVICES instead of looking where NVML sees the PID.
  // Job 0 "opens" GPU3 instead of its GPU0.
  const std::string gpu3 = "GPU-5d3f6a8e-21c4-4b7e-9f0a-6c1e2d3b4a53";
  std::map<std::string, std::string> extra = {
      {"WRONG_RANK", "0"}, {"WRONG_GPU_UUID", gpu3}, {"NO_GRANDCHILD", "1"}, {"SLEEP", "3"}};
  auto r = run(argv({"--per-gpu", "--json", "--check-timeout", "5", "--mem", "none"}, extra));
  ASSERT_EQ(r.exit_code, 1 - 1) << r.out << r.err;  // reported, not stopped
  json doc = json::parse(r.out);
  bool mismatch = false;
  for (const auto& f : doc["findings"])
    if (f["id"] == "launch-gpu-mismatch") {
      mismatch = true;
      EXPECT_EQ(f["subjects"][0], "job0");
      EXPECT_EQ(f["subjects"][1], "GPU3");
    }
  EXPECT_TRUE(mismatch) << doc["findings"].dump(1);

  extra["SLEEP"] = "30";
  fs::remove_all(dir_ / "procs");
  fs::create_directories(dir_ / "procs");
  auto strict = run(argv(
      {"--per-gpu", "--json", "--check-timeout", "10", "--mem", "none", "--strict", "--grace", "1"},
      extra));
  EXPECT_EQ(strict.exit_code, 2) << strict.out << strict.err;
  doc = json::parse(strict.out);
  EXPECT_NE(doc["stop_reason"].get<std::string>().find("--strict"), std::string::npos);
  EXPECT_LT(doc["wall_s"].get<double>(), 15.0);
}

// `a` started in the background, its output to /dev/null: gpuvet to interrupt or kill.
pid_t spawn_quiet(std::vector<std::string> a) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<char*> c;
    for (auto& w : a) c.push_back(w.data());
    c.push_back(nullptr);
    ::execvp(c[0], c.data());
    ::_exit(127);
  }
  return pid;
}

TEST_F(LaunchCli, InterruptingGpuvetStopsEveryJob) {
  // Bug caught: ^C reaching gpuvet only (the jobs are in their own process groups) and the
  // jobs running on without it.
  std::vector<std::string> a =
      argv({"--per-gpu", "--grace", "1", "--check-timeout", "0"}, {{"SLEEP", "60"}});
  const pid_t pid = spawn_quiet(a);
  // Wait for every job to have started (their records), then ^C.
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline &&
         !(fs::exists(dir_ / "out/grandchild3") && fs::exists(dir_ / "out/grandchild0")))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(dir_ / "out/grandchild3"));
  ::kill(pid, SIGINT);
  int status = 0;
  const auto t0 = Clock::now();
  while (::waitpid(pid, &status, WNOHANG) == 0 && Clock::now() - t0 < std::chrono::seconds(15))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  for (int k = 0; k < 4; ++k) EXPECT_FALSE(alive("grandchild" + std::to_string(k))) << k;
}

// Live processes of process group `pgid` (by a scan of /proc; zombies excluded).
std::vector<pid_t> group_members(pid_t pgid) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream f(e.path() / "stat");
    std::string text;
    if (!std::getline(f, text)) continue;
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    char state = 0;
    pid_t ppid = 0, pgrp = 0;
    if (rest >> state >> ppid >> pgrp && pgrp == pgid && state != 'Z' && state != 'X')
      out.push_back(std::stoi(name));
  }
  return out;
}

// E9: `kill -9` of gpuvet (the scheduler's, the OOM killer's), which no handler sees. Its
// watchdog stops every job: with a cgroup, everything in the leaves (the setsid grandchildren
// too) and the leaves go; without one, every job's process group (the `sleep` each job runs,
// which the job's death alone would leave to init).
TEST_F(LaunchCli, KillingGpuvetWithSigkillLeavesNoJobRunning) {
  for (const bool cgroup : {true, false}) {
    SCOPED_TRACE(cgroup ? "cgroup" : "--no-cgroup");
    fs::remove_all(dir_ / "out");
    fs::create_directories(dir_ / "out");
    fs::remove_all(dir_ / "procs");
    fs::create_directories(dir_ / "procs");
    std::vector<std::string> options = {"--per-gpu", "--grace", "1", "--check-timeout", "0"};
    if (!cgroup) options.push_back("--no-cgroup");
    std::vector<std::string> a = argv(options, {{"SLEEP", "60"}});
    const pid_t pid = spawn_quiet(a);
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    auto started = [&] {
      for (int k = 0; k < 4; ++k)
        if (!fs::exists(dir_ / "out" / ("grandchild" + std::to_string(k)))) return false;
      return true;
    };
    while (Clock::now() < deadline && !started())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(started());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // each job is in its sleep
    // The jobs' leaders, as they registered with the fake NVML.
    std::vector<pid_t> leaders;
    for (const auto& e : fs::directory_iterator(dir_ / "procs")) {
      std::ifstream f(e.path());
      for (pid_t p; f >> p;) leaders.push_back(p);
    }
    ASSERT_EQ(leaders.size(), 4u);
    std::optional<fs::path> leaf_parent;
    if (cgroup) {
      std::ifstream cg("/proc/" + std::to_string(pid) + "/cgroup");
      for (std::string line; std::getline(cg, line);)
        if (line.starts_with("0::"))
          for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
            const fs::path p = fs::path(mount) / fs::path(line.substr(3)).relative_path() /
                               ("gpuvet-launch-" + std::to_string(pid));
            if (fs::exists(p)) leaf_parent = p;
          }
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    auto anything_left = [&] {
      for (pid_t l : leaders)
        if (!group_members(l).empty()) return true;
      if (leaf_parent) {
        for (int k = 0; k < 4; ++k)
          if (alive("grandchild" + std::to_string(k))) return true;
        if (fs::exists(*leaf_parent)) return true;
      }
      return false;
    };
    const auto t0 = Clock::now();
    while (anything_left() && Clock::now() - t0 < std::chrono::seconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (pid_t l : leaders) EXPECT_TRUE(group_members(l).empty()) << "group " << l;
    if (leaf_parent) {
      for (int k = 0; k < 4; ++k) EXPECT_FALSE(alive("grandchild" + std::to_string(k))) << k;
      EXPECT_FALSE(fs::exists(*leaf_parent)) << *leaf_parent;
    }
    // Without a cgroup the setsid grandchildren are out of reach (said in the docs): not ours
    // to leave running after the test.
    for (int k = 0; k < 4; ++k)
      if (auto g = read_pid("grandchild" + std::to_string(k))) ::kill(*g, SIGKILL);
  }
}

TEST_F(LaunchCli, BadInputIsExitThreeAndStartsNothing) {
  // Bug caught: half the jobs started before the bad part of the input is noticed.
  auto refused = [&](const std::vector<std::string>& a, const std::string& needle) {
    expect_refused(a, needle, 0);
  };
  auto a = argv({"--per-gpu"}, {}, false);
  a.push_back("--");
  a.push_back("gpuvet-no-such-program");
  refused(a, "not found on PATH");
  refused(argv({"--per-gpu", "--gpus", ","}), "empty");
  refused(argv({"--per-gpu", "--gpus", ""}), "empty");  // E10: not every GPU
  refused(argv({"--per-gpu", "--gpus", "0,9"}), "no GPU 9");
  refused(argv({"--per-gpu", "--log-dir", "/proc/gpuvet/logs"}), "--log-dir");
  refused(argv({}), "--per-gpu");
  refused(argv({"--per-gpu"}, {}, false), "no command");
  // --strict on a node whose node-1 memory this machine lacks: refused, not half-bound.
  refused(argv({"--per-gpu", "--strict"}), "cannot be bound");
}

// --in-task: what srun (or mpirun) leaves in the environment of one task: rank 2, alone on its
// node, given GPU0 (node 0 of the fixture: this machine's CPU 0).
std::map<std::string, std::string> slurm_task_env(const std::string& visible) {
  return {{"SLURM_PROCID", "2"},  {"SLURM_LOCALID", "0"}, {"SLURM_STEP_ID", "0"},
          {"SLURM_NTASKS", "4"},  {"SLURM_NODEID", "2"},  {"SLURM_STEP_TASKS_PER_NODE", "1(x4)"},
          {"NO_GRANDCHILD", "1"}, {"SLEEP", "0"},         {"CUDA_VISIBLE_DEVICES", visible}};
}
constexpr const char* kGpu0 = "GPU-5d3f6a8e-21c4-4b7e-9f0a-6c1e2d3b4a50";
constexpr const char* kGpu2 = "GPU-5d3f6a8e-21c4-4b7e-9f0a-6c1e2d3b4a52";

// `taskset -c CPU` in front: the placement a scheduler would have given the task; without -q,
// so that the lines a task prints when all is well are seen too.
std::vector<std::string> on_cpu(const std::string& cpu, std::vector<std::string> a) {
  a.insert(a.begin(), {"taskset", "-c", cpu});
  a.erase(std::find(a.begin(), a.end(), "-q"));
  return a;
}

TEST_F(LaunchCli, InTaskChecksTheTasksPlacementThenBecomesTheCommand) {
  // Bugs caught: the command run as a child (srun's signals and accounting then reach gpuvet,
  // not the job), the GPU judged by its index, a misplaced task passed in silence.
  auto r = run(on_cpu("1", argv({"--in-task"}, slurm_task_env(kGpu0))));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto rec = job_record(2);
  ASSERT_FALSE(rec.empty()) << r.err;
  EXPECT_EQ(rec.at("ppid"), std::to_string(::getpid()));  // exec'd: the test is its parent
  EXPECT_EQ(rec.at("uuid"), kGpu0);                       // CUDA_VISIBLE_DEVICES untouched
  EXPECT_EQ(rec.at("gpu_uuid"), kGpu0);
  EXPECT_EQ(rec.at("numa"), "0");
  EXPECT_EQ(rec.at("arg"), "0:0");  // {gpu}:{numa}
  EXPECT_EQ(rec.at("cpus"), "1");   // checked, not changed
  EXPECT_NE(r.err.find("task 2 (local 0 of 1), slurm: GPU0 " + std::string(kGpu0)),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("warning launch-binding-mismatch: task 2 (local 0) on GPU0: none of its "
                       "CPUs (1 on node 1) is on its GPU's node 0 (CPUs 0)"),
            std::string::npos)
      << r.err;

  // The same task placed on CPU 0 is right, and says so.
  fs::remove(dir_ / "out/job2.txt");
  auto ok = run(on_cpu("0", argv({"--in-task"}, slurm_task_env(kGpu0))));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("warning"), std::string::npos) << ok.err;
  EXPECT_NE(ok.err.find("binding on the GPU's node: ok"), std::string::npos) << ok.err;
  EXPECT_EQ(job_record(2).at("cpus"), "0");
}

TEST_F(LaunchCli, InTaskStrictRefusesAMisplacedTaskAndBindMovesIt) {
  // Bugs caught: --strict that warns and runs anyway; --bind that binds to the GPU's index.
  auto strict = run(on_cpu("1", argv({"--in-task", "--strict"}, slurm_task_env(kGpu0))));
  EXPECT_EQ(strict.exit_code, 2) << strict.err;
  EXPECT_NE(strict.err.find("not started (exit 2)"), std::string::npos) << strict.err;
  EXPECT_FALSE(fs::exists(dir_ / "out/job2.txt"));

  const std::string report = (dir_ / "out/task{rank}.json").string();
  auto bound = run(on_cpu(
      "1", argv({"--in-task", "--bind", "--strict", "--report", report}, slurm_task_env(kGpu0))));
  EXPECT_EQ(bound.exit_code, 0) << bound.err;
  auto rec = job_record(2);
  ASSERT_FALSE(rec.empty()) << bound.err;
  EXPECT_EQ(rec.at("cpus"), "0");
  EXPECT_EQ(rec.at("mem"), "bind:0");
  EXPECT_NE(bound.err.find("bound by gpuvet: CPUs 0, memory bind:0"), std::string::npos)
      << bound.err;
  std::ifstream f(dir_ / "out/task2.json");
  const json doc = json::parse(f);
  EXPECT_EQ(doc["schema"], "gpuvet.launch-task/1");
  EXPECT_EQ(doc["gpu"], 0);
  EXPECT_EQ(doc["placed"]["cpus"], "1");
  EXPECT_EQ(doc["bound_by_gpuvet"]["cpus"], "0");
  EXPECT_EQ(doc["findings"].size(), 0u);
  EXPECT_EQ(doc["env"]["GPUVET_GPU_UUID"], kGpu0);

  // GPU2 is on node 1, whose memory this machine lacks: the CPUs move, the memory cannot, and
  // --strict refuses.
  fs::remove(dir_ / "out/job2.txt");
  auto partial = run(on_cpu("0", argv({"--in-task", "--bind", "--strict"}, slurm_task_env(kGpu2))));
  EXPECT_EQ(partial.exit_code, 2) << partial.err;
  EXPECT_NE(partial.err.find("memory of node 1 is not among the nodes it may use"),
            std::string::npos)
      << partial.err;
  EXPECT_FALSE(fs::exists(dir_ / "out/job2.txt"));
}

TEST_F(LaunchCli, InTaskHandsOnTheInheritedDescriptorsAndNoOthers) {
  // Bugs caught: a descriptor the launcher passed (a PMI socket) closed before the command
  // runs, or one gpuvet opened (NVML's device files) left open in the command.
  const std::vector<std::string> with_fd7 = {"sh", "-c", "exec 7</dev/null; exec \"$@\"", "sh"};
  std::vector<std::string> direct = with_fd7;
  direct.insert(direct.end(), {"/bin/ls", "/proc/self/fd"});
  const auto baseline = run(direct);  // what the command has when nothing stands between
  ASSERT_NE(baseline.out.find("\n7\n"), std::string::npos) << baseline.out;
  auto env = slurm_task_env(kGpu0);
  // NVML holds a descriptor, without close-on-exec.
  env["GPUVET_FAKE_NVML_HOLD_FD"] = (dir_ / "held-by-nvml").string();
  auto a = argv({"--in-task", "-q"}, env, false);
  a.insert(a.begin(), with_fd7.begin(), with_fd7.end());
  a.insert(a.end(), {"--", "/bin/ls", "/proc/self/fd"});
  auto r = run(a);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, baseline.out) << r.err;
}

TEST_F(LaunchCli, InTaskBadInputIsExitThreeAndRunsNothing) {
  auto refused = [&](const std::vector<std::string>& a, const std::string& needle) {
    expect_refused(a, needle, 2);
  };
  refused(argv({"--in-task"}, slurm_task_env("NoDevFiles")), "was given no GPU");
  refused(argv({"--in-task"}, slurm_task_env("GPU-ffffffff")), "is no GPU of this node");
  refused(argv({"--in-task"}, slurm_task_env("7")), "is no GPU of this node");
  refused(argv({"--in-task", "--per-gpu"}, slurm_task_env(kGpu0)), "excludes");
  refused(argv({"--in-task", "--log-dir", "/tmp"}, slurm_task_env(kGpu0)), "excludes");
  refused(argv({"--per-gpu", "--bind"}, slurm_task_env(kGpu0)), "requires");
  refused(argv({"--in-task", "--report", "/proc/gpuvet/r.json"}, slurm_task_env(kGpu0)),
          "cannot write --report");
  // Several GPUs and no local rank: {gpu} cannot be known.
  auto several = slurm_task_env(std::string(kGpu0) + "," + kGpu2);
  several.erase("SLURM_STEP_TASKS_PER_NODE");
  refused(argv({"--in-task"}, several), "needs the task's GPU");
}

TEST(CkptSlotCli, AtMostKHoldersAtOnceAndEveryOneRuns) {
  // Bugs caught: a slot never released (later writers wait forever), or two holders of one
  // slot (more than K writers at once).
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("gpuvet-ckpt-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string log = (dir / "log").string();
  std::vector<pid_t> pids;
  for (int i = 0; i < 5; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string script =
          "echo start $(date +%s.%N) >> " + log + "; sleep 0.4; echo end $(date +%s.%N) >> " + log;
      ::execl(GPUVET_BINARY, GPUVET_BINARY, "ckpt-slot", "-q", "--max", "2", "--dir",
              (dir / "slots").c_str(), "--", "sh", "-c", script.c_str(), nullptr);
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  std::vector<std::pair<double, int>> events;
  std::ifstream f(log);
  std::string what;
  double t = 0;
  while (f >> what >> t) events.emplace_back(t, what == "start" ? 1 : -1);
  ASSERT_EQ(events.size(), 10u);
  std::sort(events.begin(), events.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;  // ends first
  });
  int now = 0, most = 0;
  for (auto [time, d] : events) most = std::max(most, now += d);
  EXPECT_EQ(most, 2);  // never three, and the two slots were used side by side
  fs::remove_all(dir);
}

TEST(CkptSlotCli, BadInputAndATimeoutAreSaid) {
  auto run = [](std::vector<std::string> a) {
    a.insert(a.begin(), {GPUVET_BINARY, "ckpt-slot"});
    auto r = make_process_runner()->run(a, std::chrono::seconds(20));
    EXPECT_TRUE(r.is_ok());
    return r.is_ok() ? r.value() : CommandResult{};
  };
  const std::string dir = ::testing::TempDir() + "/gpuvet-ckpt-bad-" + std::to_string(::getpid());
  EXPECT_EQ(run({"--max", "0", "--dir", dir, "--", "true"}).exit_code, 3);
  EXPECT_EQ(run({"--dir", dir, "--", "true"}).exit_code, 3);
  EXPECT_EQ(run({"--max", "1", "--dir", "/proc/gpuvet/x", "--", "true"}).exit_code, 3);
  EXPECT_EQ(run({"--max", "1", "--dir", dir, "--", "sh", "-c", "exit 7"}).exit_code, 7);
  // One slot held by a sleeping holder: a second asker with --timeout gives up with 124.
  const pid_t holder = ::fork();
  if (holder == 0) {
    ::execl(GPUVET_BINARY, GPUVET_BINARY, "ckpt-slot", "-q", "--max", "1", "--dir", dir.c_str(),
            "--", "sleep", "3", nullptr);
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto r = run({"--max", "1", "--dir", dir, "--timeout", "0.5", "--", "true"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_NE(r.err.find("busy"), std::string::npos) << r.err;
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuvet
