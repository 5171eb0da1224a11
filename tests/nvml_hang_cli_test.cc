// The gpuvet binary when NVML cannot be loaded or hangs: a library path that is not a
// file, a library whose load never returns, and NVML calls that hang after the GPUs were
// counted. Each run has a generous process deadline (far below the 600 s the fakes
// hang for), so a hang fails the test instead of wedging it.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "gpuvet/env.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

std::string sysroot() { return std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-1gpu-vm"; }

CommandResult run_gpuvet(const std::vector<std::string>& env_vars,
                         const std::vector<std::string>& args,
                         const std::string& scenario = "h200-1gpu-idle.json") {
  std::vector<std::string> argv = {
      "env",
      "GPUVET_FAKE_NVML_SCENARIO=" + std::string(GPUVET_TEST_DATA) + "/scenarios/" + scenario};
  argv.insert(argv.end(), env_vars.begin(), env_vars.end());
  argv.push_back(GPUVET_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = make_process_runner()->run(argv, std::chrono::seconds(60));
  EXPECT_TRUE(r.is_ok());
  if (!r.is_ok()) return {};
  EXPECT_FALSE(r.value().timed_out) << "gpuvet did not return within 60 s";
  return r.value();
}

// A scratch directory removed at the end of the test, pass or fail.
class ScratchDir {
 public:
  ScratchDir()
      : path_(fs::temp_directory_path() /
              ("gpuvet-nvml-cli-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(NvmlHangCli, NvmlPathThatIsAFifoIsRefusedAtOnceWithExit3) {
  ScratchDir dir;
  const auto fifo = dir.path() / "libnvidia-ml.so.1";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = run_gpuvet({}, {"facts", "--root", sysroot(), "--no-kernel-log", "--nvml", fifo});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find(fifo.string() + ": a FIFO (named pipe), not a shared library"),
            std::string::npos)
      << r.err;
}

TEST(NvmlHangCli, NvmlPathThatIsADirectoryOrADeviceIsExit3) {
  ScratchDir dir;
  auto d = run_gpuvet({}, {"facts", "--root", sysroot(), "--no-kernel-log", "--nvml", dir.path()});
  EXPECT_EQ(d.exit_code, 3) << d.out << d.err;
  EXPECT_NE(d.err.find("a directory, not a shared library"), std::string::npos) << d.err;
  auto z = run_gpuvet({}, {"facts", "--root", sysroot(), "--no-kernel-log", "--nvml", "/dev/zero"});
  EXPECT_EQ(z.exit_code, 3) << z.out << z.err;
  EXPECT_NE(z.err.find("/dev/zero: a character device, not a shared library"), std::string::npos)
      << z.err;
}

TEST(NvmlHangCli, LibraryWhoseLoadBlocksTimesOutInFacts) {
  const std::string lib = GPUVET_BLOCKING_LOAD_NVML;
  auto r = run_gpuvet(
      {}, {"facts", "--root", sysroot(), "--no-kernel-log", "--init-timeout", "1", "--nvml", lib});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("NVML did not answer: loading " + lib + " did not return within 1.0 s"),
            std::string::npos)
      << r.out << r.err;
}

// While a load is stuck in a constructor the dynamic loader's lock stays taken, so any
// other dlopen waits too: hwloc's plugin loading must not outlast the deadline either.
// (The default host-pressure sampling starts first, so in practice the NVML load holds the
// loader lock by the time hwloc looks for plugins.)
TEST(NvmlHangCli, LibraryWhoseLoadBlocksDoesNotStallHwlocPluginLoading) {
  ScratchDir plugins;
  fs::copy_file(GPUVET_FAKE_NVML, plugins.path() / "hwloc_gpuvet_test.so");
  const std::string lib = GPUVET_BLOCKING_LOAD_NVML;
  auto r = run_gpuvet({"HWLOC_PLUGINS_PATH=" + plugins.path().string()},
                      {"facts", "--no-kernel-log", "--init-timeout", "1", "--nvml", lib});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("NVML did not answer: loading " + lib), std::string::npos) << r.out;
}

TEST(NvmlHangCli, LibraryWhoseLoadBlocksTimesOutInDiagnoseThroughTheEnvironment) {
  const std::string lib = GPUVET_BLOCKING_LOAD_NVML;
  auto r = run_gpuvet({"GPUVET_NVML_LIBRARY=" + lib},
                      {"diagnose", "--json", "--root", sysroot(), "--no-kernel-log",
                       "--sample-window", "0", "--init-timeout", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("gpu-missing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVML did not answer: loading " + lib + " did not return within 1.0 s"),
            std::string::npos)
      << r.out << r.err;
}

TEST(NvmlHangCli, DriverVersionHangIsNamedAndEveryGpuIsStillReported) {
  auto r = run_gpuvet({},
                      {"facts", "--json", "--root", sysroot(), "--no-kernel-log", "--gpu-timeout",
                       "1", "--nvml", GPUVET_FAKE_NVML},
                      "fault-driver-version-hang.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;  // NVML hung: a fact is missing
  EXPECT_NE(r.out.find("nvmlSystemGetDriverVersion did not return within 1.0 s"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("nvmlDeviceGetCount did not return"), std::string::npos) << r.out;
  const auto facts = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(facts.is_object()) << r.out;
  EXPECT_EQ(facts["gpu_facts_unavailable"], false);
  ASSERT_EQ(facts["gpus"].size(), 8u);
  for (const auto& g : facts["gpus"]) {
    EXPECT_TRUE(g["unresponsive"].is_null()) << g["unresponsive"];
    EXPECT_EQ(g["name"], "NVIDIA H100 80GB HBM3");
  }
}

TEST(NvmlHangCli, PairQueryHangIsExit2InFactsAndCriticalInDiagnose) {
  auto f = run_gpuvet({},
                      {"facts", "--root", sysroot(), "--no-kernel-log", "--gpu-timeout", "1",
                       "--nvml", GPUVET_FAKE_NVML},
                      "fault-pair-hang.json");
  EXPECT_EQ(f.exit_code, 2) << f.out << f.err;
  EXPECT_NE(f.out.find("nvmlDeviceGetTopologyCommonAncestor with GPU1 did not return"),
            std::string::npos)
      << f.out;
  auto d = run_gpuvet({},
                      {"diagnose", "--root", sysroot(), "--no-kernel-log", "--sample-window", "0",
                       "--gpu-timeout", "1", "--nvml", GPUVET_FAKE_NVML},
                      "fault-pair-hang.json");
  EXPECT_EQ(d.exit_code, 2) << d.out << d.err;
  EXPECT_NE(d.out.find("gpu-unresponsive"), std::string::npos) << d.out;
}

TEST(NvmlHangCli, ProcessNameHangKeepsTheNvlinksReadBeforeIt) {
  auto r = run_gpuvet({},
                      {"facts", "--json", "--root", sysroot(), "--no-kernel-log", "--gpu-timeout",
                       "1", "--nvml", GPUVET_FAKE_NVML},
                      "fault-process-name-hang.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto facts = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(facts.is_object()) << r.out;
  ASSERT_EQ(facts["gpus"].size(), 8u);
  const auto& g0 = facts["gpus"][0];
  EXPECT_NE(g0["unresponsive"].get<std::string>().find("nvmlSystemGetProcessName"),
            std::string::npos);
  EXPECT_EQ(g0["nvlinks"].size(), 18u);
  ASSERT_EQ(facts["processes"].size(), 1u);
  EXPECT_EQ(facts["processes"][0]["host_pid"], 1);
}

}  // namespace
}  // namespace gpuvet
