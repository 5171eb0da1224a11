// html/documents.cc — recognising the inputs of the HTML report.
#include "html/documents.h"

#include <fmt/format.h>

#include "core/util.h"

namespace gpuvet::html {

namespace {

const json kEmptyArray = json::array();

std::string schema_of(const json& doc) { return doc.is_object() ? text(doc, "schema") : ""; }

// The refusal of a JSON value that is no document the report draws.
Status not_drawn(const std::string& name, const json& doc) {
  const std::string schema = schema_of(doc);
  if (schema == "gpuvet.fleet/1")
    return Status::invalid_input(name +
                                 ": a gpuvet.fleet/1 report is not drawn by report --html (gpuvet "
                                 "fleet report prints it); give the node reports instead");
  if (!schema.empty())
    return Status::invalid_input(
        fmt::format("{}: schema \"{}\" is not one report --html draws (gpuvet.report/1, "
                    "gpuvet.gate/1, gpuvet.bench/1, gpuvet.scale/1, gpuvet.watch/1 lines)",
                    name, schema.substr(0, 80)));
  return Status::invalid_input(
      name +
      ": JSON without a \"schema\" key: not a gpuvet document (give "
      "the output of gpuvet diagnose, gate, bench, scale or watch --json)");
}

// watch --json: one interval object per line, then the verdict.
Result<Document> watch_lines(const std::string& name, std::string_view text_in) {
  json samples = json::array(), host = json::array(), findings = json::array(),
       notes = json::array();
  std::optional<double> watched;
  std::size_t line_no = 0, start = 0;
  while (start < text_in.size()) {
    std::size_t end = text_in.find('\n', start);
    if (end == std::string_view::npos) end = text_in.size();
    const std::string_view line = text_in.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    json v = json::parse(line, nullptr, false);
    if (v.is_discarded() || schema_of(v) != "gpuvet.watch/1")
      return Status::invalid_input(
          fmt::format("{}: line {} is not a gpuvet.watch/1 object (watch --json writes one "
                      "per line)",
                      name, line_no));
    const std::string type = text(v, "type");
    if (type == "interval") {
      for (const auto& g : array(v, "gpus"))
        if (g.is_object()) samples.push_back(g);
      if (const json* h = member(v, "host"); h && h->is_object()) host.push_back(*h);
    } else if (type == "verdict") {
      for (const auto& f : array(v, "findings")) findings.push_back(f);
      for (const auto& n : array(v, "notes")) notes.push_back(n);
      watched = number(v, "watched_s");
    }
  }
  Document d{name, DocumentKind::kWatchLines, json::object()};
  d.doc["samples"] = std::move(samples);
  d.doc["host_samples"] = std::move(host);
  d.doc["findings"] = std::move(findings);
  d.doc["notes"] = std::move(notes);
  d.doc["watched_s"] = watched ? json(*watched) : json(nullptr);
  return d;
}

}  // namespace

std::string document_kind_description(DocumentKind kind) {
  switch (kind) {
    case DocumentKind::kDiagnose:
      return "diagnose --json (gpuvet.report/1)";
    case DocumentKind::kFacts:
      return "facts --json (gpuvet.report/1)";
    case DocumentKind::kWatchRecord:
      return "watch --record (gpuvet.report/1 with its series)";
    case DocumentKind::kGate:
      return "gate --json (gpuvet.gate/1)";
    case DocumentKind::kBench:
      return "bench --json (gpuvet.bench/1)";
    case DocumentKind::kScale:
      return "scale --json (gpuvet.scale/1)";
    case DocumentKind::kWatchLines:
      return "watch --json lines (gpuvet.watch/1)";
  }
  return "?";
}

Result<Document> recognise_document(const std::string& name, std::string_view input) {
  if (input.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return Status::invalid_input(name + ": empty (expected a gpuvet JSON document)");
  json doc;
  try {
    doc = json::parse(input);
  } catch (const json::exception& e) {  // parse errors, and numbers out of range (1e999)
    // Several objects, one per line: watch --json.
    if (input.find("\"gpuvet.watch/1\"") != std::string_view::npos) return watch_lines(name, input);
    std::string why = e.what();
    if (const auto colon = why.find("] "); colon != std::string::npos) why = why.substr(colon + 2);
    return Status::invalid_input(fmt::format("{}: not JSON ({})", name, why.substr(0, 200)));
  }
  if (!doc.is_object()) return not_drawn(name, doc);
  const std::string schema = schema_of(doc);
  if (schema == "gpuvet.watch/1") return watch_lines(name, input);
  Document d{name, DocumentKind::kDiagnose, std::move(doc)};
  if (schema == "gpuvet.report/1") {
    const json* tool = member(d.doc, "tool");
    const bool watch = tool && tool->is_object() && text(*tool, "command") == "watch";
    if (watch)
      d.kind = DocumentKind::kWatchRecord;
    else if (!member(d.doc, "findings"))
      d.kind = DocumentKind::kFacts;
    return d;
  }
  if (schema == "gpuvet.gate/1") return d.kind = DocumentKind::kGate, d;
  if (schema == "gpuvet.bench/1") return d.kind = DocumentKind::kBench, d;
  if (schema == "gpuvet.scale/1") return d.kind = DocumentKind::kScale, d;
  return not_drawn(name, d.doc);
}

const json* member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number(const json& object, std::string_view key) {
  const json* v = member(object, key);
  if (!v || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::string text(const json& object, std::string_view key) {
  const json* v = member(object, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

const json& array(const json& object, std::string_view key) {
  const json* v = member(object, key);
  return v && v->is_array() ? *v : kEmptyArray;
}

std::size_t pair_count(const json& facts) {
  const json& listed = array(facts, "pairs");
  if (!listed.empty()) return listed.size();
  // A big node's pairs as a matrix (core/pair_matrix.h): the cells of the upper triangle that
  // hold a path.
  const json* m = member(facts, "pair_matrix");
  if (!m || !m->is_object()) return 0;
  std::size_t n = 0, row = 0;
  for (const auto& r : array(*m, "path")) {
    if (!r.is_string()) continue;
    std::size_t column = 0;
    for (const auto cell : split(r.get_ref<const std::string&>(), ' '))
      n += column++ > row && cell != "-";
    ++row;
  }
  return n;
}

}  // namespace gpuvet::html
