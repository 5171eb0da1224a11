#include "bench/sample_stats.h"

#include <algorithm>

namespace gpuvet::bench {

double copy_gbps(std::size_t bytes, int copies, double seconds) {
  if (!(seconds > 0)) return 0;
  return static_cast<double>(bytes) * copies / seconds / kBytesPerGB;
}

SampleSummary summarize_samples(const std::vector<double>& samples) {
  SampleSummary s;
  if (samples.empty()) return s;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.median = median;
  if (median > 0) s.spread_pct = (v.back() - v.front()) / median * 100.0;
  return s;
}

}  // namespace gpuvet::bench
