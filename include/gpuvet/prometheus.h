// gpuvet/prometheus.h — gpuvet's numbers and verdicts as Prometheus metrics.
//
// Three parts, each usable alone:
// - MetricsSnapshot: a plain value with what one look at the node saw (per-GPU readings and
//   identity, the findings, the verdict, how long it took). `snapshot_from_facts` fills it
//   from one collection (and its diagnosis); a sampler that reads NVML alone can fill the
//   same struct. Unknown readings stay empty and produce no sample, never a 0.
// - render_prometheus: the text exposition format, version 0.0.4 (# HELP and # TYPE once per
//   family, base units in the names, label values escaped). Per-GPU series carry
//   dcgm-exporter's label set (gpu, UUID, pci_bus_id, device, modelName, hostname,
//   DCGM_FI_DRIVER_VERSION), so `on(UUID)` joins them with DCGM_FI_* series.
// - write_textfile: node_exporter's textfile collector file, written atomically (a temporary
//   file in the same directory, fsync, rename); and MetricsServer, which serves /metrics over
//   HTTP (poll-based, bounded against slow and numerous clients).
// The snapshot functions and the renderer are pure; the server is thread-safe as documented.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet {

// One GPU as the metrics see it. Identity first (the labels), then readings in base units.
struct GpuMetrics {
  int index = 0;
  std::optional<std::string> uuid;        // "GPU-…"
  std::optional<std::string> pci_bus_id;  // gpuvet's "0000:18:00.0"; rendered as DCGM writes it
  std::optional<std::string> model_name;  // "NVIDIA H200"
  bool unresponsive = false;              // the GPU stopped answering during the collection

  std::optional<double> sm_clock_hz;
  std::optional<double> sm_clock_max_hz;
  std::optional<double> memory_clock_hz;
  std::optional<double> memory_clock_max_hz;
  std::optional<double> temperature_c;
  std::optional<double> memory_temperature_c;
  std::optional<double> thermal_margin_c;  // T.Limit: degrees left before slowdown
  std::optional<double> slowdown_temperature_c;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;  // management limit in force
  std::optional<double> enforced_power_limit_w;
  std::optional<double> default_power_limit_w;
  std::optional<double> utilization_ratio;         // 0..1
  std::optional<double> memory_utilization_ratio;  // 0..1
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<std::uint64_t> memory_used_bytes;
  // NVML's clock-event reason mask; the renderer writes one 0/1 series per known reason.
  std::optional<std::uint64_t> clock_event_mask;
  // Accumulated time limited, by NVML violation kind ("power", "thermal", …), in seconds.
  std::map<std::string, double> clock_event_seconds;
  std::optional<int> pcie_generation;
  std::optional<int> pcie_generation_max;
  std::optional<int> pcie_width;
  std::optional<int> pcie_width_max;
  std::optional<std::uint64_t> pcie_replays;
  std::optional<std::uint64_t> ecc_volatile_corrected;
  std::optional<std::uint64_t> ecc_volatile_uncorrected;
  std::optional<int> nvlink_links_up;
  std::optional<int> nvlink_links;
};

// One series of gpuvet_finding: a finding about one subject.
struct FindingMetric {
  std::string id;
  std::string severity;             // "info", "warning", "critical"
  std::string category;             // the catalog's: "pcie", "thermal", …
  std::string subject;              // "GPU0", "GPU0-GPU1", "" for the node
  std::optional<std::string> uuid;  // when the subject is one GPU whose UUID is known
};

struct MetricsSnapshot {
  std::optional<std::string> hostname;
  std::optional<std::string> driver_version;  // DCGM_FI_DRIVER_VERSION label
  std::string version = GPUVET_VERSION;       // gpuvet_build_info
  std::vector<GpuMetrics> gpus;
  std::optional<int> gpus_visible;   // empty when the driver could not be asked at all
  std::optional<int> gpus_expected;  // --expect-gpus
  // The diagnosis, when there is one (`facts --prom` has none).
  bool diagnosed = false;
  std::vector<FindingMetric> findings;
  std::string verdict;                       // "ok", "info", "warning", "critical", "incomplete"
  int exit_code = 0;                         // what `gpuvet diagnose` exits with for it
  std::optional<double> collect_duration_s;  // set by whoever timed the collection
  std::optional<double> collected_unix;      // wall clock of the collection
};

// Fills a snapshot from one collection. `diagnosis` may be null (facts only).
MetricsSnapshot snapshot_from_facts(const Facts& facts, const Diagnosis* diagnosis);

// A time-series sampler's view of the same node (`gpuvet watch --prom`): keeps only the GPUs
// in `watched` (empty: all), and replaces each one's changing readings (clocks, temperature
// and margin, power, utilisation, memory in use, clock events and their time, PCIe link,
// replay/ECC/NVLink counters) with those of its sample in `latest` — a reading the sample
// lacks is dropped, never left at the collection's older value. Identity, limits and maxima
// stay as the collection read them. A watched GPU without a sample keeps only those.
void apply_samples(MetricsSnapshot& snapshot, const std::vector<int>& watched,
                   const std::vector<GpuSample>& latest);

// The words of the gpuvet_verdict state set, in output order.
const std::vector<std::string>& verdict_states();

// The text exposition format (0.0.4): every family once with # HELP and # TYPE, no timestamps.
std::string render_prometheus(const MetricsSnapshot& snapshot);

// "0000:18:00.0" → "00000000:18:00.0", as NVML and dcgm-exporter write a bus id.
std::string dcgm_pci_bus_id(const std::string& bdf);

// Label value escaping of the exposition format: backslash, double quote and newline.
std::string escape_label_value(const std::string& value);

// Writes `text` to `path` for node_exporter's textfile collector: a temporary file in the same
// directory (not ending in .prom, so the collector never reads it half-written), fsync, rename
// over `path`, fsync of the directory. kInvalidInput with a sentence when the directory is
// missing or not writable.
Status write_textfile(const std::string& path, const std::string& text);
// The check write_textfile's first step does, for failing before a long collection.
Status check_textfile_target(const std::string& path);

// ---------------------------------------------------------------- HTTP

struct MetricsServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (MetricsServer::port says which)
  // Open connections, and from one peer address (clamped under the process's descriptor
  // limit). A new connection over either cap closes the oldest one (of that peer, else of all)
  // that is still sending its head: a client cannot starve scrapes by holding connections.
  std::size_t max_connections = 512;
  std::size_t max_per_peer = 128;
  // The whole request head must arrive within head_timeout (not per read: a client sending a
  // header line a second is cut too); the whole answer must be written within write_timeout;
  // after it the client has linger_timeout to close.
  std::chrono::milliseconds head_timeout{3000};
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::milliseconds linger_timeout{2000};
  // A head over max_head_bytes is 414 (request line) or 431; more lines than max_header_lines
  // is 431. A body is never read.
  std::size_t max_head_bytes = 8192;
  std::size_t max_header_lines = 64;
};

// Serves GET (and HEAD) /metrics (the body `metrics` returns, text/plain; version=0.0.4) and / (a
// short page), 404 for other paths, 405 for other methods, 400 for what is not HTTP/1.x; one
// answer per connection (Connection: close). One thread: `metrics` is called on run()'s.
class MetricsServer {
 public:
  virtual ~MetricsServer() = default;
  virtual int port() const = 0;
  // Serves until stop(), then closes the connections still open and returns.
  virtual void run() = 0;
  // From any thread, and safe to call more than once.
  virtual void stop() = 0;
};

// Binds (kInvalidInput with the OS's reason when the address is unusable, kUnavailable in a
// build without HTTP).
Result<std::unique_ptr<MetricsServer>> bind_metrics_server(const MetricsServerOptions& options,
                                                           std::function<std::string()> metrics,
                                                           std::string index_page);

// "127.0.0.1:9401", "[::1]:9401", "localhost:9401", ":9401" (all addresses) → host and port.
struct ListenAddress {
  std::string host;
  int port = 0;
  bool loopback = false;  // 127.0.0.0/8, ::1 or localhost
};
Result<ListenAddress> parse_listen_address(const std::string& text);

}  // namespace gpuvet
