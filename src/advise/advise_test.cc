// gpuvet advise: each branch of the article's buying checklist on a workload and candidates
// whose numbers are worked out by hand in the comments (GB = 1e9 bytes), the α–β fit on
// synthetic sweeps, the workload and candidate parsers, and the refusals of impossible input.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fixture_util.h"
#include "gpuvet/advise.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"

namespace gpuvet {
namespace {

bool has(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

std::string all(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += "  " + l + "\n";
  return s;
}

std::string dump(const AdviseReport& r) {
  return std::string(recommendation_name(r.recommendation)) + ": " + r.summary + "\ndeciding:\n" +
         all(r.deciding) + "would change:\n" + all(r.would_change) + "notes:\n" + all(r.notes);
}

double term(const OptionResult& o, const std::string& name) {
  for (const auto& t : o.memory)
    if (t.name == name) return t.value;
  for (const auto& t : o.time)
    if (t.name == name) return t.value;
  ADD_FAILURE() << "no term " << name << " in " << o.label;
  return NAN;
}

// A 1.3B decoder (24 layers, hidden 2048) trained in bf16 with Adam, one 2048-token sequence
// per GPU.
Workload small_train() {
  Workload w;
  w.mode = AdviseMode::kTrain;
  w.model = {1.3e9, 24, 2048, 16, 0, 0};
  w.batch_per_gpu = 1;
  w.seq_len = 2048;
  return w;
}

Workload llama7b_infer() {
  Workload w;
  w.mode = AdviseMode::kInfer;
  w.model = find_model_preset("llama2-7b")->shape;  // 6.74e9, 32 layers, 4096, 32 heads
  w.batch_per_gpu = 1;
  w.seq_len = 2048;
  w.output_tokens = 256;
  return w;
}

GpuFacts gpu(int index, const char* name, double memory_gb, int gen = 4) {
  GpuFacts g;
  g.index = index;
  g.name = name;
  g.memory.total_bytes = static_cast<std::uint64_t>(memory_gb * 1e9);
  g.pcie.gen_max = gen;
  g.pcie.width_max = 16;
  return g;
}

// A gpuvet bench all-reduce sweep made from α, busbw and N, rows labelled as bench labels them
// ("1 MiB", no size_bytes): t = 2(N−1)·α + 2(N−1)/N · S/busbw, algbw = S/t, busbw = algbw ×
// 2(N−1)/N.
std::vector<Measurement> sweep(double alpha_us, double busbw_gbps, int n) {
  std::vector<Measurement> out;
  const std::pair<double, const char*> sizes[] = {
      {8, "8 B"}, {1 << 20, "1 MiB"}, {64.0 * (1 << 20), "64 MiB"}, {512.0 * (1 << 20), "512 MiB"}};
  for (const auto& [s, label] : sizes) {
    const double t = 2.0 * (n - 1) * alpha_us + 2.0 * (n - 1) / n * s / (busbw_gbps * 1e3);
    Measurement m;
    m.tool = "gpuvet";
    m.test = "all_reduce_perf";
    m.note = label;
    m.latency_us = t;
    m.bandwidth_gbps = s / (t * 1e3);
    m.busbw_gbps = *m.bandwidth_gbps * 2.0 * (n - 1) / n;
    out.push_back(m);
  }
  return out;
}

AdviseReport run(const AdviseInput& in) {
  auto r = advise(in);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? r.value() : AdviseReport{};
}

// ------------------------------------------------------------------ memory: does not fit

TEST(AdviseChecklist, A13BModelInDdpOnTwo24GbGpusDoesNotFit) {
  Workload w;
  w.mode = AdviseMode::kTrain;
  w.model = {13e9, 40, 5120, 40, 0, 0};
  w.sharding = Sharding::kNone;
  AdviseInput in{w, {{2, "RTX4090"}}, std::nullopt, {}};
  const AdviseReport r = run(in);
  ASSERT_EQ(r.candidates.size(), 1u);
  const OptionResult& o = r.candidates[0];
  // Mixed-precision Adam, DDP: 2 + 2 + 12 = 16 B per parameter on every GPU.
  //   weights 2 × 13e9 = 26 GB, gradients 26 GB, optimizer 12 × 13e9 = 156 GB: 208 GB.
  EXPECT_NEAR(term(o, "weights"), 26.0, 1e-9);
  EXPECT_NEAR(term(o, "gradients"), 26.0, 1e-9);
  EXPECT_NEAR(term(o, "optimizer states"), 156.0, 1e-9);
  // Activations: 40 layers × 34 × s·b·h = 40 × 34 × 2048 × 1 × 5120 = 14,260,633,600 B.
  EXPECT_NEAR(term(o, "activations"), 14.2606336, 1e-9);
  EXPECT_NEAR(o.memory_gb, 222.2606336, 1e-9);
  // Usable: 24 GB × (1 − 0.2) = 19.2 GB ≪ 222.3 GB.
  EXPECT_NEAR(o.usable_gb, 19.2, 1e-9);
  EXPECT_FALSE(o.fits);
  EXPECT_EQ(r.recommendation, Recommendation::kDoesNotFit) << dump(r);
  EXPECT_TRUE(has(r.deciding, "data parallelism does not add VRAM")) << dump(r);
  // ZeRO-3 on 2: 208 / 2 + 14.26 = 118.26 GB, still too much; the least N with
  // 208 / N + 14.2606 ≤ 19.2 is N = 43 (208 / 42 = 4.952 → 19.213; 208 / 43 = 4.837 → 19.098).
  EXPECT_TRUE(has(r.would_change,
                  "with ZeRO-3 it fits on 43×NVIDIA GeForce RTX 4090 24GB: 19.1 "
                  "GB per GPU of 19.2 GB usable (on 2×NVIDIA GeForce RTX 4090 "
                  "24GB: 118.3 GB per GPU)"))
      << dump(r);
  // One GPU alone needs 222.3 GB usable, 277.8 GB with 20 % free: the largest catalog GPU
  // (B200, 180 GB) does not.
  EXPECT_TRUE(has(r.would_change,
                  "one GPU alone needs 222.3 GB usable, 277.8 GB with 20 % kept "
                  "free: no GPU in the catalog holds that"))
      << dump(r);
}

TEST(AdviseChecklist, ShardingThatFitsIsModelParallelRequired) {
  // The same 13B with activation checkpointing: activations = 40 × 2·s·b·h + 34·s·b·h
  // = 114 × 10,485,760 = 1,195,376,640 B. DDP on 2×H200: 208 + 1.195 = 209.2 GB > 141 × 0.8 =
  // 112.8 GB. ZeRO-3 on 2: 104 + 1.195 = 105.2 GB ≤ 112.8: model parallelism is required.
  Workload w;
  w.mode = AdviseMode::kTrain;
  w.model = {13e9, 40, 5120, 40, 0, 0};
  w.activation_checkpointing = true;
  const AdviseReport r = run({w, {{2, "H200"}}, std::nullopt, {}});
  EXPECT_NEAR(term(r.candidates[0], "activations"), 1.19537664, 1e-9);
  EXPECT_FALSE(r.candidates[0].fits);
  EXPECT_EQ(r.recommendation, Recommendation::kModelParallelRequired) << dump(r);
  EXPECT_TRUE(has(r.deciding,
                  "with ZeRO-3: 2×NVIDIA H200 SXM 141GB: 105.2 GB per GPU of 112.8 GB "
                  "usable"))
      << dump(r);
}

TEST(AdviseChecklist, MoreVramForOneModelPrefersOneBiggerGpu) {
  // llama2-7b training in DDP with checkpointing: 16 × 6.74e9 = 107.84 GB + activations
  // 32 × 2 × 2048 × 4096 × 2 B/2 … = (64 + 34) × 8,388,608 = 822,083,584 B: 108.66 GB.
  // One 80 GB H100 holds 64 GB: no; one H200 holds 112.8 GB: yes → one bigger GPU.
  Workload w;
  w.mode = AdviseMode::kTrain;
  w.model = find_model_preset("llama2-7b")->shape;
  w.activation_checkpointing = true;
  const AdviseReport r = run({w, {{2, "H100"}, {1, "H200"}}, std::nullopt, {}});
  EXPECT_NEAR(r.candidates[1].memory_gb, 107.84 + 0.822083584, 1e-9);
  EXPECT_TRUE(r.candidates[1].fits);
  EXPECT_FALSE(r.candidates[0].fits);  // DDP: the same 108.7 GB on each H100
  EXPECT_EQ(r.recommendation, Recommendation::kOneBiggerGpu) << dump(r);
  EXPECT_TRUE(has(r.would_change, "data parallelism does not add VRAM")) << dump(r);
}

// ------------------------------------------------------------------ independent jobs

TEST(AdviseChecklist, ManyIndependentInferenceJobsAddGpusAsJobs) {
  Workload w = llama7b_infer();
  w.mode = AdviseMode::kJobs;
  w.job = AdviseMode::kInfer;
  const AdviseReport r = run({w, {{2, "L40S"}}, std::nullopt, {}});
  const OptionResult& o = r.candidates[0];
  // One job per GPU: weights 2 B × 6.74e9 = 13.48 GB; KV cache 2 · 32 layers · 32 heads · 128 ·
  // 2 B = 524,288 B per token × 2048 tokens = 1,073,741,824 B. 14.55 GB ≤ 48 × 0.8 = 38.4 GB.
  EXPECT_NEAR(o.memory_gb, 13.48 + 1.073741824, 1e-9);
  EXPECT_TRUE(o.fits);
  // Per token: 14.553741824e9 B / 864e9 B/s = 16.8446 ms (compute 2·Ψ / 181 TFLOP/s = 0.074 ms
  // is less); prefill 2 × 6.74e9 × 2048 / (362 × 0.5 TFLOP/s) = 152.525 ms; a request
  // 152.525 + 256 × 16.8446 = 4464.74 ms; one GPU 256 / 4.46475 s = 57.34 tokens/s, two 114.68.
  EXPECT_NEAR(term(o, "per token"), 16.84460859, 1e-6);
  EXPECT_NEAR(term(o, "prefill"), 152.5250829, 1e-6);
  ASSERT_TRUE(o.throughput);
  EXPECT_NEAR(*o.throughput, 2 * 256 / (152.5250829 + 256 * 16.84460859) * 1e3, 1e-6);
  EXPECT_EQ(o.efficiency, 1.0);
  EXPECT_EQ(r.recommendation, Recommendation::kAddGpuIndependentJobs) << dump(r);
}

// ------------------------------------------------------------------ latency

TEST(AdviseChecklist, AP99TargetWithTensorParallelismOverPcieKeepsOneGpuPerRequestPath) {
  Workload w = llama7b_infer();
  w.sharding = Sharding::kTensor;
  w.latency_p99_ms = 6000;
  NodeEvidence node;
  node.origin = "2x L40S";
  node.facts.gpus = {gpu(0, "NVIDIA L40S", 48), gpu(1, "NVIDIA L40S", 48)};
  node.facts.pairs = {{0, 1, PathType::kPIX}};
  // Measured over this PCIe pair: α 20 µs per ring step, busbw 10 GB/s.
  node.bench = sweep(20, 10, 2);
  node.bench_origin = "bench.json";
  ScaleEvidence scale;
  scale.origin = "scale.json";
  scale.spreads = {{"infer", "decoder-7b", 1, 1.10}, {"infer", "decoder-7b", 2, 1.60}};
  node.scale = scale;
  const AdviseReport r = run({w, {{2, "this"}}, node, {}});
  ASSERT_TRUE(r.fit);
  EXPECT_NEAR(r.fit->alpha_us, 20, 1e-6);
  EXPECT_NEAR(r.fit->busbw_gbps, 10, 1e-6);
  const OptionResult& tp = r.candidates[0];
  // TP = 2: per token 14.5537e9 B / (2 × 864e9) = 8.4223 ms, plus 2 all-reduces per layer × 32
  // layers of batch·hidden·2 B = 8192 B, each 2(2−1)·20 µs + 2(2−1)/2 · 8192 B / 10 GB/s =
  // 40.8192 µs: 2.6124 ms of all-reduce on every token.
  EXPECT_NEAR(term(tp, "decode: TP all-reduces"), 64 * 40.8192 / 1e3, 1e-9);
  EXPECT_NEAR(term(tp, "per token"), 8.422304296 + 2.6124288, 1e-6);
  // One GPU per request: p50 4464.75 ms (previous test) × the measured 1-GPU p99/p50 1.10 =
  // 4911.2 ms ≤ 6000 ms: the target is met without splitting the model.
  EXPECT_EQ(r.recommendation, Recommendation::kAddGpuIndependentJobs) << dump(r);
  EXPECT_TRUE(has(r.deciding, "one GPU per request: p99 4911 ms ≤ p99 target 6000 ms")) << dump(r);
  EXPECT_TRUE(has(r.deciding, "2.61 ms of all-reduces on every token's critical path")) << dump(r);
  // The TP p99 uses the 2-GPU spread (1.60).
  ASSERT_TRUE(tp.p99_ms);
  EXPECT_NEAR(*tp.p99_ms / *tp.step_ms, 1.60, 1e-12);
}

TEST(AdviseChecklist, ALatencyTargetOneGpuMissesButABiggerOneMeets) {
  // One L40S: 4464.75 ms p50 (no spread measured: p99 = p50). One H200: (14.5537e9 / 4800e9)
  // = 3.0320 ms per token, prefill 2 × 6.74e9 × 2048 / (989 × 0.5 TFLOP/s) = 55.82 ms:
  // 55.82 + 256 × 3.032 = 832 ms ≤ 1000 ms.
  Workload w = llama7b_infer();
  w.latency_p99_ms = 1000;
  const AdviseReport r = run({w, {{2, "L40S"}, {1, "H200"}}, std::nullopt, {}});
  ASSERT_TRUE(r.candidates[1].p99_ms);
  EXPECT_NEAR(*r.candidates[1].p99_ms,
              2 * 6.74e9 * 2048 / 494.5e12 * 1e3 + 256 * 14.553741824e9 / 4800e9 * 1e3, 1e-6);
  EXPECT_EQ(r.recommendation, Recommendation::kOneBiggerGpu) << dump(r);
}

// ------------------------------------------------------------------ host limits

TEST(AdviseChecklist, AnIoBoundNodeFixesTheHostFirst) {
  // The article's task 9 (iostat: 18.7 % iowait, nvme0n1 92 % busy) on a node with one H100.
  auto f = import_paste(gpuvet::testing::read_file(gpuvet::testing::fixture("article/task-09.txt")),
                        "task-09.txt");
  ASSERT_TRUE(f.is_ok());
  NodeEvidence node;
  node.origin = "task-09.txt";
  node.facts = f.value();
  node.facts.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", 80, 5)};
  node.diagnosis = diagnose(node.facts);
  const AdviseReport r = run({small_train(), {{2, "this"}}, node, {}});
  EXPECT_EQ(r.recommendation, Recommendation::kFixHostFirst) << dump(r);
  EXPECT_TRUE(has(r.host_limits, "io-bound (nvme0n1)")) << all(r.host_limits);
  ASSERT_TRUE(r.candidates[0].useful_gpus);
  EXPECT_EQ(*r.candidates[0].useful_gpus, 1);
  // With the host fixed, the rest of the checklist: 1.3B fits one H100 (16 × 1.3 = 20.8 GB +
  // 24 × 34 × 2048 × 2048 B = 3.42 GB) and the catalog NVLink (450 × 0.8 = 360 GB/s, α 2 µs) is
  // cheap: compute 6 × 1.3e9 × 2048 / 494.5 TFLOP/s = 32.30 ms; 2.6 GB of gradients in 100
  // buckets of 26 MB: 100 × (2 × 2 µs + 26e6 / 360e3 µs) = 7.622 ms, half exposed: 3.811 ms;
  // efficiency 32.304 / (32.304 + 3.811) = 0.8945.
  EXPECT_TRUE(has(r.would_change, "with the host fixed, the checklist says add-gpu-data-parallel"))
      << dump(r);
  EXPECT_NEAR(*r.candidates[0].efficiency, 32.3041456 / (32.3041456 + 3.8111111), 1e-6);
}

// ------------------------------------------------------------------ topology

TEST(AdviseChecklist, ADualSocketSysPairWithHeavySyncChecksTopologyFirst) {
  NodeEvidence node;
  node.origin = "2x L40S, two sockets";
  node.facts.host.sockets = 2;
  node.facts.gpus = {gpu(0, "NVIDIA L40S", 48), gpu(1, "NVIDIA L40S", 48)};
  node.facts.pairs = {{0, 1, PathType::kSYS}};
  node.bench = sweep(10, 12, 2);  // measured across the sockets: α 10 µs, busbw 12 GB/s
  node.bench_origin = "bench.json";
  const AdviseReport r = run({small_train(), {{2, "this"}}, node, {}});
  const OptionResult& o = r.candidates[0];
  EXPECT_TRUE(o.crosses_sys);
  // Compute 6 × 1.3e9 × 2048 / (362 × 0.5) TFLOP/s = 88.256 ms. All-reduce of 2.6 GB in 100
  // buckets: 100 × (2 × 10 µs + 26e6 B / 12e3 B/µs) = 100 × 2186.67 µs = 218.67 ms; half
  // exposed: 109.33 ms. Step 197.59 ms: the all-reduce costs 55 % of it.
  EXPECT_NEAR(term(o, "compute per step"), 88.25635359, 1e-6);
  EXPECT_NEAR(term(o, "gradient all-reduce"), 218.6666667, 1e-6);
  EXPECT_NEAR(*o.comm_share, 109.3333333 / (88.25635359 + 109.3333333), 1e-9);
  EXPECT_EQ(r.recommendation, Recommendation::kCheckTopologyFirst) << dump(r);
  EXPECT_NE(r.summary.find("Over this SYS path the gradient all-reduce costs 55 % of the step"),
            std::string::npos)
      << r.summary;
  // Under one socket (PCIe Gen4 x16: 31.5 × 0.8 = 25.2 GB/s, α 3 µs): 100 × (6 + 26e6/25.2e3)
  // = 103.78 ms, half exposed 51.89 ms: 37 % of a 140.14 ms step.
  EXPECT_TRUE(has(r.would_change, "the all-reduce would cost 37 % of the step")) << dump(r);
}

TEST(AdviseChecklist, AModelThatFitsOneGpuWithCheapNvlinkCommsAddsAGpu) {
  NodeEvidence node;
  node.origin = "2x H100 NVLink";
  node.facts.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", 80, 5),
                     gpu(1, "NVIDIA H100 80GB HBM3", 80, 5)};
  GpuPair p{0, 1, PathType::kNVLink};
  p.nvlinks = 18;
  node.facts.pairs = {p};
  node.bench = sweep(3, 350, 2);
  node.bench_origin = "bench.json";
  Workload w = small_train();
  w.batch_per_gpu = 4;
  const AdviseReport r = run({w, {{2, "this"}}, node, {}});
  const OptionResult& o = r.candidates[0];
  // Memory 20.8 GB + 24 × 34 × 2048 × 4 × 2048 B = 13.69 GB: 34.49 GB ≤ 64 GB.
  EXPECT_TRUE(o.fits);
  // Compute 6 × 1.3e9 × 8192 / 494.5 TFLOP/s = 129.2166 ms; all-reduce 100 × (2 × 3 µs + 26e6 /
  // 350e3) = 8.0286 ms, half exposed 4.0143 ms; efficiency 129.217 / 133.231 = 0.970.
  EXPECT_NEAR(term(o, "gradient all-reduce"), 8.028571429, 1e-6);
  EXPECT_NEAR(*o.efficiency, 129.2165824 / (129.2165824 + 4.0142857), 1e-6);
  EXPECT_EQ(r.recommendation, Recommendation::kAddGpuDataParallel) << dump(r);
  EXPECT_TRUE(o.comm_measured);
  // Throughput 2 × 8192 tokens / 133.231 ms = 122,975 tokens/s: a target of 100,000 is met.
  EXPECT_NEAR(*o.throughput, 2 * 8192 / (129.2165824 + 4.0142857) * 1e3, 1e-3);
  w.throughput_target = 100000;
  const AdviseReport t = run({w, {{2, "this"}}, node, {}});
  EXPECT_TRUE(has(t.deciding,
                  "throughput target 100000 tokens/s: met by 2×NVIDIA H100 80GB HBM3 "
                  "(this node) (122975); missed by none"))
      << dump(t);
}

// ------------------------------------------------------------------ the α–β fit

TEST(AdviseAlphaBeta, AFitRecoversAlphaAndBusbwOfASyntheticSweep) {
  // 8 GPUs, α 2.5 µs, busbw 300 GB/s: rows as gpuvet bench writes them.
  auto s = allreduce_sweep(sweep(2.5, 300, 8));
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s.value().size(), 4u);
  EXPECT_EQ(s.value()[1].size_bytes, 1 << 20);  // from the row label "1 MiB"
  EXPECT_EQ(s.value()[0].ranks, 8);             // busbw / algbw = 1.75 = 2(N−1)/N
  auto fit = fit_alpha_beta(s.value(), "synthetic");
  ASSERT_TRUE(fit.is_ok()) << fit.status().message();
  EXPECT_NEAR(fit->alpha_us, 2.5, 1e-6);
  EXPECT_NEAR(fit->busbw_gbps, 300, 1e-6);
  EXPECT_EQ(fit->ranks, 8);
  EXPECT_LT(fit->max_residual, 1e-9);
  // And the model gives back the measured times.
  EXPECT_NEAR(ring_allreduce_us(fit.value(), 8, 512.0 * (1 << 20)), s.value()[3].time_us, 1e-6);
}

TEST(AdviseAlphaBeta, ANoisySweepStillFitsNearTheTruth) {
  auto rows = sweep(5, 100, 2);
  const double noise[] = {1.03, 0.98, 1.02, 0.99};
  for (std::size_t i = 0; i < rows.size(); ++i) *rows[i].latency_us *= noise[i];
  auto fit = fit_alpha_beta(allreduce_sweep(rows).value(), "noisy");
  ASSERT_TRUE(fit.is_ok());
  EXPECT_NEAR(fit->alpha_us, 5, 0.25);
  EXPECT_NEAR(fit->busbw_gbps, 100, 3);
}

TEST(AdviseAlphaBeta, FewerThanTwoSizesOneGpuOrMixedCountsAreRefused) {
  std::vector<AllReduceSample> one_size = {{1 << 20, 50, 2}, {1 << 20, 52, 2}};
  auto r = fit_alpha_beta(one_size, "x.json");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("1 distinct message size(s); fitting α and busbw needs at "
                                      "least 2"),
            std::string::npos)
      << r.status().message();
  std::vector<AllReduceSample> one_gpu = {{8, 5, 1}, {1 << 20, 9, 1}};
  EXPECT_NE(fit_alpha_beta(one_gpu, "x").status().message().find("crosses no link"),
            std::string::npos);
  std::vector<AllReduceSample> mixed = {{8, 5, 2}, {1 << 20, 9, 4}};
  EXPECT_FALSE(fit_alpha_beta(mixed, "x").is_ok());
  // A 1-GPU bench run has busbw 0: its GPU count is 1.
  Measurement m;
  m.test = "all_reduce_perf";
  m.note = "1 MiB";
  m.latency_us = 10;
  m.bandwidth_gbps = 100;
  m.busbw_gbps = 0;
  EXPECT_EQ(allreduce_sweep({m}).value()[0].ranks, 1);
  EXPECT_FALSE(allreduce_sweep({}).is_ok());
}

TEST(AdviseAlphaBeta, AnUnfittableSweepFallsBackToTheCatalogAndSaysSo) {
  NodeEvidence node;
  node.origin = "n";
  node.facts.gpus = {gpu(0, "NVIDIA H100 80GB HBM3", 80, 5)};
  node.bench = {sweep(3, 300, 2)[1]};  // one size only
  node.bench_origin = "bench.json";
  const AdviseReport r = run({small_train(), {{2, "this"}}, node, {}});
  EXPECT_FALSE(r.fit);
  EXPECT_TRUE(has(r.notes, "bench.json: 1 distinct message size(s)")) << all(r.notes);
}

// ------------------------------------------------------------------ inputs

TEST(AdviseInputs, CandidatesParseAndRefuseZeroGpusAndUnknownModels) {
  auto c = parse_candidates("2xthis, 1xH200,2×rtx4090,L40S");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  ASSERT_EQ(c.value().size(), 4u);
  EXPECT_EQ(c.value()[0].gpu, "this");
  EXPECT_EQ(c.value()[1].gpu, "H200");
  EXPECT_EQ(c.value()[2].count, 2);
  EXPECT_EQ(c.value()[2].gpu, "RTX4090");
  EXPECT_EQ(c.value()[3].count, 1);
  EXPECT_NE(parse_candidates("0xthis").status().message().find("1 to 64"), std::string::npos);
  EXPECT_NE(parse_candidates("-2xH200").status().message().find("1 to 64"), std::string::npos);
  EXPECT_NE(parse_candidates("2xH300").status().message().find("unknown GPU model 'H300'"),
            std::string::npos);
  EXPECT_FALSE(parse_candidates("").is_ok());
}

TEST(AdviseInputs, TheCatalogFindsModelsByIdAndByNvmlName) {
  EXPECT_STREQ(find_gpu_model("NVIDIA H100 80GB HBM3")->id, "H100");
  EXPECT_STREQ(find_gpu_model("NVIDIA H100 PCIe")->id, "H100PCIE");
  EXPECT_STREQ(find_gpu_model("NVIDIA H200 NVL")->id, "H200NVL");
  EXPECT_STREQ(find_gpu_model("NVIDIA L40S")->id, "L40S");
  EXPECT_STREQ(find_gpu_model("NVIDIA L4")->id, "L4");
  EXPECT_STREQ(find_gpu_model("NVIDIA A10")->id, "A10");
  EXPECT_STREQ(find_gpu_model("NVIDIA A100-SXM4-80GB")->id, "A100");
  EXPECT_STREQ(find_gpu_model("NVIDIA GeForce RTX 4090")->id, "RTX4090");
  EXPECT_STREQ(find_gpu_model("rtx-4090")->id, "RTX4090");
  EXPECT_EQ(find_gpu_model("NVIDIA Tesla T4"), nullptr);
  for (const auto& g : gpu_catalog()) {
    EXPECT_TRUE(std::string(g.source).starts_with("https://")) << g.id;
    EXPECT_GT(g.memory_gb, 0) << g.id;
    EXPECT_GT(g.bf16_dense_tflops, 0) << g.id;
    EXPECT_GT(g.hbm_gbps, 0) << g.id;
    EXPECT_GT(g.link_gbps, 0) << g.id;
  }
}

TEST(AdviseInputs, ImpossibleWorkloadsAreRefusedWithOneSentence) {
  Workload w = small_train();
  w.model.params = -1;
  EXPECT_NE(validate_workload(w).message().find("positive parameter count"), std::string::npos);
  w = small_train();
  w.batch_per_gpu = 0;
  EXPECT_FALSE(validate_workload(w).is_ok());
  w = small_train();
  w.seq_len = -5;
  EXPECT_FALSE(validate_workload(w).is_ok());
  w = llama7b_infer();
  w.latency_p99_ms = 0;
  EXPECT_NE(validate_workload(w).message().find("positive number of milliseconds"),
            std::string::npos);
  w = small_train();
  w.precision = Precision::kInt4;
  EXPECT_NE(validate_workload(w).message().find("training in int4 is not modelled"),
            std::string::npos);
  w = small_train();
  w.model.hidden = 2050;  // not a multiple of 16 heads
  EXPECT_FALSE(validate_workload(w).is_ok());
  // "this" without a node, an unknown model: refused by advise() itself.
  EXPECT_FALSE(advise({small_train(), {{2, "this"}}, std::nullopt, {}}).is_ok());
  EXPECT_FALSE(advise({small_train(), {{2, "H300"}}, std::nullopt, {}}).is_ok());
  AdviseOptions bad;
  bad.headroom = 1.0;
  EXPECT_FALSE(advise({small_train(), {{2, "H100"}}, std::nullopt, bad}).is_ok());
}

TEST(AdviseInputs, AWorkloadFileReadsEveryKeyAndRefusesUnknownOnes) {
  std::string candidates;
  auto w = parse_workload_toml(R"([workload]
mode = "infer"
model = "llama3-8b"
precision = "fp8"
sharding = "tensor"
batch_per_gpu = 8
seq_len = 4096
output_tokens = 128
latency_p99_ms = 2500
candidates = "2xthis,1xH200"
)",
                               "w.toml", &candidates);
  ASSERT_TRUE(w.is_ok()) << w.status().message();
  EXPECT_EQ(w->mode, AdviseMode::kInfer);
  EXPECT_EQ(w->model.kv_heads, 8);
  EXPECT_EQ(w->precision, Precision::kFp8);
  EXPECT_EQ(w->sharding, Sharding::kTensor);
  EXPECT_EQ(w->batch_per_gpu, 8);
  EXPECT_EQ(*w->latency_p99_ms, 2500);
  EXPECT_EQ(candidates, "2xthis,1xH200");
  // llama3-8b KV cache: 2 · 32 layers · 8 KV heads · 128 · 1 B (fp8) = 65,536 B per token.
  EXPECT_NEAR(estimate_memory(w.value(), 1, Sharding::kNone).kv_cache, 65536.0 * 4096 * 8, 1e-3);
  auto typo = parse_workload_toml("[workload]\nbatch = 4\n", "w.toml", nullptr);
  EXPECT_NE(typo.status().message().find("unknown key 'batch'"), std::string::npos);
  auto type = parse_workload_toml("[workload]\nlayers = \"many\"\n", "w.toml", nullptr);
  EXPECT_NE(type.status().message().find("'layers' must be a whole number"), std::string::npos);
}

// ------------------------------------------------------------------ memory per ZeRO stage

TEST(AdviseMemory, ZeroStagesFollowThePaper) {
  // Mixed-precision Adam, Ψ = 1e9, N = 4 (ZeRO paper, table 1 with K = 12):
  //   DDP 16Ψ = 16 GB; ZeRO-1 4Ψ + 12Ψ/N = 4 + 3 = 7 GB; ZeRO-2 2Ψ + 14Ψ/N = 2 + 3.5 = 5.5 GB;
  //   ZeRO-3 16Ψ/N = 4 GB.
  Workload w = small_train();
  w.model.params = 1e9;
  const auto states = [&](Sharding s) {
    const MemoryEstimate m = estimate_memory(w, 4, s);
    return (m.weights + m.gradients + m.optimizer) / 1e9;
  };
  EXPECT_DOUBLE_EQ(states(Sharding::kNone), 16);
  EXPECT_DOUBLE_EQ(states(Sharding::kZero1), 7);
  EXPECT_DOUBLE_EQ(states(Sharding::kZero2), 5.5);
  EXPECT_DOUBLE_EQ(states(Sharding::kZero3), 4);
  // Data parallelism does not add VRAM: DDP on 8 GPUs holds what one GPU holds.
  EXPECT_DOUBLE_EQ(estimate_memory(w, 8, Sharding::kNone).total(),
                   estimate_memory(w, 1, Sharding::kNone).total());
}

}  // namespace
}  // namespace gpuvet
