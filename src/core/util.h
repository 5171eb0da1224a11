// core/util.h — small text helpers shared by the probes and importers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvet {

std::string_view trim(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);
std::vector<std::string_view> split_lines(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
std::string to_lower(std::string_view s);

// Strict integer/float parses of a whole (trimmed) token; empty on any junk.
std::optional<std::int64_t> parse_int(std::string_view s);
std::optional<std::uint64_t> parse_uint(std::string_view s);
std::optional<double> parse_double(std::string_view s);

// "0-3,8,10-11" → {0,1,2,3,8,10,11}; empty optional on malformed input.
// Ranges are capped (a corrupt "0-4000000000" does not allocate gigabytes).
std::optional<std::vector<int>> parse_cpu_list(std::string_view s);
// {0,1,2,3,8} → "0-3,8"
std::string format_cpu_list(const std::vector<int>& cpus);

// `s` with every byte sequence that is not UTF-8 (a stray continuation byte, an overlong form, a
// surrogate, a cut sequence) replaced by U+FFFD; valid text unchanged.
std::string valid_utf8(std::string_view s);

// `unix_s` as UTC through strftime's `format` ("%Y-%m-%d %H:%M UTC"); the number itself when it
// is no representable time.
std::string format_utc(std::int64_t unix_s, const char* format);
// "Jan" … "Dec" → 1 … 12, else 0; "Mon" … "Sun" (the English abbreviations logs and ctime use).
int month_of(std::string_view abbreviation);
bool is_weekday(std::string_view abbreviation);

// C's ctime() form, as nvidia-smi's Timestamp and dmesg -T print it: "Wed Jul 31 11:22:39 2024"
// (the day may be space-padded), the whole trimmed string → seconds since the epoch. The zone is
// never printed: read as UTC, the one choice that does not depend on the reading machine's.
std::optional<std::int64_t> parse_ctime(std::string_view s);
// Linux cpumask "ff,00000001" (as in /proc/PID/status Cpus_allowed) → ids.
std::optional<std::vector<int>> parse_cpu_mask(std::string_view s);

// "00000000:3B:00.0", "0000:3b:00.0", "3b:00.0", "PCI:0000:3b:00" → "0000:3b:00.0".
// Lowercase, 4-digit domain, function defaulting to 0. Empty on junk.
std::optional<std::string> normalize_pci_bus_id(std::string_view s);

}  // namespace gpuvet
