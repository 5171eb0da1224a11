// scale/step_schedule.h — what one training step or one inference request of `gpuvet scale`
// runs, as plain data built by CPU code: every GEMM with its own buffers, every collective
// with its bytes, every cross-stream wait, and the optimizer step. The GPU engine
// (scale_engine.cu) executes a schedule as it is; the unit tests (ScaleSchedule) check the
// parallelism's rules on it without a GPU, and simulate() plays it at given compute and link
// speeds, so the figures docs/measurement.md promises are the ones the code would produce.
//
// Data parallel (PyTorch DDP): parameters in registration order, gradients bucketed in
// reverse order by DDP's rule (the first bucket capped at 1 MiB, the others at 25 MiB, a
// parameter never split), a bucket's all-reduce released only once the dW GEMMs of all its
// parameters are done, never during the forward pass; then the optimizer (fused Adam over the
// fp32 master parameters). Fully sharded (FSDP full shard, ZeRO-3): per layer an all-gather of
// its bf16 parameters before its forward and again before its backward (at most two layers
// gathered at once), a reduce-scatter of its fp32 gradients after its dW GEMMs, Adam on the
// shard. Tensor parallel (Megatron split): per layer QKV and gate+up column-parallel, attention
// out and MLP down row-parallel, an all-reduce after each row-parallel projection (two per
// layer) on the critical path, every layer with its own weight shard.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "gpuvet/scale.h"

namespace gpuvet::scale {

enum class StreamId { kCompute, kComm };
enum class TaskKind { kGemm, kAllReduce, kAllGather, kReduceScatter, kOptimizer };
enum class DType { kBf16, kFp32 };

std::size_t dtype_bytes(DType t);
bool is_collective(TaskKind k);

// C[m×n] = op(A)·op(B), bf16 in, fp32 accumulation, bf16 out. A is stored [k×m] when ta,
// B [n×k] when tb (the backward GEMMs: dW = Xᵀ·dY, dX = dY·Wᵀ).
struct Gemm {
  int m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  double flops() const { return 2.0 * m * n * static_cast<double>(k); }
  bool same_shape(const Gemm& o) const {
    return m == o.m && n == o.n && k == o.k && ta == o.ta && tb == o.tb;
  }
};

// A device buffer the step uses; the engine allocates one per entry and fills it from a
// normal distribution of `sigma` (weights ≈ 0.02, activations 1), or zeros when sigma is 0.
struct BufferSpec {
  std::size_t elems = 0;
  DType dtype = DType::kBf16;
  float sigma = 0;
  std::string role;  // "layer 0 QKV weight", "gradients", …
  std::size_t bytes() const { return elems * dtype_bytes(dtype); }
};

enum class Pass { kForward, kBackward, kUpdate, kRequest };

struct Task {
  TaskKind kind = TaskKind::kGemm;
  StreamId stream = StreamId::kCompute;
  std::string what;  // "layer 0 MLP down dW", "bucket 2 all-reduce (MLP down)", …
  int layer = 0;
  int phase = 0;  // accumulation phase (train) or token (infer)
  Pass pass = Pass::kForward;
  // GEMM: the shape and its three buffers (C written).
  Gemm gemm;
  int a = -1, b = -1, c = -1;
  // Collectives and the optimizer: the buffer and the element range it covers. All-reduce:
  // in place over [offset, offset + count). All-gather: the gathered range (each rank
  // contributes count / ranks, in place). Reduce-scatter: the full input range (each rank
  // keeps count / ranks, in place). Optimizer: the parameters updated (Adam: buffer holds
  // gradients; state buffers are `state`).
  int buffer = -1;
  std::size_t offset = 0, count = 0;
  std::vector<int> state;  // optimizer: master parameters, first and second moments
  // Tasks that must be complete before this one starts (any stream; the same stream's
  // earlier tasks are implied by stream order).
  std::vector<int> after;
  // Data parallel: the gradient bucket an all-reduce reduces (-1 otherwise).
  int bucket = -1;
  double flops() const { return kind == TaskKind::kGemm ? gemm.flops() : 0.0; }
};

// A parameter of the model as DDP sees it: registration order, size and the GEMM (task
// index) whose completion makes its gradient ready.
struct Param {
  std::string name;
  std::size_t elems = 0;
  int ready_after = -1;
};

struct Bucket {
  std::vector<int> params;  // indices into StepSchedule::params, in the order they fill it
  std::size_t offset = 0;   // in the gradient buffer (floats)
  std::size_t count = 0;
};

struct StepSchedule {
  Parallelism parallelism = Parallelism::kDataParallel;
  int ranks = 1;
  std::vector<BufferSpec> buffers;
  std::vector<Task> tasks;  // issue order; one stream's tasks run in this order
  std::vector<Param> params;
  std::vector<Bucket> buckets;  // data parallel
  double flops() const;         // GEMM FLOPs per step (request), per GPU
  std::size_t bytes_on_device() const;
  // The collective tasks' indices, in issue order.
  std::vector<int> collectives() const;
};

struct StepOptions {
  int ranks = 1;
  int accumulation = 1;  // train: compute phases per reduction
  bool overlap = true;   // data parallel: buckets during the backward pass, else after it
  bool optimizer = true;
};

// The schedule of one step (train) or one request (infer) of `preset` on `options.ranks`
// GPUs. A preset without layer shapes (cnn-small, --flops) runs square GEMMs, the first third
// of its FLOPs as the forward pass; its gradients are parameters ready in proportion to the
// backward GEMMs. Throws std::invalid_argument on a preset it cannot schedule (no FLOPs, no
// tokens, more than kMaxTasks tasks).
StepSchedule build_schedule(const ScalePreset& preset, const StepOptions& options);

constexpr std::size_t kMaxTasks = std::size_t{1} << 16;
constexpr std::size_t kFirstBucketBytes = std::size_t{1} << 20;  // DDP's first bucket cap

// DDP's bucket assignment: parameters taken in reverse registration order, a bucket closed once
// it holds at least its cap (`first_cap` for the first, `cap` after), a parameter never split.
std::vector<Bucket> ddp_buckets(const std::vector<Param>& params, std::size_t bytes_per_elem,
                                std::size_t cap, std::size_t first_cap);

// ------------------------------------------------------------------ simulation

// Speeds to play a schedule at: GEMMs at `tflops`; a collective moving S bytes among N ranks
// takes `alpha_us` + its bus factor · S / busbw (all-reduce 2(N−1)/N of the buffer, all-gather
// and reduce-scatter (N−1)/N of the full buffer); the optimizer streams its buffers at
// `hbm_gbps` (0: free). `overlap_slowdown`: a GEMM runs this much slower while a collective
// runs beside it (NCCL's SMs).
struct SimSpeeds {
  double tflops = 0;
  double busbw_gbps = 0;
  double alpha_us = 0;
  double hbm_gbps = 0;
  double overlap_slowdown = 0;
};

struct SimTask {
  double start_ms = 0, end_ms = 0;
};

struct SimResult {
  std::vector<SimTask> tasks;
  double step_ms = 0;
  double compute_ms = 0;  // GEMMs and the optimizer, summed
  double comm_ms = 0;     // collectives, summed
  double exposed_ms = 0;  // collective time with no compute under it
  double comm_share = 0;  // (exposed + overlap slowdown) / step
};

// The length of the union of `comm` not covered by the union of `compute` (intervals in ms, any
// order, overlapping or not): communication with no compute under it.
double uncovered_ms(const std::vector<std::pair<double, double>>& comm,
                    const std::vector<std::pair<double, double>>& compute);

// Plays the schedule event by event: one compute and one comm queue per GPU (all GPUs alike),
// a task starting when its stream is free and every task it waits for is done.
SimResult simulate(const StepSchedule& schedule, const SimSpeeds& speeds);

// Expected seconds of the longest single collective of `schedule` at `busbw_gbps`: what a
// progress deadline has to allow.
double longest_collective_s(const StepSchedule& schedule, double busbw_gbps);

// The wait allowed before a collective counts as stuck (the deadline restarts on progress, so
// the largest single collective sets it): hw::collective_deadline_s of its bus bytes.
double collective_deadline_s(const StepSchedule& schedule, double floor_s);

}  // namespace gpuvet::scale
