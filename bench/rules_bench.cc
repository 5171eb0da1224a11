// Google Benchmark: rules evaluation (gpuvet::diagnose) on an 8-GPU node.
// The facts come from the real H200 `nvidia-smi -q -x` capture (docs/results/
// h200-2026-12-02) repeated as 8 GPUs, plus what a busy 8-GPU node adds: 28 NV18 pairs,
// 16 processes, 128 cores of host pressure, 200 Xid lines and 5 minutes of 1 s samples.
#include <benchmark/benchmark.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "import/load.h"
#include "large_inputs.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string eight_gpu_xml() {
  const std::string xml =
      slurp(std::string(GPUVET_SOURCE_DIR) + "/docs/results/h200-2026-12-02/nvidia-smi-q.xml");
  const auto start = xml.find("<gpu id=");
  const auto end = xml.find("</gpu>", start) + std::strlen("</gpu>");
  if (start == std::string::npos || end < start) return xml;
  const std::string gpu = xml.substr(start, end - start);
  std::string body;
  for (const char* b : {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"}) {
    std::string g = gpu;
    for (std::size_t p = g.find("00:06.0"); p != std::string::npos; p = g.find("00:06.0", p + 1))
      g.replace(p, 7, std::string(b) + ":00.0");
    // Distinct UUIDs and serials, or the importer rightly merges the copies into one GPU.
    for (const char* tag : {"<uuid>", "<serial>"})
      if (auto p = g.find(tag); p != std::string::npos) g.insert(p + std::strlen(tag), b);
    body += g + "\n";
  }
  return xml.substr(0, start) + body + xml.substr(end);
}

gpuvet::Facts eight_gpu_node() {
  gpuvet::Facts f = gpuvet::import::import_text(eight_gpu_xml(), "bench.xml");
  const int n = static_cast<int>(f.gpus.size());
  f.pairs = gpuvet::testing::nvlink_pairs(n);
  for (int i = 0; i < 16; ++i) {
    gpuvet::ProcessFacts p;
    p.host_pid = 1000 + i;
    p.gpu = i % n;
    p.name = "python";
    p.cpus_allowed_ids = {i, i + 1};
    f.processes.push_back(p);
  }
  gpuvet::HostPressure hp;
  hp.window_s = 1;
  for (int c = 0; c < 128; ++c) hp.cores.push_back({c, c % 7 == 0 ? 99.0 : 40.0, 0.5, 0});
  hp.iowait_pct = 1.0;
  hp.disks.push_back({"nvme0n1", 20, 1e8, 1e7});
  hp.nics.push_back({"eth0", 1e8, 1e7, 100000.0, 1.0});
  f.host.pressure = hp;
  f.kernel_log.readable = true;
  for (int i = 0; i < 200; ++i) {
    gpuvet::XidEvent x;
    x.code = i % 2 ? 13 : 79;
    x.gpu = i % n;
    x.uptime_s = 1000.0 + i;
    x.message = "Graphics Exception";
    f.kernel_log.xids.push_back(x);
  }
  for (int g = 0; g < n; ++g)
    for (int t = 0; t < 300; ++t) {
      gpuvet::GpuSample s;
      s.gpu = g;
      s.t_s = t;
      s.sm_mhz = 1980 - t;
      s.util_pct = 100;
      f.samples.push_back(s);
    }
  return f;
}

void BM_Diagnose8Gpu(benchmark::State& state) {
  static const gpuvet::Facts facts = eight_gpu_node();
  for (auto _ : state) {
    auto d = gpuvet::diagnose(facts);
    benchmark::DoNotOptimize(d);
  }
  state.counters["gpus"] = static_cast<double>(facts.gpus.size());
}
BENCHMARK(BM_Diagnose8Gpu)->Unit(benchmark::kMicrosecond);

// The same node without its 5 minutes of samples: what the rules over time (rules_time.cc,
// added after BM_Diagnose8Gpu was first measured) cost of BM_Diagnose8Gpu.
void BM_Diagnose8GpuWithoutSamples(benchmark::State& state) {
  static const gpuvet::Facts facts = [] {
    gpuvet::Facts f = eight_gpu_node();
    f.samples.clear();
    f.host_samples.clear();
    return f;
  }();
  for (auto _ : state) {
    auto d = gpuvet::diagnose(facts);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_Diagnose8GpuWithoutSamples)->Unit(benchmark::kMicrosecond);

void BM_DiagnoseAndRenderText8Gpu(benchmark::State& state) {
  static const gpuvet::Facts facts = eight_gpu_node();
  for (auto _ : state) {
    auto d = gpuvet::diagnose(facts);
    auto text = gpuvet::render_diagnosis_text(facts, d);
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_DiagnoseAndRenderText8Gpu)->Unit(benchmark::kMicrosecond);

void BM_ImportAndDiagnose8GpuXml(benchmark::State& state) {
  static const std::string xml = eight_gpu_xml();
  for (auto _ : state) {
    auto f = gpuvet::import::import_text(xml, "bench.xml");
    auto d = gpuvet::diagnose(f);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_ImportAndDiagnose8GpuXml)->Unit(benchmark::kMillisecond);

// The rules over fleet-size facts (issue 13, D6): every pair of 1024 GPUs, 150 000 processes.
void diagnose_imported(benchmark::State& state, const std::string& input, const char* name) {
  const gpuvet::Facts facts = gpuvet::import::import_text(input, name);
  for (auto _ : state) {
    auto d = gpuvet::diagnose(facts);
    benchmark::DoNotOptimize(d);
  }
  state.counters["pairs"] = static_cast<double>(facts.pairs.size());
  state.counters["processes"] = static_cast<double>(facts.processes.size());
}

void BM_DiagnoseTopo1024Gpus(benchmark::State& state) {
  static const std::string input = gpuvet::testing::topo_matrix(1024);
  diagnose_imported(state, input, "topo1024.txt");
}
BENCHMARK(BM_DiagnoseTopo1024Gpus)->Unit(benchmark::kMillisecond);

// A node of N GPUs in NVLink islands of 8 joined through the CPUs (issue 39): ~N²/2 SYS pairs.
// Diagnose, its text and its JSON, per pair of GPUs: flat from 256 to 1024 GPUs when the findings
// are one per cause (one per pair made 1024 GPUs take minutes and gigabytes).
void BM_DiagnoseAndRenderTopo(benchmark::State& state) {
  const std::string input = gpuvet::testing::topo_islands(static_cast<int>(state.range(0)));
  const gpuvet::Facts facts = gpuvet::import::import_text(input, "topo.txt");
  std::size_t findings = 0;
  for (auto _ : state) {
    const auto d = gpuvet::diagnose(facts);
    auto text = gpuvet::render_diagnosis_text(facts, d);
    auto json = gpuvet::diagnosis_to_json(facts, d);
    benchmark::DoNotOptimize(text);
    benchmark::DoNotOptimize(json);
    findings = d.findings.size();
  }
  state.counters["findings"] = static_cast<double>(findings);
  state.counters["pairs"] = static_cast<double>(facts.pairs.size());
  // pairs per second: the same at both sizes when the cost grows with the pairs.
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(facts.pairs.size()));
}
BENCHMARK(BM_DiagnoseAndRenderTopo)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_DiagnosePmonTwoSamplesOf100k(benchmark::State& state) {
  static const std::string input = gpuvet::testing::pmon_two_samples_of_100k();
  diagnose_imported(state, input, "pmon.txt");
}
BENCHMARK(BM_DiagnosePmonTwoSamplesOf100k)->Unit(benchmark::kMillisecond);

// A hung job's one combined log at two sizes (reliability E12): every rank's PG status line,
// one rank a collective behind, read and judged. Time per rank should stay flat from 10 000 to
// 100 000 ranks (a scan per rank would make it grow tenfold).
std::string hang_log(int ranks) {
  std::string out;
  out.reserve(static_cast<std::size_t>(ranks) * 200);
  for (int r = 0; r < ranks; ++r) {
    const int enq = r == ranks / 3 ? 499 : 500;
    out += "[rank" + std::to_string(r) +
           "]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:1844] [PG ID 0 PG GUID "
           "0(default_pg) Rank " +
           std::to_string(r) +
           "] Exception (either an error or timeout) detected by watchdog at work: " +
           std::to_string(enq) + ", last enqueued NCCL work: " + std::to_string(enq) +
           ", last completed NCCL work: 499.\n";
  }
  return out;
}

void BM_CulpritOneLog(benchmark::State& state) {
  const std::string input = hang_log(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const gpuvet::Facts facts = gpuvet::import::import_text(input, "job.log");
    auto a = gpuvet::analyse_hang(facts);
    benchmark::DoNotOptimize(a);
  }
  state.counters["ranks"] = static_cast<double>(state.range(0));
  state.counters["per_rank"] = benchmark::Counter(
      static_cast<double>(state.range(0)),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CulpritOneLog)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
