// What reaches a terminal: control characters made visible, and whether to colour at all.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "gpuvet/report.h"

namespace gpuvet {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool plain_ascii(std::string_view s) {
  for (unsigned char ch : s)
    if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch >= 0x7F) return false;
  return true;
}

bool continuation(unsigned char ch) { return (ch & 0xC0) == 0x80; }

// Length of the well-formed UTF-8 sequence at s[i] and its code point; 0 when the bytes
// there are not one (a stray continuation byte, an overlong form, a surrogate, a cut
// sequence).
std::size_t utf8_sequence(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = b(0);
  std::size_t n = 0;
  std::uint32_t min = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2, cp = lead & 0x1F, min = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3, cp = lead & 0x0F, min = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if (!continuation(b(k))) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  if (plain_ascii(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  std::size_t i = 0;
  while (i < text.size()) {
    const auto ch = static_cast<unsigned char>(text[i]);
    if (ch < 0x80) {
      if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7F)
        out += fmt::format("\\x{:02x}", ch);
      else
        out += static_cast<char>(ch);
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    const std::size_t n = utf8_sequence(text, i, cp);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else if (cp <= 0x9F) {  // C1 controls (U+0080–U+009F): CSI, OSC, … on some terminals
      out += fmt::format("\\u{:04x}", cp);
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

bool color_wanted(const ColorContext& c) {
  if (c.no_color_flag || !c.stdout_is_tty) return false;
  if (c.term == nullptr || *c.term == '\0' || std::string_view(c.term) == "dumb") return false;
  return c.no_color == nullptr || *c.no_color == '\0';
}

}  // namespace gpuvet
