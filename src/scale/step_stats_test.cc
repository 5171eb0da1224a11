// The arithmetic of scaling figures (step_stats.h) with literal numbers.
#include "scale/step_stats.h"

#include <gtest/gtest.h>

namespace gpuvet::scale {
namespace {

TEST(StepStats, CommShareIsTheStepTheGpuWasNotComputing) {
  // 83 ms of compute in an 88.3 ms step: 6 % of it is exposed communication.
  EXPECT_NEAR(exposed_comm_share(83.0, 88.3), 0.0600226, 1e-6);
  EXPECT_DOUBLE_EQ(exposed_comm_share(3.0, 4.0), 0.25);
  EXPECT_DOUBLE_EQ(exposed_comm_share(10.0, 10.0), 0.0);
}

TEST(StepStats, CommShareStaysInsideZeroAndOne) {
  // Compute measured a little longer than the step (events vs host clock): no communication.
  EXPECT_DOUBLE_EQ(exposed_comm_share(10.5, 10.0), 0.0);
  EXPECT_DOUBLE_EQ(exposed_comm_share(0.0, 10.0), 1.0);
  EXPECT_DOUBLE_EQ(exposed_comm_share(-1.0, 10.0), 1.0);
  EXPECT_DOUBLE_EQ(exposed_comm_share(5.0, 0.0), 0.0);
}

TEST(StepStats, TflopsFromFlopsAndMilliseconds) {
  // 2.47 TFLOP in 83 ms is 29.76 TFLOP/s; 1e12 FLOP in 1 s is 1.
  EXPECT_NEAR(tflops(2.47e12, 83.0), 29.759036, 1e-6);
  EXPECT_DOUBLE_EQ(tflops(1e12, 1000.0), 1.0);
  EXPECT_EQ(tflops(1e12, 0.0), 0.0);
}

}  // namespace
}  // namespace gpuvet::scale
