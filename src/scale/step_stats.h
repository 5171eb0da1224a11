// scale/step_stats.h — the arithmetic of a scaling run's figures, free of CUDA so it is tested
// on any machine: a TFLOP/s rate and the judgement of a checked GEMM output. The engine
// (scale_engine.cu) measures and reads back, and hands the numbers to these functions; the
// timelines' arithmetic is step_schedule.h's uncovered_ms.
#pragma once

#include <utility>
#include <vector>

namespace gpuvet::scale {

// `flops` floating-point operations in `ms` milliseconds, in TFLOP/s; zero when the time is
// not positive.
double tflops(double flops, double ms);

// Whether a GEMM output sample is right: `got` (bf16 output, or float32 from the fallback
// kernel when `exact_output`) against the fp32 reference `ref` of the same bf16 inputs, whose
// products sum to `magnitude` in absolute value. bf16 output keeps 8 bits of mantissa (half
// an ulp: 2⁻⁹ relative); a different summation order costs at most ≈2⁻¹⁴ of the magnitude
// (fp32 accumulation, k ≤ 2¹⁶ terms, blocked sums). Anything beyond is a wrong result.
bool gemm_sample_ok(double ref, double magnitude, double got, bool exact_output = false);

}  // namespace gpuvet::scale
