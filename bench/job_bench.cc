// Google Benchmark: reading the user's job. A generated PyTorch profiler trace at two sizes
// (the time per byte stays flat when the reader is linear), and the real traces recorded on
// the lent GPU (tests/fixtures/job/device) when present.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "gpuvet/import.h"
#include "import/kineto_trace.h"
#include "job_trace_gen.h"

namespace {

void BM_KinetoTrace(benchmark::State& state) {
  const std::string trace =
      gpuvet::testing::make_kineto_trace(static_cast<std::size_t>(state.range(0)) << 20);
  for (auto _ : state) {
    gpuvet::Facts f;
    benchmark::DoNotOptimize(gpuvet::import::parse_kineto_trace(trace, f));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(trace.size()));
}
BENCHMARK(BM_KinetoTrace)->Arg(16)->Arg(128)->Unit(benchmark::kMillisecond);

// The whole --from path (size check, gunzip, session splitting, every sniffer, the parser,
// merge) on the recorded traces, one directory.
void BM_ImportDeviceTraces(benchmark::State& state) {
  const std::string dir = std::string(GPUVET_SOURCE_DIR) + "/tests/fixtures/job/device";
  if (!std::filesystem::exists(dir)) {
    state.SkipWithError("tests/fixtures/job/device is absent");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(gpuvet::import_path(dir));
}
BENCHMARK(BM_ImportDeviceTraces)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
