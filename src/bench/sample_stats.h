// bench/sample_stats.h — the arithmetic behind one bench figure, free of CUDA so it is tested
// on any machine: bytes moved in a timed span as GB/s, and the median and spread of a cell's
// samples. cuda_bench.cu times the copies and hands the numbers to these functions.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace gpuvet::bench {

// Decimal gigabytes, as nvbandwidth and nccl-tests count them.
inline constexpr double kBytesPerGB = 1e9;

// `copies` back-to-back copies of `bytes` each took `seconds`: the bandwidth in GB/s, that is
// bytes × copies / seconds / 1e9. Zero when the time is not positive (nothing was timed).
double copy_gbps(std::size_t bytes, int copies, double seconds);

struct SampleSummary {
  std::optional<double> median;      // the middle sample; the mean of the two middle ones
  std::optional<double> spread_pct;  // (max − min) / median × 100; absent when median <= 0
};

// Median and spread of the samples, in any order. Both absent for no samples.
SampleSummary summarize_samples(const std::vector<double>& samples);

}  // namespace gpuvet::bench
