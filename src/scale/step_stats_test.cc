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

TEST(StepStats, ExposedCommIsTheCollectiveTimeAfterTheLastGemm) {
  // Compute 0..10 ms; buckets 2..4 and 6..9 hide under it, 9..13 sticks out by 3 ms.
  EXPECT_DOUBLE_EQ(exposed_comm_ms(10.0, {{2, 4}, {6, 9}, {9, 13}}), 3.0);
  // No overlap (buckets after the compute): all of it is exposed.
  EXPECT_DOUBLE_EQ(exposed_comm_ms(10.0, {{10, 12}, {12, 15.5}}), 5.5);
  // A gap between buckets is not communication.
  EXPECT_DOUBLE_EQ(exposed_comm_ms(10.0, {{11, 12}, {14, 15}}), 2.0);
  // Overlapping and out-of-order intervals are counted once.
  EXPECT_DOUBLE_EQ(exposed_comm_ms(10.0, {{12, 16}, {11, 14}}), 5.0);
  // Everything hidden, or nothing to communicate.
  EXPECT_DOUBLE_EQ(exposed_comm_ms(10.0, {{1, 5}, {5, 10}}), 0.0);
  EXPECT_DOUBLE_EQ(exposed_comm_ms(10.0, {}), 0.0);
  // No compute at all (a comm-only step): every collective is exposed.
  EXPECT_DOUBLE_EQ(exposed_comm_ms(0.0, {{0, 4}, {4, 7}}), 7.0);
}

TEST(StepStats, TflopsFromFlopsAndMilliseconds) {
  // 2.47 TFLOP in 83 ms is 29.76 TFLOP/s; 1e12 FLOP in 1 s is 1.
  EXPECT_NEAR(tflops(2.47e12, 83.0), 29.759036, 1e-6);
  EXPECT_DOUBLE_EQ(tflops(1e12, 1000.0), 1.0);
  EXPECT_EQ(tflops(1e12, 0.0), 0.0);
}

}  // namespace
}  // namespace gpuvet::scale
