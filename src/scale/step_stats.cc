#include "scale/step_stats.h"

#include <algorithm>

namespace gpuvet::scale {

double exposed_comm_share(double compute_ms, double step_ms) {
  if (!(step_ms > 0)) return 0;
  return std::clamp(1.0 - compute_ms / step_ms, 0.0, 1.0);
}

double tflops(double flops, double ms) {
  if (!(ms > 0)) return 0;
  return flops / (ms * 1e-3) / 1e12;
}

}  // namespace gpuvet::scale
