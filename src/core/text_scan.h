// core/text_scan.h — allocation-free scanning helpers for the text importers:
// byte search, line iteration (pulled, or pushed with a line-length cap), whitespace
// words, and a printable copy for notes. Pure functions of their input; thread-safe.
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
  // Also keeps memmem from an empty view, whose data() may be null (undefined behaviour).
  if (from > hay.size() || needle.empty() || hay.size() - from < needle.size()) return npos;
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

// Pulls lines one at a time from the first max_bytes of text: each without its '\n' and
// one trailing '\r', otherwise as it stands (no cut, no other blank removed).
class LineReader {
 public:
  explicit LineReader(std::string_view text, std::size_t max_bytes = npos)
      : text_(text.substr(0, max_bytes)) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const void* nl = memchr(text_.data() + pos_, '\n', text_.size() - pos_);
    const std::size_t end =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text_.data()) : text_.size();
    line = text_.substr(pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = end + 1;
    return true;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// Calls fn(line) for each line (trailing blanks removed, cut at max_line bytes)
// until fn returns false.
template <typename Fn>
void for_each_line(std::string_view text, std::size_t max_line, Fn&& fn) {
  LineReader lines(text);
  std::string_view line;
  while (lines.next(line)) {
    line = line.substr(0, max_line);
    while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
    if (!fn(line)) return;
  }
}

// Calls fn(word, offset) for each whitespace-separated word of s, at most max_words;
// offset is where the word starts in s.
template <typename Fn>
void for_each_word(std::string_view s, std::size_t max_words, Fn&& fn) {
  std::size_t i = 0;
  for (std::size_t n = 0; i < s.size() && n < max_words;) {
    while (i < s.size() && is_blank(s[i])) ++i;
    std::size_t b = i;
    while (i < s.size() && !is_blank(s[i])) ++i;
    if (i > b) {
      fn(s.substr(b, i - b), b);
      ++n;
    }
  }
}

// Whitespace-separated words, at most max_words.
inline std::vector<std::string_view> words(std::string_view s, std::size_t max_words) {
  std::vector<std::string_view> out;
  for_each_word(s, max_words, [&](std::string_view w, std::size_t) { out.push_back(w); });
  return out;
}

// A word and the column it starts at, for space-aligned tables.
struct Word {
  std::string_view text;
  std::size_t offset = 0;
};

// The words of s into out (cleared first, its storage reused), at most max_words.
inline void words(std::string_view s, std::size_t max_words, std::vector<Word>& out) {
  out.clear();
  for_each_word(s, max_words, [&](std::string_view w, std::size_t at) { out.push_back({w, at}); });
}

}  // namespace gpuvet::text_scan
