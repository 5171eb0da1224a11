// The gpuvet binary: exit codes and messages a script or a person relies on.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "gpuvet/env.h"

namespace gpuvet {
namespace {

CommandResult gpuvet(std::vector<std::string> args,
                     const std::string& scenario = "h200-1gpu-idle.json",
                     const std::string& sysroot = "sysroot-1gpu-vm") {
  std::vector<std::string> argv = {
      "env",
      "GPUVET_FAKE_NVML_SCENARIO=" + std::string(GPUVET_TEST_DATA) + "/scenarios/" + scenario,
      GPUVET_BINARY};
  for (auto& a : args)
    argv.push_back(a == "ROOT" ? std::string(GPUVET_TEST_DATA) + "/fixtures/" + sysroot : a);
  auto r = make_process_runner()->run(argv, std::chrono::seconds(30));
  EXPECT_TRUE(r.is_ok());
  return r.value();
}

TEST(CliTest, HealthyFactsExitZero) {
  auto r = gpuvet({"facts", "--root", "ROOT", "--nvml", GPUVET_FAKE_NVML, "--no-kernel-log"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("NVIDIA H200"), std::string::npos);
}

TEST(CliTest, JsonIsOneObject) {
  auto r =
      gpuvet({"facts", "--json", "--root", "ROOT", "--nvml", GPUVET_FAKE_NVML, "--no-kernel-log"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"schema\": \"gpuvet.report/1\""), std::string::npos);
}

TEST(CliTest, GarbageNvmlIsExit3WithReason) {
  auto path = std::filesystem::temp_directory_path() / "gpuvet-cli-garbage.so";
  std::ofstream(path) << "this is not a library";
  auto r = gpuvet({"facts", "--root", "ROOT", "--nvml", path.string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("not a shared library"), std::string::npos) << r.err;
}

TEST(CliTest, MissingNvmlGivenByUserIsExit3) {
  auto r = gpuvet({"facts", "--root", "ROOT", "--nvml", "/nonexistent/libnvidia-ml.so.1"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
}

TEST(CliTest, MalformedScenarioIsExit2WithTheParseError) {
  auto r = gpuvet({"facts", "--root", "ROOT", "--nvml", GPUVET_FAKE_NVML, "--no-kernel-log"},
                  "malformed.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("malformed.json"), std::string::npos) << r.out;
}

TEST(CliTest, HungGpuExitsInTimeWithCritical) {
  const auto start = std::chrono::steady_clock::now();
  auto r = gpuvet({"facts", "--root", "ROOT", "--nvml", GPUVET_FAKE_NVML, "--no-kernel-log",
                   "--gpu-timeout", "0.5"},
                  "fault-hang.json");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("GPU1 not responding"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVIDIA A100"), std::string::npos);  // the other GPU is still reported
}

TEST(CliTest, PartialReadIsExit1) {
  auto r = gpuvet({"facts", "--root", "ROOT", "--nvml", GPUVET_FAKE_NVML, "--no-kernel-log", "-v"},
                  "fault-call-errors.json");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("unreadable ecc.mode: NO_PERMISSION"), std::string::npos) << r.out;
}

TEST(CliTest, BadOptionsAreExit3) {
  EXPECT_EQ(gpuvet({"facts", "--gpu-timeout", "banana"}).exit_code, 3);
  EXPECT_EQ(gpuvet({"facts", "--root", "/nonexistent/dir"}).exit_code, 3);
  EXPECT_EQ(gpuvet({"nosuchcommand"}).exit_code, 3);
}

}  // namespace
}  // namespace gpuvet

namespace gpuvet {
namespace {

TEST(CliTest, SavedTreeNeverReadsThisMachinesKernelLog) {
  auto r = gpuvet({"facts", "--json", "--root", "ROOT", "--nvml", GPUVET_FAKE_NVML});
  EXPECT_EQ(r.out.find("\"source\": \"dmesg\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"readable\": false"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet
