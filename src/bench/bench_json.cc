// src/bench/bench_json.cc — a saved `gpuvet bench --json` (gpuvet.bench/1) read back into the
// report it was written from, and into the measurements the rules and floors judge.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/small_file.h"
#include "gpuvet/bench.h"

namespace gpuvet {

Result<std::vector<Measurement>> bench_json_measurements(std::string_view json_text,
                                                         std::string_view origin) {
  using nlohmann::json;
  const json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return Status::invalid_input(fmt::format("{}: not a JSON object", origin));
  const auto schema = doc.value("schema", std::string());
  if (schema != "gpuvet.bench/1")
    return Status::invalid_input(
        fmt::format("{}: schema '{}' is not gpuvet.bench/1 (the output of gpuvet bench --json)",
                    origin, schema));
  BenchReport report;
  const auto results = doc.find("results");
  if (results == doc.end() || !results->is_array())
    return Status::invalid_input(fmt::format("{}: no results array", origin));
  const auto strings = [](const json& j, const char* key) {
    std::vector<std::string> v;
    if (auto it = j.find(key); it != j.end() && it->is_array())
      for (const auto& e : *it)
        if (e.is_string()) v.push_back(e.get<std::string>());
    return v;
  };
  const auto ints = [](const json& j, const char* key) {
    std::vector<int> v;
    if (auto it = j.find(key); it != j.end() && it->is_array())
      for (const auto& e : *it) v.push_back(e.is_number_integer() ? e.get<int>() : -1);
    return v;
  };
  for (const auto& r : *results) {
    if (!r.is_object()) continue;
    BenchMatrix m;
    m.key = r.value("key", std::string());
    m.unit = r.value("unit", std::string());
    m.rows = strings(r, "rows");
    m.cols = strings(r, "cols");
    m.row_gpu = ints(r, "row_gpu");
    m.col_gpu = ints(r, "col_gpu");
    if (auto s = r.find("size_bytes"); s != r.end() && s->is_number_unsigned())
      m.size_bytes = s->get<std::uint64_t>();
    if (auto s = r.find("skipped"); s != r.end() && s->is_string())
      m.skipped = s->get<std::string>();
    if (auto e = r.find("error"); e != r.end() && e->is_string()) m.error = e->get<std::string>();
    if (auto cells = r.find("cells"); cells != r.end() && cells->is_array()) {
      for (const auto& row : *cells) {
        std::vector<BenchCell> out_row;
        if (row.is_array())
          for (const auto& c : row) {
            BenchCell cell;
            if (c.is_object()) {
              if (auto v = c.find("value"); v != c.end() && v->is_number()) {
                const double x = v->get<double>();
                if (std::isfinite(x) && x >= 0) cell.value = x;
              }
              if (auto e = c.find("error"); e != c.end() && e->is_string())
                cell.error = e->get<std::string>();
              cell.via_host = c.value("via_host", false);
              if (auto w = c.find("wrong_data"); w != c.end() && w->is_boolean())
                cell.wrong_data = w->get<bool>();
              else if (cell.error)  // written before the field: the error text says it
                cell.wrong_data =
                    cell.error->starts_with("wrong data") || cell.error->ends_with(" wrong values");
            }
            out_row.push_back(std::move(cell));
          }
        m.cells.push_back(std::move(out_row));
      }
    }
    report.results.push_back(std::move(m));
  }
  // The truth table's peer copies: bench_measurements keeps those whose data came back wrong.
  if (auto truth = doc.find("p2p_truth"); truth != doc.end() && truth->is_array())
    for (const auto& t : *truth) {
      if (!t.is_object()) continue;
      P2PTruth x;
      const std::string subject = t.value("subject", std::string());
      if (std::sscanf(subject.c_str(), "GPU%d-GPU%d", &x.a, &x.b) != 2 || x.a < 0 || x.b < 0)
        continue;
      if (auto v = t.find("copy_verified"); v != t.end() && v->is_boolean())
        x.copy_verified = v->get<bool>();
      if (auto v = t.find("copy_gbps"); v != t.end() && v->is_number()) {
        const double g = v->get<double>();
        if (std::isfinite(g) && g >= 0) x.copy_gbps = g;
      }
      if (auto v = t.find("enable_error"); v != t.end() && v->is_string())
        x.enable_error = v->get<std::string>();
      report.p2p_truth.push_back(std::move(x));
    }
  return bench_measurements(report);
}

Result<std::vector<Measurement>> read_bench_json_file(const std::string& path) {
  auto text = read_small_file(path, std::size_t{64} << 20, "bench file");
  if (!text.is_ok()) return text.status();
  return bench_json_measurements(text.value(), path);
}

}  // namespace gpuvet
