#include "scale/step_stats.h"

#include <algorithm>

namespace gpuvet::scale {

double exposed_comm_share(double compute_ms, double step_ms) {
  if (!(step_ms > 0)) return 0;
  return std::clamp(1.0 - compute_ms / step_ms, 0.0, 1.0);
}

double exposed_comm_ms(double compute_end_ms, std::vector<std::pair<double, double>> comm) {
  std::sort(comm.begin(), comm.end());
  double exposed = 0;
  double covered = compute_end_ms;  // everything before this is counted or under compute
  for (auto [a, b] : comm) {
    if (a < 0) a = 0;  // before the step's first compute event: not this step's
    a = std::max(a, covered);
    if (b > a) {
      exposed += b - a;
      covered = b;
    }
  }
  return exposed;
}

double tflops(double flops, double ms) {
  if (!(ms > 0)) return 0;
  return flops / (ms * 1e-3) / 1e12;
}

}  // namespace gpuvet::scale
