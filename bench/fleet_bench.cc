// Google Benchmark: reading one node report for the fleet history (gpuvet::fleet_documents:
// parse, content hash, the node's fingerprint), per document, for a gate report and a diagnose
// report of an 8-GPU node; and, for comparison, the way a diagnose report was read before
// (its text through import_text, every format sniffer, then the gpuvet-json importer).
// The node: 8 GPUs on two NUMA nodes, every pair NV18 with P2P OK, h2d/d2h per GPU and a peer
// read per pair measured (72 bandwidth values), as `gpuvet gate --json` and `diagnose --json`
// write it.
#include <benchmark/benchmark.h>

#include <string>

#include "gpuvet/baseline.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/fleet.h"
#include "gpuvet/gate.h"
#include "gpuvet/import.h"
#include "gpuvet/report.h"
#include "large_inputs.h"

namespace {

gpuvet::Facts eight_gpu_node() {
  gpuvet::Facts f;
  f.host.hostname = "node0042";
  f.host.collected_unix = 1765000000;
  f.host.uptime_s = 86400;
  for (int i = 0; i < 8; ++i) {
    gpuvet::GpuFacts g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.uuid = "GPU-0000000" + std::to_string(i);
    g.pci_bus_id = "00000000:" + std::to_string(10 + i) + ":00.0";
    g.pcie.gen_max = 5;
    g.pcie.width_max = 16;
    g.pcie.width_current = 16;
    g.numa_node = i / 4;
    g.power.limit_w = 700;
    f.gpus.push_back(g);
  }
  f.pairs = gpuvet::testing::nvlink_pairs(8);
  const auto measure = [&](const char* test, int src, int dst, double gbps) {
    gpuvet::Measurement m;
    m.tool = "nvbandwidth";
    m.test = test;
    m.src_gpu = src;
    m.dst_gpu = dst;
    m.bandwidth_gbps = gbps;
    f.measurements.push_back(m);
  };
  for (int i = 0; i < 8; ++i) {
    measure("host_to_device_memcpy_ce", -1, i, 55.1 + i * 0.01);
    measure("device_to_host_memcpy_ce", i, -1, 54.7 + i * 0.01);
  }
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) measure("device_to_device_memcpy_read_ce", a, b, 370.3 + a * 0.1 + b * 0.01);
  return f;
}

std::string diagnose_report() {
  const gpuvet::Facts facts = eight_gpu_node();
  gpuvet::JsonOptions j;
  j.command = "diagnose";
  return gpuvet::diagnosis_to_json(facts, gpuvet::diagnose(facts), j);
}

std::string gate_report() {
  const gpuvet::Facts facts = eight_gpu_node();
  const auto values = gpuvet::bandwidth_values(facts.measurements);
  auto baseline = gpuvet::parse_baseline(
      gpuvet::baseline_toml(gpuvet::node_print(facts), {}, "bench", "2026-12-08"), "b.toml");
  if (!baseline.is_ok()) return {};
  gpuvet::GateReport gate = gpuvet::judge_gate(baseline.value(), facts, gpuvet::diagnose(facts),
                                               values, gpuvet::GateOptions{});
  gate.collected_unix = facts.host.collected_unix;
  gpuvet::JsonOptions j;
  j.command = "gate";
  return gpuvet::gate_to_json(gate, j);
}

void read_documents(benchmark::State& state, const std::string& text) {
  const gpuvet::DocumentOrigin origin{"node0042.json", "node0042", std::nullopt, {}};
  for (auto _ : state) {
    auto docs = gpuvet::fleet_documents(text, origin);
    if (!docs.is_ok() || docs.value().size() != 1) state.SkipWithError("not read");
    benchmark::DoNotOptimize(docs);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

void BM_FleetDocumentGate8Gpu(benchmark::State& state) { read_documents(state, gate_report()); }
BENCHMARK(BM_FleetDocumentGate8Gpu)->Unit(benchmark::kMicrosecond);

void BM_FleetDocumentDiagnose8Gpu(benchmark::State& state) {
  read_documents(state, diagnose_report());
}
BENCHMARK(BM_FleetDocumentDiagnose8Gpu)->Unit(benchmark::kMicrosecond);

// What reading a diagnose report cost before: the whole text through import_text.
void BM_FleetDiagnose8GpuViaImportText(benchmark::State& state) {
  const std::string text = diagnose_report();
  for (auto _ : state) {
    const gpuvet::Facts facts = gpuvet::import_text(text, "node0042.json");
    auto print = gpuvet::node_print(facts);
    print.bandwidth = gpuvet::bandwidth_values(facts.measurements);
    benchmark::DoNotOptimize(print);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_FleetDiagnose8GpuViaImportText)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
