// The launch plan: GPUs chosen by index, UUID prefix or bus id; each job bound to its GPU's
// node (never its index), within what gpuvet may use; the command checked before anything
// starts; and `gpuvet ckpt-slot`'s bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpuvet/launch.h"
#include "launch/process_group.h"
#include "launch/test_node.h"

namespace gpuvet {
namespace {

using launch_test::two_node_facts;

LaunchOptions command(std::vector<std::string> argv) {
  LaunchOptions o;
  o.command = std::move(argv);
  return o;
}

const LaunchHost kWholeHost{{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}};

TEST(LaunchPlan, EachJobIsBoundToItsGpusNodeNotItsIndex) {
  // Bug caught: binding job k to node k / (GPUs per node), as bind scripts do.
  auto plan = plan_launch(two_node_facts(), command({"true"}), kWholeHost);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  ASSERT_EQ(plan.value().size(), 4u);
  EXPECT_EQ(plan.value()[0].numa, 1);
  EXPECT_EQ(plan.value()[0].cpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(plan.value()[0].mems, (std::vector<int>{1}));
  EXPECT_EQ(plan.value()[1].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(plan.value()[3].mems, (std::vector<int>{1}));
  for (const auto& j : plan.value()) EXPECT_TRUE(j.notes.empty());
}

TEST(LaunchPlan, TheJobSeesItsGpuByUuidNeverByIndex) {
  auto plan = plan_launch(two_node_facts(), command({"true"}), kWholeHost);
  ASSERT_TRUE(plan.is_ok());
  const JobPlan& j = plan.value()[2];
  auto env = [&](const std::string& k) {
    for (const auto& [key, v] : j.env)
      if (key == k) return v;
    return std::string("(unset)");
  };
  EXPECT_EQ(env("CUDA_VISIBLE_DEVICES"), "GPU-2aaaaaaa-0000-0000-0000-000000000002");
  EXPECT_EQ(env("GPUVET_LOCAL_RANK"), "2");
  EXPECT_EQ(env("GPUVET_NUMA_NODE"), "0");
  EXPECT_EQ(env("NCCL_RAS_ADDR"), "127.0.0.1:28030");  // one RAS port per job
  EXPECT_EQ(j.argv.front().front(), '/');              // resolved on PATH before anything starts
}

TEST(LaunchPlan, PlaceholdersExpandPerJobAndBracesEscape) {
  auto plan = plan_launch(
      two_node_facts(),
      command({"echo", "--device={gpu}", "{uuid}", "node{numa}", "r{rank}", "{{gpu}}", "{other}"}),
      kWholeHost);
  ASSERT_TRUE(plan.is_ok());
  const auto& a = plan.value()[3].argv;
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a[1], "--device=3");
  EXPECT_EQ(a[2], "GPU-3aaaaaaa-0000-0000-0000-000000000003");
  EXPECT_EQ(a[3], "node1");
  EXPECT_EQ(a[4], "r3");
  EXPECT_EQ(a[5], "{gpu}");
  EXPECT_EQ(a[6], "{other}");
}

TEST(LaunchPlan, GpusAreNamedByIndexUuidPrefixOrBusIdInTheOrderGiven) {
  LaunchOptions o = command({"true"});
  o.gpus = {"3", "GPU-1", "0000:18:00.0"};
  auto plan = plan_launch(two_node_facts(), o, kWholeHost);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  ASSERT_EQ(plan.value().size(), 3u);
  EXPECT_EQ(plan.value()[0].gpu, 3);
  EXPECT_EQ(plan.value()[0].rank, 0);
  EXPECT_EQ(plan.value()[1].gpu, 1);
  EXPECT_EQ(plan.value()[2].gpu, 0);
}

TEST(LaunchPlan, BadInputStartsNothingAndSaysWhy) {
  auto refused = [](LaunchOptions o, const std::string& needle) {
    auto plan = plan_launch(two_node_facts(), o, kWholeHost);
    ASSERT_FALSE(plan.is_ok()) << needle;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(plan.status().message().find(needle), std::string::npos) << plan.status().message();
  };
  refused(command({}), "no command");
  refused(command({"gpuvet-no-such-command-xyz"}), "not found on PATH");
  const std::string not_executable = testing::TempDir() + "/gpuvet-launch-not-executable";
  {
    std::ofstream(not_executable) << "#!/bin/sh\n";
    std::filesystem::permissions(
        not_executable, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  refused(command({not_executable}), "not an executable");
  LaunchOptions o = command({"true"});
  o.gpus = {"7"};
  refused(o, "no GPU 7");
  o.gpus = {"GPU-"};
  refused(o, "more than one GPU");
  o.gpus = {"1", "1"};
  refused(o, "twice");
  o.gpus = {"0000:99:00.0"};
  refused(o, "bus id");
  o = command({"true"});
  o.log_dir = "/proc/gpuvet-cannot-make-this";
  refused(o, "--log-dir");
  o = command({"true"});
  o.throughput_regex = "no group";
  o.log_dir = testing::TempDir();
  refused(o, "no group");
  o.throughput_regex = "([0-9";
  refused(o, "--throughput-regex");
  Facts none;
  auto plan = plan_launch(none, command({"true"}), kWholeHost);
  EXPECT_FALSE(plan.is_ok());
}

TEST(LaunchPlan, WhatGpuvetMayNotUseIsLeftUnboundAndSaid) {
  // A cpuset (container, Slurm step) with CPUs 0-3 and memory node 0 only.
  const LaunchHost narrow{{0, 1, 2, 3}, {0}};
  auto plan = plan_launch(two_node_facts(), command({"true"}), narrow);
  ASSERT_TRUE(plan.is_ok());
  const JobPlan& far = plan.value()[0];  // GPU0, node 1
  EXPECT_TRUE(far.cpus.empty());
  EXPECT_TRUE(far.mems.empty());
  ASSERT_EQ(far.notes.size(), 2u);
  EXPECT_NE(far.notes[0].find("CPUs not bound"), std::string::npos);
  EXPECT_NE(far.notes[1].find("memory not bound"), std::string::npos);
  EXPECT_TRUE(plan.value()[1].notes.empty());
  // --strict refuses rather than run a job on the far socket.
  LaunchOptions strict = command({"true"});
  strict.strict = true;
  auto refused = plan_launch(two_node_facts(), strict, narrow);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("GPU0"), std::string::npos);
}

TEST(LaunchPlan, AGpuWithoutNodeIsLaunchedUnboundWithANote) {
  Facts f = two_node_facts();
  f.gpus[1].numa_node.reset();
  f.host.numa_nodes.clear();
  auto plan = plan_launch(f, command({"true"}), kWholeHost);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_FALSE(plan.value()[1].numa);
  EXPECT_TRUE(plan.value()[1].cpus.empty());
  ASSERT_FALSE(plan.value()[1].notes.empty());
  EXPECT_NE(plan.value()[1].notes[0].find("NUMA node unknown"), std::string::npos);
}

TEST(LaunchPlan, CpuAndMemoryBindingCanBeTurnedOff) {
  LaunchOptions o = command({"true"});
  o.cpu = CpuBind::kNone;
  o.mem = MemBind::kNone;
  auto plan = plan_launch(two_node_facts(), o, kWholeHost);
  ASSERT_TRUE(plan.is_ok());
  for (const auto& j : plan.value()) {
    EXPECT_TRUE(j.cpus.empty());
    EXPECT_TRUE(j.mems.empty());
    EXPECT_TRUE(j.notes.empty());
  }
}

TEST(CkptSlot, BadInputIsRefusedBeforeRunningAnything) {
  CkptSlotOptions o;
  o.dir = testing::TempDir() + "/gpuvet-ckpt-bad";
  o.command = {"true"};
  EXPECT_FALSE(run_in_ckpt_slot(o).is_ok());  // no --max
  o.slots = 2;
  o.dir.clear();
  EXPECT_FALSE(run_in_ckpt_slot(o).is_ok());  // no directory
  o.dir = testing::TempDir() + "/gpuvet-ckpt-bad";
  o.command.clear();
  EXPECT_FALSE(run_in_ckpt_slot(o).is_ok());  // no command
  o.command = {"sh", "-c", "exit 5"};
  auto r = run_in_ckpt_slot(o);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value(), 5);  // the command's code is ours
}

}  // namespace
}  // namespace gpuvet

namespace gpuvet {
namespace {

// Leaves a killed gpuvet left (its pid no longer a running gpuvet) go at the next start; a
// directory that is not gpuvet's, and gpuvet's own, stay.
TEST(LaunchLeaves, StaleLeavesOfAKilledGpuvetAreRemovedAtTheNextStart) {
  namespace fs = std::filesystem;
  const fs::path own = fs::path(::testing::TempDir()) / "gpuvet-stale-leaves";
  fs::remove_all(own);
  // pid 1 is never gpuvet (init, or a container's entry point).
  fs::create_directories(own / "gpuvet-launch-1/job0");
  fs::create_directories(own / "gpuvet-launch-1/job1");
  fs::create_directories(own / ("gpuvet-launch-" + std::to_string(::getpid())) / "job0");
  fs::create_directories(own / "someone-else/job0");
  const auto said = launch::clean_stale_leaves(own.string());
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("left by gpuvet pid 1"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("removed"), std::string::npos) << said[0];
  EXPECT_FALSE(fs::exists(own / "gpuvet-launch-1"));
  EXPECT_TRUE(fs::exists(own / ("gpuvet-launch-" + std::to_string(::getpid()))));
  EXPECT_TRUE(fs::exists(own / "someone-else/job0"));
  fs::remove_all(own);
}

}  // namespace
}  // namespace gpuvet
