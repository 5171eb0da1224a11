// src/fleet/store.cc — the fleet history in SQLite: one row per document, its GPUs, pairs and
// measured bandwidth in tables of their own (a person can query them with sqlite3).
//
// The database says it is gpuvet's (PRAGMA application_id) and which layout it has (PRAGMA
// user_version); anything else is refused before a byte is written. An ingest is one
// transaction: a process killed in the middle leaves a hot journal that SQLite rolls back at
// the next open, so the history is as it was before that ingest.
#include <sys/stat.h>

#include <sqlite3.h>

#include <fmt/format.h>

#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "gpuvet/fleet.h"

namespace gpuvet {

namespace {

constexpr int kApplicationId = 0x67707674;  // "gpvt"
// Layout 2 added documents.boot_unix and the faults table, layout 3 the files table; an older
// file is upgraded by the next ingest (columns and tables are added, nothing is rewritten) and
// read as it is meanwhile.
constexpr int kLayout = 3;

// Layout 1's tables (kUpgrade1To2 and kUpgrade2To3 add the later layouts').
constexpr const char* kSchema = R"sql(
CREATE TABLE documents(
  id INTEGER PRIMARY KEY,
  content_hash TEXT NOT NULL UNIQUE,
  host TEXT NOT NULL,
  collected_unix INTEGER,
  schema TEXT NOT NULL,
  source TEXT NOT NULL,
  verdict TEXT,
  reason TEXT,
  baseline TEXT,
  has_print INTEGER NOT NULL,
  gpu_model TEXT,
  gpu_count INTEGER,
  driver_version TEXT,
  topology_hash TEXT,
  p2p_hash TEXT,
  links_hash TEXT,
  ingested_unix INTEGER NOT NULL);
CREATE INDEX documents_by_host ON documents(host, collected_unix);
CREATE TABLE gpus(
  document_id INTEGER NOT NULL REFERENCES documents(id),
  idx INTEGER NOT NULL,
  name TEXT, uuid TEXT, pci_bus_id TEXT,
  pcie_gen_max INTEGER, pcie_width_max INTEGER, pcie_width INTEGER,
  numa_node INTEGER, nvlinks_up INTEGER, fabric TEXT, vbios TEXT,
  ecc_enabled INTEGER, power_limit_w REAL,
  PRIMARY KEY(document_id, idx)) WITHOUT ROWID;
CREATE TABLE pairs(
  document_id INTEGER NOT NULL REFERENCES documents(id),
  a INTEGER NOT NULL, b INTEGER NOT NULL, path TEXT NOT NULL, p2p TEXT,
  PRIMARY KEY(document_id, a, b)) WITHOUT ROWID;
CREATE TABLE bandwidth(
  document_id INTEGER NOT NULL REFERENCES documents(id),
  key TEXT NOT NULL, subject TEXT NOT NULL, size_bytes INTEGER, gbps REAL NOT NULL);
CREATE INDEX bandwidth_by_document ON bandwidth(document_id);
)sql";

// What layout 2 adds to layout 1. A new database is layout 1's tables and these, so both ways
// to layout 2 run the same statements.
constexpr const char* kUpgrade1To2 = R"sql(
ALTER TABLE documents ADD COLUMN boot_unix INTEGER;
ALTER TABLE documents ADD COLUMN judged INTEGER;
CREATE TABLE faults(
  document_id INTEGER NOT NULL REFERENCES documents(id),
  key TEXT NOT NULL, subject TEXT NOT NULL, severity TEXT NOT NULL,
  acknowledged INTEGER NOT NULL DEFAULT 0);
CREATE INDEX faults_by_document ON faults(document_id);
)sql";

// What layout 3 adds: the files ingested, by the hash of their bytes, so that the next ingest
// skips them before parsing them. Documents stay keyed by their content hash (the same report
// in another file, or written with other white space, is still kept once); a file is
// remembered only once all its documents are in.
constexpr const char* kUpgrade2To3 = R"sql(
CREATE TABLE files(
  byte_hash TEXT PRIMARY KEY,
  documents INTEGER NOT NULL,
  ingested_unix INTEGER NOT NULL) WITHOUT ROWID;
)sql";

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() const { return stmt_; }

  void bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, const char* v) { sqlite3_bind_text(stmt_, i, v, -1, SQLITE_TRANSIENT); }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, int v) { sqlite3_bind_int(stmt_, i, v); }
  void bind(int i, bool v) { sqlite3_bind_int(stmt_, i, v ? 1 : 0); }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  template <class T>
  void bind(int i, const std::optional<T>& v) {
    if (v)
      bind(i, *v);
    else
      sqlite3_bind_null(stmt_, i);
  }
  void bind(int i, const std::optional<std::uint64_t>& v) {
    if (v)
      bind(i, static_cast<std::int64_t>(*v));
    else
      sqlite3_bind_null(stmt_, i);
  }
  int step() { return sqlite3_step(stmt_); }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  // Binds `values` to columns 1…N, steps once and resets: one row of an INSERT. False when the
  // step failed.
  template <class... V>
  bool insert_row(const V&... values) {
    int column = 0;
    (bind(++column, values), ...);
    const bool done = step() == SQLITE_DONE;
    reset();
    return done;
  }

  bool is_null(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  std::string text(int c) const {
    const auto* p = sqlite3_column_text(stmt_, c);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<std::size_t>(sqlite3_column_bytes(stmt_, c)))
             : std::string();
  }
  std::optional<std::string> opt_text(int c) const {
    return is_null(c) ? std::nullopt : std::optional(text(c));
  }
  std::int64_t int64(int c) const { return sqlite3_column_int64(stmt_, c); }
  std::optional<int> opt_int(int c) const {
    return is_null(c) ? std::nullopt : std::optional(sqlite3_column_int(stmt_, c));
  }
  std::optional<double> opt_double(int c) const {
    return is_null(c) ? std::nullopt : std::optional(sqlite3_column_double(stmt_, c));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

}  // namespace

struct FleetStore::Impl {
  sqlite3* db = nullptr;
  std::string path;
  std::int64_t layout = kLayout;
  ~Impl() { sqlite3_close(db); }

  Status error(std::string_view doing) const {
    return Status::invalid_input(
        fmt::format("fleet database {}: {}: {}", path, doing, sqlite3_errmsg(db)));
  }
  bool exec(const char* sql) {
    return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  Result<std::int64_t> pragma(const char* name) {
    Statement s(db, fmt::format("PRAGMA {}", name).c_str());
    if (!s.ok() || s.step() != SQLITE_ROW) return error(fmt::format("reading {}", name));
    return s.int64(0);
  }
};

FleetStore::FleetStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FleetStore::~FleetStore() = default;

Result<std::unique_ptr<FleetStore>> FleetStore::open(const std::string& path, bool create) {
  // Only a regular file (or none yet, to create): SQLite would block forever reading a FIFO
  // and says only "disk I/O error" of a directory or a device; a symbolic link is refused too.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Status::invalid_input(fmt::format(
        "fleet database {}: not a regular file ({}): gpuvet keeps its history in a plain file",
        path,
        S_ISFIFO(st.st_mode)   ? "a FIFO"
        : S_ISDIR(st.st_mode)  ? "a directory"
        : S_ISLNK(st.st_mode)  ? "a symbolic link"
        : S_ISSOCK(st.st_mode) ? "a socket"
                               : "a device"));
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const int flags = create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2(path.c_str(), &impl->db, flags | SQLITE_OPEN_NOFOLLOW, nullptr) !=
      SQLITE_OK) {
    if (!impl->db)
      return Status::invalid_input(fmt::format("fleet database {}: cannot open", path));
    return impl->error(create ? "cannot open or create it"
                              : "cannot open it (gpuvet fleet ingest creates it)");
  }
  sqlite3_busy_timeout(impl->db, 10000);
  sqlite3_extended_result_codes(impl->db, 1);
  // The first read of the file: a file that is not SQLite fails here ("file is not a database").
  auto app = impl->pragma("application_id");
  if (!app.is_ok())
    return Status::invalid_input(
        fmt::format("fleet database {}: not a SQLite database gpuvet can read ({})", path,
                    sqlite3_errmsg(impl->db)));
  auto layout = impl->pragma("user_version");
  if (!layout.is_ok()) return layout.status();
  Statement tables(impl->db, "SELECT count(*) FROM sqlite_schema");
  if (!tables.ok() || tables.step() != SQLITE_ROW) return impl->error("reading its tables");
  const auto n_tables = tables.int64(0);
  if (app.value() == 0 && n_tables == 0) {
    if (!create)
      return Status::invalid_input(
          fmt::format("fleet database {} is empty: gpuvet fleet ingest fills it", path));
    const std::string init = fmt::format(
        "BEGIN IMMEDIATE; {} {} {} PRAGMA application_id = {}; PRAGMA user_version = {}; "
        "COMMIT;",
        kSchema, kUpgrade1To2, kUpgrade2To3, kApplicationId, kLayout);
    if (!impl->exec(init.c_str())) {
      auto s = impl->error("creating its tables");
      impl->exec("ROLLBACK");
      return s;
    }
  } else if (app.value() != kApplicationId) {
    return Status::invalid_input(fmt::format(
        "fleet database {} is a SQLite database of another program (application id {:#x}, {} "
        "tables): gpuvet leaves it alone",
        path, app.value(), n_tables));
  } else if ((layout.value() == 1 || layout.value() == 2) && create) {
    const std::string upgrade =
        fmt::format("BEGIN IMMEDIATE; {} {} PRAGMA user_version = {}; COMMIT;",
                    layout.value() == 1 ? kUpgrade1To2 : "", kUpgrade2To3, kLayout);
    if (!impl->exec(upgrade.c_str())) {
      auto s = impl->error(fmt::format("upgrading it from layout {}", layout.value()));
      impl->exec("ROLLBACK");
      return s;
    }
  } else if (layout.value() == 1 || layout.value() == 2) {
    impl->layout = layout.value();  // read as it is (layout 1: no boot times, no faults)
  } else if (layout.value() != kLayout) {
    return Status::invalid_input(fmt::format(
        "fleet database {} has layout {}; this gpuvet reads layouts 1 to {} (a later gpuvet "
        "made it?)",
        path, layout.value(), kLayout));
  }
  return std::unique_ptr<FleetStore>(new FleetStore(std::move(impl)));
}

Result<IngestSummary> FleetStore::ingest(const std::vector<FleetDocument>& documents,
                                         const std::vector<std::pair<std::string, int>>& files) {
  sqlite3* db = impl_->db;
  IngestSummary summary;
  summary.documents = static_cast<int>(documents.size());
  if (!impl_->exec("BEGIN IMMEDIATE")) return impl_->error("starting the ingest");
  const auto fail = [&](std::string_view doing) {
    auto s = impl_->error(doing);
    impl_->exec("ROLLBACK");
    return s;
  };
  Statement doc(
      db,
      "INSERT OR IGNORE INTO documents(content_hash, host, collected_unix, schema, "
      "source, verdict, reason, baseline, has_print, gpu_model, gpu_count, "
      "driver_version, topology_hash, p2p_hash, links_hash, ingested_unix, boot_unix, judged) "
      "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  Statement gpu(db, "INSERT INTO gpus VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  Statement pair(db, "INSERT INTO pairs VALUES(?,?,?,?,?)");
  Statement bw(db, "INSERT INTO bandwidth VALUES(?,?,?,?,?)");
  Statement fault(db, "INSERT INTO faults VALUES(?,?,?,?,?)");
  Statement file(db, "INSERT OR IGNORE INTO files VALUES(?,?,?)");
  if (!doc.ok() || !gpu.ok() || !pair.ok() || !bw.ok() || !fault.ok() || !file.ok())
    return fail("preparing the ingest");
  const std::int64_t now = std::time(nullptr);
  for (const auto& d : documents) {
    const auto& p = d.print;
    doc.bind(1, d.content_hash);
    doc.bind(2, d.host);
    doc.bind(3, d.collected_unix);
    doc.bind(4, d.schema);
    doc.bind(5, d.source);
    doc.bind(6, d.verdict);
    doc.bind(7, d.reason);
    doc.bind(8, d.baseline);
    doc.bind(9, d.has_print);
    if (d.has_print) {
      doc.bind(10, p.gpu_model);
      doc.bind(11, p.gpu_count);
      doc.bind(12, p.driver_version);
      doc.bind(13, print_hash(p, "topology"));
      doc.bind(14, print_hash(p, "p2p"));
      doc.bind(15, print_hash(p, "links"));
    }
    doc.bind(16, now);
    doc.bind(17, d.boot_unix);
    doc.bind(18, d.judged);
    if (doc.step() != SQLITE_DONE) return fail(fmt::format("adding {}", d.source));
    doc.reset();
    if (sqlite3_changes(db) == 0) {
      ++summary.already_present;
      continue;
    }
    ++summary.added;
    const std::int64_t id = sqlite3_last_insert_rowid(db);
    for (const auto& g : p.gpus)
      if (!gpu.insert_row(id, g.index, g.name, g.uuid, g.pci_bus_id, g.pcie_gen_max,
                          g.pcie_width_max, g.pcie_width, g.numa_node, g.nvlinks_up, g.fabric,
                          g.vbios, g.ecc_enabled, g.power_limit_w))
        return fail(fmt::format("adding the GPUs of {}", d.source));
    for (const auto& q : p.pairs)
      if (!pair.insert_row(id, q.a, q.b, q.path, q.p2p))
        return fail(fmt::format("adding the pairs of {}", d.source));
    for (const auto& v : p.bandwidth)
      if (!bw.insert_row(id, v.key, v.subject, v.size_bytes, v.gbps))
        return fail(fmt::format("adding the bandwidth of {}", d.source));
    for (const auto& f : d.faults)
      if (!fault.insert_row(id, f.key, f.subject, f.severity, f.acknowledged))
        return fail(fmt::format("adding the faults of {}", d.source));
  }
  for (const auto& [byte_hash, n] : files)
    if (!file.insert_row(byte_hash, n, now)) return fail("remembering the files read");
  if (!impl_->exec("COMMIT")) return fail("committing the ingest");
  return summary;
}

Result<KnownFleetFiles> FleetStore::known_files() const {
  KnownFleetFiles known;
  if (impl_->layout < 3) return known;
  Statement s(impl_->db, "SELECT byte_hash, documents FROM files");
  if (!s.ok()) return impl_->error("reading its files");
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) known.emplace(s.text(0), static_cast<int>(s.int64(1)));
  if (rc != SQLITE_DONE) return impl_->error("reading its files");
  return known;
}

Result<std::vector<FleetDocument>> FleetStore::load() const {
  sqlite3* db = impl_->db;
  std::vector<FleetDocument> out;
  std::map<std::int64_t, std::size_t> at;  // document id → index in out
  // One read transaction: the four tables are read as of one moment.
  if (!impl_->exec("BEGIN")) return impl_->error("starting to read");
  const auto fail = [&](std::string_view doing) {
    auto s = impl_->error(doing);
    impl_->exec("ROLLBACK");
    return s;
  };
  {
    const std::string sql = fmt::format(
        "SELECT id, content_hash, host, collected_unix, schema, source, verdict, reason, "
        "baseline, has_print, gpu_model, gpu_count, driver_version, {} FROM documents "
        "ORDER BY coalesce(collected_unix, 0), id",
        impl_->layout >= 2 ? "boot_unix, judged" : "NULL, 0");
    Statement s(db, sql.c_str());
    if (!s.ok()) return fail("reading its documents");
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      FleetDocument d;
      d.content_hash = s.text(1);
      d.host = s.text(2);
      if (!s.is_null(3)) d.collected_unix = s.int64(3);
      d.schema = s.text(4);
      d.source = s.text(5);
      d.verdict = s.opt_text(6);
      d.reason = s.opt_text(7);
      d.baseline = s.opt_text(8);
      d.has_print = s.int64(9) != 0;
      d.print.host = d.host;
      d.print.gpu_model = s.opt_text(10);
      d.print.gpu_count = s.opt_int(11).value_or(0);
      d.print.driver_version = s.opt_text(12);
      if (!s.is_null(13)) d.boot_unix = s.int64(13);
      d.judged = !s.is_null(14) && s.int64(14) != 0;
      at.emplace(s.int64(0), out.size());
      out.push_back(std::move(d));
    }
    if (rc != SQLITE_DONE) return fail("reading its documents");
  }
  const auto each = [&](const char* sql, auto&& fill) -> Status {
    Statement s(db, sql);
    if (!s.ok()) return impl_->error(sql);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      const auto it = at.find(s.int64(0));
      if (it != at.end()) fill(s, out[it->second].print);
    }
    if (rc != SQLITE_DONE) return impl_->error(sql);
    return Status::ok();
  };
  Status st = each(
      "SELECT document_id, idx, name, uuid, pci_bus_id, pcie_gen_max, pcie_width_max, "
      "pcie_width, numa_node, nvlinks_up, fabric, vbios, ecc_enabled, power_limit_w FROM gpus "
      "ORDER BY document_id, idx",
      [](const Statement& s, NodePrint& p) {
        GpuPrint g;
        g.index = s.opt_int(1).value_or(0);
        g.name = s.opt_text(2);
        g.uuid = s.opt_text(3);
        g.pci_bus_id = s.opt_text(4);
        g.pcie_gen_max = s.opt_int(5);
        g.pcie_width_max = s.opt_int(6);
        g.pcie_width = s.opt_int(7);
        g.numa_node = s.opt_int(8);
        g.nvlinks_up = s.opt_int(9);
        g.fabric = s.opt_text(10);
        g.vbios = s.opt_text(11);
        if (const auto e = s.opt_int(12)) g.ecc_enabled = *e != 0;
        g.power_limit_w = s.opt_double(13);
        p.gpus.push_back(std::move(g));
      });
  if (st.is_ok())
    st = each("SELECT document_id, a, b, path, p2p FROM pairs ORDER BY document_id, a, b",
              [](const Statement& s, NodePrint& p) {
                p.pairs.push_back(
                    {s.opt_int(1).value_or(0), s.opt_int(2).value_or(0), s.text(3), s.opt_text(4)});
              });
  if (st.is_ok())
    st = each("SELECT document_id, key, subject, size_bytes, gbps FROM bandwidth ORDER BY rowid",
              [](const Statement& s, NodePrint& p) {
                BandwidthValue v{s.text(1), s.text(2), std::nullopt, s.opt_double(4).value_or(0)};
                if (!s.is_null(3)) v.size_bytes = static_cast<std::uint64_t>(s.int64(3));
                p.bandwidth.push_back(std::move(v));
              });
  if (st.is_ok() && impl_->layout >= 2) {
    Statement s(
        db, "SELECT document_id, key, subject, severity, acknowledged FROM faults ORDER BY rowid");
    int rc = s.ok() ? SQLITE_ROW : SQLITE_ERROR;
    while (s.ok() && (rc = s.step()) == SQLITE_ROW)
      if (const auto it = at.find(s.int64(0)); it != at.end())
        out[it->second].faults.push_back({s.text(1), s.text(2), s.text(3), s.int64(4) != 0});
    if (rc != SQLITE_DONE) st = impl_->error("reading its faults");
  }
  if (!st.is_ok()) {
    impl_->exec("ROLLBACK");
    return st;
  }
  impl_->exec("COMMIT");
  return out;
}

}  // namespace gpuvet
