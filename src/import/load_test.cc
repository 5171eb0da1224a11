#include "import/load.h"

#include "import/importer.h"

#include "fixture_util.h"
#include "large_inputs.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuvet::import {
namespace {

TEST(SessionSplitTest, SplitsAtKnownCommandPrompts) {
  const std::string text =
      "user@node7:~$ nvidia-smi topo -m\n"
      "\tGPU0\tGPU1\n"
      "GPU0\t X \tNV18\n"
      "$ dmesg -T | grep -i xid\n"
      "[Mon Dec  1 10:00:00 2025] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen "
      "off the bus.\n"
      "[root@n1 ~]# lscpu\n"
      "Architecture: x86_64\n";
  auto parts = split_session(text);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].command, "nvidia-smi topo -m");
  EXPECT_NE(parts[0].text.find("NV18"), std::string_view::npos);
  EXPECT_EQ(parts[1].command, "dmesg -T | grep -i xid");
  EXPECT_EQ(parts[2].command, "lscpu");
}

TEST(SessionSplitTest, CommentLinesOfOutputsAreNotPrompts) {
  // pmon and nccl-tests print lines starting with "# ": not commands.
  const std::string text =
      "# gpu         pid  type    sm   mem\n# Idx           #     C     %     %\n    0      1234   "
      "  C    98    40\n";
  auto parts = split_session(text);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].command, "");
  EXPECT_EQ(parts[0].text.size(), text.size());
}

TEST(ImportTextTest, UnrecognisedIsANoteNotAFailure) {
  auto f = import_text("hello world\nthis is not a GPU tool output\n", "notes.txt");
  ASSERT_EQ(f.imported.size(), 1u);
  EXPECT_EQ(f.imported[0].format, "unrecognised");
  ASSERT_FALSE(f.notes.empty());
  EXPECT_NE(f.notes[0].find("notes.txt: not recognised"), std::string::npos);
}

TEST(ImportTextTest, KernelLogIsRecognisedByContent) {
  auto f = import_text(
      "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off "
      "the bus.\n",
      "out.txt");
  ASSERT_EQ(f.imported.size(), 1u);
  EXPECT_EQ(f.imported[0].format, "kernel-log");
  ASSERT_EQ(f.kernel_log.xids.size(), 1u);
  EXPECT_EQ(f.kernel_log.xids[0].code, 79);
}

TEST(ImportTextTest, GarbageNeverCrashes) {
  std::string junk;
  for (int i = 0; i < 1 << 20; ++i) junk.push_back(static_cast<char>((i * 2654435761u) >> 24));
  auto f = import_text(junk, "junk.bin");
  EXPECT_FALSE(f.imported.empty());
}

TEST(MergeTest, SameGpuByBusIdAndConflictsAreNoted) {
  Facts a, b;
  GpuFacts g;
  g.index = 0;
  g.pci_bus_id = "0000:3b:00.0";
  g.name = "NVIDIA H100 80GB HBM3";
  g.pcie.width_max = 16;
  a.gpus.push_back(g);
  GpuFacts h = g;
  h.index = 0;
  h.pcie.width_max = 8;  // a different input disagrees
  h.clocks.sm_mhz = 1980;
  b.gpus.push_back(h);
  merge_facts(a, std::move(b), "second.txt");
  ASSERT_EQ(a.gpus.size(), 1u);
  EXPECT_EQ(a.gpus[0].pcie.width_max, 16);
  EXPECT_EQ(a.gpus[0].clocks.sm_mhz, 1980);
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("GPU0 pcie.width_max is 16"), std::string::npos) << a.notes[0];
  EXPECT_NE(a.notes[0].find("second.txt"), std::string::npos);
}

TEST(MergeTest, IndexOnlyInputJoinsTheNamedGpu) {
  Facts a, b;
  GpuFacts g;
  g.index = 1;
  g.pci_bus_id = "0000:3b:00.0";
  a.gpus.push_back(g);
  GpuFacts t;  // e.g. from topo -m: index and CPU affinity only
  t.index = 1;
  t.cpu_affinity = {0, 1, 2};
  b.gpus.push_back(t);
  merge_facts(a, std::move(b), "topo.txt");
  ASSERT_EQ(a.gpus.size(), 1u);
  EXPECT_EQ(a.gpus[0].cpu_affinity.size(), 3u);
}

// pmon knows GPUs by index only: in a session with a fuller description of the same GPUs, in
// either order, they merge instead of doubling.
TEST(MergeTest, PmonIndexOnlyGpusJoinTheQueriedOnes) {
  const std::string pmon =
      "$ nvidia-smi pmon -c 1\n"
      "# gpu        pid  type    sm   mem   enc   dec   command\n"
      "# Idx          #   C/G     %     %     %     %   name\n"
      "    0      24819    C     72    61     0     0   python\n"
      "    1          -    -      -     -     -     -   -\n";
  const std::string query =
      "$ nvidia-smi --query-gpu=index,pci.bus_id,name --format=csv\n"
      "index, pci.bus_id, name\n"
      "0, 00000000:18:00.0, NVIDIA H100 80GB HBM3\n"
      "1, 00000000:2A:00.0, NVIDIA H100 80GB HBM3\n";
  for (const std::string& session : {pmon + query, query + pmon}) {
    Facts f = import_text(session, "ticket.txt");
    ASSERT_EQ(f.imported.size(), 2u);
    for (const auto& i : f.imported) EXPECT_NE(i.format, "unrecognised") << i.path;
    ASSERT_EQ(f.gpus.size(), 2u);
    EXPECT_EQ(f.gpus[0].index, 0);
    EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:18:00.0");
    EXPECT_EQ(f.gpus[1].index, 1);
    EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:2a:00.0");
    EXPECT_EQ(f.gpus[1].name, "NVIDIA H100 80GB HBM3");
    ASSERT_EQ(f.processes.size(), 1u);
    EXPECT_EQ(f.processes[0].gpu, 0);
    for (const auto& n : f.notes) EXPECT_EQ(n.find("conflict"), std::string::npos) << n;
  }
}

TEST(MergeTest, SeriesBindingsScaleRunsAndClockAreKept) {
  Facts a, b;
  a.host.uptime_s = 100.5;
  GpuSample s;
  s.gpu = 0;
  s.t_s = 1;
  a.samples.push_back(s);
  b.host.uptime_s = 200;
  b.host.collected_unix = 1764669600;
  b.samples.push_back(s);
  b.numa_bindings.push_back({std::nullopt, {0, 1}, {0}, "numactl --show"});
  ScaleRun run;
  run.workload = "train";
  run.gpus = 4;
  b.scale_runs.push_back(run);
  merge_facts(a, std::move(b), "second.txt");
  EXPECT_EQ(a.host.uptime_s, 100.5);  // the first input's
  EXPECT_EQ(a.host.collected_unix, 1764669600);
  EXPECT_EQ(a.samples.size(), 2u);
  ASSERT_EQ(a.numa_bindings.size(), 1u);
  EXPECT_EQ(a.numa_bindings[0].cpus, (std::vector<int>{0, 1}));
  ASSERT_EQ(a.scale_runs.size(), 1u);
  EXPECT_EQ(a.scale_runs[0].gpus, 4);
}

TEST(ImportPathTest, DirectoryIsWalkedAndNamesDoNotMatter) {
  auto dir =
      std::filesystem::temp_directory_path() / ("gpuvet-import-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "gpu0.png")
      << "[ 10.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=7, name=a.out, Graphics Exception\n";
  std::ofstream(dir / "readme.md") << "# my notes\n";
  auto f = import_path(dir.string());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f.value().kernel_log.xids.size(), 1u);
  EXPECT_EQ(f.value().imported.size(), 2u);
  std::filesystem::remove_all(dir);
}

TEST(ImportPathTest, MissingPathIsNotFound) {
  EXPECT_EQ(import_path("/nonexistent/gpuvet-bundle").status().code(), StatusCode::kNotFound);
}

namespace fs = std::filesystem;
using gpuvet::testing::all_notes;
using gpuvet::testing::has_note;

// A fresh directory under the temp dir, removed (permissions restored first) at the end.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag)
      : path_(fs::temp_directory_path() / ("gpuvet-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
    fs::permissions(path_, fs::perms::all & ~(fs::perms::group_write | fs::perms::others_write));
  }
  ~ScratchDir() {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path_, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec))
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((path_ / rel).parent_path());
    std::ofstream(path_ / rel, std::ios::binary) << text;
  }

 private:
  fs::path path_;
};

constexpr const char* kLscpu =
    "Architecture:        x86_64\nCPU(s):              64\nModel name:          AMD EPYC\n";
constexpr const char* kDmesg =
    "[ 10.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=7, name=a.out, Graphics Exception\n";

// Runs `body` in a child process that must exit 0 within `limit_s` seconds: a merge that
// grows with the square of its input never gets there. The bound is generous; no timing is
// asserted beyond it.
template <class Body>
void in_child_within(unsigned limit_s, Body body) {
  EXPECT_EXIT(
      {
        ::alarm(limit_s);
        body();
        std::fflush(stderr);
        std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(ImportScaleTest, TopologyOf1024GpusImportsEveryPair) {
  const std::string text = testing::topo_matrix(1024);
  in_child_within(60, [&] {
    const Facts f = import_text(text, "topo1024.txt");
    EXPECT_EQ(f.gpus.size(), 1024u);
    EXPECT_EQ(f.pairs.size(), 1024u * 1023u / 2u);
  });
}

TEST(ImportScaleTest, HundredThousandPmonRowsInEachOfTwoInputsKeepEveryProcess) {
  // Two samples of 100 000 processes, half of them the same: each (gpu, pid) once.
  const std::string text = testing::pmon_two_samples_of_100k();
  in_child_within(60, [&] {
    const Facts f = import_text(text, "pmon.txt");
    EXPECT_EQ(f.processes.size(), 150000u);
    EXPECT_EQ(f.gpus.size(), 8u);
  });
}

// The bounds on garbage are said when a real-looking input passes them, never silent.
TEST(ImportScaleTest, GpusPastTheBoundOfATopologyAreSaidAndNotTakenForNics) {
  const Facts f = import_text(testing::topo_matrix(1030), "topo.txt");
  EXPECT_EQ(f.gpus.size(), 1024u);
  EXPECT_TRUE(has_note(f, "topo -m: 6 GPU column(s) past GPU1023 not read"));
  EXPECT_TRUE(std::none_of(f.nic_paths.begin(), f.nic_paths.end(),
                           [](const NicPath& p) { return p.nic.rfind("GPU", 0) == 0; }));
}

TEST(ImportScaleTest, PmonRowsPastTheBoundAreSaid) {
  const Facts f =
      import_text(testing::pmon_header() + testing::pmon_rows(1000, 100005), "pmon.txt");
  EXPECT_EQ(f.processes.size(), 100000u);
  EXPECT_TRUE(has_note(f, "pmon: 5 rows of processes past the first 100000 not read"));
}

TEST(ImportPathTest, ManyFilesAreCutInNameOrderAndTheCutIsNoted) {
  ScratchDir dir("many");
  for (int i = 0; i < 300; ++i) dir.write("z-junk-" + std::to_string(i) + ".txt", "junk\n");
  dir.write("a-real.txt", kDmesg);
  ImportOptions options;
  options.max_files = 1;
  auto f = import_path(dir.path().string(), options);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f.value().kernel_log.xids.size(), 1u);
  ASSERT_EQ(f.value().imported.size(), 1u);
  EXPECT_NE(f.value().imported[0].path.find("a-real.txt"), std::string::npos);
  EXPECT_TRUE(has_note(f.value(), "300 files not read (more than 1)")) << all_notes(f.value());
  // The cut is an input problem (the verdict is INCOMPLETE), not only a note (D7).
  ASSERT_EQ(f.value().input_problems.size(), 1u);
  EXPECT_NE(f.value().input_problems[0].find("300 files not read"), std::string::npos);
}

TEST(ImportPathTest, BundleWithoutManifestIsAnInputProblem) {
  ScratchDir dir("bundle");
  dir.write("lscpu.txt", kLscpu);
  dir.write("dmesg.txt", kDmesg);
  dir.write("nvidia-smi-q.txt", "");
  dir.write("numactl-show.txt", "");
  auto f = import_path(dir.path().string());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ(f.value().input_problems.size(), 1u);
  EXPECT_NE(f.value().input_problems[0].find("has no manifest.json"), std::string::npos);
  EXPECT_TRUE(has_note(f.value(), "has no manifest.json")) << all_notes(f.value());

  // The same files with a manifest: complete.
  dir.write("manifest.json", "{\"schema\": \"gpuvet.capture/1\", \"commands\": []}\n");
  f = import_path(dir.path().string());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_TRUE(f.value().input_problems.empty());

  // gpuvet-facts.json alone is a capture's file too.
  ScratchDir facts_only("bundle-facts");
  facts_only.write("gpuvet-facts.json", "{}\n");
  facts_only.write("notes.txt", kLscpu);
  f = import_path(facts_only.path().string());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f.value().input_problems.size(), 1u);
}

TEST(ImportPathTest, SavedOutputsUnderTheirOwnNamesAreNotABundle) {
  ScratchDir dir("own-names");
  dir.write("lscpu.txt", kLscpu);
  dir.write("dmesg.txt", kDmesg);
  auto f = import_path(dir.path().string());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_TRUE(f.value().input_problems.empty());
}

TEST(ImportPathTest, FileOverTheSizeLimitSaysSo) {
  ScratchDir dir("big");
  dir.write("big.txt", std::string(4096, 'x'));
  ImportOptions options;
  options.max_file_bytes = 1024;
  auto f = import_path((dir.path() / "big.txt").string(), options);
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("over the"), std::string::npos) << f.status().message();
  EXPECT_EQ(f.status().message().find("no readable file"), std::string::npos);
  // A directory of such files says it too.
  f = import_path(dir.path().string(), options);
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("over the"), std::string::npos) << f.status().message();
}

TEST(ImportPathTest, PathErrorsKeepTheirOwnReason) {
  ScratchDir dir("notdir");
  dir.write("file.txt", kLscpu);
  auto f = import_path((dir.path() / "file.txt" / "x.txt").string());
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("Not a directory"), std::string::npos)
      << f.status().message();
}

// Permission errors need a user that permissions apply to: as root the check runs in a child
// that has dropped to nobody.
void drop_root_or_exit() {
  if (::geteuid() != 0) return;
  if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) {
    std::fprintf(stderr, "cannot drop to uid 65534\n");
    std::_Exit(2);
  }
}

TEST(ImportPathTest, PermissionErrorsSayPermissionDenied) {
  ScratchDir dir("perm");
  dir.write("readable/lscpu.txt", kLscpu);
  dir.write("closed/x.txt", kDmesg);
  dir.write("readable/inner/x.txt", kDmesg);
  fs::permissions(dir.path() / "closed", fs::perms::none);
  fs::permissions(dir.path() / "readable" / "inner", fs::perms::none);
  const std::string root = dir.path().string();
  EXPECT_EXIT(
      {
        drop_root_or_exit();
        int bad = 0;
        auto expect = [&](bool ok, const std::string& what) {
          if (!ok) {
            std::fprintf(stderr, "%s\n", what.c_str());
            ++bad;
          }
        };
        // A file under a directory that cannot be entered.
        auto f = import_path(root + "/closed/x.txt");
        expect(!f.is_ok() && f.status().code() == StatusCode::kPermissionDenied &&
                   f.status().message().find("Permission denied") != std::string::npos,
               "file: " + f.status().to_string());
        // The directory itself.
        f = import_path(root + "/closed");
        expect(!f.is_ok() && f.status().code() == StatusCode::kPermissionDenied &&
                   f.status().message().find("Permission denied") != std::string::npos,
               "dir: " + f.status().to_string());
        // A subdirectory inside a readable one: read what can be read, note the rest.
        f = import_path(root + "/readable");
        expect(f.is_ok() && has_note(f.value(), "inner: directory not read: Permission denied"),
               "subdir: " + (f.is_ok() ? all_notes(f.value()) : f.status().to_string()));
        std::fflush(stderr);
        std::_Exit(bad);
      },
      ::testing::ExitedWithCode(0), "");
  fs::permissions(dir.path() / "closed", fs::perms::owner_all);
  fs::permissions(dir.path() / "readable" / "inner", fs::perms::owner_all);
}

TEST(MergeTest, TwoUuidsOnOneBusIdInOneInputStayTwoGpusAndAreAProblem) {
  const std::string csv =
      "index, name, pci.bus_id, uuid\n"
      "0, NVIDIA H200, 00000000:3B:00.0, GPU-11111111-1111-1111-1111-111111111111\n"
      "1, NVIDIA H200, 00000000:3B:00.0, GPU-22222222-2222-2222-2222-222222222222\n";
  const Facts f = import_text(csv, "query.csv");
  ASSERT_EQ(f.imported.size(), 1u);
  ASSERT_EQ(f.imported[0].format, "nvidia-smi-query-csv");
  ASSERT_EQ(f.gpus.size(), 2u) << all_notes(f);
  EXPECT_NE(f.gpus[0].uuid, f.gpus[1].uuid);
  ASSERT_EQ(f.input_problems.size(), 1u) << all_notes(f);
  EXPECT_NE(f.input_problems[0].find("claim PCI bus id 0000:3b:00.0"), std::string::npos)
      << f.input_problems[0];
  EXPECT_TRUE(has_note(f, "claim PCI bus id 0000:3b:00.0")) << all_notes(f);
}

TEST(MergeTest, OneGpuSeenTwiceInOneInputIsStillOne) {
  // The same board in -q and -L parts of one paste: joined, no problem.
  const std::string csv =
      "index, name, pci.bus_id, uuid\n"
      "0, NVIDIA H200, 00000000:3B:00.0, GPU-11111111-1111-1111-1111-111111111111\n";
  const Facts f =
      import_text("$ nvidia-smi --query-gpu=index,name,pci.bus_id,uuid --format=csv\n" + csv +
                      "$ nvidia-smi --query-gpu=index,name,pci.bus_id,uuid "
                      "--format=csv\n" +
                      csv,
                  "paste.txt");
  EXPECT_EQ(f.gpus.size(), 1u) << all_notes(f);
  EXPECT_TRUE(f.input_problems.empty());
}

}  // namespace
}  // namespace gpuvet::import

namespace gpuvet::import {
namespace {

TEST(ImportTextTest, PromptTellsWhichP2pMatrixItIs) {
  const std::string session =
      "root@node:~# nvidia-smi topo -p2p w\n"
      " \tGPU0\tGPU1\t\n"
      " GPU0\tX\tCNS\t\n"
      " GPU1\tCNS\tX\t\n"
      "\n"
      "Legend:\n"
      "\n"
      "  X    = Self\n"
      "  OK   = Status Ok\n"
      "  CNS  = Chipset not supported\n"
      "  GNS  = GPU not supported\n"
      "  TNS  = Topology not supported\n"
      "  NS   = Not supported\n"
      "  U    = Unknown\n";
  auto f = import_text(session, "ticket.txt");
  ASSERT_EQ(f.imported.size(), 1u);
  EXPECT_EQ(f.imported[0].format, "topo-p2p");
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].p2p_write, P2PStatus::kChipsetNotSupported);
  EXPECT_FALSE(f.pairs[0].p2p_read);
}

// `topo -p2p p` behind a `$ ` prompt: the PCIe P2P property, not read (nor only a note).
TEST(ImportTextTest, PromptedPcieP2pMatrixIsThePcieProperty) {
  const std::string session =
      "$ nvidia-smi topo -p2p p\n"
      " \tGPU0\tGPU1\tGPU2\t\n"
      " GPU0\tX\tOK\tCNS\t\n"
      " GPU1\tOK\tX\tCNS\t\n"
      " GPU2\tCNS\tCNS\tX\t\n"
      "\n"
      "Legend:\n"
      "\n"
      "  X    = Self\n"
      "  OK   = Status Ok\n"
      "  CNS  = Chipset not supported\n"
      "  GNS  = GPU not supported\n"
      "  TNS  = Topology not supported\n"
      "  NS   = Not supported\n"
      "  U    = Unknown\n";
  for (const std::string& text : {session, "user@host:~$ " + session.substr(2)}) {
    auto f = import_text(text, "ticket.txt");
    ASSERT_EQ(f.imported.size(), 1u) << text;
    EXPECT_EQ(f.imported[0].format, "topo-p2p");
    ASSERT_EQ(f.pairs.size(), 3u);
    EXPECT_EQ(f.pairs[0].p2p_pcie, P2PStatus::kOk);                   // GPU0-GPU1
    EXPECT_EQ(f.pairs[1].p2p_pcie, P2PStatus::kChipsetNotSupported);  // GPU0-GPU2
    EXPECT_EQ(f.pairs[2].p2p_pcie, P2PStatus::kChipsetNotSupported);  // GPU1-GPU2
    for (const auto& p : f.pairs) {
      EXPECT_FALSE(p.p2p_read);
      EXPECT_FALSE(p.p2p_write);
    }
    for (const auto& n : f.notes) EXPECT_EQ(n.find("taken as P2P read"), std::string::npos) << n;
  }
}

}  // namespace
}  // namespace gpuvet::import

namespace gpuvet::import {
namespace {

TEST(ImportTextTest, DriverFilesFromProc) {
  auto params = import_text(
      "ResmanDebugLevel: 4294967295\nEnableMSI: 1\nNvLinkDisable: 1\nEnableResizableBar: 0\n", "p");
  EXPECT_EQ(params.imported[0].format, "nvidia-driver-params");
  EXPECT_EQ(params.host.nvlink_disabled_by_driver, true);
  auto version = import_text(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
      "(dvs-builder@U22)\n"
      "GCC version:  gcc version 13.3.0\n",
      "v");
  EXPECT_EQ(version.imported[0].format, "nvidia-driver-version");
  EXPECT_EQ(version.host.driver_version.value_or(""), "580.159.04");
  // Every importer takes empty and one-byte inputs (the fuzzer found an empty-input crash).
  for (const auto& imp : importers()) {
    Facts f;
    (void)imp.parse("", f);
    (void)imp.parse("\n", f);
  }
}

}  // namespace
}  // namespace gpuvet::import
