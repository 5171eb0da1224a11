#include "probe/kernel_log_source.h"
#include "fixture_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gpuvet::probe {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kFixtureBoot = 1764583200;  // btime in the fixture's /proc/stat

std::string fixture_root() { return std::string(GPUVET_TEST_DATA) + "/fixtures/kernel-log/root"; }

// A CommandRunner that answers from a canned result and records what it was asked to run.
class FakeRunner final : public CommandRunner {
 public:
  explicit FakeRunner(Result<CommandResult> answer) : answer_(std::move(answer)) {}
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                            std::size_t) const override {
    calls.push_back(argv);
    timeouts.push_back(timeout);
    return answer_;
  }
  mutable std::vector<std::vector<std::string>> calls;
  mutable std::vector<std::chrono::milliseconds> timeouts;

 private:
  Result<CommandResult> answer_;
};

class FakeKmsg final : public KmsgReader {
 public:
  explicit FakeKmsg(Result<std::string> answer) : answer_(std::move(answer)) {}
  Result<std::string> read_all(std::chrono::milliseconds) const override { return answer_; }

 private:
  Result<std::string> answer_;
};

using testing::exited;

using TempDirBase = testing::TempDir;
struct TempDir : TempDirBase {
  TempDir() : TempDirBase("gpuvet-kmsg") {}
};

const CommandResult never_run = exited(0, "");

TEST(KernelLogSource, ReadsFixtureKmsgUnderRoot) {
  auto fs = make_rooted_file_system(fixture_root());
  auto kmsg = make_rooted_kmsg_reader(fixture_root());
  FakeRunner runner(never_run);
  KernelLog log = read_live_kernel_log(*fs, *kmsg, runner, 2s);
  EXPECT_TRUE(runner.calls.empty());
  EXPECT_EQ(log.source, "/dev/kmsg");
  EXPECT_TRUE(log.readable);
  EXPECT_FALSE(log.why_unreadable);
  ASSERT_EQ(log.xids.size(), 2u);
  EXPECT_EQ(log.xids[0].code, 79);
  EXPECT_EQ(log.xids[0].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(log.xids[0].pid, 1234);
  EXPECT_EQ(log.xids[0].process, "python3");
  EXPECT_DOUBLE_EQ(*log.xids[0].uptime_s, 5000.12346);
  EXPECT_EQ(log.xids[0].unix_time, kFixtureBoot + 5000);
  EXPECT_EQ(log.xids[0].message, "GPU has fallen off the bus.");
  EXPECT_EQ(log.xids[1].code, 48);
  EXPECT_EQ(log.xids[1].pci_bus_id, "0000:86:00.0");
  EXPECT_EQ(log.xids[1].process, "train worker");
  EXPECT_EQ(log.xids[1].unix_time, kFixtureBoot + 6000);
  ASSERT_EQ(log.fallen_off_bus.size(), 3u);
  EXPECT_EQ(log.fallen_off_bus[1],
            "[ 5000.123470] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.");
  EXPECT_EQ(log.fallen_off_bus[2],
            "[ 6000.000100] NVRM: The NVIDIA GPU 0000:af:00.0 (PCI ID: 10de:2330) installed in "
            "this system has fallen off the bus and is not responding to commands.");
}

TEST(KernelLogSource, BootTimeFromProcStat) {
  auto fs = make_rooted_file_system(fixture_root());
  EXPECT_EQ(read_boot_unix_time(*fs), kFixtureBoot);
  TempDir empty;
  auto none = make_rooted_file_system(empty.path());
  EXPECT_FALSE(read_boot_unix_time(*none));
  empty.write("proc/stat", "cpu 1 2 3\nbtime garbage\n");
  EXPECT_FALSE(read_boot_unix_time(*none));
}

TEST(KernelLogSource, PermissionDeniedFallsBackToDmesg) {
  auto fs = make_rooted_file_system(fixture_root());
  FakeKmsg kmsg(Status::permission_denied("/dev/kmsg: Operation not permitted"));
  FakeRunner runner(
      exited(0,
             "[    0.000000] Linux version 6.8.0\n"
             "[  100.500000] NVRM: Xid (PCI:0000:3b:00): 13, pid=321, name=python3, Graphics SM "
             "Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address\n"));
  KernelLog log = read_live_kernel_log(*fs, kmsg, runner, 1500ms);
  ASSERT_EQ(runner.calls.size(), 1u);
  EXPECT_EQ(runner.calls[0], std::vector<std::string>{"dmesg"});
  EXPECT_EQ(runner.timeouts[0], 1500ms);
  EXPECT_EQ(log.source, "dmesg");
  EXPECT_TRUE(log.readable);
  EXPECT_FALSE(log.why_unreadable);
  ASSERT_EQ(log.xids.size(), 1u);
  EXPECT_EQ(log.xids[0].code, 13);
  EXPECT_EQ(log.xids[0].pid, 321);
  EXPECT_DOUBLE_EQ(*log.xids[0].uptime_s, 100.5);
  EXPECT_EQ(log.xids[0].unix_time, kFixtureBoot + 100);
}

TEST(KernelLogSource, BothRefusedIsUnreadableWithReasons) {
  auto fs = make_rooted_file_system(fixture_root());
  FakeKmsg kmsg(Status::permission_denied("/dev/kmsg: Operation not permitted"));
  FakeRunner runner(exited(1, "", "dmesg: read kernel buffer failed: Operation not permitted\n"));
  KernelLog log = read_live_kernel_log(*fs, kmsg, runner, 1s);
  EXPECT_FALSE(log.readable);
  ASSERT_TRUE(log.why_unreadable);
  EXPECT_EQ(*log.why_unreadable,
            "/dev/kmsg: permission denied; dmesg: exit 1: dmesg: read kernel buffer failed: "
            "Operation not permitted");
  EXPECT_TRUE(log.xids.empty());
  EXPECT_TRUE(log.fallen_off_bus.empty());
}

TEST(KernelLogSource, DmesgTimeoutIsUnreadableWithReason) {
  auto fs = make_rooted_file_system(fixture_root());
  FakeKmsg kmsg(Status::permission_denied("/dev/kmsg: Operation not permitted"));
  CommandResult r;
  r.timed_out = true;
  r.exit_code = -1;
  r.out = "[    1.0] partial";
  FakeRunner runner(r);
  KernelLog log = read_live_kernel_log(*fs, kmsg, runner, 500ms);
  EXPECT_FALSE(log.readable);
  EXPECT_EQ(log.why_unreadable, "/dev/kmsg: permission denied; dmesg: timed out after 500 ms");
}

TEST(KernelLogSource, NoKmsgAndNoDmesgBinary) {
  TempDir empty;
  auto fs = make_rooted_file_system(empty.path());
  auto kmsg = make_rooted_kmsg_reader(empty.path() + "/");
  FakeRunner runner(Status::not_found("dmesg: No such file or directory"));
  KernelLog log = read_live_kernel_log(*fs, *kmsg, runner, 1s);
  EXPECT_FALSE(log.readable);
  EXPECT_EQ(log.why_unreadable, "/dev/kmsg: not found; dmesg: not found");
}

TEST(KernelLogSource, DmesgExitWithoutStderr) {
  auto fs = make_rooted_file_system(fixture_root());
  FakeKmsg kmsg(Status::unavailable("/x/dev/kmsg: Input/output error"));
  FakeRunner runner(exited(2, ""));
  KernelLog log = read_live_kernel_log(*fs, kmsg, runner, 1s);
  EXPECT_FALSE(log.readable);
  EXPECT_EQ(log.why_unreadable,
            "/dev/kmsg: unavailable: /x/dev/kmsg: Input/output error; dmesg: exit 2");
}

TEST(KernelLogSource, FileReaderReadsPlainFilesAndHonoursTheCap) {
  TempDir dir;
  const std::string content = "6,1,100,-;hello\n6,2,200,-;world\n";
  const std::string path = dir.write("kmsg", content);
  auto whole = make_kmsg_reader(path)->read_all(1s);
  ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();
  EXPECT_EQ(whole.value(), content);
  auto capped = make_kmsg_reader(path, 10)->read_all(1s);
  ASSERT_TRUE(capped.is_ok());
  EXPECT_EQ(capped.value(), content.substr(0, 10));
  // Larger than one read chunk.
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "6," + std::to_string(i) + ",1,-;line\n";
  const std::string big_path = dir.write("big", big);
  auto all = make_kmsg_reader(big_path)->read_all(5s);
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(all.value(), big);
}

TEST(KernelLogSource, FileReaderErrors) {
  TempDir dir;
  auto missing = make_kmsg_reader(dir.path() + "/nope")->read_all(1s);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto directory = make_kmsg_reader(dir.path())->read_all(1s);
  ASSERT_FALSE(directory.is_ok());
  EXPECT_EQ(directory.status().code(), StatusCode::kUnavailable);
  if (::geteuid() != 0) {
    const std::string locked = dir.write("locked", "6,1,1,-;x\n");
    ASSERT_EQ(::chmod(locked.c_str(), 0), 0);
    auto denied = make_kmsg_reader(locked)->read_all(1s);
    ASSERT_FALSE(denied.is_ok());
    EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied);
  }
}

// The real character device: each read returns one record and EAGAIN ends the buffer, so the
// reader must come back well before its deadline.
TEST(KernelLogSource, LiveDevKmsgEndsAtEagain) {
  auto reader = make_kmsg_reader("/dev/kmsg");
  const auto start = std::chrono::steady_clock::now();
  auto got = reader->read_all(20s);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (!got.is_ok()) {
    if (got.status().code() == StatusCode::kNotFound) GTEST_SKIP() << "no /dev/kmsg here";
    EXPECT_EQ(got.status().code(), StatusCode::kPermissionDenied) << got.status().to_string();
    return;
  }
  EXPECT_LT(elapsed, 10s);
  if (!got.value().empty()) {
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(got.value()[0])));
    EXPECT_NE(got.value().find(';'), std::string::npos);
    EXPECT_EQ(got.value().back(), '\n');
  }
}

}  // namespace
}  // namespace gpuvet::probe
