// Google Benchmark: how fast the offline importers read real-sized inputs.
// Inputs are built from a real H200 capture (docs/results/h200-2026-12-02):
// an 8-GPU `nvidia-smi -q -x` (the GPU element repeated with distinct bus ids),
// the same for `nvidia-smi -q`, and a 50 MB kernel log with Xid lines.
#include <benchmark/benchmark.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "import/importer.h"
#include "import/load.h"
#include "large_inputs.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const gpuvet::import::Importer* find(const char* format) {
  for (const auto& imp : gpuvet::import::importers())
    if (std::strcmp(imp.format, format) == 0) return &imp;
  return nullptr;
}

std::string results(const char* file) {
  return std::string(GPUVET_SOURCE_DIR) + "/docs/results/h200-2026-12-02/" + file;
}

// The <gpu id="…">…</gpu> element repeated 8 times with bus ids 0x18, 0x2a, …
std::string eight_gpu_xml() {
  const std::string xml = slurp(results("nvidia-smi-q.xml"));
  const auto start = xml.find("<gpu id=");
  const auto end = xml.find("</gpu>", start) + std::strlen("</gpu>");
  if (start == std::string::npos || end < start) return xml;
  const std::string gpu = xml.substr(start, end - start);
  std::string body;
  const char* buses[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
  for (const char* b : buses) {
    std::string g = gpu;
    for (std::size_t p = g.find("00:06.0"); p != std::string::npos; p = g.find("00:06.0", p + 1))
      g.replace(p, 7, std::string(b) + ":00.0");
    // Distinct UUIDs and serials, or the importer rightly merges the copies into one GPU.
    for (const char* tag : {"<uuid>", "<serial>"})
      if (auto p = g.find(tag); p != std::string::npos) g.insert(p + std::strlen(tag), b);
    body += g + "\n";
  }
  std::string out = xml.substr(0, start) + body + xml.substr(end);
  for (std::size_t p = out.find("<attached_gpus>1<"); p != std::string::npos; p = std::string::npos)
    out.replace(p, std::strlen("<attached_gpus>1<"), "<attached_gpus>8<");
  return out;
}

std::string eight_gpu_text() {
  const std::string q = slurp(results("nvidia-smi-q.txt"));
  const auto start = q.find("\nGPU 00000000:");
  if (start == std::string::npos) return q;
  const std::string gpu = q.substr(start);
  std::string out = q.substr(0, start);
  for (int i = 0; i < 8; ++i) out += gpu;
  return out;
}

std::string kernel_log(std::size_t bytes) {
  std::string log;
  log.reserve(bytes + 256);
  std::size_t n = 0;
  while (log.size() < bytes) {
    char line[256];
    const double t = 12.0 + static_cast<double>(n) * 0.001;
    if (n % 997 == 0)
      std::snprintf(line, sizeof line,
                    "[%12.6f] NVRM: Xid (PCI:0000:%02zx:00): 79, pid=%zu, name=python3, GPU has "
                    "fallen off the bus.\n",
                    t, n % 256, n);
    else
      std::snprintf(line, sizeof line,
                    "[%12.6f] eth0: renamed from veth%zx; audit: type=1400 apparmor=\"ALLOWED\"\n",
                    t, n);
    log += line;
    ++n;
  }
  return log;
}

void run_importer(benchmark::State& state, const char* format, const std::string& input) {
  const auto* imp = find(format);
  if (!imp) {
    state.SkipWithError("importer not registered");
    return;
  }
  for (auto _ : state) {
    gpuvet::Facts facts;
    auto st = imp->parse(input, facts);
    benchmark::DoNotOptimize(facts.gpus.data());
    benchmark::DoNotOptimize(st);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(input.size()));
}

void BM_NvsmiXml8Gpu(benchmark::State& state) {
  static const std::string input = eight_gpu_xml();
  run_importer(state, "nvidia-smi-q-xml", input);
}
BENCHMARK(BM_NvsmiXml8Gpu)->Unit(benchmark::kMillisecond);

void BM_NvsmiQText8Gpu(benchmark::State& state) {
  static const std::string input = eight_gpu_text();
  run_importer(state, "nvidia-smi-q", input);
}
BENCHMARK(BM_NvsmiQText8Gpu)->Unit(benchmark::kMillisecond);

void BM_KernelLog50MB(benchmark::State& state) {
  static const std::string input = kernel_log(50u << 20);
  run_importer(state, "kernel-log", input);
}
BENCHMARK(BM_KernelLog50MB)->Unit(benchmark::kMillisecond);

// Recognition included: split, every sniffer, parse, merge.
void BM_ImportText8GpuXml(benchmark::State& state) {
  static const std::string input = eight_gpu_xml();
  for (auto _ : state) {
    auto facts = gpuvet::import::import_text(input, "bench.xml");
    benchmark::DoNotOptimize(facts.gpus.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(input.size()));
}
BENCHMARK(BM_ImportText8GpuXml)->Unit(benchmark::kMillisecond);

void import_whole(benchmark::State& state, const std::string& input, const char* name) {
  for (auto _ : state) {
    auto facts = gpuvet::import::import_text(input, name);
    benchmark::DoNotOptimize(facts.pairs.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(input.size()));
}

// Fleet-size inputs (issue 13, D6): a 1024-GPU `topo -m` (523 776 pairs) and two pmon
// samples of 100 000 processes each.
void BM_ImportTopo1024Gpus(benchmark::State& state) {
  static const std::string input = gpuvet::testing::topo_matrix(1024);
  import_whole(state, input, "topo1024.txt");
}
BENCHMARK(BM_ImportTopo1024Gpus)->Unit(benchmark::kMillisecond);

void BM_ImportPmonTwoSamplesOf100k(benchmark::State& state) {
  static const std::string input = gpuvet::testing::pmon_two_samples_of_100k();
  import_whole(state, input, "pmon.txt");
}
BENCHMARK(BM_ImportPmonTwoSamplesOf100k)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
