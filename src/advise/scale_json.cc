// What `gpuvet advise` takes from a saved `gpuvet scale --json` (gpuvet.scale/1): the GEMM rate
// this GPU reached, the share of the all-reduce the step hid under compute, and the spread of
// step or request times.
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/small_file.h"
#include "gpuvet/advise.h"

namespace gpuvet {
namespace {

std::optional<double> positive(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

}  // namespace

Result<ScaleEvidence> scale_evidence_json(std::string_view json_text, std::string_view origin) {
  using nlohmann::json;
  const json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return Status::invalid_input(fmt::format("{}: not a JSON object", origin));
  const auto schema = doc.value("schema", std::string());
  if (schema != "gpuvet.scale/1")
    return Status::invalid_input(
        fmt::format("{}: schema '{}' is not gpuvet.scale/1 (the output of gpuvet scale --json)",
                    origin, schema));
  const auto results = doc.find("results");
  if (results == doc.end() || !results->is_array())
    return Status::invalid_input(fmt::format("{}: no results array", origin));
  ScaleEvidence e;
  e.origin = std::string(origin);
  e.peak_tflops = positive(doc, "peak_tflops");
  int overlap_gpus = 0;
  for (const auto& r : *results) {
    if (!r.is_object()) continue;
    if (const auto err = r.find("error"); err != r.end() && err->is_string()) continue;
    const std::string workload = r.value("workload", std::string());
    const std::string preset = r.value("preset", std::string());
    const auto gpus_it = r.find("gpus");
    if (gpus_it == r.end() || !gpus_it->is_number_integer()) continue;
    const int gpus = gpus_it->get<int>();
    if (gpus < 1) continue;
    if (workload == "train" && gpus == 1)
      if (const auto t = positive(r, "achieved_tflops");
          t && *t > 0 && *t > e.gemm_tflops.value_or(0)) {
        e.gemm_tflops = t;
        e.gemm_preset = preset;
      }
    if (workload == "train" && gpus > 1 && gpus >= overlap_gpus) {
      const auto comm = positive(r, "comm_ms");
      const auto exposed = positive(r, "exposed_comm_ms");
      if (comm && exposed && *comm > 0) {
        e.overlap = std::clamp(1.0 - *exposed / *comm, 0.0, 1.0);
        e.overlap_gpus = gpus;
        overlap_gpus = gpus;
      }
    }
    const auto p50 = positive(r, "p50_ms");
    const auto p99 = positive(r, "p99_ms");
    if ((workload == "train" || workload == "infer") && p50 && p99 && *p50 > 0)
      e.spreads.push_back({workload, preset, gpus, std::max(1.0, *p99 / *p50)});
  }
  // Inference first: a request's spread is what a latency target is about.
  std::stable_sort(e.spreads.begin(), e.spreads.end(), [](const auto& a, const auto& b) {
    return (a.workload == "infer") > (b.workload == "infer");
  });
  if (!e.gemm_tflops && !e.peak_tflops && !e.overlap && e.spreads.empty())
    return Status::invalid_input(fmt::format(
        "{}: no configuration that ran (no TFLOP/s, overlap or step times to use)", origin));
  return e;
}

Result<ScaleEvidence> read_scale_evidence_file(const std::string& path) {
  auto text = read_small_file(path, std::size_t{64} << 20, "scale file");
  if (!text.is_ok()) return text.status();
  return scale_evidence_json(text.value(), path);
}

}  // namespace gpuvet
