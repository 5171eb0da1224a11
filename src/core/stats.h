// core/stats.h — order statistics of a sample: quantiles (numpy's default, linear between the
// two closest ranks) and the median. Header-only, no state.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace gpuvet {

// The q-quantile (0 <= q <= 1) of `values`, linear between closest ranks; empty for no value.
// Takes its argument by value: the caller's order is kept. O(n) (nth_element).
inline std::optional<double> quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(lo), values.end());
  const double a = values[lo];
  if (lo + 1 >= values.size()) return a;
  const double b =
      *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(lo) + 1, values.end());
  return a + (b - a) * (pos - static_cast<double>(lo));
}

inline std::optional<double> median(std::vector<double> values) {
  return quantile(std::move(values), 0.5);
}

}  // namespace gpuvet
