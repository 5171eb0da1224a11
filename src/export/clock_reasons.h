// export/clock_reasons.h — the clock-event reasons the metrics write one series for: NVML's
// bit, gpuvet's name (the `reason` label, as in `gpuvet facts --json`) and dcgm-exporter's
// `clock_event` word for the same bit (docs/prometheus.md shows the mapping).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gpuvet::metrics {

struct ClockReason {
  std::uint64_t bit;
  const char* name;        // gpuvet: "sw_power_cap"
  const char* dcgm_event;  // dcgm-exporter: "power_cap"
};

std::span<const ClockReason> clock_reasons();

// The bit of a gpuvet reason name; 0 when the name is none of them ("other_0x…").
std::uint64_t clock_reason_bit(std::string_view name);

}  // namespace gpuvet::metrics
