// The CPU side of `gpuvet scale`: percentiles, the summary across configurations
// (efficiency), presets, renderers, and the verdicts the rules give on recorded or
// synthetic distributions.
#include "gpuvet/scale.h"
#include "gpuvet/report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include "gpuvet/diagnose.h"

namespace gpuvet {
namespace {

TEST(Scale, Percentiles) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(*percentile(v, 50), 50.5);
  EXPECT_NEAR(*percentile(v, 99), 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(*percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(*percentile(v, 100), 100);
  EXPECT_FALSE(percentile({}, 50));
  EXPECT_DOUBLE_EQ(*percentile({7}, 99), 7);
}

TEST(Scale, PercentilesOfUnsortedSteps) {
  // Step times in the order they were measured, the slow ones first and in the middle.
  const std::vector<double> steps = {9, 1, 7, 3, 5, 10, 2, 8, 4, 6};
  EXPECT_DOUBLE_EQ(*percentile(steps, 0), 1);
  EXPECT_DOUBLE_EQ(*percentile(steps, 50), 5.5);
  EXPECT_NEAR(*percentile(steps, 90), 9.1, 1e-12);
  EXPECT_DOUBLE_EQ(*percentile(steps, 100), 10);
  EXPECT_DOUBLE_EQ(*percentile({30, 10, 20}, 50), 20);
}

TEST(Scale, PresetsAreShapedLikeModels) {
  ASSERT_NE(find_scale_preset("llm-7b-layer"), nullptr);
  EXPECT_EQ(find_scale_preset("nope"), nullptr);
  int train = 0, infer = 0;
  for (const auto& p : scale_presets()) {
    EXPECT_GT(p.flops, 1e9) << p.name;
    if (p.workload == "train") {
      ++train;
      EXPECT_GT(p.grad_bytes, 0u) << p.name;
      EXPECT_GT(p.bucket_bytes, 0u) << p.name;
    } else {
      ++infer;
      EXPECT_GT(p.layers, 0) << p.name;
      EXPECT_GT(p.tokens_per_request, 0) << p.name;
    }
  }
  EXPECT_GE(train, 3);
  EXPECT_GE(infer, 1);
  // 6 × 202.4 M parameters (4 h² + 3 h f, h 4096, f 11008) × 2048 tokens.
  EXPECT_NEAR(find_scale_preset("llm-7b-layer")->flops, 2.487e12, 0.002e12);
  EXPECT_EQ(find_scale_preset("llm-7b-layer")->hidden, 4096);
  EXPECT_EQ(find_scale_preset("llm-7b-layer")->grad_bytes, 809500672u);  // float32 gradients
}

ScaleResult result(const char* workload, int gpus, double thr, std::vector<double> steps,
                   double comm) {
  ScaleResult r;
  r.run.workload = workload;
  r.run.preset = "p";
  r.run.gpus = gpus;
  r.run.throughput = thr;
  r.run.comm_share = comm;
  r.step_ms = std::move(steps);
  return r;
}

std::vector<double> around(double base, double tail, int n = 100) {
  std::vector<double> v(n, base);
  v[n - 1] = tail;
  v[n - 2] = tail;
  return v;
}

Diagnosis judge(ScaleReport& report) {
  summarise_scale(report);
  Facts f;
  for (const auto& r : report.results) f.scale_runs.push_back(r.run);
  return diagnose(f);
}

const Finding* find(const Diagnosis& d, const std::string& id) {
  for (const auto& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

TEST(ScaleVerdict, NinetyFivePercentEfficientIsNoFinding) {
  ScaleReport r;
  r.results = {result("train", 1, 100, around(10, 11), 0.02),
               result("train", 2, 190, around(10.5, 11.5), 0.05)};
  const Diagnosis d = judge(r);
  ASSERT_TRUE(r.results[1].efficiency);
  EXPECT_NEAR(*r.results[1].efficiency, 0.95, 1e-9);
  EXPECT_EQ(find(d, "scaling-inefficient"), nullptr);
  EXPECT_EQ(find(d, "tail-latency-amplified"), nullptr);
}

TEST(ScaleVerdict, SixtyPercentWithCommShare45IsScalingInefficientComms) {
  ScaleReport r;
  r.results = {result("train", 1, 100, around(10, 11), 0.0),
               result("train", 2, 120, around(16.7, 18), 0.45)};
  const Diagnosis d = judge(r);
  const Finding* f = find(d, "scaling-inefficient");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  ASSERT_TRUE(f->bottleneck);
  EXPECT_EQ(*f->bottleneck, Bottleneck::kComms);
  EXPECT_EQ(d.bottleneck, Bottleneck::kComms);
  EXPECT_NE(f->evidence.find("0.60"), std::string::npos) << f->evidence;
}

TEST(ScaleVerdict, SixtyPercentWithLowCommShareIsCompute) {
  ScaleReport r;
  r.results = {result("train", 1, 100, around(10, 11), 0.0),
               result("train", 2, 120, around(16.7, 18), 0.05)};
  const Diagnosis d = judge(r);
  const Finding* f = find(d, "scaling-inefficient");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->bottleneck);
  EXPECT_EQ(*f->bottleneck, Bottleneck::kCompute);
}

TEST(ScaleVerdict, P99RatioIsTailLatencyAmplified) {
  ScaleReport r;
  // Throughput up 1.7×, but the tail of the 2-GPU request latencies is 1.8× the 1-GPU one.
  r.results = {result("infer", 1, 100, around(20, 21), 0.0),
               result("infer", 2, 170, around(12, 38), 0.3)};
  const Diagnosis d = judge(r);
  EXPECT_NEAR(*r.results[1].run.p99_ms, 38, 0.5);
  const Finding* f = find(d, "tail-latency-amplified");
  ASSERT_NE(f, nullptr) << (d.findings.empty() ? "" : d.findings[0].id);
  EXPECT_EQ(f->severity, Severity::kWarning);
}

TEST(Scale, RenderAndJson) {
  ScaleReport r;
  r.ran = true;
  r.peak_tflops = 61.2;
  r.results = {result("train", 1, 100, around(10, 11), 0.0),
               result("train", 2, 120, around(16.7, 18), 0.45)};
  r.results[1].error.reset();
  summarise_scale(r);
  const std::string text = render_scale_text(r);
  EXPECT_NE(text.find("0.60"), std::string::npos) << text;
  EXPECT_NE(text.find("61.2"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(scale_to_json(r));
  EXPECT_EQ(j["schema"], "gpuvet.scale/1");
  EXPECT_EQ(j["results"][1]["gpus"], 2);
  EXPECT_NEAR(j["results"][1]["efficiency"].get<double>(), 0.6, 1e-9);
}

// The isolated phases read as one sentence per configuration, and go into the JSON.
TEST(Scale, RenderSaysWhatCommunicationAloneWouldTake) {
  ScaleReport r;
  r.ran = true;
  r.results = {result("train", 1, 100, around(10, 11), 0.0),
               result("train", 8, 600, around(14.2, 15), 0.31)};
  r.results[1].error.reset();
  r.results[0].mean_ms = 10.0;
  r.results[1].mean_ms = 14.2;
  r.results[0].compute_alone_ms = 10.4;
  r.results[0].comm_alone_ms = 0.0;
  r.results[1].compute_alone_ms = 10.3;
  r.results[1].comm_alone_ms = 6.25;
  r.results[1].exposed_comm_ms = 4.4;
  r.results[1].overlap_slowdown_ms = 0.35;
  r.results[1].wrong_data.push_back({3, "bucket 2 all-reduce (…): 1 of 6553600 values wrong"});
  summarise_scale(r);
  const std::string text = render_scale_text(r);
  EXPECT_NE(text.find("p on 1 GPU: compute alone 10.40 ms of the 10.02 ms step"), std::string::npos)
      << text;
  EXPECT_NE(text.find("nothing to all-reduce"), std::string::npos) << text;
  EXPECT_NE(text.find("p on 8 GPUs: communication alone would take 6.25 ms of the 14.22 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(compute alone 10.30 ms; 4.40 ms of it exposed; compute slowed by overlap "
                      "0.35 ms)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("WRONG DATA p on 8 GPUs (GPU3): bucket 2 all-reduce"), std::string::npos)
      << text;
  const auto j = nlohmann::json::parse(scale_to_json(r));
  EXPECT_EQ(j["results"][1]["comm_alone_ms"].get<double>(), 6.25);
  EXPECT_EQ(j["results"][1]["compute_alone_ms"].get<double>(), 10.3);
  EXPECT_EQ(j["results"][1]["exposed_comm_ms"].get<double>(), 4.4);
  EXPECT_TRUE(j["results"][0]["exposed_comm_ms"].is_null());
  EXPECT_EQ(j["results"][1]["overlap_slowdown_ms"].get<double>(), 0.35);
  EXPECT_EQ(j["results"][1]["wrong_data"][0]["gpu"], 3);
}

// At a fixed offered load every GPU count serves the same requests per second: efficiency
// compares latency (ideal N-way tensor parallelism answers N times sooner), never 1/N.
TEST(ScaleVerdict, AtAFixedRateEfficiencyComparesLatencyNotThroughput) {
  ScaleReport r;
  r.results = {result("infer", 1, 50, around(8.0, 9.0), 0.0),
               result("infer", 2, 50, around(4.2, 5.0), 0.1)};
  for (auto& x : r.results) x.run.offered_rate_hz = 50;
  Diagnosis d = judge(r);
  ASSERT_TRUE(r.results[1].efficiency);
  EXPECT_NEAR(*r.results[1].efficiency, 8.0 / (2 * 4.2), 1e-9);  // not 50 / (2 × 50)
  EXPECT_EQ(find(d, "scaling-inefficient"), nullptr);

  // Two GPUs that answer no sooner than one: inefficient, said in latency terms.
  r.results[1].step_ms = around(7.9, 9.0);
  d = judge(r);
  const Finding* f = find(d, "scaling-inefficient");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("offered"), std::string::npos) << f->evidence;
  EXPECT_NEAR(*r.results[1].efficiency, 8.0 / (2 * 7.9), 1e-9);
}

// A check that failed in a run is data-corruption, critical, on the GPU it names; the run's
// figures are still judged beside it.
TEST(ScaleVerdict, AFailedCheckIsDataCorruption) {
  ScaleReport r;
  r.ran = true;
  r.results = {result("train", 1, 100, around(10, 11), 0.0)};
  r.results[0].wrong_data.push_back(
      {1, "the layer 0 QKV forward GEMM (2048×12288×4096) gave 1 of 64 sampled outputs wrong"});
  summarise_scale(r);
  const Facts f = scale_facts(r);
  ASSERT_EQ(f.scale_runs.size(), 1u);
  const Diagnosis d = diagnose(f);
  const Finding* fd = find(d, "data-corruption");
  ASSERT_NE(fd, nullptr);
  EXPECT_EQ(fd->severity, Severity::kCritical);
  EXPECT_NE(fd->evidence.find("QKV forward GEMM"), std::string::npos) << fd->evidence;
  EXPECT_EQ(fd->subjects, std::vector<std::string>{"GPU1"});
  EXPECT_TRUE(finding_measured_by("data-corruption", kByScale));
}

TEST(Scale, NothingRunsWithoutAGpuAndSaysWhy) {
  ScaleOptions o;
  o.presets = {"cnn-small"};
  const SystemEnv env;
  const ScaleReport r = run_scale(o, env);
  EXPECT_FALSE(r.ran);
  EXPECT_TRUE(r.results.empty());
  ASSERT_FALSE(r.notes.empty());
  o.presets = {"no-such-preset"};
  EXPECT_NE(run_scale(o, env).notes.front().find("unknown preset"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet
