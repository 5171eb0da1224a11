// The arithmetic of a bench figure (sample_stats.h) with literal numbers: what the CUDA
// timing hands over becomes the GB/s and the median a user reads.
#include "bench/sample_stats.h"

#include <gtest/gtest.h>

namespace gpuvet::bench {
namespace {

TEST(SampleStats, BandwidthCountsEveryCopyOfTheSample) {
  // 8 copies of 64 MiB in 10 ms: 8 × 67108864 B / 0.01 s = 53.687 GB/s (decimal GB).
  EXPECT_NEAR(copy_gbps(64u << 20, 8, 0.010), 53.6870912, 1e-9);
  // One copy of 1 GB in 0.5 s is 2 GB/s; four of them in the same time 8 GB/s.
  EXPECT_DOUBLE_EQ(copy_gbps(1000000000, 1, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(copy_gbps(1000000000, 4, 0.5), 8.0);
}

TEST(SampleStats, BandwidthOfNoTimeIsZero) {
  EXPECT_EQ(copy_gbps(64u << 20, 8, 0.0), 0.0);
  EXPECT_EQ(copy_gbps(64u << 20, 8, -1.0), 0.0);
}

TEST(SampleStats, MedianIsTheMiddleSampleNotTheBest) {
  // Unsorted, one fast outlier: the median is 50, the max 80 and the mean 56.
  const SampleSummary odd = summarize_samples({52, 48, 80, 50, 50});
  ASSERT_TRUE(odd.median);
  EXPECT_DOUBLE_EQ(*odd.median, 50.0);
  ASSERT_TRUE(odd.spread_pct);
  EXPECT_DOUBLE_EQ(*odd.spread_pct, 64.0);  // (80 − 48) / 50

  // Even count: the mean of the two middle samples.
  const SampleSummary even = summarize_samples({40, 10, 30, 20});
  ASSERT_TRUE(even.median);
  EXPECT_DOUBLE_EQ(*even.median, 25.0);
  EXPECT_DOUBLE_EQ(*even.spread_pct, 120.0);  // (40 − 10) / 25

  const SampleSummary one = summarize_samples({7});
  EXPECT_DOUBLE_EQ(*one.median, 7.0);
  EXPECT_DOUBLE_EQ(*one.spread_pct, 0.0);
}

TEST(SampleStats, NoSamplesOrZeroMedianLeaveFiguresAbsent) {
  const SampleSummary none = summarize_samples({});
  EXPECT_FALSE(none.median);
  EXPECT_FALSE(none.spread_pct);
  const SampleSummary zero = summarize_samples({0, 0, 5});
  ASSERT_TRUE(zero.median);
  EXPECT_EQ(*zero.median, 0.0);
  EXPECT_FALSE(zero.spread_pct);
}

}  // namespace
}  // namespace gpuvet::bench
