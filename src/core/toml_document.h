// core/toml_document.h — gpuvet's TOML files (the configuration, baselines, acks, advise
// workloads) parsed one way: toml++ without exceptions, a syntax error said as
// "FILE:LINE:COLUMN: what". Every reader of a TOML file includes this instead of toml++.
#pragma once

#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "gpuvet/status.h"

namespace gpuvet {

// Where a byte above 0x7F stands outside a string and a comment ("line:column"), else empty.
// TOML allows none there (bare keys are ASCII), and toml++ 3.3.0, Debian 12's, reaches
// __builtin_unreachable on some of them (U+00A1–U+0499 among others; fuzzing found it, upstream
// fixed it after 3.3.0): such a file is refused before toml++ sees it.
inline std::optional<std::string> toml_non_ascii_outside_strings(std::string_view text) {
  std::size_t line = 1, column = 1;
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral } in = In::kCode;
  for (std::size_t i = 0; i < text.size(); ++i, ++column) {
    const char c = text[i];
    const auto next = [&](std::string_view s) { return text.substr(i, s.size()) == s; };
    if (c == '\n') {
      ++line;
      column = 0;
      if (in == In::kComment || in == In::kBasic || in == In::kLiteral) in = In::kCode;
      continue;
    }
    switch (in) {
      case In::kCode:
        if (static_cast<unsigned char>(c) > 0x7F) return fmt::format("{}:{}", line, column);
        if (c == '#')
          in = In::kComment;
        else if (next("\"\"\""))
          in = In::kMultiBasic, i += 2, column += 2;
        else if (next("\'\'\'"))
          in = In::kMultiLiteral, i += 2, column += 2;
        else if (c == '"')
          in = In::kBasic;
        else if (c == '\'')
          in = In::kLiteral;
        break;
      case In::kComment:
        break;
      case In::kBasic:
        if (c == '\\')
          ++i, ++column;  // the escaped character
        else if (c == '"')
          in = In::kCode;
        break;
      case In::kLiteral:
        if (c == '\'') in = In::kCode;
        break;
      case In::kMultiBasic:
        if (c == '\\')
          ++i, ++column;
        else if (next("\"\"\""))
          in = In::kCode, i += 2, column += 2;
        break;
      case In::kMultiLiteral:
        if (next("\'\'\'")) in = In::kCode, i += 2, column += 2;
        break;
    }
  }
  return std::nullopt;
}

// The document's root table, or kInvalidInput naming `origin`, the line and the column.
inline Result<toml::table> parse_toml(std::string_view text, const std::string& origin) {
  if (const auto at = toml_non_ascii_outside_strings(text))
    return Status::invalid_input(fmt::format(
        "{}:{}: a non-ASCII character outside a quoted string or a comment (TOML keys and values "
        "other than strings are ASCII: quote it)",
        origin, *at));
  toml::parse_result parsed = toml::parse(text, origin);
  if (!parsed) {
    const auto& err = parsed.error();
    return Status::invalid_input(fmt::format("{}:{}:{}: {}", origin, err.source().begin.line,
                                             err.source().begin.column, err.description()));
  }
  return std::move(parsed).table();
}

}  // namespace gpuvet
