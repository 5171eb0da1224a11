// Thresholds from a TOML file: a [thresholds] table whose keys are the Thresholds fields.
// Unknown keys and wrong types are errors: a typo in a gate config must not silently keep
// the default.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <variant>

#include <fmt/format.h>

#include "core/small_file.h"
#include "core/toml_document.h"
#include "gpuvet/diagnose.h"

namespace gpuvet {
namespace {

using Field = std::variant<double Thresholds::*, int Thresholds::*>;

struct Key {
  const char* name;
  Field field;
  const char* description;
};

const Key kKeys[] = {
    {"busy_util_pct", &Thresholds::busy_util_pct, "a GPU at or above this utilisation (%) is busy"},
    {"busy_power_fraction", &Thresholds::busy_power_fraction,
     "utilisation unknown: busy when drawing this share of the power limit"},
    {"idle_util_pct", &Thresholds::idle_util_pct,
     "at or under this utilisation (%) and no process: idle"},
    {"clocks_below_fraction", &Thresholds::clocks_below_fraction,
     "clocks-below-target: busy SM clock under this share of its max"},
    {"thermal_margin_c", &Thresholds::thermal_margin_c,
     "thermal-throttle: T.Limit margin (°C) at or under this"},
    {"hot_temp_c", &Thresholds::hot_temp_c,
     "thermal-throttle when the GPU reports no limit: temperature (°C) at or above"},
    {"slowdown_headroom_c", &Thresholds::slowdown_headroom_c,
     "thermal-throttle: within this many °C of the slowdown temperature"},
    {"power_at_limit_fraction", &Thresholds::power_at_limit_fraction,
     "power-throttle: a busy GPU drawing this share of its limit"},
    {"power_limit_below_default_fraction", &Thresholds::power_limit_below_default_fraction,
     "power-throttle: limit under this share of the default"},
    {"memory_full_fraction", &Thresholds::memory_full_fraction,
     "memory-near-full: every GPU at or above this share of memory"},
    {"memory_imbalance_full_fraction", &Thresholds::memory_imbalance_full_fraction,
     "memory-imbalance: one GPU at or above this share…"},
    {"memory_imbalance_empty_fraction", &Thresholds::memory_imbalance_empty_fraction,
     "…while a peer is at or under this share"},
    {"cpu_pegged_pct", &Thresholds::cpu_pegged_pct,
     "cpu-saturated: a core at or above this busy %"},
    {"iowait_pct", &Thresholds::iowait_pct, "io-bound: machine iowait % at or above"},
    {"disk_util_pct", &Thresholds::disk_util_pct, "io-bound: a disk busy % at or above"},
    {"psi_io_some_pct", &Thresholds::psi_io_some_pct,
     "io-bound: I/O pressure (PSI some, % of the time) at or above"},
    {"nic_util_pct", &Thresholds::nic_util_pct,
     "network-saturated: NIC use % of line rate at or above"},
    {"nic_unknown_speed_gbit_s", &Thresholds::nic_unknown_speed_gbit_s,
     "network-saturated when the line rate is unknown: Gbit/s at or above"},
    {"xid_window_h", &Thresholds::xid_window_h,
     "xid-error: events older than this many hours are history (info)"},
    {"h2d_fraction", &Thresholds::h2d_fraction,
     "h2d-bandwidth-low: measured under this share of the link's theoretical rate"},
    {"p2p_fraction", &Thresholds::p2p_fraction,
     "p2p-bandwidth-low: measured under this share of the path's theoretical rate (PHB, NODE: × "
     "0.8; SYS: × 0.5)"},
    {"scaling_efficiency", &Thresholds::scaling_efficiency,
     "scaling-inefficient: throughput(N) / (N × throughput(1)) under this"},
    {"comm_share_high", &Thresholds::comm_share_high,
     "scaling-inefficient is a comms bottleneck when communication takes this share of a step"},
    {"tail_p99_ratio", &Thresholds::tail_p99_ratio,
     "tail-latency-amplified: p99 on N GPUs / p99 on one at or above"},
    {"clock_drift_fraction", &Thresholds::clock_drift_fraction,
     "clocks-degrade-over-time: SM clock falls by this share"},
    {"gpu_lags_peers_fraction", &Thresholds::gpu_lags_peers_fraction,
     "gpu-lags-peers: a busy GPU's clock under this share of its busy peers' median"},
    {"series_min_span_s", &Thresholds::series_min_span_s,
     "clocks-degrade-over-time, thermal-margin-shrinking, throttle-appears-over-time: a GPU's "
     "busy samples must span this many seconds"},
    {"misleading_power_fraction", &Thresholds::misleading_power_fraction,
     "utilization-misleading: util ≥ 90 % while power under this share of the limit"},
    {"pcie_replay_warn_count", &Thresholds::pcie_replay_warn_count,
     "pcie-replay-errors: a replay counter at or above this is a warning (under it: info)"},
    {"pcie_aer_corrected_warn_count", &Thresholds::pcie_aer_corrected_warn_count,
     "pcie-aer-errors: corrected AER errors of one device in the kernel log at or above this are "
     "a warning (under it: info)"},
    {"driver_call_slow_ms", &Thresholds::driver_call_slow_ms,
     "driver-slow: an NVML call (total over GPUs) slower than this many ms"},
    {"job_input_idle_fraction", &Thresholds::job_input_idle_fraction,
     "job-input-starved: the GPU idle while the host is in the data loader, share of the step"},
    {"job_launch_idle_fraction", &Thresholds::job_launch_idle_fraction,
     "job-launch-bound: the GPU idle waiting for the host to launch its next kernel, share of the step"},
    {"job_sync_idle_fraction", &Thresholds::job_sync_idle_fraction,
     "job-host-sync: the GPU idle after host synchronisations, share of the step"},
    {"job_comm_exposed_fraction", &Thresholds::job_comm_exposed_fraction,
     "job-comm-exposed: communication with no compute beside it, share of the step"},
    {"job_straggler_cost_fraction", &Thresholds::job_straggler_cost_fraction,
     "job-straggler-rank: the others' extra time in collectives, share of the step"},
    {"job_step_drift_fraction", &Thresholds::job_step_drift_fraction,
     "job-step-time-drift: the last quarter's median step this much slower than the first's"},
};

constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;

const Key* find_key(std::string_view name) {
  for (const auto& k : kKeys)
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace

Result<Thresholds> parse_thresholds(std::string_view toml_text, const std::string& origin) {
  auto parsed = parse_toml(toml_text, origin);
  if (!parsed.is_ok()) return parsed.status();
  const toml::table& root = parsed.value();
  Thresholds t;
  // The configuration file holds [thresholds] (read here) and [gate] (gate/gate_config.cc).
  for (const auto& [key, node] : root) {
    if (key.str() != "thresholds" && key.str() != "gate")
      return Status::invalid_input(fmt::format(
          "{}: unknown table or key '{}' (expected [thresholds] or [gate])", origin, key.str()));
  }
  const toml::table* table = root["thresholds"].as_table();
  if (!table) {
    if (root.contains("thresholds"))
      return Status::invalid_input(fmt::format("{}: 'thresholds' must be a table", origin));
    return t;
  }
  for (const auto& [key, node] : *table) {
    const Key* k = find_key(key.str());
    if (!k)
      return Status::invalid_input(
          fmt::format("{}: unknown threshold '{}' (see docs/findings.md)", origin, key.str()));
    std::optional<double> value;
    if (const auto* f = node.as_floating_point()) value = f->get();
    if (const auto* i = node.as_integer()) value = static_cast<double>(i->get());
    if (!value)
      return Status::invalid_input(
          fmt::format("{}: threshold '{}' must be a number", origin, key.str()));
    // TOML allows nan and inf; every comparison with NaN is false, so it would switch the
    // rule off without a word.
    if (!std::isfinite(*value))
      return Status::invalid_input(
          fmt::format("{}: threshold '{}' must be a finite number", origin, key.str()));
    if (*value < 0)
      return Status::invalid_input(
          fmt::format("{}: threshold '{}' must not be negative", origin, key.str()));
    if (const auto* d = std::get_if<double Thresholds::*>(&k->field)) {
      t.*(*d) = *value;
    } else {
      const auto member = std::get<int Thresholds::*>(k->field);
      // Checked before the cast: converting a double out of int's range is undefined.
      if (*value > static_cast<double>(std::numeric_limits<int>::max()))
        return Status::invalid_input(fmt::format("{}: threshold '{}' must be at most {}", origin,
                                                 key.str(), std::numeric_limits<int>::max()));
      if (*value != std::floor(*value))
        return Status::invalid_input(
            fmt::format("{}: threshold '{}' must be a whole number", origin, key.str()));
      t.*member = static_cast<int>(*value);
    }
  }
  return t;
}

std::vector<ThresholdInfo> describe_thresholds(const Thresholds& t) {
  std::vector<ThresholdInfo> out;
  for (const auto& k : kKeys) {
    double v = 0;
    if (const auto* d = std::get_if<double Thresholds::*>(&k.field))
      v = t.*(*d);
    else
      v = t.*std::get<int Thresholds::*>(k.field);
    out.push_back({k.name, v, k.description});
  }
  return out;
}

Result<Thresholds> load_thresholds(const std::string& path) {
  auto text = read_small_file(path, kMaxConfigBytes, "thresholds file");
  if (!text.is_ok()) return text.status();
  return parse_thresholds(text.value(), path);
}

}  // namespace gpuvet
