// From one collection (Facts, and its Diagnosis when there is one) to a MetricsSnapshot.
#include <set>
#include <string>
#include <tuple>

#include "export/clock_reasons.h"
#include "gpuvet/prometheus.h"
#include "probe/nvml_api.h"

namespace gpuvet {

namespace metrics {

std::span<const ClockReason> clock_reasons() {
  // gpuvet's names come from the NVML probe's decoding; dcgm-exporter's from its
  // DCGM_EXP_CLOCK_EVENTS_COUNT `clock_event` label.
  static const ClockReason kReasons[] = {
      {nvmlClocksEventReasonGpuIdle, "idle", "gpu_idle"},
      {nvmlClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting",
       "clocks_setting"},
      {nvmlClocksEventReasonSwPowerCap, "sw_power_cap", "power_cap"},
      {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown", "hw_slowdown"},
      {nvmlClocksEventReasonSyncBoost, "sync_boost", "sync_boost"},
      {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown", "sw_thermal"},
      {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown", "hw_thermal"},
      {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown", "hw_power_brake"},
      {nvmlClocksEventReasonDisplayClockSetting, "display_clock_setting", "display_clocks"},
  };
  return kReasons;
}

std::uint64_t clock_reason_bit(std::string_view name) {
  for (const auto& r : clock_reasons())
    if (name == r.name) return r.bit;
  return 0;
}

}  // namespace metrics

namespace {

template <typename T>
std::optional<double> as_double(const std::optional<T>& v, double scale = 1.0) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * scale;
}

GpuMetrics gpu_metrics(const GpuFacts& g) {
  GpuMetrics m;
  m.index = g.index;
  m.uuid = g.uuid;
  m.pci_bus_id = g.pci_bus_id;
  m.model_name = g.name;
  m.unresponsive = g.unresponsive.has_value();
  m.sm_clock_hz = as_double(g.clocks.sm_mhz, 1e6);
  m.sm_clock_max_hz = as_double(g.clocks.sm_max_mhz, 1e6);
  m.memory_clock_hz = as_double(g.clocks.mem_mhz, 1e6);
  m.memory_clock_max_hz = as_double(g.clocks.mem_max_mhz, 1e6);
  m.temperature_c = as_double(g.thermal.gpu_c);
  m.memory_temperature_c = as_double(g.thermal.memory_c);
  m.thermal_margin_c = as_double(g.thermal.margin_c);
  m.slowdown_temperature_c = as_double(g.thermal.slowdown_c);
  m.power_w = g.power.draw_w;
  m.power_limit_w = g.power.limit_w;
  m.enforced_power_limit_w = g.power.enforced_limit_w;
  m.default_power_limit_w = g.power.default_limit_w;
  m.utilization_ratio = as_double(g.utilization.gpu_pct, 0.01);
  m.memory_utilization_ratio = as_double(g.utilization.memory_pct, 0.01);
  m.memory_total_bytes = g.memory.total_bytes;
  m.memory_used_bytes = g.memory.used_bytes;
  if (g.clock_events.active_mask) {
    m.clock_event_mask = g.clock_events.active_mask;
  } else if (!g.clock_events.active.empty()) {
    // An import that names the active reasons (nvidia-smi -q lists every reason with
    // Active / Not Active) but not NVML's mask.
    std::uint64_t mask = 0;
    for (const auto& name : g.clock_events.active) mask |= metrics::clock_reason_bit(name);
    m.clock_event_mask = mask;
  }
  for (const auto& [kind, ns] : g.clock_events.accumulated_ns)
    m.clock_event_seconds[kind] = static_cast<double>(ns) * 1e-9;
  m.pcie_generation = g.pcie.gen_current;
  m.pcie_generation_max = g.pcie.gen_max;
  m.pcie_width = g.pcie.width_current;
  m.pcie_width_max = g.pcie.width_max;
  m.pcie_replays = g.pcie.replay_counter;
  m.ecc_volatile_corrected = g.ecc.volatile_counts.corrected;
  m.ecc_volatile_uncorrected = g.ecc.volatile_counts.uncorrected;
  // No links listed says nothing (not read, or a PCIe card): no sample rather than 0 of 0.
  if (!g.nvlinks.empty()) {
    m.nvlink_links = static_cast<int>(g.nvlinks.size());
    int up = 0;
    bool any_known = false;
    for (const auto& l : g.nvlinks) {
      if (!l.active) continue;
      any_known = true;
      up += *l.active ? 1 : 0;
    }
    if (any_known) m.nvlink_links_up = up;
  }
  return m;
}

// "GPU3" → 3; anything else (a pair, a process, the node) → none.
std::optional<int> single_gpu_subject(const std::string& subject) {
  if (subject.size() < 4 || subject.compare(0, 3, "GPU") != 0) return std::nullopt;
  int v = 0;
  for (std::size_t i = 3; i < subject.size(); ++i) {
    const char c = subject[i];
    if (c < '0' || c > '9' || v > 100000) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

const std::vector<std::string>& verdict_states() {
  static const std::vector<std::string> kStates = {"ok", "info", "warning", "critical"};
  return kStates;
}

MetricsSnapshot snapshot_from_facts(const Facts& facts, const Diagnosis* diagnosis) {
  MetricsSnapshot s;
  s.hostname = facts.host.hostname;
  s.driver_version = facts.host.driver_version;
  for (const auto& g : facts.gpus) s.gpus.push_back(gpu_metrics(g));
  if (facts.host.collected_unix) s.collected_unix = static_cast<double>(*facts.host.collected_unix);
  // Saved outputs without any GPU in them say nothing about how many there are.
  const bool offline_without_gpus = !facts.imported.empty() && facts.gpus.empty();
  if (!facts.gpu_facts_unavailable && !offline_without_gpus)
    s.gpus_visible = static_cast<int>(facts.gpus.size());
  if (!diagnosis) return s;

  s.diagnosed = true;
  s.verdict = severity_name(diagnosis->worst);
  s.exit_code = diagnosis_exit_code(*diagnosis);
  // One series per (finding, subject): two instances of one id about one subject are one
  // series (a duplicate series is a scrape error).
  std::set<std::tuple<std::string, std::string>> seen;
  for (const auto& f : diagnosis->findings) {
    const CatalogEntry* entry = find_catalog_entry(f.id);
    std::vector<std::string> subjects = f.subjects;
    if (subjects.empty()) subjects.emplace_back();
    for (const auto& subject : subjects) {
      if (!seen.emplace(f.id, subject).second) continue;
      FindingMetric fm;
      fm.id = f.id;
      fm.severity = severity_name(f.severity);
      fm.category = entry ? entry->category : "";
      fm.subject = subject;
      if (const auto gpu = single_gpu_subject(subject)) {
        for (const auto& g : facts.gpus)
          if (g.index == *gpu) fm.uuid = g.uuid;
      }
      s.findings.push_back(std::move(fm));
    }
  }
  return s;
}

}  // namespace gpuvet
