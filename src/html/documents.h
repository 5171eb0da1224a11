// html/documents.h — the JSON documents `gpuvet report --html` reads, recognised by their
// content, and tolerant reads of their fields (a key of the wrong type reads as absent, so a
// document from another version draws what it can instead of stopping the page). Internal to
// src/html; pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuvet/status.h"

namespace gpuvet::html {

using json = nlohmann::ordered_json;

enum class DocumentKind {
  kDiagnose,     // gpuvet.report/1 with findings (diagnose --json)
  kFacts,        // gpuvet.report/1 without (facts --json)
  kWatchRecord,  // gpuvet.report/1 written by watch --record (tool.command "watch")
  kGate,         // gpuvet.gate/1
  kBench,        // gpuvet.bench/1
  kScale,        // gpuvet.scale/1
  kWatchLines,   // gpuvet.watch/1 JSON lines (watch --json)
};

// "diagnose --json (gpuvet.report/1)" and the like, for the page's list of inputs.
std::string document_kind_description(DocumentKind kind);

struct Document {
  std::string name;
  DocumentKind kind = DocumentKind::kDiagnose;
  // The document; for watch lines an object of the same shape as a recording's series:
  // {"samples": [GPU samples], "host_samples": [...], "findings": [the verdict's],
  //  "notes": [...], "watched_s": …}.
  json doc;
};

// kInvalidInput naming `name`: empty, not JSON (with the parser's position), JSON of no
// schema the report draws.
Result<Document> recognise_document(const std::string& name, std::string_view text);

// Tolerant field reads: nullptr / nullopt / "" / an empty array when the key is missing, null
// or of another type.
const json* member(const json& object, std::string_view key);
std::optional<double> number(const json& object, std::string_view key);
std::string text(const json& object, std::string_view key);
const json& array(const json& object, std::string_view key);
// The GPU pairs a report/1 document holds, listed or as its "pair_matrix".
std::size_t pair_count(const json& facts);

}  // namespace gpuvet::html
