// `gpuvet baseline capture` and `gpuvet gate` through the binary, on a fake node: what a Slurm
// prolog, NHC or node-problem-detector would see.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixture_util.h"
#include "gpuvet/env.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

CommandResult gpuvet(std::vector<std::string> args,
                     const std::string& scenario = "2gpu-pcie-sys.json") {
  return gpuvet::testing::run_gpuvet(args, scenario);
}

struct Scratch {
  Scratch() : dir(fs::temp_directory_path() / ("gpuvet-gate-" + std::to_string(::getpid()))) {
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
  fs::path dir;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from << " in\n" << text;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(GateCli, ACapturedBaselinePassesAndAnEditedOneFailsUnderEveryExitStyle) {
  Scratch s;
  const std::string base = s.path("model.toml");
  auto c = gpuvet({"baseline", "capture", "-o", base});
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  // A second capture does not overwrite it silently.
  EXPECT_EQ(gpuvet({"baseline", "capture", "-o", base}).exit_code, 3);
  const std::string text = slurp(base);
  EXPECT_NE(text.find("\"GPU0-GPU1\" = \"SYS\""), std::string::npos) << text;

  for (const char* style : {"gpuvet", "nagios", "npd", "slurm"}) {
    auto r = gpuvet({"gate", "--baseline", base, "--exit-style", style, "--one-line"});
    EXPECT_EQ(r.exit_code, 0) << style << ": " << r.out << r.err;
    EXPECT_EQ(r.out.rfind("gpuvet: pass, 2 GPU(s) match model.toml@", 0), 0u) << r.out;
  }

  // The model's good boards have the pair on one PCIe switch with P2P.
  const std::string edited = s.path("edited.toml");
  write(edited, replaced(replaced(text, "\"GPU0-GPU1\" = \"SYS\"", "\"GPU0-GPU1\" = \"PIX\""),
                         "\"GPU0-GPU1\" = \"CNS\"", "\"GPU0-GPU1\" = \"OK\""));
  const struct {
    const char* style;
    int code;
  } styles[] = {{"gpuvet", 2}, {"nagios", 2}, {"npd", 1}, {"slurm", 1}};
  for (const auto& st : styles) {
    auto r = gpuvet({"gate", "--baseline", edited, "--exit-style", st.style});
    EXPECT_EQ(r.exit_code, st.code) << st.style << ": " << r.out << r.err;
    const std::string first = r.out.substr(0, r.out.find('\n'));
    if (std::string(st.style) == "npd") {
      EXPECT_EQ(first, "gpuvet: GPU0-GPU1 path SYS (baseline PIX); P2P CNS");  // one line
      EXPECT_LE(first.size(), 80u);
    } else {
      EXPECT_NE(r.out.find("FAIL  gpuvet: GPU0-GPU1 path SYS (baseline PIX); P2P CNS"),
                std::string::npos)
          << r.out;
    }
  }

  // JSON and JUnit for fleet CI.
  const std::string junit = s.path("gate.xml");
  auto j = gpuvet({"gate", "--baseline", edited, "--json", "--junit", junit});
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_NE(j.out.find("\"schema\": \"gpuvet.gate/1\""), std::string::npos);
  EXPECT_NE(j.out.find("\"verdict\": \"fail\""), std::string::npos);
  EXPECT_NE(j.out.find("\"key\": \"pair.GPU0-GPU1.path\""), std::string::npos);
  EXPECT_NE(j.out.find("\"fingerprint\""), std::string::npos);
  const std::string xml = slurp(junit);
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"baseline GPU0-GPU1\""), std::string::npos) << xml;
}

TEST(GateCli, TheConfigurationFileGivesTheBaselineAndExitStyleAndTheFlagsWin) {
  // Bugs caught: the [gate] table ignored (a node health check that needs every flag spelt
  // out), or it overriding what the command line says.
  Scratch s;
  const std::string base = s.path("model.toml");
  ASSERT_EQ(gpuvet({"baseline", "capture", "-o", base}).exit_code, 0);
  const std::string edited = s.path("edited.toml");
  write(edited,
        replaced(replaced(slurp(base), "\"GPU0-GPU1\" = \"SYS\"", "\"GPU0-GPU1\" = \"PIX\""),
                 "\"GPU0-GPU1\" = \"CNS\"", "\"GPU0-GPU1\" = \"OK\""));
  const std::string config = s.path("gpuvet.toml");
  write(config, "[thresholds]\nbusy_util_pct = 40\n\n[gate]\nbaseline = \"" + edited +
                    "\"\nexit_style = \"slurm\"\n");
  auto r = gpuvet({"gate", "--config", config});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // slurm style: 1 is a failed node
  EXPECT_NE(r.out.find("GPU0-GPU1 path SYS (baseline PIX)"), std::string::npos) << r.out;
  r = gpuvet({"gate", "--config", config, "--baseline", base, "--exit-style", "nagios"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;  // the flags win
  // $GPUVET_CONFIG names it too; a bad value is unusable input.
  write(s.path("bad.toml"), "[gate]\nexit_style = \"loud\"\n");
  r = gpuvet({"gate", "--config", s.path("bad.toml"), "--baseline", base});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("exit_style"), std::string::npos) << r.err;
  r = gpuvet({"gate"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no baseline"), std::string::npos) << r.err;
}

TEST(GateCli, AnUnusableBaselineIsExit3OrNpdUnknownWithTheKeyNamed) {
  Scratch s;
  const std::string base = s.path("model.toml");
  ASSERT_EQ(gpuvet({"baseline", "capture", "-o", base}).exit_code, 0);
  const std::string bad = s.path("bad.toml");
  write(bad, slurp(base) + "\n[bios]\nsetting = 1\n");
  auto r = gpuvet({"gate", "--baseline", bad});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("unknown key 'bios'"), std::string::npos) << r.err;
  r = gpuvet({"gate", "--baseline", bad, "--exit-style", "npd"});
  EXPECT_EQ(r.exit_code, 2);  // NPD's Unknown
  EXPECT_EQ(r.out.rfind("gpuvet: unknown: ", 0), 0u) << r.out;
  EXPECT_LE(r.out.find('\n'), 80u);
  // A FIFO is refused at once, not read (it would block the health check).
  const std::string fifo = s.path("fifo.toml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  r = gpuvet({"gate", "--baseline", fifo, "--exit-style", "slurm"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("is a FIFO"), std::string::npos) << r.err;
  // A FIFO as --bench is refused at once too.
  r = gpuvet({"gate", "--baseline", base, "--from",
              std::string(GPUVET_TEST_DATA) + "/fixtures/capture/nvsmi/gpuvet-h200-drv580-q.txt",
              "--bench", fifo});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("bench file"), std::string::npos) << r.err;
  // A baseline of another model: the GPU count and model are the first deviations.
  write(bad, replaced(replaced(slurp(base), "gpu_count = 2", "gpu_count = 8"),
                      "gpu_model = \"NVIDIA L40S\"", "gpu_model = \"NVIDIA H100 80GB HBM3\""));
  r = gpuvet({"gate", "--baseline", bad, "--one-line"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("gpuvet: GPU count 2 (baseline 8); GPU model NVIDIA L40S", 0), 0u) << r.out;
}

}  // namespace
}  // namespace gpuvet
