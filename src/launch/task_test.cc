// `gpuvet launch --in-task`: who the task is (Slurm, Open MPI, torchrun environments), which
// GPU it has (CUDA_VISIBLE_DEVICES by UUID or index, or its local rank's when it sees several)
// and whether the CPUs and memory policy the scheduler gave it are on that GPU's node.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gpuvet/launch.h"
#include "launch/test_node.h"

namespace gpuvet {
namespace {

using launch_test::two_node_facts;

TaskIdentity identity(std::map<std::string, std::string> env) {
  return TaskIdentity::from_environment([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TaskIdentity slurm_task(int rank, int local, std::string visible) {
  std::map<std::string, std::string> env = {{"SLURM_PROCID", std::to_string(rank)},
                                            {"SLURM_LOCALID", std::to_string(local)},
                                            {"SLURM_STEP_ID", "0"},
                                            {"SLURM_NTASKS", "8"},
                                            {"SLURM_NODEID", "1"},
                                            {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}};
  if (visible != "(unset)") env["CUDA_VISIBLE_DEVICES"] = visible;
  return identity(env);
}

TaskOptions run(std::vector<std::string> argv = {"true"}) {
  TaskOptions o;
  o.command = std::move(argv);
  return o;
}

TaskCheck judged(const TaskIdentity& t, const LaunchHost& host, TaskOptions o = run()) {
  auto c = plan_task(two_node_facts(), t, host, o);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  if (!c.is_ok()) return {};
  TaskCheck check = c.value();
  judge_task(check, o);
  return check;
}

std::string env_of(const TaskCheck& c, const std::string& key) {
  for (const auto& [k, v] : c.env)
    if (k == key) return v;
  return "(unset)";
}

TEST(LaunchTask, TheLauncherEnvironmentsGiveRankLocalRankAndTasksOnThisNode) {
  const TaskIdentity s = slurm_task(5, 1, "(unset)");
  EXPECT_EQ(s.launcher, "slurm");
  EXPECT_EQ(s.rank, 5);
  EXPECT_EQ(s.local_rank, 1);
  EXPECT_EQ(s.world, 8);
  EXPECT_EQ(s.local_world, 4);  // node 1 of "4(x2)"
  // Uneven steps: node 3 of "2(x3),1" runs one task.
  const TaskIdentity u = identity({{"SLURM_PROCID", "6"},
                                   {"SLURM_STEP_ID", "2"},
                                   {"SLURM_NODEID", "3"},
                                   {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}});
  EXPECT_EQ(u.local_world, 1);
  // A batch script's own shell (no step) is not a task.
  EXPECT_EQ(identity({{"SLURM_PROCID", "0"}}).launcher, "");
  const TaskIdentity m = identity({{"OMPI_COMM_WORLD_RANK", "3"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                   {"OMPI_COMM_WORLD_SIZE", "4"},
                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(m.launcher, "openmpi");
  EXPECT_EQ(m.local_world, 2);
  const TaskIdentity t =
      identity({{"RANK", "9"}, {"LOCAL_RANK", "x"}, {"CUDA_VISIBLE_DEVICES", "2,3"}});
  EXPECT_EQ(t.launcher, "torchrun");
  EXPECT_EQ(t.rank, 9);
  EXPECT_FALSE(t.local_rank);  // not a number: unknown, not 0
  EXPECT_EQ(t.visible_devices, "2,3");
}

TEST(LaunchTask, ATaskOnItsGpusNodeIsQuietAndTheCommandLearnsItsGpu) {
  // GPU0 is on node 1 (CPUs 4-7): a task bound there with memory bound there is right.
  const TaskCheck c = judged(slurm_task(0, 0, "GPU-0aaa"), {{4, 5, 6, 7}, {0, 1}, "bind:1"});
  EXPECT_EQ(c.gpu, 0);
  EXPECT_EQ(c.target_nodes, std::vector<int>{1});
  EXPECT_TRUE(c.findings.empty()) << c.findings.front().evidence;
  EXPECT_EQ(c.exit_code, 0);
  EXPECT_EQ(env_of(c, "GPUVET_GPU_UUID"), "GPU-0aaaaaaa-0000-0000-0000-000000000000");
  EXPECT_EQ(env_of(c, "GPUVET_NUMA_NODE"), "1");
  EXPECT_EQ(env_of(c, "GPUVET_RANK"), "0");
  EXPECT_EQ(env_of(c, "CUDA_DEVICE_ORDER"), "(unset)");  // a UUID needs no order
  EXPECT_EQ(c.argv.front().front(), '/');
}

TEST(LaunchTask, CpusOnTheOtherNodeOrSpreadOverBothAreAMismatchAndStrictRefuses) {
  // Bug caught: judging by index (GPU0 → node 0), where GPU0 sits on node 1.
  TaskCheck far = judged(slurm_task(0, 0, "GPU-0aaa"), {{0, 1, 2, 3}, {0, 1}, "default"});
  ASSERT_EQ(far.findings.size(), 1u);
  EXPECT_EQ(far.findings[0].id, "launch-binding-mismatch");
  EXPECT_EQ(far.findings[0].subjects, (std::vector<std::string>{"task0", "GPU0"}));
  EXPECT_NE(far.findings[0].evidence.find("none of its CPUs (0-3 on node 0) is on its GPU's "
                                          "node 1 (CPUs 4-7)"),
            std::string::npos)
      << far.findings[0].evidence;
  EXPECT_EQ(far.exit_code, 0);  // warned, the command still runs

  TaskOptions strict = run();
  strict.strict = true;
  TaskCheck unbound =
      judged(slurm_task(0, 0, "GPU-0aaa"), {{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}, "default"}, strict);
  ASSERT_EQ(unbound.findings.size(), 1u);
  EXPECT_NE(unbound.findings[0].evidence.find("4 of its 8 CPUs (0-3) are off its GPU's node 1"),
            std::string::npos)
      << unbound.findings[0].evidence;
  EXPECT_EQ(unbound.exit_code, 2);
}

TEST(LaunchTask, MemoryBoundToAnotherNodeIsAMismatchEvenWithTheRightCpus) {
  TaskCheck c = judged(slurm_task(1, 1, "1"), {{0, 1, 2, 3}, {0, 1}, "bind:1"});
  EXPECT_EQ(c.gpu, 1);  // index 1 in PCI bus order: GPU1, node 0
  ASSERT_EQ(c.findings.size(), 1u);
  EXPECT_NE(c.findings[0].evidence.find("memory policy bind:1 puts memory off its GPU's node 0"),
            std::string::npos)
      << c.findings[0].evidence;
  EXPECT_EQ(env_of(c, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");  // indices: CUDA must count as NVML
  EXPECT_TRUE(
      judged(slurm_task(1, 1, "1"), {{0, 1, 2, 3}, {0, 1}, "interleave:0"}).findings.empty());
}

TEST(LaunchTask, ATaskThatSeesEveryGpuIsJudgedAgainstItsLocalRanksGpu) {
  // 4 tasks on the node, each seeing all 4 GPUs: local rank 3 → GPU3 (node 1).
  TaskCheck c = judged(slurm_task(7, 3, "(unset)"), {{0, 1, 2, 3}, {0, 1}, "default"});
  EXPECT_EQ(c.visible.size(), 4u);
  EXPECT_EQ(c.gpu, 3);
  ASSERT_EQ(c.findings.size(), 1u);
  EXPECT_NE(c.findings[0].evidence.find("on GPU3"), std::string::npos);
  bool noted = false;
  for (const auto& n : c.notes) noted |= n.find("local rank, GPU3 (cuda:3)") != std::string::npos;
  EXPECT_TRUE(noted);
  // One task driving GPUs 1 and 2 (both node 0): judged against node 0.
  TaskCheck one = judged(identity({{"CUDA_VISIBLE_DEVICES", "1,2"}}), {{0, 1, 2, 3}, {0, 1}, ""});
  EXPECT_FALSE(one.gpu);
  EXPECT_EQ(one.target_nodes, std::vector<int>{0});
  EXPECT_TRUE(one.findings.empty());
  // GPUs on both nodes: either node's CPUs are right.
  TaskCheck both = judged(identity({{"CUDA_VISIBLE_DEVICES", "0,1"}}), {{0, 5}, {0, 1}, ""});
  EXPECT_EQ(both.target_nodes, (std::vector<int>{0, 1}));
  EXPECT_TRUE(both.findings.empty());
}

TEST(LaunchTask, BadInputStartsNothing) {
  const LaunchHost host{{0, 1, 2, 3}, {0, 1}, "default"};
  for (const char* visible : {"", "NoDevFiles", "-1", "7", "GPU-ffff", "MIG-1234"}) {
    auto c = plan_task(two_node_facts(), slurm_task(0, 0, visible), host, run());
    ASSERT_FALSE(c.is_ok()) << visible;
    EXPECT_NE(c.status().message().find("nothing started"), std::string::npos)
        << c.status().message();
  }
  EXPECT_FALSE(plan_task(two_node_facts(), slurm_task(0, 0, "0"), host, run({})).is_ok());
  auto missing =
      plan_task(two_node_facts(), slurm_task(0, 0, "0"), host, run({"no-such-command-gpuvet"}));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("not found on PATH"), std::string::npos);
}

TEST(LaunchTask, PlaceholdersNeedOnlyWhatTheyName) {
  // Bug caught: an argument with {gpu} refused because the rank was unknown (or the reverse).
  const LaunchHost host{{0, 1, 2, 3}, {0, 1}, "default"};
  const TaskIdentity no_launcher = identity({{"CUDA_VISIBLE_DEVICES", "GPU-1aaa"}});
  auto gpu_only =
      plan_task(two_node_facts(), no_launcher, host, run({"echo", "--gpu={gpu}", "{{rank}}"}));
  ASSERT_TRUE(gpu_only.is_ok()) << gpu_only.status().message();
  EXPECT_EQ(gpu_only.value().argv[1], "--gpu=1");
  EXPECT_EQ(gpu_only.value().argv[2], "{rank}");
  auto rank = plan_task(two_node_facts(), no_launcher, host, run({"echo", "r{rank}"}));
  ASSERT_FALSE(rank.is_ok());
  EXPECT_NE(rank.status().message().find("needs the task's rank"), std::string::npos);
}

TEST(LaunchTask, AnUnknownNodeIsNotedNotGuessed) {
  Facts f = two_node_facts();
  f.gpus[2].numa_node.reset();
  auto c = plan_task(f, slurm_task(0, 0, "2"), {{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}, ""}, run());
  ASSERT_TRUE(c.is_ok());
  TaskCheck check = c.value();
  judge_task(check, run());
  EXPECT_TRUE(check.target_nodes.empty());
  EXPECT_TRUE(check.findings.empty());
  EXPECT_EQ(env_of(check, "GPUVET_NUMA_NODE"), "none");
  bool noted = false;
  for (const auto& n : check.notes) noted |= n.find("GPU2: NUMA node unknown") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace gpuvet
