// gpuvet/fleet.h — `gpuvet fleet`: a history of node reports in SQLite, and the nodes that
// drifted from their like.
//
// Nodes report with the engines a fleet already runs (`srun -N… gpuvet gate --json`, a
// Kubernetes Job or DaemonSet writing to a volume); `fleet ingest` reads those files into one
// SQLite database, each document once (keyed by its content hash, inside one transaction; a
// file whose bytes were ingested before is skipped before it is parsed), and
// `fleet report` compares every node's latest report with its group of like nodes (same GPU
// model and count, or same baseline):
//   - categorical outliers: a path matrix, P2P matrix or link set (PCIe width and generation,
//     NUMA node, NVLink count) that differs from the group's majority fingerprint, or from the
//     node's own last passing gate report ("changed since last pass");
//   - numeric outliers: per group and per measured value (h2d GPU3, peer GPU0-GPU1, …), more
//     than 3.5 robust z (median and MAD) below the median and at least 5 % below it;
//   - a drain circuit breaker: never recommend draining more than a share of a group at once.
// Parsing and the analysis are pure functions; FleetStore owns the database.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuvet/baseline.h"
#include "gpuvet/status.h"

namespace gpuvet {

// A fault a report found (a finding with a `fault`): what, on which GPU.
struct FleetFault {
  std::string key;      // "xid-79", "gpu-unresponsive", …
  std::string subject;  // the GPU's UUID where the report names it, else its subject ("GPU3")
  std::string severity;
  // The node's operators acknowledged it (an ack in the node's acks.toml, unexpired when the
  // report was made): still counted and shown, never the reason the fleet report fails.
  bool acknowledged = false;
  bool operator==(const FleetFault&) const = default;
};

// One node report as the fleet keeps it.
struct FleetDocument {
  std::string host;
  std::optional<std::int64_t> collected_unix;
  std::string schema;  // "gpuvet.gate/1", "gpuvet.report/1", "gpuvet.bench/1"
  std::string source;  // the file, "#N" for the Nth document of a multi-document file
  std::optional<std::string> verdict;   // gate documents: "pass", "fail", "unknown"
  std::optional<std::string> reason;    // gate documents: the one-line reason
  std::optional<std::string> baseline;  // gate documents: the baseline's name, else its path
  bool has_print = false;    // gate and report documents; a bench document has bandwidth only
  NodePrint print;           // print.bandwidth: what the document measured
  std::string content_hash;  // of the document itself: the same report is kept once
  // When the node booted (collected_unix − uptime, to the minute), where the report says.
  std::optional<std::int64_t> boot_unix;
  // Whether the report judged the node (it has findings: a gate, a diagnose), so that a fault
  // absent from it is absent from the node; faults are its findings' `fault`s.
  bool judged = false;
  std::vector<FleetFault> faults;
};

// Where a file came from, for host names and times its documents do not carry.
struct DocumentOrigin {
  std::string path;
  std::string host_hint;                   // the file's stem: a bench document's host
  std::optional<std::int64_t> mtime_unix;  // a document without collected_unix gets this
  // The reading machine's clock: a document dated more than a day after it (a node whose
  // clock is wrong) is refused, so it cannot make the whole fleet look stale.
  std::optional<std::int64_t> now_unix;
};

// Every document of one file: a JSON object, an array of them, or JSON lines. A document of
// another schema, or one without a host, is kInvalidInput naming the file (and "#N").
Result<std::vector<FleetDocument>> fleet_documents(std::string_view text,
                                                   const DocumentOrigin& origin);

// The files an ingest reads: each path that is a file, and every regular *.json file under
// each path that is a directory (walked recursively in name order, links not followed).
// A path that does not exist or cannot be listed is a problem, not an error.
struct FleetInputs {
  std::vector<std::string> files;
  std::vector<std::string> problems;
};
FleetInputs fleet_input_files(const std::vector<std::string>& paths);

// Reads one file (a regular file of at most 64 MiB) and its documents; the host hint is the
// file's stem and a document without collected_unix gets the file's modification time.
Result<std::vector<FleetDocument>> read_fleet_file(const std::string& path);

// The files already in a history: the hash of each file's bytes → how many documents it held.
using KnownFleetFiles = std::unordered_map<std::string, int>;

// One file of an ingest: the hash of its bytes and its documents, or that a file of the same
// bytes is already in the history (then it was not parsed: an hourly ingest of a growing
// directory reads only what is new).
struct FleetFile {
  std::string byte_hash;               // "<FNV-1a 64 of the bytes, 16 hex digits>-<byte count>"
  std::optional<int> known_documents;  // set: skipped; the file of these bytes held this many
  std::vector<FleetDocument> documents;
};

// read_fleet_file, skipping a file whose bytes are in `known`. Thread-safe (files are read in
// parallel; `known` is only read).
Result<FleetFile> read_fleet_file(const std::string& path, const KnownFleetFiles& known);

// What one ingest did.
struct IngestSummary {
  int files = 0;
  int documents = 0;
  int added = 0;
  int already_present = 0;
};

// The fleet history. Opening with `create` makes the database when the file is missing or
// empty (else it is opened read-only and must exist); a file that is not SQLite, or a SQLite
// database of another program or of a later gpuvet, is kInvalidInput and is never written
// to. Writers wait up to 10 s for another writer.
class FleetStore {
 public:
  static Result<std::unique_ptr<FleetStore>> open(const std::string& path, bool create);
  ~FleetStore();
  FleetStore(const FleetStore&) = delete;
  FleetStore& operator=(const FleetStore&) = delete;

  // Adds the documents in one transaction: all or none (a killed ingest leaves the database
  // as it was). A document already present (same content hash) is counted, not added.
  // `files` (byte hash, documents) are the files the documents came from, remembered in the
  // same transaction so that the next ingest skips them unread.
  Result<IngestSummary> ingest(const std::vector<FleetDocument>& documents,
                               const std::vector<std::pair<std::string, int>>& files = {});

  // The files ingested so far (by the hash of their bytes); none in a database of layout 1 or
  // 2 opened for reading.
  Result<KnownFleetFiles> known_files() const;

  // Every document, oldest first (by collected_unix, then by ingest order).
  Result<std::vector<FleetDocument>> load() const;

  struct Impl;

 private:
  explicit FleetStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

enum class FleetGrouping { kModel, kBaseline };  // GPU model and count | the gate's baseline
Result<FleetGrouping> parse_fleet_grouping(std::string_view name);  // "model", "baseline"
const char* fleet_grouping_name(FleetGrouping g);

struct FleetOptions {
  FleetGrouping group_by = FleetGrouping::kModel;
  double robust_z = 3.5;               // a numeric outlier is more than this many robust z below
  double min_drop = 0.05;              // … and at least this fraction below the median
  int min_numeric_group = 8;           // numeric statistics only over at least this many nodes
  double max_drain_share = 0.2;        // the circuit breaker: at most this share of a group
  std::int64_t stale_after_s = 86400;  // a node whose last report is older than the newest
                                       // report by more than this is stale
  // The report run's clock: staleness is measured from the newest report, but never from
  // later than this (a report from the future cannot make every node stale).
  std::optional<std::int64_t> now_unix;
  // Repairs with memory: a fault on one GPU that came back after this many repairs (a report
  // without it in between, or a reboot) calls for hardware inspection / RMA, not another reset.
  int repairs_before_rma = 2;
};

// One fault on one GPU of one node over the history. An episode starts when a judged report
// shows it and the previous one did not, or shows it again after the node rebooted: each
// episode after the first is a repair (a reset, a reboot, a reseat) that did not hold.
struct FleetRepair {
  std::string host;
  std::string fault;        // "xid-79", "gpu-unresponsive"
  std::string subject;      // the GPU's UUID, else its subject ("GPU3")
  std::string cause_class;  // "xid: memory", "inventory", … (FleetFailureClass)
  int episodes = 0;
  std::vector<std::int64_t> starts;  // each episode's first report, when dated
  bool current = false;              // in the node's latest judged report
  bool escalate = false;             // came back after repairs_before_rma repairs or more
  bool acknowledged = false;         // acknowledged in the latest report that showed it
};

// The fleet's failures by cause class: how often, on how many nodes, how far apart.
struct FleetFailureClass {
  std::string cause_class;
  int episodes = 0;
  int nodes = 0;
  // The median time between two consecutive episodes of the class on one node (empty when no
  // node had two).
  std::optional<double> median_between_s;
};

struct FleetMajority {
  std::string part;                 // "topology", "p2p", "links"
  std::optional<std::string> hash;  // none when no fingerprint has more than half the nodes
  int nodes_with_it = 0;
  int nodes_with_print = 0;
};

struct FleetGroup {
  std::string name;  // "8 x NVIDIA H100 80GB HBM3" or the baseline's name
  std::optional<std::string> gpu_model;
  std::optional<int> gpu_count;
  int nodes = 0;
  std::vector<FleetMajority> majority;
  int gate_pass = 0, gate_fail = 0, gate_unknown = 0;  // latest gate verdicts
  int outliers = 0;
  int drain_limit = 0;           // the most nodes of this group the report would drain at once
  bool circuit_breaker = false;  // more outliers than drain_limit: some are held back
  std::vector<std::string> notes;
};

struct FleetOutlier {
  std::string host;
  std::string group;
  std::vector<std::string> kinds;    // "topology", "p2p", "links", "bandwidth", in that order
  std::vector<std::string> reasons;  // "GPU0-GPU1 path SYS (group PIX)", …
  bool changed_since_last_pass = false;
  std::optional<std::int64_t> last_pass_unix;
  std::optional<std::int64_t> report_unix;
  bool categorical = false;  // a fingerprint differs (else only a measured value)
  double worst_z = 0;        // the lowest robust z of its numeric reasons (0 when none)
  bool drain = false;        // recommended for draining within the circuit breaker
};

struct FleetStale {
  std::string host;
  std::optional<std::int64_t> last_unix;
};

struct FleetReport {
  FleetOptions options;
  int nodes = 0;
  int documents = 0;
  std::optional<std::int64_t> newest_unix;
  std::vector<FleetGroup> groups;      // by name
  std::vector<FleetOutlier> outliers;  // categorical first, then by group and host
  std::vector<FleetStale> stale;
  std::vector<FleetRepair> repairs;         // escalations first, then by host, fault, subject
  std::vector<FleetFailureClass> taxonomy;  // most episodes first
  std::vector<std::string> notes;
  // 0 no outlier, 1 measured outliers only, 2 a fingerprint outlier or a current fault that
  // came back after repairs (an RMA candidate)
  int exit_code = 0;
};

// The repairs and the taxonomy of fleet_report, from the history alone (any order).
void fleet_repairs(const std::vector<FleetDocument>& history, const FleetOptions& options,
                   FleetReport& report);
// "xid: memory" for "xid-48" (the Xid catalog's origin), else the finding's catalog category
// ("gpu-unresponsive" → "inventory"), else "other".
std::string fault_cause_class(std::string_view fault);

// Judges the fleet from its history (every document, any order).
FleetReport fleet_report(const std::vector<FleetDocument>& history, const FleetOptions& options);

// The robust statistics, for tests and docs: median, and the median absolute deviation.
double median_of(std::vector<double> values);
double mad_of(const std::vector<double>& values, double median);

}  // namespace gpuvet
