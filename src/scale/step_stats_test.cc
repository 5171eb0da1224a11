// The arithmetic of scaling figures (step_stats.h) with literal numbers.
#include "scale/step_stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpuvet::scale {
namespace {

TEST(StepStats, TflopsFromFlopsAndMilliseconds) {
  // 2.47 TFLOP in 83 ms is 29.76 TFLOP/s; 1e12 FLOP in 1 s is 1.
  EXPECT_NEAR(tflops(2.47e12, 83.0), 29.759036, 1e-6);
  EXPECT_DOUBLE_EQ(tflops(1e12, 1000.0), 1.0);
  EXPECT_EQ(tflops(1e12, 0.0), 0.0);
}

}  // namespace
TEST(StepStats, GemmSampleCheckAllowsBf16RoundingAndNothingMore) {
  // A dot product of 4096 terms summing to 3.1416 with |a·b| summing to 52: the bf16 output
  // 3.140625 is half an ulp off and right; 3.15625 (one ulp too far) plus order noise is not.
  EXPECT_TRUE(gemm_sample_ok(3.1416, 52, 3.140625));
  EXPECT_TRUE(gemm_sample_ok(3.1416, 52, 3.1416 + 52.0 / 8192));  // summation order
  EXPECT_FALSE(gemm_sample_ok(3.1416, 52, 3.1416 + 0.04));
  EXPECT_FALSE(gemm_sample_ok(3.1416, 52, -3.140625));  // a sign lost
  EXPECT_FALSE(gemm_sample_ok(0.25, 40, 1e4));          // the planted value
  EXPECT_FALSE(gemm_sample_ok(0.25, 40, std::nan("")));
  // The fallback's float32 output has no rounding allowance.
  EXPECT_TRUE(gemm_sample_ok(-7.5, 30, -7.5 + 30.0 / 8192, true));
  EXPECT_FALSE(gemm_sample_ok(-7.5, 30, -7.5 * (1 + 1.0 / 256), true));
}

}  // namespace gpuvet::scale
