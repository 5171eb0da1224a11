// Terminal layout helpers: display width, token-safe word wrap, compact subject lists.
#include "report/text_layout.h"

#include "gpuvet/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace gpuvet::report {
namespace {

// "<prefix><n>" with n a plain decimal (no sign, no leading zero unless "0"); else none.
std::optional<int> numbered(std::string_view s, std::string_view prefix) {
  if (s.size() <= prefix.size() || s.substr(0, prefix.size()) != prefix) return std::nullopt;
  const std::string_view digits = s.substr(prefix.size());
  if (digits.size() > 6 || (digits.size() > 1 && digits.front() == '0')) return std::nullopt;
  if (!std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return std::nullopt;
  int n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return n;
}

// "GPU<a>-GPU<b>" as (a, b).
std::optional<std::pair<int, int>> gpu_pair(std::string_view s) {
  const std::size_t dash = s.find("-GPU");
  if (dash == std::string_view::npos) return std::nullopt;
  const auto a = numbered(s.substr(0, dash), "GPU");
  const auto b = numbered(s.substr(dash + 1), "GPU");
  if (!a || !b || *a == *b) return std::nullopt;
  return std::pair{*a, *b};
}

// 0,2,3 → "0,2–3": runs of two or more consecutive numbers become "first–last".
std::string ranges(const std::set<int>& numbers) {
  std::string out;
  for (auto it = numbers.begin(); it != numbers.end();) {
    const int first = *it;
    int last = first;
    auto next = std::next(it);
    while (next != numbers.end() && *next == last + 1) {
      last = *next;
      ++next;
    }
    if (!out.empty()) out += ',';
    out += last == first ? fmt::format("{}", first) : fmt::format("{}–{}", first, last);
    it = next;
  }
  return out;
}

bool blank(char ch) { return ch == ' ' || ch == '\t'; }

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t n = 0;
  for (unsigned char ch : text)
    if ((ch & 0xC0) != 0x80) ++n;
  return n;
}

std::string wrap_text(std::string_view text, std::size_t width, std::size_t first_column,
                      std::size_t indent) {
  std::string out;
  std::size_t column = first_column;
  bool line_has_word = false;
  const auto new_line = [&] {
    out += '\n';
    out.append(indent, ' ');
    column = indent;
    line_has_word = false;
  };
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '\n') {
      new_line();
      ++i;
      continue;
    }
    if (blank(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && !blank(text[j]) && text[j] != '\n') ++j;
    const std::string_view word = text.substr(i, j - i);
    const std::size_t w = display_width(word);
    if (line_has_word && column + 1 + w > width) new_line();
    // The first word after a label (first_column past the indent) that does not fit beside
    // it goes down to the indent, unless it is too long for any line: then it stays.
    else if (!line_has_word && column > indent && column + w > width && indent + w <= width)
      new_line();
    if (line_has_word) {
      out += ' ';
      ++column;
    }
    out += word;
    column += w;
    line_has_word = true;
    i = j;
  }
  return out;
}

std::string compact_subjects(std::span<const std::string> subjects) {
  std::set<int> gpus, cpus, pair_gpus;
  std::set<std::pair<int, int>> pairs;
  std::vector<std::string> pair_texts;
  // Each kind is written where its first subject was; the rest keep their order.
  enum class Kind { kGpu, kCpu, kPair, kOther };
  std::vector<std::pair<Kind, std::string>> order;
  const auto first_of = [&](Kind k) {
    if (std::none_of(order.begin(), order.end(), [&](const auto& o) { return o.first == k; }))
      order.emplace_back(k, "");
  };
  for (const auto& s : subjects) {
    if (const auto g = numbered(s, "GPU")) {
      gpus.insert(*g);
      first_of(Kind::kGpu);
    } else if (const auto c = numbered(s, "CPU")) {
      cpus.insert(*c);
      first_of(Kind::kCpu);
    } else if (const auto p = gpu_pair(s)) {
      const std::pair<int, int> key{std::min(p->first, p->second), std::max(p->first, p->second)};
      if (pairs.insert(key).second) pair_texts.push_back(s);
      pair_gpus.insert(p->first);
      pair_gpus.insert(p->second);
      first_of(Kind::kPair);
    } else if (std::none_of(order.begin(), order.end(), [&](const auto& o) {
                 return o.first == Kind::kOther && o.second == s;
               })) {
      order.emplace_back(Kind::kOther, s);
    }
  }
  std::string out;
  for (const auto& [kind, text] : order) {
    if (!out.empty()) out += ", ";
    switch (kind) {
      case Kind::kGpu:
        out += "GPU" + ranges(gpus);
        break;
      case Kind::kCpu:
        out += "CPU" + ranges(cpus);
        break;
      case Kind::kPair: {
        if (pairs.size() <= 2) {
          out += pair_texts.front();
          if (pair_texts.size() == 2) out += ", " + pair_texts.back();
          break;
        }
        const std::size_t n = pair_gpus.size();
        const bool every_pair = pairs.size() == n * (n - 1) / 2;
        out += every_pair ? fmt::format("all {} pairs of GPU{}", pairs.size(), ranges(pair_gpus))
                          : fmt::format("{} pairs among GPU{}", pairs.size(), ranges(pair_gpus));
        break;
      }
      case Kind::kOther:
        out += text;
        break;
    }
  }
  return out;
}

std::string join(std::span<const std::string> parts, std::string_view sep) {
  std::string s;
  for (const auto& p : parts) {
    if (!s.empty()) s += sep;
    s += p;
  }
  return s;
}

}  // namespace gpuvet::report

namespace gpuvet {

int text_width_wanted(const WidthContext& context) {
  constexpr int kDefault = 100, kMin = 60, kMax = 200;
  int width = context.tty_columns;
  if (width <= 0 && context.columns != nullptr) {
    const std::string_view s(context.columns);
    int n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size()) width = n;
  }
  if (width <= 0) width = kDefault;
  return std::clamp(width, kMin, kMax);
}

}  // namespace gpuvet
