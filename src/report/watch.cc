// report/watch.cc — `gpuvet watch` as a live line per interval and as JSON lines.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "core/util.h"
#include "gpuvet/report.h"
#include "hw/facts_query.h"
#include "report/json_document.h"
#include "report/terminal_text.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;
using hw::format_number;

// Short marks for the reasons an engineer acts on; idle is no limit and is left out.
std::string reason_marks(const std::optional<std::uint64_t>& mask) {
  if (!mask) return "";
  static const std::map<std::string, std::string> kShort = {
      {"sw_power_cap", "PWR"},
      {"hw_slowdown", "HWS"},
      {"sync_boost", "SYNC"},
      {"sw_thermal_slowdown", "THRM"},
      {"hw_thermal_slowdown", "HWTH"},
      {"hw_power_brake_slowdown", "BRAKE"},
      {"applications_clocks_setting", "APP"},
  };
  std::string out;
  for (const auto& name : clock_event_names(*mask)) {
    if (name == "idle" || name == "display_clock_setting") continue;
    auto it = kShort.find(name);
    out += (out.empty() ? "" : "+") + (it == kShort.end() ? name : it->second);
  }
  return out;
}

template <class T>
std::optional<T> grew(const std::optional<T>& now, const GpuSample* before,
                      std::optional<T> GpuSample::*field) {
  if (!now || !before || !(before->*field) || *now <= *(before->*field)) return std::nullopt;
  return *now - *(before->*field);
}

}  // namespace

std::string render_watch_header(const Facts& facts, const std::vector<int>& gpus,
                                double interval_s) {
  report::TerminalText o;
  std::string model = facts.gpus.empty() ? "no GPU" : facts.gpus.front().name.value_or("GPU");
  o << "gpuvet watch — " << facts.host.hostname.value_or("this node") << ", "
    << (gpus.empty() ? fmt::format("{} GPU(s)", facts.gpus.size())
                     : fmt::format("GPU {}", format_cpu_list(gpus)))
    << " (" << model << "), every " << format_number(interval_s) << " s; Ctrl-C ends it\n";
  o << "  each GPU: SM MHz, °C (T.Limit margin), W/limit, util %, clock-event reasons; "
       "+N: replays, ECC errors or NVLinks lost since the last line\n";
  return o.str();
}

std::string render_watch_interval(const WatchInterval& iv, const std::vector<GpuSample>& previous) {
  std::map<int, const GpuSample*> before;
  for (const auto& p : previous) before[p.gpu] = &p;
  report::TerminalText o;
  o << fmt::format("{:>7.1f}s", iv.t_s);
  for (const auto& s : iv.gpus) {
    const GpuSample* b = before.count(s.gpu) ? before[s.gpu] : nullptr;
    o << fmt::format("  GPU{} {}", s.gpu, s.sm_mhz ? std::to_string(*s.sm_mhz) : "-");
    if (s.gpu_c) {
      o << fmt::format(" {}C", *s.gpu_c);
      if (s.margin_c) o << fmt::format("({})", *s.margin_c);
    }
    if (s.power_w)
      o << fmt::format(" {:.0f}{}W", *s.power_w,
                       s.power_limit_w ? fmt::format("/{:.0f}", *s.power_limit_w) : "");
    if (s.util_pct) o << fmt::format(" {}%", *s.util_pct);
    const std::string marks = reason_marks(s.clock_event_mask);
    if (!marks.empty()) o << " " << marks;
    if (auto d = grew(s.pcie_replays, b, &GpuSample::pcie_replays))
      o << fmt::format(" +{}replay", *d);
    if (auto d = grew(s.ecc_uncorrected, b, &GpuSample::ecc_uncorrected))
      o << fmt::format(" +{}ECC-UE", *d);
    if (auto d = grew(s.ecc_corrected, b, &GpuSample::ecc_corrected))
      o << fmt::format(" +{}ECC-CE", *d);
    if (b && s.nvlinks_up && b->nvlinks_up && *s.nvlinks_up < *b->nvlinks_up)
      o << fmt::format(" -{}NVLink", *b->nvlinks_up - *s.nvlinks_up);
  }
  if (iv.host) {
    std::string psi;
    for (auto [name, v] :
         {std::pair{"cpu", iv.host->psi_cpu_some_pct}, std::pair{"io", iv.host->psi_io_some_pct},
          std::pair{"mem", iv.host->psi_memory_some_pct}})
      if (v) psi += fmt::format("{}{} {:.0f}%", psi.empty() ? "" : " ", name, *v);
    if (!psi.empty()) o << "  | PSI " << psi;
  }
  o << "\n";
  return o.str();
}

std::string watch_interval_to_json(const WatchInterval& iv) {
  json doc = {{"schema", "gpuvet.watch/1"}, {"type", "interval"}, {"t_s", iv.t_s}};
  json gpus = json::array();
  for (const auto& s : iv.gpus) {
    json g = report::samples_json({s}).at(0);
    json reasons = json::array();
    if (s.clock_event_mask)
      for (const auto& n : clock_event_names(*s.clock_event_mask)) reasons.push_back(n);
    g["clock_events"] = s.clock_event_mask ? reasons : json(nullptr);
    gpus.push_back(std::move(g));
  }
  doc["gpus"] = std::move(gpus);
  doc["host"] = iv.host ? report::host_samples_json({*iv.host}).at(0) : json(nullptr);
  return report::dump_document(doc, -1);
}

std::string render_watch_verdict(const Facts& facts, const Diagnosis& d, double watched_s) {
  report::TerminalText o;
  std::size_t intervals = 0;
  {
    std::map<double, int> ts;
    for (const auto& s : facts.samples) ts[s.t_s] = 1;
    intervals = ts.size();
  }
  o << fmt::format("\nVerdict over {} s ({} interval(s))\n", format_number(watched_s), intervals);
  bool any = false;
  for (const auto& f : d.findings) {
    if (!watch_judges(f)) continue;
    any = true;
    o << "  " << severity_name(f.severity) << "  " << f.id;
    if (!f.subjects.empty()) o << " " << fmt::format("{}", fmt::join(f.subjects, ","));
    o << ": " << f.evidence << "\n";
    if (const CatalogEntry* e = find_catalog_entry(f.id)) o << "      do: " << e->decision << "\n";
  }
  if (!any)
    o << "  no clock, thermal, power or counter change over time"
      << (intervals < 2 ? " (too few intervals to judge)" : "") << "\n";
  int others = 0;
  for (const auto& f : d.findings)
    if (!watch_judges(f) && f.severity >= Severity::kWarning) ++others;
  if (others)
    o << fmt::format("  ({} other warning(s) about this node: gpuvet diagnose says what)\n",
                     others);
  for (const auto& n : facts.notes)
    if (n.find("sampled") != std::string::npos || n.find("NVML samples") != std::string::npos)
      o << "  note: " << n << "\n";
  return o.str();
}

bool watch_judges(const Finding& f) {
  return finding_measured_by(f.id, kByWatch) || f.severity == Severity::kCritical;
}

int watch_exit_code(const Diagnosis& d) {
  int code = 0;
  for (const auto& f : d.findings)
    if (watch_judges(f) && !f.acknowledged) code = std::max(code, severity_exit_code(f.severity));
  return code;
}

std::string watch_verdict_to_json(const Facts& facts, const Diagnosis& d, double watched_s) {
  json findings = json::array();
  for (const auto& f : d.findings)
    if (watch_judges(f)) findings.push_back(report::finding_json(f));
  const int code = watch_exit_code(d);
  json doc = {{"schema", "gpuvet.watch/1"},
              {"type", "verdict"},
              {"watched_s", watched_s},
              {"samples", facts.samples.size()},
              {"findings", std::move(findings)},
              {"exit_code", code},
              {"notes", facts.notes}};
  return report::dump_document(doc, -1);
}

}  // namespace gpuvet
