// The gpuvet binary: exit codes and messages a script or a person relies on.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

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

namespace gpuvet {
namespace {

std::string article(const char* task) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/article/" + task;
}

TEST(CliDiagnose, HealthyLiveNodeExitsZero) {
  auto r = gpuvet({"diagnose", "--root", "ROOT", "--nvml", GPUVET_FAKE_NVML, "--no-kernel-log",
                   "--sample-window", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
}

TEST(CliDiagnose, ExitCodesFollowTheWorstFinding) {
  EXPECT_EQ(gpuvet({"diagnose", "--from", article("task-03.txt")}).exit_code, 0);  // info only
  EXPECT_EQ(gpuvet({"diagnose", "--from", article("task-02.txt")}).exit_code, 1);  // x8 link
  EXPECT_EQ(gpuvet({"diagnose", "--from", article("task-07.txt")}).exit_code, 2);  // off the bus
  auto r = gpuvet({"diagnose", "--from", article("task-01.txt"), "--expect-gpus", "4"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("gpu-missing"), std::string::npos) << r.out;
}

TEST(CliDiagnose, JsonCarriesFindingsBottleneckAndVerdict) {
  auto r = gpuvet({"diagnose", "--json", "--from", article("task-05.txt")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  for (const char* key : {"\"findings\"", "\"bottleneck\": \"thermal\"", "\"verdict\": \"warning\"",
                          "\"exit_code\": 1", "\"id\": \"thermal-throttle\""})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
}

TEST(CliDiagnose, BadInputIsExit3WithAMessage) {
  auto missing = gpuvet({"diagnose", "--from", "/nonexistent/capture"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_FALSE(missing.err.empty());
  const auto dir = std::filesystem::temp_directory_path() / "gpuvet-cli-diagnose";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "notes.txt") << "nothing nvidia-smi would print\n";
    std::ofstream(dir / "bad.toml") << "[thresholds]\nbusy_util_pc = 60\n";
  }
  auto junk = gpuvet({"diagnose", "--from", (dir / "notes.txt").string()});
  EXPECT_EQ(junk.exit_code, 3);
  EXPECT_NE(junk.err.find("supported"), std::string::npos) << junk.err;
  auto config = gpuvet(
      {"diagnose", "--from", article("task-02.txt"), "--config", (dir / "bad.toml").string()});
  EXPECT_EQ(config.exit_code, 3);
  EXPECT_NE(config.err.find("busy_util_pc"), std::string::npos) << config.err;
  EXPECT_EQ(gpuvet({"diagnose", "--expect-gpus", "-1"}).exit_code, 3);
  std::filesystem::remove_all(dir);
}

TEST(CliDiagnose, ConfigOverridesAThreshold) {
  // Task 5's GPU0 at 84 °C warns at the default 83 °C; at 90 °C it no longer does.
  const auto dir = std::filesystem::temp_directory_path() / "gpuvet-cli-config";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "hot.toml") << "[thresholds]\nhot_temp_c = 90\n";
  auto r = gpuvet({"diagnose", "--json", "--from", article("task-05.txt"), "--config",
                   (dir / "hot.toml").string()});
  EXPECT_EQ(r.out.find("\"id\": \"thermal-throttle\""), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

TEST(CliDiagnose, APasteOnStandardInput) {
  // `... | gpuvet diagnose --from -`: the runner has no stdin, so go through a shell.
  auto r = make_process_runner()->run(
      {"sh", "-c",
       "cat '" + article("task-02.txt") + "' '" + article("task-07.txt") + "' | '" + GPUVET_BINARY +
           "' diagnose --from -"},
      std::chrono::seconds(30));
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value().exit_code, 2) << r.value().out << r.value().err;
  EXPECT_NE(r.value().out.find("gpu-unresponsive"), std::string::npos);
  EXPECT_NE(r.value().out.find("pcie-link-degraded"), std::string::npos);
  auto junk = make_process_runner()->run(
      {"sh", "-c", std::string("echo hello | '") + GPUVET_BINARY + "' diagnose --from -"},
      std::chrono::seconds(30));
  ASSERT_TRUE(junk.is_ok());
  EXPECT_EQ(junk.value().exit_code, 3);
  auto facts = make_process_runner()->run(
      {"sh", "-c",
       "cat '" + article("task-13.txt") + "' | '" + GPUVET_BINARY + "' facts --from - --json"},
      std::chrono::seconds(30));
  ASSERT_TRUE(facts.is_ok());
  EXPECT_EQ(facts.value().exit_code, 0) << facts.value().err;
  EXPECT_NE(facts.value().out.find("\"used_bytes\": 25050480640"), std::string::npos)
      << facts.value().out.substr(0, 400);
}

TEST(CliDiagnose, FindingsDocIsGeneratedFromTheCatalog) {
  auto r = gpuvet({"findings", "--markdown"});
  EXPECT_EQ(r.exit_code, 0);
  std::ifstream in(std::string(GPUVET_TEST_DATA) + "/../docs/findings.md", std::ios::binary);
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_EQ(r.out, doc.str()) << "docs/findings.md is stale: gpuvet findings --markdown > "
                                 "docs/findings.md";
}

}  // namespace
}  // namespace gpuvet
