// gate/gate_config.cc — the [gate] table of gpuvet's configuration file. The same file's
// [thresholds] table is the rules' (rules/thresholds.cc); each reader checks its own table.
#include "core/toml_document.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/small_file.h"
#include "gpuvet/gate.h"

namespace gpuvet {

Result<GateConfig> parse_gate_config(std::string_view toml_text, const std::string& origin) {
  auto parsed = parse_toml(toml_text, origin);
  if (!parsed.is_ok()) return parsed.status();
  GateConfig c;
  const toml::node_view gate = parsed.value()["gate"];
  if (!gate) return c;
  const toml::table* table = gate.as_table();
  if (!table) return Status::invalid_input(fmt::format("{}: 'gate' must be a table", origin));
  struct Key {
    const char* name;
    std::optional<std::string> GateConfig::*field;
    std::vector<std::string_view> allowed;  // empty: any text
  };
  const Key keys[] = {
      {"baseline", &GateConfig::baseline, {}},
      {"profile", &GateConfig::profile, {"quick", "full"}},
      {"exit_style", &GateConfig::exit_style, {"gpuvet", "nagios", "npd", "slurm"}},
      {"fail_on", &GateConfig::fail_on, {"warning", "critical"}},
  };
  for (const auto& [key, node] : *table) {
    const Key* k = nullptr;
    for (const auto& candidate : keys)
      if (key.str() == candidate.name) k = &candidate;
    if (!k)
      return Status::invalid_input(
          fmt::format("{}: unknown key '{}' in [gate] (baseline, profile, exit_style, fail_on)",
                      origin, key.str()));
    const auto* text = node.as_string();
    if (!text || text->get().empty())
      return Status::invalid_input(
          fmt::format("{}: [gate] {} must be a non-empty string", origin, key.str()));
    const std::string value = text->get();
    if (!k->allowed.empty() &&
        std::find(k->allowed.begin(), k->allowed.end(), value) == k->allowed.end())
      return Status::invalid_input(fmt::format("{}: [gate] {} = \"{}\": expected one of {}", origin,
                                               key.str(), value, fmt::join(k->allowed, ", ")));
    c.*(k->field) = value;
  }
  return c;
}

Result<GateConfig> load_gate_config(const std::string& path) {
  auto text = read_small_file(path, std::size_t{1} << 20, "configuration file");
  if (!text.is_ok()) return text.status();
  return parse_gate_config(text.value(), path);
}

}  // namespace gpuvet
