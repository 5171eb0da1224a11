// The fleet history: reading gpuvet's own reports back, the SQLite store (idempotence,
// refusing files that are not its own), and the report (majority fingerprints, changed since
// last pass, robust numeric outliers, the circuit breaker, stale nodes).
#include <sqlite3.h>
#include <unistd.h>

#include <sys/stat.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "gpuvet/baseline.h"
#include "gpuvet/fleet.h"
#include "gpuvet/gate.h"
#include "gpuvet/import.h"
#include "gpuvet/report.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

// A node of `gpus` GPUs, every pair PIX with P2P OK, x16 Gen5 links on NUMA node 0.
NodePrint node(const std::string& host, int gpus = 4) {
  NodePrint n;
  n.host = host;
  n.gpu_model = "NVIDIA H100 PCIe";
  n.gpu_count = gpus;
  for (int i = 0; i < gpus; ++i) {
    GpuPrint g;
    g.index = i;
    g.name = n.gpu_model;
    g.pcie_gen_max = 5;
    g.pcie_width_max = 16;
    g.pcie_width = 16;
    g.numa_node = 0;
    g.nvlinks_up = 0;
    n.gpus.push_back(g);
  }
  for (int a = 0; a < gpus; ++a)
    for (int b = a + 1; b < gpus; ++b) n.pairs.push_back({a, b, "PIX", "OK"});
  return n;
}

FleetDocument gate_doc(NodePrint print, std::int64_t t, const char* verdict = "pass") {
  FleetDocument d;
  d.host = *print.host;
  d.collected_unix = t;
  d.schema = "gpuvet.gate/1";
  d.source = d.host + ".json";
  d.verdict = verdict;
  d.has_print = true;
  d.print = std::move(print);
  d.content_hash = text_hash(d.host + std::to_string(t) + verdict);
  return d;
}

std::string host_name(int i) { return "node" + std::to_string(100 + i); }

std::vector<std::string> outlier_hosts(const FleetReport& r) {
  std::vector<std::string> v;
  for (const auto& o : r.outliers) v.push_back(o.host);
  std::sort(v.begin(), v.end());
  return v;
}

const FleetOutlier* find_outlier(const FleetReport& r, const std::string& host) {
  for (const auto& o : r.outliers)
    if (o.host == host) return &o;
  return nullptr;
}

bool any_reason(const FleetOutlier& o, const std::string& needle) {
  for (const auto& r : o.reasons)
    if (r.find(needle) != std::string::npos) return true;
  return false;
}

// ---- documents ---------------------------------------------------------------------------

Facts two_gpu_facts() {
  Facts f;
  f.host.hostname = "node7";
  f.host.collected_unix = 1764669600;
  for (int i = 0; i < 2; ++i) {
    GpuFacts g;
    g.index = i;
    g.name = "NVIDIA L40S";
    g.pcie.gen_max = 4;
    g.pcie.width_max = 16;
    g.pcie.width_current = 16;
    g.numa_node = i;
    g.power.limit_w = 350;
    f.gpus.push_back(g);
  }
  GpuPair p;
  p.a = 0;
  p.b = 1;
  p.path = PathType::kSYS;
  p.p2p_read = P2PStatus::kChipsetNotSupported;
  f.pairs.push_back(p);
  return f;
}

TEST(FleetDocuments, AGateReportReadsBackToTheFingerprintTheGateWrote) {
  const Facts facts = two_gpu_facts();
  const NodePrint print = node_print(facts);
  auto baseline = parse_baseline(baseline_toml(print, {}, "test", "2026-12-03"), "b.toml");
  ASSERT_TRUE(baseline.is_ok()) << baseline.status().to_string();
  GateReport gate = judge_gate(baseline.value(), facts, diagnose(facts),
                               {{"h2d", "GPU1", std::nullopt, 25.5}}, GateOptions{});
  gate.collected_unix = facts.host.collected_unix;
  JsonOptions j;
  j.command = "gate";
  auto docs = fleet_documents(gate_to_json(gate, j), {"node7.json", "node7", std::nullopt});
  ASSERT_TRUE(docs.is_ok()) << docs.status().to_string();
  ASSERT_EQ(docs.value().size(), 1u);
  const auto& d = docs.value()[0];
  EXPECT_EQ(d.host, "node7");
  EXPECT_EQ(d.schema, "gpuvet.gate/1");
  EXPECT_EQ(d.verdict, gate_verdict_name(gate.verdict));
  EXPECT_EQ(d.collected_unix, 1764669600);
  EXPECT_TRUE(d.has_print);
  for (const char* part : {"topology", "p2p", "links"})
    EXPECT_EQ(print_hash(d.print, part), print_hash(print, part)) << part;
  ASSERT_EQ(d.print.bandwidth.size(), 1u);
  EXPECT_EQ(d.print.bandwidth[0].subject, "GPU1");
  EXPECT_DOUBLE_EQ(d.print.bandwidth[0].gbps, 25.5);
}

TEST(FleetDocuments, ADiagnoseReportGivesTheSameFingerprintAsTheFacts) {
  const Facts facts = two_gpu_facts();
  JsonOptions j;
  j.command = "diagnose";
  auto docs =
      fleet_documents(diagnosis_to_json(facts, diagnose(facts), j), {"x.json", "x", std::nullopt});
  ASSERT_TRUE(docs.is_ok()) << docs.status().to_string();
  const auto& d = docs.value().at(0);
  EXPECT_EQ(d.host, "node7");
  EXPECT_EQ(d.schema, "gpuvet.report/1");
  EXPECT_FALSE(d.verdict.has_value());
  for (const char* part : {"topology", "p2p", "links"})
    EXPECT_EQ(print_hash(d.print, part), print_hash(node_print(facts), part)) << part;
}

TEST(FleetDocuments, ArraysAndJsonLinesHoldManyDocumentsEachKeptOnce) {
  const std::string a =
      R"({"schema":"gpuvet.bench/1","results":[{"key":"host_to_device_ce","unit":"GB/s","rows":["GPU0"],"cols":["host"],"row_gpu":[0],"col_gpu":[-1],"cells":[[{"value":55.0}]]}]})";
  const std::string b =
      R"({"schema":"gpuvet.bench/1","results":[{"key":"host_to_device_ce","unit":"GB/s","rows":["GPU0"],"cols":["host"],"row_gpu":[0],"col_gpu":[-1],"cells":[[{"value":54.0}]]}]})";
  const DocumentOrigin origin{"gpu-17.json", "gpu-17", 1764669600};
  auto lines = fleet_documents(a + "\n\n" + b + "\n", origin);
  ASSERT_TRUE(lines.is_ok()) << lines.status().to_string();
  ASSERT_EQ(lines.value().size(), 2u);
  EXPECT_EQ(lines.value()[1].source, "gpu-17.json#2");
  EXPECT_EQ(lines.value()[0].host, "gpu-17");  // a bench report names no host: the file does
  EXPECT_EQ(lines.value()[0].collected_unix, 1764669600);
  EXPECT_NE(lines.value()[0].content_hash, lines.value()[1].content_hash);
  auto array = fleet_documents("[" + a + ",\n  " + b + "]", origin);
  ASSERT_TRUE(array.is_ok());
  ASSERT_EQ(array.value().size(), 2u);
  // The same report however it is laid out is the same report.
  EXPECT_EQ(array.value()[0].content_hash, lines.value()[0].content_hash);
  EXPECT_FALSE(array.value()[0].has_print);
  EXPECT_DOUBLE_EQ(array.value()[0].print.bandwidth.at(0).gbps, 55.0);
}

TEST(FleetDocuments, AReportOfAnotherSchemaACutFileAndAnInconsistentNodeAreRefused) {
  const DocumentOrigin origin{"n.json", "n", std::nullopt};
  auto other = fleet_documents(R"({"schema":"gpuvet.scale/1","host":"n"})", origin);
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("'gpuvet.scale/1'"), std::string::npos);
  EXPECT_FALSE(fleet_documents(R"({"host":"n"})", origin).is_ok());
  auto cut = fleet_documents(R"({"schema":"gpuvet.gate/1","host":"n","node":{"gpus":[)", origin);
  ASSERT_FALSE(cut.is_ok());
  EXPECT_NE(cut.status().message().find("cut short"), std::string::npos) << cut.status().message();
  auto bad = fleet_documents(
      R"({"schema":"gpuvet.gate/1","host":"n","node":{"gpu_count":2,"gpus":[{"index":0}],"pairs":[]}})",
      origin);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("gpu_count 2 but 1"), std::string::npos);
  auto verdict = fleet_documents(
      R"({"schema":"gpuvet.gate/1","host":"n","verdict":"maybe","node":{"gpu_count":0,"gpus":[],"pairs":[]}})",
      origin);
  EXPECT_FALSE(verdict.is_ok());
  EXPECT_FALSE(fleet_documents("", origin).is_ok());
  EXPECT_FALSE(fleet_documents("[]", origin).is_ok());
  // E5: a number a double cannot hold is this file's problem, said plainly, never an exception.
  auto huge = fleet_documents(R"({"schema":"gpuvet.gate/1","x":1e999})", origin);
  ASSERT_FALSE(huge.is_ok());
  EXPECT_NE(huge.status().message().find("n.json: a number out of range"), std::string::npos)
      << huge.status().message();
}

// E3: a host name with a newline would make the README's drain pipeline drain another node;
// a name with a space or a leading '-' is no host either. The document is refused, whole.
TEST(FleetDocuments, AHostNameThatIsNotAPlainNameIsRefused) {
  const DocumentOrigin origin{"n.json", "", std::nullopt};
  // JSON escapes: a newline and a NUL inside the host name.
  for (const char* host : {R"(evil\nnode00001)", "node 1", "-rf", "node;reboot", R"(n\u0000x)"}) {
    const std::string doc = std::string(R"({"schema":"gpuvet.gate/1","host":")") + host +
                            R"(","node":{"gpu_count":0,"gpus":[],"pairs":[]}})";
    auto r = fleet_documents(doc, origin);
    ASSERT_FALSE(r.is_ok()) << host;
    EXPECT_NE(r.status().message().find("not a plain host name"), std::string::npos)
        << r.status().message();
  }
  auto ok = fleet_documents(
      R"({"schema":"gpuvet.gate/1","host":"gpu-node_07.rack3","node":{"gpu_count":0,"gpus":[],"pairs":[]}})",
      origin);
  EXPECT_TRUE(ok.is_ok()) << ok.status().message();
}

// ---- store -------------------------------------------------------------------------------

struct TempDb {
  TempDb() : dir(fs::temp_directory_path() / ("gpuvet-fleet-" + std::to_string(::getpid()))) {
    fs::create_directories(dir);
  }
  ~TempDb() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path(const std::string& name = "fleet.db") const { return (dir / name).string(); }
  fs::path dir;
};

TEST(FleetStore, IngestingTheSameReportsTwiceAddsThemOnceAndLoadGivesThemBack) {
  TempDb t;
  std::vector<FleetDocument> docs;
  for (int i = 0; i < 3; ++i) docs.push_back(gate_doc(node(host_name(i)), 1000 + i));
  docs[1].print.pairs[0].path = "SYS";
  docs[2].print.bandwidth.push_back({"allreduce_busbw", "node", 1u << 30, 310.5});
  {
    auto store = FleetStore::open(t.path(), true);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto first = store.value()->ingest(docs);
    ASSERT_TRUE(first.is_ok()) << first.status().to_string();
    EXPECT_EQ(first.value().added, 3);
    auto again = store.value()->ingest(docs);
    ASSERT_TRUE(again.is_ok());
    EXPECT_EQ(again.value().added, 0);
    EXPECT_EQ(again.value().already_present, 3);
  }
  auto store = FleetStore::open(t.path(), false);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto back = store.value()->load();
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back.value().size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const auto& d = back.value()[static_cast<std::size_t>(i)];
    EXPECT_EQ(d.host, docs[static_cast<std::size_t>(i)].host);
    EXPECT_EQ(d.verdict, "pass");
    for (const char* part : {"topology", "p2p", "links"})
      EXPECT_EQ(print_hash(d.print, part),
                print_hash(docs[static_cast<std::size_t>(i)].print, part));
  }
  ASSERT_EQ(back.value()[2].print.bandwidth.size(), 1u);
  EXPECT_EQ(back.value()[2].print.bandwidth[0].size_bytes, 1u << 30);
  EXPECT_DOUBLE_EQ(back.value()[2].print.bandwidth[0].gbps, 310.5);
}

// ---- reading each document once -----------------------------------------------------------

// What the store has always keyed documents by: the hash of the document's compact text as
// ordered_json writes it (the ingest now hashes it while parsing, without writing it out).
std::string dumped_hash(const std::string& text) {
  return text_hash(nlohmann::ordered_json::parse(text).dump());
}

TEST(FleetDocuments, TheContentHashIsStillTheHashOfTheDocumentsCompactText) {
  const Facts facts = two_gpu_facts();
  JsonOptions j;
  j.command = "diagnose";
  const std::string report = diagnosis_to_json(facts, diagnose(facts), j);
  // White space, escapes dump() writes otherwise ("\u00e9", "\/"), numbers it writes otherwise
  // (1E2, -0, 2.50), non-ASCII text, empty containers, and a repeated key (the last value
  // kept at the first one's place).
  const std::string gate =
      R"({ "schema" : "gpuvet.gate/1", "host": "node7", "collected_unix": 1764669600,)"
      R"( "reason": "caf\u00e9 \/ \"quoted\"\t\u0001 ünïcode", "x": [1E2, -0, 2.50, 1e-7, )"
      R"(18446744073709551615, -9223372036854775808, true, false, null, {}, []],)"
      R"( "node": {"host": "node7", "gpu_count": 0, "gpus": [], "pairs": [], "bandwidth": []},)"
      R"( "verdict": "pass"})";
  const std::string repeated =
      R"({"schema":"gpuvet.gate/1","host":"node8","verdict":"fail","node":{"host":"node8",)"
      R"("gpu_count":0,"gpus":[],"pairs":[]},"verdict":"pass"})";
  for (const std::string& text : {report, gate, repeated}) {
    auto docs = fleet_documents(text, {"x.json", "x", std::nullopt});
    ASSERT_TRUE(docs.is_ok()) << docs.status().to_string();
    ASSERT_EQ(docs.value().size(), 1u);
    EXPECT_EQ(docs.value()[0].content_hash, dumped_hash(text)) << text.substr(0, 60);
  }
  auto repeated_doc = fleet_documents(repeated, {"x.json", "x", std::nullopt});
  EXPECT_EQ(repeated_doc.value()[0].verdict, "pass");
  // Each document of an array and of JSON lines: its own text's hash.
  auto array = fleet_documents("[" + gate + ",\n" + report + "]", {"x.json", "x", std::nullopt});
  ASSERT_TRUE(array.is_ok()) << array.status().to_string();
  ASSERT_EQ(array.value().size(), 2u);
  EXPECT_EQ(array.value()[0].content_hash, dumped_hash(gate));
  EXPECT_EQ(array.value()[1].content_hash, dumped_hash(report));
  auto lines = fleet_documents(repeated + "\n" + gate + "\n", {"x.json", "x", std::nullopt});
  ASSERT_TRUE(lines.is_ok()) << lines.status().to_string();
  ASSERT_EQ(lines.value().size(), 2u);
  EXPECT_EQ(lines.value()[0].content_hash, dumped_hash(repeated));
  EXPECT_EQ(lines.value()[1].content_hash, dumped_hash(gate));
}

// A diagnose report is read from the parsed document by the gpuvet-json reader: what the
// fleet keeps of it is what import_text of its text gave (the ingest did that before).
TEST(FleetDocuments, ADiagnoseReportReadFromTheParsedDocumentKeepsWhatImportTextRead) {
  Facts facts = two_gpu_facts();
  facts.host.uptime_s = 7200;
  facts.gpus[1].uuid = "GPU-1111";
  facts.gpus[1].pcie.width_current = 8;
  Measurement m;
  m.tool = "nvbandwidth";
  m.test = "host_to_device_memcpy_ce";
  m.src_gpu = -1;
  m.dst_gpu = 1;
  m.bandwidth_gbps = 24.5;
  facts.measurements.push_back(m);
  JsonOptions j;
  j.command = "diagnose";
  const std::string text = diagnosis_to_json(facts, diagnose(facts), j);
  auto docs = fleet_documents(text, {"x.json", "x", std::nullopt});
  ASSERT_TRUE(docs.is_ok()) << docs.status().to_string();
  const FleetDocument& d = docs.value().at(0);

  const Facts before = import_text(text, "x.json");
  NodePrint expected = node_print(before);
  expected.bandwidth = bandwidth_values(before.measurements);
  EXPECT_EQ(d.host, before.host.hostname.value_or(""));
  EXPECT_EQ(d.collected_unix, before.host.collected_unix);
  EXPECT_EQ(d.boot_unix, (1764669600 - 7200) / 60 * 60);
  EXPECT_TRUE(d.judged);
  EXPECT_EQ(d.print.gpu_model, expected.gpu_model);
  EXPECT_EQ(d.print.gpu_count, expected.gpu_count);
  EXPECT_EQ(d.print.driver_version, expected.driver_version);
  for (const char* part : {"topology", "p2p", "links"})
    EXPECT_EQ(print_hash(d.print, part), print_hash(expected, part)) << part;
  ASSERT_EQ(d.print.gpus.size(), expected.gpus.size());
  for (std::size_t i = 0; i < expected.gpus.size(); ++i) {
    EXPECT_EQ(d.print.gpus[i].uuid, expected.gpus[i].uuid);
    EXPECT_EQ(d.print.gpus[i].pcie_width, expected.gpus[i].pcie_width);
    EXPECT_EQ(d.print.gpus[i].power_limit_w, expected.gpus[i].power_limit_w);
  }
  ASSERT_EQ(d.print.pairs.size(), expected.pairs.size());
  EXPECT_EQ(d.print.pairs[0].path, expected.pairs[0].path);
  EXPECT_EQ(d.print.pairs[0].p2p, expected.pairs[0].p2p);
  ASSERT_EQ(d.print.bandwidth.size(), expected.bandwidth.size());
  ASSERT_FALSE(expected.bandwidth.empty());
  EXPECT_EQ(d.print.bandwidth[0].key, expected.bandwidth[0].key);
  EXPECT_EQ(d.print.bandwidth[0].subject, expected.bandwidth[0].subject);
  EXPECT_DOUBLE_EQ(d.print.bandwidth[0].gbps, expected.bandwidth[0].gbps);
}

// A file already ingested (the same bytes) is not parsed again: it is skipped with the number
// of documents it held, even when its bytes would no longer be accepted.
TEST(FleetStore, AFileWhoseBytesAreInTheHistoryIsSkippedUnparsed) {
  TempDb t;
  const std::string file = t.path("node7.json");
  std::ofstream(file) << R"({"schema":"gpuvet.gate/1","host":"node7","collected_unix":1764669600,)"
                         R"("node":{"host":"node7","gpu_count":0,"gpus":[],"pairs":[]}})";
  auto first = read_fleet_file(file, {});
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_FALSE(first.value().known_documents);
  ASSERT_EQ(first.value().documents.size(), 1u);
  {
    auto store = FleetStore::open(t.path(), true);
    ASSERT_TRUE(store.is_ok());
    auto done = store.value()->ingest(first.value().documents, {{first.value().byte_hash, 1}});
    ASSERT_TRUE(done.is_ok()) << done.status().to_string();
    EXPECT_EQ(done.value().added, 1);
  }
  auto store = FleetStore::open(t.path(), false);
  ASSERT_TRUE(store.is_ok());
  auto known = store.value()->known_files();
  ASSERT_TRUE(known.is_ok()) << known.status().to_string();
  ASSERT_EQ(known.value().count(first.value().byte_hash), 1u);
  auto again = read_fleet_file(file, known.value());
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again.value().known_documents, 1);
  EXPECT_TRUE(again.value().documents.empty());

  // Bytes the parser refuses, under a hash the history knows: skipped, not read.
  const std::string garbage = t.path("cut.json");
  const std::string cut = R"({"schema": "gpuvet.gate/1", "host": )";
  std::ofstream(garbage) << cut;
  auto refused = read_fleet_file(garbage, {});
  ASSERT_FALSE(refused.is_ok());
  KnownFleetFiles pretend;
  pretend[text_hash(cut) + "-" + std::to_string(cut.size())] = 3;
  auto skipped = read_fleet_file(garbage, pretend);
  ASSERT_TRUE(skipped.is_ok()) << skipped.status().to_string();
  EXPECT_EQ(skipped.value().known_documents, 3);
  // One more byte: another file, read (and refused).
  std::ofstream(garbage, std::ios::app) << " ";
  EXPECT_FALSE(read_fleet_file(garbage, pretend).is_ok());
}

// A layout-2 database (the previous gpuvet's) is read as it is and upgraded by the next ingest.
TEST(FleetStore, ALayoutTwoDatabaseIsReadAndUpgradedByTheNextIngest) {
  TempDb t;
  {
    auto store = FleetStore::open(t.path(), true);
    ASSERT_TRUE(store.is_ok());
    ASSERT_TRUE(store.value()->ingest({gate_doc(node("node1"), 1000)}).is_ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(t.path().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "DROP TABLE files; PRAGMA user_version = 2", nullptr, nullptr, nullptr),
      SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  {
    auto reader = FleetStore::open(t.path(), false);
    ASSERT_TRUE(reader.is_ok()) << reader.status().message();
    auto back = reader.value()->load();
    ASSERT_TRUE(back.is_ok()) << back.status().message();
    EXPECT_EQ(back.value().size(), 1u);
    auto known = reader.value()->known_files();
    ASSERT_TRUE(known.is_ok());
    EXPECT_TRUE(known.value().empty());
  }
  auto writer = FleetStore::open(t.path(), true);
  ASSERT_TRUE(writer.is_ok()) << writer.status().message();
  auto done = writer.value()->ingest({gate_doc(node("node1"), 1000), gate_doc(node("node2"), 1001)},
                                     {{"0123456789abcdef-10", 2}});
  ASSERT_TRUE(done.is_ok()) << done.status().message();
  EXPECT_EQ(done.value().added, 1);
  EXPECT_EQ(done.value().already_present, 1);
  auto known = writer.value()->known_files();
  ASSERT_TRUE(known.is_ok());
  EXPECT_EQ(known.value().at("0123456789abcdef-10"), 2);
}

TEST(FleetStore, AFileThatIsNotSqliteIsRefusedAndLeftAsItWas) {
  TempDb t;
  const std::string text(4096, 'x');
  std::ofstream(t.path()) << text;
  auto store = FleetStore::open(t.path(), true);
  ASSERT_FALSE(store.is_ok());
  EXPECT_NE(store.status().message().find("not a SQLite database"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(fs::file_size(t.path()), text.size());
}

TEST(FleetStore, ASqliteDatabaseOfAnotherProgramIsLeftAlone) {
  TempDb t;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(t.path().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE jobs(id INTEGER)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = FleetStore::open(t.path(), true);
  ASSERT_FALSE(store.is_ok());
  EXPECT_NE(store.status().message().find("another program"), std::string::npos)
      << store.status().message();
}

TEST(FleetStore, ALaterLayoutIsRefusedAndAMissingFileIsNotCreatedForReading) {
  TempDb t;
  ASSERT_TRUE(FleetStore::open(t.path(), true).is_ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(t.path().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 9", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto later = FleetStore::open(t.path(), true);
  ASSERT_FALSE(later.is_ok());
  EXPECT_NE(later.status().message().find("layout 9"), std::string::npos);
  EXPECT_FALSE(FleetStore::open(t.path("missing.db"), false).is_ok());
  EXPECT_FALSE(fs::exists(t.path("missing.db")));
}

// E6: a FIFO (or a directory, a link) as the database is refused at once; reading a FIFO
// through SQLite would block for ever.
TEST(FleetStore, AFifoADirectoryOrALinkIsRefusedAtOnce) {
  TempDb t;
  const std::string fifo = t.path("db.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (bool create : {false, true}) {
    auto s = FleetStore::open(fifo, create);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.status().message().find("not a regular file (a FIFO)"), std::string::npos)
        << s.status().message();
  }
  auto dir = FleetStore::open(t.dir.string(), false);
  ASSERT_FALSE(dir.is_ok());
  EXPECT_NE(dir.status().message().find("a directory"), std::string::npos);
  fs::create_symlink(fifo, t.path("link.db"));
  auto link = FleetStore::open(t.path("link.db"), true);
  ASSERT_FALSE(link.is_ok());
  EXPECT_NE(link.status().message().find("a symbolic link"), std::string::npos);
}

TEST(FleetStore, ADamagedDatabaseIsAClearErrorNotACrash) {
  TempDb t;
  {
    auto store = FleetStore::open(t.path(), true);
    ASSERT_TRUE(store.is_ok());
    std::vector<FleetDocument> docs;
    for (int i = 0; i < 200; ++i) docs.push_back(gate_doc(node(host_name(i), 8), 1000 + i));
    ASSERT_TRUE(store.value()->ingest(docs).is_ok());
  }
  // Overwrite the middle of the file (the tables' pages) with garbage.
  {
    std::fstream f(t.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(t.path()) / 2));
    const std::string junk(16384, '\xA5');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto store = FleetStore::open(t.path(), false);
  if (store.is_ok()) {
    auto back = store.value()->load();
    ASSERT_FALSE(back.is_ok());
    EXPECT_NE(back.status().message().find("malformed"), std::string::npos)
        << back.status().message();
  } else {
    EXPECT_NE(store.status().message().find(t.path()), std::string::npos);
  }
}

// ---- report ------------------------------------------------------------------------------

TEST(FleetReport, NodesUnlikeTheirGroupsMajorityAreNamedWithWhatDiffers) {
  std::vector<FleetDocument> h;
  for (int i = 0; i < 10; ++i) {
    NodePrint p = node(host_name(i));
    if (i == 3) {
      p.pairs[0].path = "SYS";  // GPU0-GPU1
      p.pairs[0].p2p = "NS";
    }
    if (i == 7) p.gpus[2].pcie_width = 8;
    h.push_back(gate_doc(std::move(p), 5000));
  }
  for (int i = 0; i < 3; ++i) h.push_back(gate_doc(node("big" + std::to_string(i), 8), 5000));
  const FleetReport r = fleet_report(h, {});
  EXPECT_EQ(r.nodes, 13);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].name, "4 x NVIDIA H100 PCIe");
  EXPECT_EQ(r.groups[0].nodes, 10);
  EXPECT_EQ(outlier_hosts(r), (std::vector<std::string>{"node103", "node107"}));
  const auto* sys = find_outlier(r, "node103");
  EXPECT_EQ(sys->kinds, (std::vector<std::string>{"topology", "p2p"}));
  EXPECT_TRUE(any_reason(*sys, "GPU0-GPU1 path SYS (group PIX)"));
  EXPECT_TRUE(any_reason(*sys, "GPU0-GPU1 P2P NS (group OK)"));
  EXPECT_FALSE(sys->changed_since_last_pass);
  const auto* x8 = find_outlier(r, "node107");
  EXPECT_EQ(x8->kinds, (std::vector<std::string>{"links"}));
  EXPECT_TRUE(any_reason(*x8, "GPU2 PCIe width x8 (group x16)"));
  EXPECT_EQ(r.exit_code, 2);
}

TEST(FleetReport, WithoutAMajorityFingerprintNobodyIsCalledAnOutlierOnIt) {
  std::vector<FleetDocument> h;
  for (int i = 0; i < 4; ++i) {
    NodePrint p = node(host_name(i));
    if (i >= 2) p.pairs[0].path = "SYS";
    h.push_back(gate_doc(std::move(p), 5000));
  }
  const FleetReport r = fleet_report(h, {});
  EXPECT_TRUE(r.outliers.empty());
  ASSERT_EQ(r.groups.size(), 1u);
  ASSERT_FALSE(r.groups[0].majority.empty());
  EXPECT_FALSE(r.groups[0].majority[0].hash.has_value());
  bool noted = false;
  for (const auto& n : r.groups[0].notes) noted = noted || n.find("more than half") != n.npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(r.exit_code, 0);
}

TEST(FleetReport, ANodeThatChangedSinceItsLastPassIsAnOutlierEvenWhenItsGroupChangedToo) {
  // Three nodes, all of which now cross SYS: the majority is SYS, yet each changed since
  // its last passing gate. A fourth failed before and still looks the same: not "changed".
  std::vector<FleetDocument> h;
  for (int i = 0; i < 3; ++i) {
    h.push_back(gate_doc(node(host_name(i)), 1000, "pass"));
    NodePrint p = node(host_name(i));
    p.pairs[0].path = "SYS";
    h.push_back(gate_doc(std::move(p), 2000, "fail"));
  }
  NodePrint same = node(host_name(3));
  same.pairs[0].path = "SYS";
  h.push_back(gate_doc(same, 1000, "fail"));
  h.push_back(gate_doc(same, 2000, "fail"));
  std::reverse(h.begin(), h.end());  // any order: the report sorts by time
  const FleetReport r = fleet_report(h, {});
  EXPECT_EQ(outlier_hosts(r), (std::vector<std::string>{"node100", "node101", "node102"}));
  for (const auto& o : r.outliers) {
    EXPECT_TRUE(o.changed_since_last_pass) << o.host;
    EXPECT_EQ(o.last_pass_unix, 1000);
    EXPECT_TRUE(any_reason(o, "GPU0-GPU1 path SYS (was PIX at last pass)")) << o.host;
  }
  EXPECT_EQ(r.groups[0].gate_fail, 4);
}

std::vector<FleetDocument> bench_fleet(int nodes, const std::vector<double>& h2d) {
  std::vector<FleetDocument> h;
  for (int i = 0; i < nodes; ++i) {
    NodePrint p = node(host_name(i));
    p.bandwidth.push_back(
        {"h2d", "GPU0", std::nullopt, h2d[static_cast<std::size_t>(i) % h2d.size()]});
    h.push_back(gate_doc(std::move(p), 5000));
  }
  return h;
}

TEST(FleetReport, AMeasuredValueIsAnOutlierOnlyWhenFarInRobustZAndAtLeastFivePercentBelow) {
  // 20 nodes at 50 ± 0.5 GB/s; node105 at 45 (-10 %): an outlier. node106 at 48.6 (-2.8 %):
  // many robust z below, yet not 5 % below: noise. node107 far above: never an outlier.
  std::vector<double> v;
  for (int i = 0; i < 20; ++i) v.push_back(49.5 + 0.05 * i);
  v[5] = 45.0;
  v[6] = 48.6;
  v[7] = 80.0;
  const FleetReport r = fleet_report(bench_fleet(20, v), {});
  EXPECT_EQ(outlier_hosts(r), (std::vector<std::string>{"node105"}));
  const auto& o = r.outliers.at(0);
  EXPECT_EQ(o.kinds, (std::vector<std::string>{"bandwidth"}));
  EXPECT_FALSE(o.categorical);
  // Median 50.025, MAD 0.325: robust z = 0.6745 × (45 − 50.025) / 0.325 = −10.43.
  EXPECT_NEAR(o.worst_z, -10.43, 0.01);
  EXPECT_TRUE(any_reason(o, "h2d GPU0 45.0 GB/s, group median 50.0 (-10 %, robust z -10.4)"))
      << o.reasons.at(0);
  EXPECT_EQ(r.exit_code, 1);
}

TEST(FleetReport, IdenticalValuesMakeAnyLowOneAnOutlierAndSmallGroupsAreNotJudged) {
  std::vector<double> same(12, 50.0);
  same[4] = 44.0;
  const FleetReport r = fleet_report(bench_fleet(12, same), {});
  EXPECT_EQ(outlier_hosts(r), (std::vector<std::string>{"node104"}));
  EXPECT_TRUE(any_reason(r.outliers.at(0), "MAD 0"));

  std::vector<double> few(7, 50.0);
  few[2] = 20.0;
  const FleetReport small = fleet_report(bench_fleet(7, few), {});
  EXPECT_TRUE(small.outliers.empty());
  ASSERT_EQ(small.groups.size(), 1u);
  bool noted = false;
  for (const auto& n : small.groups[0].notes) noted = noted || n.find("fewer than 8") != n.npos;
  EXPECT_TRUE(noted);
}

TEST(FleetReport, TheCircuitBreakerRecommendsDrainingOnlyTheWorstShareOfAGroup) {
  std::vector<double> v(10, 50.0);
  v[1] = 40.0;  // numeric outliers: node101 (-20 %), node102 (-40 %)
  v[2] = 30.0;
  auto h = bench_fleet(10, v);
  h[5].print.pairs[0].path = "SYS";  // categorical outliers: node105, node106
  h[6].print.gpus[0].pcie_width = 8;
  const FleetReport r = fleet_report(h, {});  // max_drain_share 0.2 of 10 nodes: 2
  ASSERT_EQ(r.outliers.size(), 4u);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].drain_limit, 2);
  EXPECT_TRUE(r.groups[0].circuit_breaker);
  std::vector<std::string> drained;
  for (const auto& o : r.outliers)
    if (o.drain) drained.push_back(o.host);
  std::sort(drained.begin(), drained.end());
  EXPECT_EQ(drained, (std::vector<std::string>{"node105", "node106"}));  // fingerprints first

  FleetOptions wide;
  wide.max_drain_share = 0.5;
  const FleetReport all = fleet_report(h, wide);
  EXPECT_FALSE(all.groups[0].circuit_breaker);
  for (const auto& o : all.outliers) EXPECT_TRUE(o.drain) << o.host;
}

TEST(FleetReport, ANodeSilentForLongerThanStaleAfterIsListed) {
  std::vector<FleetDocument> h;
  for (int i = 0; i < 3; ++i) h.push_back(gate_doc(node(host_name(i)), 200000));
  h.push_back(gate_doc(node(host_name(3)), 200000 - 2 * 86400));
  const FleetReport r = fleet_report(h, {});
  ASSERT_EQ(r.stale.size(), 1u);
  EXPECT_EQ(r.stale[0].host, "node103");
  EXPECT_EQ(r.newest_unix, 200000);
}

// E4: a report dated in the future is refused at reading, and one already in a history does
// not make every other node stale: staleness is never measured from later than the run's clock.
TEST(FleetReport, AReportFromTheFutureNeitherEntersNorMakesTheFleetStale) {
  DocumentOrigin origin{"n.json", "", std::nullopt, 1764669600};
  const std::string future =
      R"({"schema":"gpuvet.gate/1","host":"n","collected_unix":2080000000,"node":{"gpu_count":0,"gpus":[],"pairs":[]}})";
  auto refused = fleet_documents(future, origin);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("more than a day after this machine's clock"),
            std::string::npos)
      << refused.status().message();
  const std::string ancient =
      R"({"schema":"gpuvet.gate/1","host":"n","collected_unix":-9223372036854775807,"node":{"gpu_count":0,"gpus":[],"pairs":[]}})";
  EXPECT_FALSE(fleet_documents(ancient, origin).is_ok());

  std::vector<FleetDocument> h;
  for (int i = 0; i < 10; ++i) h.push_back(gate_doc(node(host_name(i)), 1764669600));
  h.push_back(gate_doc(node(host_name(10)), 2080000000));  // an old history's wrong clock
  FleetOptions o;
  o.now_unix = 1764669600 + 3600;
  const FleetReport r = fleet_report(h, o);
  EXPECT_TRUE(r.stale.empty()) << r.stale.size() << " stale";
}

TEST(FleetReport, TheJsonIsGpuvetFleetOne) {
  std::vector<FleetDocument> h;
  for (int i = 0; i < 3; ++i) h.push_back(gate_doc(node(host_name(i)), 5000));
  h[1].print.pairs[0].path = "SYS";
  JsonOptions j;
  j.command = "fleet report";
  const auto doc = nlohmann::json::parse(fleet_to_json(fleet_report(h, {}), "f.db", j));
  EXPECT_EQ(doc["schema"], "gpuvet.fleet/1");
  EXPECT_EQ(doc["nodes"], 3);
  ASSERT_EQ(doc["outliers"].size(), 1u);
  EXPECT_EQ(doc["outliers"][0]["host"], "node101");
  EXPECT_EQ(doc["outliers"][0]["changed_since_last_pass"], false);
  EXPECT_TRUE(doc["outliers"][0]["reasons"].is_array());
  EXPECT_EQ(doc["groups"][0]["group"], "4 x NVIDIA H100 PCIe");
}

TEST(FleetStatistics, MedianAndMedianAbsoluteDeviation) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(mad_of({1, 2, 3, 4, 100}, 3), 1);
  EXPECT_DOUBLE_EQ(median_of({}), 0);
}

}  // namespace
}  // namespace gpuvet

// ---- repairs with memory -----------------------------------------------------------------

namespace gpuvet {
namespace {

// A judged gate report of `host` at t, booted at boot, showing `faults` (key on subject).
FleetDocument judged(const std::string& host, std::int64_t t, std::int64_t boot,
                     std::vector<FleetFault> faults) {
  FleetDocument d = gate_doc(node(host), t, faults.empty() ? "pass" : "fail");
  d.boot_unix = boot;
  d.judged = true;
  d.faults = std::move(faults);
  d.content_hash = text_hash(host + std::to_string(t));
  return d;
}

const FleetRepair* find_repair(const FleetReport& r, const std::string& host,
                               const std::string& fault) {
  for (const auto& x : r.repairs)
    if (x.host == host && x.fault == fault) return &x;
  return nullptr;
}

// The same Xid 79 on the same GPU after each reboot: after two repairs that did not hold it is
// for hardware inspection (and the report exits 2 while it is current); the same fault cured by
// one reset, on another node, is not; a fault that persists across reports of one boot is one
// episode, not several.
TEST(FleetRepairs, AFaultThatComesBackAfterEachRebootEscalatesToRma) {
  const FleetFault x79{"xid-79", "GPU-aaaa", "critical"};
  std::vector<FleetDocument> h;
  // node100: episodes at boots 1000, 2000 (after a clean report), 3000 (reboot, still there).
  h.push_back(judged("node100", 1100, 1000, {x79}));
  h.push_back(judged("node100", 1200, 1000, {x79}));  // the same episode
  h.push_back(judged("node100", 2100, 2000, {}));     // repaired
  h.push_back(judged("node100", 2200, 2000, {x79}));  // back: episode 2
  h.push_back(judged("node100", 3100, 3000, {x79}));  // rebooted, still there: episode 3
  // node101: one episode, cured.
  h.push_back(judged("node101", 1100, 1000, {x79}));
  h.push_back(judged("node101", 2100, 2000, {}));
  FleetOptions o;
  FleetReport r = fleet_report(h, o);
  const FleetRepair* a = find_repair(r, "node100", "xid-79");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->episodes, 3);
  EXPECT_EQ(a->starts, (std::vector<std::int64_t>{1100, 2200, 3100}));
  EXPECT_TRUE(a->current);
  EXPECT_TRUE(a->escalate);
  EXPECT_EQ(a->cause_class, "xid: hardware");
  const FleetRepair* b = find_repair(r, "node101", "xid-79");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->episodes, 1);
  EXPECT_FALSE(b->current);
  EXPECT_FALSE(b->escalate);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.repairs.front().host, "node100");  // the escalation first
  // Acknowledged on the node in its latest report: shown, still escalated, not the reason the
  // report fails.
  {
    auto acked = h;
    acked[4].faults[0].acknowledged = true;
    const FleetReport ra = fleet_report(acked, o);
    EXPECT_TRUE(find_repair(ra, "node100", "xid-79")->escalate);
    EXPECT_TRUE(find_repair(ra, "node100", "xid-79")->acknowledged);
    EXPECT_EQ(ra.exit_code, 0);
  }
  // With one more repair allowed it is not yet an RMA case, and the report exits 0.
  o.repairs_before_rma = 3;
  r = fleet_report(h, o);
  EXPECT_FALSE(find_repair(r, "node100", "xid-79")->escalate);
  EXPECT_EQ(r.exit_code, 0);
  // The taxonomy: 4 episodes of one class on 2 nodes; node100's gaps 1100 and 900 s.
  ASSERT_EQ(r.taxonomy.size(), 1u);
  EXPECT_EQ(r.taxonomy[0].cause_class, "xid: hardware");
  EXPECT_EQ(r.taxonomy[0].episodes, 4);
  EXPECT_EQ(r.taxonomy[0].nodes, 2);
  ASSERT_TRUE(r.taxonomy[0].median_between_s);
  EXPECT_DOUBLE_EQ(*r.taxonomy[0].median_between_s, 1000.0);
  // Text and JSON say it.
  const std::string text = render_fleet_text(r, "f.db", TextOptions{});
  EXPECT_NE(text.find("Failure taxonomy"), std::string::npos) << text;
  const auto doc = nlohmann::json::parse(fleet_to_json(r, "f.db", JsonOptions{}));
  EXPECT_EQ(doc["repairs"][0]["episodes"], 3);
  EXPECT_EQ(doc["failure_taxonomy"][0]["nodes"], 2);
}

// Reports that do not judge the node (bench, facts) neither end nor start an episode; another
// GPU's fault is its own; an unknown Xid and a catalog id get their classes.
TEST(FleetRepairs, OnlyJudgedReportsCountAndEachGpuIsItsOwn) {
  const FleetFault on_a{"gpu-unresponsive", "GPU-aaaa", "critical"};
  const FleetFault on_b{"gpu-unresponsive", "GPU-bbbb", "critical"};
  std::vector<FleetDocument> h;
  h.push_back(judged("node100", 1100, 1000, {on_a}));
  FleetDocument bench = gate_doc(node("node100"), 1150);
  bench.schema = "gpuvet.bench/1";
  bench.judged = false;
  h.push_back(bench);
  h.push_back(judged("node100", 1200, 1000, {on_a, on_b}));
  const FleetReport r = fleet_report(h, FleetOptions{});
  ASSERT_EQ(r.repairs.size(), 2u);
  for (const auto& x : r.repairs) {
    EXPECT_EQ(x.episodes, 1) << x.subject;
    EXPECT_EQ(x.cause_class, "inventory");
  }
  EXPECT_EQ(fault_cause_class("xid-48"), "xid: memory");
  EXPECT_EQ(fault_cause_class("xid-9999"), "xid: unknown");
  EXPECT_EQ(fault_cause_class("no-such-id"), "other");
}

// The documents carry their faults (by GPU UUID where the finding lists one) and boot time;
// the store keeps them; a layout-1 database is read as it is and upgraded by the next ingest.
TEST(FleetRepairs, FaultsAndBootTimesGoThroughTheDocumentsAndTheStore) {
  nlohmann::ordered_json gate = {
      {"schema", "gpuvet.gate/1"},
      {"host", "node7"},
      {"collected_unix", 1764669600},
      {"uptime_s", 3600.5},
      {"verdict", "fail"},
      {"node",
       {{"host", "node7"},
        {"gpu_count", 0},
        {"gpus", nlohmann::json::array()},
        {"pairs", nlohmann::json::array()},
        {"bandwidth", nlohmann::json::array()}}},
      {"findings",
       {{{"id", "xid-error"},
         {"severity", "critical"},
         {"subjects", {"GPU1"}},
         {"gpus", {{{"index", 1}, {"uuid", "GPU-1111"}}}},
         {"fault", "xid-79"},
         {"acknowledged", {{"reason", "RMA open"}, {"expires_unix", 1796669600}}}},
        {{"id", "cpu-saturated"}, {"severity", "warning"}, {"fault", nullptr}}}}};
  auto docs = fleet_documents(gate.dump(), DocumentOrigin{"g.json", "g", std::nullopt, {}});
  ASSERT_TRUE(docs.is_ok()) << docs.status().message();
  ASSERT_EQ(docs.value().size(), 1u);
  const FleetDocument& d = docs.value()[0];
  EXPECT_TRUE(d.judged);
  EXPECT_EQ(d.boot_unix, (1764669600 - 3600) / 60 * 60);
  ASSERT_EQ(d.faults.size(), 1u);
  EXPECT_EQ(d.faults[0], (FleetFault{"xid-79", "GPU-1111", "critical", true}));

  TempDb t;
  {
    auto store = FleetStore::open(t.path(), true);
    ASSERT_TRUE(store.is_ok());
    ASSERT_TRUE(store.value()->ingest(docs.value()).is_ok());
    auto back = store.value()->load();
    ASSERT_TRUE(back.is_ok());
    ASSERT_EQ(back.value().size(), 1u);
    EXPECT_EQ(back.value()[0].faults, d.faults);
    EXPECT_EQ(back.value()[0].boot_unix, d.boot_unix);
    EXPECT_TRUE(back.value()[0].judged);
  }
  // A layout-1 database (what the previous gpuvet wrote): made by dropping what layout 2 added.
  const std::string old_path = t.path("layout1.db");
  {
    auto store = FleetStore::open(old_path, true);
    ASSERT_TRUE(store.is_ok());
    ASSERT_TRUE(store.value()->ingest({gate_doc(node("node1"), 1000)}).is_ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(old_path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE files; DROP TABLE faults; "
                         "ALTER TABLE documents DROP COLUMN boot_unix; "
                         "ALTER TABLE documents DROP COLUMN judged; PRAGMA user_version = 1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  {
    auto reader = FleetStore::open(old_path, false);
    ASSERT_TRUE(reader.is_ok()) << reader.status().message();
    auto back = reader.value()->load();
    ASSERT_TRUE(back.is_ok()) << back.status().message();
    ASSERT_EQ(back.value().size(), 1u);
    EXPECT_FALSE(back.value()[0].judged);
  }
  {
    auto writer = FleetStore::open(old_path, true);
    ASSERT_TRUE(writer.is_ok()) << writer.status().message();
    ASSERT_TRUE(writer.value()->ingest(docs.value()).is_ok());
    auto back = writer.value()->load();
    ASSERT_TRUE(back.is_ok());
    ASSERT_EQ(back.value().size(), 2u);
    EXPECT_EQ(back.value()[1].faults, d.faults);
  }
}

}  // namespace
}  // namespace gpuvet
