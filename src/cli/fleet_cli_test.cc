// `gpuvet fleet ingest` and `gpuvet fleet report` through the binary: real gate reports of a
// fake node, an ingest killed with SIGKILL in the middle of 10 000 files, and the inputs that
// must end in exit 3 with nothing lost.
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fixture_util.h"
#include "gpuvet/env.h"

extern char** environ;

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

CommandResult gpuvet(std::vector<std::string> args, bool fake_node = false) {
  return gpuvet::testing::run_gpuvet(args, fake_node ? "2gpu-pcie-sys.json" : "",
                                     std::chrono::seconds(120));
}

struct Dir {
  Dir() : path(fs::temp_directory_path() / ("gpuvet-fleet-cli-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string at(const std::string& name) const { return (path / name).string(); }
  fs::path path;
};

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// One real gate report of the fake node, as text, and a baseline that passes it.
std::string real_gate_report(const Dir& d) {
  const std::string base = d.at("model.toml");
  auto c = gpuvet({"baseline", "capture", "-o", base, "--force"}, true);
  EXPECT_EQ(c.exit_code, 0) << c.err;
  auto g = gpuvet({"gate", "--baseline", base, "--json"}, true);
  EXPECT_EQ(g.exit_code, 0) << g.err;
  return g.out;
}

// `count` reports of hosts node00000… written into dir/reports, each its own document.
void write_fleet(const Dir& d, const std::string& report, int count) {
  auto doc = nlohmann::ordered_json::parse(report);
  fs::create_directories(d.path / "reports");
  for (int i = 0; i < count; ++i) {
    const std::string host = fmt::format("node{:05}", i);
    doc["host"] = host;
    doc["node"]["host"] = host;
    doc["collected_unix"] = 1764669600 + i;
    write(d.at(fmt::format("reports/{}.json", host)), doc.dump());
  }
}

std::int64_t count_rows(const std::string& db, const char* sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return -1;
  sqlite3_stmt* s = nullptr;
  std::int64_t n = -1;
  if (sqlite3_prepare_v2(h, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(h);
  return n;
}

TEST(FleetCli, AnIngestKilledInTheMiddleOfTenThousandFilesLosesAndDuplicatesNothing) {
  Dir d;
  write_fleet(d, real_gate_report(d), 10000);
  const std::string db = d.at("fleet.db");
  const std::string journal = db + "-journal";

  // Start the ingest, wait until it has committed a batch and is writing the next one (its
  // rollback journal exists), then SIGKILL it.
  std::vector<std::string> args = {GPUVET_BINARY, "fleet", "ingest", db, d.at("reports")};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, GPUVET_BINARY, nullptr, nullptr, argv.data(), environ), 0);
  bool hot = false;
  int status = 0;
  bool exited = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    // Once a batch is committed, the next batch's journal means a transaction is open.
    if (fs::exists(journal) && count_rows(db, "SELECT count(*) FROM documents") > 0 &&
        fs::exists(journal)) {
      hot = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ASSERT_FALSE(exited) << "the ingest ended before it could be killed";
  ASSERT_TRUE(WIFSIGNALED(status));
  // What was committed before the kill is whole batches, each report with its GPUs.
  const auto kept = count_rows(db, "SELECT count(*) FROM documents");
  std::cout << "killed " << (hot ? "inside a transaction (journal present)" : "between batches")
            << "; reports kept: " << kept << "\n";
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 10000);
  EXPECT_EQ(kept % 500, 0) << "a batch was half committed";
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM gpus"), 2 * kept);

  // Ingest again: every report exactly once, each with its GPUs and pair.
  auto again = gpuvet({"fleet", "ingest", db, d.at("reports")});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("10000 file(s), 10000 report(s)"), std::string::npos) << again.out;
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM documents"), 10000);
  EXPECT_EQ(count_rows(db, "SELECT count(DISTINCT host) FROM documents"), 10000);
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM gpus"), 20000);
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM pairs"), 10000);
  EXPECT_FALSE(fs::exists(journal));

  auto rep = gpuvet({"fleet", "report", db, "--json"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const auto j = nlohmann::json::parse(rep.out);
  EXPECT_EQ(j["nodes"], 10000);
  EXPECT_EQ(j["documents"], 10000);
  EXPECT_TRUE(j["outliers"].empty());
}

TEST(FleetCli, AReportOfAnUnknownSchemaExitsThreeAndTheOthersAreStillKept) {
  Dir d;
  write_fleet(d, real_gate_report(d), 3);
  write(d.at("reports/scale.json"), R"({"schema":"gpuvet.scale/1","runs":[]})");
  write(d.at("reports/cut.json"), R"({"schema":"gpuvet.gate/1","host":"n","node":{)");
  const std::string db = d.at("fleet.db");
  auto r = gpuvet({"fleet", "ingest", db, d.at("reports")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("scale.json: schema 'gpuvet.scale/1'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cut.json: not JSON"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("3 added"), std::string::npos) << r.out;
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM documents"), 3);
  // A missing path is named too.
  auto missing = gpuvet({"fleet", "ingest", db, d.at("nowhere")});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("nowhere: no such file"), std::string::npos) << missing.err;
}

TEST(FleetCli, ACorruptDatabaseOrAMissingOneExitsThreeAndIsNotTouched) {
  Dir d;
  write_fleet(d, real_gate_report(d), 2);
  const std::string junk = d.at("junk.db");
  write(junk, std::string(8192, 'j'));
  auto ingest = gpuvet({"fleet", "ingest", junk, d.at("reports")});
  EXPECT_EQ(ingest.exit_code, 3);
  EXPECT_NE(ingest.err.find("not a SQLite database"), std::string::npos) << ingest.err;
  EXPECT_EQ(fs::file_size(junk), 8192u);
  auto report = gpuvet({"fleet", "report", junk});
  EXPECT_EQ(report.exit_code, 3);

  auto none = gpuvet({"fleet", "report", d.at("none.db")});
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_NE(none.err.find("gpuvet fleet ingest"), std::string::npos) << none.err;
  EXPECT_FALSE(fs::exists(d.at("none.db")));
}

TEST(FleetCli, TheTextReportNamesTheDriftedNodeAndExitsTwo) {
  Dir d;
  const std::string report = real_gate_report(d);
  write_fleet(d, report, 5);
  // node00003 later crosses another path: its own last pass and the group disagree with it.
  auto doc = nlohmann::ordered_json::parse(report);
  doc["host"] = "node00003";
  doc["node"]["host"] = "node00003";
  doc["collected_unix"] = 1764669600 + 86400;
  doc["node"]["pairs"][0]["path"] = "NODE";
  write(d.at("reports/node00003-later.json"), doc.dump());
  const std::string db = d.at("fleet.db");
  ASSERT_EQ(gpuvet({"fleet", "ingest", db, d.at("reports")}).exit_code, 0);
  auto r = gpuvet({"fleet", "report", db, "--stale-after", "48"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("node00003"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU0-GPU1 path NODE (group SYS)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("changed since last pass"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos);  // not a terminal: no colour
}

}  // namespace
}  // namespace gpuvet
