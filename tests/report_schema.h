// tests/report_schema.h — the JSON Schema of gpuvet.report/1, built from the code that writes
// the document: the facts part from core/facts_fields.h (every struct's fields() with their
// C++ types), the diagnose part (findings, symptoms, verdict) from the enums and the shape
// report/diagnosis.cc writes. docs/schema/gpuvet.report-1.schema.json is this, dumped; the
// report_schema test fails when the file is not current (GPUVET_UPDATE_SCHEMA=1 rewrites it).
// Test-only.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/facts_fields.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"

namespace gpuvet::test {

using ojson = nlohmann::ordered_json;

// "gpuvet::GpuFacts" → "GpuFacts".
template <class T>
std::string struct_name() {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status), std::free);
  std::string n = status == 0 && d ? d.get() : typeid(T).name();
  if (auto p = n.rfind("::"); p != std::string::npos) n = n.substr(p + 2);
  return n;
}

inline ojson nullable(ojson s) {
  if (s.contains("type") && s["type"].is_string() && s.size() == 1)
    return {{"type", {s["type"], "null"}}};
  if (s.contains("enum")) {
    s["enum"].push_back(nullptr);
    return s;
  }
  return {{"anyOf", {s, {{"type", "null"}}}}};
}

class SchemaBuilder;

// Visits one struct's fields() and collects its properties.
class SchemaWriter {
 public:
  SchemaWriter(SchemaBuilder& b, ojson& props) : b_(b), props_(props) {}
  template <class T>
  void operator()(std::string_view key, const T& value);
  template <class T>
  void operator()(std::string_view key, const T& value, FieldTag) {
    (*this)(key, value);
  }
  void operator()(std::string_view key, const std::vector<int>&, IdList) {
    props_[std::string(key)] = {{"type", {"string", "null"}},
                                {"description", "ids as \"0-15,32\"; null when not known"}};
  }
  void operator()(std::string_view key, const std::vector<int>&, IdListOrEmpty) {
    props_[std::string(key)] = {{"type", "string"},
                                {"description", "ids as \"0-15,32\"; \"\" when there are none"}};
  }
  void operator()(std::string_view key, const KernelLog& log);
  template <class Fn>
  void nested(std::string_view key, Fn&& fn);

 private:
  SchemaBuilder& b_;
  ojson& props_;
};

class SchemaBuilder {
 public:
  ojson defs = ojson::object();

  template <class T>
  ojson of() {
    if constexpr (std::is_same_v<T, bool>) {
      return {{"type", "boolean"}};
    } else if constexpr (std::is_integral_v<T>) {
      return {{"type", "integer"}};
    } else if constexpr (std::is_floating_point_v<T>) {
      return {{"type", "number"}};
    } else if constexpr (std::is_same_v<T, std::string>) {
      return {{"type", "string"}};
    } else if constexpr (std::is_same_v<T, P2PStatus>) {
      ojson e = ojson::array();
      for (int i = 0; i <= static_cast<int>(P2PStatus::kUnknown); ++i)
        e.push_back(p2p_status_code(static_cast<P2PStatus>(i)));
      return {{"enum", e}};
    } else if constexpr (std::is_same_v<T, PathType>) {
      return {{"type", "string"},
              {"description", "PIX, PXB, PHB, NODE, SYS, X, NV<links> (\"NV\" when unknown)…"}};
    } else if constexpr (kIsOptional<T>) {
      return nullable(of<typename T::value_type>());
    } else if constexpr (kIsNamedList<T> || kIsMap<T>) {
      return {{"type", "object"},
              {"additionalProperties", of<typename T::value_type::second_type>()}};
    } else if constexpr (kIsVector<T>) {
      return {{"type", "array"}, {"items", of<typename T::value_type>()}};
    } else if constexpr (Described<T>) {
      const std::string name = struct_name<T>();
      if (!defs.contains(name)) {
        defs[name] = ojson::object();  // placeholder against recursion
        defs[name] = object_of<T>();
      }
      return {{"$ref", "#/$defs/" + name}};
    } else {
      static_assert(sizeof(T) == 0, "a fact type the schema does not know");
    }
  }

  // The object schema of a struct: each key of its fields(), all required (the writer
  // writes every key, null when unknown); later versions may add keys.
  template <class T>
  ojson object_of() {
    ojson props = ojson::object();
    SchemaWriter w(*this, props);
    T value{};
    fields(w, value);
    if constexpr (std::is_same_v<T, GpuPair>) {
      props["subject"] = {{"type", "string"}, {"pattern", "^GPU[0-9]+-GPU[0-9]+$"}};
    }
    return object_from(std::move(props));
  }

  static ojson object_from(ojson props) {
    ojson req = ojson::array();
    for (const auto& [k, v] : props.items()) req.push_back(k);
    return {{"type", "object"}, {"properties", std::move(props)}, {"required", std::move(req)}};
  }
};

template <class T>
void SchemaWriter::operator()(std::string_view key, const T&) {
  props_[std::string(key)] = b_.of<T>();
}

// report/1 writes the Xids beside the kernel log, not in it (report/json.cc).
inline void SchemaWriter::operator()(std::string_view key, const KernelLog&) {
  ojson k = b_.object_of<KernelLog>();
  ojson xids = k["properties"]["xids"];
  k["properties"].erase("xids");
  ojson req = ojson::array();
  for (const auto& r : k["required"])
    if (r != "xids") req.push_back(r);
  k["required"] = req;
  b_.defs["KernelLog"] = k;
  props_[std::string(key)] = {{"$ref", "#/$defs/KernelLog"}};
  props_["xids"] = xids;
}

template <class Fn>
void SchemaWriter::nested(std::string_view key, Fn&& fn) {
  ojson props = ojson::object();
  SchemaWriter in(b_, props);
  fn(in);
  props_[std::string(key)] = SchemaBuilder::object_from(std::move(props));
}

inline ojson enum_of(std::initializer_list<const char*> names) {
  ojson e = ojson::array();
  for (const char* n : names) e.push_back(n);
  return {{"enum", e}};
}

inline ojson string_enum(const std::vector<std::string>& v) { return {{"enum", v}}; }

// The whole gpuvet.report/1 schema (facts --json and diagnose --json).
inline ojson report_schema() {
  SchemaBuilder b;
  ojson props = ojson::object();
  props["schema"] = {{"const", "gpuvet.report/1"}};
  props["tool"] = {{"type", "object"},
                   {"properties",
                    {{"name", {{"const", "gpuvet"}}},
                     {"version", {{"type", "string"}}},
                     {"command", {{"type", "string"}}}}},
                   {"required", {"name", "version", "command"}}};
  {
    SchemaWriter w(b, props);
    Facts f;
    fields(w, f);
  }
  ojson required = ojson::array();
  for (const auto& [k, v] : props.items()) required.push_back(k);
  // Past kPairsListed pairs "pairs" is empty and this holds them (core/pair_matrix.h); absent
  // on smaller nodes, so not required.
  const ojson rows = {{"type", "array"}, {"items", {{"type", "string"}}}};
  props["pair_matrix"] = {
      {"type", "object"},
      {"description",
       "the pairs of a node with more than 2016 of them, as rows of space-separated cells"},
      {"properties",
       {{"gpus", {{"type", "array"}, {"items", {{"type", "integer"}}}}},
        {"path", rows},
        {"p2p", {{"type", "object"}, {"additionalProperties", rows}}}}},
      {"required", {"gpus", "path", "p2p"}}};

  std::vector<std::string> bottlenecks, severities, actions, steps;
  for (int i = 0; i <= static_cast<int>(Bottleneck::kMemory); ++i)
    bottlenecks.push_back(bottleneck_name(static_cast<Bottleneck>(i)));
  for (Severity s : {Severity::kOk, Severity::kInfo, Severity::kWarning, Severity::kCritical})
    severities.push_back(severity_name(s));
  for (int i = static_cast<int>(Action::kNone); i <= static_cast<int>(Action::kFixApplication); ++i)
    actions.push_back(action_name(static_cast<Action>(i)));
  for (int i = 1; i <= 5; ++i) steps.push_back(triage_step_name(static_cast<TriageStep>(i)));
  steps.push_back("unknown");
  std::vector<std::string> bounds;
  for (Bound x : {Bound::kAtLeast, Bound::kAtMost, Bound::kExactly})
    bounds.push_back(bound_name(x));

  const ojson str = {{"type", "string"}};
  const ojson value = {{"type", "object"},
                       {"description", "a number the rule compared"},
                       {"properties",
                        {{"quantity", {{"type", "string"}, {"pattern", "^[a-z0-9_]+$"}}},
                         {"value", {{"type", "number"}}},
                         {"unit", str}}},
                       {"required", {"quantity", "value", "unit"}}};
  ojson expected = value;
  expected["description"] = "what the rule accepts: the least, the most, or the exact value";
  expected["properties"]["bound"] = string_enum(bounds);
  expected["required"].push_back("bound");

  b.defs["FindingGpu"] = {
      {"type", "object"},
      {"description", "a GPU a finding's subjects name, with its identity (null when not known)"},
      {"properties",
       {{"index", {{"type", {"integer", "null"}}, {"minimum", 0}}},
        {"uuid", {{"type", {"string", "null"}}}},
        {"pci_bus_id",
         {{"type", {"string", "null"}},
          {"pattern", "^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]$"}}}}},
      {"required", {"index", "uuid", "pci_bus_id"}}};
  b.defs["Finding"] = {
      {"type", "object"},
      {"properties",
       {{"id", {{"type", "string"}, {"pattern", "^[a-z0-9]+(-[a-z0-9]+)*$"}}},
        {"severity", string_enum(severities)},
        {"title", str},
        {"category", str},
        {"step", string_enum(steps)},
        {"subjects", {{"type", "array"}, {"items", str}}},
        {"evidence", str},
        {"meaning", str},
        {"decision", str},
        {"decision_note", {{"type", {"string", "null"}}}},
        {"bottleneck", string_enum(bottlenecks)},
        {"article", str},
        {"gpus", {{"type", "array"}, {"items", {{"$ref", "#/$defs/FindingGpu"}}}}},
        {"observed", nullable(value)},
        {"expected", nullable(expected)},
        {"action", string_enum(actions)},
        {"fault", {{"type", {"string", "null"}}, {"pattern", "^[a-z0-9]+(-[a-z0-9]+)*$"}}}}},
      {"required",
       {"id", "severity", "title", "category", "step", "subjects", "evidence", "meaning",
        "decision", "decision_note", "bottleneck", "article", "gpus", "observed", "expected",
        "action"}}};
  b.defs["Symptom"] = {{"type", "object"},
                       {"properties",
                        {{"id", str},
                         {"title", str},
                         {"root_cause", str},
                         {"fix", str},
                         {"article", str},
                         {"because", {{"type", "array"}, {"items", str}}}}},
                       {"required", {"id", "title", "root_cause", "fix", "article", "because"}}};

  props["findings"] = {{"type", "array"}, {"items", {{"$ref", "#/$defs/Finding"}}}};
  props["bottleneck"] = string_enum(bottlenecks);
  props["bottleneck_reason"] = str;
  props["symptoms"] = {{"type", "array"}, {"items", {{"$ref", "#/$defs/Symptom"}}}};
  props["verdict"] = string_enum(severities);
  props["exit_code"] = {{"enum", {0, 1, 2, 3}}};
  props["coverage"] = {{"type", "array"},
                       {"items", {{"type", "object"}}},
                       {"description", "which checks ran on what evidence (diagnose)"}};

  return {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"title", "gpuvet.report/1"},
      {"description",
       "The document of `gpuvet facts --json` and `gpuvet diagnose --json` (docs/json-schema.md). "
       "Generated from the code that writes it (tests/report_schema.h); do not edit by hand. Keys "
       "are added over versions, never renamed or removed: objects allow keys this version does "
       "not list."},
      {"type", "object"},
      {"properties", props},
      {"required", required},
      {"dependentRequired",
       {{"findings", {"bottleneck", "bottleneck_reason", "symptoms", "verdict", "exit_code"}}}},
      {"$defs", b.defs},
  };
}

}  // namespace gpuvet::test
