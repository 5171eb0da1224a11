#include "import/kernel_log.h"

#include <string.h>  // memmem, memchr

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "core/util.h"
#include "import/host_tools.h"

namespace gpuvet::import {
namespace {

constexpr std::size_t npos = std::string_view::npos;
// Longest text kept per event message or fallen-off entry: a 1 MB garbage line must not
// become a 1 MB finding.
constexpr std::size_t kMaxTextBytes = 2048;
// Longest record kept while joining continuation lines.
constexpr std::size_t kMaxRecordBytes = 8192;

// std::string_view::find is a naive loop in libstdc++; glibc's memmem is linear (two-way)
// and vectorised, which keeps a 50 MB log well under a second.
std::size_t find(std::string_view hay, std::string_view needle, std::size_t from = 0) {
  if (from > hay.size() || needle.empty()) return npos;
  const void* p = memmem(hay.data() + from, hay.size() - from, needle.data(), needle.size());
  return p ? static_cast<std::size_t>(static_cast<const char*>(p) - hay.data()) : npos;
}

bool contains(std::string_view hay, std::string_view needle) { return find(hay, needle) != npos; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool at(std::string_view s, std::size_t i, char c) { return i < s.size() && s[i] == c; }

bool starts_at(std::string_view s, std::size_t i, std::string_view word) {
  return i <= s.size() && s.substr(i, word.size()) == word;
}

void skip_spaces(std::string_view s, std::size_t& i) {
  while (i < s.size() && is_space(s[i])) ++i;
}

// 1..max_digits decimal digits at s[i]; advances i. A value past int64 saturates at its
// maximum (a /dev/kmsg sequence number, an unsigned 64-bit count, can be that long).
std::optional<std::int64_t> read_number(std::string_view s, std::size_t& i, int max_digits) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::size_t j = i;
  std::int64_t v = 0;
  while (j < s.size() && is_digit(s[j]) && static_cast<int>(j - i) < max_digits) {
    const int d = s[j] - '0';
    v = v > (kMax - d) / 10 ? kMax : v * 10 + d;
    ++j;
  }
  if (j == i || (j < s.size() && is_digit(s[j]))) return std::nullopt;  // none, or too many
  i = j;
  return v;
}

// Exactly n digits.
std::optional<int> read_fixed(std::string_view s, std::size_t& i, int n) {
  if (i + n > s.size()) return std::nullopt;
  int v = 0;
  for (int k = 0; k < n; ++k) {
    char c = s[i + k];
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  i += n;
  return v;
}

// Fraction digits after '.' or ',' → microseconds (truncated). Advances past them.
std::int64_t read_fraction_us(std::string_view s, std::size_t& i) {
  std::int64_t us = 0;
  int n = 0;
  while (i < s.size() && is_digit(s[i])) {
    if (n < 6) {
      us = us * 10 + (s[i] - '0');
      ++n;
    }
    ++i;
  }
  for (; n < 6; ++n) us *= 10;
  return us;
}

int month_from_abbrev(std::string_view s, std::size_t i) {
  return i + 3 > s.size() ? 0 : month_of(s.substr(i, 3));
}

bool is_weekday_abbrev(std::string_view s, std::size_t i) {
  return i + 3 <= s.size() && is_weekday(s.substr(i, 3));
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, int m, int d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::optional<std::int64_t> unix_from_civil(int y, int mo, int d, int h, int mi, int s) {
  if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
    return std::nullopt;
  return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

// "HH:MM:SS" at s[i].
bool read_clock(std::string_view s, std::size_t& i, int& h, int& mi, int& sec) {
  std::size_t j = i;
  auto hh = read_fixed(s, j, 2);
  if (!hh || !at(s, j, ':')) return false;
  ++j;
  auto mm = read_fixed(s, j, 2);
  if (!mm || !at(s, j, ':')) return false;
  ++j;
  auto ss = read_fixed(s, j, 2);
  if (!ss) return false;
  h = *hh;
  mi = *mm;
  sec = *ss;
  i = j;
  return true;
}

// ------------------------------------------------------------------ line prefixes

struct Stamp {
  std::optional<std::int64_t> uptime_us;  // since boot
  std::optional<std::int64_t> unix_time;
  bool kmsg = false;
  bool bracket = false;     // "[ 123.456]" or "[Mon Dec  1 …]"
  bool kernel_tag = false;  // syslog/journal line tagged "kernel:"
  bool any = false;         // some stamp or header was recognised
};

struct ParsedLine {
  std::string_view prefix;  // the stamp part, as printed
  std::string_view text;    // the record text after it
  Stamp stamp;
  int syslog_month = 0;  // month of a yearless syslog stamp, for year roll-over
};

// "<6>" priority, as `dmesg -r` and busybox print it.
bool skip_priority(std::string_view s, std::size_t& i) {
  if (!at(s, i, '<')) return false;
  std::size_t j = i + 1;
  if (!read_number(s, j, 3) || !at(s, j, '>')) return false;
  i = j + 1;
  return true;
}

// /dev/kmsg: "prio,seq,usec,flags[,more];text".
bool parse_kmsg(std::string_view s, std::size_t& i, Stamp& st) {
  std::size_t j = i;
  if (!read_number(s, j, 4) || !at(s, j, ',')) return false;
  ++j;
  if (!read_number(s, j, 20) || !at(s, j, ',')) return false;
  ++j;
  auto usec = read_number(s, j, 18);
  if (!usec || !at(s, j, ',')) return false;
  ++j;
  // Flags ("-", "c") and, with CONFIG_PRINTK_CALLER, "caller=T123": short, no spaces.
  const std::size_t limit = j + 64;
  while (j < s.size() && j < limit && s[j] != ';' && !is_space(s[j])) ++j;
  if (!at(s, j, ';')) return false;
  st.uptime_us = *usec;
  st.kmsg = true;
  st.any = true;
  i = j + 1;
  return true;
}

// `dmesg -x` / `--decode`: "kern  :warn  : ".
bool skip_decode_prefix(std::string_view s, std::size_t& i) {
  std::size_t j = i;
  std::size_t start = j;
  while (j < s.size() && j - start < 10 && (is_alpha(s[j]) || is_digit(s[j]))) ++j;
  if (j == start) return false;
  skip_spaces(s, j);
  if (!at(s, j, ':')) return false;
  ++j;
  static constexpr std::string_view kLevels[] = {"emerg", "alert",  "crit", "err",
                                                 "warn",  "notice", "info", "debug"};
  std::size_t level_start = j;
  while (j < s.size() && is_alpha(s[j]) && j - level_start < 8) ++j;
  std::string_view level = s.substr(level_start, j - level_start);
  bool known = false;
  for (auto l : kLevels) known = known || level == l;
  if (!known) return false;
  skip_spaces(s, j);
  if (!at(s, j, ':')) return false;
  ++j;
  skip_spaces(s, j);
  i = j;
  return true;
}

// "[ 1234.567890]" or "[Mon Dec  1 10:00:00 2025]".
bool parse_bracket(std::string_view s, std::size_t& i, Stamp& st) {
  if (!at(s, i, '[')) return false;
  std::size_t j = i + 1;
  skip_spaces(s, j);
  // dmesg -H / --reltime: "[  +0.000844]" (time since the line before) and "[Feb22 10:31]"
  // (the minute, no year) open each record: a kernel-log record with no time of its own.
  if (at(s, j, '+')) {
    ++j;
    auto secs = read_number(s, j, 12);
    if (!secs || !at(s, j, '.')) return false;
    ++j;
    read_fraction_us(s, j);
    if (!at(s, j, ']')) return false;
    st.bracket = true;
    st.any = true;
    i = j + 1;
    skip_spaces(s, i);
    return true;
  }
  if (const int mo = month_from_abbrev(s, j); mo != 0 && !is_weekday_abbrev(s, j)) {
    std::size_t k = j + 3;
    skip_spaces(s, k);
    auto day = read_number(s, k, 2);
    if (day && at(s, k, ' ')) {
      ++k;
      auto hh = read_number(s, k, 2);
      if (hh && at(s, k, ':')) {
        ++k;
        auto mm = read_number(s, k, 2);
        if (mm && at(s, k, ']')) {
          st.bracket = true;
          st.any = true;
          i = k + 1;
          skip_spaces(s, i);
          return true;
        }
      }
    }
  }
  if (j < s.size() && is_digit(s[j])) {
    auto secs = read_number(s, j, 12);
    if (!secs || !at(s, j, '.')) return false;
    ++j;
    if (j >= s.size() || !is_digit(s[j])) return false;
    std::int64_t us = read_fraction_us(s, j);
    skip_spaces(s, j);
    if (at(s, j, '<')) {  // dmesg -d: "[ 1234.567890 <    0.000123>]"
      const std::size_t limit = j + 32;
      while (j < s.size() && j < limit && s[j] != '>') ++j;
      if (!at(s, j, '>')) return false;
      ++j;
    }
    if (!at(s, j, ']')) return false;
    st.uptime_us = *secs * 1000000 + us;
  } else {
    // dmesg -T / --ctime: local time of the machine that printed it, zone not printed. We
    // read it as UTC: wrong by the host's offset when it was not UTC, but the only choice
    // that does not depend on the zone of the machine reading the file.
    const std::size_t close = s.substr(j, 32).find(']');  // "Wed Jul 31 11:22:39 2024"
    if (close == std::string_view::npos) return false;
    st.unix_time = parse_ctime(s.substr(j, close));
    if (!st.unix_time) return false;
    j += close;
  }
  st.bracket = true;
  st.any = true;
  i = j + 1;
  skip_spaces(s, i);
  return true;
}

// "2025-12-01T10:00:00[.frac|,frac][Z|+0000|+00:00]" (journalctl -o short-iso[-precise],
// rsyslog RFC 3339, dmesg --time-format=iso). With space_sep, "2025-12-01 10:00:00" (the
// date of journalctl -o short-full). A zone-less stamp is read as UTC.
bool parse_iso(std::string_view s, std::size_t& i, Stamp& st, bool space_sep) {
  std::size_t j = i;
  auto y = read_fixed(s, j, 4);
  if (!y || !at(s, j, '-')) return false;
  ++j;
  auto mo = read_fixed(s, j, 2);
  if (!mo || !at(s, j, '-')) return false;
  ++j;
  auto d = read_fixed(s, j, 2);
  if (!d || !(at(s, j, 'T') || (space_sep && at(s, j, ' ')))) return false;
  ++j;
  int h, mi, sec;
  if (!read_clock(s, j, h, mi, sec)) return false;
  if (at(s, j, '.') || at(s, j, ',')) {
    ++j;
    (void)read_fraction_us(s, j);
  }
  std::int64_t offset_s = 0;
  if (at(s, j, 'Z')) {
    ++j;
  } else if (at(s, j, '+') || at(s, j, '-')) {
    const int sign = s[j] == '-' ? -1 : 1;
    ++j;
    auto oh = read_fixed(s, j, 2);
    if (!oh) return false;
    int om = 0;
    if (at(s, j, ':')) ++j;
    if (j < s.size() && is_digit(s[j])) {
      auto m = read_fixed(s, j, 2);
      if (!m) return false;
      om = *m;
    }
    offset_s = sign * (*oh * 3600 + om * 60);
  }
  if (j < s.size() && !is_space(s[j])) return false;
  auto t = unix_from_civil(*y, *mo, *d, h, mi, sec);
  if (!t) return false;
  st.unix_time = *t - offset_s;
  st.any = true;
  i = j;
  skip_spaces(s, i);
  return true;
}

// journalctl -o short-full: "Mon 2025-12-01 10:00:00 UTC ".
bool parse_short_full(std::string_view s, std::size_t& i, Stamp& st) {
  if (!is_weekday_abbrev(s, i) || !at(s, i + 3, ' ')) return false;
  std::size_t j = i + 4;
  Stamp tmp;
  if (!parse_iso(s, j, tmp, /*space_sep=*/true)) return false;
  // The zone abbreviation: "UTC" is exact; any other is read as UTC too (abbreviations are
  // ambiguous, e.g. "IST"), like dmesg -T above.
  std::size_t zone_start = j;
  while (j < s.size() && (is_alpha(s[j]) || s[j] == '+' || s[j] == '-' || is_digit(s[j])) &&
         j - zone_start < 8)
    ++j;
  if (j == zone_start || !(j == s.size() || is_space(s[j]))) return false;
  st = tmp;
  i = j;
  skip_spaces(s, i);
  return true;
}

// Syslog / journalctl short: "Dec 01 10:00:00[.123456] ". No year.
bool parse_syslog(std::string_view s, std::size_t& i, Stamp& st, int& month_out,
                  std::optional<int> year) {
  int mo = month_from_abbrev(s, i);
  if (mo == 0 || !at(s, i + 3, ' ')) return false;
  std::size_t j = i + 3;
  skip_spaces(s, j);
  auto day = read_number(s, j, 2);
  if (!day || !at(s, j, ' ')) return false;
  ++j;
  int h, mi, sec;
  if (!read_clock(s, j, h, mi, sec)) return false;
  if (at(s, j, '.')) {
    ++j;
    (void)read_fraction_us(s, j);
  }
  if (!at(s, j, ' ')) return false;
  if (year) st.unix_time = unix_from_civil(*year, mo, static_cast<int>(*day), h, mi, sec);
  st.any = true;
  month_out = mo;
  i = j;
  skip_spaces(s, i);
  return true;
}

// After a syslog/journal stamp: "host kernel: " (or "host kernel[0]: "). Only skipped when
// the first word is not itself a tag, so "…+00:00 NVRM: Xid" (dmesg iso) keeps its text.
void skip_host_and_tag(std::string_view s, std::size_t& i, Stamp& st) {
  std::size_t j = i;
  std::size_t host_start = j;
  while (j < s.size() && !is_space(s[j]) && j - host_start < 256) ++j;
  if (j == host_start || s[j - 1] == ':' || !at(s, j, ' ')) return;
  ++j;
  std::size_t tag_start = j;
  while (j < s.size() && !is_space(s[j]) && j - tag_start < 64) ++j;
  if (j == tag_start || s[j - 1] != ':') return;
  std::string_view tag = s.substr(tag_start, j - tag_start);
  st.kernel_tag = starts_with(tag, "kernel");
  i = j;
  skip_spaces(s, i);
}

ParsedLine parse_line(std::string_view line, std::optional<int> syslog_year) {
  ParsedLine out;
  std::size_t i = 0;
  Stamp& st = out.stamp;
  skip_spaces(line, i);
  bool prio = skip_priority(line, i);
  if (parse_kmsg(line, i, st)) {
    out.prefix = line.substr(0, i);
    out.text = line.substr(i);
    return out;
  }
  if (skip_decode_prefix(line, i)) st.any = true;
  if (!parse_bracket(line, i, st)) {
    bool stamped = parse_iso(line, i, st, /*space_sep=*/false) || parse_short_full(line, i, st) ||
                   parse_syslog(line, i, st, out.syslog_month, syslog_year);
    if (stamped) {
      skip_host_and_tag(line, i, st);
      Stamp inner;
      if (parse_bracket(line, i, inner)) {
        st.uptime_us = inner.uptime_us;
        if (!st.unix_time) st.unix_time = inner.unix_time;
        st.bracket = true;
      }
    }
  }
  if (prio) st.any = true;
  if (!st.any) i = 0;  // leading blanks of an unstamped line matter (continuations)
  out.prefix = line.substr(0, i);
  out.text = line.substr(i);
  return out;
}

// ------------------------------------------------------------------ text hygiene

// Valid UTF-8 without control characters, at most max_bytes: messages end up in JSON and
// terminals, and a garbage log must not break either.
std::string clean_text(std::string_view s, std::size_t max_bytes = kMaxTextBytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes));
  std::size_t i = 0;
  while (i < s.size() && out.size() < max_bytes) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(c == '\t' ? ' ' : (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c));
      ++i;
      continue;
    }
    int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size() && c != 0xc0 && c != 0xc1 && c <= 0xf4;
    for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (!ok || out.size() + len > max_bytes) {
      out.push_back('?');
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && (is_space(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// ------------------------------------------------------------------ Xid

// The rest of an Xid line after "Xid (": "PCI:0000:3b:00): 79, pid=1234, name=x, text".
bool parse_xid_at(std::string_view s, std::size_t i, XidEvent& ev) {
  std::size_t close = i;
  while (close < s.size() && close - i < 96 && s[close] != ')') ++close;
  if (!at(s, close, ')')) return false;
  std::string_view inside = s.substr(i, close - i);
  // MIG-era drivers may add instance ids after the bus id: keep the first word.
  std::size_t space = inside.find_first_of(" \t");
  std::string_view bus = inside.substr(0, space);
  std::size_t j = close + 1;
  if (!at(s, j, ':')) return false;
  ++j;
  skip_spaces(s, j);
  auto code = read_number(s, j, 6);
  if (!code || *code <= 0) return false;
  if (j < s.size() && s[j] != ',' && !is_space(s[j]) && s[j] != '.') return false;

  ev.code = static_cast<int>(*code);
  if (!bus.empty()) ev.pci_bus_id = normalize_pci_bus_id(bus);

  std::string_view rest = s.substr(j);
  if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
  rest = trim(rest);
  if (starts_with(rest, "pid=")) {
    std::size_t comma = rest.find(',');
    std::string_view value = trim(rest.substr(4, comma == npos ? npos : comma - 4));
    if (auto pid = parse_int(value); pid && *pid >= 0 && *pid <= std::numeric_limits<int>::max())
      ev.pid = static_cast<int>(*pid);
    rest = comma == npos ? std::string_view() : trim(rest.substr(comma + 1));
  }
  if (starts_with(rest, "name=")) {
    // Task names may hold spaces ("Isolated Web Co"); the driver ends the field with ", ".
    std::size_t end = rest.find(", ");
    std::string_view value = rtrim(rest.substr(5, end == npos ? npos : end - 5));
    if (!value.empty() && value != "<unknown>" && value != "'<unknown>'")
      ev.process = clean_text(value, 64);
    rest = end == npos ? std::string_view() : trim(rest.substr(end + 2));
  }
  ev.message = clean_text(rtrim(rest));
  return true;
}

// ------------------------------------------------------------------ records

struct State {
  const KernelLogParseOptions& options;
  KernelLogParseStats* stats;
  KernelLog& out;
  std::optional<int> syslog_year;
  int last_syslog_month = 0;

  // The record being assembled (a stamped line and its indented continuation lines).
  bool active = false;
  std::string_view prefix;
  std::string_view text;
  Stamp stamp;
  std::string joined;  // text + continuations, only when there are continuations
  bool has_continuation = false;
  bool xid_found = false;
  bool text_has_nvrm = false;  // "NVRM" in `text` (the record's first line)

  // PCIe AER and IOMMU faults, counted per (kind, device).
  std::size_t line_no = 0;
  std::map<std::string, std::size_t> aer_at;      // kind + bdf → index in out.pcie_aer
  std::map<std::string, std::size_t> iommu_at;    // kind + bdf → index in out.iommu_faults
  std::map<std::string, std::size_t> failure_at;  // kind + bdf → index in out.driver_failures
  std::optional<std::size_t> last_aer;            // the record the "[ 0] RxErr" lines belong to
  std::size_t last_aer_line = 0;
  std::optional<std::size_t> last_iommu;  // the record an old "[fault reason]" line ends
  // "AER: Corrected error received: 0000:01:00.0" waits for its "PCIe Bus Error" line, which
  // names the layer and (Multiple …) the device; alone it counts as one error.
  struct PendingAer {
    std::string kind;
    std::optional<std::string> bdf;
    std::optional<std::string> driver;
    std::string message;
    Stamp stamp;
    std::size_t line_no = 0;
  };
  std::optional<PendingAer> pending_aer;
  // "DMAR: DRHD: handling fault status reg 2" waits for its "Request device" line.
  std::optional<PendingAer> pending_drhd;
};

XidEvent event_from_stamp(const Stamp& st, std::optional<std::int64_t> boot) {
  XidEvent ev;
  if (st.uptime_us) ev.uptime_s = static_cast<double>(*st.uptime_us) / 1e6;
  if (st.unix_time)
    ev.unix_time = st.unix_time;
  else if (st.uptime_us && boot)
    ev.unix_time = *boot + *st.uptime_us / 1000000;
  return ev;
}

std::string render_prefix(const State& s) {
  if (!s.stamp.kmsg) return std::string(trim(s.prefix));
  // Render a kmsg record's stamp the way dmesg prints it.
  char buf[48];
  const std::int64_t us = s.stamp.uptime_us.value_or(0);
  std::snprintf(buf, sizeof buf, "[%5" PRId64 ".%06" PRId64 "]", us / 1000000, us % 1000000);
  return buf;
}

// kmsg escapes the newlines of a multi-line record as "\x0a"; NVRM repeats its tag on each.
std::string join_escaped_lines(std::string_view text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t esc = find(text, "\\x0a", i);
    if (esc == npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, esc - i));
    i = esc + 4;
    std::size_t j = i;
    skip_spaces(text, j);
    if (starts_at(text, j, "NVRM: ")) j += 6;
    i = j;
    if (i < text.size()) out.push_back(' ');
  }
  return out;
}

void note_driver_failure(State& s, std::string_view full);

void finish_record(State& s) {
  if (!s.active) return;
  std::string_view full = s.has_continuation ? std::string_view(s.joined) : s.text;
  const bool nvrm = s.has_continuation ? contains(full, "NVRM") : s.text_has_nvrm;
  if (nvrm && !s.xid_found) note_driver_failure(s, full);
  if ((s.xid_found || nvrm) && contains(full, "fallen off the bus")) {
    std::string entry = render_prefix(s);
    if (!entry.empty()) entry.push_back(' ');
    entry += contains(full, "\\x0a") ? join_escaped_lines(full) : std::string(full);
    s.out.fallen_off_bus.push_back(clean_text(rtrim(entry)));
    XidEvent ev = event_from_stamp(s.stamp, s.options.boot_unix_time);
    ev.code = 79;
    ev.message = s.out.fallen_off_bus.back();
    s.out.fallen_off_bus_events.push_back(std::move(ev));
  }
  s.active = false;
  s.has_continuation = false;
  s.joined.clear();
  s.xid_found = false;
}

// "NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d"
void note_gpu_uuid(std::string_view text, KernelLogParseStats& stats) {
  std::size_t at_pos = find(text, "GPU at PCI:");
  if (at_pos == npos) return;
  std::size_t bus_start = at_pos + 7;
  std::size_t sep =
      find(text.substr(0, std::min(text.size(), bus_start + 48)), ": GPU-", bus_start);
  if (sep == npos) return;
  auto bus = normalize_pci_bus_id(text.substr(bus_start, sep - bus_start));
  if (!bus) return;
  std::size_t u = sep + 2;
  std::size_t end = u + 4;
  while (end < text.size() && end - u < 64 &&
         (is_digit(text[end]) || (text[end] >= 'a' && text[end] <= 'f') ||
          (text[end] >= 'A' && text[end] <= 'F') || text[end] == '-'))
    ++end;
  if (end == u + 4) return;
  stats.gpu_uuid_by_bus_id[*bus] = std::string(text.substr(u, end - u));
}

// ------------------------------------------------------------------ PCIe AER, IOMMU faults

// Records per log and details per record: an AER storm of a million lines stays small.
constexpr std::size_t kMaxDeviceRecords = 512;
constexpr std::size_t kMaxDetails = 12;
// Lines after "AER: … error received" within which its "PCIe Bus Error" line is looked for.
constexpr std::size_t kAerPendingLines = 8;

// "nvidia 0000:17:00.0" before a message ("nvidia 0000:17:00.0: AER: …"): the driver and the
// device that printed it.
void device_prefix(std::string_view before, std::optional<std::string>& driver,
                   std::optional<std::string>& bdf) {
  before = rtrim(before);
  if (!before.empty() && before.back() == ':') before.remove_suffix(1);
  const std::size_t sp = before.rfind(' ');
  if (sp == npos || sp == 0) return;
  std::string_view dev = before.substr(sp + 1);
  // Only a full "dddd:bb:dd.f" (the kernel's dev_name of a PCI device) is a device.
  if (dev.size() != 12 || dev[4] != ':' || dev[7] != ':' || dev[10] != '.') return;
  auto b = normalize_pci_bus_id(dev);
  if (!b) return;
  bdf = b;
  std::string_view drv = trim(before.substr(0, sp));
  if (const std::size_t sp2 = drv.rfind(' '); sp2 != npos) drv = drv.substr(sp2 + 1);
  if (!drv.empty() && drv.size() <= 32) driver = clean_text(drv, 32);
}

// A bus id written at s[i]: "0000:01:00.0", "01:00.0"; empty on anything else.
std::optional<std::string> bdf_at(std::string_view s, std::size_t i) {
  std::size_t j = i;
  while (j < s.size() && j - i < 16 &&
         (is_digit(s[j]) || (s[j] >= 'a' && s[j] <= 'f') || (s[j] >= 'A' && s[j] <= 'F') ||
          s[j] == ':' || s[j] == '.'))
    ++j;
  const std::string_view v = s.substr(i, j - i);
  if (v.size() != 7 && v.size() != 12) return std::nullopt;
  if (v[v.size() - 2] != '.' || v[v.size() - 5] != ':') return std::nullopt;
  return normalize_pci_bus_id(v);
}

// "Corrected", "Correctable", "Uncorrected (Non-Fatal)", "Uncorrectable (Fatal)" at s[i].
std::optional<std::string> aer_severity_at(std::string_view s, std::size_t i, std::size_t* end) {
  static constexpr std::pair<std::string_view, std::string_view> kWords[] = {
      {"Corrected", "corrected"},
      {"Correctable", "corrected"},
      {"Uncorrected (Non-Fatal)", "uncorrected-nonfatal"},
      {"Uncorrectable (Non-Fatal)", "uncorrected-nonfatal"},
      {"Uncorrected (Fatal)", "uncorrected-fatal"},
      {"Uncorrectable (Fatal)", "uncorrected-fatal"},
  };
  for (auto [word, kind] : kWords)
    if (starts_at(s, i, word)) {
      if (end) *end = i + word.size();
      return std::string(kind);
    }
  return std::nullopt;
}

void add_detail(DeviceErrorLog& r, std::string_view d) {
  d = trim(d);
  if (d.empty() || r.details.size() >= kMaxDetails) return;
  std::string text = clean_text(d, 64);
  if (std::find(r.details.begin(), r.details.end(), text) == r.details.end())
    r.details.push_back(std::move(text));
}

// One more error of `kind` on `bdf`: its record, made on first sight.
std::optional<std::size_t> count_device_error(std::vector<DeviceErrorLog>& list,
                                              std::map<std::string, std::size_t>& at,
                                              const std::string& kind,
                                              const std::optional<std::string>& bdf,
                                              const std::optional<std::string>& driver,
                                              const Stamp& st, std::string_view message,
                                              std::optional<std::int64_t> boot) {
  const std::string key = kind + "|" + bdf.value_or("");
  auto it = at.find(key);
  if (it == at.end()) {
    if (list.size() >= kMaxDeviceRecords) return std::nullopt;
    it = at.emplace(key, list.size()).first;
    DeviceErrorLog r;
    r.kind = kind;
    r.pci_bus_id = bdf;
    list.push_back(std::move(r));
  }
  DeviceErrorLog& r = list[it->second];
  ++r.count;
  if (!r.driver && driver) r.driver = driver;
  const XidEvent when = event_from_stamp(st, boot);
  if (when.uptime_s) {
    if (!r.first_uptime_s) r.first_uptime_s = when.uptime_s;
    r.last_uptime_s = when.uptime_s;
  }
  if (when.unix_time) {
    if (!r.first_unix_time) r.first_unix_time = when.unix_time;
    r.last_unix_time = when.unix_time;
  }
  r.last_message = clean_text(rtrim(message), 512);
  return it->second;
}

// The NVIDIA driver's failure strings for a GPU it cannot use (open-gpu-kernel-modules,
// kernel-open/nvidia/nv.c and src/nvidia/arch/nvalloc/unix/src/osinit.c, drivers 3xx to 5xx):
// the words, and the kind they are recorded as.
struct DriverFailureForm {
  std::string_view words;
  std::string_view kind;
};
constexpr DriverFailureForm kDriverFailures[] = {
    {"RmInitAdapter failed", "init-failed"},
    {"NV_ERR_RESET_REQUIRED", "reset-required"},
    {"GPU requires reset", "reset-required"},
    {"NV_ERR_GPU_IS_LOST", "lost"},
    {"GPU lost from the bus", "lost"},
    {"does not have the necessary power cables connected", "no-power"},
    {"PCI I/O region assigned to your NVIDIA device is invalid", "bar-invalid"},
    {"is not supported by the NVIDIA", "unsupported"},
    {"probe routine was not called", "not-probed"},
    {"No NVIDIA graphics adapter found", "no-adapter"},
    {"No NVIDIA GPU found", "no-adapter"},
    {"No NVIDIA devices probed", "no-adapter"},
};

// The GPU an NVRM record names: "GPU 0000:98:00.0:", "(PCI:0000:01:00)", "NVIDIA GPU
// 0000:01:00.0 (PCI ID…".
std::optional<std::string> nvrm_record_gpu(std::string_view text) {
  for (std::size_t at = find(text, "GPU "); at != npos; at = find(text, "GPU ", at + 4)) {
    // "GPU 0000:98:00.0: …": the bus id ends before the colon that follows it.
    std::string_view id = text.substr(at + 4, 12);
    if (id.size() == 12 && id[4] == ':' && id[7] == ':' && id[10] == '.')
      if (auto b = normalize_pci_bus_id(id)) return b;
    if (auto b = bdf_at(text, at + 4)) return b;
  }
  if (std::size_t p = find(text, "PCI:"); p != npos) {
    if (auto b = bdf_at(text, p + 4)) return b;
    const std::string_view v = text.substr(p + 4, 10);  // "0000:01:00": no function
    if (v.size() == 10 && v[4] == ':' && v[7] == ':')
      return normalize_pci_bus_id(std::string(v) + ".0");
  }
  return std::nullopt;
}

void note_driver_failure(State& s, std::string_view full) {
  for (const auto& form : kDriverFailures) {
    if (!contains(full, form.words)) continue;
    std::string entry = render_prefix(s);
    if (!entry.empty()) entry.push_back(' ');
    entry += full;
    count_device_error(s.out.driver_failures, s.failure_at, std::string(form.kind),
                       nvrm_record_gpu(full), std::string("nvidia"), s.stamp, entry,
                       s.options.boot_unix_time);
    return;  // one kind per record
  }
}

void record_aer(State& s, const std::string& kind, const std::optional<std::string>& bdf,
                const std::optional<std::string>& driver, const Stamp& st,
                std::string_view message) {
  s.last_aer = count_device_error(s.out.pcie_aer, s.aer_at, kind, bdf, driver, st, message,
                                  s.options.boot_unix_time);
  s.last_aer_line = s.line_no;
}

void flush_pending_aer(State& s) {
  if (!s.pending_aer) return;
  const auto p = std::move(*s.pending_aer);
  s.pending_aer.reset();
  record_aer(s, p.kind, p.bdf, p.driver, p.stamp, p.message);
}

void flush_pending_drhd(State& s) {
  if (!s.pending_drhd) return;
  const auto p = std::move(*s.pending_drhd);
  s.pending_drhd.reset();
  s.last_iommu = count_device_error(s.out.iommu_faults, s.iommu_at, "fault", std::nullopt,
                                    std::nullopt, p.stamp, p.message, s.options.boot_unix_time);
}

// What one line may hold, from a single pass over it: most lines of a big log hold none of
// these and leave after that pass, instead of after one memmem per matcher.
struct LineHints {
  bool xid = false;           // "Xid (": an Xid event, or a cut-off one
  bool gpu_at = false;        // "GPU at PCI:": the driver naming a GPU's UUID
  bool nvrm = false;          // "NVRM": the NVIDIA driver's own line, never an AER or IOMMU one
  bool aer_or_iommu = false;  // what process_aer or process_iommu look for
  bool hung_task = false;     // "INFO: task python:1234 blocked for more than 120 seconds."
};

// The first bytes of the words LineHints looks for.
constexpr std::array<bool, 256> kHintStarts = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : std::string_view("XGNPA:DI")) t[c] = true;
  return t;
}();

// starts_at() for a literal: its length is a constant, so the compare is inlined (the scan
// below runs on every byte of a log; starts_at's memcmp call was a tenth of its time).
template <std::size_t N>
bool word_at(std::string_view t, std::size_t i, const char (&w)[N]) {
  return t.size() - i >= N - 1 && std::memcmp(t.data() + i, w, N - 1) == 0;
}

// Whether one of the 8 bytes of `x` lies in ':'..'Z' (0x3a..0x5a), where every word of
// LineHints starts: lowercase text, digits, spaces and brackets, most of a log, are skipped 8
// bytes at a time. Per byte, the low 7 bits plus 0x46 reach the top bit when the byte is >=
// 0x3a, plus 0x25 when it is >= 0x5b, and never carry into the next byte; bytes with the top
// bit set (UTF-8) are none of these.
bool may_hold_hint_start(std::uint64_t x) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  const std::uint64_t low7 = x & (kOnes * 0x7f);
  const std::uint64_t from_colon = low7 + kOnes * (0x80 - 0x3a);
  const std::uint64_t past_z = low7 + kOnes * (0x80 - 0x5b);
  return (from_colon & ~past_z & ~x & (kOnes * 0x80)) != 0;
}

// One byte of scan_line: the words of LineHints that start at t[i].
void scan_byte(std::string_view t, std::size_t i, LineHints& h) {
  if (!kHintStarts[static_cast<unsigned char>(t[i])]) return;
  switch (t[i]) {
    case 'X':
      h.xid = h.xid || word_at(t, i, "Xid (");
      break;
    case 'G':
      h.gpu_at = h.gpu_at || word_at(t, i, "GPU at PCI:");
      break;
    case 'N':
      h.nvrm = h.nvrm || word_at(t, i, "NVRM");
      break;
    case 'P':
      h.aer_or_iommu = h.aer_or_iommu || word_at(t, i, "PCIe Bus Error: severity=");
      break;
    case 'A':
      h.aer_or_iommu =
          h.aer_or_iommu || word_at(t, i, "AER: ") || word_at(t, i, "AMD-Vi: Event logged [");
      break;
    case ':':
      h.aer_or_iommu = h.aer_or_iommu || word_at(t, i, ":    [");
      break;
    case 'D':
      h.aer_or_iommu = h.aer_or_iommu || word_at(t, i, "DMAR:");
      break;
    case 'I':
      h.aer_or_iommu = h.aer_or_iommu || word_at(t, i, "IO_PAGE_FAULT");
      h.hung_task = h.hung_task || word_at(t, i, "INFO: task ");
      break;
    default:
      break;
  }
}

LineHints scan_line(std::string_view t) {
  LineHints h;
  std::size_t i = 0;
  while (i < t.size()) {
    std::size_t end = t.size();
    if (end - i >= 8) {
      std::uint64_t x;
      std::memcpy(&x, t.data() + i, 8);
      end = i + 8;
      if (!may_hold_hint_start(x)) {
        i = end;
        continue;
      }
    }
    for (; i < end; ++i) scan_byte(t, i, h);
  }
  return h;
}

// A PCIe AER line of the kernel's aer driver (drivers/pci/pcie/aer.c, 3.x to 6.x wordings).
// True when the line was one.
bool process_aer(State& s, std::string_view text) {
  const std::size_t bus_error = find(text, "PCIe Bus Error: severity=");
  std::size_t aer = bus_error == npos ? find(text, "AER: ") : npos;
  if (bus_error == npos && aer == npos) {
    // Kernels before 4.19 print the detail lines without "AER: ": "pcieport 0000:00:03.0:
    //    [ 0] Receiver Error", right after the error they belong to.
    const std::size_t d =
        s.last_aer && s.line_no - s.last_aer_line <= kAerPendingLines ? find(text, ":    [") : npos;
    if (d == npos || d < 4) return false;
    std::size_t j = d + 6;
    skip_spaces(text, j);
    if (!read_number(text, j, 2) || !at(text, j, ']')) return false;
    std::string_view name = text.substr(j + 1);
    add_detail(s.out.pcie_aer[*s.last_aer], trim(name.substr(0, name.find('('))));
    return true;
  }
  if (bus_error != npos) {
    std::size_t end = 0;
    auto kind = aer_severity_at(text, bus_error + 25, &end);
    if (!kind) return true;
    std::optional<std::string> driver, bdf;
    std::string_view before = text.substr(0, bus_error);
    if (const std::size_t a = before.rfind("AER:"); a != npos) before = before.substr(0, a);
    device_prefix(before, driver, bdf);
    // 3.x/4.x: "…, id=00e0(Receiver ID)": bus 00, devfn e0 on the printing port's domain.
    if (const std::size_t id = find(text, ", id=", end); id != npos && id + 9 <= text.size()) {
      unsigned v = 0;
      if (std::sscanf(std::string(text.substr(id + 5, 4)).c_str(), "%4x", &v) == 1) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%s:%02x:%02x.%x", bdf ? bdf->substr(0, 4).c_str() : "0000",
                      (v >> 8) & 0xff, (v >> 3) & 0x1f, v & 7);
        bdf = std::string(buf);
      }
    }
    if (s.pending_aer && s.pending_aer->kind == *kind) {
      auto p = std::move(*s.pending_aer);
      s.pending_aer.reset();
      if (!bdf) bdf = p.bdf;
      record_aer(s, *kind, bdf, driver, p.stamp, text);
    } else {
      flush_pending_aer(s);
      record_aer(s, *kind, bdf, driver, s.stamp, text);
    }
    if (s.last_aer) {
      if (const std::size_t t = find(text, ", type=", end); t != npos) {
        std::string_view layer = text.substr(t + 7);
        layer = layer.substr(0, layer.find(','));
        add_detail(s.out.pcie_aer[*s.last_aer], layer);
      }
    }
    return true;
  }
  // After "AER: ": "[Multiple ]<severity> error [message ]received: <bdf>|from <bdf>|id=…",
  // or the detail lines of the error just recorded: "[ 0] RxErr   (First)".
  std::size_t i = aer + 5;
  skip_spaces(text, i);
  if (at(text, i, '[')) {
    std::size_t j = i + 1;
    skip_spaces(text, j);
    if (read_number(text, j, 2) && at(text, j, ']') && s.last_aer) {
      std::string_view name = text.substr(j + 1);
      name = trim(name.substr(0, name.find('(')));
      add_detail(s.out.pcie_aer[*s.last_aer], name);
    }
    return true;
  }
  if (starts_at(text, i, "Multiple ")) i += 9;
  std::size_t end = 0;
  auto kind = aer_severity_at(text, i, &end);
  if (!kind) return true;  // "AER: enabled with IRQ 122", "aer_status: …": not an error
  std::size_t r = find(text, " received", end);
  if (r == npos || r - end > 16) return true;
  r += 9;
  if (starts_at(text, r, " from ")) r += 6;
  if (at(text, r, ':')) ++r;
  skip_spaces(text, r);
  State::PendingAer p;
  p.kind = *kind;
  p.stamp = s.stamp;
  p.line_no = s.line_no;
  p.message = std::string(text.substr(0, std::min(text.size(), kMaxTextBytes)));
  std::optional<std::string> port;
  device_prefix(text.substr(0, aer), p.driver, port);
  p.bdf = bdf_at(text, r);
  if (!p.bdf) p.bdf = port;  // "id=0018" (old kernels) is resolved by its Bus Error line
  p.driver.reset();          // the port's driver, not the device's
  flush_pending_aer(s);
  s.pending_aer = std::move(p);
  return true;
}

// An IOMMU fault: Intel DMAR ("DMAR: [DMA Read NO_PASID] Request device [17:00.0] fault addr
// 0x… [fault reason 0x06] PTE Read access is not set", the older two-line form, "DMAR: DRHD:
// handling fault status reg 2") and AMD-Vi ("AMD-Vi: Event logged [IO_PAGE_FAULT device=17:00.0
// domain=0x0000 address=0x… flags=0x0020]", the device in the prefix on newer kernels).
bool process_iommu(State& s, std::string_view text) {
  const std::size_t dmar = find(text, "DMAR:");
  const std::size_t amd = dmar == npos ? find(text, "AMD-Vi: Event logged [") : npos;
  const std::size_t page_fault = dmar == npos && amd == npos ? find(text, "IO_PAGE_FAULT") : npos;
  if (dmar == npos && amd == npos && page_fault == npos) return false;
  std::optional<std::string> driver, bdf;
  if (dmar != npos) {
    if (find(text, "DRHD: handling fault status") != npos) {
      flush_pending_drhd(s);
      s.pending_drhd = State::PendingAer{"fault",      std::nullopt,
                                         std::nullopt, std::string(text.substr(0, kMaxTextBytes)),
                                         s.stamp,      s.line_no};
      return true;
    }
    const std::size_t req = find(text, "Request device [");
    const std::size_t reason = find(text, "fault reason ");
    if (req == npos) {
      // The second line of the old form: "DMAR:[fault reason 06] PTE Read access is not set".
      if (reason != npos && s.last_iommu) {
        const std::size_t close = text.find(']', reason);
        if (close != npos) add_detail(s.out.iommu_faults[*s.last_iommu], text.substr(close + 1));
      }
      return true;
    }
    s.pending_drhd.reset();  // this is the fault the DRHD line announced
    bdf = bdf_at(text, req + 16);
    std::string kind = "other";
    std::size_t k = dmar + 5;
    skip_spaces(text, k);
    if (starts_at(text, k, "[DMA Read")) kind = "dma-read";
    if (starts_at(text, k, "[DMA Write")) kind = "dma-write";
    if (starts_at(text, k, "[INTR-REMAP")) kind = "interrupt-remap";
    std::optional<std::string> printer;  // DMAR lines are printed by no device: unused
    device_prefix(text.substr(0, dmar), driver, printer);
    s.last_iommu = count_device_error(s.out.iommu_faults, s.iommu_at, kind, bdf, driver, s.stamp,
                                      text, s.options.boot_unix_time);
    if (reason != npos && s.last_iommu) {
      const std::size_t close = text.find(']', reason);
      if (close != npos) add_detail(s.out.iommu_faults[*s.last_iommu], text.substr(close + 1));
    }
    return true;
  }
  std::string kind = "io-page-fault";
  std::size_t head = page_fault;
  if (amd != npos) {
    head = amd;
    std::size_t w = amd + 22;
    std::size_t e = w;
    while (e < text.size() && e - w < 40 && text[e] != ' ' && text[e] != ']') ++e;
    kind.clear();
    for (char c : text.substr(w, e - w))
      kind.push_back(c == '_'                 ? '-'
                     : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a')
                                              : c);
    if (kind.empty()) kind = "other";
  }
  if (const std::size_t d = find(text, "device=", head); d != npos) bdf = bdf_at(text, d + 7);
  std::optional<std::string> prefix_bdf;
  std::string_view before = text.substr(0, head);
  if (const std::size_t a = before.rfind("AMD-Vi:"); a != npos) before = before.substr(0, a);
  device_prefix(before, driver, prefix_bdf);
  if (!bdf) bdf = prefix_bdf;
  s.last_iommu = count_device_error(s.out.iommu_faults, s.iommu_at, kind, bdf, driver, s.stamp,
                                    text, s.options.boot_unix_time);
  return true;
}

void process_line(State& s, std::string_view line) {
  line = rtrim(line);
  if (s.stats) ++s.stats->lines;

  // "-- Logs begin at Mon 2025-12-01 …" (journalctl): the year syslog stamps lack.
  if (!s.syslog_year && !line.empty() && line[0] == '-' &&
      (starts_with(line, "-- Logs begin at ") || starts_with(line, "-- Journal begins at "))) {
    std::size_t i = line.find(" at ") + 4;
    if (is_weekday_abbrev(line, i) && at(line, i + 3, ' ')) {
      std::size_t j = i + 4;
      if (auto y = read_fixed(line, j, 4); y && at(line, j, '-')) s.syslog_year = *y;
    }
  }

  // `uptime` pasted with the log (" 14:02:11 up 40 days, …", "up 3 hours"): the clock the
  // stamps are read by. The first bytes rule out every other line before the parse.
  if (s.stats) {
    std::size_t i = 0;
    skip_spaces(line, i);
    const std::string_view t = line.substr(i);
    const bool digit = !t.empty() && t[0] >= '0' && t[0] <= '9';
    if (starts_with(t, "up ") || (digit && t.size() > 2 && t[2] == ':'))
      if (auto up = parse_uptime_line(t)) s.stats->uptime_s = up;
  }

  ParsedLine pl = parse_line(line, s.syslog_year);
  if (pl.syslog_month != 0) {
    // A yearless log that goes from December to January has crossed a New Year.
    if (s.syslog_year && s.last_syslog_month != 0 && pl.syslog_month < s.last_syslog_month) {
      ++*s.syslog_year;
      pl = parse_line(line, s.syslog_year);
    }
    s.last_syslog_month = pl.syslog_month;
  }

  const bool continuation =
      !pl.stamp.any && !line.empty() && is_space(line.front()) && s.active && !s.stamp.kmsg;
  std::string_view text = pl.text;
  if (continuation) {
    // dmesg indents the later lines of a multi-line record (kmsg puts dictionary
    // "KEY=value" lines there instead, which are skipped).
    std::string_view cont = trim(text);
    if (starts_with(cont, "NVRM: ")) cont.remove_prefix(6);
    if (!s.has_continuation) {
      s.joined.assign(s.text.substr(0, kMaxRecordBytes));
      s.has_continuation = true;
    }
    if (s.joined.size() < kMaxRecordBytes) {
      s.joined.push_back(' ');
      s.joined.append(cont.substr(0, kMaxRecordBytes - s.joined.size()));
    }
  } else if (!pl.stamp.any && !line.empty() && is_space(line.front()) && s.active && s.stamp.kmsg) {
    return;  // kmsg dictionary line
  } else {
    finish_record(s);
    s.active = true;
    s.prefix = pl.prefix;
    s.text = text;
    s.stamp = pl.stamp;
  }

  const LineHints hints = scan_line(text);
  if (!continuation) s.text_has_nvrm = hints.nvrm;
  if (s.stats && hints.gpu_at) note_gpu_uuid(text, *s.stats);

  ++s.line_no;
  if (s.pending_aer && s.line_no - s.pending_aer->line_no > kAerPendingLines) flush_pending_aer(s);
  if (s.pending_drhd && s.line_no - s.pending_drhd->line_no > kAerPendingLines)
    flush_pending_drhd(s);
  if (!continuation && hints.aer_or_iommu && !hints.nvrm &&
      (process_aer(s, text) || process_iommu(s, text)))
    return;

  // The kernel's hung-task watchdog: "INFO: task python3:4412 blocked for more than 122
  // seconds." (a process stuck in the kernel, often in the GPU driver after a fault).
  if (hints.hung_task && !continuation && s.out.hung_tasks.size() < kMaxDeviceRecords) {
    const std::size_t t = find(text, "INFO: task ");
    const std::size_t b = find(text, " blocked for more than ", t);
    if (t != npos && b != npos && b > t + 11) {
      const std::string_view who = text.substr(t + 11, b - t - 11);
      XidEvent ev = event_from_stamp(s.stamp, s.options.boot_unix_time);
      if (const std::size_t colon = who.rfind(':'); colon != npos) {
        ev.process = clean_text(who.substr(0, colon), 64);
        std::size_t k = colon + 1;
        if (auto pid = read_number(who, k, 9); pid && k == who.size())
          ev.pid = static_cast<int>(*pid);
      }
      ev.message = clean_text(rtrim(text.substr(t)), 200);
      s.out.hung_tasks.push_back(std::move(ev));
      return;
    }
  }

  if (!hints.xid) return;
  std::size_t pos = find(text, "Xid (");
  XidEvent ev = event_from_stamp(s.stamp, s.options.boot_unix_time);
  while (pos != npos) {
    if (parse_xid_at(text, pos + 5, ev)) {
      s.out.xids.push_back(std::move(ev));
      s.xid_found = true;
      return;
    }
    pos = find(text, "Xid (", pos + 5);
  }
  if (s.stats) ++s.stats->unparsed_xid_lines;
}

}  // namespace

void parse_kernel_log(std::string_view text, KernelLog& out,
                      std::optional<std::int64_t> boot_unix_time) {
  KernelLogParseOptions options;
  options.boot_unix_time = boot_unix_time;
  parse_kernel_log(text, out, options, nullptr);
}

void parse_kernel_log(std::string_view text, KernelLog& out, const KernelLogParseOptions& options,
                      KernelLogParseStats* stats) {
  State s{options, stats, out, options.syslog_year};
  std::size_t i = 0;
  while (i < text.size()) {
    const void* nl = memchr(text.data() + i, '\n', text.size() - i);
    std::size_t end =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    process_line(s, text.substr(i, end - i));
    i = end + 1;
  }
  finish_record(s);
  flush_pending_aer(s);
  flush_pending_drhd(s);
}

bool looks_like_kernel_log(std::string_view text) {
  if (contains(text, "NVRM: ") || contains(text, "NVRM:Xid") || contains(text, "Xid (PCI:"))
    return true;
  int lines = 0;
  int stamped = 0;
  std::size_t i = 0;
  while (i < text.size() && lines < 200 && i < (64u << 10)) {
    const void* nl = memchr(text.data() + i, '\n', text.size() - i);
    std::size_t end =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    std::string_view line = rtrim(text.substr(i, end - i));
    i = end + 1;
    if (trim(line).empty()) continue;
    ++lines;
    const Stamp st = parse_line(line, std::nullopt).stamp;
    if (st.kmsg || st.bracket || st.kernel_tag) ++stamped;
  }
  if (stamped >= 3 && stamped * 2 >= lines) return true;
  // A short paste (one or two stamped lines) is a kernel log when its lines are the kernel's
  // own reports gpuvet reads: PCIe AER, IOMMU faults, hung tasks.
  return stamped >= 1 && stamped * 2 >= lines &&
         (contains(text, "AMD-Vi: Event logged") || contains(text, "DMAR: [DMA ") ||
          contains(text, "PCIe Bus Error: severity=") || contains(text, " AER: ") ||
          contains(text, "INFO: task "));
}

}  // namespace gpuvet::import
