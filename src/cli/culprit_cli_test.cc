// `gpuvet culprit` through the binary: on each 8-rank hang fixture it names the right rank
// first (text) and in gpuvet.culprit/1, exits 2 on a hang and 0 on healthy logs, and bad
// input (a flight-recorder file that is not JSON, an empty directory, unreadable files) is a
// message on stderr and exit 3.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "gpuvet/env.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

CommandResult gpuvet(std::vector<std::string> args) { return gpuvet::testing::run_gpuvet(args); }

std::string hang(const std::string& rel) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/hang/" + rel;
}

// A fresh directory under the test's temporary folder.
fs::path scratch(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("gpuvet-culprit-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

TEST(CulpritCli, NamesTheCulpritFirstForEachSignature) {
  struct Case {
    const char* dir;
    int exit_code;
    std::vector<std::string> want;  // in this order in the text
  };
  const Case cases[] = {
      {"synthetic/did-not-arrive",
       2,
       {"CULPRIT rank 3: did not arrive — host gpu-node-07, pid 41233, GPU 3 0000:5d:00.0",
        "its log: [rank3]: torch.OutOfMemoryError: CUDA out of memory",
        "PG 0 (default_pg), 8 ranks: ALLREDUCE seq 1580 — did-not-arrive",
        "collective-hang-culprit  rank 3", "Action: fix-application"}},
      {"synthetic/stuck-inside-xid",
       2,
       {"CULPRIT rank 5: stuck inside — host gpu-node-07, pid 41235, GPU 5 0000:ab:00.0",
        "collective-hang-culprit  rank 5"}},
      {"synthetic/ran-ahead",
       2,
       {"CULPRIT rank 6: ran ahead", "BROADCAST seq 11 — ran-ahead", "Action: fix-application"}},
      {"synthetic/frozen-process",
       2,
       {"NO SINGLE CULPRIT: every rank is frozen", "frozen-process",
        "collective-hang-frozen-process", "Action: fix-application"}},
      {"synthetic/transport-never-worked",
       2,
       {"NO SINGLE CULPRIT: no rank ever completed a collective", "transport-never-worked",
        "collective-hang-transport", "Action: fix-config"}},
      {"synthetic/missing-rank",
       2,
       {"7 inputs read, 7 ranks seen", "CULPRIT rank 4: no input", "missing-ranks",
        "collective-hang-culprit  rank 4"}},
      {"synthetic/flight-recorder", 2, {"CULPRIT rank 2: did not arrive", "nccl_trace_rank_2"}},
      {"synthetic/ras-json", 2, {"CULPRIT rank 3: RAS: dead", "host 10.0.7.12, pid 41233"}},
      {"real/nccl-1762", 2, {"CULPRIT rank 1: RAS: missing", "pid 60004"}},
      {"real/llamafactory-7396", 2, {"NO SINGLE CULPRIT", "PG 1: ALLREDUCE seq 1580 — all-stuck"}},
      // Ranks 12 and 13 launched one AllGather more than the other 30: they ran ahead and wait,
      // so they are not named; the warning says so.
      {"real/nccl-1911",
       1,
       {"NO SINGLE CULPRIT", "ranks 12, 13 launched more operations", "RAS: ran ahead",
        "warning collective-hang"}},
  };
  for (const auto& c : cases) {
    auto r = gpuvet({"culprit", "--no-color", hang(c.dir)});
    EXPECT_EQ(r.exit_code, c.exit_code) << c.dir << "\n" << r.out << r.err;
    std::size_t at = 0;
    for (const auto& w : c.want) {
      const std::size_t p = r.out.find(w, at);
      EXPECT_NE(p, std::string::npos) << c.dir << ": \"" << w << "\" (in order) in\n" << r.out;
      if (p != std::string::npos) at = p;
    }
  }
}

TEST(CulpritCli, TheOutputStartsWithTheCulprit) {
  auto r = gpuvet({"culprit", "--no-color", hang("synthetic/did-not-arrive")});
  const auto first = r.out.find("CULPRIT");
  ASSERT_NE(first, std::string::npos) << r.out;
  EXPECT_LT(first, r.out.find("Findings:"));
  EXPECT_LT(first, r.out.find("  rank  place"));
  // Only rank 3 is named a culprit.
  EXPECT_EQ(r.out.find("CULPRIT", first + 1), std::string::npos) << r.out;
}

TEST(CulpritCli, JsonIsTheCulpritDocument) {
  auto r = gpuvet({"culprit", "--json", hang("synthetic/stuck-inside-xid")});
  ASSERT_EQ(r.exit_code, 2) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpuvet.culprit/1");
  EXPECT_EQ(j["verdict"], "hang");
  EXPECT_EQ(j["exit_code"], 2);
  ASSERT_EQ(j["culprits"].size(), 1u);
  const auto& c = j["culprits"][0];
  EXPECT_EQ(c["rank"], 5);
  EXPECT_EQ(c["place"], "stuck-inside");
  EXPECT_EQ(c["pci_bus_id"], "0000:ab:00.0");
  EXPECT_EQ(c["host"], "gpu-node-07");
  EXPECT_EQ(c["seq"], 4412);
  ASSERT_FALSE(c["kernel_log"].empty());
  bool culprit_finding = false;
  for (const auto& f : j["findings"])
    if (f["id"] == "collective-hang-culprit") {
      culprit_finding = true;
      EXPECT_EQ(f["subjects"], nlohmann::json::array({"rank 5"}));
      EXPECT_EQ(f["action"], "drain");
      EXPECT_FALSE(f["meaning"].get<std::string>().empty());
    }
  EXPECT_TRUE(culprit_finding);
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["ranks"].size(), 8u);
}

TEST(CulpritCli, HealthyLogsAreNoHangAndExitZero) {
  for (const char* dir : {"synthetic/healthy", "real/fr-tutorial"}) {
    auto r = gpuvet({"culprit", "--no-color", hang(dir)});
    EXPECT_EQ(r.exit_code, 0) << dir << r.out << r.err;
    EXPECT_NE(r.out.find("No hang"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("CULPRIT"), std::string::npos) << r.out;
    auto j = gpuvet({"culprit", "--json", hang(dir)});
    EXPECT_EQ(nlohmann::json::parse(j.out)["verdict"], "no-hang");
  }
}

TEST(CulpritCli, SeveralFilesAreOneJob) {
  std::vector<std::string> args = {"culprit", "--no-color"};
  for (int r = 0; r < 8; ++r)
    args.push_back(hang("synthetic/did-not-arrive/rank" + std::to_string(r) + ".log"));
  auto r = gpuvet(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.out.find("CULPRIT rank 3: did not arrive"), std::string::npos) << r.out;
}

TEST(CulpritCli, DiagnoseFromTheSameDirectoryReportsTheHang) {
  auto r = gpuvet({"diagnose", "--no-color", "--from", hang("synthetic/did-not-arrive")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("collective-hang-culprit"), std::string::npos) << r.out;
}

TEST(CulpritCli, BadInputIsAMessageOnStderrAndExitThree) {
  // A flight-recorder dump cut off while it was written.
  const fs::path cut = scratch("cut");
  std::ofstream(cut / "nccl_trace_rank_0") << "{\"version\": \"2.5\", \"pg_config\": {\"0\": {";
  auto r = gpuvet({"culprit", cut.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;

  // A flight-recorder dump in pickle form.
  const fs::path pk = scratch("pickle");
  std::ofstream(pk / "nccl_trace_rank_1", std::ios::binary) << std::string(
      "\x80\x04\x95\x20\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x07version\x94\x8c"
      "\x03"
      "2.5\x94\x8c\tpg_config\x94}\x94\x8c\x07"
      "entries\x94]\x94u.",
      58);
  r = gpuvet({"culprit", pk.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("pickle"), std::string::npos) << r.err;

  // An empty directory.
  const fs::path empty = scratch("empty");
  r = gpuvet({"culprit", empty.string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no files to read"), std::string::npos) << r.err;

  // No such path; no argument at all.
  r = gpuvet({"culprit", (empty / "nope").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no such file"), std::string::npos) << r.err;
  r = gpuvet({"culprit"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.err.empty());

  // Inputs that hold no collective state (an nvidia-smi -L listing).
  const fs::path other = scratch("other");
  std::ofstream(other / "gpus.txt")
      << "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5e1c7a52-9d3b-4f0e-8a61-2b7c3e9d1f40)\n";
  r = gpuvet({"culprit", other.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("no collective state"), std::string::npos) << r.err;

  // Unreadable files (root reads everything: then only the message path is left untested).
  if (::geteuid() != 0) {
    const fs::path locked = scratch("locked");
    std::ofstream(locked / "rank0.log") << "x\n";
    ::chmod((locked / "rank0.log").c_str(), 0);
    r = gpuvet({"culprit", locked.string()});
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_NE(r.err.find("rank0.log"), std::string::npos) << r.err;
    ::chmod((locked / "rank0.log").c_str(), 0600);
  }
  for (const auto& d : {cut, pk, empty, other}) fs::remove_all(d);
}

}  // namespace
}  // namespace gpuvet

namespace gpuvet {
namespace {

// The PG status line every rank of a hung job prints (PyTorch ≥ 2.3), one rank's worth.
std::string pg_status(int rank, int enqueued, int completed) {
  return "[rank" + std::to_string(rank) +
         "]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:1844] "
         "[PG ID 0 PG GUID 0(default_pg) Rank " +
         std::to_string(rank) +
         "] Exception (either an error or timeout) detected by watchdog at work: " +
         std::to_string(enqueued) + ", last enqueued NCCL work: " + std::to_string(enqueued) +
         ", last completed NCCL work: " + std::to_string(completed) + ".\n";
}

// Reliability review E12: one log of 100 000 ranks, rank 77 777 one collective behind.
TEST(CulpritScale, OneLogOfAHundredThousandRanksNamesTheRankBehind) {
  const fs::path dir = scratch("100k");
  {
    std::ofstream out(dir / "job.log");
    for (int r = 0; r < 100000; ++r)
      out << (r == 77777 ? pg_status(r, 499, 499) : pg_status(r, 500, 499));
  }
  auto r = gpuvet({"culprit", "--json", (dir / "job.log").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["culprits"].size(), 1u) << r.out.substr(0, 2000);
  EXPECT_EQ(doc["culprits"][0]["rank"], 77777);
  EXPECT_TRUE(doc["problems"].empty()) << doc["problems"].dump();
  fs::remove_all(dir);
}

// 100 000 ranks of an older PyTorch (watchdog lines without a PG) that also print progress
// bars: one rank is busy loading while the others time out. Joining each rank's lines, and each
// rank's last activity, must stay linear (a whole-map scan per rank did not finish in minutes).
TEST(CulpritScale, AHundredThousandRanksOfWatchdogLinesAndProgressBarsNameTheBusyRank) {
  const fs::path dir = scratch("100k-old");
  {
    std::ofstream out(dir / "job.log");
    for (int r = 0; r < 100000; ++r) {
      out << "[rank" << r << "]:Epoch 3:  41%|####      | 410/1000\n";
      if (r != 4242)
        out << "[rank" << r << "]:[E ProcessGroupNCCL.cpp:475] [Rank " << r
            << "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
               "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600572 "
               "milliseconds before timing out.\n";
    }
  }
  auto r = gpuvet({"culprit", "--json", (dir / "job.log").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["culprits"].size(), 1u) << r.out.substr(0, 2000);
  EXPECT_EQ(doc["culprits"][0]["rank"], 4242);
  fs::remove_all(dir);
}

// E12: 30 000 per-rank logs in one directory (more than the 20 000 files diagnose reads), the
// last rank's log missing: that rank, and no rank whose log exists, is named.
TEST(CulpritScale, ThirtyThousandPerRankLogsNameTheMissingRank) {
  const fs::path dir = scratch("30k");
  for (int r = 0; r < 29999; ++r) {
    std::ofstream out(dir / ("rank" + std::to_string(r) + ".log"));
    out << "node" << r / 8 << ":" << 1000 + r << ":" << 1000 + r << " [" << r % 8
        << "] NCCL INFO comm 0x5555 rank " << r << " nranks 30000 cudaDev " << r % 8
        << " busId 1b000 commId 0x77 - Init COMPLETE\n"
        << pg_status(r, 812, 811);
  }
  auto r = gpuvet({"culprit", "--json", dir.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["culprits"].size(), 1u) << r.out.substr(0, 2000);
  EXPECT_EQ(doc["culprits"][0]["rank"], 29999);
  EXPECT_TRUE(doc["problems"].empty()) << doc["problems"].dump();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuvet
