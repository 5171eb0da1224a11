// The job's own time end to end, through the gpuvet binary: the real traces recorded on the lent
// H100 by scripts/gpu/job/record_traces.py (tests/fixtures/job/device, whose provenance says
// what each program does), a generated 8-rank job with one slow rank, and hostile traces. The
// expectations come from what each program was written to do, not from gpuvet's output: the
// compute-bound loop raises nothing above info; the starved, launch-bound and syncing loops
// raise their finding; in the 2-rank gloo job rank 1 sleeps before its all-reduce, so it is the
// straggler and rank 0 (which waits) is not.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gpuvet/collect.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/env.h"
#include "job_trace_gen.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kDevice = std::string(GPUVET_TEST_DATA) + "/fixtures/job/device/";

struct Run {
  int code = -1;
  json doc;
  std::string err;
};

Run gpuvet(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {GPUVET_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = make_process_runner()->run(argv, std::chrono::seconds(120));
  EXPECT_TRUE(r.is_ok());
  Run out;
  if (!r.is_ok()) return out;
  out.code = r.value().exit_code;
  out.err = r.value().err;
  out.doc = json::parse(r.value().out, nullptr, false);
  return out;
}

// Finding ids at warning or worse, and every finding by id.
std::set<std::string> warnings(const json& doc) {
  std::set<std::string> ids;
  for (const auto& f : doc["findings"])
    if (f["severity"] != "info") ids.insert(f["id"].get<std::string>());
  return ids;
}
std::vector<json> with_id(const json& doc, const std::string& id) {
  std::vector<json> v;
  for (const auto& f : doc["findings"])
    if (f["id"] == id) v.push_back(f);
  return v;
}

class Scratch {
 public:
  Scratch()
      : path_(fs::temp_directory_path() /
              ("gpuvet-job-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return (path_ / name).string();
  }
  std::string dir() const { return path_.string(); }

 private:
  fs::path path_;
};

void require_device_traces() {
  if (!fs::exists(kDevice + "compute_bound.json.gz")) {
    if (std::getenv("CI")) FAIL() << kDevice << " is missing (committed fixtures)";
    GTEST_SKIP() << kDevice << " is missing";
  }
}

TEST(JobCli, RecordedTracesRaiseTheFindingTheirProgramWasWrittenFor) {
  require_device_traces();
  const std::pair<const char*, const char*> cases[] = {
      {"input_starved", "job-input-starved"},
      {"launch_bound", "job-launch-bound"},
      {"item_sync", "job-host-sync"},
  };
  for (const auto& [name, id] : cases) {
    auto r = gpuvet({"diagnose", "--from", kDevice + name + ".json.gz", "--json"});
    const auto w = warnings(r.doc);
    EXPECT_TRUE(w.count(id)) << name << ": " << r.doc["findings"].dump(1);
    EXPECT_EQ(r.code, 1) << name << " " << r.err;
  }
  auto healthy = gpuvet({"diagnose", "--from", kDevice + "compute_bound.json.gz", "--json"});
  EXPECT_TRUE(warnings(healthy.doc).empty()) << healthy.doc["findings"].dump(1);
  EXPECT_EQ(with_id(healthy.doc, "job-breakdown").size(), 1u);
}

TEST(JobCli, CulpritNamesTheSlowGlooRankNotTheOneThatWaits) {
  require_device_traces();
  Scratch s;
  for (const char* r : {"ddp_gloo_rank0.json.gz", "ddp_gloo_rank1.json.gz"})
    fs::copy_file(kDevice + r, fs::path(s.dir()) / r);
  auto r = gpuvet({"culprit", s.dir(), "--json"});
  ASSERT_TRUE(r.doc.is_object()) << r.err;
  std::vector<std::string> stragglers;
  for (const auto& f : r.doc["findings"])
    if (f["id"] == "job-straggler-rank") stragglers.push_back(f["subjects"][0]);
  EXPECT_EQ(stragglers, std::vector<std::string>{"rank1"}) << r.doc["findings"].dump(1);
  EXPECT_EQ(r.code, 1) << r.err;
}

TEST(JobCli, FactsListsTheJobsRanks) {
  require_device_traces();
  std::vector<std::string> argv = {GPUVET_BINARY, "facts", "--from",
                                   kDevice + "ddp_gloo_rank1.json.gz"};
  auto r = make_process_runner()->run(argv, std::chrono::seconds(60));
  ASSERT_TRUE(r.is_ok());
  EXPECT_NE(r.value().out.find("\nJob\n  rank 1 of 2 (pytorch-trace, gloo, NVIDIA H100 80GB HBM3, "
                               "CUDA device 0): 5 steps, p50 "),
            std::string::npos)
      << r.value().out;
}

// Eight generated ranks (tests/job_trace_gen.h), rank 5 computing longer before each all-reduce.
TEST(JobCli, EightRanksOneSlow) {
  Scratch s;
  for (int rank = 0; rank < 8; ++rank) {
    std::string t = testing::make_kineto_trace(2 << 20, rank, 8);
    if (rank != 5) {
      // The others wait for rank 5 inside every all-reduce: their NCCL kernels run 400 µs longer.
      for (std::size_t p = t.find("\"dur\": 150.000"); p != std::string::npos;
           p = t.find("\"dur\": 150.000", p + 1))
        t.replace(p, 14, "\"dur\": 550.000");
    }
    s.write(fmt::format("rank{}.pt.trace.json", rank), t);
  }
  auto r = gpuvet({"diagnose", "--from", s.dir(), "--json"});
  auto st = with_id(r.doc, "job-straggler-rank");
  ASSERT_EQ(st.size(), 1u) << r.doc["findings"].dump(1);
  EXPECT_EQ(st[0]["subjects"], json::array({"rank5"}));
}

TEST(JobCli, HostileTracesGetAClearAnswer) {
  Scratch s;
  const std::string whole = testing::make_kineto_trace(1 << 20);
  // Cut in the middle: the steps before the cut are read, the input is incomplete (exit 3).
  auto cut = gpuvet(
      {"diagnose", "--from", s.write("cut.json", whole.substr(0, whole.size() / 2)), "--json"});
  EXPECT_EQ(cut.code, 3) << cut.err;
  EXPECT_FALSE(with_id(cut.doc, "job-breakdown").empty());
  // No event at all, and a gzip that is not one: exit 3 with the reason.
  auto empty = gpuvet(
      {"diagnose", "--from", s.write("empty.json", "{\"schemaVersion\": 1, \"traceEvents\": []}")});
  EXPECT_EQ(empty.code, 3);
  auto bad_gz = gpuvet({"diagnose", "--from", s.write("bad.json.gz", "\x1f\x8b garbage")});
  EXPECT_EQ(bad_gz.code, 3);
  EXPECT_NE(bad_gz.err.find("gzip"), std::string::npos) << bad_gz.err;
  // A --step-regex that names no step time is refused before anything is read.
  auto regex =
      gpuvet({"diagnose", "--from", s.write("log.txt", "step 1\n"), "--step-regex", "step (\\d+)"});
  EXPECT_EQ(regex.code, 3);
  EXPECT_NE(regex.err.find("names no step time"), std::string::npos) << regex.err;
}

// Live, on this machine's real /proc: a process that pegs a CPU in one thread, which the fake
// NVML reports on an idle GPU. The sampler's figure is checked against the child's own CPU time
// read here around the collection (a loaded machine gives the child less than a core: then the
// figure must still agree, and the finding is asked for only when the child did peg a CPU).
std::uint64_t cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const auto close = line.rfind(')');
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  std::uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return utime + stime;
}

TEST(JobLive, BusyThreadOfAGpuProcessIsNamed) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(30);  // never outlives the test
    volatile unsigned long spin = 0;
    for (;;) spin = spin + 1;
  }
  Scratch s;
  std::ifstream in(std::string(GPUVET_TEST_DATA) + "/scenarios/h200-1gpu-idle.json");
  json scenario = json::parse(in);
  scenario["gpus"][0]["processes"] =
      json::array({{{"pid", child}, {"used_memory", 1073741824}, {"name", "python"}}});
  scenario["gpus"][0]["utilization"] = {{"gpu", 1}, {"memory", 0}};
  const std::string path = s.write("scenario.json", scenario.dump());
  ::setenv("GPUVET_FAKE_NVML_SCENARIO", path.c_str(), 1);
  auto fs = make_rooted_file_system("/");
  auto runner = make_process_runner();
  auto clock = make_system_clock();
  CollectOptions o;
  o.nvml_library = GPUVET_FAKE_NVML;
  o.pressure_window = std::chrono::milliseconds(1000);
  o.kernel_log = false;
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t ticks0 = cpu_ticks(child);
  Facts facts = collect_facts(o, Env{*fs, *runner, *clock}).facts;
  const std::uint64_t ticks1 = cpu_ticks(child);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const double share =
      static_cast<double>(ticks1 - ticks0) / ::sysconf(_SC_CLK_TCK) / seconds * 100;
  ASSERT_EQ(facts.processes.size(), 1u);
  const auto& busy = facts.processes[0].busy_threads;
  if (share < 50) {  // the sampler keeps threads at 50 % or more: a starved child is not one
    EXPECT_TRUE(busy.empty() || busy[0].cpu_pct < 50 + 30) << "child got " << share << " %";
    return;
  }
  ASSERT_FALSE(busy.empty()) << "child got " << share << " % of a CPU, no busy thread found";
  EXPECT_EQ(busy[0].tid, child);
  EXPECT_NEAR(busy[0].cpu_pct, share, 30);
  DiagnoseOptions d;
  d.thresholds.cpu_pegged_pct = 50;
  bool named = false;
  for (const auto& f : diagnose(facts, d).findings)
    named = named || (f.id == "gpu-waits-on-host-thread" &&
                      f.evidence.find(fmt::format("pid {} python on GPU0: thread", child)) !=
                          std::string::npos);
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace gpuvet
