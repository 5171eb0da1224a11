#include "probe/process_binding.h"

#include <gtest/gtest.h>

#include "fakes/file_systems.h"

#include <map>
#include <numeric>
#include <set>

namespace gpuvet::probe {
namespace {

using namespace gpuvet::testing;  // NOLINT: test fakes

ProcessFacts process(int host_pid, int gpu) {
  ProcessFacts p;
  p.host_pid = host_pid;
  p.gpu = gpu;
  return p;
}

TEST(ProcessBindingTest, HostProcessBoundToNodeZero) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  ProcessFacts p = process(5120, 2);
  std::vector<std::string> notes;
  read_process_binding(*fs, p, notes);
  EXPECT_EQ(p.local_pid, 5120);
  EXPECT_EQ(p.ns_pids, std::vector<int>{5120});
  EXPECT_EQ(p.name, "pt_main_thread");
  EXPECT_EQ(p.cpus_allowed, "0-15");
  EXPECT_EQ(p.cpus_allowed_ids, iota_vec(0, 15));
  EXPECT_EQ(p.mems_allowed, "0");
  EXPECT_EQ(p.mems_allowed_ids, std::vector<int>{0});
  EXPECT_TRUE(notes.empty()) << notes.front();
}

TEST(ProcessBindingTest, ContainerisedProcessSeenFromTheHost) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  ProcessFacts p = process(4242, 2);
  p.name = "python";  // what NVML said: kept
  std::vector<std::string> notes;
  read_process_binding(*fs, p, notes);
  EXPECT_EQ(p.local_pid, 4242);
  EXPECT_EQ(p.ns_pids, (std::vector<int>{4242, 17}));
  EXPECT_EQ(p.name, "python");
  EXPECT_EQ(p.cpus_allowed_ids, iota_vec(16, 31));
  EXPECT_EQ(p.mems_allowed, "1");
  EXPECT_EQ(p.mems_allowed_ids, std::vector<int>{1});
  EXPECT_TRUE(notes.empty());
}

TEST(ProcessBindingTest, NestedNamespacePidFoundThroughNSpidScan) {
  // The PID given is the container's 17; /proc/17 does not exist here, but
  // /proc/4242 lists 17 as its PID in the nested namespace.
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  ProcessFacts p = process(17, 3);
  std::vector<std::string> notes;
  read_process_binding(*fs, p, notes);
  EXPECT_EQ(p.local_pid, 4242);
  EXPECT_EQ(p.ns_pids, (std::vector<int>{4242, 17}));
  EXPECT_EQ(p.name, "python3");
  EXPECT_TRUE(notes.empty());
}

TEST(ProcessBindingTest, SameNumberOtherProcessIsNotTaken) {
  // /proc/17 exists but is another process (its NSpid starts with 900): scan.
  MemoryFileSystem fs({
      {"/proc/17/status", "Name:\tbash\nNSpid:\t900\nCpus_allowed_list:\t0\n"},
      {"/proc/4242/status",
       "Name:\tpython3\nNSpid:\t4242\t17\nCpus_allowed_list:\t8-11\nMems_allowed_list:\t0\n"},
      {"/proc/4242/comm", "python3\n"},
      {"/proc/uptime", "1.0 1.0\n"},
  });
  ProcessFacts p = process(17, 0);
  std::vector<std::string> notes;
  read_process_binding(fs, p, notes);
  EXPECT_EQ(p.local_pid, 4242);
  EXPECT_EQ(p.cpus_allowed, "8-11");
  EXPECT_EQ(p.cpus_allowed_ids, (std::vector<int>{8, 9, 10, 11}));
}

TEST(ProcessBindingTest, InvisibleProcessGivesNote) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  ProcessFacts p = process(999999, 0);
  std::vector<std::string> notes;
  read_process_binding(*fs, p, notes);
  EXPECT_FALSE(p.local_pid.has_value());
  EXPECT_TRUE(p.ns_pids.empty());
  EXPECT_FALSE(p.cpus_allowed.has_value());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "pid 999999 (GPU 0) not visible from this PID namespace (gpuvet runs in a "
            "container?): CPU/memory binding unknown");
}

TEST(ProcessBindingTest, PermissionDeniedStatusGivesNoteNotCrash) {
  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  DenyingFileSystem fs(*inner, {"/proc/5120/status"});
  ProcessFacts p = process(5120, 1);
  std::vector<std::string> notes;
  read_process_binding(fs, p, notes);
  EXPECT_FALSE(p.local_pid.has_value());
  EXPECT_FALSE(p.cpus_allowed.has_value());
  EXPECT_TRUE(p.cpus_allowed_ids.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "pid 5120 (GPU 1): /proc/5120/status unreadable (permission denied): CPU/memory "
            "binding unknown");
}

TEST(ProcessBindingTest, UnlistableProcDuringScanGivesNote) {
  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  DenyingFileSystem fs(*inner, {"/proc"}, DenyingFileSystem::kExactPath);
  ProcessFacts p = process(17, 0);
  std::vector<std::string> notes;
  read_process_binding(fs, p, notes);
  EXPECT_FALSE(p.local_pid.has_value());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("not visible from this PID namespace"), std::string::npos);
}

TEST(ProcessBindingTest, GarbageStatusLeavesBindingEmpty) {
  auto fs = make_rooted_file_system(sysroot("sysroot-garbage"));
  ProcessFacts p = process(4242, 0);
  std::vector<std::string> notes;
  read_process_binding(*fs, p, notes);
  EXPECT_EQ(p.local_pid, 4242);  // no NSpid line to check against: its own number
  EXPECT_TRUE(p.ns_pids.empty());
  EXPECT_FALSE(p.name.has_value());          // comm is binary junk
  EXPECT_FALSE(p.cpus_allowed.has_value());  // "garbage"
  EXPECT_TRUE(p.cpus_allowed_ids.empty());
  EXPECT_FALSE(p.mems_allowed.has_value());  // empty
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("binding partly unknown"), std::string::npos);

  // Scan over junk NSpid lines finds nothing and does not crash.
  ProcessFacts q = process(17, 1);
  std::vector<std::string> notes2;
  read_process_binding(*fs, q, notes2);
  EXPECT_FALSE(q.local_pid.has_value());
  ASSERT_EQ(notes2.size(), 1u);
  EXPECT_NE(notes2[0].find("not visible"), std::string::npos);

  ProcessFacts zero = process(0, 2);
  std::vector<std::string> notes3;
  read_process_binding(*fs, zero, notes3);
  EXPECT_FALSE(zero.local_pid.has_value());
  EXPECT_EQ(notes3.size(), 1u);
}

TEST(ProcessBindingTest, ChildPidNamespaceDetection) {
  auto host = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  EXPECT_EQ(in_child_pid_namespace(*host), false);  // /proc/self -> 3100, NSpid 3100
  MemoryFileSystem container(std::map<std::string, std::string>{
      {"/proc/self/status", "Name:\tgpuvet\nNSpid:\t91230\t1\n"}});
  EXPECT_EQ(in_child_pid_namespace(container), true);
  auto garbage = make_rooted_file_system(sysroot("sysroot-garbage"));
  EXPECT_FALSE(in_child_pid_namespace(*garbage).has_value());  // no NSpid line
  DenyingFileSystem denied(*host, {"/proc/self/status"});
  EXPECT_FALSE(in_child_pid_namespace(denied).has_value());
}

TEST(ProcessBindingTest, LiveSelfIsVisible) {
  auto fs = make_rooted_file_system("/");
  auto child = in_child_pid_namespace(*fs);
  (void)child;  // either answer is fine; it must not crash
  auto status = fs->read_file("/proc/self/status");
  if (!status.is_ok()) GTEST_SKIP() << "no /proc here";
  auto self = fs->real_path("/proc/self");
  ASSERT_TRUE(self.is_ok());
  int pid = std::stoi(self.value().substr(self.value().rfind('/') + 1));
  ProcessFacts p = process(pid, 0);
  std::vector<std::string> notes;
  read_process_binding(*fs, p, notes);
  EXPECT_EQ(p.local_pid, pid);
  EXPECT_FALSE(p.cpus_allowed_ids.empty());
}

}  // namespace
}  // namespace gpuvet::probe
