// GPU-only check (ctest label "gpu"): the scaling engine on the real GPUs of this node. The
// FMA peak is plausible, a small training step and a small decode request run on one GPU with
// sane times and a GEMM rate below the peak, the memory check refuses an impossible config,
// the sustained mode fills its trace, and with two GPUs (and NCCL) the all-reduce shows up
// as communication time, more of it exposed without overlap than with. The FMA peak is held
// within ±10 % of SMs × FP32 lanes × 2 × the peak SM clock. Prints what it measured so a run
// can be recorded.
#include "scale/scale_engine.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "gpu/nccl_lib.h"
#include "scale/step_schedule.h"

namespace gpuvet::scale {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// Measured once for the whole suite (≈0.5 s).
double peak_tflops() {
  static const double peak = [] {
    std::string error;
    std::string method;
    const auto p = measure_peak_tflops(0, "", &method, &error);
    std::printf("dense bf16 GEMM peak: %s\n", method.c_str());
    if (!p) std::printf("peak not measured: %s\n", error.c_str());
    return p.value_or(0.0);
  }();
  return peak;
}

ScalePreset small_train() {
  ScalePreset p;
  p.name = "test-train";
  p.workload = "train";
  p.flops = 4 * 2.0 * 2048.0 * 2048.0 * 2048.0;  // ≈69 GFLOP per step
  p.grad_bytes = 64 * kMiB;
  p.bucket_bytes = 16 * kMiB;  // 4 buckets, 4 compute chunks
  return p;
}

ScalePreset small_infer() {
  ScalePreset p;
  p.name = "test-infer";
  p.workload = "infer";
  p.flops = 4 * 2.0 * 512.0 * 512.0 * 512.0;  // per token, all layers
  p.layers = 4;
  p.activation_bytes = 64 * 1024;
  p.tokens_per_request = 8;
  return p;
}

EngineConfig config(const ScalePreset& p, int gpus) {
  EngineConfig c;
  c.preset = p;
  for (int i = 0; i < gpus; ++i) c.devices.push_back(i);
  c.warmup_steps = 2;
  c.steps = 10;
  return c;
}

void print(const ScaleResult& r) {
  std::printf(
      "%s on %d GPU(s): mean %.3f ms, compute %.3f ms, comm %.3f ms, comm share %.3f, "
      "throughput %.2f/s, %.2f TFLOP/s%s%s\n",
      r.run.preset.c_str(), r.run.gpus, r.mean_ms.value_or(-1), r.compute_ms.value_or(-1),
      r.comm_ms.value_or(-1), r.run.comm_share.value_or(-1), r.run.throughput.value_or(-1),
      r.achieved_tflops.value_or(-1), r.error ? "  ERROR: " : "", r.error ? r.error->c_str() : "");
  for (const auto& n : r.notes) std::printf("  note: %s\n", n.c_str());
}

class ScaleEngineGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    gpus_ = device_count();
    if (gpus_ < 1) GTEST_SKIP() << "no CUDA device";
  }
  int gpus_ = 0;
};

// FP32 FMA lanes per SM: 64 on compute capability 6.0, 7.x and 8.0 (P100, V100, A100), 128
// on the others since Ampere's GA10x (A10, L40, H100, H200, B200).
int fp32_lanes_per_sm(int major, int minor) {
  if (major == 7 || (major == 8 && minor == 0) || (major == 6 && minor == 0)) return 64;
  return 128;
}

TEST_F(ScaleEngineGpu, PeakIsPlausible) {
  const double peak = peak_tflops();
  std::printf("dense bf16 GEMM rate of GPU0: %.1f TFLOP/s\n", peak);
  EXPECT_GT(peak, 10.0);
  EXPECT_LT(peak, 2500.0);
  int sms = 0, khz = 0, major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  // Tensor cores: far above the FP32 CUDA-core rate (H200: 132 SMs × 128 × 2 FLOP × 1.98
  // GHz = 66.9 TFLOP/s FP32; dense bf16 989 TFLOP/s in NVIDIA's datasheet).
  const double fp32 = sms * fp32_lanes_per_sm(major, minor) * 2.0 * khz * 1e3 / 1e12;
  std::printf("GPU0: %d SMs, sm_%d%d, %.0f MHz: %.1f TFLOP/s theoretical FP32\n", sms, major, minor,
              khz / 1e3, fp32);
  EXPECT_GE(peak, 4 * fp32);
  std::string error, method;
  EXPECT_FALSE(measure_peak_tflops(gpus_, "", &method, &error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
}

// The layer's 12 GEMMs run at the rate of one big GEMM timed alone: a factor-of-2 error in
// the FLOPs counted or in the compute time fails this.
TEST_F(ScaleEngineGpu, ALlm7bLayerStepComputesAtTheRateOfOneGemmTimedAlone) {
  const ScalePreset* p = find_scale_preset("llm-7b-layer");
  ASSERT_NE(p, nullptr);
  EngineConfig c = config(*p, 1);
  const ScaleResult r = run_config(c, nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  ASSERT_TRUE(r.achieved_tflops && r.compute_ms && r.mean_ms);
  EXPECT_EQ(r.compute_backend, "cublaslt-bf16");
  const double peak = peak_tflops();
  ASSERT_GT(peak, 0);
  std::printf("llm-7b-layer: %.1f TFLOP/s, %.2f ms compute of %.2f ms step; 8192³ GEMM %.1f\n",
              *r.achieved_tflops, *r.compute_ms, *r.mean_ms, peak);
  EXPECT_GT(*r.achieved_tflops, 0.6 * peak);
  EXPECT_LT(*r.achieved_tflops, 1.1 * peak);
  // 6 × 202.4 M parameters × 2048 tokens at the GEMM rate take less than the step's compute,
  // which adds the optimizer (Adam streams 7 × 4 B per parameter: well under the GEMMs' time).
  const double flops = 6 * 202.375168e6 * 2048;
  EXPECT_GE(*r.achieved_tflops * *r.compute_ms * 1e9, 0.99 * flops);
  EXPECT_LE(*r.achieved_tflops * *r.compute_ms * 1e9, 1.9 * flops);
}

// The compute-only phase repeats the step's GEMMs without collectives: on one GPU (nothing to
// reduce) it takes the step's time, the comm-only phase nothing, and nothing is exposed.
TEST_F(ScaleEngineGpu, OnOneGpuTheStepIsItsComputeAlone) {
  const ScalePreset* p = find_scale_preset("llm-7b-layer");
  ASSERT_NE(p, nullptr);
  const ScaleResult r = run_config(config(*p, 1), nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  ASSERT_TRUE(r.mean_ms && r.compute_ms && r.compute_alone_ms && r.comm_alone_ms &&
              r.exposed_comm_ms && r.run.comm_share);
  std::printf("llm-7b-layer, 1 GPU: step %.3f ms, compute alone %.3f ms, compute %.3f ms\n",
              *r.mean_ms, *r.compute_alone_ms, *r.compute_ms);
  EXPECT_NEAR(*r.compute_alone_ms, *r.mean_ms, 0.1 * *r.mean_ms);
  EXPECT_NEAR(*r.compute_ms, *r.compute_alone_ms, 0.1 * *r.compute_alone_ms);
  EXPECT_EQ(*r.comm_alone_ms, 0);
  EXPECT_EQ(*r.exposed_comm_ms, 0);
  EXPECT_EQ(*r.run.comm_share, 0);
}

TEST_F(ScaleEngineGpu, TrainOnOneGpu) {
  const ScaleResult r = run_config(config(small_train(), 1), nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  EXPECT_EQ(r.run.workload, "train");
  EXPECT_EQ(r.run.gpus, 1);
  ASSERT_EQ(r.step_ms.size(), 10u);
  for (double ms : r.step_ms) EXPECT_GT(ms, 0);
  ASSERT_TRUE(r.mean_ms && r.compute_ms && r.comm_ms && r.achieved_tflops);
  EXPECT_GT(*r.compute_ms, 0);
  EXPECT_LE(*r.compute_ms, *r.mean_ms * 1.05);  // compute is inside the step
  EXPECT_EQ(*r.comm_ms, 0);                     // nothing to all-reduce on one GPU
  ASSERT_TRUE(r.run.comm_share);
  EXPECT_EQ(*r.run.comm_share, 0);
  ASSERT_TRUE(r.run.throughput);
  EXPECT_NEAR(*r.run.throughput, 1000.0 / *r.mean_ms, 1e-6 * *r.run.throughput);
  EXPECT_GT(*r.achieved_tflops, 1.0);
  if (peak_tflops() > 0) {
    EXPECT_LT(*r.achieved_tflops, peak_tflops() * 1.2);
  }
}

TEST_F(ScaleEngineGpu, TrainWithAccumulationWithoutOverlap) {
  EngineConfig c = config(small_train(), 1);
  c.grad_accumulation = 2;
  c.overlap = false;
  c.steps = 4;
  const ScaleResult r = run_config(c, nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  ASSERT_EQ(r.step_ms.size(), 4u);
  ASSERT_TRUE(r.run.throughput && r.mean_ms);
  EXPECT_NEAR(*r.run.throughput, 2 * 1000.0 / *r.mean_ms, 1e-6 * *r.run.throughput);
}

TEST_F(ScaleEngineGpu, InferOnOneGpu) {
  EngineConfig c = config(small_infer(), 1);
  c.steps = 6;
  const ScaleResult r = run_config(c, nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  EXPECT_EQ(r.run.workload, "infer");
  ASSERT_EQ(r.step_ms.size(), 6u);
  for (double ms : r.step_ms) EXPECT_GT(ms, 0);
  ASSERT_TRUE(r.run.throughput && r.compute_ms && r.achieved_tflops);
  EXPECT_GT(*r.run.throughput, 0);
  EXPECT_GT(*r.compute_ms, 0);
  EXPECT_GT(*r.achieved_tflops, 0);
}

TEST_F(ScaleEngineGpu, PacedRequestsQueueBehindSlowOnes) {
  // Arrivals far faster than service: each request waits for the previous one, so latency
  // grows along the run and the last is well above the first.
  EngineConfig c = config(small_infer(), 1);
  c.steps = 8;
  c.request_rate_hz = 1e5;
  const ScaleResult r = run_config(c, nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  ASSERT_EQ(r.step_ms.size(), 8u);
  EXPECT_GT(r.step_ms.back(), r.step_ms.front() * 2);
}

TEST_F(ScaleEngineGpu, RefusesWhatDoesNotFit) {
  ScalePreset p = small_train();
  p.grad_bytes = std::size_t{1} << 50;  // 1 PiB of gradients
  p.bucket_bytes = std::size_t{1} << 40;
  const ScaleResult r = run_config(config(p, 1), nullptr);
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->find("not enough free memory on GPU0"), std::string::npos) << *r.error;
}

TEST_F(ScaleEngineGpu, SustainedFillsTheTrace) {
  EngineConfig c = config(small_train(), 1);
  c.duration_s = 2.0;
  c.sample_interval_s = 0.5;
  SustainedTrace trace;
  const ScaleResult r = run_config(c, &trace);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  EXPECT_EQ(trace.preset, "test-train");
  EXPECT_EQ(trace.gpus, 1);
  ASSERT_GE(trace.throughput.size(), 3u);
  for (const auto& [t, v] : trace.throughput) {
    EXPECT_GT(t, 0);
    EXPECT_GT(v, 0);
  }
  EXPECT_GE(r.step_ms.size(), 2u);
}

TEST_F(ScaleEngineGpu, TrainOnTwoGpusCommunicates) {
  if (gpus_ < 2) GTEST_SKIP() << "needs 2 GPUs";
  std::string why;
  if (!gpu::nccl_library("", &why)) GTEST_SKIP() << "NCCL unavailable: " << why;
  double share[2] = {0, 0};  // [overlap]
  for (bool overlap : {true, false}) {
    EngineConfig c = config(small_train(), 2);
    c.overlap = overlap;
    const ScaleResult r = run_config(c, nullptr);
    print(r);
    ASSERT_FALSE(r.error) << *r.error;
    ASSERT_EQ(r.step_ms.size(), 10u);
    ASSERT_TRUE(r.comm_ms && r.run.comm_share && r.run.throughput);
    EXPECT_GT(*r.comm_ms, 0);
    EXPECT_GT(*r.run.throughput, 0);
    share[overlap] = *r.run.comm_share;
    // Without overlap the exposed communication is every all-reduce, which is the comm-only
    // step's work: a factor of 2 in either fails this.
    ASSERT_TRUE(r.exposed_comm_ms && r.comm_alone_ms && r.compute_alone_ms && r.mean_ms);
    EXPECT_LE(*r.exposed_comm_ms, *r.comm_ms * 1.001);
    if (!overlap) {
      EXPECT_NEAR(*r.exposed_comm_ms, *r.comm_ms, 0.05 * *r.comm_ms);
      EXPECT_GT(*r.exposed_comm_ms, 0.6 * *r.comm_alone_ms);
      EXPECT_LT(*r.exposed_comm_ms, 1.6 * *r.comm_alone_ms);
      EXPECT_NEAR(*r.mean_ms, *r.compute_alone_ms + *r.comm_alone_ms, 0.3 * *r.mean_ms);
    }
  }
  // Without overlap every bucket's all-reduce waits after the last chunk; with it, all but
  // the last hide behind compute. Either way some of it is exposed.
  EXPECT_GT(share[false], share[true]);
  EXPECT_GT(share[true], 0.0);
  EXPECT_LT(share[false], 1.0);
}

// On two GPUs the measured step follows its own schedule: played at the measured GEMM rate
// and the bus bandwidth the comm-only steps reached, the simulation's exposed communication is
// what the events measured (within the SM contention the simulation leaves out). A bucket
// released before its gradients would hide far more and fail this.
TEST_F(ScaleEngineGpu, TrainOnTwoGpusMatchesItsSchedulesSimulation) {
  if (gpus_ < 2) GTEST_SKIP() << "needs 2 GPUs";
  std::string why;
  if (!gpu::nccl_library("", &why)) GTEST_SKIP() << "NCCL unavailable: " << why;
  const ScalePreset& p = *find_scale_preset("llm-7b-layer");
  const ScaleResult r = run_config(config(p, 2), nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  ASSERT_TRUE(r.compute_alone_ms && r.comm_alone_ms && r.exposed_comm_ms && r.achieved_tflops);
  StepOptions o;
  o.ranks = 2;
  const StepSchedule plan = build_schedule(p, o);
  SimSpeeds sp;
  sp.tflops = *r.achieved_tflops;
  // Comm alone is the buckets back to back: 2·(N−1)/N · bytes / busbw.
  sp.busbw_gbps = static_cast<double>(p.grad_bytes) / (*r.comm_alone_ms * 1e-3) / 1e9;
  const SimResult sim = simulate(plan, sp);
  std::printf("2 GPUs: exposed %.3f ms measured, %.3f simulated; step %.3f / %.3f\n",
              *r.exposed_comm_ms, sim.exposed_ms, *r.mean_ms, sim.step_ms);
  EXPECT_GT(*r.exposed_comm_ms, 0.6 * sim.exposed_ms);
  EXPECT_LT(*r.exposed_comm_ms, 1.6 * sim.exposed_ms + 0.2);
}

TEST_F(ScaleEngineGpu, InferOnTwoGpusCommunicates) {
  if (gpus_ < 2) GTEST_SKIP() << "needs 2 GPUs";
  std::string why;
  if (!gpu::nccl_library("", &why)) GTEST_SKIP() << "NCCL unavailable: " << why;
  EngineConfig c = config(small_infer(), 2);
  c.steps = 4;
  const ScaleResult r = run_config(c, nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  ASSERT_EQ(r.step_ms.size(), 4u);
  ASSERT_TRUE(r.comm_ms);
  EXPECT_GT(*r.comm_ms, 0);
}

// The checks run on every configuration and pass on a healthy GPU: every distinct GEMM of the
// step sampled against the fp32 reference, nothing reported wrong.
TEST_F(ScaleEngineGpu, EveryGemmIsCheckedAndAHealthyRunHasNoWrongData) {
  const ScaleResult r = run_config(config(*find_scale_preset("llm-7b-layer"), 1), nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  EXPECT_TRUE(r.wrong_data.empty()) << r.wrong_data.front().what;
  bool said = false;
  for (const auto& n : r.notes) said = said || n.find("checked: 12 distinct GEMMs") == 0;
  EXPECT_TRUE(said) << "the note naming the 12 checked GEMMs";
}

// A planted wrong GEMM output is caught and named; the run's figures still come back.
TEST_F(ScaleEngineGpu, APlantedWrongGemmResultIsCaught) {
  EngineConfig c = config(*find_scale_preset("llm-1b-layer"), 1);
  c.plant = Plant::kGemm;
  c.steps = 3;
  const ScaleResult r = run_config(c, nullptr);
  print(r);
  ASSERT_FALSE(r.error) << *r.error;
  ASSERT_EQ(r.wrong_data.size(), 1u);
  EXPECT_EQ(r.wrong_data[0].gpu, 0);
  EXPECT_NE(r.wrong_data[0].what.find("layer 0 QKV forward GEMM"), std::string::npos)
      << r.wrong_data[0].what;
}

// Every kind of collective, each checked element by element, on a one-rank communicator
// (the hook that lets one GPU run them); a planted wrong element is caught.
TEST_F(ScaleEngineGpu, CollectivesAreCheckedAndAPlantedWrongSumIsCaught) {
  std::string why;
  if (!gpu::nccl_library("", &why)) GTEST_SKIP() << "NCCL unavailable: " << why;
  for (const char* name : {"llm-1b-layer", "llm-7b-fsdp", "decoder-7b"}) {
    EngineConfig c = config(*find_scale_preset(name), 1);
    c.force_collectives = true;
    c.steps = 2;
    c.warmup_steps = 1;
    const ScaleResult ok = run_config(c, nullptr);
    print(ok);
    ASSERT_FALSE(ok.error) << name << ": " << *ok.error;
    EXPECT_TRUE(ok.wrong_data.empty()) << name << ": " << ok.wrong_data.front().what;
    ASSERT_TRUE(ok.comm_ms) << name;
    EXPECT_GT(*ok.comm_ms, 0) << name;
    c.plant = Plant::kCollective;
    const ScaleResult bad = run_config(c, nullptr);
    ASSERT_FALSE(bad.error) << name << ": " << *bad.error;
    ASSERT_EQ(bad.wrong_data.size(), 1u) << name;
    EXPECT_NE(bad.wrong_data[0].what.find("1 of "), std::string::npos) << bad.wrong_data[0].what;
  }
}

// The presets of the other parallelisms run on one GPU: FSDP's layers and TP's prefill.
TEST_F(ScaleEngineGpu, FsdpAndPrefillPresetsRun) {
  for (const char* name : {"llm-7b-fsdp", "prefill-7b"}) {
    EngineConfig c = config(*find_scale_preset(name), 1);
    c.steps = 3;
    c.warmup_steps = 1;
    const ScaleResult r = run_config(c, nullptr);
    print(r);
    ASSERT_FALSE(r.error) << name << ": " << *r.error;
    ASSERT_TRUE(r.achieved_tflops) << name;
    EXPECT_GT(*r.achieved_tflops, 0.3 * peak_tflops()) << name;
    EXPECT_TRUE(r.wrong_data.empty()) << name;
  }
}

TEST_F(ScaleEngineGpu, TooShortADeadlineEndsInANamedTimeout) {
  // A 50 ms deadline against one chunk of 4000 bf16 4096³ GEMMs (≈550 TFLOP, ≈0.7 s at the
  // H200's ≈800 TFLOP/s): the first wait makes no progress in time, so the run stops with the
  // stalled rank named instead of hanging.
  ScalePreset p = small_train();
  p.flops = 4000 * 2.0 * 4096.0 * 4096.0 * 4096.0;
  p.grad_bytes = 4 * kMiB;
  p.bucket_bytes = 4 * kMiB;
  EngineConfig c = config(p, 1);
  c.collective_timeout = std::chrono::milliseconds(50);
  c.warmup_steps = 0;
  c.steps = 1;
  const ScaleResult r = run_config(c, nullptr);
  print(r);
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->find("timeout after 0.05 s: rank 0 (GPU 0) did not finish"), std::string::npos)
      << *r.error;
}

}  // namespace
}  // namespace gpuvet::scale
