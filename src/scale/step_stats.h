// scale/step_stats.h — the arithmetic of a scaling run's figures, free of CUDA so it is tested
// on any machine: the exposed communication share of a step and a TFLOP/s rate. The engine
// (scale_engine.cu) measures the times and hands them to these functions.
#pragma once

namespace gpuvet::scale {

// The part of a step (or of a request's service time) the GPU was not computing:
// 1 − compute / step, clamped to [0, 1]. Zero when the step time is not positive.
double exposed_comm_share(double compute_ms, double step_ms);

// `flops` floating-point operations in `ms` milliseconds, in TFLOP/s; zero when the time is
// not positive.
double tflops(double flops, double ms);

}  // namespace gpuvet::scale
