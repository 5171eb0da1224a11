// core/toml_document.h — gpuvet's TOML files (the configuration, baselines, acks, advise
// workloads) parsed one way: toml++ without exceptions, a syntax error said as
// "FILE:LINE:COLUMN: what". Every reader of a TOML file includes this instead of toml++.
#pragma once

#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "gpuvet/status.h"

namespace gpuvet {

// The document's root table, or kInvalidInput naming `origin`, the line and the column.
inline Result<toml::table> parse_toml(std::string_view text, const std::string& origin) {
  toml::parse_result parsed = toml::parse(text, origin);
  if (!parsed) {
    const auto& err = parsed.error();
    return Status::invalid_input(fmt::format("{}:{}:{}: {}", origin, err.source().begin.line,
                                             err.source().begin.column, err.description()));
  }
  return std::move(parsed).table();
}

}  // namespace gpuvet
