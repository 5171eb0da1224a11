#include "bundle/bundle.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "gpuvet/diagnose.h"
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
  c.run_commands_with_root = true;  // the fake node answers for the tree's machine
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
  EXPECT_TRUE(manifest["redacted"].is_array() && manifest["redacted"].empty());
  EXPECT_EQ(manifest["commands_run"], "live");
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
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
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

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Every file of a bundle, by name.
std::map<std::string, std::string> bundle_files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files[e.path().filename()] = slurp(e.path());
  return files;
}

// Runs the fake tools of tests/fakes/node/ (a node called gpu-node-07 printing serials, UUIDs,
// its FQDN, MAC and IP addresses and a /home path); a tool it lacks is not installed.
class FakeToolRunner final : public CommandRunner {
 public:
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                            std::size_t max_output) const override {
    const std::string tool = std::string(GPUVET_TEST_DATA) + "/fakes/node/" + argv[0];
    if (!fs::exists(tool)) return Status::not_found(argv[0] + ": not installed");
    std::vector<std::string> a = argv;
    a[0] = tool;
    return inner_->run(a, timeout, max_output);
  }

 private:
  std::unique_ptr<CommandRunner> inner_ = make_process_runner();
};

// Refuses to run anything and counts the attempts.
class CountingRunner final : public CommandRunner {
 public:
  Result<CommandResult> run(const std::vector<std::string>&, std::chrono::milliseconds,
                            std::size_t) const override {
    ++calls;
    CommandResult r;
    r.exit_code = 0;
    r.out = "output of the machine running gpuvet\n";
    return r;
  }
  mutable int calls = 0;
};

fs::path fresh_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("gpuvet-bundle-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

struct RichCapture {
  fs::path dir;
  Result<CaptureSummary> summary = Status::internal("not run");
};

RichCapture capture_rich_node(const std::string& name, const std::string& scenario, bool redact) {
  RichCapture b;
  b.dir = fresh_dir(name);
  ::setenv("GPUVET_FAKE_NVML_SCENARIO",
           (std::string(GPUVET_TEST_DATA) + "/scenarios/" + scenario).c_str(), 1);
  const std::string root = std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-2numa-4gpu";
  auto fsys = make_rooted_file_system(root);
  auto clock = make_system_clock();
  FakeToolRunner tools;
  CollectOptions o;
  o.root = root;
  o.nvml_library = GPUVET_FAKE_NVML;
  o.pressure_window = std::chrono::milliseconds(0);
  o.init_timeout = std::chrono::milliseconds(500);
  CaptureOptions c;
  c.out_dir = b.dir.string();
  c.redact = redact;
  c.run_commands_with_root = true;
  b.summary = capture_bundle(c, o, Env{*fsys, tools, *clock});
  return b;
}

// What the rich fake node and the scenario's NVML know that must not leave the site.
std::vector<std::string> secrets_of(const std::string& scenario) {
  std::vector<std::string> s = {"gpu-node-07", "cluster.example.com", "1650555000001",
                                "1650999999999", "6a1b2c3d", "9e0f1a2b3c4d", "0f9e8d7c",
                                "605f4e3d2c1b", "0c:42:a1:de:ad:01", "10.20.30.40", "10.20.30.41",
                                "fe80::e42:a1ff:fede:ad01", "fd12:3456:789a:1::40", "alice",
                                // A former name of the node: the journal teaches it, dmesg
                                // (written before the journal) prints it.
                                "dgx-a07"};
  auto doc = nlohmann::json::parse(slurp(std::string(GPUVET_TEST_DATA) + "/scenarios/" + scenario));
  for (const auto& g : doc["gpus"]) {
    if (g.contains("serial") && g["serial"].is_string()) s.push_back(g["serial"]);
    if (g.contains("uuid") && g["uuid"].is_string()) {
      const std::string u = g["uuid"];
      s.push_back(u.substr(u.find('-') + 1, 8));  // the UUID's first group
    }
  }
  return s;
}

void expect_no_secret_left(const fs::path& dir, const std::vector<std::string>& secrets) {
  const auto files = bundle_files(dir);
  ASSERT_GE(files.size(), 10u);
  for (const auto& [name, text] : files)
    for (const auto& secret : secrets)
      EXPECT_EQ(lower(text).find(lower(secret)), std::string::npos)
          << secret << " left in " << name << ":\n"
          << text.substr(0, 2000);
}

TEST(CaptureRedactTest, RedactsEveryValueLearntFromAnyFileInEveryFile) {
  const std::string scenario = "8gpu-nvlink-h100.json";
  auto b = capture_rich_node("rich", scenario, true);
  ASSERT_TRUE(b.summary.is_ok()) << b.summary.status().to_string();
  expect_no_secret_left(b.dir, secrets_of(scenario));
  const auto files = bundle_files(b.dir);
  // The same value became the same token everywhere: the CSV's serial, learnt from -q.
  EXPECT_NE(files.at("nvidia-smi-query-gpu.csv").find("SERIAL"), std::string::npos);
  EXPECT_NE(files.at("sar-net-dev.txt").find("(host1)"), std::string::npos)
      << files.at("sar-net-dev.txt");
  EXPECT_NE(files.at("dmesg.txt").find("/home/user1/train.py"), std::string::npos);
  // What was redacted is in the manifest, with counts.
  auto manifest = nlohmann::json::parse(files.at("manifest.json"));
  const std::set<std::string> classes(manifest["redacted"].begin(), manifest["redacted"].end());
  EXPECT_EQ(classes,
            (std::set<std::string>{"serial", "uuid", "hostname", "mac", "ip", "home-path"}));
  for (const auto& cls : classes)
    EXPECT_GE(manifest["redaction_counts"][cls]["values"].get<int>(), 1) << cls;
  EXPECT_GE(manifest["redaction_counts"]["serial"]["values"].get<int>(), 2);
  fs::remove_all(b.dir);
}

TEST(CaptureRedactTest, RedactsSerialsKnownOnlyFromFilesWhenNvmlHangs) {
  // NVML hangs at init: every serial comes from the CSV and the -q text alone.
  auto b = capture_rich_node("rich-hang", "fault-init-hang.json", true);
  ASSERT_TRUE(b.summary.is_ok()) << b.summary.status().to_string();
  expect_no_secret_left(b.dir, secrets_of("fault-init-hang.json"));
  fs::remove_all(b.dir);
}

TEST(CaptureRedactTest, RedactedBundleReadsBackToTheSameFindings) {
  const std::string scenario = "8gpu-nvlink-h100.json";
  auto plain = capture_rich_node("plain", scenario, false);
  auto redacted = capture_rich_node("redacted", scenario, true);
  ASSERT_TRUE(plain.summary.is_ok() && redacted.summary.is_ok());
  auto findings = [](const fs::path& dir) {
    auto facts = import::import_path(dir.string());
    EXPECT_TRUE(facts.is_ok()) << facts.status().to_string();
    std::vector<std::string> out;
    if (!facts.is_ok()) return out;
    for (const auto& f : diagnose(facts.value()).findings) {
      std::string line = f.id + " " + severity_name(f.severity);
      for (const auto& s : f.subjects) line += " " + s;
      out.push_back(line);
    }
    return out;
  };
  const auto a = findings(plain.dir), b = findings(redacted.dir);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  // The Xid 79 of the fake node's kernel log is among them.
  EXPECT_TRUE(std::any_of(a.begin(), a.end(), [](const std::string& l) {
    return l.find("xid") != std::string::npos;
  })) << ::testing::PrintToString(a);
  if (!::testing::Test::HasFailure()) {
    fs::remove_all(plain.dir);
    fs::remove_all(redacted.dir);
  }
}

TEST(RedactorTest, HostNameInsideAnFqdnAndInAnyCase) {
  Redactor r;
  r.add_hostname("gpu-node-07");
  auto t = r.apply(
      "gpu-node-07.cluster.example.com up; GPU-NODE-07 login; ping gpu-node-07. done; "
      "gpu-node-070 is another\n");
  EXPECT_EQ(t, "host1 up; host1 login; ping host1. done; gpu-node-070 is another\n");
  // An FQDN given as the host name hides its short name too.
  Redactor f;
  f.add_hostname("Login-3.Example.org");
  EXPECT_EQ(f.apply("login-3 and login-3.example.org\n"), "host1 and host1\n");
}

TEST(RedactorTest, LearnsTheCsvSerialColumnAndUsesItInEarlierFiles) {
  Redactor r;
  const std::string q = "    Serial Number                         : N/A\n";
  const std::string csv =
      "$ nvidia-smi --query-gpu=index,uuid,serial --format=csv\n"
      "index, uuid, serial\n0, GPU-6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d, 1650999999999\n";
  const std::string log = "GPU 0 serial 1650999999999 reset\n";
  r.learn(q);
  r.learn(csv);
  r.learn(log);
  EXPECT_EQ(r.apply(log), "GPU 0 serial SERIAL0000001 reset\n");
  EXPECT_EQ(r.apply(csv).find("1650999999999"), std::string::npos);
}

TEST(RedactorTest, LearnsHostNamesFromSysstatAndSyslogLines) {
  Redactor r;
  r.learn("Linux 6.8.0 (node-a.example.com) \t12/03/2026 \t_x86_64_\t(32 CPU)\n");
  r.learn("2026-12-03T10:00:00+0000 node-b kernel: x\nDec 03 10:00:00 node-c kernel: y\n");
  EXPECT_EQ(r.apply("node-a node-b node-c\n"), "host1 host2 host3\n");
}

TEST(RedactorTest, MacIpAndHomePathsAreReplacedButVersionsAndBusIdsKept) {
  Redactor r;
  const std::string kept =
      "VBIOS 96.00.74.00.01 driver 550.90.07 NVML 13.580.159.04 bus 00000000:18:00.0 "
      "0000:3b:00.0 at 12:34:56 [  100.700000] lo 127.0.0.1 mask 255.255.255.0 std::vector\n";
  EXPECT_EQ(r.apply(kept), kept);
  auto t = r.apply(
      "MAC 0c:42:a1:de:ad:01 / 0C:42:A1:DE:AD:01, ip 10.20.30.40/24 fe80::e42:a1ff:fede:ad01%eth2 "
      "[fd12:3456:789a:1::40]:22 2001:0db8:0000:0000:0000:ff00:0042:8329 /home/alice/train.py "
      "/home/bob\n");
  EXPECT_EQ(t,
            "MAC 02:00:00:00:00:01 / 02:00:00:00:00:01, ip 192.0.2.1/24 2001:db8::1%eth2 "
            "[2001:db8::2]:22 2001:db8::3 /home/user1/train.py /home/user2\n");
  EXPECT_EQ(r.counts().at("mac").values, 1);
  EXPECT_EQ(r.counts().at("mac").replacements, 2);
  EXPECT_EQ(r.counts().at("ip").values, 4);
  EXPECT_EQ(r.counts().at("home-path").values, 2);
}

TEST(CaptureRootTest, SavedTreeRunsNoCommandsAndCopiesWhatTheTreeHolds) {
  const auto dir = fresh_dir("root");
  ::setenv("GPUVET_FAKE_NVML_SCENARIO",
           (std::string(GPUVET_TEST_DATA) + "/scenarios/h200-1gpu-idle.json").c_str(), 1);
  const std::string root = std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-2numa-4gpu";
  auto fsys = make_rooted_file_system(root);
  auto clock = make_system_clock();
  CountingRunner runner;
  CollectOptions o;
  o.root = root;
  o.nvml_library = GPUVET_FAKE_NVML;
  o.pressure_window = std::chrono::milliseconds(0);
  CaptureOptions c;
  c.out_dir = dir.string();
  auto s = capture_bundle(c, o, Env{*fsys, runner, *clock});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(runner.calls, 0);
  EXPECT_EQ(s.value().not_run, 21);  // pressure.txt: several files, only run live
  EXPECT_FALSE(fs::exists(dir / "lscpu.txt"));
  EXPECT_FALSE(fs::exists(dir / "dmesg.txt"));
  EXPECT_EQ(slurp(dir / "nvidia-driver-params.txt"),
            "$ cat /proc/driver/nvidia/params\n" + slurp(root + "/proc/driver/nvidia/params"));
  auto manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
  EXPECT_EQ(manifest["commands_run"].get<std::string>().rfind("no: ", 0), 0u);
  EXPECT_EQ(manifest["root"], root);
  int not_run = 0;
  for (const auto& cmd : manifest["commands"]) not_run += cmd["status"] == "not run (--root)";
  EXPECT_EQ(not_run, 21);
  // Read back, the bundle is one machine: this machine's CPU does not contradict the tree's.
  auto back = import::import_path(dir.string());
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back.value().host.cpu_model, "Intel(R) Xeon(R) Gold 6434");
  for (const auto& n : back.value().notes) EXPECT_EQ(n.find("cpu_model"), std::string::npos) << n;
  fs::remove_all(dir);
}

// Writes through the real writer, but fails one file as a full disk would.
class FullDiskWriter final : public FileWriter {
 public:
  explicit FullDiskWriter(std::string failing) : failing_(std::move(failing)) {}
  Status write_file(const std::string& path, const std::string& data) const override {
    if (fs::path(path).filename() == failing_) {
      // Like a close(2) that reports ENOSPC: part of the file is there.
      std::ofstream(path) << data.substr(0, data.size() / 2);
      return Status::unavailable("No space left on device");
    }
    return real_->write_file(path, data);
  }

 private:
  std::string failing_;
  std::unique_ptr<FileWriter> real_ = make_posix_file_writer();
};

std::vector<std::string> entries_of(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename());
  return out;
}

TEST(CaptureWriteTest, AFailedWriteNamesTheFileAndLeavesNoBundle) {
  for (const std::string failing : {"nvidia-smi-L.txt", "gpuvet-facts.json", "manifest.json"}) {
    const auto parent = fresh_dir("full");
    for (bool preexisting_empty : {false, true}) {
      const auto dir = parent / "b1";
      if (preexisting_empty) fs::create_directories(dir);
      fs::create_directories(parent);
      ::setenv("GPUVET_FAKE_NVML_SCENARIO",
               (std::string(GPUVET_TEST_DATA) + "/scenarios/h200-1gpu-idle.json").c_str(), 1);
      auto fsys = make_rooted_file_system("/");
      auto clock = make_system_clock();
      FakeNode node;
      CollectOptions o;
      o.root = std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-1gpu-vm";
      o.nvml_library = GPUVET_FAKE_NVML;
      o.pressure_window = std::chrono::milliseconds(0);
      CaptureOptions c;
      c.out_dir = dir.string();
      c.run_commands_with_root = true;
      FullDiskWriter writer(failing);
      auto r = capture_bundle_with(c, o, Env{*fsys, node, *clock}, writer);
      ASSERT_FALSE(r.is_ok()) << failing;
      EXPECT_NE(r.status().message().find((dir / failing).string() +
                                          ": write failed: No space left on device"),
                std::string::npos)
          << r.status().message();
      // Nothing under OUTDIR's name but the empty directory the user made, no temporary left.
      if (preexisting_empty) {
        EXPECT_TRUE(fs::is_directory(dir));
        EXPECT_TRUE(fs::is_empty(dir));
        EXPECT_EQ(entries_of(parent), std::vector<std::string>{"b1"});
        fs::remove(dir);
      } else {
        EXPECT_TRUE(entries_of(parent).empty()) << ::testing::PrintToString(entries_of(parent));
      }
    }
    fs::remove_all(parent);
  }
}

TEST(CaptureWriteTest, TheBundleIsCompleteAndKeepsTheUsualPermissions) {
  const auto parent = fresh_dir("perm");
  fs::create_directories(parent);
  auto b = capture(false);
  ASSERT_TRUE(b.summary.is_ok());
  // As a plain mkdir would have made it (the umask applies), not mkdtemp's 0700.
  EXPECT_EQ(fs::status(b.dir).permissions(), fs::status(parent).permissions());
  for (const auto& f : b.summary.value().files) EXPECT_TRUE(fs::exists(b.dir / f)) << f;
  for (const auto& e : entries_of(fs::temp_directory_path()))
    EXPECT_EQ(e.find("." + b.dir.filename().string() + ".gpuvet-"), std::string::npos) << e;
  fs::remove_all(b.dir);
  fs::remove_all(parent);
}

}  // namespace
}  // namespace gpuvet::bundle
