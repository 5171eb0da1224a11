// scale/step_stats.h — the arithmetic of a scaling run's figures, free of CUDA so it is tested
// on any machine: the exposed communication share of a step and a TFLOP/s rate. The engine
// (scale_engine.cu) measures the times and hands them to these functions.
#pragma once

#include <utility>
#include <vector>

namespace gpuvet::scale {

// A step's exposed (non-overlapped) communication from its two GPU timelines, in ms from the
// step's first compute event: the compute stream busy from 0 to `compute_end_ms` (its GEMMs
// are queued back to back), the communication stream's collectives as [start, end) intervals.
// Returns the time the collectives ran with no compute under them: the union of the intervals
// outside [0, compute_end_ms). Intervals may come in any order and overlap.
double exposed_comm_ms(double compute_end_ms, std::vector<std::pair<double, double>> comm);

// The part of a step (or of a request's service time) the GPU was not computing:
// 1 − compute / step, clamped to [0, 1]. Zero when the step time is not positive.
double exposed_comm_share(double compute_ms, double step_ms);

// `flops` floating-point operations in `ms` milliseconds, in TFLOP/s; zero when the time is
// not positive.
double tflops(double flops, double ms);

}  // namespace gpuvet::scale
