// The hang rules: each signature on small hand-made facts (which rank is named, and as what),
// then on the 8-rank fixtures of tests/fixtures/hang/ imported through the real path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixture_util.h"
#include "gpuvet/import.h"
#include "rules/rule_test_util.h"

namespace gpuvet::rules {
namespace {

using testing::run_group;
using testing::with_id;

CollectiveRank rank(int r, std::int64_t enq, std::int64_t done, bool timed_out,
                    std::string pg = "0") {
  CollectiveRank c;
  c.source = "pytorch-log";
  c.rank = r;
  c.pg = std::move(pg);
  c.world_size = 8;
  c.last_enqueued = enq;
  c.last_completed = done;
  if (timed_out) {
    c.timeout_seq = enq;
    c.timeout_op = "ALLREDUCE";
  }
  return c;
}

Facts eight(std::int64_t enq, std::int64_t done) {
  Facts f;
  for (int r = 0; r < 8; ++r) f.collective_ranks.push_back(rank(r, enq, done, true));
  return f;
}

const HangGroup& only_group(const HangAnalysis& a) {
  EXPECT_EQ(a.groups.size(), 1u);
  return a.groups.front();
}

// Two ranks, one a collective ahead of the other: as many ahead as behind, so it is not
// `ran-ahead` (that needs fewer ranks ahead than behind); the rank that never entered the
// collective the other waits in is the one named (docs/culprit.md, "a tie").
TEST(HangRules, TwoRanksOneAheadByOneNamesTheRankBehind) {
  Facts f;
  f.collective_ranks = {rank(0, 11, 10, true), rank(1, 10, 10, false)};
  for (auto& r : f.collective_ranks) r.world_size = 2;
  const HangAnalysis a = analyse_hang(f);
  const HangGroup& g = only_group(a);
  EXPECT_TRUE(g.hang);
  EXPECT_EQ(g.signature, "did-not-arrive") << g.summary;
  EXPECT_EQ(g.culprits, std::vector<int>{1}) << g.summary;
}

TEST(HangRules, RankBehindDidNotArrive) {
  Facts f = eight(1580, 1579);
  f.collective_ranks[3] = rank(3, 1579, 1579, false);
  f.collective_ranks[3].host = "node-b";
  f.collective_ranks[3].pci_bus_id = "0000:5d:00.0";
  const HangAnalysis a = analyse_hang(f);
  const HangGroup& g = only_group(a);
  EXPECT_TRUE(g.hang);
  EXPECT_EQ(g.signature, "did-not-arrive");
  EXPECT_EQ(g.culprits, std::vector<int>{3});
  EXPECT_EQ(g.seq, 1580);
  EXPECT_EQ(g.op, "ALLREDUCE");
  auto out = run_group(check_collectives, f);
  auto c = with_id(out, "collective-hang-culprit");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].severity, Severity::kCritical);
  EXPECT_EQ(c[0].subjects, std::vector<std::string>{"rank 3"});
  EXPECT_NE(c[0].evidence.find("rank 3 (host node-b, GPU (0000:5d:00.0)) did not arrive"),
            std::string::npos)
      << c[0].evidence;
  EXPECT_NE(c[0].evidence.find("ranks 0-2, 4-7 wait in ALLREDUCE seq 1580"), std::string::npos)
      << c[0].evidence;
}

TEST(HangRules, RankBehindAndInsideAnEarlierCollectiveIsStuckInside) {
  Facts f = eight(4412, 4411);
  f.collective_ranks[5] = rank(5, 4411, 4410, true);
  const HangAnalysis analysis = analyse_hang(f);
  const HangGroup& g = only_group(analysis);
  EXPECT_EQ(g.signature, "stuck-inside");
  EXPECT_EQ(g.culprits, std::vector<int>{5});
  EXPECT_EQ(g.ranks[5].place, "stuck-inside");
}

TEST(HangRules, OneRankOneCollectiveAheadRanAhead) {
  Facts f;
  for (int r = 0; r < 8; ++r) f.collective_ranks.push_back(rank(r, 10, 10, false));
  f.collective_ranks[6] = rank(6, 11, 10, true);
  const HangAnalysis analysis = analyse_hang(f);
  const HangGroup& g = only_group(analysis);
  EXPECT_EQ(g.signature, "ran-ahead");
  EXPECT_EQ(g.culprits, std::vector<int>{6});
  auto c = with_id(run_group(check_collectives, f), "collective-hang-culprit");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].subjects, std::vector<std::string>{"rank 6"});
  EXPECT_EQ(finding_action(c[0]), Action::kFixApplication);
  EXPECT_NE(c[0].evidence.find("ran ahead"), std::string::npos);
}

TEST(HangRules, EnteredButNotCompletedWhilePeersCompletedIsStuckInside) {
  Facts f = eight(77, 77);
  f.collective_ranks[0].timeout_seq.reset();  // peers done; only rank 2 times out
  f.collective_ranks[2] = rank(2, 77, 76, true);
  const HangAnalysis analysis = analyse_hang(f);
  const HangGroup& g = only_group(analysis);
  EXPECT_EQ(g.signature, "stuck-inside");
  EXPECT_EQ(g.culprits, std::vector<int>{2});
}

TEST(HangRules, EveryRankAtMinusOneIsAFrozenProcess) {
  Facts f = eight(-1, -1);
  for (auto& r : f.collective_ranks) {
    r.timeout_seq.reset();
    r.watchdog_stuck = true;
  }
  const HangAnalysis analysis = analyse_hang(f);
  const HangGroup& g = only_group(analysis);
  EXPECT_EQ(g.signature, "frozen-process");
  auto out = run_group(check_collectives, f);
  EXPECT_EQ(with_id(out, "collective-hang-frozen-process").size(), 1u);
  EXPECT_TRUE(with_id(out, "collective-hang-culprit").empty());
  EXPECT_TRUE(with_id(out, "collective-hang-transport").empty());
}

TEST(HangRules, NothingEverCompletedIsTheTransport) {
  Facts f = eight(1, -1);
  const HangAnalysis analysis = analyse_hang(f);
  const HangGroup& g = only_group(analysis);
  EXPECT_EQ(g.signature, "transport-never-worked");
  EXPECT_TRUE(g.culprits.empty());
  auto out = run_group(check_collectives, f);
  ASSERT_EQ(with_id(out, "collective-hang-transport").size(), 1u);
  EXPECT_TRUE(with_id(out, "collective-hang-culprit").empty());
}

TEST(HangRules, AllInsideTheSameCollectiveNamesNoOneUnlessARankLeftNoState) {
  Facts f = eight(1582, 1579);
  EXPECT_EQ(only_group(analyse_hang(f)).signature, "all-stuck");
  auto out = run_group(check_collectives, f);
  EXPECT_EQ(with_id(out, "collective-hang").size(), 1u);
  EXPECT_TRUE(with_id(out, "collective-hang-culprit").empty());

  f.collective_ranks.erase(f.collective_ranks.begin() + 4);  // rank 4 left no log
  const HangAnalysis analysis = analyse_hang(f);
  const HangGroup& g = only_group(analysis);
  EXPECT_EQ(g.signature, "missing-ranks");
  EXPECT_EQ(g.culprits, std::vector<int>{4});
  auto c = with_id(run_group(check_collectives, f), "collective-hang-culprit");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].subjects, std::vector<std::string>{"rank 4"});
}

TEST(HangRules, AnXidOnOneRanksGpuNamesItWhenAllAreInside) {
  Facts f = eight(300, 299);
  f.collective_ranks[6].pci_bus_id = "0000:ba:00.0";
  XidEvent x;
  x.code = 79;
  x.pci_bus_id = "0000:ba:00";
  x.message = "GPU has fallen off the bus.";
  f.kernel_log.xids.push_back(x);
  const HangAnalysis analysis = analyse_hang(f);
  const HangGroup& g = only_group(analysis);
  EXPECT_EQ(g.signature, "stuck-inside");
  EXPECT_EQ(g.culprits, std::vector<int>{6});
  auto c = with_id(run_group(check_collectives, f), "collective-hang-culprit");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(finding_action(c[0]), Action::kDrain);
  EXPECT_NE(c[0].evidence.find("Xid 79"), std::string::npos);
}

TEST(HangRules, AnXidIsNotPinnedOnARankWhenTheJobSpansNodes) {
  // Bus ids repeat between nodes and the kernel log names none: no match across hosts.
  Facts f = eight(300, 299);
  for (auto& r : f.collective_ranks) {
    r.host = r.rank < 4 ? "node-a" : "node-b";
    r.pci_bus_id = "0000:ba:00.0";
  }
  XidEvent x;
  x.code = 79;
  x.pci_bus_id = "0000:ba:00";
  f.kernel_log.xids.push_back(x);
  const HangAnalysis analysis = analyse_hang(f);
  const HangGroup& g = only_group(analysis);
  EXPECT_EQ(g.signature, "all-stuck");
  EXPECT_TRUE(g.culprits.empty());
  for (const auto& h : g.ranks) EXPECT_TRUE(h.kernel.empty()) << h.rank;
}

TEST(HangRules, NoTimeoutAndEqualCountsIsNoHang) {
  Facts f;
  for (int r = 0; r < 8; ++r) f.collective_ranks.push_back(rank(r, 5000, 5000, false));
  const HangAnalysis a = analyse_hang(f);
  EXPECT_FALSE(a.any_hang());
  EXPECT_TRUE(a.any_collective_state);
  EXPECT_TRUE(run_group(check_collectives, f).findings.empty());
  EXPECT_FALSE(analyse_hang(Facts{}).any_collective_state);
}

TEST(HangRules, RasMissingRankIsTheCulpritAndAMismatchOnlyAWarning) {
  Facts f;
  RasCommunicator c;
  c.id = "0xae94";
  c.size = 8;
  c.errors = {"INCOMPLETE", "DEAD"};
  c.missing_ranks = {3};
  c.dead_ranks = {3};
  f.ras_communicators.push_back(c);
  auto culprit = with_id(run_group(check_collectives, f), "collective-hang-culprit");
  ASSERT_EQ(culprit.size(), 1u);
  EXPECT_EQ(culprit[0].subjects, std::vector<std::string>{"rank 3"});
  EXPECT_NE(culprit[0].evidence.find("considered dead"), std::string::npos);

  Facts m;
  RasCommunicator mm;
  mm.id = "#0-0 (fa93)";
  mm.errors = {"MISMATCH"};
  m.ras_communicators.push_back(mm);
  CollectiveRank out;
  out.source = "nccl-ras";
  out.rank = 12;
  out.pg = "#0-0 (fa93)";
  out.ras_status = "outlier";
  out.op_counts["AllGather"] = 641;
  m.collective_ranks.push_back(out);
  auto h = with_id(run_group(check_collectives, m), "collective-hang");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].severity, Severity::kWarning);
  EXPECT_EQ(h[0].subjects, std::vector<std::string>{"rank 12"});

  // RAS says how many ranks launched up to each operation: rank 12 is one of 2 that launched
  // 641 while 30 stopped at 640. It ran ahead and waits for the others: not the culprit.
  m.ras_communicators.back().launched = {{"640", 30}, {"641", 2}};
  const HangAnalysis ahead = analyse_hang(m);
  ASSERT_EQ(ahead.groups.size(), 1u);
  EXPECT_TRUE(ahead.groups[0].culprits.empty());
  EXPECT_EQ(ahead.groups[0].ranks.at(0).place, "ras-ahead");
  auto w = with_id(run_group(check_collectives, m), "collective-hang");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].severity, Severity::kWarning);
  EXPECT_NE(w[0].evidence.find("not the culprit"), std::string::npos) << w[0].evidence;

  // The other way round: rank 12 at 641 behind 30 ranks at 642 is the one they wait for.
  m.ras_communicators.back().launched = {{"642", 30}, {"641", 2}};
  EXPECT_EQ(analyse_hang(m).groups.at(0).culprits, std::vector<int>{12});
}

// ------------------------------------------------------------------ the fixtures

std::string fixture(const std::string& rel) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/hang/" + rel;
}

HangAnalysis analyse_dir(const std::string& rel) {
  auto f = import_path(fixture(rel));
  EXPECT_TRUE(f.is_ok()) << rel << ": " << f.status().to_string();
  return f.is_ok() ? analyse_hang(f.value()) : HangAnalysis{};
}

TEST(HangFixtures, EachSyntheticSignatureNamesTheRightRanks) {
  struct Case {
    const char* dir;
    const char* signature;
    std::vector<int> culprits;
  };
  const Case cases[] = {
      {"synthetic/did-not-arrive", "did-not-arrive", {3}},
      {"synthetic/stuck-inside-xid", "stuck-inside", {5}},
      {"synthetic/ran-ahead", "ran-ahead", {6}},
      {"synthetic/frozen-process", "frozen-process", {}},
      {"synthetic/transport-never-worked", "transport-never-worked", {}},
      {"synthetic/missing-rank", "missing-ranks", {4}},
      {"synthetic/flight-recorder", "did-not-arrive", {2}},
      {"synthetic/ras-json", "ras-missing", {3}},
      {"real/nccl-1762", "ras-missing", {1}},
  };
  for (const auto& c : cases) {
    const HangAnalysis a = analyse_dir(c.dir);
    ASSERT_FALSE(a.groups.empty()) << c.dir;
    const HangGroup& g = a.groups.front();
    EXPECT_TRUE(g.hang) << c.dir;
    EXPECT_EQ(g.signature, c.signature) << c.dir;
    EXPECT_EQ(g.culprits, c.culprits) << c.dir;
  }
}

TEST(HangFixtures, TheCulpritCarriesItsHostPidGpuAndWhy) {
  const HangAnalysis a = analyse_dir("synthetic/did-not-arrive");
  const HangGroup& g = a.groups.front();
  ASSERT_EQ(g.ranks.size(), 8u);
  const HangRank& r3 = g.ranks[3];
  EXPECT_EQ(r3.place, "did-not-arrive");
  EXPECT_EQ(r3.host, "gpu-node-07");
  EXPECT_EQ(r3.pid, 41233);
  EXPECT_EQ(r3.cuda_dev, 3);
  EXPECT_EQ(r3.pci_bus_id, "0000:5d:00.0");
  ASSERT_FALSE(r3.errors.empty());
  EXPECT_NE(r3.errors[0].find("CUDA out of memory"), std::string::npos);
  const HangAnalysis x = analyse_dir("synthetic/stuck-inside-xid");
  const HangRank& r5 = x.groups.front().ranks[5];
  ASSERT_FALSE(r5.kernel.empty());
  EXPECT_NE(r5.kernel[0].find("Xid 79"), std::string::npos);
}

TEST(HangFixtures, HealthyAndDocumentedDumpsAreNoHang) {
  for (const char* dir : {"synthetic/healthy", "real/fr-tutorial"}) {
    const HangAnalysis a = analyse_dir(dir);
    EXPECT_TRUE(a.any_collective_state) << dir;
    EXPECT_FALSE(a.any_hang()) << dir;
  }
}

TEST(HangFixtures, RealLogsWithEveryRankInsideNameNoOne) {
  for (const char* dir : {"real/llamafactory-7396", "real/basicsr-737"}) {
    const HangAnalysis a = analyse_dir(dir);
    ASSERT_FALSE(a.groups.empty()) << dir;
    EXPECT_EQ(a.groups.front().signature, "all-stuck") << dir;
    EXPECT_TRUE(a.groups.front().culprits.empty()) << dir;
  }
  // 30 ranks launched up to AllGather 640, ranks 12 and 13 up to 641: those two ran ahead and
  // wait for the rest, so RAS's outliers are not the culprits (and no one else is singled out).
  const HangAnalysis m = analyse_dir("real/nccl-1911");
  ASSERT_FALSE(m.groups.empty());
  EXPECT_EQ(m.groups.front().signature, "ras-mismatch");
  EXPECT_TRUE(m.groups.front().culprits.empty());
  for (const auto& h : m.groups.front().ranks) EXPECT_EQ(h.place, "ras-ahead") << h.rank;
}

// The shared corpus's real watchdog logs (transcribed from public issues, with provenance in
// ../shared/fixtures/real/PROVENANCE.md): every rank shown is inside the same collective.
TEST(HangFixtures, SharedCorpusWatchdogLogs) {
  struct Case {
    const char* file;
    std::int64_t seq;
    const char* op;
    std::vector<int> ranks;
  };
  const Case cases[] = {
      {"nccl-log/basicsr-issue737-pytorch-watchdog-allreduce-timeout.log",
       808,
       "ALLREDUCE",
       {0, 1, 2}},
      {"nccl-log/llamafactory-issue6269-watchdog-reduce-scatter-timeout.log",
       7753,
       "_REDUCE_SCATTER_BASE",
       {}},
      {"nccl-log/ofa-issue271-8xv100-legacy-watchdog-timeout-1800s.log",
       469508,
       "ALLREDUCE",
       {1, 2, 3, 6, 7}},
  };
  for (const auto& c : cases) {
    READ_SHARED_OR_SKIP(text, c.file);
    const HangAnalysis a = analyse_hang(import_text(text, c.file));
    ASSERT_EQ(a.groups.size(), 1u) << c.file;
    const HangGroup& g = a.groups.front();
    EXPECT_TRUE(g.hang) << c.file;
    EXPECT_EQ(g.signature, "all-stuck") << c.file;
    EXPECT_TRUE(g.culprits.empty()) << c.file;
    EXPECT_EQ(g.seq, c.seq) << c.file;
    EXPECT_EQ(g.op, c.op) << c.file;
    if (!c.ranks.empty()) {
      std::vector<int> seen;
      for (const auto& h : g.ranks) seen.push_back(h.rank);
      EXPECT_EQ(seen, c.ranks) << c.file;
    }
  }
}

TEST(HangFixtures, DiagnoseFromTheDirectoryReportsTheHangToo) {
  auto f = import_path(fixture("synthetic/did-not-arrive"));
  ASSERT_TRUE(f.is_ok());
  const Diagnosis d = diagnose(f.value());
  bool found = false;
  for (const auto& x : d.findings)
    if (x.id == "collective-hang-culprit") {
      found = true;
      EXPECT_EQ(x.subjects, std::vector<std::string>{"rank 3"});
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(diagnosis_exit_code(d), 2);
  bool symptom = false;
  for (const auto& s : d.symptoms) symptom = symptom || s.id == "hangs-nccl-timeout";
  EXPECT_TRUE(symptom);
}

}  // namespace
}  // namespace gpuvet::rules
