// scale/scale_engine.cu — the GPU side of `gpuvet scale` (contract: scale_engine.h).
//
// What runs (the method of gpuvet/scale.h, made concrete):
//
//   Compute: bf16 tensor-core GEMMs with fp32 accumulation, the shapes a real step runs.
//   A transformer preset's phase is its layer's 12 projections: forward (QKV, attention
//   output, MLP gate+up, MLP down), then backward in reverse, dX = dY·Wᵀ and dW = Xᵀ·dY per
//   projection (6 × parameters × tokens FLOPs); a decode layer is the 4 forward projections
//   for the batch's rows with the weights split over the GPUs; a preset without shapes runs
//   square 4096³ GEMMs. Through cuBLASLt (dlopen, gpu/cublaslt.h), one heuristic plan per
//   shape; without it, loudly, gpuvet's own WMMA kernel (tensor cores, far slower). A and B
//   hold small integers, and one element of one forward GEMM is checked against the host's
//   sum before the first step (bf16 output: within its rounding).
//
//   Peak: one 8192³ bf16 GEMM through cuBLASLt, best of three timed runs of ≈200 ms, the
//   rate the compute is compared with (the fallback's 4096³ without cuBLASLt).
//
//   train (data parallel): one host thread per GPU, a compute stream and a communication
//   stream each, one NCCL communicator per GPU (N ≥ 2). Per step: grad_accumulation compute
//   phases; the last one is split into as many chunks as there are gradient buckets, and
//   after chunk k an event lets the communication stream all-reduce bucket k (float32 sum,
//   in place) while chunk k+1 computes — or, without overlap, every bucket after the last
//   chunk. Every step starts with all ranks released together by a barrier; the step time is
//   the slowest rank's host wall time from release to both streams idle.
//
//   infer (tensor parallel decode): per request, per token, per layer: the layer's GEMM share
//   (flops / (layers × N)) then an all-reduce of activation_bytes on the same stream — the
//   all-reduce is on the critical path. Requests arrive at fixed intervals or back to back;
//   latency is arrival → last token done on every rank, so queueing shows in the tail.
//
// Never hangs: communicators are nonblocking (NCCL 2.14+; older NCCL: blocking init and
// enqueue, said in a note), every wait polls CUDA events and ncclCommGetAsyncError, and a
// wait fails once no event has completed for `collective_timeout` (a deadline that restarts on
// progress, so a long step is not a stall). Then every rank stops, every communicator is
// aborted, the streams get a short grace and the buffers of a GPU still busy are leaked
// (cudaFree would wait for the stuck kernel). No exception leaves this file; every CUDA and
// NCCL error is reported with its name. The CUDA handles, error text and the communicator
// protocol (init, settle, abort, drain, close) come from the kit in src/gpu/.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpu/cublaslt.h"
#include "gpu/cuda_resources.h"
#include "gpu/cuda_status.h"
#include "gpu/nccl_api.h"
#include "gpu/nccl_comms.h"
#include "gpu/nccl_lib.h"
#include "scale/scale_engine.h"
#include "scale/step_stats.h"

namespace gpuvet::scale {
namespace {

using Clock = std::chrono::steady_clock;
using gpu::cuda_status;
using gpu::cuda_text;
using gpu::GpuStatus;
using gpu::NcclLib;
using gpu::seconds_text;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kMaxBuckets = 4096;  // more buckets than this is a mistake in the options
constexpr std::size_t kMaxInferEvents = std::size_t{1} << 17;
constexpr double kMemoryShare = 0.8;  // of free memory the buffers may use
constexpr auto kPoll = std::chrono::microseconds(20);
constexpr auto kDrainGrace = std::chrono::seconds(5);
constexpr std::chrono::milliseconds kSetupTimeout{30000};

// ------------------------------------------------------------------------------ text

// printf-style into a std::string (fmt is not used in CUDA sources here). Always called with
// at least one argument.
template <class... Args>
std::string strf(const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  if (n <= 0) return {};
  std::string s(static_cast<std::size_t>(n), '\0');
  std::snprintf(&s[0], s.size() + 1, format, args...);
  return s;
}

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// ------------------------------------------------------------------------------ kernels

// The fallback when cuBLASLt is missing: bf16 tensor cores through WMMA (16×16×16 fragments,
// fp32 accumulation), each warp a 32×32 tile of C straight from global memory, four warps a
// 64×64 block. Far from cuBLASLt's speed, but tensor cores, never the FP32 CUDA cores. Row-major
// A[m×k] (or stored [k×m] when ta) and B[k×n] (or [n×k] when tb); m, n multiples of 64, k of 16
// (the plan pads). C is float32.
__global__ void __launch_bounds__(128)
    wmma_gemm_kernel(int m, int n, int k, bool ta, bool tb, const __nv_bfloat16* __restrict__ A,
                     const __nv_bfloat16* __restrict__ B, float* __restrict__ C) {
  using namespace nvcuda;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int row0 = static_cast<int>(blockIdx.y) * 64 + (warp / 2) * 32;
  const int col0 = static_cast<int>(blockIdx.x) * 64 + (warp % 2) * 32;
  (void)m;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> ar[2];
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::col_major> ac[2];
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> br[2];
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> bc[2];
  for (int kk = 0; kk < k; kk += 16) {
    for (int i = 0; i < 2; ++i) {
      const std::size_t r = static_cast<std::size_t>(row0 + 16 * i);
      if (ta)
        wmma::load_matrix_sync(ac[i], A + static_cast<std::size_t>(kk) * m + r, m);
      else
        wmma::load_matrix_sync(ar[i], A + r * k + kk, k);
      const std::size_t c = static_cast<std::size_t>(col0 + 16 * i);
      if (tb)
        wmma::load_matrix_sync(bc[i], B + c * k + kk, k);
      else
        wmma::load_matrix_sync(br[i], B + static_cast<std::size_t>(kk) * n + c, n);
    }
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        if (ta && tb)
          wmma::mma_sync(acc[i][j], ac[i], bc[j], acc[i][j]);
        else if (ta)
          wmma::mma_sync(acc[i][j], ac[i], br[j], acc[i][j]);
        else if (tb)
          wmma::mma_sync(acc[i][j], ar[i], bc[j], acc[i][j]);
        else
          wmma::mma_sync(acc[i][j], ar[i], br[j], acc[i][j]);
      }
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(C + static_cast<std::size_t>(row0 + 16 * i) * n + col0 + 16 * j,
                              acc[i][j], n, wmma::mem_row_major);
}

// Small integers in -3..3: exact in bf16, every product ≤ 9, every fp32 sum over K ≤ 2^16
// terms exact; only the bf16 output rounds (8 bits of mantissa), so the check allows that.
__host__ __device__ inline float pattern_value(long long row, long long col, int salt) {
  return static_cast<float>((row * 3 + col * 5 + salt) % 7 - 3);
}

__global__ void fill_pattern_kernel(__nv_bfloat16* p, long long rows, long long cols, int salt) {
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    p[i] = __float2bfloat16(
        pattern_value(static_cast<long long>(i / cols), static_cast<long long>(i % cols), salt));
}

// ------------------------------------------------------------------------------ GEMM plan

// One GEMM of a compute phase: C[m×n] = op(A)·op(B), bf16 in, fp32 accumulation.
struct GemmOp {
  int m = 0, n = 0, k = 0;
  bool ta = false, tb = false;  // A stored [k×m], B stored [n×k] (backward: Xᵀ·dY, dY·Wᵀ)
  const char* what = "";        // "QKV forward", "MLP down dW", …
  double flops() const { return 2.0 * m * n * static_cast<double>(k); }
};

// A compute phase (a chunk of one): GEMMs in order.
struct GemmPlan {
  std::vector<GemmOp> ops;
  double flops() const {
    double f = 0;
    for (const auto& o : ops) f += o.flops();
    return f;
  }
};

// The projections of one transformer layer (QKV, attention output, MLP gate+up, MLP down)
// for `tokens` rows, each output dimension divided by `shard` (tensor parallel: QKV and
// gate+up column-split, output and down row-split). Attention's own T×T matmuls are left out
// (FlashAttention-style kernels, not GEMMs of this shape).
std::vector<GemmOp> layer_forward(int tokens, int hidden, int ffn, int shard) {
  return {{tokens, 3 * hidden / shard, hidden, false, false, "QKV forward"},
          {tokens, hidden, hidden / shard, false, false, "attention out forward"},
          {tokens, 2 * ffn / shard, hidden, false, false, "MLP gate+up forward"},
          {tokens, hidden, ffn / shard, false, false, "MLP down forward"}};
}

// Forward, then backward in reverse: per projection dX = dY·Wᵀ, then dW = Xᵀ·dY (the
// gradient a DDP bucket waits for). 3 × the forward FLOPs: 6 × parameters × tokens.
std::vector<GemmOp> layer_train_step(int tokens, int hidden, int ffn) {
  std::vector<GemmOp> ops = layer_forward(tokens, hidden, ffn, 1);
  static const char* const kDx[] = {"QKV dX", "attention out dX", "MLP gate+up dX", "MLP down dX"};
  static const char* const kDw[] = {"QKV dW", "attention out dW", "MLP gate+up dW", "MLP down dW"};
  for (int i = 3; i >= 0; --i) {
    const GemmOp f = ops[static_cast<std::size_t>(i)];
    ops.push_back({f.m, f.k, f.n, false, true, kDx[i]});  // dY[T×out]·Wᵀ → [T×in]
    ops.push_back({f.k, f.n, f.m, true, false, kDw[i]});  // Xᵀ[in×T]·dY → [in×out]
  }
  return ops;
}

// A preset without layer shapes (a CNN, or --flops): square 4096³ GEMMs and one tail whose
// k is rounded to 64, as many as the FLOPs ask (at least one).
std::vector<GemmOp> square_ops(double target) {
  constexpr int kEdge = 4096;
  const double unit = 2.0 * kEdge * kEdge * static_cast<double>(kEdge);
  std::vector<GemmOp> ops;
  const int whole = static_cast<int>(std::clamp(std::floor(target / unit), 0.0, 1e6));
  for (int i = 0; i < whole; ++i) ops.push_back({kEdge, kEdge, kEdge, false, false, "square"});
  const double rest = target - whole * unit;
  const long long k = std::llround(rest / (2.0 * kEdge * kEdge) / 64) * 64;
  if (k > 0) ops.push_back({kEdge, kEdge, static_cast<int>(k), false, false, "square tail"});
  if (ops.empty()) {
    const int e = std::max(64, static_cast<int>(std::cbrt(std::max(target, 1.0) / 2) / 64) * 64);
    ops.push_back({e, e, e, false, false, "square"});
  }
  return ops;
}

// Splits a phase's GEMMs into `chunks` consecutive groups by FLOPs: an op goes to the chunk
// where the running FLOP count at its end falls, so when there are more chunks than GEMMs
// (a layer's weights fill many 25 MiB buckets) several chunks are empty and their buckets
// become ready together, after the GEMM that produced them, as DDP's do.
std::vector<GemmPlan> split_chunks(const std::vector<GemmOp>& ops, int chunks) {
  std::vector<GemmPlan> out(static_cast<std::size_t>(std::max(chunks, 1)));
  double total = 0;
  for (const auto& o : ops) total += o.flops();
  double done = 0;
  for (const auto& o : ops) {
    done += o.flops();
    const double at = total > 0 ? done / total : 1.0;
    auto c = static_cast<std::size_t>(std::ceil(at * static_cast<double>(out.size()) - 1e-9));
    c = std::clamp<std::size_t>(c, 1, out.size()) - 1;
    out[c].ops.push_back(o);
  }
  return out;
}

std::string plan_text(const std::vector<GemmOp>& ops) {
  double f = 0;
  for (const auto& o : ops) f += o.flops();
  if (ops.size() <= 2) {
    std::string s;
    for (const auto& o : ops) s += (s.empty() ? "" : " + ") + strf("%d×%d×%d", o.m, o.n, o.k);
    return strf("%zu bf16 GEMM%s (%s) = %.4g GFLOP", ops.size(), ops.size() == 1 ? "" : "s",
                s.c_str(), f / 1e9);
  }
  return strf("%zu bf16 GEMMs (%s … %s) = %.4g GFLOP", ops.size(), ops.front().what,
              ops.back().what, f / 1e9);
}

// The fallback's padded shape: m and n to 64, k to 16.
GemmOp padded(const GemmOp& o) {
  GemmOp p = o;
  p.m = (o.m + 63) / 64 * 64;
  p.n = (o.n + 63) / 64 * 64;
  p.k = (o.k + 15) / 16 * 16;
  return p;
}

// What a rank computes with: cuBLASLt when it loaded, else the WMMA kernel. Buffers hold the
// largest A, B and C of the plan.
struct Compute {
  const gpu::CublasLtLib* blas = nullptr;             // null: the WMMA fallback
  std::vector<GemmOp> shapes;                         // distinct shapes, in first-use order
  std::vector<std::unique_ptr<gpu::BlasGemm>> gemms;  // per shape (cuBLASLt)
  gpu::DeviceMem a, b, c, workspace;
  std::size_t index(const GemmOp& o) const {
    for (std::size_t i = 0; i < shapes.size(); ++i)
      if (shapes[i].m == o.m && shapes[i].n == o.n && shapes[i].k == o.k && shapes[i].ta == o.ta &&
          shapes[i].tb == o.tb)
        return i;
    return shapes.size();
  }
  void leak() {
    a.leak();
    b.leak();
    c.leak();
    workspace.leak();
  }
};

constexpr std::size_t kWorkspaceBytes = 32u << 20;

// Element counts of the largest A, B and C over `ops` (padded for the fallback).
void buffer_elems(const std::vector<GemmOp>& ops, bool fallback, std::size_t* a, std::size_t* b,
                  std::size_t* c) {
  *a = *b = *c = 1;
  for (const auto& o0 : ops) {
    const GemmOp o = fallback ? padded(o0) : o0;
    *a = std::max(*a, static_cast<std::size_t>(o.m) * o.k);
    *b = std::max(*b, static_cast<std::size_t>(o.k) * o.n);
    *c = std::max(*c, static_cast<std::size_t>(o.m) * o.n);
  }
}

cudaError_t launch_wmma(const GemmOp& o0, const Compute& cp, cudaStream_t stream) {
  const GemmOp o = padded(o0);
  (void)cudaGetLastError();  // a stale non-sticky error must not be blamed on this launch
  const dim3 grid(static_cast<unsigned>(o.n / 64), static_cast<unsigned>(o.m / 64));
  wmma_gemm_kernel<<<grid, 128, 0, stream>>>(o.m, o.n, o.k, o.ta, o.tb, cp.a.get<__nv_bfloat16>(),
                                             cp.b.get<__nv_bfloat16>(), cp.c.get<float>());
  return cudaGetLastError();
}

GpuStatus run_op(const GemmOp& o, const Compute& cp, cudaStream_t stream) {
  if (!cp.blas) return cuda_status("WMMA GEMM launch", launch_wmma(o, cp, stream));
  const std::size_t i = cp.index(o);
  if (i >= cp.gemms.size()) return GpuStatus::error("internal: a GEMM shape without a plan");
  const cublasStatus_t st =
      cp.gemms[i]->run(cp.a.get<void>(), cp.b.get<void>(), cp.c.get<void>(), stream);
  if (st != CUBLAS_STATUS_SUCCESS)
    return GpuStatus::error(strf("cublasLtMatmul %s (%s): %s", cp.gemms[i]->shape().c_str(), o.what,
                                 gpu::cublas_status_name(st)));
  return {};
}

// ------------------------------------------------------------------------------ buffers

// `floats` float32s on `dev` for `what`; a failure says how much and what for.
GpuStatus allocate_floats(gpu::DeviceMem& mem, int dev, std::size_t floats, const char* what) {
  GPUVET_CUDA_TRY(cuda_status("cudaSetDevice", cudaSetDevice(dev)));
  if (GpuStatus s = mem.allocate(dev, floats * sizeof(float)); !s.ok())
    return GpuStatus::error(
        strf("cudaMalloc of %.1f MiB (%s): %s", static_cast<double>(floats * sizeof(float)) / kMiB,
             what, s.text.c_str()),
        s.code);
  return {};
}

GpuStatus allocate_bytes(gpu::DeviceMem& mem, int dev, std::size_t bytes, const char* what) {
  return allocate_floats(mem, dev, (bytes + sizeof(float) - 1) / sizeof(float), what);
}

GpuStatus elapsed_ms(cudaEvent_t a, cudaEvent_t b, double* out) {
  float ms = 0;
  GPUVET_CUDA_TRY(cuda_status("cudaEventElapsedTime", cudaEventElapsedTime(&ms, a, b)));
  *out = static_cast<double>(ms);
  return {};
}

// Polls one event (no NCCL involved) until done or the deadline; used by the peak kernel
// and setup, where a blocking synchronize could hang on a broken GPU.
GpuStatus poll_event(cudaEvent_t ev, Clock::time_point deadline) {
  for (;;) {
    const cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) return {};
    if (e != cudaErrorNotReady) return cuda_status("cudaEventQuery", e);
    if (Clock::now() >= deadline) return GpuStatus::timeout();
    std::this_thread::sleep_for(kPoll);
  }
}

// ------------------------------------------------------------------------------ ranks

// Step (or request) start decisions, made once per barrier by the last rank to arrive, so
// every rank runs the same number of steps — collectives must match — even in sustained
// mode where the count is not known in advance.
// Train runs, after its timed steps, steps with only the compute or only the collectives of
// the same plan: what each would take alone.
enum class Phase { kStep, kComputeOnly, kCommOnly };

struct Decision {
  bool run = false;
  bool timed = false;
  Phase phase = Phase::kStep;
  int index = 0;              // warm-up index, timed index, or index within its phase
  Clock::time_point epoch{};  // start of the first timed step (arrival origin for infer)
};

class Schedule {
 public:
  Schedule(int warmup, int steps, double duration_s, int compute_only = 0, int comm_only = 0)
      : warmup_(warmup),
        steps_(steps),
        duration_s_(duration_s),
        compute_only_(compute_only),
        comm_only_(comm_only) {}
  Decision next() {
    Decision d;
    const int i = next_++;
    if (i < warmup_) {
      d.run = true;
      d.index = i;
      return d;
    }
    const int t = i - warmup_;
    const auto now = Clock::now();
    if (t == 0) epoch_ = now;
    d.timed = true;
    d.index = t;
    d.epoch = epoch_;
    if (duration_s_ > 0) {
      d.run = t == 0 || std::chrono::duration<double>(now - epoch_).count() < duration_s_;
      return d;
    }
    d.run = true;
    if (t < steps_) return d;
    d.index = t - steps_;
    if (d.index < compute_only_) {
      d.phase = Phase::kComputeOnly;
      return d;
    }
    d.index -= compute_only_;
    d.phase = Phase::kCommOnly;
    d.run = d.index < comm_only_;
    return d;
  }

 private:
  int warmup_, steps_;
  double duration_s_;
  int compute_only_, comm_only_;
  int next_ = 0;
  Clock::time_point epoch_{};
};

// A barrier that can be cancelled (a failed rank must not leave the others waiting).
class StepBarrier {
 public:
  StepBarrier(int n, Schedule schedule) : n_(n), schedule_(schedule) {}
  // false: cancelled. The decision is copied under the lock; the next one is only made when
  // every rank has arrived again, so no rank can miss its own.
  bool arrive(Decision* out) {
    std::unique_lock<std::mutex> lock(mu_);
    if (cancelled_) return false;
    const unsigned long long gen = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      decision_ = schedule_.next();
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen || cancelled_; });
      if (generation_ == gen) return false;
    }
    *out = decision_;
    return true;
  }
  void cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
  int arrived_ = 0;
  unsigned long long generation_ = 0;
  bool cancelled_ = false;
  Schedule schedule_;
  Decision decision_;
};

// What every rank thread shares.
struct Shared {
  Shared(const EngineConfig& c, int n, Schedule schedule) : cfg(c), barrier(n, schedule) {}
  const EngineConfig& cfg;
  const NcclLib* lib = nullptr;            // null: no collectives (one GPU or nothing to reduce)
  const gpu::CublasLtLib* blas = nullptr;  // null: the WMMA fallback
  std::vector<ncclComm_t> comms;           // rank r's communicator
  StepBarrier barrier;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::string first_error;  // the first real error (root cause), not a stall

  void fail(const std::string& e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.empty()) first_error = e;
    }
    halt();
  }
  void halt() {
    stop = true;
    barrier.cancel();
  }
};

struct StepRecord {
  Clock::time_point arrival, start, end;
  double compute_ms = 0;
  double comm_ms = 0;
  // train, from the two streams' events (ms from the first compute event): the collectives'
  // time with no compute under them, and the step's GPU span (to both streams idle).
  double exposed_ms = 0;
  double span_ms = 0;
};

// Where a rank was when the run stopped on a stall: `progress` counts completed markers, so
// the rank with the least is the one the others were waiting for.
struct Stall {
  bool timed_out = false;  // this rank's own deadline passed (else: stopped while busy)
  std::string where;
  long long progress = 0;
};

struct RankState {
  int rank = 0;
  int device = 0;
  int sms = 1;
  gpu::Stream compute, comm;
  Compute compute_kit;   // GEMM plans and buffers
  gpu::DeviceMem data;   // gradients (train) or activations (infer)
  gpu::HostMem check;    // pinned, for the one-element GEMM check (a polled copy)
  gpu::EventSet marks;   // train: compute markers; infer: phase boundaries
  gpu::EventSet bstart;  // train: bucket starts (comm stream)
  gpu::EventSet bend;    // train: bucket ends (comm stream)
  std::vector<StepRecord> records;
  std::vector<StepRecord> compute_alone, comm_alone;  // train: the isolated phases
  std::optional<Stall> stall;

  std::string name() const { return strf("rank %d (GPU %d)", rank, device); }
  void leak() {
    compute_kit.leak();
    data.leak();
    check.leak();
  }
};

// Polls event tracks (each: events in enqueue order) and the rank's communicator until every
// event is done. The deadline restarts whenever an event completes: a stall is `timeout`
// without progress, whatever the step's length.
struct Track {
  const cudaEvent_t* events = nullptr;
  std::size_t count = 0;
  std::size_t done = 0;
};

GpuStatus wait_tracks(Shared& sh, ncclComm_t comm, Track* tracks, int ntracks) {
  const auto timeout = sh.cfg.collective_timeout;
  auto deadline = Clock::now() + timeout;
  for (;;) {
    bool progressed = false;
    bool all = true;
    for (int t = 0; t < ntracks; ++t) {
      Track& tr = tracks[t];
      while (tr.done < tr.count) {
        const cudaError_t e = cudaEventQuery(tr.events[tr.done]);
        if (e == cudaErrorNotReady) break;
        if (e != cudaSuccess) return cuda_status("cudaEventQuery", e);
        ++tr.done;
        progressed = true;
      }
      all = all && tr.done == tr.count;
    }
    if (comm) {
      bool in_progress = false;
      GPUVET_CUDA_TRY(gpu::comm_state(*sh.lib, comm, &in_progress));
    }
    if (all) return {};
    if (sh.stop) return GpuStatus::stopped();
    const auto now = Clock::now();
    if (progressed)
      deadline = now + timeout;
    else if (now >= deadline)
      return GpuStatus::timeout();
    std::this_thread::sleep_for(kPoll);
  }
}

// One in-place float32 sum all-reduce. A nonblocking communicator may answer ncclInProgress
// (connection setup): NCCL then wants the state settled before the next call on it.
GpuStatus all_reduce(Shared& sh, int rank, float* p, std::size_t count, cudaStream_t stream) {
  ncclComm_t comm = sh.comms[static_cast<std::size_t>(rank)];
  const ncclResult_t r = sh.lib->all_reduce(p, p, count, ncclFloat32, ncclSum, comm, stream);
  if (r == ncclSuccess) return {};
  if (r != ncclInProgress) return GpuStatus::error("ncclAllReduce: " + sh.lib->text(r, comm));
  const auto deadline = Clock::now() + sh.cfg.collective_timeout;
  for (;;) {
    bool in_progress = false;
    GPUVET_CUDA_TRY(
        gpu::with_context("ncclAllReduce", gpu::comm_state(*sh.lib, comm, &in_progress)));
    if (!in_progress) return {};
    if (sh.stop) return GpuStatus::stopped();
    if (Clock::now() >= deadline) return GpuStatus::timeout();
    std::this_thread::sleep_for(kPoll);
  }
}

GpuStatus run_gemms(const GemmPlan& p, const RankState& rs, cudaStream_t stream) {
  for (const auto& o : p.ops) GPUVET_CUDA_TRY(run_op(o, rs.compute_kit, stream));
  return {};
}

// Buffers, the GEMM plans (cuBLASLt's, per shape), the A/B patterns, zeroed data (summing
// zeros keeps the all-reduce free of overflow), and a one-element check of one GEMM; all on
// the compute stream, polled.
GpuStatus setup_rank(Shared& sh, RankState& rs, const std::vector<GemmOp>& ops,
                     std::size_t data_floats, bool comm_stream) {
  GPUVET_CUDA_TRY(cuda_status("cudaSetDevice", cudaSetDevice(rs.device)));
  GPUVET_CUDA_TRY(
      cuda_status("cudaDeviceGetAttribute",
                  cudaDeviceGetAttribute(&rs.sms, cudaDevAttrMultiProcessorCount, rs.device)));
  GPUVET_CUDA_TRY(gpu::with_context("cudaStreamCreateWithFlags", rs.compute.create(rs.device)));
  if (comm_stream)
    GPUVET_CUDA_TRY(gpu::with_context("cudaStreamCreateWithFlags", rs.comm.create(rs.device)));
  Compute& cp = rs.compute_kit;
  cp.blas = sh.blas;
  std::size_t ea = 0, eb = 0, ec = 0;
  buffer_elems(ops, !cp.blas, &ea, &eb, &ec);
  GPUVET_CUDA_TRY(allocate_bytes(cp.a, rs.device, ea * 2, "GEMM A (bf16)"));
  GPUVET_CUDA_TRY(allocate_bytes(cp.b, rs.device, eb * 2, "GEMM B (bf16)"));
  GPUVET_CUDA_TRY(allocate_bytes(cp.c, rs.device, ec * (cp.blas ? 2 : 4), "GEMM C"));
  if (cp.blas) {
    GPUVET_CUDA_TRY(allocate_bytes(cp.workspace, rs.device, kWorkspaceBytes, "cuBLASLt workspace"));
    for (const auto& o : ops) {
      if (cp.index(o) < cp.shapes.size()) continue;
      std::string why;
      auto g = gpu::BlasGemm::create(*cp.blas, o.m, o.n, o.k, o.ta, o.tb, cp.workspace.get<void>(),
                                     kWorkspaceBytes, &why);
      if (!g) return GpuStatus::error(strf("%s GEMM: %s", o.what, why.c_str()));
      cp.shapes.push_back(o);
      cp.gemms.push_back(std::move(g));
    }
  }
  if (data_floats > 0)
    GPUVET_CUDA_TRY(allocate_floats(rs.data, rs.device, data_floats, "gradients/activations"));
  GPUVET_CUDA_TRY(
      gpu::with_context("cudaHostAlloc", rs.check.allocate(4, gpu::HostMem::Kind::kPinned)));
  gpu::EventSet ev;
  GPUVET_CUDA_TRY(gpu::with_context("cudaEventCreate", ev.create(rs.device, 1)));
  const cudaStream_t s = rs.compute.get();
  const int blocks = rs.sms * 4;
  // The check runs the first forward-shaped GEMM (neither operand transposed) on patterns
  // laid out for its shape.
  GemmOp g = ops.front();
  for (const auto& o : ops)
    if (!o.ta && !o.tb) {
      g = o;
      break;
    }
  const GemmOp shape = cp.blas ? g : padded(g);
  (void)cudaGetLastError();
  fill_pattern_kernel<<<blocks, 256, 0, s>>>(cp.a.get<__nv_bfloat16>(), shape.m, shape.k, 0);
  GPUVET_CUDA_TRY(cuda_status("fill kernel launch", cudaGetLastError()));
  fill_pattern_kernel<<<blocks, 256, 0, s>>>(cp.b.get<__nv_bfloat16>(), shape.k, shape.n, 1);
  GPUVET_CUDA_TRY(cuda_status("fill kernel launch", cudaGetLastError()));
  if (data_floats > 0)
    GPUVET_CUDA_TRY(
        cuda_status("cudaMemsetAsync",
                    cudaMemsetAsync(rs.data.get<float>(), 0, data_floats * sizeof(float), s)));
  GPUVET_CUDA_TRY(run_op(g, cp, s));
  const std::size_t last = static_cast<std::size_t>(g.m - 1) * shape.n + (g.n - 1);
  const std::size_t elem = cp.blas ? 2 : 4;
  GPUVET_CUDA_TRY(cuda_status(
      "cudaMemcpyAsync", cudaMemcpyAsync(rs.check.get<void>(), cp.c.get<char>() + last * elem, elem,
                                         cudaMemcpyDeviceToHost, s)));
  GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(ev[0], s)));
  // Setup is no collective: at least kSetupTimeout, so a short collective deadline does not
  // fail a first launch that loads the module.
  const auto limit = std::max<std::chrono::milliseconds>(sh.cfg.collective_timeout, kSetupTimeout);
  GpuStatus w = poll_event(ev[0], Clock::now() + limit);
  if (w.is_timeout())
    return GpuStatus::error(
        strf("setup (fill and GEMM check) did not finish within %s", seconds_text(limit).c_str()));
  GPUVET_CUDA_TRY(w);
  double want = 0;
  for (int k = 0; k < g.k; ++k)
    want += static_cast<double>(pattern_value(g.m - 1, k, 0)) *
            static_cast<double>(pattern_value(k, g.n - 1, 1));
  const double got = cp.blas ? static_cast<double>(__bfloat162float(*rs.check.get<__nv_bfloat16>()))
                             : static_cast<double>(*rs.check.get<float>());
  // bf16 output: 8 bits of mantissa.
  const double tolerance = cp.blas ? std::max(1.0, std::fabs(want) / 128.0) : 0.0;
  if (std::fabs(got - want) > tolerance)
    return GpuStatus::error(
        strf("GEMM check failed: C[%d][%d] of the %d×%d×%d %s GEMM is %g, "
             "expected %g",
             g.m - 1, g.n - 1, g.m, g.n, g.k, g.what, got, want));
  return {};
}

// Drives the thread body: catches everything, so nothing escapes std::thread.
template <class Body>
void guarded(Shared& sh, RankState& rs, Body&& body) {
  try {
    body();
  } catch (const std::bad_alloc&) {
    sh.fail(rs.name() + ": out of host memory");
  } catch (const std::exception& e) {
    sh.fail(rs.name() + ": unexpected failure: " + e.what());
  } catch (...) {
    sh.fail(rs.name() + ": unexpected failure");
  }
}

// ------------------------------------------------------------------------------ train

struct TrainPlan {
  int accumulation = 1;
  bool overlap = true;
  bool comm = false;             // collectives run (N ≥ 2 and gradients to reduce)
  int buckets = 1;               // = compute chunks per phase
  std::vector<GemmOp> ops;       // one compute phase's GEMMs, in order
  std::vector<GemmPlan> chunks;  // the same, split at the buckets (some chunks empty)
  std::size_t grad_floats = 0;
  std::size_t bucket_floats = 0;
  double flops_per_step = 0;  // actual, per GPU
  std::size_t bucket_offset(int k) const { return static_cast<std::size_t>(k) * bucket_floats; }
  std::size_t bucket_count(int k) const {
    return std::min(bucket_floats, grad_floats - bucket_offset(k));
  }
  // Compute markers: one per earlier accumulation phase, then one per chunk of the last.
  std::size_t compute_marks() const {
    return static_cast<std::size_t>(accumulation - 1) + static_cast<std::size_t>(buckets);
  }
};

std::string step_label(const Decision& d) {
  return d.timed ? strf("step %d", d.index) : strf("warm-up step %d", d.index);
}

// `compute` false: the markers are recorded with no GEMM between them (a comm-only step);
// `comm` false: no collective (a compute-only step, or nothing to reduce).
GpuStatus enqueue_train_step(Shared& sh, RankState& rs, const TrainPlan& tp, bool compute,
                             bool comm, int* failed_bucket) {
  const cudaStream_t cs = rs.compute.get();
  const cudaStream_t ms = rs.comm.get();
  const std::size_t last0 = static_cast<std::size_t>(tp.accumulation - 1);
  // Compute start: marks[0].
  GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.marks[0], cs)));
  // marks layout: [0] start, [1 .. a-1] end of earlier phases, [a .. a+B-1] end of chunk k.
  for (int j = 0; j + 1 < tp.accumulation; ++j) {
    for (int k = 0; compute && k < tp.buckets; ++k)
      GPUVET_CUDA_TRY(run_gemms(tp.chunks[static_cast<std::size_t>(k)], rs, cs));
    GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.marks[1 + j], cs)));
  }
  auto reduce_k = [&](int k, cudaEvent_t after) -> GpuStatus {
    if (after)
      GPUVET_CUDA_TRY(cuda_status("cudaStreamWaitEvent", cudaStreamWaitEvent(ms, after, 0)));
    GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.bstart[k], ms)));
    GPUVET_CUDA_TRY(all_reduce(sh, rs.rank, rs.data.get<float>() + tp.bucket_offset(k),
                               tp.bucket_count(k), ms));
    GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.bend[k], ms)));
    return {};
  };
  // Errors name the bucket; a stall while queueing reports it through *failed_bucket.
  auto reduce = [&](int k, cudaEvent_t after) -> GpuStatus {
    *failed_bucket = k;
    GpuStatus st = reduce_k(k, after);
    if (st.is_error()) st.text = strf("bucket %d: ", k) + st.text;
    return st;
  };
  for (int k = 0; k < tp.buckets; ++k) {
    if (compute) GPUVET_CUDA_TRY(run_gemms(tp.chunks[static_cast<std::size_t>(k)], rs, cs));
    const cudaEvent_t done = rs.marks[1 + last0 + k];
    GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(done, cs)));
    if (comm && tp.overlap) GPUVET_CUDA_TRY(reduce(k, done));
  }
  if (comm && !tp.overlap)
    for (int k = 0; k < tp.buckets; ++k)
      GPUVET_CUDA_TRY(reduce(k, k == 0 ? rs.marks[last0 + tp.buckets] : nullptr));
  return {};
}

void train_rank(Shared& sh, RankState& rs, const TrainPlan& tp) {
  if (GpuStatus s = setup_rank(sh, rs, tp.ops, tp.grad_floats, tp.comm); !s.ok()) {
    sh.fail(rs.name() + ": " + s.text);
    return;
  }
  if (GpuStatus s =
          gpu::with_context("cudaEventCreate", rs.marks.create(rs.device, 1 + tp.compute_marks()));
      !s.ok()) {
    sh.fail(rs.name() + ": " + s.text);
    return;
  }
  if (tp.comm) {
    GpuStatus s = rs.bstart.create(rs.device, static_cast<std::size_t>(tp.buckets));
    if (s.ok()) s = rs.bend.create(rs.device, static_cast<std::size_t>(tp.buckets));
    s = gpu::with_context("cudaEventCreate", std::move(s));
    if (!s.ok()) {
      sh.fail(rs.name() + ": " + s.text);
      return;
    }
  }
  ncclComm_t comm = tp.comm ? sh.comms[static_cast<std::size_t>(rs.rank)] : nullptr;
  for (;;) {
    Decision d;
    if (!sh.barrier.arrive(&d) || !d.run) return;
    const auto t0 = Clock::now();
    int bucket = 0;
    const bool with_comm = tp.comm && d.phase != Phase::kComputeOnly;
    Track tracks[2];
    tracks[0] = {rs.marks.data() + 1, tp.compute_marks(), 0};
    if (with_comm) tracks[1] = {rs.bend.data(), static_cast<std::size_t>(tp.buckets), 0};
    GpuStatus s = enqueue_train_step(sh, rs, tp, d.phase != Phase::kCommOnly, with_comm, &bucket);
    const bool enqueued = s.ok();
    if (enqueued) s = wait_tracks(sh, comm, tracks, with_comm ? 2 : 1);
    if (!s.ok()) {
      const std::string label = step_label(d);
      if (s.is_error()) {
        // An error seen while waiting (NCCL's async error) is pinned on the first bucket
        // not yet done; enqueue errors already name theirs.
        const std::string at = enqueued && with_comm && tracks[1].done < tracks[1].count
                                   ? strf("bucket %zu: ", tracks[1].done)
                                   : std::string();
        sh.fail(rs.name() + ": " + label + ": " + at + s.text);
        return;
      }
      Stall st;
      st.timed_out = s.is_timeout();
      if (!enqueued) {
        // Stuck while queueing (a collective that stayed ncclInProgress): least progress.
        st.where =
            strf("the all-reduce of bucket %d in %s (still being queued)", bucket, label.c_str());
        st.progress = -1;
      } else {
        const bool compute_busy = tracks[0].done < tracks[0].count;
        if (with_comm) {
          st.where = strf("the all-reduce of bucket %zu in %s", tracks[1].done, label.c_str());
          if (compute_busy) st.where += " (its compute had not finished either)";
        } else {
          st.where = "the compute of " + label;
        }
        st.progress = static_cast<long long>(tracks[0].done + tracks[1].done);
        if (!st.timed_out && !compute_busy && (!with_comm || tracks[1].done == tracks[1].count))
          return;  // idle when stopped: nothing to report
      }
      rs.stall = st;
      if (st.timed_out) sh.halt();
      return;
    }
    const auto t1 = Clock::now();
    if (!d.timed) continue;
    StepRecord r;
    r.arrival = r.start = t0;
    r.end = t1;
    // Both timelines from the first compute event (events of one device, two streams).
    GpuStatus e = elapsed_ms(rs.marks[0], rs.marks[tp.compute_marks()], &r.compute_ms);
    std::vector<std::pair<double, double>> collectives;
    for (int k = 0; e.ok() && with_comm && k < tp.buckets; ++k) {
      double a = 0, b = 0;
      e = elapsed_ms(rs.marks[0], rs.bstart[k], &a);
      if (e.ok()) e = elapsed_ms(rs.marks[0], rs.bend[k], &b);
      r.comm_ms += b - a;
      collectives.emplace_back(a, b);
    }
    if (!e.ok()) {
      sh.fail(rs.name() + ": " + step_label(d) + ": " + e.text);
      return;
    }
    r.exposed_ms = exposed_comm_ms(r.compute_ms, collectives);
    r.span_ms = r.compute_ms;
    for (const auto& c : collectives) r.span_ms = std::max(r.span_ms, c.second);
    (d.phase == Phase::kStep          ? rs.records
     : d.phase == Phase::kComputeOnly ? rs.compute_alone
                                      : rs.comm_alone)
        .push_back(r);
  }
}

// ------------------------------------------------------------------------------ infer

struct InferPlan {
  int layers = 1;
  int tokens = 1;
  bool comm = false;
  GemmPlan layer;  // one layer's GEMMs on one GPU
  std::size_t act_floats = 0;
  double flops_per_request = 0;  // actual, per GPU
  std::size_t phases() const { return static_cast<std::size_t>(layers) * tokens; }
  // events: [0] start, then per (token, layer) i: [1+2i] after the GEMM, [2+2i] after the
  // all-reduce (recorded even with no all-reduce, so the layout never changes).
  std::size_t events() const { return 1 + 2 * phases(); }
};

GpuStatus enqueue_request(Shared& sh, RankState& rs, const InferPlan& ip) {
  const cudaStream_t s = rs.compute.get();
  GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.marks[0], s)));
  for (std::size_t i = 0; i < ip.phases(); ++i) {
    GPUVET_CUDA_TRY(run_gemms(ip.layer, rs, s));
    GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.marks[1 + 2 * i], s)));
    if (ip.comm) GPUVET_CUDA_TRY(all_reduce(sh, rs.rank, rs.data.get<float>(), ip.act_floats, s));
    GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.marks[2 + 2 * i], s)));
  }
  return {};
}

std::string infer_where(const InferPlan& ip, std::size_t first_pending, const std::string& req) {
  if (first_pending == 0) return "the start of " + req;
  const std::size_t phase = (first_pending - 1) / 2;
  const int token = static_cast<int>(phase / static_cast<std::size_t>(ip.layers));
  const int layer = static_cast<int>(phase % static_cast<std::size_t>(ip.layers));
  const bool gemm = (first_pending - 1) % 2 == 0;
  return strf("the %s of layer %d of token %d in %s", gemm ? "compute" : "all-reduce", layer, token,
              req.c_str());
}

// Sleeps until `t` in short slices, so a failed rank stops a long wait between arrivals.
bool sleep_until(Shared& sh, Clock::time_point t) {
  for (;;) {
    if (sh.stop) return false;
    const auto now = Clock::now();
    if (now >= t) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(t - now, std::chrono::milliseconds(10)));
  }
}

void infer_rank(Shared& sh, RankState& rs, const InferPlan& ip) {
  if (GpuStatus s = setup_rank(sh, rs, ip.layer.ops, ip.comm ? ip.act_floats : 0, false); !s.ok()) {
    sh.fail(rs.name() + ": " + s.text);
    return;
  }
  if (GpuStatus s = gpu::with_context("cudaEventCreate", rs.marks.create(rs.device, ip.events()));
      !s.ok()) {
    sh.fail(rs.name() + ": " + s.text);
    return;
  }
  const double rate = sh.cfg.request_rate_hz;
  ncclComm_t comm = ip.comm ? sh.comms[static_cast<std::size_t>(rs.rank)] : nullptr;
  for (;;) {
    Decision d;
    if (!sh.barrier.arrive(&d) || !d.run) return;
    const std::string label =
        d.timed ? strf("request %d", d.index) : strf("warm-up request %d", d.index);
    // Fixed arrivals (timed requests only): request q arrives at epoch + q / rate. A request
    // that arrives while the previous one still runs waits; its latency includes the wait.
    Clock::time_point arrival{};
    const bool paced = d.timed && rate > 0;
    if (paced) {
      arrival = d.epoch + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(d.index / rate));
      if (!sleep_until(sh, arrival)) return;
    }
    const auto t0 = Clock::now();
    if (!paced) arrival = t0;
    Track track{rs.marks.data(), ip.events(), 0};
    GpuStatus s = enqueue_request(sh, rs, ip);
    const bool enqueued = s.ok();
    if (enqueued) s = wait_tracks(sh, comm, &track, 1);
    if (!s.ok()) {
      if (s.is_error()) {
        sh.fail(rs.name() + ": " + label + ": " + s.text);
        return;
      }
      Stall st;
      st.timed_out = s.is_timeout();
      if (!enqueued) {
        st.where = "an all-reduce of " + label + " (still being queued)";
        st.progress = -1;
      } else {
        st.where = infer_where(ip, track.done, label);
        st.progress = static_cast<long long>(track.done);
      }
      rs.stall = st;
      if (st.timed_out) sh.halt();
      return;
    }
    const auto t1 = Clock::now();
    if (!d.timed) continue;
    StepRecord r;
    r.arrival = arrival;
    r.start = t0;
    r.end = t1;
    GpuStatus e;
    for (std::size_t i = 0; e.ok() && i < ip.phases(); ++i) {
      double g = 0, c = 0;
      e = elapsed_ms(rs.marks[2 * i], rs.marks[1 + 2 * i], &g);
      if (e.ok()) e = elapsed_ms(rs.marks[1 + 2 * i], rs.marks[2 + 2 * i], &c);
      r.compute_ms += g;
      r.comm_ms += c;
    }
    if (!e.ok()) {
      sh.fail(rs.name() + ": " + label + ": " + e.text);
      return;
    }
    rs.records.push_back(r);
  }
}

// ------------------------------------------------------------------------------ the run

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

// After a failure: abort every communicator (NCCL kernels see the flag and return), give the
// streams a grace, and leak the buffers of ranks still busy. Returns the note, if any.
std::string drain_after_failure(gpu::Communicators* comms,
                                std::vector<std::unique_ptr<RankState>>& ranks) {
  if (comms) comms->abort();
  std::vector<int> devices;
  std::vector<std::vector<cudaStream_t>> streams;
  for (const auto& rs : ranks) {
    devices.push_back(rs->device);
    streams.push_back({rs->compute.get(), rs->comm.get()});
  }
  std::string stuck;
  for (int r : gpu::drain_streams(devices, streams, kDrainGrace)) {
    ranks[static_cast<std::size_t>(r)]->leak();
    stuck += (stuck.empty() ? "" : ", ") + ranks[static_cast<std::size_t>(r)]->name();
  }
  if (stuck.empty()) return {};
  return "still busy after the abort, buffers left allocated: " + stuck;
}

// The error for a run that stopped on stalls: the rank with the least progress is named
// (the others were waiting for it), the rest are listed.
std::string stall_text(const std::vector<std::unique_ptr<RankState>>& ranks,
                       std::chrono::milliseconds timeout) {
  const RankState* named = nullptr;
  bool any_timeout = false;
  for (const auto& rs : ranks) {
    if (!rs->stall) continue;
    any_timeout = any_timeout || rs->stall->timed_out;
    if (!named || rs->stall->progress < named->stall->progress) named = rs.get();
  }
  if (!named || !any_timeout) return "stopped without a reported cause";
  std::string s = strf("timeout after %s: %s did not finish %s", seconds_text(timeout).c_str(),
                       named->name().c_str(), named->stall->where.c_str());
  std::string others;
  for (const auto& rs : ranks)
    if (rs->stall && rs.get() != named) others += (others.empty() ? "" : ", ") + rs->name();
  if (!others.empty()) s += "; also pending: " + others;
  return s;
}

// Throughput per interval for the sustained trace: each step's items are spread evenly over
// its [start, end] span and summed per window, so a step across a window edge counts in both
// parts. Times are seconds from `origin` (the run_config call, close to where the caller's
// NVML sampler starts); a last window shorter than half an interval is dropped.
void fill_trace(const std::vector<std::pair<double, double>>& spans, double items_per_step,
                double interval, SustainedTrace* trace) {
  if (spans.empty() || !trace) return;
  if (!(interval > 0)) interval = 1.0;
  const double t0 = spans.front().first;
  const double t_end = spans.back().second;
  std::size_t first = 0;  // spans ending before the window are skipped
  for (int w = 0;; ++w) {
    const double w0 = t0 + w * interval;
    if (w0 >= t_end) break;
    const double w1 = std::min(w0 + interval, t_end);
    if (w > 0 && w1 - w0 < 0.5 * interval) break;
    while (first < spans.size() && spans[first].second <= w0) ++first;
    double items = 0;
    for (std::size_t i = first; i < spans.size() && spans[i].first < w1; ++i) {
      const auto [a, b] = spans[i];
      if (b <= a) continue;
      const double overlap = std::min(b, w1) - std::max(a, w0);
      if (overlap > 0) items += items_per_step * overlap / (b - a);
    }
    trace->throughput.emplace_back(w1, items / (w1 - w0));
  }
}

ScaleResult run_config_impl(const EngineConfig& cfg, SustainedTrace* trace) {
  const auto t_call = Clock::now();
  ScaleResult res;
  const ScalePreset& p = cfg.preset;
  res.run.workload = p.workload;
  res.run.preset = p.name;
  const int n = static_cast<int>(cfg.devices.size());
  res.run.gpus = n;
  const bool train = p.workload == "train";
  auto fail = [&](std::string e) {
    res.error = std::move(e);
    return res;
  };

  // ---- validation
  if (!train && p.workload != "infer")
    return fail("unknown workload '" + p.workload + "' (train or infer)");
  if (n < 1) return fail("no GPU given");
  if (!(p.flops > 0)) return fail("the preset has no FLOPs per step");
  if (cfg.duration_s > 0 && !train) return fail("sustained mode runs train presets only");
  if (cfg.duration_s <= 0 && cfg.steps < 1) return fail("at least one timed step is needed");
  if (cfg.grad_accumulation < 1) return fail("grad_accumulation must be at least 1");
  if (cfg.collective_timeout.count() <= 0) return fail("the collective timeout must be positive");
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    (void)cudaGetLastError();
    return fail("no usable CUDA device: " + cuda_text(e));
  }
  for (int i = 0; i < n; ++i) {
    const int d = cfg.devices[static_cast<std::size_t>(i)];
    if (d < 0 || d >= count) return fail(strf("GPU %d does not exist (%d CUDA devices)", d, count));
    for (int j = 0; j < i; ++j)
      if (cfg.devices[static_cast<std::size_t>(j)] == d)
        return fail(strf("GPU %d is listed twice", d));
  }

  // ---- plans
  TrainPlan tp;
  InferPlan ip;
  std::size_t data_floats = 0;
  std::vector<GemmOp> all_ops;  // every GEMM one rank runs (for buffers and plans)
  double target_flops = 0;      // what the preset asks per step (train) or request (infer), per GPU
  if (train) {
    tp.accumulation = cfg.grad_accumulation;
    tp.overlap = cfg.overlap;
    tp.grad_floats = p.grad_bytes / sizeof(float);
    tp.comm = n >= 2 && tp.grad_floats > 0;
    if (tp.grad_floats > 0) {
      tp.bucket_floats =
          p.bucket_bytes >= sizeof(float) ? p.bucket_bytes / sizeof(float) : tp.grad_floats;
      tp.bucket_floats = std::min(tp.bucket_floats, tp.grad_floats);
      const std::size_t b = (tp.grad_floats + tp.bucket_floats - 1) / tp.bucket_floats;
      if (b > static_cast<std::size_t>(kMaxBuckets))
        return fail(
            strf("%zu gradient buckets (%.1f MiB of gradients in %.3g MiB buckets): at "
                 "most %d; use larger buckets",
                 b, static_cast<double>(p.grad_bytes) / kMiB,
                 static_cast<double>(p.bucket_bytes) / kMiB, kMaxBuckets));
      tp.buckets = static_cast<int>(b);
    }
    tp.ops = p.hidden > 0 && !cfg.flops_override ? layer_train_step(p.tokens, p.hidden, p.ffn)
                                                 : square_ops(p.flops);
    tp.chunks = split_chunks(tp.ops, tp.buckets);
    double phase = 0;
    for (const auto& o : tp.ops) phase += o.flops();
    tp.flops_per_step = phase * tp.accumulation;
    target_flops = p.flops * tp.accumulation;
    data_floats = tp.grad_floats;
    all_ops = tp.ops;
  } else {
    ip.layers = std::max(p.layers, 1);
    ip.tokens = p.tokens_per_request;
    if (ip.tokens < 1) return fail("the preset has no tokens per request");
    if (ip.events() > kMaxInferEvents)
      return fail(strf("%d tokens × %d layers per request: too many phases to time (at most %zu)",
                       ip.tokens, ip.layers, (kMaxInferEvents - 1) / 2));
    ip.act_floats = p.activation_bytes / sizeof(float);
    ip.comm = n >= 2 && ip.act_floats > 0;
    ip.layer.ops = p.hidden > 0 && !cfg.flops_override
                       ? layer_forward(p.tokens, p.hidden, p.ffn, n)
                       : square_ops(p.flops / (static_cast<double>(ip.layers) * n));
    ip.flops_per_request = ip.layer.flops() * static_cast<double>(ip.phases());
    target_flops = p.flops / n * ip.tokens;
    data_floats = ip.comm ? ip.act_floats : 0;
    all_ops = ip.layer.ops;
  }
  const double actual_flops = train ? tp.flops_per_step : ip.flops_per_request;
  const bool need_nccl = train ? tp.comm : ip.comm;

  gpu::KeepCurrentDevice keep;

  // ---- cuBLASLt (loudly absent: the WMMA fallback is far slower)
  std::string blas_why;
  const gpu::CublasLtLib* blas = gpu::cublaslt_library(cfg.cublas_library, &blas_why);
  if (blas)
    res.notes.push_back(
        strf("compute: bf16 tensor-core GEMMs through cuBLASLt %s (%s), fp32 "
             "accumulation",
             gpu::cublaslt_version_text(blas->version).c_str(), blas->path.c_str()));
  else
    res.notes.push_back(
        "WARNING: cuBLASLt not loaded, compute runs gpuvet's own WMMA bf16 "
        "kernel, several times slower than a real framework's GEMMs: compute "
        "time is overstated and the communication share understated. " +
        blas_why);
  res.compute_backend = blas ? "cublaslt-bf16" : "wmma-bf16-fallback";

  // ---- memory: GEMM A, B, C, the workspace and the gradients/activations against 80 % of
  // free memory
  std::size_t ea = 0, eb = 0, ec = 0;
  buffer_elems(all_ops, !blas, &ea, &eb, &ec);
  const double need = 2.0 * static_cast<double>(ea + eb) + (blas ? 2.0 : 4.0) * ec +
                      (blas ? static_cast<double>(kWorkspaceBytes) : 0.0) +
                      static_cast<double>(data_floats) * sizeof(float);
  for (int d : cfg.devices) {
    std::size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaSetDevice(d);
    if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return fail(strf("cudaMemGetInfo on GPU%d: %s", d, cuda_text(e).c_str()));
    }
    if (need > kMemoryShare * static_cast<double>(free_b))
      return fail(strf("not enough free memory on GPU%d: needs %.1f GiB, %.1f GiB free", d,
                       need / kGiB, static_cast<double>(free_b) / kGiB));
  }

  // ---- NCCL
  const NcclLib* lib = nullptr;
  if (need_nccl) {
    std::string why;
    lib = gpu::nccl_library(cfg.nccl_library, &why);
    if (!lib) return fail("NCCL unavailable: " + why);
    res.notes.push_back(gpu::nccl_keep_multicast_off());
  }

  // Declaration order is teardown order, reversed: communicators go (abort or close) before
  // the ranks' streams and buffers.
  // Train, not sustained: then up to 10 compute-only steps, and as many comm-only ones when
  // there is something to reduce.
  const int alone = train && cfg.duration_s <= 0 ? std::clamp(cfg.steps, 1, 10) : 0;
  Shared sh(cfg, n,
            Schedule(std::max(cfg.warmup_steps, 0), cfg.steps, cfg.duration_s, alone,
                     need_nccl ? alone : 0));
  sh.blas = blas;
  std::vector<std::unique_ptr<RankState>> ranks;
  for (int r = 0; r < n; ++r) {
    auto rs = std::make_unique<RankState>();
    rs->rank = r;
    rs->device = cfg.devices[static_cast<std::size_t>(r)];
    ranks.push_back(std::move(rs));
  }
  std::optional<gpu::Communicators> comms;
  if (need_nccl) {
    comms.emplace(*lib, cfg.devices, cfg.collective_timeout);
    if (GpuStatus e = comms->init(); !e.ok()) {
      comms->abort();
      return fail(comms->describe(e, "communicator init"));
    }
    sh.lib = lib;
    sh.comms = comms->handles();
    res.notes.push_back(
        strf("NCCL %s, %s communicators", gpu::nccl_version_text(lib->version_code).c_str(),
             comms->nonblocking() ? "nonblocking"
                                  : "blocking (NCCL < 2.14: init and enqueue unbounded)"));
  }

  // ---- one thread per GPU
  std::vector<std::thread> threads;
  try {
    for (auto& up : ranks) {
      RankState* rs = up.get();
      threads.emplace_back([&sh, rs, &tp, &ip, train] {
        guarded(sh, *rs, [&] {
          if (train)
            train_rank(sh, *rs, tp);
          else
            infer_rank(sh, *rs, ip);
        });
      });
    }
  } catch (const std::exception& e) {
    sh.fail(std::string("cannot start a thread per GPU: ") + e.what());
  }
  for (auto& t : threads) t.join();

  bool failed = sh.stop.load();
  for (const auto& rs : ranks) failed = failed || rs->stall.has_value();
  if (failed) {
    res.error =
        !sh.first_error.empty() ? sh.first_error : stall_text(ranks, cfg.collective_timeout);
    if (std::string note = drain_after_failure(comms ? &*comms : nullptr, ranks); !note.empty())
      res.notes.push_back(note);
    return res;
  }
  if (comms)
    if (GpuStatus e = comms->close(); !e.ok())
      res.notes.push_back("communicator teardown: " + comms->describe(e, "ncclCommFinalize") +
                          " (aborted)");

  // ---- aggregation (every rank ran the same steps; min guards against a mismatch)
  std::size_t steps = ranks.front()->records.size();
  for (const auto& rs : ranks) steps = std::min(steps, rs->records.size());
  if (steps == 0) return fail("no step was timed");
  std::vector<double> compute(steps), comm(steps), service(steps), exposed(steps), span(steps);
  double compute_total = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    double latency = 0;
    for (const auto& rs : ranks) {
      const StepRecord& r = rs->records[s];
      latency = std::max(latency, ms_between(r.arrival, r.end));
      service[s] = std::max(service[s], ms_between(r.start, r.end));
      compute[s] += r.compute_ms / n;
      comm[s] += r.comm_ms / n;
      exposed[s] += r.exposed_ms / n;
      span[s] += r.span_ms / n;
      compute_total += r.compute_ms;
    }
    res.step_ms.push_back(latency);
  }
  res.mean_ms = mean(res.step_ms);
  res.compute_ms = mean(compute);
  res.comm_ms = need_nccl ? mean(comm) : 0.0;
  if (need_nccl && train) {
    // Exposed communication from the two timelines: collective time with no GEMM under it
    // (the all-reduce not hidden, and waiting for the slowest rank), over the GPU's step span.
    res.exposed_comm_ms = mean(exposed);
    const double span_ms = mean(span);
    res.run.comm_share = span_ms > 0 ? std::clamp(*res.exposed_comm_ms / span_ms, 0.0, 1.0) : 0.0;
  } else {
    // Infer: the all-reduce is on the compute stream, so all of it is exposed: the part of
    // the request's service time the GPU was not computing. Zero where nothing is reduced.
    const double service_ms = mean(service);
    res.run.comm_share = need_nccl ? exposed_comm_share(*res.compute_ms, service_ms) : 0.0;
    if (!train) res.exposed_comm_ms = need_nccl ? *res.comm_ms : 0.0;
  }
  if (train && !need_nccl) res.exposed_comm_ms = 0.0;
  // The isolated phases: wall time of the slowest GPU, as for a step.
  auto alone_ms = [&](std::vector<StepRecord> RankState::*phase) -> std::optional<double> {
    std::size_t k = (ranks.front().get()->*phase).size();
    for (const auto& rs : ranks) k = std::min(k, (rs.get()->*phase).size());
    if (k == 0) return std::nullopt;
    std::vector<double> wall(k);
    for (std::size_t i = 0; i < k; ++i)
      for (const auto& rs : ranks)
        wall[i] =
            std::max(wall[i], ms_between((rs.get()->*phase)[i].start, (rs.get()->*phase)[i].end));
    return mean(wall);
  };
  res.compute_alone_ms = alone_ms(&RankState::compute_alone);
  res.comm_alone_ms = alone_ms(&RankState::comm_alone);
  if (train && !need_nccl && res.compute_alone_ms) res.comm_alone_ms = 0.0;
  if (compute_total > 0)
    res.achieved_tflops = tflops(actual_flops * static_cast<double>(steps) * n, compute_total);

  if (train) {
    // Items: one batch per GPU per compute phase, so a step is N × grad_accumulation items.
    const double items = static_cast<double>(n) * tp.accumulation;
    if (*res.mean_ms > 0) res.run.throughput = items / (*res.mean_ms / 1000.0);
    if (cfg.duration_s > 0 && trace) {
      std::vector<std::pair<double, double>> spans;
      for (std::size_t s = 0; s < steps; ++s) {
        Clock::time_point a = ranks.front()->records[s].start, b = ranks.front()->records[s].end;
        for (const auto& rs : ranks) {
          a = std::min(a, rs->records[s].start);
          b = std::max(b, rs->records[s].end);
        }
        spans.emplace_back(std::chrono::duration<double>(a - t_call).count(),
                           std::chrono::duration<double>(b - t_call).count());
      }
      trace->preset = p.name;
      trace->gpus = n;
      trace->throughput.clear();
      fill_trace(spans, items, cfg.sample_interval_s, trace);
      res.notes.push_back(strf("sustained: %zu steps in %.1f s, throughput per %g s window", steps,
                               spans.back().second - spans.front().first, cfg.sample_interval_s));
    }
    res.notes.push_back(strf(
        "train: per GPU per step %d compute phase%s, each %s (forward, then backward dX and "
        "dW per projection), split at %d gradient bucket%s; %s",
        tp.accumulation, tp.accumulation == 1 ? "" : "s", plan_text(tp.ops).c_str(), tp.buckets,
        tp.buckets == 1 ? "" : "s",
        tp.comm ? strf("%d bucket%s of %.1f MiB float32 gradients all-reduced in place on a "
                       "second stream, %s",
                       tp.buckets, tp.buckets == 1 ? "" : "s",
                       static_cast<double>(tp.bucket_floats * sizeof(float)) / kMiB,
                       tp.overlap ? "bucket k overlapping chunk k+1" : "after the last chunk")
                      .c_str()
                : (n == 1 ? "1 GPU: nothing to all-reduce (comm 0)" : "no gradients to reduce")));
    res.notes.push_back(
        "throughput = GPUs × grad_accumulation / mean step time (one batch per GPU per compute "
        "phase); step = slowest GPU's wall time from a common start to both streams idle");
  } else {
    Clock::time_point first = ranks.front()->records.front().arrival;
    Clock::time_point last = ranks.front()->records[steps - 1].end;
    for (const auto& rs : ranks) {
      first = std::min(first, rs->records.front().arrival);
      last = std::max(last, rs->records[steps - 1].end);
    }
    const double total_s = std::chrono::duration<double>(last - first).count();
    if (total_s > 0) res.run.throughput = static_cast<double>(steps) / total_s;
    if (cfg.request_rate_hz > 0) res.run.offered_rate_hz = cfg.request_rate_hz;
    res.notes.push_back(
        strf("infer: %d tokens × %d layers per request; per layer and GPU %s, then %s", ip.tokens,
             ip.layers, plan_text(ip.layer.ops).c_str(),
             ip.comm ? strf("an all-reduce of %zu B on the same stream (critical path)",
                            ip.act_floats * sizeof(float))
                           .c_str()
                     : (n == 1 ? "no all-reduce (1 GPU)" : "no all-reduce (no activations)")));
    res.notes.push_back(
        cfg.request_rate_hz > 0
            ? strf("requests arrive every %.3g ms; latency = arrival to last token on every "
                   "GPU (queueing included); throughput = requests / (first arrival to last "
                   "completion)",
                   1000.0 / cfg.request_rate_hz)
            : std::string("requests back to back; latency = start to last token on every GPU; "
                          "throughput = requests / (first start to last completion)"));
  }
  res.notes.push_back(
      train ? std::string("comm share = exposed communication / step: the all-reduce time with "
                          "no GEMM under it, from events on both streams, over the GPU's step "
                          "span (mean over GPUs); compute alone / comm alone = the same step "
                          "with only its GEMMs / only its all-reduces (slowest GPU's wall "
                          "time); compute TFLOP/s = GEMM FLOPs / compute time, per GPU")
            : std::string("comm share = 1 − compute / request service time (the all-reduce "
                          "is on the compute stream: all of it is exposed); compute TFLOP/s = "
                          "GEMM FLOPs / compute time, per GPU"));
  if (std::abs(actual_flops - target_flops) > 0.01 * target_flops)
    res.notes.push_back(
        strf("GEMM work per %s is %.4g GFLOP per GPU, the preset asks %.4g "
             "(the GEMMs of its shapes)",
             train ? "step" : "request", actual_flops / 1e9, target_flops / 1e9));
  return res;
}

}  // namespace

// ------------------------------------------------------------------------------ public

std::optional<double> measure_peak_tflops(int device, const std::string& cublas_library,
                                          std::string* backend, std::string* error) {
  auto fail = [&](const std::string& e) -> std::optional<double> {
    if (error) *error = e;
    return std::nullopt;
  };
  try {
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
      (void)cudaGetLastError();
      return fail("no usable CUDA device: " + cuda_text(e));
    }
    if (device < 0 || device >= count)
      return fail(strf("GPU %d does not exist (%d CUDA devices)", device, count));
    gpu::KeepCurrentDevice keep;
    std::string why;
    Compute cp;
    cp.blas = gpu::cublaslt_library(cublas_library, &why);
    // The dense bf16 GEMM peak as a framework sees it: one 8192³ GEMM through cuBLASLt (the
    // size PyTorch benchmarks quote), or 4096³ through the fallback kernel.
    const int e = cp.blas ? 8192 : 4096;
    const GemmOp op{e, e, e, false, false, "peak"};
    if (backend) *backend = cp.blas ? "cuBLASLt bf16 8192³" : "WMMA bf16 4096³ (no cuBLASLt)";
    gpu::Stream stream;
    gpu::EventSet ev;
    GpuStatus s = cuda_status("cudaSetDevice", cudaSetDevice(device));
    if (s.ok()) s = gpu::with_context("cudaStreamCreateWithFlags", stream.create(device));
    if (s.ok()) s = gpu::with_context("cudaEventCreate", ev.create(device, 2));
    const std::size_t elems = static_cast<std::size_t>(e) * e;
    if (s.ok()) s = allocate_bytes(cp.a, device, elems * 2, "peak A");
    if (s.ok()) s = allocate_bytes(cp.b, device, elems * 2, "peak B");
    if (s.ok()) s = allocate_bytes(cp.c, device, elems * 4, "peak C");
    if (s.ok() && cp.blas) {
      s = allocate_bytes(cp.workspace, device, kWorkspaceBytes, "cuBLASLt workspace");
      if (s.ok()) {
        auto g = gpu::BlasGemm::create(*cp.blas, e, e, e, false, false, cp.workspace.get<void>(),
                                       kWorkspaceBytes, &why);
        if (!g) return fail(strf("GPU %d: %s", device, why.c_str()));
        cp.shapes.push_back(op);
        cp.gemms.push_back(std::move(g));
      }
    }
    if (!s.ok()) return fail(strf("GPU %d: %s", device, s.text.c_str()));
    (void)cudaGetLastError();
    fill_pattern_kernel<<<1024, 256, 0, stream.get()>>>(cp.a.get<__nv_bfloat16>(), e, e, 0);
    fill_pattern_kernel<<<1024, 256, 0, stream.get()>>>(cp.b.get<__nv_bfloat16>(), e, e, 1);
    // `reps` GEMMs between two events, polled (60 s: far above any real run).
    auto timed = [&](int reps, double* ms) -> GpuStatus {
      GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(ev[0], stream.get())));
      for (int i = 0; i < reps; ++i) GPUVET_CUDA_TRY(run_op(op, cp, stream.get()));
      GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(ev[1], stream.get())));
      GPUVET_CUDA_TRY(poll_event(ev[1], Clock::now() + std::chrono::seconds(60)));
      return elapsed_ms(ev[0], ev[1], ms);
    };
    auto failed = [&](const GpuStatus& st) {
      if (st.is_timeout()) {
        cp.leak();
        return fail(strf("GPU %d: the peak GEMMs did not finish within 60 s", device));
      }
      return fail(strf("GPU %d: %s", device, st.text.c_str()));
    };
    // Warm-up (clocks up, plans and modules loaded), then ≈200 ms per timed run, best of 3.
    double ms = 0;
    int reps = 4;
    if (GpuStatus st = timed(reps, &ms); !st.ok()) return failed(st);
    if (ms > 0) reps = static_cast<int>(std::clamp(reps * 200.0 / ms, 2.0, 10000.0));
    double best = 0;
    for (int i = 0; i < 3; ++i) {
      if (GpuStatus st = timed(reps, &ms); !st.ok()) return failed(st);
      if (ms > 0) best = std::max(best, tflops(op.flops() * reps, ms));
    }
    if (!(best > 0)) return fail(strf("GPU %d: no time measured", device));
    return best;
  } catch (const std::bad_alloc&) {
    return fail("out of host memory");
  } catch (const std::exception& e) {
    return fail(std::string("unexpected failure: ") + e.what());
  } catch (...) {
    return fail("unexpected failure");
  }
}

ScaleResult run_config(const EngineConfig& config, SustainedTrace* trace) {
  auto failed = [&](std::string why) {
    ScaleResult r;
    r.run.workload = config.preset.workload;
    r.run.preset = config.preset.name;
    r.run.gpus = static_cast<int>(config.devices.size());
    r.error = std::move(why);
    return r;
  };
  try {
    return run_config_impl(config, trace);
  } catch (const std::bad_alloc&) {
    return failed("out of host memory");
  } catch (const std::exception& e) {
    return failed(std::string("unexpected failure: ") + e.what());
  } catch (...) {
    return failed("unexpected failure");
  }
}

}  // namespace gpuvet::scale
