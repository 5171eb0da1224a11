#include "bundle/bundle.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "import/load.h"

namespace gpuvet::bundle {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Answers like a node with nvidia-smi but without sysstat, where dmesg is refused
// and one command hangs.
class FakeNode final : public CommandRunner {
 public:
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds,
                            std::size_t) const override {
    CommandResult r;
    r.exit_code = 0;
    const std::string cmd = argv[0];
    if (cmd == "mpstat" || cmd == "iostat" || cmd == "sar")
      return Status::not_found(cmd + ": No such file");
    if (cmd == "dmesg") {
      r.exit_code = 1;
      r.err = "dmesg: read kernel buffer failed: Operation not permitted\n";
      return r;
    }
    if (cmd == "numactl" && argv[1] == "--show") {
      r.timed_out = true;
      r.exit_code = -1;
      return r;
    }
    if (cmd == "nvidia-smi" && argv.size() == 2 && argv[1] == "-L") {
      r.out = "GPU 0: NVIDIA H200 (UUID: GPU-91cfa4ff-6453-09ed-d955-5e72022877c7)\n";
      return r;
    }
    if (cmd == "nvidia-smi" && argv.size() == 2 && argv[1] == "-q") {
      r.out =
          "==============NVSMI LOG==============\n\nDriver Version                            : "
          "580.159.04\n"
          "GPU 00000000:00:06.0\n    Product Name                          : NVIDIA H200\n"
          "    Serial Number                         : 1653724025610\n"
          "    GPU UUID                              : GPU-91cfa4ff-6453-09ed-d955-5e72022877c7\n";
      return r;
    }
    r.out = "output of " + cmd + " on gpu-node-07\n";
    return r;
  }
};

struct Bundle {
  fs::path dir;
  Result<CaptureSummary> summary = Status::internal("not run");
};

Bundle capture(bool redact) {
  Bundle b;
  b.dir = fs::temp_directory_path() /
          ("gpuvet-bundle-" + std::to_string(::getpid()) + (redact ? "-r" : ""));
  fs::remove_all(b.dir);
  ::setenv("GPUVET_FAKE_NVML_SCENARIO",
           (std::string(GPUVET_TEST_DATA) + "/scenarios/h200-1gpu-idle.json").c_str(), 1);
  const std::string root = std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-2numa-4gpu";
  auto fsys = make_rooted_file_system(root);
  auto clock = make_system_clock();
  FakeNode node;
  CollectOptions o;
  o.root = root;
  o.nvml_library = GPUVET_FAKE_NVML;
  o.pressure_window = std::chrono::milliseconds(0);
  CaptureOptions c;
  c.out_dir = b.dir.string();
  c.redact = redact;
  b.summary = capture_bundle(c, o, Env{*fsys, node, *clock});
  return b;
}

TEST(CaptureTest, WritesOutputsFactsAndManifest) {
  auto b = capture(false);
  ASSERT_TRUE(b.summary.is_ok()) << b.summary.status().to_string();
  const auto& s = b.summary.value();
  EXPECT_EQ(s.missing, 3);  // mpstat, iostat, sar
  EXPECT_EQ(s.failed, 2);   // dmesg refused, numactl --show timed out
  EXPECT_TRUE(fs::exists(b.dir / "nvidia-smi-q.txt"));
  EXPECT_FALSE(fs::exists(b.dir / "mpstat.txt"));
  EXPECT_NE(slurp(b.dir / "dmesg.txt").find("Operation not permitted"), std::string::npos);
  // Each file says which command made it, so `topo -p2p w` is not mistaken for `r` when read back.
  EXPECT_EQ(slurp(b.dir / "nvidia-smi-topo-p2p-w.txt").rfind("$ nvidia-smi topo -p2p w\n", 0), 0u);
  auto manifest = nlohmann::json::parse(slurp(b.dir / "manifest.json"));
  EXPECT_EQ(manifest["schema"], "gpuvet.capture/1");
  EXPECT_EQ(manifest["redacted"], false);
  bool saw_missing = false, saw_timeout = false;
  for (const auto& c : manifest["commands"]) {
    saw_missing |= c["status"] == "not installed";
    saw_timeout |= c["status"] == "timed out";
  }
  EXPECT_TRUE(saw_missing);
  EXPECT_TRUE(saw_timeout);
  auto facts = nlohmann::json::parse(slurp(b.dir / "gpuvet-facts.json"));
  EXPECT_EQ(facts["gpus"][0]["name"], "NVIDIA H200");

  // Read back: the manifest's failures become notes, nothing crashes.
  auto back = import::import_path(b.dir.string());
  ASSERT_TRUE(back.is_ok());
  bool noted = false;
  for (const auto& n : back.value().notes) noted |= n.find("`dmesg` exit 1") != std::string::npos;
  EXPECT_TRUE(noted);
  fs::remove_all(b.dir);
}

TEST(CaptureTest, RefusesANonEmptyDirectory) {
  auto dir = fs::temp_directory_path() / ("gpuvet-bundle-full-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "x") << "x";
  CaptureOptions c;
  c.out_dir = dir.string();
  auto fsys = make_rooted_file_system("/");
  auto clock = make_system_clock();
  FakeNode node;
  auto r = capture_bundle(c, CollectOptions{}, Env{*fsys, node, *clock});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  fs::remove_all(dir);
}

TEST(CaptureTest, RedactionIsConsistentAcrossFiles) {
  auto b = capture(true);
  ASSERT_TRUE(b.summary.is_ok()) << b.summary.status().to_string();
  const std::string q = slurp(b.dir / "nvidia-smi-q.txt");
  const std::string l = slurp(b.dir / "nvidia-smi-L.txt");
  const std::string facts = slurp(b.dir / "gpuvet-facts.json");
  EXPECT_EQ(q.find("91cfa4ff"), std::string::npos);
  EXPECT_EQ(q.find("1653724025610"), std::string::npos);
  EXPECT_NE(q.find("GPU-00000000-0000-0000-0000-000000000001"), std::string::npos) << q;
  EXPECT_NE(l.find("GPU-00000000-0000-0000-0000-000000000001"), std::string::npos) << l;
  // The fixture host name is gone everywhere, as a whole word.
  EXPECT_EQ(facts.find("gpu-node-07"), std::string::npos);
  EXPECT_EQ(slurp(b.dir / "lscpu.txt").find("gpu-node-07"), std::string::npos);
  EXPECT_NE(slurp(b.dir / "lscpu.txt").find("host1"), std::string::npos);
  fs::remove_all(b.dir);
}

TEST(RedactorTest, SameValueSameTokenAndWordBoundaries) {
  Redactor r;
  r.add_hostname("vm");
  r.add_serial("1324621012581");
  auto a = r.apply(
      "host vm runs nvme0n1; GPU-6A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D serial 1324621012581\n");
  auto b = r.apply("again GPU-6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d on vm.\n");
  EXPECT_NE(a.find("host host1 runs nvme0n1"), std::string::npos) << a;
  EXPECT_NE(a.find("SERIAL0000001"), std::string::npos);
  EXPECT_NE(a.find("GPU-00000000-0000-0000-0000-000000000001"), std::string::npos);
  EXPECT_NE(b.find("GPU-00000000-0000-0000-0000-000000000001 on host1."), std::string::npos) << b;
}

}  // namespace
}  // namespace gpuvet::bundle
