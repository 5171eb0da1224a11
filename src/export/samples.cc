// A MetricsSnapshot brought up to date with one interval of the NVML sampler (gpuvet watch).
#include <algorithm>
#include <map>

#include "gpuvet/prometheus.h"

namespace gpuvet {

namespace {

template <typename T>
std::optional<double> scaled(const std::optional<T>& v, double scale) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * scale;
}

void apply(GpuMetrics& m, const GpuSample* s) {
  // Readings that change from one interval to the next: from the sample or not at all.
  m.sm_clock_hz = s ? scaled(s->sm_mhz, 1e6) : std::nullopt;
  m.memory_clock_hz = s ? scaled(s->mem_mhz, 1e6) : std::nullopt;
  m.temperature_c = s ? scaled(s->gpu_c, 1.0) : std::nullopt;
  m.thermal_margin_c = s ? scaled(s->margin_c, 1.0) : std::nullopt;
  m.power_w = s ? s->power_w : std::nullopt;
  m.utilization_ratio = s ? scaled(s->util_pct, 0.01) : std::nullopt;
  m.memory_utilization_ratio = s ? scaled(s->mem_util_pct, 0.01) : std::nullopt;
  m.memory_used_bytes = s ? s->memory_used_bytes : std::nullopt;
  m.clock_event_mask = s ? s->clock_event_mask : std::nullopt;
  m.clock_event_seconds.clear();
  if (s)
    for (const auto& [kind, ns] : s->clock_event_ns)
      m.clock_event_seconds[kind] = static_cast<double>(ns) * 1e-9;
  m.pcie_generation = s ? s->pcie_gen : std::nullopt;
  m.pcie_width = s ? s->pcie_width : std::nullopt;
  m.pcie_replays = s ? s->pcie_replays : std::nullopt;
  m.ecc_volatile_corrected = s ? s->ecc_corrected : std::nullopt;
  m.ecc_volatile_uncorrected = s ? s->ecc_uncorrected : std::nullopt;
  m.nvlink_links_up = s ? s->nvlinks_up : std::nullopt;
  // Quasi-static: the sample's when it has one, else the collection's.
  if (s && s->power_limit_w) m.enforced_power_limit_w = s->power_limit_w;
  if (s && s->nvlinks_total) m.nvlink_links = s->nvlinks_total;
}

}  // namespace

void apply_samples(MetricsSnapshot& snapshot, const std::vector<int>& watched,
                   const std::vector<GpuSample>& latest) {
  std::map<int, const GpuSample*> by_gpu;
  for (const auto& s : latest) by_gpu[s.gpu] = &s;  // the last one of a GPU wins
  if (!watched.empty())
    std::erase_if(snapshot.gpus, [&](const GpuMetrics& g) {
      return std::find(watched.begin(), watched.end(), g.index) == watched.end();
    });
  for (auto& g : snapshot.gpus) {
    const auto it = by_gpu.find(g.index);
    apply(g, it == by_gpu.end() ? nullptr : it->second);
  }
}

}  // namespace gpuvet
