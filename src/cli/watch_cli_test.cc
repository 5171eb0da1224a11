// `gpuvet watch` through its binary on the fake NVML: exit codes, the JSON lines, the recording
// that `diagnose --from` reads back, --prom rewritten at every interval, SIGTERM/SIGINT ending
// a watch with its verdict, and the progress line on a terminal only. Each test names the
// plausible bug it is there to catch.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
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

struct Node {
  std::string scenario = "h200-1gpu-idle.json";
  std::string sysroot = "sysroot-1gpu-vm";
};
const Node kOneGpu{};
const Node kFourGpus{"sysroot-2numa-4gpu.json", "sysroot-2numa-4gpu"};

std::string scenario_path(const std::string& s) {
  return s.front() == '/' ? s : std::string(GPUVET_TEST_DATA) + "/scenarios/" + s;
}

// `gpuvet watch` on `node` (the fake NVML, its sysfs tree, no kernel log) with `args` after.
std::vector<std::string> watch_argv(const Node& node, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {GPUVET_BINARY,
                                   "watch",
                                   "--nvml",
                                   GPUVET_FAKE_NVML,
                                   "--root",
                                   std::string(GPUVET_TEST_DATA) + "/fixtures/" + node.sysroot,
                                   "--no-kernel-log",
                                   "--sample-window",
                                   "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

CommandResult run(const Node& node, const std::vector<std::string>& argv,
                  std::chrono::seconds timeout = std::chrono::seconds(30)) {
  std::vector<std::string> full = {"env",
                                   "GPUVET_FAKE_NVML_SCENARIO=" + scenario_path(node.scenario)};
  full.insert(full.end(), argv.begin(), argv.end());
  auto r = make_process_runner()->run(full, timeout);
  EXPECT_TRUE(r.is_ok());
  return r.is_ok() ? r.value() : CommandResult{};
}

CommandResult watch(const Node& node, const std::vector<std::string>& args) {
  return run(node, watch_argv(node, args));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

int count(const std::string& s, const std::string& needle) {
  int n = 0;
  for (auto at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

// A watch running in the background, its stdout and stderr going to files.
class Background {
 public:
  Background(const Node& node, const std::vector<std::string>& args, const std::string& dir)
      : out_(dir + "/out.txt"), err_(dir + "/err.txt") {
    const std::vector<std::string> argv = watch_argv(node, args);
    const std::string scenario = scenario_path(node.scenario);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int in = ::open("/dev/null", O_RDONLY);
      const int out = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0) ::_exit(126);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(err, 2);
      ::setenv("GPUVET_FAKE_NVML_SCENARIO", scenario.c_str(), 1);
      std::vector<char*> cargv;
      for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
      cargv.push_back(nullptr);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
  }
  ~Background() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  std::string out() const { return testing::read_text(out_).value_or(""); }
  std::string err() const { return testing::read_text(err_).value_or(""); }

  // Waits (at most `limit`) until stdout holds `n` lines that contain `needle`.
  bool wait_for_lines(const std::string& needle, int n, std::chrono::seconds limit) const {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      if (count(out(), needle) >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  // The exit status (waitpid's), or none when it did not end within `limit` (then it is
  // killed).
  std::optional<int> wait(std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    while (!finished() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return status_;
  }
  // Whether it has ended (without waiting).
  bool finished() {
    int status = 0;
    if (!status_ && ::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return status_.has_value();
  }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// ---------------------------------------------------------------- exit codes

// Catches: watch silently following the live node when asked to replay a file (exit 0 on the
// wrong input).
TEST(WatchCli, FromIsRefusedWithTheCommandThatReadsIt) {
  testing::TempDir dir("gpuvet-watch");
  const std::string saved = dir.write("saved.json", "{}");
  auto r = watch(kOneGpu, {"--from", saved, "--duration", "1"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("gpuvet diagnose --from"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// Catches: an --interval of 0 or less accepted (a busy loop over NVML), text or NaN taken for
// a number, a negative --duration taken for "forever". --duration 0 is documented as "until
// stopped" and so is not among the bad values.
TEST(WatchCli, BadIntervalOrDurationIsExit3NamingTheOption) {
  for (const char* v : {"0", "-1", "abc", "nan", "inf", "0.01"}) {
    auto r = watch(kOneGpu, {"--interval", v, "--duration", "1"});
    EXPECT_EQ(r.exit_code, 3) << "--interval " << v << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("--interval"), std::string::npos) << v << ": " << r.err;
    EXPECT_EQ(r.out, "") << v;  // refused before anything was watched
  }
  for (const char* v : {"-1", "abc", "nan", "-inf", "1e12"}) {
    auto r = watch(kOneGpu, {"--duration", v, "--interval", "0.2"});
    EXPECT_EQ(r.exit_code, 3) << "--duration " << v << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("--duration"), std::string::npos) << v << ": " << r.err;
    EXPECT_EQ(r.out, "") << v;
  }
  // What the message says: the range, or that a number was expected.
  auto zero = watch(kOneGpu, {"--interval", "0", "--duration", "1"});
  EXPECT_NE(zero.err.find("not in the range"), std::string::npos) << zero.err;
  auto text = watch(kOneGpu, {"--interval", "abc", "--duration", "1"});
  EXPECT_TRUE(text.err.find("number") != std::string::npos ||
              text.err.find("abc") != std::string::npos)
      << text.err;
}

// Catches: a --gpus index past the node's last GPU watching nothing and exiting 0 with an
// empty verdict.
TEST(WatchCli, GpusOutOfRangeIsExit3) {
  auto past = watch(kOneGpu, {"--gpus", "1", "--duration", "1", "--interval", "0.2"});
  EXPECT_EQ(past.exit_code, 3) << past.out << past.err;
  EXPECT_NE(past.err.find("--gpus 1: this node has GPU 0 to 0"), std::string::npos) << past.err;
  auto some = watch(kFourGpus, {"--gpus", "0,7", "--duration", "1", "--interval", "0.2"});
  EXPECT_EQ(some.exit_code, 3) << some.out << some.err;
  EXPECT_NE(some.err.find("--gpus 7: this node has GPU 0 to 3"), std::string::npos) << some.err;
  EXPECT_EQ(some.out.find("Verdict"), std::string::npos) << some.out;
  auto negative = watch(kOneGpu, {"--gpus", "-1", "--duration", "1"});
  EXPECT_EQ(negative.exit_code, 3) << negative.err;
  EXPECT_NE(negative.err.find("--gpus"), std::string::npos) << negative.err;
  // The healthy counterpart: GPUs that exist are watched.
  auto ok = watch(kFourGpus, {"--gpus", "1,3", "--duration", "0.5", "--interval", "0.2"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("GPU1 "), std::string::npos) << ok.out;
  EXPECT_EQ(ok.out.find("GPU0 "), std::string::npos) << ok.out;
}

// Catches: a node without a driver, or a driver without GPUs, "watched" for nothing with exit
// 0 (nvtop's "No GPU to monitor" and exit 0).
TEST(WatchCli, NoGpuIsExit3) {
  auto no_driver = run(Node{"fault-driver-not-loaded.json", "sysroot-1gpu-vm"},
                       watch_argv(kOneGpu, {"--duration", "1"}));
  EXPECT_EQ(no_driver.exit_code, 3) << no_driver.out << no_driver.err;
  EXPECT_NE(no_driver.err.find("gpuvet: no GPU to watch"), std::string::npos) << no_driver.err;
  testing::TempDir dir("gpuvet-watch");
  const std::string empty = dir.write("no-gpus.json", R"({"gpus": []})");
  auto none = run(Node{empty, "sysroot-1gpu-vm"}, watch_argv(kOneGpu, {"--duration", "1"}));
  EXPECT_EQ(none.exit_code, 3) << none.out << none.err;
  EXPECT_NE(none.err.find("no GPU to watch"), std::string::npos) << none.err;
  EXPECT_EQ(none.out.find("Verdict"), std::string::npos) << none.out;
}

// ---------------------------------------------------------------- --json

// Catches: intervals merged or dropped (fewer lines than intervals, or samples of one interval
// spread over two lines), a GPU outside --gpus in the lines, the text header mixed into the
// JSON, and a verdict whose counts do not match the lines.
TEST(WatchCli, JsonIsOneLinePerIntervalThenTheVerdict) {
  auto r = watch(kFourGpus, {"--json", "--gpus", "0,2", "--interval", "0.2", "--duration", "1.1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 2u) << r.out;
  std::vector<json> docs;
  for (const auto& line : lines) {
    auto doc = json::parse(line, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << "not JSON: " << line;
    ASSERT_TRUE(doc.is_object()) << line;
    EXPECT_EQ(doc.value("schema", ""), "gpuvet.watch/1") << line;
    docs.push_back(std::move(doc));
  }
  const json verdict = docs.back();
  docs.pop_back();
  // 1.1 s at 0.2 s: samples at 0, 0.2, … 1.0 — six; a slow machine may lose one or two.
  EXPECT_GE(docs.size(), 4u) << r.out;
  EXPECT_LE(docs.size(), 7u) << r.out;
  double last_t = -1;
  for (const auto& d : docs) {
    EXPECT_EQ(d.value("type", ""), "interval") << d;
    ASSERT_TRUE(d.contains("t_s") && d["t_s"].is_number()) << d;
    EXPECT_GT(d["t_s"].get<double>(), last_t) << d;
    last_t = d["t_s"].get<double>();
    ASSERT_TRUE(d.contains("host")) << d;
    ASSERT_TRUE(d["gpus"].is_array()) << d;
    std::vector<int> seen;
    for (const auto& g : d["gpus"]) {
      seen.push_back(g.at("gpu").get<int>());
      EXPECT_EQ(g.at("t_s").get<double>(), d["t_s"].get<double>()) << g;
      for (const char* key : {"sm_mhz", "mem_mhz", "gpu_c", "margin_c", "power_w", "power_limit_w",
                              "util_pct", "clock_event_mask", "clock_events", "pcie_replays",
                              "ecc_corrected", "ecc_uncorrected", "nvlinks_up", "clock_event_ns"})
        EXPECT_TRUE(g.contains(key)) << key << " missing in " << g;
      EXPECT_TRUE(g["clock_events"].is_array()) << g;
    }
    EXPECT_EQ(seen, (std::vector<int>{0, 2})) << d;
  }
  EXPECT_EQ(verdict.value("type", ""), "verdict") << verdict;
  EXPECT_EQ(verdict.at("samples").get<std::size_t>(), 2 * docs.size()) << verdict;
  EXPECT_TRUE(verdict.at("findings").is_array()) << verdict;
  EXPECT_EQ(verdict.at("exit_code").get<int>(), r.exit_code) << verdict;
  EXPECT_GE(verdict.at("watched_s").get<double>(), 1.0) << verdict;
  EXPECT_TRUE(verdict.at("notes").is_array()) << verdict;
}

// E13: one GPU hangs inside NVML: it is named (gpu-unresponsive, critical: exit 2) and the GPU
// that answers is still watched, interval after interval.
TEST(WatchCli, AGpuThatHangsIsNamedAndTheOthersAreStillWatched) {
  const Node hang{"fault-clock-hang.json", "sysroot-1gpu-vm"};
  auto r = watch(hang, {"--json", "--interval", "0.5", "--duration", "3", "--gpu-timeout", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  int intervals = 0;
  for (const auto& line : lines) {
    const auto doc = json::parse(line, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << line;
    if (doc.value("type", "") != "interval") continue;
    ++intervals;
    for (const auto& g : doc["gpus"]) EXPECT_EQ(g.at("gpu").get<int>(), 0) << line;
  }
  EXPECT_GE(intervals, 2) << r.out;
  const auto verdict = json::parse(lines.back());
  EXPECT_EQ(verdict.at("exit_code").get<int>(), 2) << verdict;
  bool named = false;
  for (const auto& f : verdict.at("findings"))
    named = named || (f.value("id", "") == "gpu-unresponsive" &&
                      f.at("subjects").dump().find("GPU1") != std::string::npos);
  EXPECT_TRUE(named) << verdict;
}

// E14: an output that cannot be written stops an endless watch at once with exit 3.
TEST(WatchCli, AnOutputThatCannotBeWrittenStopsTheWatchAtOnce) {
  const auto t0 = Clock::now();
  std::vector<std::string> argv = {"sh", "-c", ""};
  std::string cmd = "exec env GPUVET_FAKE_NVML_SCENARIO=" + scenario_path(kOneGpu.scenario);
  for (const auto& a : watch_argv(kOneGpu, {"--interval", "0.2", "--duration", "0"}))
    cmd += " '" + a + "'";
  argv[2] = cmd + " > /dev/full";
  auto r = make_process_runner()->run(argv, std::chrono::seconds(20));
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value().exit_code, 3) << r.value().err;
  EXPECT_NE(r.value().err.find("cannot write the output"), std::string::npos) << r.value().err;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(15)) << "stopped by the timeout, not at once";
}

// ---------------------------------------------------------------- --record

// Catches: a recording without the series (or without the facts of the collection), and one
// that diagnose --from cannot read back.
TEST(WatchCli, RecordIsReadBackByDiagnoseWithItsSamples) {
  testing::TempDir dir("gpuvet-watch");
  const std::string file = dir.file("watch.json");
  auto r = watch(kFourGpus, {"--json", "--interval", "0.2", "--duration", "0.7", "--record", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto recorded = json::parse(testing::read_file(file), nullptr, false);
  ASSERT_FALSE(recorded.is_discarded());
  EXPECT_EQ(recorded.value("schema", ""), "gpuvet.report/1");
  EXPECT_EQ(recorded["tool"].value("command", ""), "watch");
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  const std::size_t intervals = lines.size() - 1;
  ASSERT_EQ(recorded["samples"].size(), 4 * intervals) << recorded["samples"];
  EXPECT_EQ(recorded["gpus"].size(), 4u);
  for (const auto& f : fs::directory_iterator(dir.path()))
    EXPECT_EQ(f.path().filename(), "watch.json") << "left behind: " << f.path();

  auto back = run(kOneGpu, {GPUVET_BINARY, "diagnose", "--json", "--from", file});
  ASSERT_LE(back.exit_code, 2) << back.err;
  const auto judged = json::parse(back.out, nullptr, false);
  ASSERT_FALSE(judged.is_discarded()) << back.out;
  ASSERT_EQ(judged["samples"].size(), recorded["samples"].size());
  for (std::size_t i = 0; i < judged["samples"].size(); ++i) {
    const auto& a = judged["samples"][i];
    const auto& b = recorded["samples"][i];
    for (const char* key : {"gpu", "t_s", "sm_mhz", "gpu_c", "power_w", "margin_c", "mem_mhz",
                            "pcie_replays", "clock_event_mask"})
      EXPECT_EQ(a[key], b[key]) << key << " of sample " << i;
  }
  // The facts of the collection at the start came back with it.
  ASSERT_EQ(judged["gpus"].size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(judged["gpus"][i]["uuid"], recorded["gpus"][i]["uuid"]);
    EXPECT_EQ(judged["gpus"][i]["name"], "NVIDIA L40S");
  }
  EXPECT_EQ(judged["host"]["hostname"], recorded["host"]["hostname"]);
  // And read back as what it is, not as an unrecognised file.
  EXPECT_EQ(judged["imported"][0].value("format", ""), "gpuvet-json") << judged["imported"];
}

// Catches: --record checked only once the watch is over (hours of samples lost), and a check
// that looks at the directory's existence or its mode bits alone (root passes those in /proc).
TEST(WatchCli, RecordIntoAnUnwritablePlaceIsExit3BeforeSampling) {
  testing::TempDir dir("gpuvet-watch");
  const std::string a_file = dir.write("plain.txt", "x");
  for (const std::string& target :
       {std::string("/proc/gpuvet-watch-record.json"), a_file + "/watch.json",
        dir.file("missing/watch.json"), dir.path()}) {
    const auto start = Clock::now();
    auto r = watch(kOneGpu, {"--record", target, "--duration", "20", "--interval", "0.2"});
    EXPECT_EQ(r.exit_code, 3) << target << "\n" << r.out << r.err;
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(10)) << target;
    EXPECT_NE(r.err.find("gpuvet: --record " + target + ": "), std::string::npos) << target << "\n"
                                                                                  << r.err;
    EXPECT_EQ(r.out, "") << target;  // not even the header: nothing was watched
  }
  EXPECT_FALSE(fs::exists("/proc/gpuvet-watch-record.json"));
}

// ---------------------------------------------------------------- signals

// Catches: the default action of SIGTERM/SIGINT (killed, no verdict, no recording), and a
// loop that does not look at the stop flag (the watch never ends: the bounded wait fails).
TEST(WatchCli, SigtermAndSigintEndItWithTheVerdict) {
  for (const int sig : {SIGTERM, SIGINT}) {
    for (const bool as_json : {false, true}) {
      testing::TempDir dir("gpuvet-watch");
      const std::string file = dir.file("rec.json");
      std::vector<std::string> args = {"--interval", "0.2", "--record", file};
      if (as_json) args.push_back("--json");
      Background w(kOneGpu, args, dir.path());
      ASSERT_GT(w.pid(), 0);
      const std::string mark = as_json ? "\"type\":\"interval\"" : "s  GPU0 ";
      ASSERT_TRUE(w.wait_for_lines(mark, 2, std::chrono::seconds(20)))
          << "no interval printed within 20 s\n"
          << w.out() << w.err();
      ASSERT_EQ(::kill(w.pid(), sig), 0);
      const auto status = w.wait(std::chrono::seconds(15));
      const std::string what =
          std::string(sig == SIGTERM ? "SIGTERM" : "SIGINT") + (as_json ? " --json" : "");
      ASSERT_TRUE(status.has_value()) << what << ": still running 15 s after the signal";
      ASSERT_TRUE(WIFEXITED(*status)) << what << ": died of signal " << WTERMSIG(*status);
      // The documented status: the verdict's (0 on this idle node), not 128 + signal.
      EXPECT_EQ(WEXITSTATUS(*status), 0) << what << "\n" << w.out() << w.err();
      const std::string out = w.out();
      if (as_json) {
        const auto lines = lines_of(out);
        ASSERT_FALSE(lines.empty());
        const auto last = json::parse(lines.back(), nullptr, false);
        ASSERT_FALSE(last.is_discarded()) << what << ": " << lines.back();
        EXPECT_EQ(last.value("type", ""), "verdict") << what;
        EXPECT_EQ(last.value("exit_code", -1), 0) << what;
      } else {
        EXPECT_NE(out.find("Verdict over"), std::string::npos) << what << "\n" << out;
      }
      EXPECT_TRUE(fs::exists(file)) << what << ": no recording after the signal";
    }
  }
}

// ---------------------------------------------------------------- --prom

std::string promtool() { return fs::exists("/usr/bin/promtool") ? "/usr/bin/promtool" : ""; }

// Catches: the textfile written once at the end (or once at the start) instead of at every
// interval, a temporary file left beside it, GPUs outside --gpus exported, and dcgm-exporter's
// labels lost on the way.
TEST(WatchCli, PromIsRewrittenAtEveryInterval) {
  testing::TempDir dir("gpuvet-watch");
  const std::string prom = dir.file("gpuvet.prom");
  Background w(kFourGpus,
               {"--interval", "0.25", "--duration", "3", "--gpus", "0,2", "--prom", prom},
               dir.path());
  // Every rename puts another file at the name: its inode and modification time (an inode
  // number alone may be reused by the next write).
  std::set<std::pair<ino_t, long long>> versions;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!w.finished() && Clock::now() < deadline) {
    struct stat st {};
    if (::stat(prom.c_str(), &st) == 0)
      versions.emplace(st.st_ino, st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto status = w.wait(std::chrono::seconds(1));
  ASSERT_TRUE(status.has_value()) << "a 3 s watch still running after 20 s";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << w.err();
  // 12 intervals and the last write with the verdict; polling every 20 ms sees most.
  EXPECT_GE(versions.size(), 5u) << w.out() << w.err();
  const std::string text = testing::read_file(prom);
  EXPECT_NE(text.find("gpuvet_gpu_sm_clock_hertz{gpu=\"0\",UUID=\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpu=\"2\""), std::string::npos) << text;
  EXPECT_EQ(text.find("gpu=\"1\""), std::string::npos) << text;
  EXPECT_EQ(text.find("gpu=\"3\""), std::string::npos) << text;
  for (const char* label : {"pci_bus_id=\"", "device=\"nvidia0\"", "modelName=\"NVIDIA L40S\"",
                            "hostname=\"gpu-node-07\"", "DCGM_FI_DRIVER_VERSION=\""})
    EXPECT_NE(text.find(label), std::string::npos) << label << "\n" << text;
  EXPECT_NE(text.find("gpuvet_verdict{"), std::string::npos) << text;
  EXPECT_NE(text.find("gpuvet_last_collect_timestamp_seconds"), std::string::npos) << text;
  for (const auto& f : fs::directory_iterator(dir.path())) {
    const std::string name = f.path().filename().string();
    EXPECT_TRUE(name == "gpuvet.prom" || name == "out.txt" || name == "err.txt")
        << "left behind: " << name;
  }
}

// Catches: an exposition that Prometheus's own checker rejects (a family declared twice, a
// sample without its TYPE, a timestamp) in what watch writes.
TEST(WatchCli, PromFilePassesPromtool) {
  if (promtool().empty()) {
    // Under CI=true scripts/setup installed it: a skip there would hide a missing dependency.
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "promtool not installed, and CI=true";
    GTEST_SKIP() << "promtool not installed (Debian's prometheus package)";
  }
  testing::TempDir dir("gpuvet-watch");
  const std::string prom = dir.file("gpuvet.prom");
  auto r = watch(kFourGpus, {"--interval", "0.2", "--duration", "0.5", "--prom", prom});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Its only complaint may be the camelCase of dcgm-exporter's own label modelName (kept so
  // joins work), as in tests/prometheus; with that label renamed it must pass clean.
  auto check = make_process_runner()->run(
      {"sh", "-c",
       "'" + promtool() + "' check metrics < '" + prom +
           "' 2>&1 | grep -v \"label names should be written in 'snake_case' not 'camelCase'\"; "
           "sed 's/modelName=/model_name=/' '" +
           prom + "' | '" + promtool() + "' check metrics"},
      std::chrono::seconds(60));
  ASSERT_TRUE(check.is_ok());
  EXPECT_EQ(check.value().exit_code, 0) << check.value().out << check.value().err;
  EXPECT_EQ(check.value().out, "") << check.value().out;
  EXPECT_EQ(check.value().err, "") << check.value().err;
  // The check is not vacuous: a broken line is caught by the same command.
  std::ofstream(prom, std::ios::app) << "gpuvet_gpu_temperature_celsius{gpu=\"0\"} 1 2 3\n";
  auto broken = make_process_runner()->run(
      {"sh", "-c", "'" + promtool() + "' check metrics < '" + prom + "'"},
      std::chrono::seconds(60));
  ASSERT_TRUE(broken.is_ok());
  EXPECT_NE(broken.value().exit_code, 0);
}

// Catches: --prom checked only at the first write (after the collection).
TEST(WatchCli, PromIntoAnUnwritablePlaceIsExit3BeforeSampling) {
  testing::TempDir dir("gpuvet-watch");
  for (const std::string& target :
       {std::string("/proc/gpuvet-watch.prom"), dir.file("missing/gpuvet.prom")}) {
    auto r = watch(kOneGpu, {"--prom", target, "--duration", "20", "--interval", "0.2"});
    EXPECT_EQ(r.exit_code, 3) << target << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("gpuvet: --prom " + target + ": "), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << target;
  }
}

// ---------------------------------------------------------------- progress

std::string shell_words(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) cmd += "'" + a + "' ";
  return cmd;
}

// `script` runs gpuvet on a pseudo-terminal (stdout and stderr both) and copies what it wrote.
CommandResult on_a_terminal(const Node& node, const std::vector<std::string>& args,
                            const std::string& prefix = "") {
  return run(node, {"script", "-qec", prefix + shell_words(watch_argv(node, args)), "/dev/null"});
}

// Catches: progress drawn on a pipe (a carriage return in a log), progress missing on a
// terminal, a count that is not the number of intervals, and progress shown for an unbounded
// watch (no N to count to).
TEST(WatchCli, ProgressOnATerminalOnlyAndOnlyForADuration) {
  const std::vector<std::string> bounded = {"--interval", "0.3", "--duration", "1.2"};
  auto tty = on_a_terminal(kOneGpu, bounded);
  if (tty.out.find("gpuvet watch") == std::string::npos)
    GTEST_SKIP() << "no pseudo-terminal here (script printed: " << tty.out << tty.err << ")";
  EXPECT_EQ(tty.exit_code, 0) << tty.out;
  EXPECT_NE(tty.out.find("\r[1/4] watching for 1.2 s … "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("\r[4/4] watching for 1.2 s … "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("Verdict over"), std::string::npos) << tty.out;
  // Taken off the line before the verdict: nothing of it after the verdict starts.
  EXPECT_EQ(tty.out.substr(tty.out.find("Verdict over")).find("watching for"), std::string::npos);

  auto piped = watch(kOneGpu, bounded);
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err, "") << piped.err;
  EXPECT_EQ(piped.out.find('\r'), std::string::npos) << piped.out;
  EXPECT_EQ(piped.out.find("watching for"), std::string::npos) << piped.out;

  // --json on a terminal: the lines stay JSON, the progress is on stderr beside them.
  auto json_tty = on_a_terminal(kOneGpu, {"--interval", "0.3", "--duration", "0.7", "--json"});
  EXPECT_NE(json_tty.out.find("\r[1/3] watching for 0.7 s … "), std::string::npos) << json_tty.out;

  // A watch without --duration (ended by timeout(1)'s SIGTERM) has no N to count to.
  auto unbounded = on_a_terminal(kOneGpu, {"--interval", "0.3"}, "timeout -s TERM 1.2 ");
  EXPECT_NE(unbounded.out.find("Verdict over"), std::string::npos) << unbounded.out;
  EXPECT_EQ(unbounded.out.find("\r["), std::string::npos) << unbounded.out;
}

// Catches: the reason no benchmark can run printed once per benchmark (13 times) instead of
// once for the run.
TEST(BenchCli, AFailureEveryBenchmarkSharesIsPrintedOnce) {
  auto r = run(kOneGpu, {GPUVET_BINARY, "bench", "--nvml", GPUVET_FAKE_NVML});
  if (r.out.find("built without CUDA") == std::string::npos)
    GTEST_SKIP() << "this build has CUDA: the benchmarks may run here";
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(count(r.out, "skipped: built without CUDA"), 1) << r.out;
  EXPECT_NE(r.out.find("benchmarks skipped: built without CUDA"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;  // a pipe: no progress line
}

}  // namespace
}  // namespace gpuvet
