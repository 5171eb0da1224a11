// The Prometheus text exposition format (version 0.0.4) of a MetricsSnapshot.
//
// Every family is written in one block: # HELP, # TYPE, then its samples, and a family with
// no sample is left out entirely (so a reading no GPU knows leaves no empty family behind).
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/util.h"
#include "export/clock_reasons.h"
#include "gpuvet/prometheus.h"

namespace gpuvet {

// Label values and HELP text are UTF-8 in the exposition format: one byte that is not makes the
// whole scrape unparsable (E7), so invalid sequences become U+FFFD first.
std::string escape_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : valid_utf8(value)) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string dcgm_pci_bus_id(const std::string& bdf) {
  // gpuvet normalises to a 4-digit domain in lower case; NVML (and so DCGM) print 8 digits
  // in upper case: "00000000:18:00.0".
  std::string out = bdf;
  const auto colon = out.find(':');
  if (colon != std::string::npos && colon < 8 && out.find(':', colon + 1) != std::string::npos)
    out.insert(0, 8 - colon, '0');
  for (char& c : out)
    if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// HELP text escapes backslash and newline (not quotes).
std::string escape_help(const std::string& text) {
  std::string out;
  for (char c : valid_utf8(text)) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

class Family {
 public:
  Family(std::string name, std::string type, std::string help)
      : name_(std::move(name)), type_(std::move(type)), help_(std::move(help)) {}

  void add(const Labels& labels, const std::string& value) {
    body_ += name_;
    if (!labels.empty()) {
      body_ += '{';
      bool first = true;
      for (const auto& [k, v] : labels) {
        if (!first) body_ += ',';
        first = false;
        body_ += k;
        body_ += "=\"";
        body_ += escape_label_value(v);
        body_ += '"';
      }
      body_ += '}';
    }
    body_ += ' ';
    body_ += value;
    body_ += '\n';
  }
  void add(const Labels& labels, double v) { add(labels, format_value(v)); }
  void add_count(const Labels& labels, std::uint64_t v) { add(labels, std::to_string(v)); }

  void write(std::string& out) const {
    if (body_.empty()) return;
    out += "# HELP " + name_ + " " + escape_help(help_) + "\n";
    out += "# TYPE " + name_ + " " + type_ + "\n";
    out += body_;
  }

 private:
  std::string name_, type_, help_, body_;
};

// dcgm-exporter's per-GPU labels, in its order; unknown values are left out.
Labels gpu_labels(const MetricsSnapshot& s, const GpuMetrics& g) {
  Labels l;
  l.emplace_back("gpu", std::to_string(g.index));
  if (g.uuid) l.emplace_back("UUID", *g.uuid);
  if (g.pci_bus_id) l.emplace_back("pci_bus_id", dcgm_pci_bus_id(*g.pci_bus_id));
  l.emplace_back("device", fmt::format("nvidia{}", g.index));
  if (g.model_name) l.emplace_back("modelName", *g.model_name);
  if (s.hostname) l.emplace_back("hostname", *s.hostname);
  if (s.driver_version) l.emplace_back("DCGM_FI_DRIVER_VERSION", *s.driver_version);
  return l;
}

Labels with(Labels l, std::string key, std::string value) {
  l.emplace_back(std::move(key), std::move(value));
  return l;
}

Labels node_labels(const MetricsSnapshot& s) {
  Labels l;
  if (s.hostname) l.emplace_back("hostname", *s.hostname);
  return l;
}

struct GaugeField {
  const char* name;
  const char* help;
  std::optional<double> GpuMetrics::*field;
};

struct IntField {
  const char* name;
  const char* type;
  const char* help;
  std::optional<int> GpuMetrics::*field;
};

struct CountField {
  const char* name;
  const char* type;
  const char* help;
  std::optional<std::uint64_t> GpuMetrics::*field;
};

}  // namespace

std::string render_prometheus(const MetricsSnapshot& s) {
  std::string out;

  Family build("gpuvet_build_info", "gauge", "gpuvet's version (always 1)");
  build.add({{"version", s.version}}, 1.0);
  build.write(out);

  const Labels node = node_labels(s);
  if (s.collected_unix) {
    Family f("gpuvet_last_collect_timestamp_seconds", "gauge",
             "Wall clock (Unix seconds) when these readings were taken");
    f.add(node, *s.collected_unix);
    f.write(out);
  }
  if (s.collect_duration_s) {
    Family f("gpuvet_collect_duration_seconds", "gauge",
             "How long the collection behind these readings took");
    f.add(node, *s.collect_duration_s);
    f.write(out);
  }
  if (s.gpus_visible) {
    Family f("gpuvet_gpus_visible", "gauge", "GPUs the driver listed");
    f.add(node, *s.gpus_visible);
    f.write(out);
    Family u("gpuvet_gpus_unresponsive", "gauge",
             "GPUs that stopped answering during the collection");
    int n = 0;
    for (const auto& g : s.gpus) n += g.unresponsive ? 1 : 0;
    u.add(node, n);
    u.write(out);
  }
  if (s.gpus_expected) {
    Family f("gpuvet_gpus_expected", "gauge", "GPUs this node must have (--expect-gpus)");
    f.add(node, *s.gpus_expected);
    f.write(out);
  }

  static const GaugeField kGauges[] = {
      {"gpuvet_gpu_sm_clock_hertz", "SM clock", &GpuMetrics::sm_clock_hz},
      {"gpuvet_gpu_sm_clock_max_hertz", "Highest SM clock the GPU supports",
       &GpuMetrics::sm_clock_max_hz},
      {"gpuvet_gpu_memory_clock_hertz", "Memory clock", &GpuMetrics::memory_clock_hz},
      {"gpuvet_gpu_memory_clock_max_hertz", "Highest memory clock the GPU supports",
       &GpuMetrics::memory_clock_max_hz},
      {"gpuvet_gpu_temperature_celsius", "GPU core temperature", &GpuMetrics::temperature_c},
      {"gpuvet_gpu_memory_temperature_celsius", "GPU memory (HBM) temperature",
       &GpuMetrics::memory_temperature_c},
      {"gpuvet_gpu_thermal_margin_celsius",
       "Degrees left before the GPU slows down for temperature (T.Limit)",
       &GpuMetrics::thermal_margin_c},
      {"gpuvet_gpu_slowdown_temperature_celsius", "Temperature at which the GPU slows down",
       &GpuMetrics::slowdown_temperature_c},
      {"gpuvet_gpu_power_watts", "Power draw", &GpuMetrics::power_w},
      {"gpuvet_gpu_power_limit_watts", "Power management limit in force",
       &GpuMetrics::power_limit_w},
      {"gpuvet_gpu_enforced_power_limit_watts",
       "Power limit the GPU enforces (the lowest of every limiter)",
       &GpuMetrics::enforced_power_limit_w},
      {"gpuvet_gpu_default_power_limit_watts", "Default power management limit",
       &GpuMetrics::default_power_limit_w},
      {"gpuvet_gpu_utilization_ratio",
       "Share of the last sample period in which a kernel ran (0 to 1)",
       &GpuMetrics::utilization_ratio},
      {"gpuvet_gpu_memory_utilization_ratio",
       "Share of the last sample period in which device memory was read or written (0 to 1)",
       &GpuMetrics::memory_utilization_ratio},
  };
  for (const auto& field : kGauges) {
    Family f(field.name, "gauge", field.help);
    for (const auto& g : s.gpus)
      if (const auto& v = g.*field.field) f.add(gpu_labels(s, g), *v);
    f.write(out);
  }

  static const CountField kMemory[] = {
      {"gpuvet_gpu_memory_total_bytes", "gauge", "Device memory size",
       &GpuMetrics::memory_total_bytes},
      {"gpuvet_gpu_memory_used_bytes", "gauge", "Device memory in use",
       &GpuMetrics::memory_used_bytes},
  };
  for (const auto& field : kMemory) {
    Family f(field.name, field.type, field.help);
    for (const auto& g : s.gpus)
      if (const auto& v = g.*field.field) f.add_count(gpu_labels(s, g), *v);
    f.write(out);
  }

  {
    Family f("gpuvet_gpu_clock_event_active", "gauge",
             "1 while the clock-event (throttle) reason holds the clocks down, else 0; one "
             "series per reason");
    for (const auto& g : s.gpus) {
      if (!g.clock_event_mask) continue;
      const Labels base = gpu_labels(s, g);
      for (const auto& r : metrics::clock_reasons())
        f.add(with(base, "reason", r.name), (*g.clock_event_mask & r.bit) ? 1.0 : 0.0);
    }
    f.write(out);
    Family t("gpuvet_gpu_clock_event_seconds_total", "counter",
             "Time the clocks were held down, by NVML violation kind, since the driver loaded");
    for (const auto& g : s.gpus) {
      const Labels base = gpu_labels(s, g);
      for (const auto& [kind, seconds] : g.clock_event_seconds)
        t.add(with(base, "reason", kind), seconds);
    }
    t.write(out);
  }

  static const IntField kInts[] = {
      {"gpuvet_gpu_pcie_link_generation", "gauge", "PCIe generation the link runs at",
       &GpuMetrics::pcie_generation},
      {"gpuvet_gpu_pcie_link_generation_max", "gauge",
       "Highest PCIe generation of the GPU and its slot together",
       &GpuMetrics::pcie_generation_max},
      {"gpuvet_gpu_pcie_link_width", "gauge", "PCIe lanes the link runs with",
       &GpuMetrics::pcie_width},
      {"gpuvet_gpu_pcie_link_width_max", "gauge", "Widest PCIe link of the GPU and its slot",
       &GpuMetrics::pcie_width_max},
      {"gpuvet_gpu_nvlink_links_up", "gauge", "NVLink links that are up",
       &GpuMetrics::nvlink_links_up},
      {"gpuvet_gpu_nvlink_links", "gauge", "NVLink links the GPU has", &GpuMetrics::nvlink_links},
  };
  for (const auto& field : kInts) {
    Family f(field.name, field.type, field.help);
    for (const auto& g : s.gpus)
      if (const auto& v = g.*field.field) f.add(gpu_labels(s, g), *v);
    f.write(out);
  }

  static const CountField kCounters[] = {
      {"gpuvet_gpu_pcie_replays_total", "counter",
       "PCIe replays (link-level retransmissions) since the driver loaded",
       &GpuMetrics::pcie_replays},
      {"gpuvet_gpu_ecc_corrected_volatile_total", "counter",
       "Corrected ECC errors since the driver loaded", &GpuMetrics::ecc_volatile_corrected},
      {"gpuvet_gpu_ecc_uncorrected_volatile_total", "counter",
       "Uncorrected ECC errors since the driver loaded", &GpuMetrics::ecc_volatile_uncorrected},
  };
  for (const auto& field : kCounters) {
    Family f(field.name, field.type, field.help);
    for (const auto& g : s.gpus)
      if (const auto& v = g.*field.field) f.add_count(gpu_labels(s, g), *v);
    f.write(out);
  }

  {
    Family f("gpuvet_gpu_unresponsive", "gauge",
             "1 when the GPU stopped answering during the collection");
    for (const auto& g : s.gpus) f.add(gpu_labels(s, g), g.unresponsive ? 1.0 : 0.0);
    f.write(out);
  }

  if (s.diagnosed) {
    Family fi("gpuvet_finding", "gauge",
              "1 for each finding of the diagnosis and the subject it is about (ids: "
              "docs/findings.md)");
    for (const auto& f : s.findings) {
      Labels l = {
          {"id", f.id}, {"severity", f.severity}, {"category", f.category}, {"subject", f.subject}};
      if (f.uuid) l.emplace_back("UUID", *f.uuid);
      if (s.hostname) l.emplace_back("hostname", *s.hostname);
      fi.add(l, 1.0);
    }
    fi.write(out);
    Family v("gpuvet_verdict", "gauge",
             "The diagnosis verdict (worst finding severity): 1 for the state that holds");
    for (const auto& state : verdict_states())
      v.add(with(node, "verdict", state), state == s.verdict ? 1.0 : 0.0);
    v.write(out);
    Family e("gpuvet_diagnose_exit_code", "gauge",
             "What gpuvet diagnose exits with: 0 ok, 1 warning, 2 critical, 3 incomplete input");
    e.add(node, s.exit_code);
    e.write(out);
  }
  return out;
}

}  // namespace gpuvet
