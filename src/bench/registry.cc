// The benchmark registry and the run: which measurements exist, which apply to this
// machine, how big the quick and full suites make them, and the glue that turns results
// into Measurements and expectations. The CUDA and NCCL work itself is in cuda_bench.cu and
// nccl_bench.cc (built with GPUVET_CUDA); without them every benchmark is skipped, saying why.
#include <unistd.h>

#include <stdlib.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "bench/registry.h"
#include "core/util.h"
#include "gpuvet/bench.h"
#include "gpuvet/progress.h"
#include "hw/expectations.h"
#include "hw/facts_query.h"

#if GPUVET_HAVE_CUDA
#include "bench/cuda_bench.h"
#include "bench/nccl_bench.h"
#endif

namespace gpuvet {
namespace {

constexpr BenchInfo kCatalog[] = {
    {"host_to_device_ce", "host → device, copy engine, pinned", "GB/s", true,
     "host_to_device_memcpy_ce"},
    {"device_to_host_ce", "device → host, copy engine, pinned", "GB/s", true,
     "device_to_host_memcpy_ce"},
    {"host_to_device_bidir_ce", "host → device while device → host, copy engine", "GB/s", true,
     "host_to_device_bidirectional_memcpy_ce"},
    {"device_to_host_bidir_ce", "device → host while host → device, copy engine", "GB/s", true,
     "device_to_host_bidirectional_memcpy_ce"},
    {"host_to_device_sm", "host → device, SM copy kernel, pinned", "GB/s", false,
     "host_to_device_memcpy_sm"},
    {"device_to_host_sm", "device → host, SM copy kernel, pinned", "GB/s", false,
     "device_to_host_memcpy_sm"},
    {"host_to_device_pageable", "host → device, copy engine, pageable", "GB/s", false, nullptr},
    {"device_to_host_pageable", "device → host, copy engine, pageable", "GB/s", false, nullptr},
    {"all_to_host_ce", "every GPU → host at once, copy engine", "GB/s", true,
     "all_to_host_memcpy_ce"},
    {"host_to_all_ce", "host → every GPU at once, copy engine", "GB/s", true,
     "host_to_all_memcpy_ce"},
    {"host_device_latency_sm", "host memory access latency from an SM (pointer chase)", "us", true,
     "host_device_latency_sm"},
    {"device_local_copy", "device-local copy (HBM read + write)", "GB/s", true,
     "device_local_copy"},
    {"device_to_device_read_ce", "GPU ← GPU, copy engine, read (destination pulls)", "GB/s", true,
     "device_to_device_memcpy_read_ce"},
    {"device_to_device_write_ce", "GPU → GPU, copy engine, write (source pushes)", "GB/s", false,
     "device_to_device_memcpy_write_ce"},
    {"device_to_device_bidir_ce", "GPU ↔ GPU, copy engine, both directions", "GB/s", true,
     "device_to_device_bidirectional_memcpy_read_ce"},
    {"device_to_device_read_sm", "GPU ← GPU, SM copy kernel, read", "GB/s", false,
     "device_to_device_memcpy_read_sm"},
    {"device_to_device_write_sm", "GPU → GPU, SM copy kernel, write", "GB/s", false,
     "device_to_device_memcpy_write_sm"},
    {"device_to_device_latency_sm", "peer memory access latency from an SM (pointer chase)", "us",
     true, "device_to_device_latency_sm"},
    {"p2p_truth", "P2P truth table: claimed vs working, data checked, NCCL all-reduce", "", true,
     nullptr},
    {"all_reduce", "NCCL all-reduce, float sum, message-size sweep", "GB/s", true, nullptr},
    {"all_gather", "NCCL all-gather, message-size sweep", "GB/s", false, nullptr},
    {"reduce_scatter", "NCCL reduce-scatter, float sum, message-size sweep", "GB/s", false,
     nullptr},
};

const BenchInfo* info(std::string_view key) {
  for (const auto& i : kCatalog)
    if (key == i.key) return &i;
  return nullptr;
}

BenchMatrix skipped(std::string_view key, std::string why) {
  BenchMatrix m;
  m.key = std::string(key);
  if (const BenchInfo* i = info(key)) {
    m.title = i->title;
    m.unit = i->unit;
  }
  m.skipped = std::move(why);
  return m;
}

}  // namespace

const std::vector<BenchInfo>& bench_catalog() {
  static const std::vector<BenchInfo> kAll(std::begin(kCatalog), std::end(kCatalog));
  return kAll;
}

namespace bench {

std::vector<std::size_t> collective_sizes(bool full) {
  std::vector<std::size_t> sizes;
  if (full) {
    for (std::size_t s = 8; s <= (std::size_t{4} << 30); s *= 2) sizes.push_back(s);
  } else {
    // The triage question is "is the path as fast as it should be": one latency-bound, one
    // mid and two bandwidth-bound sizes answer it.
    sizes = {8, 1u << 20, 64u << 20, 512u << 20};
  }
  return sizes;
}

std::string size_label(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 3 && static_cast<std::uint64_t>(v) % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{} {}", static_cast<std::uint64_t>(v), kUnits[u]);
}

Status select(const BenchOptions& options, std::vector<std::string>& keys) {
  keys.clear();
  if (!options.match.empty() && options.match != "nvbandwidth")
    return Status::invalid_input("--match '" + options.match +
                                 "': the only reference gpuvet bench matches is nvbandwidth");
  for (const auto& k : options.only) {
    const BenchInfo* i = info(k);
    if (!i)
      return Status::invalid_input("unknown benchmark '" + k +
                                   "' (gpuvet bench --list shows them)");
    if (!options.match.empty() && !i->nvbandwidth)
      return Status::invalid_input("benchmark '" + k +
                                   "' has no nvbandwidth counterpart to match (gpuvet bench "
                                   "--list shows which do)");
  }
  for (const auto& i : kCatalog) {
    const bool listed =
        std::find(options.only.begin(), options.only.end(), i.key) != options.only.end();
    bool wanted = options.only.empty() ? (options.full || i.quick) : listed;
    if (!options.match.empty()) wanted = i.nvbandwidth && (options.only.empty() || listed);
    if (wanted) keys.push_back(i.key);
  }
  return Status::ok();
}

namespace {
std::string mib(std::size_t bytes) { return fmt::format("{} MiB", bytes >> 20); }
}  // namespace

SuiteSizes suite_sizes(const BenchOptions& options) {
  SuiteSizes z;
  const int samples = options.samples > 0 ? options.samples : 5;
  // Quick: 64 MiB × 8 copies per sample is ≈10 ms at PCIe Gen5 (≈1 ms per copy, far above
  // per-copy overheads) and keeps pinned allocations cheap; measured on the H200 it gives
  // the same figures as 256 MiB copies within their spread. Full: 256 MiB × 8, 9 samples.
  z.copy = {64u << 20, 8, samples};
  z.local = {1u << 30, 4, samples};
  z.latency_samples = samples;
  if (!options.match.empty()) {
    // nvbandwidth's own sizes for every copy test, so each figure compares like for like.
    const int n = options.samples > 0 ? options.samples : kNvbandwidthSamples;
    z.copy = z.local = {kNvbandwidthBufferBytes, kNvbandwidthLoopCount, n};
    z.latency_samples = n;
  } else if (options.full) {
    z.copy.bytes = 256u << 20;
    z.copy.samples = z.local.samples = std::max(samples, 9);
  }
  return z;
}

std::string suite_text(const BenchOptions& options, const std::vector<std::string>& keys) {
  const SuiteSizes z = suite_sizes(options);
  const std::string sizes = fmt::format("{} × {} copies × {} samples per cell", mib(z.copy.bytes),
                                        z.copy.iterations, z.copy.samples);
  const std::string count = fmt::format("{} of {} benchmarks", keys.size(), std::size(kCatalog));
  if (!options.match.empty())
    return fmt::format(
        "match nvbandwidth: {}, each as nvbandwidth's testcase of the same "
        "name measures it, {} (the median of the samples)",
        count, sizes);
  const std::string scope = !options.only.empty() ? "only" : options.full ? "full" : "quick";
  return fmt::format(
      "{}: {}, {}, device-local {} × {} copies; not nvbandwidth's sizes "
      "({} × {} × {}): --match nvbandwidth compares like for like",
      scope, count, sizes, mib(z.local.bytes), z.local.iterations, mib(kNvbandwidthBufferBytes),
      kNvbandwidthLoopCount, kNvbandwidthSamples);
}

}  // namespace bench

Status validate_bench_selection(const BenchOptions& options) {
  std::vector<std::string> keys;
  return bench::select(options, keys);
}

// ------------------------------------------------------------------ the run

namespace {

#if GPUVET_HAVE_CUDA
// CUDA ordinal → index in the facts (NVML order), matched by PCI bus id.
std::vector<int> ordinal_to_index(const Facts& facts, const bench::CudaEnv& env) {
  std::vector<int> out;
  for (int i = 0; i < env.device_count; ++i) {
    int index = i;
    if (i < static_cast<int>(env.pci_bus_ids.size()))
      if (const GpuFacts* g = hw::find_gpu_by_bus(facts, env.pci_bus_ids[i])) index = g->index;
    out.push_back(index);
  }
  return out;
}

void relabel(BenchMatrix& m, const std::vector<int>& to_index) {
  auto fix = [&](std::vector<int>& gpus, std::vector<std::string>& labels) {
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (gpus[i] < 0 || gpus[i] >= static_cast<int>(to_index.size())) continue;
      gpus[i] = to_index[gpus[i]];
      if (i < labels.size()) labels[i] = "GPU" + std::to_string(gpus[i]);
    }
  };
  fix(m.row_gpu, m.rows);
  fix(m.col_gpu, m.cols);
}

std::vector<int> numa_by_ordinal(const Facts& facts, const std::vector<int>& to_index) {
  const auto nodes = hw::node_cpus(facts);
  std::vector<int> out;
  for (int index : to_index) {
    const GpuFacts* g = hw::find_gpu(facts, index);
    const auto node = g ? hw::gpu_node(*g, nodes) : std::nullopt;
    out.push_back(node.value_or(-1));
  }
  return out;
}
#endif

}  // namespace

BenchReport run_benchmarks(const Facts& facts, const BenchOptions& options) {
  BenchReport report;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> keys;
  if (auto s = bench::select(options, keys); !s.is_ok()) {
    report.notes.push_back(s.message());
    return report;
  }
  report.suite = bench::suite_text(options, keys);
#if !GPUVET_HAVE_CUDA
  report.notes.push_back(
      "this gpuvet was built without CUDA (configure with -DGPUVET_CUDA=ON, or use "
      "scripts/build-portable): no benchmark can run");
  for (const auto& k : keys) report.results.push_back(skipped(k, "built without CUDA"));
  (void)facts;
#else
  // CUDA's default order is "fastest first"; NVML's (and the facts') is PCI bus order. With
  // the same order the P2P truth table can use the facts' pair indices as ordinals; results
  // are still mapped back by bus id below.
  ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  const bench::CudaEnv env = bench::cuda_init();
  if (!env.ok) {
    report.notes.push_back("CUDA unavailable: " + env.error);
    for (const auto& k : keys)
      report.results.push_back(skipped(k, "CUDA unavailable: " + env.error));
    return report;
  }
  report.cuda_available = true;
  // One health record for this run: a device whose context died in one measurement is
  // named, and not touched again, by every later one.
  gpu::DeviceHealth health;
  report.notes.push_back(fmt::format("CUDA driver {}.{}, runtime {}.{}, {} GPU(s)",
                                     env.driver_version / 1000, (env.driver_version % 1000) / 10,
                                     env.runtime_version / 1000, (env.runtime_version % 1000) / 10,
                                     env.device_count));
  const std::vector<int> to_index = ordinal_to_index(facts, env);
  const std::vector<int> numa = numa_by_ordinal(facts, to_index);
  const int n = env.device_count;

  const bench::SuiteSizes z = bench::suite_sizes(options);
  const bench::Sizing host{z.copy.bytes, z.copy.iterations, z.copy.samples};
  const bench::Sizing local{z.local.bytes, z.local.iterations, z.local.samples};
  const bench::Sizing peer = host;
  const bench::Sizing latency{1u << 20, 100000, z.latency_samples};
  std::optional<bench::NcclEnv> nccl;
  auto need_nccl = [&]() -> const bench::NcclEnv& {
    if (!nccl) {
      nccl = bench::nccl_load(options.nccl_library);
      if (nccl->ok && nccl->version) report.nccl_version = nccl->version;
      report.notes.push_back(nccl->ok
                                 ? "NCCL " + nccl->version.value_or("?") + " from " + nccl->library
                                 : "NCCL unavailable: " + nccl->error);
    }
    return *nccl;
  };

  // On a terminal only; cleared before the report is printed.
  Progress progress(STDERR_FILENO, options.progress, static_cast<int>(keys.size()));
  for (const auto& key : keys) {
    progress.step(key);
    const auto k0 = std::chrono::steady_clock::now();
    BenchMatrix m;
    const bool pairwise = key.rfind("device_to_device", 0) == 0 || key == "p2p_truth";
    const bool all_at_once = key == "all_to_host_ce" || key == "host_to_all_ce";
    // Every GPU at once is one GPU's copy on a single-GPU node: only nvbandwidth's matching
    // suite runs it there (nvbandwidth does).
    if ((pairwise || (all_at_once && options.match.empty())) && n < 2) {
      m = skipped(key, "needs 2 or more GPUs (this machine has " + std::to_string(n) + ")");
    } else if (key == "p2p_truth") {
      for (const auto& p : facts.pairs) {
        P2PTruth t;
        t.a = p.a;
        t.b = p.b;
        t.path = p.path;
        t.nvml_read = p.p2p_read;
        const GpuFacts* ga = hw::find_gpu(facts, p.a);
        const GpuFacts* gb = hw::find_gpu(facts, p.b);
        if (ga && gb && (ga->acs_redirects_p2p || gb->acs_redirects_p2p))
          t.acs_redirect =
              ga->acs_redirects_p2p.value_or(false) || gb->acs_redirects_p2p.value_or(false);
        if (facts.host.iommu.active)
          t.iommu_translated =
              *facts.host.iommu.active && !facts.host.iommu.passthrough.value_or(false);
        report.p2p_truth.push_back(t);
      }
      if (report.p2p_truth.empty())
        for (int a = 0; a < n; ++a)
          for (int b = a + 1; b < n; ++b) report.p2p_truth.push_back(P2PTruth{.a = a, .b = b});
      bench::p2p_truth_cuda(health, report.p2p_truth, options.plant_corruption);
      const auto& ne = need_nccl();
      if (ne.ok) bench::p2p_truth_nccl(ne, report.p2p_truth, options.collective_timeout);
      bench::judge_p2p_truth(report.p2p_truth);
      continue;
    } else if (key.rfind("host_to_", 0) == 0 || key.rfind("device_to_host", 0) == 0 ||
               key == "all_to_host_ce") {
      bench::HostDeviceSpec spec;
      spec.to_device = key.rfind("host_to", 0) == 0;
      spec.engine =
          key.find("_sm") != std::string::npos ? bench::Engine::kSm : bench::Engine::kCopyEngine;
      spec.pinned = key.find("pageable") == std::string::npos;
      spec.bidirectional = key.find("bidir") != std::string::npos;
      spec.all_gpus_at_once = all_at_once;
      m = bench::host_device_bandwidth(health, spec, host, numa, options.plant_corruption);
    } else if (key == "host_device_latency_sm") {
      m = bench::host_device_latency(health, latency);
    } else if (key == "device_local_copy") {
      m = bench::device_local_copy(health, local);
    } else if (key == "device_to_device_latency_sm") {
      m = bench::peer_latency(health, latency);
    } else if (key.rfind("device_to_device", 0) == 0) {
      bench::PeerSpec spec;
      spec.engine = key.ends_with("_sm") ? bench::Engine::kSm : bench::Engine::kCopyEngine;
      spec.read = key.find("write") == std::string::npos;
      spec.bidirectional = key.find("bidir") != std::string::npos;
      m = bench::peer_bandwidth(health, spec, peer);
    } else if (n < 2 && options.only.empty() && !options.full) {
      // On one GPU a collective crosses no link: it cannot answer the quick suite's question,
      // and NCCL's start-up alone (≈1.5 s on the H200 VM) would be most of the suite's time.
      m = skipped(key, "1 GPU: no link for a collective to cross (gpuvet bench --only " + key +
                           " still exercises the path)");
    } else {  // collectives
      const auto& ne = need_nccl();
      if (!ne.ok) {
        m = skipped(key, "NCCL unavailable: " + ne.error);
      } else {
        bench::CollectiveSpec spec;
        spec.op = key;
        spec.sizes = bench::collective_sizes(options.full);
        spec.timeout = options.collective_timeout;
        if (!options.full) spec.iterations = 10;
        m = bench::nccl_collective(ne, spec);
      }
    }
    m.key = key;
    if (const BenchInfo* i = info(key)) {
      m.title = i->title;  // the reader's words (the CUDA side names its matrix after nvbandwidth)
      if (m.unit.empty()) m.unit = i->unit;
    }
    relabel(m, to_index);
    m.wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - k0).count();
    report.results.push_back(std::move(m));
  }
#endif
  report.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

// ------------------------------------------------------------------ expectations, measurements

namespace bench {

void judge_p2p_truth(std::vector<P2PTruth>& truth) {
  for (auto& t : truth) {
    const bool claimed =
        (t.nvml_read && *t.nvml_read == P2PStatus::kOk) || t.cuda_can_access.value_or(false);
    const bool copy_bad = t.copy_verified && !*t.copy_verified;
    const bool nccl_bad = t.nccl_allreduce_ok && !*t.nccl_allreduce_ok;
    if (copy_bad || nccl_bad)
      t.verdict = claimed ? "claimed, but data came back wrong" : "data came back wrong";
    else if (t.enable_error)
      t.verdict = "claimed, but enabling peer access failed: " + *t.enable_error;
    else if (t.cuda_can_access && *t.cuda_can_access && t.copy_verified.value_or(false))
      t.verdict = "P2P works (data checked)";
    else if (t.cuda_can_access && !*t.cuda_can_access)
      t.verdict =
          t.copy_verified.value_or(false) ? "no P2P: traffic goes through the host" : "no P2P";
    else
      t.verdict = "not determined";
  }
}

}  // namespace bench

void attach_expectations(BenchReport& report, const Facts& facts) {
  // Every `expected` is a theoretical figure (hw/expectations.h): the rendering says "% of
  // theoretical". A note says where each figure comes from; for host↔device it also gives
  // the PCIe protocol ceiling, the share of the link that the TLP/DLLP overhead leaves for data.
  for (auto& m : report.results) {
    const bool host_bw = m.unit == "GB/s" && (m.key.find("host") != std::string::npos) &&
                         m.key.find("pageable") == std::string::npos &&
                         m.key.find("latency") == std::string::npos;
    std::vector<std::string> notes;  // one per distinct link or model
    auto add_note = [&](std::string n) {
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(std::move(n));
    };
    for (std::size_t r = 0; r < m.cells.size(); ++r)
      for (std::size_t c = 0; c < m.cells[r].size(); ++c) {
        BenchCell& cell = m.cells[r][c];
        const int rg = r < m.row_gpu.size() ? m.row_gpu[r] : -1;
        const int cg = c < m.col_gpu.size() ? m.col_gpu[c] : -1;
        if (host_bw) {
          const int gpu = rg >= 0 ? rg : cg;
          if (const GpuFacts* g = hw::find_gpu(facts, gpu))
            if (auto e = hw::expected_host_device(*g)) {
              cell.expected = e->theoretical_gbps;
              add_note(fmt::format(
                  "theoretical: Gen{} x{}, {:.1f} GB/s per direction after line encoding; "
                  "TLP/DLLP overhead at {:.0f}-byte payloads leaves {:.1f} GB/s ({:.0f} % of "
                  "theoretical) for data",
                  e->gen, e->width, e->theoretical_gbps, hw::kPcieAssumedMaxPayload,
                  e->protocol_ceiling_gbps, 100 * e->protocol_efficiency));
            }
        } else if (m.key == "device_local_copy") {
          if (const GpuFacts* g = hw::find_gpu(facts, rg); g && g->name)
            if (auto e = hw::expected_device_memory(*g->name)) {
              cell.expected = e->copy_gbps;
              add_note(fmt::format(
                  "theoretical: {} {:.0f} GB/s peak ({}); a copy reads and writes, so {:.0f} GB/s",
                  e->model, e->peak_gbps, e->source, e->copy_gbps));
            }
        } else if (m.key.rfind("device_to_device", 0) == 0 && m.unit == "GB/s" && rg >= 0 &&
                   cg >= 0 && rg != cg) {
          for (const auto& p : facts.pairs)
            if ((p.a == rg && p.b == cg) || (p.a == cg && p.b == rg))
              if (auto e = hw::expected_peer(facts, p)) {
                cell.expected = e->theoretical_gbps;
                add_note(
                    "theoretical: NV# links × NVIDIA's published per-link rate, or the PCIe "
                    "link of the slower GPU");
              }
        }
      }
    for (auto& n : notes) m.notes.push_back(std::move(n));
  }
}

std::optional<std::string> cell_wrong_data(const BenchCell& cell) {
  if (!cell.wrong_data) return std::nullopt;
  return cell.error.value_or("wrong data");
}

std::optional<std::string> p2p_copy_wrong_data(const P2PTruth& t) {
  // p2p_truth_cuda: a copy that failed leaves copy_gbps empty; a check that could not run
  // adds "verification failed: …" to enable_error; wrong data leaves copy_verified false.
  if (!t.copy_verified || *t.copy_verified || !t.copy_gbps) return std::nullopt;
  if (t.enable_error && t.enable_error->find("verification failed") != std::string::npos)
    return std::nullopt;
  return fmt::format("wrong data: the peer copy GPU{} → GPU{} did not match what was sent", t.a,
                     t.b);
}

bool bench_has_wrong_data(const BenchReport& report) {
  for (const auto& m : report.results)
    for (const auto& row : m.cells)
      for (const auto& cell : row)
        if (cell_wrong_data(cell)) return true;
  for (const auto& t : report.p2p_truth)
    if (p2p_copy_wrong_data(t)) return true;
  return false;
}

std::vector<Measurement> bench_measurements(const BenchReport& report) {
  std::vector<Measurement> out;
  for (const auto& m : report.results) {
    if (m.skipped || m.error) continue;
    const bool collective =
        m.key == "all_reduce" || m.key == "all_gather" || m.key == "reduce_scatter";
    for (std::size_t r = 0; r < m.cells.size(); ++r) {
      if (collective) {
        Measurement x;
        x.tool = "gpuvet";
        x.test = m.key + "_perf";
        const auto& row = m.cells[r];
        auto col = [&](std::string_view name) -> const BenchCell* {
          for (std::size_t c = 0; c < m.cols.size() && c < row.size(); ++c)
            if (m.cols[c] == name) return &row[c];
          return nullptr;
        };
        if (const auto* a = col("algbw")) x.bandwidth_gbps = a->value;
        if (const auto* b = col("busbw")) x.busbw_gbps = b->value;
        if (const auto* t = col("time_us")) x.latency_us = t->value;
        if (r < m.rows.size()) x.note = m.rows[r];
        for (const auto& cell : row)
          if (cell_wrong_data(cell)) {  // "3 wrong values": nccl-tests' #wrong
            const long long n = std::strtoll(cell.error->c_str(), nullptr, 10);
            x.wrong_data = fmt::format("#wrong {}", n > 0 ? n : 1);
            break;
          }
        out.push_back(std::move(x));
        continue;
      }
      for (std::size_t c = 0; c < m.cells[r].size(); ++c) {
        const BenchCell& cell = m.cells[r][c];
        const auto wrong = cell_wrong_data(cell);
        if (!cell.value && !wrong) continue;
        Measurement x;
        x.tool = "gpuvet";
        x.test = m.key;
        const int rg = r < m.row_gpu.size() ? m.row_gpu[r] : -1;
        const int cg = c < m.col_gpu.size() ? m.col_gpu[c] : -1;
        // Rows are the GPU and the column "host" for host tests: the GPU is the destination
        // of host→device copies and the source of device→host ones.
        const bool to_device = m.key.rfind("host_to", 0) == 0;
        if (m.key.find("host") != std::string::npos && cg < 0) {
          if (to_device)
            x.dst_gpu = rg;
          else
            x.src_gpu = rg;
        } else {
          if (rg >= 0) x.src_gpu = rg;
          if (cg >= 0) x.dst_gpu = cg;
        }
        x.size_bytes = m.size_bytes;
        if (m.unit == "us")
          x.latency_us = cell.value;
        else
          x.bandwidth_gbps = cell.value;
        if (m.key.find("bidir") != std::string::npos) x.note = "bidirectional";
        if (cell.via_host) x.note = "via host";
        x.wrong_data = wrong;
        out.push_back(std::move(x));
      }
    }
  }
  // The truth table's peer copy is a figure too, judged only for its data.
  for (const auto& t : report.p2p_truth) {
    auto wrong = p2p_copy_wrong_data(t);
    if (!wrong) continue;
    Measurement x;
    x.tool = "gpuvet";
    x.test = "p2p_truth";
    x.src_gpu = t.a;
    x.dst_gpu = t.b;
    x.bandwidth_gbps = t.copy_gbps;
    x.wrong_data = std::move(wrong);
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace gpuvet
