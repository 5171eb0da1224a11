#include "core/util.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>

namespace gpuvet {

std::string_view trim(std::string_view s) {
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    auto pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < s.size()) {
    auto pos = s.find('\n', start);
    if (pos == std::string_view::npos) pos = s.size();
    auto line = s.substr(start, pos - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = pos + 1;
  }
  return lines;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_uint(std::string_view s) {
  s = trim(s);
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  s = trim(s);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

namespace {
constexpr int kMaxCpuId = 1 << 16;  // well above any real machine; bounds garbage ranges
}

std::optional<std::vector<int>> parse_cpu_list(std::string_view s) {
  s = trim(s);
  std::set<int> ids;
  if (s.empty()) return std::vector<int>{};
  for (auto part : split(s, ',')) {
    part = trim(part);
    if (part.empty()) return std::nullopt;
    auto dash = part.find('-');
    if (dash == std::string_view::npos) {
      auto v = parse_int(part);
      if (!v || *v < 0 || *v >= kMaxCpuId) return std::nullopt;
      ids.insert(static_cast<int>(*v));
    } else {
      auto lo = parse_int(part.substr(0, dash));
      auto rest = part.substr(dash + 1);
      int stride = 1;
      if (auto colon = rest.find(':'); colon != std::string_view::npos) {  // "0-31:2"
        auto st = parse_int(rest.substr(colon + 1));
        if (!st || *st <= 0) return std::nullopt;
        stride = static_cast<int>(*st);
        rest = rest.substr(0, colon);
      }
      auto hi = parse_int(rest);
      if (!lo || !hi || *lo < 0 || *hi < *lo || *hi >= kMaxCpuId) return std::nullopt;
      for (auto i = *lo; i <= *hi; i += stride) ids.insert(static_cast<int>(i));
    }
  }
  return std::vector<int>(ids.begin(), ids.end());
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::vector<int> v(cpus);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += '-' + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

std::optional<std::vector<int>> parse_cpu_mask(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::vector<int> ids;
  auto words = split(s, ',');
  if (words.size() * 32 > static_cast<std::size_t>(kMaxCpuId)) return std::nullopt;
  int base = 0;
  for (auto it = words.rbegin(); it != words.rend(); ++it, base += 32) {
    auto w = trim(*it);
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), v, 16);
    if (w.empty() || w.size() > 8 || ec != std::errc() || p != w.data() + w.size())
      return std::nullopt;
    for (int bit = 0; bit < 32; ++bit)
      if (v & (1u << bit)) ids.push_back(base + bit);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::optional<std::string> normalize_pci_bus_id(std::string_view s) {
  s = trim(s);
  if (starts_with(s, "PCI:") || starts_with(s, "pci:")) s.remove_prefix(4);
  // Parse from the right: [domain:]bus:device[.function]
  auto hex = [](std::string_view t, std::uint32_t max) -> std::optional<std::uint32_t> {
    t = trim(t);
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 16);
    if (t.empty() || t.size() > 8 || ec != std::errc() || p != t.data() + t.size() || v > max)
      return std::nullopt;
    return v;
  };
  std::uint32_t function = 0;
  if (auto dot = s.rfind('.'); dot != std::string_view::npos) {
    auto f = hex(s.substr(dot + 1), 7);
    if (!f) return std::nullopt;
    function = *f;
    s = s.substr(0, dot);
  }
  auto parts = split(s, ':');
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  std::uint32_t domain = 0;
  if (parts.size() == 3) {
    auto d = hex(parts[0], 0xffffffff);
    if (!d || *d > 0xffff) return std::nullopt;
    domain = *d;
  }
  auto bus = hex(parts[parts.size() - 2], 0xff);
  auto dev = hex(parts[parts.size() - 1], 0x1f);
  if (!bus || !dev) return std::nullopt;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, *bus, *dev, function);
  return std::string(buf);
}

std::string format_utc(std::int64_t unix_s, const char* format) {
  const auto tt = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  if (!::gmtime_r(&tt, &tm)) return std::to_string(unix_s);
  char buf[64];
  if (std::strftime(buf, sizeof buf, format, &tm) == 0) return std::to_string(unix_s);
  return buf;
}

int month_of(std::string_view abbreviation) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const auto m = std::find(std::begin(kMonths), std::end(kMonths), abbreviation);
  return m == std::end(kMonths) ? 0 : static_cast<int>(m - std::begin(kMonths)) + 1;
}

bool is_weekday(std::string_view abbreviation) {
  static constexpr std::string_view kDays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
  return std::find(std::begin(kDays), std::end(kDays), abbreviation) != std::end(kDays);
}

std::optional<std::int64_t> parse_ctime(std::string_view s) {
  // "Www Mmm d hh:mm:ss yyyy": five words, however many spaces between them (ctime pads the
  // day; a forum may collapse the padding).
  std::vector<std::string_view> w;
  for (auto part : split(trim(s), ' '))
    if (!part.empty()) w.push_back(part);
  if (w.size() != 5 || w[3].size() != 8 || w[3][2] != ':' || w[3][5] != ':' || w[4].size() != 4)
    return std::nullopt;
  const int month = month_of(w[1]);
  if (!is_weekday(w[0]) || month == 0) return std::nullopt;
  const auto day = parse_int(w[2]), h = parse_int(w[3].substr(0, 2)),
             mi = parse_int(w[3].substr(3, 2)), sec = parse_int(w[3].substr(6, 2)),
             year = parse_int(w[4]);
  if (!day || !h || !mi || !sec || !year || w[2].size() > 2 || *day < 1 || *day > 31 || *h < 0 ||
      *h > 23 || *mi < 0 || *mi > 59 || *sec < 0 || *sec > 60 || *year < 1970)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = static_cast<int>(*year) - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = static_cast<int>(*day);
  tm.tm_hour = static_cast<int>(*h);
  tm.tm_min = static_cast<int>(*mi);
  tm.tm_sec = static_cast<int>(*sec);
  return static_cast<std::int64_t>(::timegm(&tm));
}

std::string valid_utf8(std::string_view s) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const std::size_t len = c >= 0xF0 && c <= 0xF4   ? 4
                            : c >= 0xE0 && c <= 0xEF ? 3
                            : c >= 0xC2 && c <= 0xDF ? 2
                                                     : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len >= 3) {  // no overlong form, no surrogate, nothing past U+10FFFF
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0) && !(c == 0xF0 && c1 < 0x90) &&
           !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

}  // namespace gpuvet
