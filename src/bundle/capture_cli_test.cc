// `gpuvet capture` as a process: signals end its children, two captures into one directory,
// a file-size limit, a saved tree. Runs build/gpuvet with the fake tools of tests/fakes/node/
// first on PATH and the fake NVML; every process a test starts is killed before it returns.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

namespace gpuvet {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path scratch(const std::string& name) {
  auto d =
      fs::temp_directory_path() / ("gpuvet-capture-cli-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

struct Spawn {
  std::vector<std::string> args;  // after "gpuvet"
  std::vector<std::string> env;   // NAME=value, added to this process's environment
  std::string scenario = "h200-1gpu-idle.json";
  fs::path out, err;                       // stdout and stderr go here
  rlim_t file_size_limit = RLIM_INFINITY;  // RLIMIT_FSIZE for gpuvet, with SIGXFSZ ignored
};

// Starts build/gpuvet; returns its pid.
pid_t start_gpuvet(const Spawn& s) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view v(*e);
    if (v.rfind("PATH=", 0) != 0 && v.rfind("GPUVET_", 0) != 0 && v.rfind("FAKE_NODE_", 0) != 0)
      env.emplace_back(v);
  }
  const char* path = std::getenv("PATH");
  env.push_back("PATH=" + std::string(GPUVET_TEST_DATA) +
                "/fakes/node:" + (path ? path : "/usr/bin:/bin"));
  env.push_back("GPUVET_FAKE_NVML_SCENARIO=" + std::string(GPUVET_TEST_DATA) + "/scenarios/" +
                s.scenario);
  for (const auto& e : s.env) env.push_back(e);
  std::vector<std::string> argv = {GPUVET_BINARY};
  argv.insert(argv.end(), s.args.begin(), s.args.end());
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    const int out = ::open(s.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(s.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) ::dup2(out, 1);
    if (err >= 0) ::dup2(err, 2);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    if (s.file_size_limit != RLIM_INFINITY) {
      ::signal(SIGXFSZ, SIG_IGN);
      rlimit lim{s.file_size_limit, s.file_size_limit};
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits at most `limit` for pid; SIGKILLs it past that. The wait status, or -1 when killed.
int wait_bounded(pid_t pid, milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// Gone, or a zombie waiting for init to reap it.
bool process_ended(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

bool ends_within(pid_t pid, milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (process_ended(pid)) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return process_ended(pid);
}

void signal_during_capture_ends_children(int sig) {
  const auto dir = scratch(sig == SIGINT ? "sigint" : "sigterm");
  const auto pidfile = dir / "hung.pids";
  Spawn s;
  s.args = {"capture", (dir / "bundle").string(), "--nvml", GPUVET_FAKE_NVML, "--timeout", "120"};
  s.env = {"FAKE_NODE_HANG=iostat", "FAKE_NODE_PIDFILE=" + pidfile.string()};
  s.out = dir / "out";
  s.err = dir / "err";
  const pid_t gpuvet = start_gpuvet(s);
  ASSERT_GT(gpuvet, 0);
  // The hung iostat (a shell) and the sleep it started, in the shell's process group.
  pid_t shell = 0, sleeper = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && !fs::exists(pidfile))
    std::this_thread::sleep_for(milliseconds(50));
  std::istringstream(slurp(pidfile)) >> shell >> sleeper;
  const bool started = shell > 0 && sleeper > 0;
  if (started) ::kill(gpuvet, sig);
  const int status = wait_bounded(gpuvet, std::chrono::seconds(20));
  const bool shell_ended = started && ends_within(shell, std::chrono::seconds(10));
  const bool sleeper_ended = started && ends_within(sleeper, std::chrono::seconds(10));
  // Whatever happened, leave nothing running.
  if (shell > 0 && !process_ended(shell)) ::kill(shell, SIGKILL);
  if (sleeper > 0 && !process_ended(sleeper)) ::kill(sleeper, SIGKILL);
  ASSERT_TRUE(started) << "the hanging tool never started: " << slurp(s.err);
  EXPECT_TRUE(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == sig)
      << "status " << status << "; " << slurp(s.err);
  EXPECT_TRUE(shell_ended) << "the command gpuvet ran outlived it";
  EXPECT_TRUE(sleeper_ended) << "the command's own child outlived gpuvet";
  // Interrupted while its commands ran, it left neither a bundle nor a temporary directory.
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.insert(e.path().filename());
  EXPECT_EQ(left, (std::set<std::string>{"err", "hung.pids", "out"}));
  fs::remove_all(dir);
}

TEST(CaptureCliTest, SigtermDuringCaptureEndsItsCommandsAndTheirChildren) {
  signal_during_capture_ends_children(SIGTERM);
}

TEST(CaptureCliTest, SigintDuringCaptureEndsItsCommandsAndTheirChildren) {
  signal_during_capture_ends_children(SIGINT);
}

TEST(CaptureCliTest, OfTwoConcurrentCapturesIntoOneDirectoryExactlyOneSucceeds) {
  const auto dir = scratch("concurrent");
  const auto bundle = dir / "bundle";
  struct Run {
    std::string tag, scenario, gpu;
    Spawn spawn;
    pid_t pid = -1;
    int status = -1;
  };
  Run runs[2] = {{"A", "h200-1gpu-idle.json", "NVIDIA H200", {}},
                 {"B", "8gpu-nvlink-h100.json", "H100", {}}};
  for (auto& r : runs) {
    r.spawn.args = {"capture", bundle.string(), "--nvml", GPUVET_FAKE_NVML};
    // Every tool takes a while, so both runs are past the emptiness check before either ends.
    r.spawn.env = {"FAKE_NODE_TAG=" + r.tag, "FAKE_NODE_DELAY_S=1"};
    r.spawn.scenario = r.scenario;
    r.spawn.out = dir / ("out-" + r.tag);
    r.spawn.err = dir / ("err-" + r.tag);
    r.pid = start_gpuvet(r.spawn);
  }
  for (auto& r : runs) r.status = wait_bounded(r.pid, std::chrono::seconds(90));
  int ok = 0;
  const Run* winner = nullptr;
  for (const auto& r : runs) {
    ASSERT_TRUE(r.status != -1 && WIFEXITED(r.status)) << r.tag << " did not exit in time";
    if (WEXITSTATUS(r.status) == 0) {
      ++ok;
      winner = &r;
    } else {
      EXPECT_EQ(WEXITSTATUS(r.status), 3) << slurp(r.spawn.err);
      EXPECT_NE(slurp(r.spawn.err).find(bundle.string()), std::string::npos) << slurp(r.spawn.err);
    }
  }
  ASSERT_EQ(ok, 1) << slurp(dir / "err-A") << slurp(dir / "err-B");
  // One run's files only: every fake tool's output says which run made it, the facts name its GPU.
  std::set<std::string> tags;
  for (const auto& e : fs::directory_iterator(bundle)) {
    const std::string text = slurp(e.path());
    for (const std::string tag : {"A", "B"})
      if (text.find("fake node run " + tag) != std::string::npos) tags.insert(tag);
  }
  EXPECT_EQ(tags, std::set<std::string>{winner->tag});
  EXPECT_NE(slurp(bundle / "gpuvet-facts.json").find(winner->gpu), std::string::npos);
  auto manifest = nlohmann::json::parse(slurp(bundle / "manifest.json"));
  for (const auto& c : manifest["commands"]) {
    if (!c["file"].is_string()) continue;
    EXPECT_TRUE(fs::exists(bundle / c["file"].get<std::string>())) << c["file"];
  }
  // Nothing but the bundle and the runs' own logs is left beside it.
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".gpuvet-"), std::string::npos) << e.path();
  fs::remove_all(dir);
}

TEST(CaptureCliTest, AFileSizeLimitFailsTheCaptureAndLeavesNoBundle) {
  const auto dir = scratch("fsize");
  Spawn s;
  s.args = {"capture", (dir / "bundle").string(),
            "--nvml",  GPUVET_FAKE_NVML,
            "--root",  std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-2numa-4gpu"};
  s.scenario = "8gpu-nvlink-h100.json";
  s.out = dir / "out";
  s.err = dir / "err";
  s.file_size_limit = 4096;  // the facts JSON of eight GPUs is larger
  const int status = wait_bounded(start_gpuvet(s), std::chrono::seconds(60));
  ASSERT_TRUE(status != -1 && WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  const std::string err = slurp(s.err);
  EXPECT_NE(err.find("gpuvet-facts.json: write failed: File too large"), std::string::npos) << err;
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.insert(e.path().filename());
  EXPECT_EQ(left, (std::set<std::string>{"err", "out"}));
  fs::remove_all(dir);
}

TEST(CaptureCliTest, WithASavedTreeNoCommandOfThisMachineRuns) {
  const auto dir = scratch("root");
  Spawn s;
  s.args = {"capture", (dir / "bundle").string(),
            "--nvml",  GPUVET_FAKE_NVML,
            "--root",  std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-2numa-4gpu"};
  s.env = {"FAKE_NODE_MARKER=" + (dir / "ran").string()};
  s.out = dir / "out";
  s.err = dir / "err";
  const int status = wait_bounded(start_gpuvet(s), std::chrono::seconds(60));
  ASSERT_TRUE(status != -1 && WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << slurp(s.err);
  EXPECT_FALSE(fs::exists(dir / "ran")) << "ran: " << slurp(dir / "ran");
  EXPECT_TRUE(fs::exists(dir / "bundle" / "nvidia-driver-version.txt"));
  EXPECT_FALSE(fs::exists(dir / "bundle" / "nvidia-smi-q.txt"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuvet
