// What real hung jobs print besides the watchdog's progress lines, each in the wording of the
// code that prints it: PyTorch's desync report (TraceUtils.h), TORCH_DISTRIBUTED_DEBUG's
// collective fingerprint mismatch (ProcessGroupWrapper), the flight recorder's analyzer
// (fr_trace), torchrun's ChildFailedError summary; watchdog lines wrapped or glued behind a
// progress bar; a rank busy elsewhere; nccl-tests that never printed a row. The rank numbers
// and sequence numbers are made up.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
#include "rules/rule_test_util.h"

namespace gpuvet::rules {
namespace {

using testing::run_group;
using testing::with_id;

HangAnalysis analyse(const std::string& text, const std::string& name = "job.log") {
  return analyse_hang(import_text(text, name));
}

// A copy: the analysis is often a temporary.
std::optional<HangGroup> hang_group(const HangAnalysis& a) {
  for (const auto& g : a.groups)
    if (g.hang) return g;
  return std::nullopt;
}

std::string watchdog(int rank, int seq, const char* op = "ALLREDUCE") {
  return "[rank" + std::to_string(rank) +
         "]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:632] [Rank " + std::to_string(rank) +
         "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(seq) +
         ", OpType=" + op +
         ", NumelIn=6, NumelOut=6, Timeout(ms)=600000) ran for 600086 milliseconds before timing "
         "out.\n";
}

TEST(HangReports, DesyncReportNamesTheRankThatDidNotJoinTheNextCollective) {
  const std::string text =
      watchdog(0, 241) +
      "[rank0]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 0\n"
      "         - [0] Timeout at collective: ALLREDUCE, #315\n"
      "         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync "
      "are:\n"
      "             [5] finished collective #182, but didn't join collective #183 (count from 1)\n"
      "         - Snapshot of ranks' latest states:\n"
      "           #182 finished ranks:\n"
      "             [5] finished ALLREDUCE\n"
      "           #315 started ranks:\n"
      "             [0, 1, 2, 3, 4, 6, 7] started ALLREDUCE\n";
  const HangAnalysis a = analyse(text);
  const auto g = hang_group(a);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->culprits, std::vector<int>{5});
  EXPECT_EQ(g->signature, "did-not-arrive");
  auto f = with_id(run_group(check_collectives, import_text(text, "job.log")),
                   "collective-hang-culprit");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subjects, std::vector<std::string>{"rank 5"});
}

TEST(HangReports, DesyncReportWithEveryRankInsideNamesNoOne) {
  const std::string text =
      watchdog(0, 39) +
      "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync "
      "are:\n"
      "\t   - [0, 1, 2, 3] joined but didn't finish collective #39 (count from 1)\n";
  const HangAnalysis a = analyse(text);
  const auto g = hang_group(a);
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->culprits.empty());
  EXPECT_EQ(g->signature, "all-stuck");
  // A subset that joined and never finished while the others moved on is stuck inside.
  const std::string subset =
      watchdog(0, 40) + watchdog(1, 40) + watchdog(2, 40) +
      "\t   - [3] joined but didn't finish collective #39 (count from 1)\n"
      "\t     [0, 1, 2] finished collective #39, but didn't join collective #40 (count from 1)\n";
  const auto s = hang_group(analyse(subset));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->culprits, std::vector<int>{3});
}

TEST(HangReports, RanksThatNeverJoinedAnyCollectiveAreNamed) {
  const std::string text =
      watchdog(0, 3) +
      "\t - To our best knowledge, ranks [6, 7] are the lagging ranks that caused this timeout. "
      "They never joined any collectives\n";
  const auto g = hang_group(analyse(text));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->culprits, (std::vector<int>{6, 7}));
}

TEST(HangReports, FingerprintMismatchNamesTheOddOperationOrNoOneOnATie) {
  // Three ranks: rank 2 alone runs BROADCAST at number 485.
  std::string three;
  for (int r : {0, 1})
    three += "RuntimeError: Detected mismatch between collectives on ranks. Rank " +
             std::to_string(r) +
             " is running collective: CollectiveFingerPrint(SequenceNumber=485, "
             "OpType=ALLREDUCE, TensorShape=[25], TensorDtypes=Float), but Rank 2 is running "
             "collective: CollectiveFingerPrint(SequenceNumber=485, OpType=BROADCAST, "
             "TensorShape=[1], TensorDtypes=Long).\n";
  const auto g = hang_group(analyse(three));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->signature, "desync");
  EXPECT_EQ(g->culprits, std::vector<int>{2});
  // Two ranks, one on each side: a desync, and no side can be singled out from the message.
  const std::string two =
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
      "collective: CollectiveFingerPrint(SequenceNumber=485, OpType=ALLREDUCE, TensorShape=[25]), "
      "but Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=485, "
      "OpType=BROADCAST, TensorShape=[1]).\n";
  const Facts f = import_text(two, "err.log");
  const auto t = hang_group(analyse_hang(f));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->signature, "desync");
  EXPECT_TRUE(t->culprits.empty());
  auto h = with_id(run_group(check_collectives, f), "collective-hang");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_NE(h[0].evidence.find("BROADCAST on rank 0"), std::string::npos) << h[0].evidence;
}

TEST(HangReports, WatchdogTimeoutsAtOneNumberInDifferentOperationsNameTheOddOne) {
  std::string text = watchdog(0, 3742816, "REDUCE");
  for (int r = 1; r < 4; ++r) text += watchdog(r, 3742816, "_ALLGATHER_BASE");
  const auto g = hang_group(analyse(text));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->signature, "desync");
  EXPECT_EQ(g->culprits, std::vector<int>{0});
}

TEST(HangReports, FlightRecorderAnalysisNamesTheMissingRanks) {
  const std::string text =
      "Not all ranks joining collective: sequence number: 31117\n"
      "internal record id: 31116\n"
      "group info: 0:default_pg\n"
      "collective: nccl:all_reduce\n"
      "missing ranks: {3, 4, 5}\n"
      "input sizes: [[1571911]]\n"
      "world size: 6\n"
      "expected ranks: {0, 1, 2, 3, 4, 5}\n"
      "collective state: scheduled\n";
  const Facts f = import_text(text, "fr_trace.txt");
  ASSERT_FALSE(f.imported.empty());
  EXPECT_EQ(f.imported[0].format, "nccl-debug-log");
  const auto g = hang_group(analyse_hang(f));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->culprits, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(g->op, "nccl:all_reduce");
}

std::string torchrun_summary(int root_rank, int root_exit) {
  return "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
         "============================================================\n"
         "train.py FAILED\n"
         "------------------------------------------------------------\n"
         "Failures:\n"
         "[1]:\n"
         "  time      : 2024-05-01_12:00:04\n"
         "  host      : node-a\n"
         "  rank      : 1 (local_rank: 1)\n"
         "  exitcode  : -15 (pid: 4412)\n"
         "  error_file: <N/A>\n"
         "  traceback : Signal 15 (SIGTERM) received by PID 4412\n"
         "------------------------------------------------------------\n"
         "Root Cause (first observed failure):\n"
         "[0]:\n"
         "  time      : 2024-05-01_12:00:00\n"
         "  host      : node-a\n"
         "  rank      : " +
         std::to_string(root_rank) + " (local_rank: " + std::to_string(root_rank) +
         ")\n"
         "  exitcode  : " +
         std::to_string(root_exit) +
         " (pid: 4414)\n"
         "  error_file: <N/A>\n"
         "  traceback : Signal 9 (SIGKILL) received by PID 4414\n"
         "============================================================\n";
}

TEST(HangReports, ALauncherFailureWithoutAHangIsAJobThatExited) {
  // torchrun's summary alone: the job failed, it did not hang. The first failure is said, and
  // no hang finding is raised.
  const Facts f = import_text(torchrun_summary(3, -9), "torchrun.log");
  const HangAnalysis a = analyse_hang(f);
  EXPECT_FALSE(a.any_hang());
  ASSERT_FALSE(a.groups.empty());
  const HangGroup& g = a.groups.back();
  EXPECT_EQ(g.signature, "job-exited");
  EXPECT_NE(g.summary.find("rank 3"), std::string::npos) << g.summary;
  EXPECT_NE(g.summary.find("OOM killer"), std::string::npos) << g.summary;
  EXPECT_TRUE(with_id(run_group(check_collectives, f), "collective-hang-culprit").empty());
  // mp.spawn and mpirun say the same in their words.
  for (const char* line :
       {"torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal "
        "SIGKILL\n",
        "mpirun noticed that process rank 3 with PID 1167 on node 10.10.21.2 exited on signal 11 "
        "(Segmentation fault).\n",
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4193 closing "
        "signal SIGHUP\n"}) {
    const HangAnalysis e = analyse(line);
    ASSERT_FALSE(e.groups.empty()) << line;
    EXPECT_FALSE(e.any_hang()) << line;
    EXPECT_EQ(e.groups.back().signature, "job-exited") << line;
  }
}

TEST(HangReports, TheFirstFailedRankIsTheCulpritWhenTheOthersTimedOut) {
  // Ranks 0-2 time out; torchrun names rank 3 (SIGKILL) as the first failure: the OOM killer
  // took it and the others waited for it.
  std::string text;
  for (int r = 0; r < 3; ++r)
    text += "[E ProcessGroupNCCL.cpp:475] [Rank " + std::to_string(r) +
            "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600100 "
            "milliseconds before timing out.\n";
  const Facts f = import_text(text + torchrun_summary(3, -9), "job.log");
  const auto g = hang_group(analyse_hang(f));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->culprits, std::vector<int>{3});
  auto c = with_id(run_group(check_collectives, f), "collective-hang-culprit");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NE(c[0].evidence.find("OOM killer"), std::string::npos) << c[0].evidence;
  // torchrun's root cause is a rank that timed out itself (its watchdog aborted first): a
  // victim, not named.
  const Facts v = import_text(text + torchrun_summary(1, -6), "job.log");
  const auto w = hang_group(analyse_hang(v));
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(std::find(w->culprits.begin(), w->culprits.end(), 1) == w->culprits.end());
}

TEST(HangReports, AWatchdogLineWrappedOverLinesIsOneTimeout) {
  const std::string text =
      "failure was: [Rank 0] Watchdog caught collective operation timeout: \n"
      "WorkNCCL(SeqNum=2059, OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1801398 \n"
      "milliseconds before timing out.\n";
  const Facts f = import_text(text, "rank0.log");
  ASSERT_FALSE(f.collective_ranks.empty());
  bool found = false;
  for (const auto& r : f.collective_ranks)
    if (r.rank == 0 && r.timeout_seq == 2059 && r.timeout_op == "ALLGATHER") found = true;
  EXPECT_TRUE(found);
  EXPECT_TRUE(hang_group(analyse_hang(f)).has_value());
}

TEST(HangReports, OlderWatchdogLinesWithoutSeqNumAreOneRankEach) {
  // PyTorch 1.9's form: no SeqNum, the whole WorkNCCL(…) on the line. None of them is a
  // wrapped line waiting for its continuation, so no rank's line swallows the next rank's.
  std::string text;
  for (int r = 1; r < 4; ++r)
    text += "[E ProcessGroupNCCL.cpp:566] [Rank " + std::to_string(r) +
            "] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, "
            "Timeout(ms)=60000) ran for 6685" + std::to_string(r) +
            " milliseconds before timing out.\n";
  const Facts f = import_text(text, "train.log");
  std::vector<int> ranks;
  for (const auto& r : f.collective_ranks)
    if (r.timeout_op == "BROADCAST" && r.rank) ranks.push_back(*r.rank);
  EXPECT_EQ(ranks, (std::vector<int>{1, 2, 3}));
  const auto g = hang_group(analyse(text));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->culprits, std::vector<int>{0});
}

TEST(HangReports, ARankBusyWithAProgressBarIsTheOneTheOthersWaitFor) {
  // torchrun --tee prefixes; rank 0's progress bar ends in '\r', so rank 2's line is glued to it
  // and the watchdog line is wrapped inside its own phrase.
  const std::string text =
      "[default0]:Grouping texts in chunks of 2049:   8%|#         | 726000/9672101 "
      "[02:32<30:38, 4866.01 examples/s][default2]:[E ProcessGroupNCCL.cpp:475] [Rank 2] "
      "Watchdog caught \n"
      "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
      "Timeout(ms)=600000) ran for 600888 milliseconds before timing out.\n"
      "[default1]:[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
      "ran for 600891 milliseconds before timing out.\n"
      "[default3]:[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
      "ran for 600892 milliseconds before timing out.\n";
  const auto g = hang_group(analyse(text));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->signature, "did-not-arrive");
  EXPECT_EQ(g->culprits, std::vector<int>{0});
}

TEST(HangReports, AMissingRankIsNamedOnlyWhenMostRanksLeftTheirState) {
  // Ranks 1-3 time out in one log, rank 0 printed nothing: a minority missing, named.
  std::string three;
  for (int r = 1; r < 4; ++r)
    three += "[E ProcessGroupNCCL.cpp:475] [Rank " + std::to_string(r) +
             "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
             "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800572 "
             "milliseconds before timing out.\n";
  const auto g = hang_group(analyse(three));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->culprits, std::vector<int>{0});
  // One rank's log of a 2-rank PG: the other rank left nothing, and one log names no one.
  const std::string one =
      "[rank14]:[E218 04:54:23.220620192 ProcessGroupNCCL.cpp:1844] [PG ID 12 PG GUID 120 Rank "
      "0] Timeout at NCCL work: 151, last enqueued NCCL work: 152, last completed NCCL work: 150.\n"
      "host:179:923 [6] NCCL INFO comm 0x5555 rank 0 nranks 2 cudaDev 6 busId e0000 - Init "
      "COMPLETE\n";
  const auto h = hang_group(analyse(one));
  ASSERT_TRUE(h.has_value());
  EXPECT_TRUE(h->culprits.empty());
}

TEST(HangReports, ARanksOwnCudaErrorNamesItWhenTheOthersOnlyTimeOut) {
  std::string text;
  for (int r = 0; r < 4; ++r)
    if (r != 2) text += watchdog(r, 88);
  text += watchdog(2, 88) +
          "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n";
  const auto g = hang_group(analyse(text));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->signature, "rank-error");
  EXPECT_EQ(g->culprits, std::vector<int>{2});
}

TEST(HangReports, NcclTestsRowsAloneAreACompletedRun) {
  // Rows pasted without the banner and the header: still nccl-tests, and a run that finished.
  const std::string rows =
      "       32768          4096   float    13.39    1.22    1.22  0e+00    11.85    1.38    "
      "1.38  0e+00\n"
      "       65536          8192   float    16.57    1.98    1.98  0e+00    13.83    2.37    "
      "2.37  0e+00\n"
      "      131072         16384   float    23.07    2.84    2.84  0e+00    18.39    3.56    "
      "3.56  0e+00\n"
      "# Out of bounds values : 0 OK\n";
  const Facts f = import_text(rows, "rows.log");
  ASSERT_FALSE(f.imported.empty());
  EXPECT_EQ(f.imported[0].format, "nccl-tests");
  EXPECT_EQ(f.measurements.size(), 6u);  // out-of-place and in-place per row
  const HangAnalysis a = analyse_hang(f);
  EXPECT_TRUE(a.any_collective_state);
  EXPECT_FALSE(a.any_hang());
  // A table of other numbers is not taken for nccl-tests.
  const Facts other = import_text(
      "       32768          4096   apples    13.39    1.22    1.22  0e+00    11.85    1.38    "
      "1.38  0e+00\n"
      "       65536          8192   apples    16.57    1.98    1.98  0e+00    13.83    2.37    "
      "2.37  0e+00\n"
      "      131072         16384   apples    23.07    2.84    2.84  0e+00    18.39    3.56    "
      "3.56  0e+00\n",
      "other.txt");
  EXPECT_TRUE(other.measurements.empty());
}

TEST(HangReports, NcclTestsWithoutAResultRowIsATransportThatNeverWorked) {
  const std::string text =
      "# nThread 1 nGpus 4 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: "
      "20 validation: 1\n"
      "#\n"
      "# Using devices\n"
      "#   Rank  0 Pid  15833 on node device  0 [0x02] GeForce GTX 1080 Ti\n"
      "#   Rank  1 Pid  15833 on node device  1 [0x03] GeForce GTX 1080 Ti\n"
      "node:15833:15833 [0] NCCL INFO Bootstrap : Using [0]eth0:10.2.3.32<0>\n"
      "node:15833:15833 [3] NCCL INFO nranks 4\n";
  const Facts f = import_text(text, "all_reduce_perf.log");
  ASSERT_FALSE(f.imported.empty());
  EXPECT_EQ(f.imported[0].format, "nccl-tests");
  auto t = with_id(run_group(check_collectives, f), "collective-hang-transport");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].severity, Severity::kWarning);  // a paste cut short reads the same
  // nccl-tests that failed says so: an error, not a stall.
  const Facts failed = import_text(
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5\n"
      "# Using devices\n"
      "test: Test CUDA failure common.cu:941 'system not yet initialized'\n"
      " .. test pid 54340: Test failure common.cu:891\n",
      "nccl-tests.txt");
  EXPECT_TRUE(with_id(run_group(check_collectives, failed), "collective-hang-transport").empty());
  EXPECT_FALSE(with_id(run_group(check_topology, failed), "nccl-error").empty());
}

}  // namespace
}  // namespace gpuvet::rules
