#include "scale/step_stats.h"

#include <algorithm>
#include <cmath>

namespace gpuvet::scale {

bool gemm_sample_ok(double ref, double magnitude, double got, bool exact_output) {
  if (!std::isfinite(got) || !std::isfinite(ref)) return false;
  const double rounding = exact_output ? 0.0 : std::ldexp(std::fabs(ref), -8);
  return std::fabs(got - ref) <= rounding + std::ldexp(magnitude, -12) + 1e-6;
}

double tflops(double flops, double ms) {
  if (!(ms > 0)) return 0;
  return flops / (ms * 1e-3) / 1e12;
}

}  // namespace gpuvet::scale
