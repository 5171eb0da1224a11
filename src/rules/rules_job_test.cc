// The job rules on ranks built here: each share finding over its threshold and quiet under it,
// the straggler named (the rank that arrives last, not the ones that wait), the rank → GPU join,
// drift, a rank given twice, and the live busy-thread finding.
#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace gpuvet::rules {
namespace {

using namespace gpuvet::rules::testing;

// A step of `wall` ms split as given (the rest idle with no cause).
JobStep step(std::int64_t n, double wall, double compute, double exposed = 0, double input = 0,
             double sync = 0, double launch = 0) {
  JobStep s;
  s.number = n;
  s.wall_ms = wall;
  s.compute_ms = compute;
  s.comm_exposed_ms = exposed;
  s.comm_ms = exposed;
  s.collective_ms = exposed;
  s.copy_ms = 0;
  s.idle_ms = wall - compute - exposed;
  s.idle_input_ms = input;
  s.idle_sync_ms = sync;
  s.idle_launch_ms = launch;
  s.kernels = 100;
  s.syncs = sync > 0 ? 3 : 0;
  return s;
}

JobRank rank(int r, std::vector<JobStep> steps) {
  JobRank j;
  j.source = "pytorch-trace";
  j.rank = r;
  j.world_size = 2;
  j.steps = std::move(steps);
  return j;
}

std::vector<JobStep> steps_of(int n, double wall, double compute, double exposed = 0,
                              double input = 0, double sync = 0, double launch = 0) {
  std::vector<JobStep> v;
  for (int i = 0; i < n; ++i) v.push_back(step(i + 1, wall, compute, exposed, input, sync, launch));
  return v;
}

TEST(JobRules, HealthyComputeBoundJobRaisesOnlyTheBreakdown) {
  Facts f;
  f.job_ranks = {rank(0, steps_of(5, 100, 92, 2, 0, 1, 2)),
                 rank(1, steps_of(5, 100, 93, 2, 0, 1, 2))};
  auto out = run_group(check_job, f);
  ASSERT_EQ(out.findings.size(), 1u) << dump(out);
  EXPECT_EQ(out.findings[0].id, "job-breakdown");
  EXPECT_EQ(out.findings[0].severity, Severity::kInfo);
  EXPECT_TRUE(has(out.findings[0].evidence, "step p50 100 ms")) << dump(out);
  EXPECT_TRUE(has(out.findings[0].evidence, "compute 92 %")) << dump(out);
}

TEST(JobRules, EachShareOverItsThresholdIsAFinding) {
  struct Case {
    const char* id;
    JobStep s;
  };
  const Case cases[] = {
      {"job-input-starved", step(1, 100, 30, 0, 60)},
      {"job-host-sync", step(1, 100, 70, 0, 0, 20)},
      {"job-launch-bound", step(1, 100, 50, 0, 0, 0, 40)},
      {"job-comm-exposed", step(1, 100, 60, 30)},
  };
  for (const auto& c : cases) {
    Facts f;
    f.job_ranks = {rank(0, {c.s})};
    auto out = run_group(check_job, f);
    auto hit = with_id(out, c.id);
    ASSERT_EQ(hit.size(), 1u) << c.id << "\n" << dump(out);
    EXPECT_EQ(hit[0].severity, Severity::kWarning);
    EXPECT_EQ(hit[0].subjects, std::vector<std::string>{"rank0"});
    ASSERT_TRUE(hit[0].observed);
    // Only that one: the others stay under their thresholds.
    EXPECT_EQ(out.findings.size(), 2u) << dump(out);
  }
  // Just under each threshold: nothing but the breakdown.
  Facts f;
  f.job_ranks = {rank(0, {step(1, 100, 51, 14, 14, 9, 14)})};
  EXPECT_EQ(run_group(check_job, f).findings.size(), 1u) << dump(run_group(check_job, f));
}

// Rank 1 computes 40 ms longer before the all-reduce; ranks 0, 2, 3 wait for it inside the
// collective (45 ms there), rank 1 only 5 ms.
TEST(JobRules, StragglerIsTheRankTheOthersWaitFor) {
  Facts f;
  for (int r = 0; r < 4; ++r) {
    std::vector<JobStep> v;
    for (int i = 0; i < 6; ++i) {
      JobStep s = step(10 + i, 120, r == 1 ? 100 : 60, r == 1 ? 5 : 45);
      s.pre_comm_ms = r == 1 ? 100 : 60;
      v.push_back(s);
    }
    f.job_ranks.push_back(rank(r, v));
    f.job_ranks.back().cuda_device = r;
  }
  f.gpus.resize(4);
  for (int i = 0; i < 4; ++i) f.gpus[i].index = i;
  auto out = run_group(check_job, f);
  auto s = with_id(out, "job-straggler-rank");
  ASSERT_EQ(s.size(), 1u) << dump(out);
  EXPECT_EQ(s[0].subjects, std::vector<std::string>{"rank1"});
  EXPECT_TRUE(has(s[0].evidence, "arrives last at the collectives in 6 of 6 common steps"))
      << s[0].evidence;
  EXPECT_TRUE(has(s[0].evidence, "wait for it 40 ms per step")) << s[0].evidence;
  EXPECT_TRUE(has(s[0].evidence, "rank1 ran on GPU1")) << s[0].evidence;
}

// Two ranks whose collective times swap from step to step: nobody is the straggler.
TEST(JobRules, NoStragglerWhenTheLastRankChanges) {
  Facts f;
  std::vector<JobStep> a, b;
  for (int i = 0; i < 6; ++i) {
    a.push_back(step(i, 100, 60, i % 2 ? 10 : 40));
    b.push_back(step(i, 100, 60, i % 2 ? 40 : 10));
  }
  f.job_ranks = {rank(0, a), rank(1, b)};
  EXPECT_TRUE(with_id(run_group(check_job, f), "job-straggler-rank").empty());
}

TEST(JobRules, StepsThatGetSlowerDrift) {
  Facts f;
  std::vector<JobStep> v;
  for (int i = 0; i < 12; ++i) v.push_back(step(i, i < 6 ? 100 : 130, 90));
  f.job_ranks = {rank(0, v)};
  auto d = with_id(run_group(check_job, f), "job-step-time-drift");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(has(d[0].evidence, "130 ms against 100 ms")) << d[0].evidence;
  f.job_ranks = {rank(0, steps_of(12, 100, 90))};
  EXPECT_TRUE(with_id(run_group(check_job, f), "job-step-time-drift").empty());
}

TEST(JobRules, ARankGivenTwiceIsReadOnce) {
  Facts f;
  f.job_ranks = {rank(0, steps_of(3, 100, 90)), rank(0, steps_of(3, 100, 10, 0, 80))};
  f.job_ranks[0].origin = "a.json";
  f.job_ranks[1].origin = "b.json";
  auto out = run_group(check_job, f);
  EXPECT_TRUE(with_id(out, "job-input-starved").empty()) << dump(out);
  bool said = false;
  for (const auto& n : out.notes)
    said = said || has(n, "rank 0 is given twice (a.json and b.json)");
  EXPECT_TRUE(said) << dump(out);
}

TEST(JobRules, BusyThreadOfAnIdleGpuProcessIsNamed) {
  Facts f;
  f.gpus.resize(1);
  f.gpus[0].utilization.gpu_pct = 1;
  ProcessFacts p;
  p.host_pid = 1430;
  p.gpu = 0;
  p.name = "python";
  p.busy_threads = {{1431, "pt_data_worker", 15, 100}};
  f.processes = {p};
  auto out = run_group(check_host_threads, f);
  auto t = with_id(out, "gpu-waits-on-host-thread");
  ASSERT_EQ(t.size(), 1u) << dump(out);
  EXPECT_EQ(t[0].evidence,
            "pid 1430 python on GPU0: thread 'pt_data_worker' (tid 1431) at 100 % of CPU15, GPU0 "
            "util 1 %");
  // A busy GPU is not waiting on the thread.
  f.gpus[0].utilization.gpu_pct = 97;
  EXPECT_TRUE(run_group(check_host_threads, f).findings.empty());
}

// NCCL Inspector (no steps): the rank whose collectives are short while its peers' are long is
// the one they wait for; equal times name nobody; the figures are the breakdown.
TEST(JobRules, InspectorStragglerFromTimesPerCall) {
  auto inspector_rank = [](int r, double us_64m, double us_1m) {
    JobRank j;
    j.source = "nccl-inspector";
    j.rank = r;
    j.world_size = 4;
    j.host = "node7";
    j.pid = 100 + r;
    j.notes = {"communicator 0x7f3a"};
    j.collectives = {{"AllReduce", 64u << 20, 500, us_64m, 150.0, {}, {}},
                     {"AllReduce", 1u << 20, 200, us_1m, 20.0, {}, {}}};
    return j;
  };
  Facts f;
  f.job_ranks = {inspector_rank(0, 4100, 900), inspector_rank(1, 4000, 880),
                 inspector_rank(2, 900, 150), inspector_rank(3, 4200, 910)};
  auto out = run_group(check_job, f);
  auto s = with_id(out, "job-straggler-rank");
  ASSERT_EQ(s.size(), 1u) << dump(out);
  EXPECT_EQ(s[0].subjects, std::vector<std::string>{"rank2"});
  EXPECT_TRUE(has(s[0].evidence, "shortest in 2 of 2 kinds")) << s[0].evidence;
  EXPECT_TRUE(has(s[0].evidence, "host node7, pid 102")) << s[0].evidence;
  auto b = with_id(out, "job-breakdown");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_TRUE(has(b[0].evidence, "AllReduce 65536 KiB ×2000")) << b[0].evidence;

  f.job_ranks = {inspector_rank(0, 4100, 900), inspector_rank(1, 4000, 880),
                 inspector_rank(2, 3900, 870), inspector_rank(3, 4200, 910)};
  EXPECT_TRUE(with_id(run_group(check_job, f), "job-straggler-rank").empty());
}

}  // namespace
}  // namespace gpuvet::rules
