// The hang inputs: PyTorch watchdog lines and NCCL init lines (collective_log), flight-recorder
// dumps (flight_recorder) and NCCL RAS status (nccl_ras), each on golden text and on the
// fixtures of tests/fixtures/hang/, recognised by content through the registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fixture_util.h"
#include "gpuvet/import.h"
#include "import/collective_log.h"
#include "import/flight_recorder.h"
#include "import/nccl_log.h"
#include "import/nccl_ras.h"

namespace gpuvet::import {
namespace {

using namespace gpuvet::testing;

std::string hang(const std::string& rel) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/hang/" + rel;
}

const CollectiveRank* find_rank(const std::vector<CollectiveRank>& v, int rank,
                                const std::string& source) {
  for (const auto& r : v)
    if (r.rank == rank && r.source == source) return &r;
  return nullptr;
}

TEST(CollectiveLog, WatchdogTimeoutAndProgressLinesJoinIntoOneRecordPerRankAndPg) {
  const std::string text =
      "host-a:4242:4300 [3] NCCL INFO ncclCommInitRank comm 0x55d0 rank 3 nranks 8 cudaDev 3 "
      "nvmlDev 3 busId 5d000 commId 0x7c1e - Init COMPLETE\n"
      "[rank3]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, "
      "NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) ran for 600061 milliseconds "
      "before timing out.\n"
      "[rank3]:[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 3] Exception "
      "(either an error or timeout) detected by watchdog at work: 7753, last enqueued NCCL "
      "work: 7755, last completed NCCL work: 7752.\n";
  std::vector<CollectiveRank> out;
  EXPECT_EQ(parse_collective_log(text, out), 3u);
  ASSERT_EQ(out.size(), 1u);
  const CollectiveRank& r = out[0];
  EXPECT_EQ(r.source, "pytorch-log");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.pg, "1");
  EXPECT_EQ(r.timeout_seq, 7753);
  EXPECT_EQ(r.timeout_op, "_REDUCE_SCATTER_BASE");
  EXPECT_EQ(r.timeout_ms, 600000);
  EXPECT_EQ(r.ran_ms, 600061);
  EXPECT_EQ(r.timeout_time, "1206 18:44:12.715298746");
  EXPECT_EQ(r.last_enqueued, 7755);
  EXPECT_EQ(r.last_completed, 7752);
  EXPECT_EQ(r.host, "host-a");
  EXPECT_EQ(r.pid, 4242);
  EXPECT_EQ(r.cuda_dev, 3);
  EXPECT_EQ(r.pci_bus_id, "0000:5d:00.0");
  EXPECT_EQ(r.world_size, 8);
}

TEST(CollectiveLog, ReadsEveryPrefixVariant) {
  const std::string text =
      "[PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected "
      "by watchdog at work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807.\n"
      "[PG 0 (default_pg) Rank 7] Exception (either an error or timeout) detected by watchdog "
      "at work: 80078, last enqueued NCCL work: 80078, last completed NCCL work: 80077.\n"
      "[PG ID 2 PG GUID 9 Rank 4] Timeout at NCCL work: 610, last enqueued NCCL work: 616, last "
      "completed NCCL work: 609.\n"
      "[rank5]:[E0101 00:00:01.1 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0 Rank 5] failure "
      "detected by watchdog at work sequence id: 12 PG status: last enqueued work: 13, last "
      "completed work: 11\n"
      "[rank2]:[E0101 00:00:01.1 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
      "Received a dump signal due to a collective timeout from  rank 0 and we will try our best "
      "to dump the debug info. Last enqueued NCCL work: -1, last completed NCCL work: -1.\n";
  std::vector<CollectiveRank> out;
  parse_collective_log(text, out);
  auto at = [&](int rank) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& r) { return r.rank == rank; });
    EXPECT_NE(it, out.end()) << rank;
    return it == out.end() ? CollectiveRank{} : *it;
  };
  EXPECT_EQ(at(1).pg, "0");
  EXPECT_EQ(at(1).pg_name, "default_pg");
  EXPECT_EQ(at(1).last_enqueued, 811);
  EXPECT_EQ(at(7).pg_name, "default_pg");
  EXPECT_EQ(at(7).timeout_seq, 80078);
  EXPECT_EQ(at(4).pg, "2");
  EXPECT_EQ(at(4).last_completed, 609);
  EXPECT_EQ(at(5).timeout_seq, 12);
  EXPECT_EQ(at(5).last_enqueued, 13);
  EXPECT_EQ(at(5).last_completed, 11);
  EXPECT_EQ(at(2).last_enqueued, -1);
  EXPECT_FALSE(at(2).timeout_seq);  // the dump signal is not its own timeout
}

TEST(CollectiveLog, ErrorLinesBelongToTheFilesOnlyRankAndTheStuckWatchdogIsSeen) {
  const std::string text =
      "node:7:7 [0] NCCL INFO comm 0x1 rank 6 nRanks 8 nNodes 1 localRanks 8 localRank 6 MNNVL 0\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
      "[PG ID 0 PG GUID 0(default_pg) Rank 6] ProcessGroupNCCL's watchdog got stuck for 480 "
      "seconds without making progress in monitoring enqueued collectives.\n";
  std::vector<CollectiveRank> out;
  parse_collective_log(text, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rank, 6);
  EXPECT_TRUE(out[0].watchdog_stuck);
  EXPECT_EQ(out[0].host, "node");
  EXPECT_EQ(out[0].cuda_dev, 0);  // the [dev] of the prefix when the line has no cudaDev
  ASSERT_EQ(out[0].errors.size(), 1u);
  EXPECT_NE(out[0].errors[0].find("CUDA out of memory"), std::string::npos);
}

TEST(CollectiveLog, NcclInitLinesAloneSayWhoEachRankIs) {
  std::vector<CollectiveRank> out;
  parse_collective_log(read_file(hang("synthetic/healthy/rank5.log")), out);
  const auto* r = find_rank(out, 5, "pytorch-log");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->last_enqueued, 5000);
  EXPECT_EQ(r->last_completed, 5000);
  EXPECT_FALSE(r->timeout_seq);
  EXPECT_EQ(r->pci_bus_id, "0000:ab:00.0");
  std::vector<CollectiveRank> only_init;
  parse_collective_log(
      "h:1:2 [1] NCCL INFO comm 0x7 rank 1 nranks 16 cudaDev 1 nvmlDev 1 - Init COMPLETE\n",
      only_init);
  ASSERT_EQ(only_init.size(), 1u);
  EXPECT_EQ(only_init[0].source, "nccl-log");
  EXPECT_EQ(only_init[0].world_size, 16);
}

TEST(CollectiveLog, GarbageAndQuotesGiveNothing) {
  std::vector<CollectiveRank> out;
  for (const char* text :
       {"", "\n\n", "last enqueued", "[PG ", "[Rank ", "[rank", "SeqNum=99999999999999999999999",
        "[PG 1 Rank 99999999999] last "
        "enqueued NCCL work: -7"})
    parse_collective_log(text, out);
  for (const auto& r : out) EXPECT_NE(r.last_enqueued, -7);
}

TEST(CollectiveLog, RankFromFileName) {
  EXPECT_EQ(rank_from_file_name("/tmp/x/rank3.log"), 3);
  EXPECT_EQ(rank_from_file_name("logs/Rank_12.txt"), 12);
  EXPECT_EQ(rank_from_file_name("nccl_trace_rank_7"), 7);
  EXPECT_EQ(rank_from_file_name("fr_trace_5"), 5);
  EXPECT_EQ(rank_from_file_name("/a/rank9/_dump_2.json"), 2);
  EXPECT_FALSE(rank_from_file_name("train.log"));
  EXPECT_FALSE(rank_from_file_name("rank1_rank2.log"));
  EXPECT_FALSE(rank_from_file_name("ranking.log"));
}

TEST(CollectiveLog, TheNcclLogImporterRecognisesProgressOnlyLogs) {
  const std::string only_progress = read_file(hang("synthetic/ran-ahead/rank0.log"));
  EXPECT_GE(sniff_nccl_log(only_progress), 90);
  EXPECT_GE(sniff_nccl_log("[PG 1 Rank 3] Timeout at NCCL work: 7753, last enqueued NCCL work: "
                           "7755, last completed NCCL work: 7752.\n"),
            90);
  Facts f;
  ASSERT_TRUE(import_nccl_log(only_progress, f).is_ok());
  ASSERT_EQ(f.collective_ranks.size(), 1u);
  EXPECT_EQ(f.collective_ranks[0].last_enqueued, 10);
}

TEST(FlightRecorder, JsonDumpGivesPgStatusAndTheFirstPendingEntry) {
  const std::string text = read_file(hang("synthetic/flight-recorder/nccl_trace_rank_5"));
  EXPECT_EQ(sniff_flight_recorder_json(text), 95);
  EXPECT_EQ(sniff_nccl_log(text), 0);
  Facts f;
  ASSERT_TRUE(import_flight_recorder_json(text, f).is_ok());
  ASSERT_EQ(f.collective_ranks.size(), 1u);
  const auto& r = f.collective_ranks[0];
  EXPECT_EQ(r.source, "flight-recorder");
  EXPECT_FALSE(r.rank);  // the file name gives it (import_path)
  EXPECT_EQ(r.pg, "0");
  EXPECT_EQ(r.pg_name, "default_pg");
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.last_enqueued, 42);
  EXPECT_EQ(r.last_completed, 41);
  EXPECT_EQ(r.timeout_seq, 42);
  EXPECT_EQ(r.timeout_op, "nccl:all_reduce");
  EXPECT_EQ(r.pending_entries, 1);
  EXPECT_TRUE(f.input_problems.empty());
}

TEST(FlightRecorder, ThroughThePathTheFileNameGivesTheRank) {
  auto f = import_path(hang("synthetic/flight-recorder"));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ(f.value().collective_ranks.size(), 8u);
  for (const auto& r : f.value().collective_ranks) {
    ASSERT_TRUE(r.rank);
    EXPECT_EQ(r.last_enqueued, *r.rank == 2 ? 41 : 42) << *r.rank;
    ASSERT_TRUE(r.origin);
    EXPECT_NE(r.origin->find("nccl_trace_rank_" + std::to_string(*r.rank)), std::string::npos);
  }
}

TEST(FlightRecorder, DocumentedExampleIsAllCompleted) {
  Facts f;
  ASSERT_TRUE(import_flight_recorder_json(read_file(hang("real/fr-tutorial/nccl_trace_rank_0")), f)
                  .is_ok());
  ASSERT_EQ(f.collective_ranks.size(), 1u);
  EXPECT_EQ(f.collective_ranks[0].last_enqueued, 2);
  EXPECT_EQ(f.collective_ranks[0].last_completed, 2);
  EXPECT_EQ(f.collective_ranks[0].pending_entries, 0);
  EXPECT_FALSE(f.collective_ranks[0].timeout_seq);
}

TEST(FlightRecorder, BrokenJsonAndPicklesAreInputProblems) {
  const std::string cut = "{\"version\": \"2.5\", \"pg_config\": {\"0\": {\"name\": \"0\"";
  EXPECT_EQ(sniff_flight_recorder_json(cut), 95);
  Facts f;
  EXPECT_FALSE(import_flight_recorder_json(cut, f).is_ok());
  ASSERT_EQ(f.input_problems.size(), 1u);
  EXPECT_NE(f.input_problems[0].find("not valid JSON"), std::string::npos);

  const std::string pickle = std::string(
      "\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c"
      "\x07version\x94\x8c\x03"
      "2.5\x94\x8c\tpg_config\x94}",
      44);
  EXPECT_EQ(sniff_flight_recorder_pickle(pickle), 95);
  EXPECT_EQ(sniff_flight_recorder_json(pickle), 0);
  Facts p;
  EXPECT_FALSE(import_flight_recorder_pickle(pickle, p).is_ok());
  ASSERT_EQ(p.input_problems.size(), 1u);
  EXPECT_NE(p.input_problems[0].find("pickle"), std::string::npos);

  Facts deep;
  EXPECT_FALSE(import_flight_recorder_json(
                   "{\"pg_status\": " + std::string(5000, '[') + std::string(5000, ']') + "}", deep)
                   .is_ok());
}

TEST(NcclRas, TextMismatchNamesTheOutliersWithTheirCounts) {
  const std::string text = read_file(hang("real/nccl-1911/ncclras.txt"));
  EXPECT_EQ(sniff_nccl_ras_text(text), 100);
  EXPECT_EQ(sniff_nccl_log(text), 0);
  Facts f;
  ASSERT_TRUE(import_nccl_ras_text(text, f).is_ok());
  ASSERT_EQ(f.ras_communicators.size(), 1u);
  EXPECT_EQ(f.ras_communicators[0].id, "#0-0 (fa93daea854b060b)");
  EXPECT_EQ(f.ras_communicators[0].errors, std::vector<std::string>{"MISMATCH"});
  ASSERT_EQ(f.collective_ranks.size(), 2u);
  const auto& r12 = f.collective_ranks[0];
  EXPECT_EQ(r12.rank, 12);
  EXPECT_EQ(r12.cuda_dev, 4);
  EXPECT_EQ(r12.pid, 323032);
  EXPECT_EQ(r12.host, "10.137.190.124");
  EXPECT_EQ(r12.ras_status, "outlier");
  EXPECT_EQ(r12.op_counts.at("AllGather"), 641);
}

TEST(NcclRas, TextIncompleteListsTheMissingRank) {
  Facts f;
  ASSERT_TRUE(import_nccl_ras_text(read_file(hang("real/nccl-1762/ncclras.txt")), f).is_ok());
  const auto it = std::find_if(f.ras_communicators.begin(), f.ras_communicators.end(),
                               [](const auto& c) { return c.id == "#0-0 (b3398875b8b2a063)"; });
  ASSERT_NE(it, f.ras_communicators.end());
  EXPECT_EQ(it->missing_ranks, std::vector<int>{1});
  const auto* r1 = find_rank(f.collective_ranks, 1, "nccl-ras");
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->ras_status, "missing");
  EXPECT_EQ(r1->pid, 60004);
  // group 1's MISMATCH has no entry of its own: its table row stays.
  EXPECT_TRUE(std::any_of(f.ras_communicators.begin(), f.ras_communicators.end(),
                          [](const auto& c) { return c.id == "group 1"; }));
  Facts missing_line;
  ASSERT_TRUE(import_nccl_ras_text("Job summary\n\nCommunicators\nGroup Status  Errors\n\nErrors\n"
                                   "======\n\n#1-0 (ab12) INCOMPLETE\n  Missing communicator data "
                                   "from 1 rank\n  The missing rank: 21\n",
                                   missing_line)
                  .is_ok());
  ASSERT_EQ(missing_line.ras_communicators.size(), 1u);
  EXPECT_EQ(missing_line.ras_communicators[0].missing_ranks, std::vector<int>{21});
}

TEST(NcclRas, JsonGivesEveryRankAndTheDeadOne) {
  const std::string text = read_file(hang("synthetic/ras-json/ncclras.json"));
  EXPECT_EQ(sniff_nccl_ras_json(text), 95);
  Facts f;
  ASSERT_TRUE(import_nccl_ras_json(text, f).is_ok());
  EXPECT_EQ(f.collective_ranks.size(), 8u);
  ASSERT_EQ(f.ras_communicators.size(), 1u);
  EXPECT_EQ(f.ras_communicators[0].dead_ranks, std::vector<int>{3});
  const auto* r3 = find_rank(f.collective_ranks, 3, "nccl-ras");
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->ras_status, "dead");
  const auto* r0 = find_rank(f.collective_ranks, 0, "nccl-ras");
  ASSERT_TRUE(r0);
  EXPECT_EQ(r0->op_counts.at("AllReduce"), 1580);
  EXPECT_EQ(r0->ras_status, "ok");
}

TEST(NcclRas, JsonWithTheMissingCommaOf2289IsRepaired) {
  const std::string text =
      "{\n\"nccl_version\": \"2.28.9\",\n\"communicators\": [\n{\n\"hash\": \"0xa\",\n\"size\": "
      "2,\n\"ranks\": [],\n\"missing_ranks\": [\n{\n\"rank\": 1,\n\"nvml_dev\": 0\n\"status\": "
      "{\"unresponsive\": true, \"considered_dead\": false}\n}\n]\n}\n]\n}\n";
  Facts f;
  ASSERT_TRUE(import_nccl_ras_json(text, f).is_ok());
  ASSERT_EQ(f.ras_communicators.size(), 1u);
  EXPECT_EQ(f.ras_communicators[0].missing_ranks, std::vector<int>{1});
  Facts bad;
  EXPECT_FALSE(import_nccl_ras_json("{\"communicators\": [{\"hash\": ", bad).is_ok());
  EXPECT_FALSE(bad.input_problems.empty());
}

TEST(HangImport, RegistryRecognisesEachFixtureByContent) {
  const std::pair<const char*, const char*> cases[] = {
      {"synthetic/did-not-arrive/rank3.log", "nccl-debug-log"},
      {"synthetic/frozen-process/rank0.log", "nccl-debug-log"},
      {"synthetic/flight-recorder/nccl_trace_rank_0", "pytorch-flight-recorder"},
      {"synthetic/ras-json/ncclras.json", "nccl-ras-json"},
      {"synthetic/stuck-inside-xid/dmesg.txt", "kernel-log"},
      {"real/nccl-1911/ncclras.txt", "nccl-ras"},
      {"real/llamafactory-7396/torchrun.log", "nccl-debug-log"},
      {"real/basicsr-737/train.log", "nccl-debug-log"},
  };
  for (const auto& [file, format] : cases) {
    Facts f = import_text(read_file(hang(file)), file);
    ASSERT_EQ(f.imported.size(), 1u) << file;
    EXPECT_EQ(f.imported[0].format, format) << file;
  }
}

}  // namespace
}  // namespace gpuvet::import
