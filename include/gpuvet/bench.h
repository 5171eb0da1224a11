// gpuvet/bench.h — active measurements: the benchmark registry, its results and how they
// feed the rules.
//
// Every benchmark has a stable kebab/snake key ("host_to_device_ce", "all_reduce", …), says
// whether it applies to this machine (and why not), and produces a BenchMatrix: rows and
// columns labelled by GPU (or "host"), each cell an optional value with its spread and a
// per-cell error. A failing benchmark fails only itself (its matrix or cell says ERROR with
// the CUDA/NCCL error), never the run. GB/s are 1e9 bytes per second.
//
// run_benchmarks() needs a gpuvet built with CUDA (GPUVET_CUDA) and a driver at run time
// (libcuda.so.1 is loaded by the CUDA runtime; libnccl.so.2 by dlopen). Without them every
// result is skipped with the reason. Not thread-safe: one run at a time per process.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet {

struct BenchCell {
  std::optional<double> value;       // GB/s or µs (the matrix's unit); median of the samples
  std::optional<double> spread_pct;  // (max - min) / median × 100 over the samples
  std::optional<std::string> error;  // "cudaErrorPeerAccessUnsupported: …", "wrong data …"
  std::optional<double> expected;    // theoretical figure of the link/path/memory, same unit
  bool via_host = false;             // peer copy that could not use P2P: measured through host
  bool verified = false;             // data checked after the copies
  bool wrong_data =
      false;  // the check found data that differs from what was sent (`error` says how)
};

struct BenchMatrix {
  std::string key;                // registry key
  std::string title;              // "host → device, copy engine, pinned"
  std::string unit;               // "GB/s" or "us"
  std::vector<std::string> rows;  // "GPU0", "host", or message sizes for collectives
  std::vector<std::string> cols;
  std::vector<std::vector<BenchCell>> cells;  // [row][col]
  std::optional<std::string> skipped;         // why it did not apply here
  std::optional<std::string> error;           // why the whole benchmark failed
  std::vector<std::string> notes;
  double wall_ms = 0;
  // Where src/dst come from for each cell, so results can become Measurements:
  // row_gpu[r] / col_gpu[c] are GPU indices or -1 for "host"/not a GPU.
  std::vector<int> row_gpu;
  std::vector<int> col_gpu;
  std::optional<std::uint64_t> size_bytes;  // copy size per sample (bandwidth tests)
};

// One row of the P2P truth table: what is claimed and what works between two GPUs.
struct P2PTruth {
  int a = 0;
  int b = 0;
  PathType path = PathType::kUnknown;         // from the facts (topology)
  std::optional<P2PStatus> nvml_read;         // NVML / topo -p2p claim
  std::optional<bool> cuda_can_access;        // cudaDeviceCanAccessPeer(a, b)
  std::optional<std::string> enable_error;    // cudaDeviceEnablePeerAccess failure
  std::optional<bool> copy_verified;          // a peer copy's data checked
  std::optional<double> copy_gbps;            // its bandwidth
  std::optional<bool> nccl_allreduce_ok;      // tiny 2-rank all-reduce result checked
  std::optional<std::string> nccl_transport;  // what NCCL used, if it says
  std::optional<bool> acs_redirect;           // from the facts
  std::optional<bool> iommu_translated;       // from the facts
  std::string verdict;                        // "P2P works", "claimed but garbage", …
};

struct BenchOptions {
  bool full = false;              // exhaustive sweeps instead of the quick suite
  std::vector<std::string> only;  // run just these keys (empty: the suite)
  std::string nccl_library;       // path; empty: $GPUVET_NCCL_LIBRARY or libnccl.so.2
  int samples = 0;                // 0: the suite's default
  bool progress = false;          // [k/N] status line on stderr when it is a terminal
  std::chrono::milliseconds collective_timeout{20000};
  // Deliberately corrupt one copy (tests only): verification must catch it.
  bool plant_corruption = false;
  // "nvbandwidth": only the benchmarks nvbandwidth also has, with its buffer size, copies per
  // sample and sample count, so the two can be compared figure for figure. "" otherwise.
  std::string match;
};

struct BenchInfo {
  const char* key;
  const char* title;
  const char* unit;
  bool quick;               // part of the default quick suite
  const char* nvbandwidth;  // nvbandwidth's testcase measuring the same thing, or nullptr
};

// nvbandwidth's defaults (its --bufferSize, --loopCount and --testSamples), which
// `--match nvbandwidth` uses.
inline constexpr std::size_t kNvbandwidthBufferBytes = std::size_t{512} << 20;
inline constexpr int kNvbandwidthLoopCount = 16;
inline constexpr int kNvbandwidthSamples = 3;

// Every benchmark in the registry, in run order. (A vector, not a span: this header is also
// read by the CUDA sources, which nvcc builds as C++17.)
const std::vector<BenchInfo>& bench_catalog();

// Whether options.only names known benchmarks only: an unknown key is invalid input, refused
// before anything is probed or run.
[[nodiscard]] Status validate_bench_selection(const BenchOptions& options);

struct BenchReport {
  // What was run and at which sizes, e.g. "quick: 7 of 22 benchmarks, 64 MiB × 8 copies × 5
  // samples per cell (nvbandwidth: 512 MiB × 16 × 3; --match nvbandwidth compares like for
  // like)"; empty when nothing was selected.
  std::string suite;
  std::vector<BenchMatrix> results;
  std::vector<P2PTruth> p2p_truth;
  std::vector<std::string> notes;  // CUDA/NCCL versions or why they are missing
  bool cuda_available = false;
  std::optional<std::string> nccl_version;
  double wall_ms = 0;
};

// Runs the suite (or options.only) on this machine; `facts` gives the topology, links and
// NUMA placement used for pinning host buffers and for the expectations.
BenchReport run_benchmarks(const Facts& facts, const BenchOptions& options);

// Fills each cell's `expected` with the theoretical figure of its link, path or memory
// (src/hw/expectations.h: from specifications and data sheets, not calibrated); rendering
// is in gpuvet/report.h.
void attach_expectations(BenchReport& report, const Facts& facts);

// What the data check of a cell found when the data came back wrong: "wrong data: …" from the
// copies and the pointer chases, "N wrong values" from the collectives; empty when the data
// was right, not checked, or the check itself could not run ("verification failed: …").
std::optional<std::string> cell_wrong_data(const BenchCell& cell);
// The same for the P2P truth table's peer copy: it ran (copy_gbps), was checked
// (copy_verified false) and the check itself did not fail (no "verification failed" in
// enable_error).
std::optional<std::string> p2p_copy_wrong_data(const P2PTruth& truth);
// Whether any cell or P2P copy of the report came back with wrong data.
bool bench_has_wrong_data(const BenchReport& report);

// The results as Measurements (tool "gpuvet"), so the rules judge them (h2d-bandwidth-low,
// p2p-bandwidth-low; data-corruption for a cell or P2P truth copy with wrong data, whose
// wrong_data says what the check found).
std::vector<Measurement> bench_measurements(const BenchReport& report);

// Reads a `gpuvet bench --json` document (gpuvet.bench/1) back into the measurements it
// reported; another schema or a document without results is kInvalidInput naming `origin`.
Result<std::vector<Measurement>> bench_json_measurements(std::string_view json_text,
                                                         std::string_view origin);

// Reads a saved `gpuvet bench --json` file (a regular file of at most 64 MiB, refused at once
// when it is a FIFO, a device or a directory) and returns its measurements.
Result<std::vector<Measurement>> read_bench_json_file(const std::string& path);

}  // namespace gpuvet
