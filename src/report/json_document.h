// report/json_document.h — the facts part of the gpuvet.report/1 document as a JSON value,
// so the diagnosis report can add its keys to the same object. Internal to src/report.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"
#include "gpuvet/report.h"

namespace gpuvet::report {

nlohmann::ordered_json facts_document(const Facts& facts, const JsonOptions& options);

// The text of a gpuvet JSON document: invalid UTF-8 replaced, and no control character
// raw (DEL and C1 escaped as well as C0), so the JSON is as safe on a terminal as the text.
// One finding as the "findings" arrays show it (catalog title, meaning, decision and action
// added; each GPU its subjects name with the UUID and bus id `facts` have for it).
nlohmann::ordered_json finding_json(const Finding& f, const Facts& facts);
// The same without facts: the GPUs' UUIDs and bus ids are null.
nlohmann::ordered_json finding_json(const Finding& f);
// A "findings" array: finding_json of each, in order.
nlohmann::ordered_json findings_json(const std::vector<Finding>& findings, const Facts& facts);

// A time series the way report/1 writes it (one object per sample, keys from fields()).
nlohmann::ordered_json samples_json(const std::vector<GpuSample>& samples);
nlohmann::ordered_json host_samples_json(const std::vector<HostSample>& samples);

std::string dump_document(const nlohmann::ordered_json& doc, int indent);

// An optional as JSON: its value, or null.
template <class T>
nlohmann::ordered_json opt(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace gpuvet::report
