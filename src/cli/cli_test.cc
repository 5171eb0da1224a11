// The gpuvet binary: exit codes and messages a script or a person relies on.
#include <sys/stat.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixture_util.h"
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

// Plain `nvidia-smi` pastes: a lost GPU above the table and a driver nvidia-smi cannot reach
// are critical (exit 2); a healthy table stays quiet (exit 0).
TEST(CliDiagnose, PlainNvidiaSmiPastes) {
  const auto dir = std::filesystem::temp_directory_path() / "gpuvet-cli-nvidia-smi";
  std::filesystem::create_directories(dir);
  const std::string table =
      testing::read_file(testing::fixture("capture/nvsmi/gpud-8x-h100-default-table-drv550.txt"));
  {
    std::ofstream(dir / "lost.txt")
        << "$ nvidia-smi\nUnable to determine the device handle for GPU0000:2A:00.0: GPU is "
           "lost.  Reboot the system to recover this GPU\n"
        << table;
    std::ofstream(dir / "no-driver.txt")
        << "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
           "sure that the latest NVIDIA driver is installed and running.\n";
    std::ofstream(dir / "healthy.txt") << table;
  }
  auto lost = gpuvet({"diagnose", "--json", "--from", (dir / "lost.txt").string()});
  EXPECT_EQ(lost.exit_code, 2) << lost.out << lost.err;
  EXPECT_NE(lost.out.find("\"id\": \"gpu-unresponsive\""), std::string::npos) << lost.out;
  EXPECT_NE(lost.out.find("0000:2a:00.0"), std::string::npos) << lost.out;
  auto no_driver = gpuvet({"diagnose", "--json", "--from", (dir / "no-driver.txt").string()});
  EXPECT_EQ(no_driver.exit_code, 2) << no_driver.out << no_driver.err;
  EXPECT_NE(no_driver.out.find("\"id\": \"gpu-missing\""), std::string::npos) << no_driver.out;
  auto healthy = gpuvet({"diagnose", "--from", (dir / "healthy.txt").string()});
  EXPECT_EQ(healthy.exit_code, 0) << healthy.out << healthy.err;
  EXPECT_NE(healthy.out.find("8× NVIDIA H100 80GB HBM3"), std::string::npos) << healthy.out;
  std::filesystem::remove_all(dir);
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

// D7: a directory with more files than the walk reads, the one real paste named last. The
// answer says the input was cut (not only "nothing supported"), and with a real paste read
// the verdict is INCOMPLETE with the cut first, never a quiet verdict on part of the input.
TEST(CliDiagnose, ADirectoryCutAtTheFileCapSaysSo) {
  const auto dir = std::filesystem::temp_directory_path() / "gpuvet-cli-walk-cut";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (int i = 0; i < 20001; ++i) std::ofstream(dir / fmt::format("a-junk-{:05}.txt", i)) << "x\n";
  std::filesystem::copy_file(article("task-02.txt"), dir / "zz-real.txt");
  auto r = gpuvet({"diagnose", "--from", dir.string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("2 files not read (more than 20000)"), std::string::npos) << r.err;
  std::filesystem::remove(dir / "a-junk-00000.txt");
  std::filesystem::copy_file(article("task-02.txt"), dir / "0-real.txt");  // first in name order
  r = gpuvet({"diagnose", "--from", dir.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("INCOMPLETE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 files not read"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// D5: 100 million empty lines (100 MB) are read in memory bounded by the input, not by its line
// count: under a 512 MiB data limit the paste is answered (exit 3, nothing recognised). The
// splitter that kept an offset pair per line needed 1.6 GB here and died of bad_alloc.
TEST(CliDiagnose, AHundredMillionEmptyLinesFitInBoundedMemory) {
  const auto file = std::filesystem::temp_directory_path() / "gpuvet-cli-100m-newlines.txt";
  {
    std::ofstream out(file, std::ios::binary);
    const std::string block(1 << 20, '\n');
    for (int i = 0; i < 100; ++i) out << block;
  }
  auto r = make_process_runner()->run({"bash", "-c",
                                       std::string("ulimit -d 524288 && exec ") + GPUVET_BINARY +
                                           " diagnose --from " + file.string()},
                                      std::chrono::seconds(120));
  std::filesystem::remove(file);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value().exit_code, 3) << r.value().err;
  EXPECT_NE(r.value().err.find("supported output"), std::string::npos) << r.value().err;
}

// With --json a failure is still one JSON document on stdout (gpuvet.error/1), whatever the
// command and wherever it failed (its own check, the option parser), with what stderr said.
TEST(CliTest, JsonFailuresAreAnErrorDocument) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"diagnose", "--json", "--from", "/nonexistent/capture"},
        std::vector<std::string>{"culprit", "--json", "/nonexistent/logs"},
        std::vector<std::string>{"diagnose", "--json", "--no-such-option"},
        std::vector<std::string>{"fleet", "report", "/nonexistent/fleet.db", "--json"}}) {
    auto r = gpuvet(args);
    EXPECT_EQ(r.exit_code, 3) << args[0] << " " << args.back() << "\n" << r.err;
    const auto doc = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << "stdout: '" << r.out << "'";
    EXPECT_EQ(doc.value("schema", ""), "gpuvet.error/1") << doc;
    EXPECT_EQ(doc.value("exit_code", 0), 3) << doc;
    EXPECT_EQ(doc.value("command", ""), args[0]) << doc;
    EXPECT_FALSE(doc.value("message", "").empty()) << doc;
    EXPECT_NE(r.err.find(doc.value("message", "").substr(0, 20)), std::string::npos) << r.err;
  }
  // Without --json, stdout stays empty.
  EXPECT_TRUE(gpuvet({"diagnose", "--from", "/nonexistent/capture"}).out.empty());
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

TEST(CliDiagnose, LspciPastes) {
  const std::string lspci = std::string(GPUVET_TEST_DATA) + "/fixtures/lspci/";
  // A GPU whose link trained at x8 of x16, behind switch ports with ACS redirect set.
  auto bad = gpuvet(
      {"diagnose", "--from", lspci + "lspci-vvv-2x-h100-pcie-x8-downgraded-acs-redirect-aer.txt"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("pcie-link-degraded"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("GPU1 PCIe Gen5 x8 of max x16 (0000:19:00.0)"), std::string::npos)
      << bad.out;
  EXPECT_NE(bad.out.find("acs-blocks-p2p"), std::string::npos) << bad.out;
  // Gen5 x16, ACS off, no AER bits that matter: quiet.
  auto good =
      gpuvet({"diagnose", "--from", lspci + "lspci-vvv-2x-h100-pcie-gen5-switch-healthy.txt"});
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
  EXPECT_EQ(good.out.find("WARNING"), std::string::npos) << good.out;
  // The same lspci paste with a kernel log: the AER errors the port received are GPU1's.
  auto both = make_process_runner()->run(
      {"sh", "-c",
       "{ echo '$ sudo lspci -vvv'; cat '" + lspci +
           "lspci-vvv-2x-h100-pcie-gen5-switch-healthy.txt'; echo '$ dmesg'; cat '" +
           GPUVET_TEST_DATA +
           "/fixtures/kernel-log/written-dmesg-aer-corrected-storm-gpu-port.log'; } | '" +
           GPUVET_BINARY + "' diagnose --json --from -"},
      std::chrono::seconds(30));
  ASSERT_TRUE(both.is_ok());
  EXPECT_EQ(both.value().exit_code, 1) << both.value().out << both.value().err;
  EXPECT_NE(both.value().out.find("12 PCIe AER corrected errors on GPU1 (0000:19:00.0)"),
            std::string::npos)
      << both.value().out;
}

TEST(CliDiagnose, PressurePastes) {
  const std::string fx = std::string(GPUVET_TEST_DATA) + "/fixtures/";
  // A ticket: a healthy GPU's nvidia-smi -q Performance block, then the PSI files.
  auto paste = [&](const std::string& psi_file) {
    auto r = make_process_runner()->run(
        {"sh", "-c",
         "{ cat '" + fx +
             "nvsmi-fragments/q-d-performance-section-healthy.txt'; echo '$ grep -H "
             ". /proc/pressure/*'; cat '" +
             fx + "psi/" + psi_file + "'; } | '" + std::string(GPUVET_BINARY) +
             "' diagnose --from -"},
        std::chrono::seconds(30));
    EXPECT_TRUE(r.is_ok());
    return r.is_ok() ? r.value() : CommandResult{};
  };
  auto storm = paste("written-grep-H-direct-io-storm.txt");
  EXPECT_EQ(storm.exit_code, 1) << storm.out << storm.err;
  EXPECT_NE(storm.out.find("io-bound"), std::string::npos) << storm.out;
  EXPECT_NE(storm.out.find("I/O pressure (PSI): some 28.1 %"), std::string::npos) << storm.out;
  auto quiet = paste("written-grep-H-quiet.txt");
  EXPECT_EQ(quiet.exit_code, 0) << quiet.out << quiet.err;
  EXPECT_EQ(quiet.out.find("io-bound"), std::string::npos) << quiet.out;
}

// Pasted fragments and new formats through the binary: exit code and the finding named.
TEST(CliDiagnose, FragmentsUptimeMatricesAndDcgmi) {
  const std::string fx = std::string(GPUVET_TEST_DATA) + "/fixtures/";
  // -q fragment: the Performance block alone behind its prompt.
  auto perf =
      gpuvet({"diagnose", "--from",
              fx + "nvsmi-fragments/q-d-performance-section-hw-thermal-slowdown-prompt.txt"});
  EXPECT_EQ(perf.exit_code, 1) << perf.out << perf.err;
  EXPECT_NE(perf.out.find("thermal-throttle"), std::string::npos) << perf.out;
  auto perf_ok =
      gpuvet({"diagnose", "--from", fx + "nvsmi-fragments/q-d-performance-section-healthy.txt"});
  EXPECT_EQ(perf_ok.exit_code, 0) << perf_ok.out << perf_ok.err;
  // `nvidia-smi -q | grep -i slowdown` of 8 GPUs, one with the power brake on.
  auto grep = gpuvet(
      {"diagnose", "--from", fx + "nvsmi-fragments/q-grep-slowdown-8gpu-one-power-brake.txt"});
  EXPECT_EQ(grep.exit_code, 1) << grep.out << grep.err;
  EXPECT_NE(grep.out.find("power-throttle"), std::string::npos) << grep.out;
  EXPECT_NE(grep.out.find("GPU3"), std::string::npos) << grep.out;
  // uptime above dmesg: the same Xid 48 is history 40 days after it, critical 25 min after.
  const std::string xid =
      "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 48, pid=4242, name=python, An uncorrectable "
      "double bit error (DBE) has been detected on GPU in the framebuffer.";
  auto paste = [&](const std::string& up) {
    auto r = make_process_runner()->run(
        {"sh", "-c",
         "printf '%s\\n' '$ uptime' '" + up + "' '$ dmesg | grep Xid' '" + xid + "' | '" +
             GPUVET_BINARY + "' diagnose --from -"},
        std::chrono::seconds(30));
    EXPECT_TRUE(r.is_ok());
    return r.value();
  };
  auto old_xid = paste(" 10:15:01 up 40 days,  3:02,  1 user,  load average: 0.10, 0.20, 0.30");
  EXPECT_NE(old_xid.exit_code, 2) << old_xid.out << old_xid.err;
  EXPECT_NE(old_xid.out.find("xid-error"), std::string::npos) << old_xid.out;
  auto new_xid = paste(" 10:15:01 up 25 min,  1 user,  load average: 0.10, 0.20, 0.30");
  EXPECT_EQ(new_xid.exit_code, 2) << new_xid.out << new_xid.err;
  EXPECT_NE(new_xid.out.find("xid-error"), std::string::npos) << new_xid.out;
  // A p2pBandwidthLatencyTest matrix alone: 2 GPUs, so --expect-gpus 4 is gpu-missing.
  const std::string matrix =
      "Unidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n     0 "
      "770.19  19.54\n     1  19.58 771.44\n";
  auto m = make_process_runner()->run(
      {"sh", "-c",
       "printf '" + matrix + "' | '" + GPUVET_BINARY + "' diagnose --expect-gpus 4 --from -"},
      std::chrono::seconds(30));
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(m.value().exit_code, 2) << m.value().out << m.value().err;
  EXPECT_NE(m.value().out.find("gpu-missing"), std::string::npos) << m.value().out;
  // dcgmi diag and dcgmi health -c.
  auto diag =
      gpuvet({"diagnose", "--from", fx + "dcgmi/dcgmi-diag-r3-8x-h100-gpu-memory-fail-gpu2.txt"});
  EXPECT_EQ(diag.exit_code, 2) << diag.out << diag.err;
  EXPECT_NE(diag.out.find("dcgm-diag-failed"), std::string::npos) << diag.out;
  auto diag_ok = gpuvet({"diagnose", "--from", fx + "dcgmi/dcgmi-diag-r2-8x-h100-all-pass.txt"});
  EXPECT_EQ(diag_ok.exit_code, 0) << diag_ok.out << diag_ok.err;
  auto health = gpuvet({"diagnose", "--from", fx + "dcgmi/dcgmi-health-c-pcie-replays-gpu0.txt"});
  EXPECT_EQ(health.exit_code, 1) << health.out << health.err;
  EXPECT_NE(health.out.find("pcie-replay-errors"), std::string::npos) << health.out;
  auto health_ok = gpuvet({"diagnose", "--from", fx + "dcgmi/dcgmi-health-c-healthy.txt"});
  EXPECT_NE(health_ok.exit_code, 1) << health_ok.out << health_ok.err;
  EXPECT_NE(health_ok.exit_code, 2) << health_ok.out << health_ok.err;
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

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

using TempDirBase = testing::TempDir;
struct TempDir : TempDirBase {
  TempDir() : TempDirBase("gpuvet-cli") {}
};

std::string testing_read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string task(const char* name) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/article/" + name;
}

// `script` run by sh with $0 the gpuvet binary; the shell and what it started are killed
// when the deadline passes.
CommandResult shell(const std::string& script, std::chrono::seconds timeout) {
  auto r = make_process_runner()->run({"sh", "-c", script, GPUVET_BINARY}, timeout);
  EXPECT_TRUE(r.is_ok());
  return r.is_ok() ? r.value() : CommandResult{};
}

TEST(CliOutput, AFullDiskUnderStdoutIsExit3WithAMessage) {
  for (const std::string& cmd :
       {"facts --from '" + task("task-11.txt") + "'",
        "diagnose --from '" + task("task-11.txt") + "'", std::string("findings"),
        std::string("formats"), std::string("--help")}) {
    auto r = shell("\"$0\" " + cmd + " > /dev/full", std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 3) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("gpuvet: cannot write the output: No space left on device"),
              std::string::npos)
        << cmd << "\n"
        << r.err;
  }
}

TEST(CliOutput, AClosedStdoutIsExit3WithAMessage) {
  for (const std::string& cmd : {"diagnose --from '" + task("task-11.txt") + "'",
                                 "facts --json --from '" + task("task-11.txt") + "'"}) {
    auto r = shell("\"$0\" " + cmd + " >&-", std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 3) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("gpuvet: cannot write the output: Bad file descriptor"), std::string::npos)
        << cmd << "\n"
        << r.err;
  }
}

TEST(CliOutput, AReaderThatStopsEarlyEndsItQuietly) {
  // A report far larger than a pipe's buffer, whose reader (head) goes away after one byte:
  // gpuvet dies of SIGPIPE, without a word.
  TempDir dir;
  {
    std::ofstream pmon(dir.file("pmon.txt"));
    pmon << "# gpu        pid  type    sm   mem   enc   dec   command\n"
         << "# Idx          #   C/G     %     %     %     %   name\n";
    for (int pid = 1000; pid < 5000; ++pid)
      pmon << "    0      " << pid << "    C     72    61     0     0   python\n";
  }
  auto r = shell(
      "exec 3>&1; \"$0\" facts --from '" + dir.file("pmon.txt") + "' 2>&3 | head -c 1 > /dev/null",
      std::chrono::seconds(60));
  EXPECT_EQ(r.out, "");
  auto size =
      shell("\"$0\" facts --from '" + dir.file("pmon.txt") + "' | wc -c", std::chrono::seconds(60));
  EXPECT_GT(std::stoul("0" + size.out), 256u << 10) << size.out;  // more than a pipe holds
}

TEST(CliOutput, ControlCharactersOfAPasteNeverReachTheTerminal) {
  TempDir dir;
  // An nvidia-smi -q paste whose product name retitles the window and clears the screen.
  std::string q = testing_read(std::string(GPUVET_TEST_DATA) +
                               "/fixtures/capture/nvsmi/gpuvet-h200-drv580-q.txt");
  const std::string attack = "\x1b]0;PWNED\x07\x1b[2J";
  const auto at = q.find(": NVIDIA H200");
  ASSERT_NE(at, std::string::npos);
  q.insert(at + std::string(": NVIDIA H200").size(), attack);
  std::ofstream(dir.file("q.txt"), std::ios::binary) << q;
  // A pmon paste whose process name does the same.
  std::ofstream(dir.file("pmon.txt"), std::ios::binary)
      << "# gpu        pid  type    sm   mem   enc   dec   command\n"
      << "# Idx          #   C/G     %     %     %     %   name\n"
      << "    0      24819    C     72    61     0     0   py" << attack << "\n";
  for (const char* input : {"q.txt", "pmon.txt"}) {
    for (const char* cmd : {"diagnose", "facts"}) {
      auto r = gpuvet({cmd, "--from", dir.file(input)});
      EXPECT_NE(r.exit_code, 3) << cmd << " " << input << "\n" << r.err;
      EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << cmd << " " << input << "\n" << r.out;
      EXPECT_EQ(r.out.find('\x07'), std::string::npos) << cmd << " " << input << "\n" << r.out;
      // Shown, made visible (diagnose names the GPU model, not the processes).
      if (std::string_view(cmd) == "facts" || std::string_view(input) == "q.txt") {
        EXPECT_NE(r.out.find("\\x1b]0;PWNED\\x07"), std::string::npos)
            << cmd << " " << input << "\n"
            << r.out;
      }
    }
  }
}

TEST(CliOutput, ColourOnlyOnATerminalThatCanShowIt) {
  // `script` gives gpuvet a pseudo-terminal as stdout.
  const auto on_a_terminal = [](const std::string& env) {
    return shell("exec env " + env + " script -qec \"'$0' diagnose --from '" + task("task-02.txt") +
                     "'\" /dev/null < /dev/null",
                 std::chrono::seconds(60))
        .out;
  };
  const std::string xterm = on_a_terminal("-u NO_COLOR TERM=xterm");
  if (xterm.find("gpuvet diagnose") == std::string::npos)
    GTEST_SKIP() << "no pseudo-terminal here (script printed: " << xterm << ")";
  EXPECT_NE(xterm.find("\x1b[1m"), std::string::npos) << xterm;
  EXPECT_NE(on_a_terminal("NO_COLOR= TERM=xterm").find("\x1b[1m"), std::string::npos);
  for (const char* env :
       {"-u NO_COLOR TERM=dumb", "-u NO_COLOR -u TERM", "NO_COLOR=1 TERM=xterm"}) {
    const std::string out = on_a_terminal(env);
    EXPECT_NE(out.find("gpuvet diagnose"), std::string::npos) << env << "\n" << out;
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << env << "\n" << out;
  }
}

TEST(CliCommand, AnUnknownCommandIsNamedWithTheNearestOne) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"captrue", "--help"}, std::vector<std::string>{"captrue"},
        std::vector<std::string>{"--help", "captrue"}}) {
    auto r = gpuvet(args);
    EXPECT_EQ(r.exit_code, 3) << args[0] << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("gpuvet: unknown command 'captrue'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("did you mean 'capture'?"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("Usage"), std::string::npos) << r.out;  // not the top-level help
  }
  auto typo = gpuvet({"diagnos", "--from", task("task-11.txt")});
  EXPECT_EQ(typo.exit_code, 3);
  EXPECT_NE(typo.err.find("did you mean 'diagnose'?"), std::string::npos) << typo.err;
  auto help = gpuvet({"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("diagnose"), std::string::npos);
  EXPECT_EQ(gpuvet({"findings", "--help"}).exit_code, 0);
}

TEST(CliOptions, EveryFloatingOptionRefusesNanInfAndNegative) {
  TempDir dir;
  const std::string bundle = dir.file("bundle");
  const std::vector<std::vector<std::string>> options = {{"facts", "--gpu-timeout"},
                                                         {"facts", "--init-timeout"},
                                                         {"facts", "--sample-window"},
                                                         {"diagnose", "--gpu-timeout"},
                                                         {"diagnose", "--init-timeout"},
                                                         {"diagnose", "--sample-window"},
                                                         {"capture", bundle, "--timeout"},
                                                         {"bench", "--collective-timeout"},
                                                         {"scale", "--rate"},
                                                         {"scale", "--flops"},
                                                         {"scale", "--duration"},
                                                         {"scale", "--sample-interval"},
                                                         {"scale", "--collective-timeout"},
                                                         {"scale", "--grad-bytes"},
                                                         {"scale", "--bucket-bytes"}};
  for (const auto& prefix : options) {
    for (const char* value : {"nan", "NaN", "-nan", "inf", "-inf", "-1"}) {
      std::vector<std::string> args = prefix;
      args.push_back(value);
      args.insert(args.begin() + 1, {"--nvml", "/nonexistent/libnvidia-ml.so.1"});
      if (args[0] == "facts" || args[0] == "diagnose")
        args.insert(args.end() - 2, {"--from", task("task-11.txt")});
      auto r = gpuvet(args);
      const std::string what = prefix.front() + " " + prefix.back() + " " + value;
      EXPECT_EQ(r.exit_code, 3) << what << "\n" << r.out << r.err;
      EXPECT_NE(r.err.find(prefix.back()), std::string::npos) << what << "\n" << r.err;
      EXPECT_TRUE(r.err.find("finite") != std::string::npos ||
                  r.err.find("not in the range") != std::string::npos)
          << what << "\n"
          << r.err;
    }
  }
  EXPECT_FALSE(fs::exists(bundle));
  // In range is still fine.
  auto ok = gpuvet(
      {"facts", "--from", task("task-11.txt"), "--gpu-timeout", "1.5", "--sample-window", "0"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(CliConfig, OnlyASmallRegularFileIsReadAsTheConfig) {
  TempDir dir;
  const std::string from = task("task-11.txt");
  ASSERT_EQ(::mkfifo(dir.file("fifo.toml").c_str(), 0600), 0);
  // A FIFO nobody writes to, and a stdin that never closes: refused at once, not waited on.
  auto fifo = gpuvet({"diagnose", "--from", from, "--config", dir.file("fifo.toml")});
  EXPECT_EQ(fifo.exit_code, 3) << fifo.err;
  EXPECT_NE(fifo.err.find(dir.file("fifo.toml") + " is a FIFO"), std::string::npos) << fifo.err;
  // Standard input a pipe that is never closed: the shell holds it open for reading and writing.
  auto stdin_pipe = shell("mkfifo '" + dir.file("in") + "' && exec 4<>'" + dir.file("in") +
                              "' && \"$0\" diagnose --from '" + from +
                              "' --config /dev/stdin <&4 4<&-; echo \"exit $?\"",
                          std::chrono::seconds(60));
  EXPECT_NE(stdin_pipe.out.find("exit 3"), std::string::npos) << stdin_pipe.out << stdin_pipe.err;
  EXPECT_NE(stdin_pipe.err.find("FIFO"), std::string::npos) << stdin_pipe.err;
  auto directory = gpuvet({"diagnose", "--from", from, "--config", dir.file("")});
  EXPECT_EQ(directory.exit_code, 3) << directory.out;
  EXPECT_NE(directory.err.find("is a directory"), std::string::npos) << directory.err;
  // Under a memory limit, so that reading /dev/zero or a huge file cannot take the machine.
  std::ofstream(dir.file("sparse.toml")).close();
  fs::resize_file(dir.file("sparse.toml"), std::uintmax_t{8} << 30);
  for (const std::string& path : {std::string("/dev/zero"), dir.file("sparse.toml")}) {
    auto r = shell(
        "ulimit -v 2000000; exec \"$0\" diagnose --from '" + from + "' --config '" + path + "'",
        std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 3) << path << "\n" << r.err;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    EXPECT_TRUE(r.err.find("character device") != std::string::npos ||
                r.err.find("larger than 1 MiB") != std::string::npos)
        << r.err;
  }
  std::ofstream(dir.file("nan.toml")) << "[thresholds]\nclocks_below_fraction = nan\n";
  auto nan = gpuvet({"diagnose", "--from", from, "--config", dir.file("nan.toml")});
  EXPECT_EQ(nan.exit_code, 3);
  EXPECT_NE(nan.err.find("clocks_below_fraction"), std::string::npos) << nan.err;
  std::ofstream(dir.file("good.toml")) << "[thresholds]\nhot_temp_c = 90\n";
  auto good = gpuvet({"diagnose", "--from", from, "--config", dir.file("good.toml")});
  EXPECT_EQ(good.exit_code, 1) << good.err;  // task 11: the GPU shared by two processes
}

TEST(CliDiagnose, NvbandwidthPatternFailureIsDataCorruptionExit2) {
  auto r = gpuvet({"diagnose", "--from",
                   std::string(GPUVET_TEST_DATA) +
                       "/fixtures/capture/tools/"
                       "nvbandwidth-d2d-write-ok-then-read-ce-pattern-failure.txt"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("data-corruption"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("offset 11136"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("as fast as it should be"), std::string::npos) << r.out;
}

// A directory of two machines' nvidia-smi -q -x (real telegraf fixtures: an A100 box and a dual
// RTX 2070 box, both with a GPU at 0000:01:00.0) is refused with exit 3, naming both; one
// machine's outputs in a directory are read as before.
TEST(CliDiagnose, SeveralMachinesInOneDirectoryAreRefused) {
  testing::TempDir dir("gpuvet-cli-machines");
  const std::string nvsmi = testing::fixture("capture/nvsmi/");
  dir.write("a/q.xml", testing::read_file(nvsmi + "telegraf-a100-sxm4-80gb-mig-drv535.xml"));
  dir.write("b/q.xml", testing::read_file(nvsmi + "telegraf-dual-rtx2070-v13.xml"));
  for (const char* cmd : {"diagnose", "facts"}) {
    auto r = gpuvet({cmd, "--from", dir.path()});
    EXPECT_EQ(r.exit_code, 3) << cmd << r.out << r.err;
    EXPECT_NE(r.err.find("describe 2 different machines"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("a/q.xml"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("b/q.xml"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("mixed GPUs"), std::string::npos) << r.out;
  }
  auto one = gpuvet({"diagnose", "--from", dir.path() + "/a"});
  EXPECT_NE(one.exit_code, 3) << one.err;
  testing::TempDir same("gpuvet-cli-machines");
  same.write("q.txt", testing::read_file(nvsmi + "gpuvet-h200-drv580-q.txt"));
  same.write("q.xml", testing::read_file(nvsmi + "gpuvet-h200-drv580-q.xml"));
  auto h200 = gpuvet({"diagnose", "--from", same.path()});
  EXPECT_EQ(h200.exit_code, 0) << h200.out << h200.err;
}

}  // namespace
}  // namespace gpuvet
