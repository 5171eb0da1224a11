// core/text_scan.h — allocation-free scanning helpers for the text importers:
// byte search, line iteration with a line-length cap, whitespace words, and a
// printable copy for notes. Pure functions of their input; thread-safe.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/util.h"

namespace gpuvet::text_scan {

constexpr std::size_t npos = std::string_view::npos;

inline bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

inline std::size_t find(std::string_view hay, std::string_view needle, std::size_t from = 0) {
  if (from > hay.size() || needle.empty()) return npos;
  const void* p = memmem(hay.data() + from, hay.size() - from, needle.data(), needle.size());
  return p ? static_cast<std::size_t>(static_cast<const char*>(p) - hay.data()) : npos;
}
inline bool contains(std::string_view hay, std::string_view needle) {
  return find(hay, needle) != npos;
}

// Trimmed, tabs as spaces, control and non-ASCII bytes as '?', at most `max` bytes.
inline std::string printable(std::string_view s, std::size_t max) {
  s = trim(s);
  std::string out;
  out.reserve(std::min(s.size(), max));
  for (char c : s) {
    if (out.size() >= max) break;
    auto u = static_cast<unsigned char>(c);
    out.push_back(c == '\t' ? ' ' : (u < 0x20 || u >= 0x7f) ? '?' : c);
  }
  return out;
}

// Calls fn(line) for each line (trailing blanks removed, cut at max_line bytes)
// until fn returns false.
template <typename Fn>
void for_each_line(std::string_view text, std::size_t max_line, Fn&& fn) {
  std::size_t i = 0;
  while (i < text.size()) {
    const void* nl = memchr(text.data() + i, '\n', text.size() - i);
    std::size_t end =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    std::string_view line = text.substr(i, std::min(end - i, max_line));
    while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
    if (!fn(line)) return;
    i = end + 1;
  }
}

// Whitespace-separated words, at most max_words.
inline std::vector<std::string_view> words(std::string_view s, std::size_t max_words) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size() && out.size() < max_words) {
    while (i < s.size() && is_blank(s[i])) ++i;
    std::size_t b = i;
    while (i < s.size() && !is_blank(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

}  // namespace gpuvet::text_scan
