#include "gpuvet/env.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

TEST(EnvTest, RootedFileSystemReadsUnderRoot) {
  auto root = fs::temp_directory_path() / ("gpuvet-env-" + std::to_string(::getpid()));
  fs::create_directories(root / "proc/sys/kernel");
  std::ofstream(root / "proc/sys/kernel/hostname") << "node17\n";
  fs::create_directories(root / "sys/devices/pci0000:00/0000:00:01.0");
  fs::create_directories(root / "sys/bus/pci/devices");
  fs::create_directory_symlink("../../../devices/pci0000:00/0000:00:01.0",
                               root / "sys/bus/pci/devices/0000:00:01.0");

  auto rfs = make_rooted_file_system(root.string());
  auto host = rfs->read_file("/proc/sys/kernel/hostname");
  ASSERT_TRUE(host.is_ok());
  EXPECT_EQ(host.value(), "node17\n");
  EXPECT_EQ(rfs->read_file("/proc/nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rfs->read_file("/proc").status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(rfs->real_path("/sys/bus/pci/devices/0000:00:01.0").value(),
            "/sys/devices/pci0000:00/0000:00:01.0");
  EXPECT_EQ(rfs->list_dir("/proc/sys/kernel").value(), std::vector<std::string>{"hostname"});
  EXPECT_TRUE(rfs->exists("/proc/sys"));
  auto capped = rfs->read_file("/proc/sys/kernel/hostname", 3);
  EXPECT_EQ(capped.value(), "nod");
  fs::remove_all(root);
}

TEST(EnvTest, RunnerCapturesOutputAndExitCode) {
  auto runner = make_process_runner();
  auto r = runner->run({"sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(5));
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value().out, "out\n");
  EXPECT_EQ(r.value().err, "err\n");
  EXPECT_EQ(r.value().exit_code, 3);
  EXPECT_FALSE(r.value().timed_out);
}

TEST(EnvTest, RunnerKillsAHungChildAndItsChildren) {
  auto runner = make_process_runner();
  auto start = std::chrono::steady_clock::now();
  // The grandchild keeps stdout open: a naive reader would wait for it forever.
  auto r = runner->run({"sh", "-c", "sleep 30 & sleep 30"}, std::chrono::milliseconds(300));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r.value().timed_out);
  EXPECT_EQ(r.value().exit_code, -1);
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST(EnvTest, RunnerReportsMissingProgram) {
  auto runner = make_process_runner();
  auto r = runner->run({"/nonexistent/gpuvet-no-such-tool"}, std::chrono::seconds(1));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(EnvTest, RunnerCapsOutput) {
  auto runner = make_process_runner();
  auto r = runner->run({"sh", "-c", "head -c 100000 /dev/zero"}, std::chrono::seconds(5), 1000);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value().out.size(), 1000u);
}

TEST(EnvTest, RunningChildrenAreListedForTheSignalHandlerUntilReaped) {
  const int before = running_child_groups();
  auto runner = make_process_runner();
  std::thread t([&] { (void)runner->run({"sleep", "2"}, std::chrono::seconds(30)); });
  bool listed = false;
  for (int i = 0; i < 1000 && !listed; ++i) {  // at most ~10 s
    listed = running_child_groups() > before;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  t.join();
  EXPECT_TRUE(listed);
  EXPECT_EQ(running_child_groups(), before);
  // A failed start and a deadline kill leave no entry behind either.
  (void)runner->run({"/nonexistent/gpuvet-no-such-tool"}, std::chrono::seconds(5));
  (void)runner->run({"sleep", "30"}, std::chrono::milliseconds(100));
  EXPECT_EQ(running_child_groups(), before);
}

}  // namespace
}  // namespace gpuvet
