// The ring all-reduce's α–β model and its fit to a measured size sweep.
//
// With nccl-tests' definitions (algbw = S / t, busbw = algbw × 2(N−1)/N) the ring all-reduce
// of S bytes on N GPUs takes t = 2(N−1)·α + 2(N−1)/N · S / busbw (Thakur, Rabenseifner and
// Gropp, "Optimization of Collective Communication Operations in MPICH", 2005; nccl-tests
// doc/PERFORMANCE.md). A straight line in S: the intercept gives α, the slope busbw.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include <fmt/format.h>

#include "gpuvet/advise.h"

namespace gpuvet {
namespace {

// "512 MiB" (gpuvet bench's row label) in bytes; 0 when it is not one.
double size_from_label(const std::string& label) {
  double v = 0;
  char unit[8] = {0};
  if (std::sscanf(label.c_str(), "%lf %7s", &v, unit) != 2 || !(v >= 0)) return 0;
  const std::string u = unit;
  if (u == "B") return v;
  if (u == "KiB") return v * 1024;
  if (u == "MiB") return v * 1024 * 1024;
  if (u == "GiB") return v * 1024 * 1024 * 1024;
  return 0;
}

}  // namespace

double ring_allreduce_us(const AlphaBeta& ab, int n, double bytes) {
  if (n < 2 || ab.busbw_gbps <= 0) return 0;
  const double steps = 2.0 * (n - 1);
  // S / busbw: bytes / (GB/s × 1e9) seconds = bytes / (GB/s × 1e3) µs.
  return steps * ab.alpha_us + steps / n * bytes / (ab.busbw_gbps * 1e3);
}

Result<std::vector<AllReduceSample>> allreduce_sweep(const std::vector<Measurement>& measurements) {
  std::vector<AllReduceSample> out;
  for (const auto& m : measurements) {
    if (m.test != "all_reduce_perf" && m.test != "all_reduce") continue;
    if (m.wrong_data) continue;
    if (m.note && m.note->find("in-place") != std::string::npos) continue;
    if (!m.latency_us || !(*m.latency_us > 0)) continue;
    double size = m.size_bytes ? static_cast<double>(*m.size_bytes) : 0;
    if (size <= 0 && m.note) size = size_from_label(*m.note);
    if (size <= 0) continue;
    // busbw / algbw = 2(N−1)/N, so N = 2 / (2 − ratio); on one GPU busbw is 0.
    int ranks = 0;
    if (m.bandwidth_gbps && m.busbw_gbps && *m.bandwidth_gbps > 0) {
      const double ratio = *m.busbw_gbps / *m.bandwidth_gbps;
      if (ratio <= 0.01)
        ranks = 1;
      else if (ratio < 1.999)
        ranks = static_cast<int>(std::lround(2.0 / (2.0 - ratio)));
    } else if (m.busbw_gbps && *m.busbw_gbps == 0) {
      ranks = 1;
    }
    out.push_back({size, *m.latency_us, ranks});
  }
  if (out.empty())
    return Status::invalid_input(
        "no all-reduce size sweep in the measurements (gpuvet bench --only all_reduce on 2 or "
        "more GPUs, or an nccl-tests all_reduce_perf log)");
  return out;
}

Result<AlphaBeta> fit_alpha_beta(const std::vector<AllReduceSample>& sweep, std::string origin) {
  std::set<double> sizes;
  std::set<int> ranks;
  for (const auto& s : sweep) {
    if (!(s.size_bytes > 0) || !(s.time_us > 0) || !std::isfinite(s.time_us))
      return Status::invalid_input(
          fmt::format("{}: an all-reduce point with a size or time that is not positive", origin));
    sizes.insert(s.size_bytes);
    ranks.insert(s.ranks);
  }
  if (ranks.size() > 1)
    return Status::invalid_input(
        fmt::format("{}: the sweep mixes GPU counts; fit one count at a time", origin));
  const int n = ranks.empty() ? 0 : *ranks.begin();
  if (n == 1)
    return Status::invalid_input(fmt::format(
        "{}: a 1-GPU all-reduce crosses no link: it gives no α or bus bandwidth", origin));
  if (n < 2)
    return Status::invalid_input(fmt::format(
        "{}: the GPU count of the sweep is unknown (no algbw and busbw to tell it)", origin));
  if (sizes.size() < 2)
    return Status::invalid_input(
        fmt::format("{}: {} distinct message size(s); fitting α and busbw needs at least 2", origin,
                    sizes.size()));
  // Weighted least squares of t = a + b·S, weight 1/t² (relative error).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& s : sweep) {
    const double w = 1.0 / (s.time_us * s.time_us);
    sw += w;
    sx += w * s.size_bytes;
    sy += w * s.time_us;
    sxx += w * s.size_bytes * s.size_bytes;
    sxy += w * s.size_bytes * s.time_us;
  }
  const double det = sw * sxx - sx * sx;
  if (!(std::fabs(det) > 0))
    return Status::invalid_input(
        fmt::format("{}: the sweep's sizes do not determine a line", origin));
  double b = (sw * sxy - sx * sy) / det;  // µs per byte
  double a = (sy - b * sx) / sw;          // µs
  if (!(b > 0) || !std::isfinite(b))
    return Status::invalid_input(fmt::format(
        "{}: the all-reduce time does not grow with the message size; no bandwidth to fit",
        origin));
  if (a < 0) {  // latency cannot be negative: refit the slope through the origin
    a = 0;
    b = sxy / sxx;
  }
  AlphaBeta ab;
  const double steps = 2.0 * (n - 1);
  ab.alpha_us = a / steps;
  // b = 2(N−1)/N / (busbw × 1e3) µs per byte.
  ab.busbw_gbps = steps / n / (b * 1e3);
  ab.ranks = n;
  ab.points = static_cast<int>(sweep.size());
  ab.measured = true;
  for (const auto& s : sweep) {
    const double fit = a + b * s.size_bytes;
    ab.max_residual = std::max(ab.max_residual, std::fabs(s.time_us - fit) / s.time_us);
  }
  ab.source = fmt::format("fitted on {}: {} sizes, {} GPUs", origin, sizes.size(), n);
  return ab;
}

}  // namespace gpuvet
