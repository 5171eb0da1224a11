// import/nvsmi_text.h — importers for nvidia-smi's plain-text outputs: `nvidia-smi -q`
// (also `-a`, `-q -i N` and any `-q -d SECTION` subset) and `nvidia-smi -L`; plus the small
// value helpers the other nvidia-smi importers (XML, --query-gpu CSV) share with them.
//
// `-q` text is read as an indentation tree ("Key : value" lines, sections by indent), so a
// file holding only the "Clocks" or "ECC Errors" section still gives what it has. Old and new
// driver wordings are both read ("Clocks Throttle Reasons" / "Clocks Event Reasons",
// absolute temperatures / "T.Limit" margins, "Power Readings" / "GPU Power Readings").
// Values nvidia-smi prints when it has none ("N/A", "[Not Supported]", "Unknown Error",
// "Requested functionality has been deprecated", …) leave the field empty.
//
// Stateless free functions following capture/importer.h: pure, thread-safe, linear time,
// never throwing, safe on garbage, truncated, binary or huge input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// Format "nvidia-smi-q": `nvidia-smi -q` / `-a` / `-q -d …` text.
int sniff_nvsmi_q(std::string_view text);
Status import_nvsmi_q(std::string_view text, Facts& out);

// Format "nvidia-smi-L": `nvidia-smi -L` ("GPU 0: NAME (UUID: GPU-…)", MIG lines).
int sniff_nvsmi_list(std::string_view text);
Status import_nvsmi_list(std::string_view text, Facts& out);

// Value helpers shared by the nvidia-smi importers (text, XML, CSV).
namespace nvsmi {

// True for what nvidia-smi prints instead of a value: "", "N/A", "[N/A]", "[Not Supported]",
// "Unknown Error", "Requested functionality has been deprecated", "Not available in WDDM
// driver model", "Insufficient Permissions", …
bool is_missing(std::string_view value);
// The value without nvidia-smi's "no value" spellings, trimmed; empty when missing.
std::optional<std::string> text(std::string_view value);
// The leading number of "143771 MiB", "16x", "81.64 W", "0 %", "39 C", "-2 C"; empty when
// missing or not a number.
std::optional<double> number(std::string_view value);
std::optional<std::int64_t> integer(std::string_view value);
std::optional<std::uint64_t> count(std::string_view value);  // non-negative integer
// "143771 MiB" (or a bare number of MiB; "GiB"/"KiB" honoured) → bytes.
std::optional<std::uint64_t> mib_bytes(std::string_view value);
// "1234 us" (bare numbers are µs; "ns", "ms", "s" honoured) → nanoseconds.
std::optional<std::uint64_t> duration_ns(std::string_view value);
// "Active" / "Not Active"; "Enabled" / "Disabled"; "Yes" / "No" (case-insensitive).
std::optional<bool> active(std::string_view value);
std::optional<bool> enabled(std::string_view value);
std::optional<bool> yes_no(std::string_view value);
// "P0" → 0.
std::optional<int> pstate(std::string_view value);
// "0x0000000000000004" → 4.
std::optional<std::uint64_t> hex_mask(std::string_view value);

// The NVML nvmlClocksEventReason* bit of one reason, by our name ("idle", "sw_power_cap",
// …, "display_clock_setting"); 0 for an unknown name.
std::uint64_t clock_event_bit(std::string_view name);
// Our name for an nvidia-smi reason spelling: XML/CSV suffixes ("gpu_idle",
// "display_clocks_setting", …) and -q labels ("Idle", "HW Power Brake Slowdown", …).
// Empty when not a known reason.
std::optional<std::string> clock_event_name(std::string_view spelling);
// Our accumulated_ns key for a counter spelling: "sw_power_cap"/"SW Power Capping" →
// "power", "sw_therm_slowdown"/"sw_thermal_slowdown"/"SW Thermal Slowdown" → "thermal",
// "sync_boost" → "sync_boost", "hw_therm_slowdown"/"HW Thermal Slowdown" → "hw_thermal",
// "hw_power_brake"/"hw_power_brake_slowdown"/"HW Power Braking" → "hw_power_brake".
std::optional<std::string> clock_counter_key(std::string_view spelling);
// Sets ce.active from the per-reason flags in `flags` (bit → active), in bit order, and
// ce.active_mask when all nine reasons were read.
struct ClockEventFlags {
  std::uint64_t seen = 0;    // bits whose Active/Not Active state was read
  std::uint64_t active = 0;  // bits read as Active
};
void apply_clock_event_flags(const ClockEventFlags& flags, ClockEventReasons& ce);
// Decodes an NVML clock-event mask into our names (unknown bits → "other_0x…").
void apply_clock_event_mask(std::uint64_t mask, ClockEventReasons& ce);
// "Completed" / "In Progress" / "Not Started" / "Not Supported" → "completed", …
std::optional<std::string> fabric_state(std::string_view value);
// "Success" → "SUCCESS"; other texts upper-cased with '_' for spaces.
std::optional<std::string> fabric_status(std::string_view value);
// nvidia-smi's own clock, "Wed Jul 31 11:22:39 2024" (-q's Timestamp, -x's <timestamp>, the line
// above the default table): when the capture was taken, into host.collected_unix unless the
// input already said (parse_ctime: the machine's local time, read as UTC). Xid ages and the
// report's "captured" are measured from it.
void read_timestamp(std::string_view value, Facts& out);

}  // namespace nvsmi
}  // namespace gpuvet::import
