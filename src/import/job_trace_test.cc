// The job's own time: the step split of job_timeline on hand-made timelines whose figures are
// worked out in the comments, and the Kineto trace reader on small traces written here (the real
// traces of tests/fixtures/job are read in tests/job_test.cc).
#include <gtest/gtest.h>

#include "gzip_test_util.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "core/gzip.h"
#include "gpuvet/import.h"
#include "import/job_timeline.h"
#include "import/kineto_trace.h"
#include "import/nccl_inspector.h"
#include "import/step_log.h"
#include "job_trace_gen.h"

namespace gpuvet::import {
namespace {

// One step of 1000 µs:
//   host: data loader 0–90, a sync 720–900
//   GPU:  compute 100–400, NCCL 300–600, copy 650–700, compute 710–720
// compute 300 + 10; exposed comm 400–600 = 200; copy 50; idle 440 =
//   input 0–90 (90) + launch gaps 90–100, 600–650, 700–710 (70) + after the sync 720–1000 (280).
TEST(JobTimeline, SplitsOneStepIntoExclusiveShares) {
  Timeline t;
  t.host = {{0, 1000, HostWork::kStep, 7},
            {0, 90, HostWork::kDataLoader, 0},
            {720, 900, HostWork::kSync, 0}};
  t.gpu = {{100, 400, GpuWork::kCompute},
           {300, 600, GpuWork::kComm},
           {650, 700, GpuWork::kCopy},
           {710, 720, GpuWork::kCompute}};
  std::vector<std::string> notes;
  auto steps = split_steps(t, true, 100, notes);
  ASSERT_EQ(steps.size(), 1u);
  const JobStep& s = steps[0];
  EXPECT_EQ(s.number, 7);
  EXPECT_DOUBLE_EQ(s.wall_ms, 1.0);
  EXPECT_DOUBLE_EQ(*s.compute_ms, 0.310);
  EXPECT_DOUBLE_EQ(*s.comm_exposed_ms, 0.200);
  EXPECT_DOUBLE_EQ(*s.copy_ms, 0.050);
  EXPECT_DOUBLE_EQ(*s.idle_ms, 0.440);
  EXPECT_NEAR(*s.compute_ms + *s.comm_exposed_ms + *s.copy_ms + *s.idle_ms, s.wall_ms, 1e-12);
  EXPECT_DOUBLE_EQ(*s.comm_ms, 0.300);
  EXPECT_DOUBLE_EQ(*s.collective_ms, 0.300);
  EXPECT_DOUBLE_EQ(*s.pre_comm_ms, 0.300);
  EXPECT_DOUBLE_EQ(*s.idle_input_ms, 0.090);
  EXPECT_DOUBLE_EQ(*s.idle_launch_ms, 0.070);
  EXPECT_DOUBLE_EQ(*s.idle_sync_ms, 0.280);
  EXPECT_EQ(*s.kernels, 3);
  EXPECT_EQ(*s.syncs, 1);
  EXPECT_TRUE(notes.empty());
}

// A long idle gap during which the host launched the next kernel is the host's dispatch (the
// GPU waited on it); the same gap with no launch in it has no cause. gloo: the GPU idle while
// the host is inside the collective is exposed communication.
TEST(JobTimeline, LongGapsWithALaunchAndHostCollectives) {
  Timeline t;
  t.host = {{0, 1000, HostWork::kStep, 1},
            {380, 390, HostWork::kLaunch, 0},
            {700, 900, HostWork::kCollective, 0}};
  t.gpu = {{0, 100, GpuWork::kCompute}, {400, 500, GpuWork::kCompute}};
  std::vector<std::string> notes;
  auto steps = split_steps(t, true, 10, notes);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_DOUBLE_EQ(*steps[0].idle_launch_ms, 0.300);    // 100–400: the launch at 380 was late
  EXPECT_DOUBLE_EQ(*steps[0].comm_exposed_ms, 0.200);   // 700–900 in gloo's collective
  EXPECT_DOUBLE_EQ(*steps[0].idle_ms, 0.300 + 0.200 + 0.100);  // 100–400, 500–700, 900–1000
  EXPECT_DOUBLE_EQ(*steps[0].collective_ms, 0.200);
}

// Spans that cross a step's edge count in each step for their part; the order of the input does
// not matter; a long gap not after a sync and outside the loader is idle with no cause.
TEST(JobTimeline, ClipsSpansAtStepEdgesInAnyOrder) {
  Timeline t;
  t.gpu = {{900, 1300, GpuWork::kCompute}, {0, 100, GpuWork::kCompute}};
  t.host = {{1000, 2000, HostWork::kStep, 2}, {0, 1000, HostWork::kStep, 1}};
  std::vector<std::string> notes;
  auto steps = split_steps(t, true, 100, notes);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].number, 1);
  EXPECT_DOUBLE_EQ(*steps[0].compute_ms, 0.200);  // 0–100 and 900–1000
  EXPECT_DOUBLE_EQ(*steps[0].idle_ms, 0.800);
  EXPECT_DOUBLE_EQ(*steps[0].idle_launch_ms, 0.0);  // an 800 µs gap is no launch gap
  EXPECT_DOUBLE_EQ(*steps[1].compute_ms, 0.300);    // 1000–1300
  EXPECT_DOUBLE_EQ(*steps[1].idle_ms, 0.700);
  EXPECT_FALSE(steps[1].pre_comm_ms);  // no collective
}

// gloo: the collective is a host span; the GPU figures stay empty without GPU spans.
TEST(JobTimeline, HostCollectivesWithoutGpu) {
  Timeline t;
  t.host = {{0, 100, HostWork::kStep, 1}, {40, 90, HostWork::kCollective, 0}};
  std::vector<std::string> notes;
  auto steps = split_steps(t, false, 100, notes);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_FALSE(steps[0].compute_ms);
  EXPECT_DOUBLE_EQ(*steps[0].collective_ms, 0.050);
  EXPECT_DOUBLE_EQ(*steps[0].pre_comm_ms, 0.040);
}

TEST(JobTimeline, CutsOverlappingStepsAndSaysSo) {
  Timeline t;
  t.host = {
      {0, 150, HostWork::kStep, 1}, {100, 200, HostWork::kStep, 2}, {200, 300, HostWork::kStep, 3}};
  std::vector<std::string> notes;
  auto steps = split_steps(t, false, 2, notes);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_DOUBLE_EQ(steps[0].wall_ms, 0.100);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("overlapped"), std::string::npos);
  EXPECT_NE(notes[1].find("only the first 2"), std::string::npos);
}

// A small trace as torch.profiler writes it (keys in Kineto's order, a flow event, the GPU-side
// copy of the step annotation, a quoted number).
const char* kTrace = R"J({
  "schemaVersion": 1,
  "deviceProperties": [
    {"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42314694656, "computeMajor": 8}
  ],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2, "pg_count": 1,
                      "pg_config": [{"pg_name": "0", "ranks": [0, 1]}], "nccl_version": "2.18.1"},
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 4242, "tid": 4242,
   "ts": 1000.0, "dur": 1000.0, "args": {"External id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4242, "tid": 4242,
   "ts": 1290.0, "dur": 5.0, "args": {"Collective name": "allreduce", "In msg nelems": 262144,
   "dtype": "Float", "Group size": 2}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
   "ts": 1095.0, "dur": 4.0, "args": {"correlation": 11}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
   "ts": 1295.0, "dur": 6.0, "args": {"correlation": 12}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7,
   "ts": 1100.0, "dur": 300.0, "args": {"device": 0, "stream": 7, "correlation": 11,
   "grid": [1, 2, 3]}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
   "pid": 0, "tid": 20, "ts": 1300.0, "dur": "300.0", "args": {"device": 0, "stream": 20}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
   "tid": 7, "ts": 1650.0, "dur": 50.0, "args": {"device": 0, "bytes": 4096}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#4", "pid": 0, "tid": 7,
   "ts": 1000.0, "dur": 1000.0},
  {"ph": "f", "id": 11, "pid": 0, "tid": 7, "ts": 1100.0, "cat": "ac2g", "name": "ac2g"},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python"}}
  ],
  "traceName": "rank1.pt.trace.json"
})J";

TEST(KinetoTrace, RecognisedByContent) {
  EXPECT_EQ(sniff_kineto_trace(kTrace), 95);
  EXPECT_EQ(sniff_kineto_trace(R"({"traceEvents": [{"ph": "X", "name": "a"}]})"), 70);
  EXPECT_EQ(sniff_kineto_trace(R"({"schema": "gpuvet.report/1"})"), 0);
  EXPECT_EQ(sniff_kineto_trace("traceEvents\n"), 0);
}

TEST(KinetoTrace, ReadsWhoTheRankIsAndSplitsItsStep) {
  Facts f;
  ASSERT_TRUE(parse_kineto_trace(kTrace, f).is_ok());
  ASSERT_EQ(f.job_ranks.size(), 1u);
  const JobRank& r = f.job_ranks[0];
  EXPECT_EQ(r.source, "pytorch-trace");
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.backend, "nccl");
  EXPECT_EQ(r.nccl_version, "2.18.1");
  EXPECT_EQ(r.cuda_device, 0);
  EXPECT_EQ(r.gpu_name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(r.pid, 4242);
  EXPECT_EQ(r.events, 10);
  EXPECT_EQ(r.kernels, 2);
  EXPECT_DOUBLE_EQ(*r.launch_call_us, 5.0);
  EXPECT_EQ(r.pageable_copies, 1);
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].op, "AllReduce");
  EXPECT_EQ(r.collectives[0].count, 1);
  EXPECT_EQ(r.collectives[0].size_bytes, 262144u * 4);
  ASSERT_EQ(r.steps.size(), 1u);
  const JobStep& s = r.steps[0];
  EXPECT_EQ(s.number, 4);
  EXPECT_DOUBLE_EQ(s.wall_ms, 1.0);
  EXPECT_DOUBLE_EQ(*s.compute_ms, 0.300);
  EXPECT_DOUBLE_EQ(*s.comm_exposed_ms, 0.200);  // NCCL 1300–1600, after the gemm's end at 1400
  EXPECT_DOUBLE_EQ(*s.copy_ms, 0.050);
  EXPECT_DOUBLE_EQ(*s.idle_ms, 0.450);
  EXPECT_DOUBLE_EQ(*s.pre_comm_ms, 0.300);
  EXPECT_TRUE(r.notes.empty());
}

TEST(KinetoTrace, ACutTraceKeepsWhatWasReadAndSaysWhere) {
  const std::string text(kTrace);
  const std::string cut = text.substr(0, text.find("gpu_memcpy"));
  Facts f;
  ASSERT_TRUE(parse_kineto_trace(cut, f).is_ok());
  ASSERT_EQ(f.job_ranks.size(), 1u);
  EXPECT_EQ(f.job_ranks[0].kernels, 2);
  ASSERT_FALSE(f.job_ranks[0].notes.empty());
  EXPECT_NE(f.job_ranks[0].notes[0].find("cut or malformed"), std::string::npos);
}

TEST(KinetoTrace, NoEventIsInvalidInput) {
  Facts f;
  EXPECT_EQ(parse_kineto_trace(R"({"schemaVersion": 1, "traceEvents": []})", f).code(),
            StatusCode::kInvalidInput);
  EXPECT_EQ(parse_kineto_trace(R"({"schemaVersion": 1, "traceEv)", f).code(),
            StatusCode::kInvalidInput);
  EXPECT_TRUE(f.job_ranks.empty());
}

TEST(KinetoTrace, NegativeAndMissingTimesAreLeftOutWithANote) {
  const char* text = R"({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "ts": 10, "dur": -5},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "ts": 10},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "ts": 20, "dur": 5}]})";
  Facts f;
  ASSERT_TRUE(parse_kineto_trace(text, f).is_ok());
  const JobRank& r = f.job_ranks.at(0);
  EXPECT_EQ(r.kernels, 1);
  ASSERT_EQ(r.steps.size(), 1u);  // no ProfilerStep: the whole trace is one window
  bool said = false, one_step = false;
  for (const auto& n : r.notes) {
    said = said || n.find("2 event(s) with a missing") != std::string::npos;
    one_step = one_step || n.find("one step") != std::string::npos;
  }
  EXPECT_TRUE(said);
  EXPECT_TRUE(one_step);
}


// A .json.gz piped in is read as the trace it holds.
TEST(KinetoTrace, GzippedTraceIsReadThroughThePaste) {
  auto facts = import_paste(gpuvet::testing::gzip_of(kTrace), "stdin");
  ASSERT_TRUE(facts.is_ok()) << facts.status().to_string();
  ASSERT_EQ(facts.value().job_ranks.size(), 1u);
  EXPECT_EQ(facts.value().job_ranks[0].rank, 1);
}

// Megatron-LM and nanoGPT step lines, recognised by content; torchrun's rank prefixes split ranks.
TEST(StepLog, BuiltInFormsPerRank) {
  const std::string megatron =
      "[rank0]: [2024-05-01 10:00:00] iteration      100/  5000 | consumed samples:  51200 | "
      "elapsed time per iteration (ms): 1523.4 | learning rate: 3.0E-04 |\n"
      "[rank1]: [2024-05-01 10:00:00] iteration      100/  5000 | consumed samples:  51200 | "
      "elapsed time per iteration (ms): 1530.0 | learning rate: 3.0E-04 |\n"
      "[rank0]: [2024-05-01 10:00:02] iteration      101/  5000 | consumed samples:  51712 | "
      "elapsed time per iteration (ms): 1519.9 | learning rate: 3.0E-04 |\n";
  EXPECT_EQ(sniff_step_log(megatron), 80);
  Facts f;
  ASSERT_TRUE(parse_step_log(megatron, f).is_ok());
  ASSERT_EQ(f.job_ranks.size(), 2u);
  EXPECT_EQ(f.job_ranks[0].rank, 0);
  ASSERT_EQ(f.job_ranks[0].steps.size(), 2u);
  EXPECT_EQ(f.job_ranks[0].steps[1].number, 101);
  EXPECT_DOUBLE_EQ(f.job_ranks[0].steps[1].wall_ms, 1519.9);
  EXPECT_EQ(f.job_ranks[1].rank, 1);

  const std::string nano =
      "iter 0: loss 10.9836, time 25364.71ms, mfu -100.00%\n"
      "iter 10: loss 9.4012, time 186.26ms, mfu 31.23%\n";
  EXPECT_EQ(sniff_step_log(nano), 80);
  Facts g;
  ASSERT_TRUE(parse_step_log(nano, g).is_ok());
  ASSERT_EQ(g.job_ranks.size(), 1u);
  EXPECT_FALSE(g.job_ranks[0].rank);
  EXPECT_DOUBLE_EQ(g.job_ranks[0].steps[1].wall_ms, 186.26);
  EXPECT_EQ(sniff_step_log("iteration 5 done\nloss 3\n"), 0);
}

TEST(StepLog, UserPatternWithNamedGroups) {
  EXPECT_TRUE(check_step_regex("step (?P<step>\\d+) took (?P<s>[0-9.]+)s").is_ok());
  EXPECT_EQ(check_step_regex("step (\\d+)").code(), StatusCode::kInvalidInput);
  EXPECT_EQ(check_step_regex("step (?P<ms>[0-9.]+").code(), StatusCode::kInvalidInput);
  const std::string log =
      "2: step 1 took 0.250s\n"
      "2: step 2 took 0.260s\n"
      "3: step 1 took 0.5s\n"
      "noise\n" +
      std::string(5000, 'x') + " step 9 took 1s\n";
  Facts f;
  EXPECT_EQ(parse_step_log_with(log, "step (?P<step>\\d+) took (?P<s>[0-9.]+)s", f), 3u);
  ASSERT_EQ(f.job_ranks.size(), 2u);
  EXPECT_EQ(f.job_ranks[0].rank, 2);  // srun -l's "2: "
  EXPECT_DOUBLE_EQ(f.job_ranks[0].steps[1].wall_ms, 260);
  EXPECT_EQ(f.job_ranks[1].steps[0].number, 1);
  ASSERT_FALSE(f.job_ranks[0].notes.empty());
  EXPECT_NE(f.job_ranks[0].notes[0].find("over 4096 bytes"), std::string::npos);
}

// Inspector's JSON Lines as the plugin writes them (docs/nccl-inspector-format.md), with its
// uint8 size defect and a line that is not a record.
TEST(NcclInspector, AggregatesPerRankTypeAndSize) {
  auto line = [](int rank, int sn, long size, int us, double bus) {
    return fmt::format(
        "{{\"header\":{{\"id\":\"0x7f3a2b1c9d8e6f\",\"comm_name\":\"unknown\",\"rank\":{},"
        "\"n_ranks\":2,\"nnodes\":1}},\"metadata\":{{\"inspector_output_format_version\":"
        "\"v4.0\",\"git_rev\":\"unknown\",\"rec_mechanism\":\"nccl_profiler_interface\","
        "\"dump_timestamp_us\":1765151000000000,\"hostname\":\"node7\",\"pid\":{}}},"
        "\"coll_perf\":{{\"coll\":\"AllReduce\",\"coll_sn\":{},\"coll_msg_size_bytes\":{},"
        "\"coll_exec_time_us\":{},\"coll_timing_source\":\"kernel_gpu\",\"coll_algobw_gbs\":"
        "1.0,\"coll_busbw_gbs\":{}}}}}\n",
        rank, 4000 + rank, sn, size, us, bus);
  };
  std::string text;
  for (int sn = 0; sn < 3; ++sn) text += line(0, sn, 67108864, 900 + sn, 74.5);
  text += line(0, 3, -1, 5, 1e13);  // placeholder, replaced below
  text.replace(text.find("-1"), 2, "18446744073705357312");
  text += "not json\n";
  for (int sn = 0; sn < 3; ++sn) text += line(1, sn, 67108864, 4100, 16.4);
  EXPECT_EQ(sniff_nccl_inspector(text), 95);
  Facts f;
  ASSERT_TRUE(parse_nccl_inspector(text, f).is_ok());
  ASSERT_EQ(f.job_ranks.size(), 2u);
  const JobRank& r0 = f.job_ranks[0];
  EXPECT_EQ(r0.source, "nccl-inspector");
  EXPECT_EQ(r0.rank, 0);
  EXPECT_EQ(r0.world_size, 2);
  EXPECT_EQ(r0.host, "node7");
  EXPECT_EQ(r0.pid, 4000);
  ASSERT_EQ(r0.collectives.size(), 2u);  // 64 MiB, and the size-unknown one
  const JobCollective* big = nullptr;
  for (const auto& c : r0.collectives)
    if (c.size_bytes == 67108864u) big = &c;
  ASSERT_TRUE(big);
  EXPECT_EQ(big->count, 3);
  EXPECT_DOUBLE_EQ(*big->median_us, 901);
  EXPECT_DOUBLE_EQ(*big->busbw_gbps, 74.5);
  bool defect = false, junk = false;
  for (const auto& n : r0.notes) {
    defect = defect || n.find("uint8 defect") != std::string::npos;
    junk = junk || n.find("1 line(s) were not Inspector records") != std::string::npos;
  }
  EXPECT_TRUE(defect);
  EXPECT_TRUE(junk);
  Facts none;
  EXPECT_EQ(parse_nccl_inspector("{}\n", none).code(), StatusCode::kInvalidInput);
}

// A trace over 8 MiB is parsed from its file in chunks (plain or gzip), with the same figures as
// from its text; cut short, it keeps its steps and is an input problem.
TEST(KinetoTrace, LargeFilesAreStreamedWithTheSameFigures) {
  const std::string text = gpuvet::testing::make_kineto_trace(9u << 20, 3, 8);
  Facts whole;
  ASSERT_TRUE(parse_kineto_trace(text, whole).is_ok());
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuvet-stream-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "plain.json", std::ios::binary) << text;
  std::ofstream(dir / "packed.json.gz", std::ios::binary) << gpuvet::testing::gzip_of(text);
  std::ofstream(dir / "cut.json", std::ios::binary) << text.substr(0, text.size() - 100000);
  for (const char* name : {"plain.json", "packed.json.gz"}) {
    auto f = import_path((dir / name).string());
    ASSERT_TRUE(f.is_ok()) << name;
    ASSERT_EQ(f.value().job_ranks.size(), 1u) << name;
    const JobRank& r = f.value().job_ranks[0];
    EXPECT_EQ(r.rank, 3);
    ASSERT_EQ(r.steps.size(), whole.job_ranks[0].steps.size()) << name;
    EXPECT_DOUBLE_EQ(*r.steps.back().compute_ms, *whole.job_ranks[0].steps.back().compute_ms);
    EXPECT_EQ(r.kernels, whole.job_ranks[0].kernels);
    EXPECT_TRUE(f.value().input_problems.empty()) << name;
    EXPECT_EQ(f.value().imported.at(0).format, "pytorch-profiler-trace");
  }
  auto cut = import_path((dir / "cut.json").string());
  ASSERT_TRUE(cut.is_ok());
  ASSERT_EQ(cut.value().job_ranks.size(), 1u);
  EXPECT_GT(cut.value().job_ranks[0].steps.size(), 10u);
  EXPECT_EQ(cut.value().input_problems.size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(Gzip, PrefixOfACutStream) {
  const std::string text = gpuvet::testing::make_kineto_trace(1u << 20);
  const std::string packed = gpuvet::testing::gzip_of(text);
  const std::string head = gunzip_prefix(packed.substr(0, 4096), 8192);
  ASSERT_FALSE(head.empty());
  EXPECT_EQ(text.compare(0, head.size(), head), 0);
  EXPECT_LE(head.size(), 8192u);
  EXPECT_TRUE(gunzip_prefix("plain text", 100).empty());
}

}  // namespace
}  // namespace gpuvet::import
