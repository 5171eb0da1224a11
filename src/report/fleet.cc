// The fleet report: terminal text and `gpuvet.fleet/1` JSON (docs/json-schema.md).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <ctime>
#include <string>

#include "gpuvet/fleet.h"
#include "gpuvet/report.h"
#include "report/json_document.h"
#include "report/terminal_text.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;

using report::opt;

std::string when(std::optional<std::int64_t> t) {
  if (!t) return "unknown time";
  const std::time_t tt = static_cast<std::time_t>(*t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// "3 h", "2.5 d": a time between failures.
std::string span(double s) {
  if (s < 2 * 3600) return fmt::format("{:.0f} min", s / 60);
  if (s < 2 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} d", s / 86400);
}

// What to do about a fault, with the fleet's memory of it.
std::string repair_action(const FleetRepair& r, int repairs_before_rma) {
  if (r.escalate)
    return fmt::format(
        "hardware inspection / RMA: it came back after {} repair(s) (reset or reboot), more than "
        "the {} that may fail before a reset is no longer the answer",
        r.episodes - 1, repairs_before_rma);
  if (!r.current) return "cured by the last repair (not in the latest report)";
  return r.episodes == 1 ? "reset the GPU (or reboot the node) and watch whether it comes back"
                         : fmt::format(
                               "back after {} repair(s): reset again; one more and it "
                               "is an RMA case",
                               r.episodes - 1);
}

}  // namespace

std::string fleet_to_json(const FleetReport& r, std::string_view database,
                          const JsonOptions& options) {
  json groups = json::array();
  for (const auto& g : r.groups) {
    json majority = json::array();
    for (const auto& m : g.majority)
      majority.push_back({{"part", m.part},
                          {"hash", opt(m.hash)},
                          {"nodes_with_it", m.nodes_with_it},
                          {"nodes_with_print", m.nodes_with_print}});
    groups.push_back(
        {{"group", g.name},
         {"gpu_model", opt(g.gpu_model)},
         {"gpu_count", opt(g.gpu_count)},
         {"nodes", g.nodes},
         {"gate", {{"pass", g.gate_pass}, {"fail", g.gate_fail}, {"unknown", g.gate_unknown}}},
         {"majority", majority},
         {"outliers", g.outliers},
         {"drain_limit", g.drain_limit},
         {"circuit_breaker", g.circuit_breaker},
         {"notes", g.notes}});
  }
  json outliers = json::array();
  for (const auto& o : r.outliers)
    outliers.push_back(
        {{"host", o.host},
         {"group", o.group},
         {"kinds", o.kinds},
         {"reasons", o.reasons},
         {"changed_since_last_pass", o.changed_since_last_pass},
         {"last_pass_unix", opt(o.last_pass_unix)},
         {"report_unix", opt(o.report_unix)},
         {"categorical", o.categorical},
         {"worst_robust_z", o.kinds.empty() || o.worst_z == 0 || !std::isfinite(o.worst_z)
                                ? json(nullptr)
                                : json(o.worst_z)},
         {"drain", o.drain}});
  json stale = json::array();
  for (const auto& s : r.stale)
    stale.push_back({{"host", s.host}, {"last_unix", opt(s.last_unix)}});
  json repairs = json::array();
  for (const auto& x : r.repairs)
    repairs.push_back({{"host", x.host},
                       {"fault", x.fault},
                       {"subject", x.subject},
                       {"cause_class", x.cause_class},
                       {"episodes", x.episodes},
                       {"episode_starts_unix", x.starts},
                       {"current", x.current},
                       {"escalate", x.escalate},
                       {"acknowledged", x.acknowledged},
                       {"action", repair_action(x, r.options.repairs_before_rma)}});
  json taxonomy = json::array();
  for (const auto& t : r.taxonomy)
    taxonomy.push_back({{"cause_class", t.cause_class},
                        {"episodes", t.episodes},
                        {"nodes", t.nodes},
                        {"median_between_s", opt(t.median_between_s)}});
  const auto& p = r.options;
  const json doc = {
      {"schema", "gpuvet.fleet/1"},
      {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}, {"command", options.command}}},
      {"database", database},
      {"nodes", r.nodes},
      {"documents", r.documents},
      {"newest_unix", opt(r.newest_unix)},
      {"options",
       {{"group_by", fleet_grouping_name(p.group_by)},
        {"robust_z", p.robust_z},
        {"min_drop", p.min_drop},
        {"min_numeric_group", p.min_numeric_group},
        {"max_drain_share", p.max_drain_share},
        {"stale_after_s", p.stale_after_s},
        {"repairs_before_rma", p.repairs_before_rma}}},
      {"groups", groups},
      {"outliers", outliers},
      {"stale", stale},
      {"repairs", repairs},
      {"failure_taxonomy", taxonomy},
      {"notes", r.notes},
      {"exit_code", r.exit_code},
  };
  return report::dump_document(doc, options.indent);
}

std::string render_fleet_text(const FleetReport& r, std::string_view database,
                              const TextOptions& options) {
  using report::Style;
  const auto c = [&](Style s) { return options.color ? s : report::kNoStyle; };
  constexpr Style bold{"\x1b[1m"};
  constexpr Style reset{"\x1b[0m"};
  constexpr Style red{"\x1b[31m"};
  constexpr Style yellow{"\x1b[33m"};
  report::TerminalText o;
  o << c(bold) << "gpuvet fleet" << c(reset) << " — " << database << ": " << r.nodes << " nodes, "
    << r.documents << " reports, newest " << when(r.newest_unix) << ", grouped by "
    << fleet_grouping_name(r.options.group_by) << "\n\n";
  o << fmt::format("  {:<40} {:>5}  {:>15}  {:>8}  {}\n", "GROUP", "NODES", "GATE pass/fail/?",
                   "OUTLIERS", "DRAIN AT ONCE");
  for (const auto& g : r.groups) {
    o << "  " << fmt::format("{:<40}", g.name.size() > 40 ? g.name.substr(0, 39) + "…" : g.name)
      << fmt::format(" {:>5}  {:>15}  {:>8}  {}{}\n", g.nodes,
                     fmt::format("{}/{}/{}", g.gate_pass, g.gate_fail, g.gate_unknown), g.outliers,
                     g.drain_limit, g.circuit_breaker ? " (circuit breaker)" : "");
  }
  if (r.outliers.empty()) {
    o << "\nNo node differs from its group or from its last passing gate.\n";
  } else {
    o << "\n" << c(bold) << "Outliers (" << r.outliers.size() << ")" << c(reset) << "\n";
    for (const auto& x : r.outliers) {
      std::string kinds;
      for (const auto& k : x.kinds) kinds += (kinds.empty() ? "" : ", ") + k;
      o << "  " << c(bold) << c(x.categorical ? red : yellow) << x.host << c(reset) << "  "
        << x.group << "  " << kinds
        << (x.changed_since_last_pass ? "  changed since last pass" : "")
        << (x.drain ? "  → drain" : "  → hold (circuit breaker)") << "\n";
      for (const auto& reason : x.reasons) o << "      " << reason << "\n";
    }
  }
  if (!r.stale.empty()) {
    o << "\n"
      << c(bold) << "Stale (" << r.stale.size() << ")" << c(reset) << ": no report for more than "
      << r.options.stale_after_s / 3600 << " h before the newest\n";
    for (const auto& s : r.stale) o << "  " << s.host << "  last " << when(s.last_unix) << "\n";
  }
  if (!r.repairs.empty()) {
    int escalated = 0;
    for (const auto& x : r.repairs) escalated += x.escalate && x.current && !x.acknowledged;
    o << "\n"
      << c(bold) << "Faults and repairs (" << r.repairs.size() << ", " << escalated
      << " for hardware inspection / RMA)" << c(reset) << "\n";
    for (const auto& x : r.repairs) {
      o << "  " << c(bold) << c(x.escalate && x.current ? red : yellow) << x.host << c(reset)
        << "  " << x.fault << "  " << x.subject << "  " << x.episodes << " episode"
        << (x.episodes == 1 ? "" : "s");
      if (!x.starts.empty()) o << ", last from " << when(x.starts.back());
      if (x.acknowledged) o << "  [acknowledged on the node]";
      o << "\n      → " << repair_action(x, r.options.repairs_before_rma) << "\n";
    }
    o << "\n" << c(bold) << "Failure taxonomy" << c(reset) << "\n";
    o << fmt::format("  {:<22} {:>8}  {:>5}  {}\n", "CAUSE CLASS", "EPISODES", "NODES",
                     "MEDIAN TIME BETWEEN (one node)");
    for (const auto& t : r.taxonomy)
      o << fmt::format("  {:<22} {:>8}  {:>5}  {}\n", t.cause_class, t.episodes, t.nodes,
                       t.median_between_s ? span(*t.median_between_s) : std::string("-"));
  }
  bool any = !r.notes.empty();
  for (const auto& g : r.groups) any = any || !g.notes.empty();
  if (any) {
    o << "\n" << c(bold) << "Notes" << c(reset) << "\n";
    for (const auto& n : r.notes) o << "  - " << n << "\n";
    for (const auto& g : r.groups)
      for (const auto& n : g.notes) o << "  - " << g.name << ": " << n << "\n";
  }
  return o.str();
}

}  // namespace gpuvet
