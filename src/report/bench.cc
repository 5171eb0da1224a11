// `gpuvet bench` output: matrices like the reference tools print them (N/A where a cell does
// not apply), each value with its spread and the comparison with what the link should give,
// then the P2P truth table; and the same as JSON.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <sstream>
#include <string>

#include "gpuvet/report.h"
#include "report/json_document.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;

std::string cell_text(const BenchCell& c) {
  if (c.error) return "ERROR";
  if (!c.value) return "N/A";
  return fmt::format("{:.2f}{}", *c.value, c.via_host ? "*" : "");
}

using report::opt;

const char* p2p_code(const std::optional<P2PStatus>& s) { return s ? p2p_status_code(*s) : "-"; }

std::string yes_no(const std::optional<bool>& b) { return b ? (*b ? "yes" : "NO") : "-"; }

// The reason every benchmark of the run failed or was skipped for, when they all share one
// (no CUDA, no driver): said once for the whole run instead of once per benchmark.
std::optional<std::string> shared_failure(const BenchReport& report) {
  if (report.results.size() < 2) return std::nullopt;
  const auto why = [](const BenchMatrix& m) -> std::optional<std::string> {
    if (m.skipped) return "skipped: " + *m.skipped;
    if (m.error) return "failed: " + *m.error;
    return std::nullopt;
  };
  const auto first = why(report.results.front());
  if (!first) return std::nullopt;
  for (const auto& m : report.results)
    if (why(m) != first) return std::nullopt;
  return first;
}

}  // namespace

// nvbandwidth's testcase for a benchmark key, or nullptr.
const char* nvbandwidth_testcase(const std::string& key) {
  for (const auto& b : bench_catalog())
    if (key == b.key) return b.nvbandwidth;
  return nullptr;
}

std::string render_bench_text(const BenchReport& report) {
  std::ostringstream o;
  if (!report.suite.empty()) o << "suite " << report.suite << "\n\n";
  const bool matched = report.suite.rfind("match nvbandwidth", 0) == 0;
  const std::optional<std::string> shared = shared_failure(report);
  if (shared) {
    std::vector<std::string> keys;
    for (const auto& m : report.results) keys.push_back(m.key);
    o << fmt::format("all {} benchmarks {}\n  ({})\n\n", report.results.size(), *shared,
                     fmt::join(keys, ", "));
  }
  // With a shared failure there is nothing more to say per benchmark.
  for (const auto& m : shared ? std::span<const BenchMatrix>() : std::span(report.results)) {
    o << m.key << " — " << m.title;
    if (!m.unit.empty()) o << " (" << m.unit << ")";
    if (const char* nv = nvbandwidth_testcase(m.key); matched && nv) o << " = nvbandwidth " << nv;
    o << "\n";
    if (m.skipped) {
      o << "  skipped: " << *m.skipped << "\n\n";
      continue;
    }
    if (m.error) {
      o << "  ERROR: " << *m.error << "\n\n";
      continue;
    }
    std::size_t label = 6;
    for (const auto& r : m.rows) label = std::max(label, r.size() + 1);
    o << fmt::format("  {:<{}}", "", label);
    for (const auto& c : m.cols) o << fmt::format("{:>12}", c);
    o << "\n";
    for (std::size_t r = 0; r < m.cells.size(); ++r) {
      o << fmt::format("  {:<{}}", r < m.rows.size() ? m.rows[r] : "", label);
      for (const auto& cell : m.cells[r]) o << fmt::format("{:>12}", cell_text(cell));
      o << "\n";
    }
    // Spread, share of the theoretical figure and errors, cell by cell, only where there is
    // something to say.
    for (std::size_t r = 0; r < m.cells.size(); ++r)
      for (std::size_t c = 0; c < m.cells[r].size(); ++c) {
        const BenchCell& cell = m.cells[r][c];
        const std::string where = (r < m.rows.size() ? m.rows[r] : "") +
                                  (m.cols.size() > 1 && c < m.cols.size() ? " → " + m.cols[c] : "");
        if (cell.error) o << "  " << where << ": ERROR " << *cell.error << "\n";
        // A figure whose data came back wrong is not compared: it is no bandwidth.
        if (cell.value && cell.expected && *cell.expected > 0 && !cell_wrong_data(cell))
          o << fmt::format(
              "  {}: {:.2f} {} = {:.0f} % of theoretical ({:.1f}){}{}\n", where, *cell.value,
              m.unit, 100.0 * *cell.value / *cell.expected, *cell.expected,
              cell.spread_pct ? fmt::format(", spread {:.1f} %", *cell.spread_pct) : "",
              cell.verified ? ", data verified" : "");
      }
    bool via_host = false;
    for (const auto& row : m.cells)
      for (const auto& cell : row) via_host |= cell.via_host;
    if (via_host) o << "  * no P2P between these GPUs: measured through host memory\n";
    for (const auto& n : m.notes) o << "  note: " << n << "\n";
    o << fmt::format("  ({:.0f} ms)\n\n", m.wall_ms);
  }
  if (!report.p2p_truth.empty()) {
    o << "p2p_truth — claimed vs working, per GPU pair\n";
    o << fmt::format("  {:<12}{:>6}{:>6}{:>10}{:>10}{:>10}{:>8}{:>8}  {}\n", "pair", "path", "nvml",
                     "cuda", "copy ok", "GB/s", "nccl", "acs", "verdict");
    for (const auto& t : report.p2p_truth)
      o << fmt::format("  {:<12}{:>6}{:>6}{:>10}{:>10}{:>10}{:>8}{:>8}  {}\n",
                       fmt::format("GPU{}-GPU{}", t.a, t.b), path_type_name(t.path),
                       p2p_code(t.nvml_read), yes_no(t.cuda_can_access), yes_no(t.copy_verified),
                       t.copy_gbps ? fmt::format("{:.1f}", *t.copy_gbps) : "-",
                       yes_no(t.nccl_allreduce_ok), yes_no(t.acs_redirect), t.verdict);
    o << "\n";
  }
  for (const auto& n : report.notes) {
    // The run's note that says the same as the shared failure above.
    if (shared && (*shared == "skipped: " + n || *shared == "failed: " + n)) continue;
    o << "note: " << n << "\n";
  }
  o << fmt::format("total {:.2f} s\n", report.wall_ms / 1000.0);
  // Device names and error texts come from the driver and libraries.
  return terminal_safe(o.str());
}

std::string render_bench_verdict(const BenchReport& report, const Diagnosis& diagnosis) {
  std::string o;
  bool corruption_named = false;
  for (const auto& f : diagnosis.findings) {
    if (!finding_measured_by(f.id, kByBench)) continue;
    if (o.empty()) o = "\nAgainst expectations\n";
    o += fmt::format("  {}  {}: {}\n", severity_name(f.severity), f.id, f.evidence);
    corruption_named = corruption_named || f.id == "data-corruption";
  }
  if (!corruption_named && bench_has_wrong_data(report))
    o += fmt::format(
        "{}  critical  data-corruption: a copy or collective came back with wrong data (the "
        "ERROR lines above); its figures are not bandwidth\n",
        o.empty() ? "\nAgainst expectations\n" : "");
  if (o.empty() && report.cuda_available)
    o = "\nAgainst expectations: every measured link is as fast as it should be (or no "
        "expectation is known for it).\n";
  return terminal_safe(o);
}

std::string bench_to_json(const BenchReport& report, int indent) {
  json results = json::array();
  for (const auto& m : report.results) {
    json cells = json::array();
    for (const auto& row : m.cells) {
      json r = json::array();
      for (const auto& c : row)
        r.push_back({{"value", opt(c.value)},
                     {"spread_pct", opt(c.spread_pct)},
                     {"expected", opt(c.expected)},
                     {"error", opt(c.error)},
                     {"via_host", c.via_host},
                     {"verified", c.verified},
                     {"wrong_data", c.wrong_data}});
      cells.push_back(r);
    }
    results.push_back(
        {{"key", m.key},
         {"title", m.title},
         {"unit", m.unit},
         {"rows", m.rows},
         {"cols", m.cols},
         {"row_gpu", m.row_gpu},
         {"col_gpu", m.col_gpu},
         {"size_bytes", opt(m.size_bytes)},
         {"cells", cells},
         {"skipped", opt(m.skipped)},
         {"error", opt(m.error)},
         {"notes", m.notes},
         {"nvbandwidth_testcase",
          nvbandwidth_testcase(m.key) ? json(nvbandwidth_testcase(m.key)) : json(nullptr)},
         {"wall_ms", m.wall_ms}});
  }
  json truth = json::array();
  for (const auto& t : report.p2p_truth)
    truth.push_back(
        {{"subject", fmt::format("GPU{}-GPU{}", t.a, t.b)},
         {"path", path_type_name(t.path)},
         {"nvml_read", t.nvml_read ? json(p2p_status_code(*t.nvml_read)) : json(nullptr)},
         {"cuda_can_access", opt(t.cuda_can_access)},
         {"enable_error", opt(t.enable_error)},
         {"copy_verified", opt(t.copy_verified)},
         {"copy_gbps", opt(t.copy_gbps)},
         {"nccl_allreduce_ok", opt(t.nccl_allreduce_ok)},
         {"nccl_transport", opt(t.nccl_transport)},
         {"acs_redirect", opt(t.acs_redirect)},
         {"iommu_translated", opt(t.iommu_translated)},
         {"verdict", t.verdict}});
  json doc = {{"schema", "gpuvet.bench/1"},
              {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}}},
              {"suite", report.suite},
              {"cuda_available", report.cuda_available},
              {"nccl_version", opt(report.nccl_version)},
              {"wall_ms", report.wall_ms},
              {"results", results},
              {"p2p_truth", truth},
              {"notes", report.notes}};
  return report::dump_document(doc, indent);
}

}  // namespace gpuvet
