// Growth checks: the same work at two sizes, its CPU time compared. Not a speed target (the
// benchmarks in bench/ measure speed): a bound that only a change of complexity breaks.
//
// With the input k times larger, linear work costs ~k times more and quadratic work ~k² times.
// The bound is the geometric middle, k^1.5: it fails quadratic code at any speed of machine and
// passes linear code with a margin of √k for noise. The time is this thread's CPU time, the
// least of three runs, so a loaded machine (other builds beside the tests) does not move it.
#pragma once

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <string>

namespace gpuvet::testing {

inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The least CPU time of three runs of work(n).
inline double least_cpu_seconds(const std::function<void(std::size_t)>& work, std::size_t n) {
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const double start = thread_cpu_seconds();
    work(n);
    best = std::min(best, thread_cpu_seconds() - start);
  }
  return best;
}

// Expects work(n * k) to cost less than k^1.5 times work(n). `n` must make work(n) take a few
// milliseconds at least, or fixed costs hide the growth.
inline void expect_linear_growth(const std::string& what,
                                 const std::function<void(std::size_t)>& work, std::size_t n,
                                 std::size_t k) {
  const double small = least_cpu_seconds(work, n);
  const double large = least_cpu_seconds(work, n * k);
  const double bound = std::pow(static_cast<double>(k), 1.5);
  const double ratio = large / std::max(small, 1e-6);
  ::testing::Test::RecordProperty(what + "_small_s", std::to_string(small));
  ::testing::Test::RecordProperty(what + "_large_s", std::to_string(large));
  EXPECT_LT(ratio, bound) << what << ": " << large << " s at " << k << "× the size of a " << small
                          << " s run (×" << ratio << "; linear is ×" << k << ", quadratic ×"
                          << k * k << ")";
}

}  // namespace gpuvet::testing
