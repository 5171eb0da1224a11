// scale/scale_engine.cu — the GPU side of `gpuvet scale` (contract: scale_engine.h).
//
// What runs is a schedule (step_schedule.h): the CPU code decides every GEMM with its own
// buffers, every collective with its range, every cross-stream wait and the optimizer step;
// this file executes it as it is and times it.
//
//   Compute: bf16 tensor-core GEMMs with fp32 accumulation through cuBLASLt (dlopen,
//   gpu/cublaslt.h), one heuristic plan per shape; without it, loudly, gpuvet's own WMMA
//   kernel (tensor cores, far slower). Every buffer is filled from a normal distribution
//   (weights σ 0.02, activations 1) by a counter-based generator, so the GEMMs see data like a
//   real step's (zeros or small integers draw less power and run faster at the power cap).
//   Before the first step every distinct GEMM runs once and 64 of its outputs are compared
//   with an fp32 reference computed on the device from the same bf16 inputs.
//
//   Peak: one 8192³ bf16 GEMM through cuBLASLt on the same random data, best of three timed
//   runs of ≈200 ms (the fallback's 4096³ without cuBLASLt).
//
//   One host thread per GPU, a compute stream and a communication stream each, one NCCL
//   communicator per GPU (N ≥ 2). A task waits on its stream for the tasks its schedule
//   names (events), is bracketed by a start and an end event, and the step's two timelines
//   come from those events: compute (GEMMs, optimizer) and communication (collectives), the
//   exposed communication being the collective time with no compute under it. Every step
//   starts with all ranks released together by a barrier; the step time is the slowest rank's
//   host wall time from release to both streams idle. After the timed steps (train, not
//   sustained) the same schedule runs with only its compute and with only its collectives,
//   and a last step checks every distinct collective: each rank fills its range with known
//   values, the collective runs, and every element is compared with the exact sum (or the
//   gathered owner's value). A wrong GEMM sample or collective element is reported as wrong
//   data (data-corruption), not as a figure.
//
// Never hangs: communicators are nonblocking (NCCL 2.14+; older NCCL: blocking init and
// enqueue, said in a note), every wait polls CUDA events and ncclCommGetAsyncError, and a
// wait fails once no event has completed for the deadline (the configured floor, raised to ten
// times what the largest collective needs at the slowest link gpuvet expects; it restarts on
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
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/cublaslt.h"
#include "gpu/cuda_resources.h"
#include "gpu/cuda_status.h"
#include "gpu/nccl_api.h"
#include "gpu/nccl_comms.h"
#include "gpu/nccl_lib.h"
#include "hw/expectations.h"
#include "scale/scale_engine.h"
#include "scale/step_schedule.h"
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
constexpr std::size_t kMaxEvents = std::size_t{1} << 17;  // end events of one step
constexpr double kMemoryShare = 0.8;                      // of free memory the buffers may use
constexpr auto kPoll = std::chrono::microseconds(20);
constexpr auto kDrainGrace = std::chrono::seconds(5);
constexpr std::chrono::milliseconds kSetupTimeout{30000};
constexpr int kGemmSamples = 64;  // outputs checked per distinct GEMM
constexpr std::size_t kWorkspaceBytes = 32u << 20;

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

// A counter-based generator (splitmix64's finaliser): the same index and seed give the same
// value on every run and GPU, with no state to keep.
__host__ __device__ inline unsigned long long mix64(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ inline void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }
__device__ inline void store(float* p, float v) { *p = v; }
__device__ inline float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ inline float load(const float* p) { return *p; }

// N(0, sigma²) by Box–Muller from two 24-bit uniforms of the element's index.
template <class T>
__global__ void fill_normal_kernel(T* p, std::size_t n, float sigma, unsigned long long seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const unsigned long long h1 = mix64(seed ^ (2 * i)), h2 = mix64(seed ^ (2 * i + 1));
    const float u1 = (static_cast<float>(h1 >> 40) + 0.5f) * (1.0f / 16777216.0f);
    const float u2 = static_cast<float>(h2 >> 40) * (1.0f / 16777216.0f);
    store(p + i, sigma * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
  }
}

// For each sample s: a (row, col) of C (the corners first), the fp32 reference dot product of
// the bf16 inputs, the sum of |a·b| (the scale the rounding is judged against) and what C
// holds. Layout dims (lm, ln, lk) are the stored shape (padded for the fallback); samples
// fall inside the real m × n.
__global__ void gemm_sample_kernel(int m, int n, int lm, int ln, int lk, bool ta, bool tb,
                                   const __nv_bfloat16* A, const __nv_bfloat16* B, const void* C,
                                   bool c_float, int samples, unsigned long long seed, float* out) {
  const int s = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (s >= samples) return;
  long long row = 0, col = 0;
  if (s == 0) {
    row = m - 1, col = n - 1;
  } else if (s > 1) {
    row = static_cast<long long>(mix64(seed + 2 * s) % static_cast<unsigned long long>(m));
    col = static_cast<long long>(mix64(seed + 2 * s + 1) % static_cast<unsigned long long>(n));
  }
  float ref = 0, mag = 0;
  for (long long kk = 0; kk < lk; ++kk) {
    const float a = __bfloat162float(ta ? A[kk * lm + row] : A[row * lk + kk]);
    const float b = __bfloat162float(tb ? B[col * lk + kk] : B[kk * ln + col]);
    ref = fmaf(a, b, ref);
    mag += fabsf(a * b);
  }
  const std::size_t at = static_cast<std::size_t>(row) * ln + col;
  const float got = c_float ? static_cast<const float*>(C)[at]
                            : __bfloat162float(static_cast<const __nv_bfloat16*>(C)[at]);
  out[3 * s] = ref;
  out[3 * s + 1] = mag;
  out[3 * s + 2] = got;
}

// The test hook: one output (sample 0, C's last element of the real shape) made wrong.
__global__ void plant_kernel(void* C, bool c_float, std::size_t at) {
  if (c_float)
    static_cast<float*>(C)[at] = 1e4f;
  else
    static_cast<__nv_bfloat16*>(C)[at] = __float2bfloat16(1e4f);
}

// Known values for the collective check, exact in bf16 (integers ≤ 256 for up to 64 ranks'
// sums) and fp32: element i of rank r's contribution.
__host__ __device__ inline float check_value(std::size_t i, int r, bool bf16) {
  return bf16 ? static_cast<float>(i % 3 + 1 + (r & 1))
              : static_cast<float>(i % 13 + 1 + 16 * (r & 3));
}

template <class T>
__global__ void fill_check_kernel(T* p, std::size_t first, std::size_t count, int rank, bool bf16) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    store(p + first + i, check_value(first + i, rank, bf16));
}

// Counts the elements of [first, first + count) that differ from the expected result: the
// sum over ranks (all-reduce, reduce-scatter) or the value of the rank owning the element's
// slice (all-gather, slices of `slice` elements). bad[0] += mismatches; bad[1] = min index.
template <class T>
__global__ void count_bad_kernel(const T* p, std::size_t first, std::size_t count, bool sum,
                                 int ranks, std::size_t slice, bool bf16, unsigned long long* bad) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::size_t g = first + i;
    float want = 0;
    if (sum) {
      for (int r = 0; r < ranks; ++r) want += check_value(g, r, bf16);
    } else {
      want = check_value(g, static_cast<int>(g / slice), bf16);
    }
    if (load(p + g) != want) {
      atomicAdd(&bad[0], 1ull);
      atomicMin(&bad[1], static_cast<unsigned long long>(g));
    }
  }
}

__global__ void plant_value_kernel(void* p, bool bf16, std::size_t at) {
  if (bf16)
    static_cast<__nv_bfloat16*>(p)[at] = __float2bfloat16(-1.0f);
  else
    static_cast<float*>(p)[at] = -1.0f;
}

// Fused Adam over fp32 parameters (PyTorch's defaults: lr 1e-3, β 0.9/0.999, ε 1e-8):
// reads p, g, m, v and writes p, m, v — the optimizer step's memory traffic.
__global__ void adam_kernel(float* p, const float* g, float* m, float* v, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float gi = g[i];
    const float mi = 0.9f * m[i] + 0.1f * gi;
    const float vi = 0.999f * v[i] + 0.001f * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= 1e-3f * mi / (sqrtf(vi) + 1e-8f);
  }
}

// ------------------------------------------------------------------------------ the kit

// The fallback's padded shape: m and n to 64, k to 16.
Gemm padded(const Gemm& o) {
  Gemm p = o;
  p.m = (o.m + 63) / 64 * 64;
  p.n = (o.n + 63) / 64 * 64;
  p.k = (o.k + 15) / 16 * 16;
  return p;
}

// What a rank computes with: cuBLASLt when it loaded, else the WMMA kernel (padded shapes,
// float C), one plan per distinct shape, and one device allocation per schedule buffer.
struct Kit {
  const gpu::CublasLtLib* blas = nullptr;
  std::vector<Gemm> shapes;
  std::vector<std::unique_ptr<gpu::BlasGemm>> plans;
  gpu::DeviceMem workspace;
  std::vector<gpu::DeviceMem> buffers;
  std::size_t plan(const Gemm& g) const {
    for (std::size_t i = 0; i < shapes.size(); ++i)
      if (shapes[i].same_shape(g)) return i;
    return shapes.size();
  }
  void leak() {
    workspace.leak();
    for (auto& b : buffers) b.leak();
  }
};

// Bytes each buffer needs: its own size, and for the fallback what the padded shapes of the
// GEMMs using it read or write (C in float32).
std::vector<std::size_t> buffer_bytes(const StepSchedule& s, bool fallback) {
  std::vector<std::size_t> out;
  for (const auto& b : s.buffers) out.push_back(b.bytes());
  if (!fallback) return out;
  for (const auto& t : s.tasks) {
    if (t.kind != TaskKind::kGemm) continue;
    const Gemm p = padded(t.gemm);
    auto need = [&](int buf, std::size_t bytes) {
      auto& o = out[static_cast<std::size_t>(buf)];
      o = std::max(o, bytes);
    };
    need(t.a, static_cast<std::size_t>(p.m) * p.k * 2);
    need(t.b, static_cast<std::size_t>(p.k) * p.n * 2);
    need(t.c, static_cast<std::size_t>(p.m) * p.n * 4);
  }
  return out;
}

cudaError_t launch_wmma(const Gemm& g, const void* a, const void* b, void* c, cudaStream_t stream) {
  const Gemm o = padded(g);
  (void)cudaGetLastError();  // a stale non-sticky error must not be blamed on this launch
  const dim3 grid(static_cast<unsigned>(o.n / 64), static_cast<unsigned>(o.m / 64));
  wmma_gemm_kernel<<<grid, 128, 0, stream>>>(
      o.m, o.n, o.k, o.ta, o.tb, static_cast<const __nv_bfloat16*>(a),
      static_cast<const __nv_bfloat16*>(b), static_cast<float*>(c));
  return cudaGetLastError();
}

GpuStatus run_gemm(const Task& t, const Kit& kit, cudaStream_t stream) {
  const void* a = kit.buffers[static_cast<std::size_t>(t.a)].get<void>();
  const void* b = kit.buffers[static_cast<std::size_t>(t.b)].get<void>();
  void* c = kit.buffers[static_cast<std::size_t>(t.c)].get<void>();
  if (!kit.blas) return cuda_status("WMMA GEMM launch", launch_wmma(t.gemm, a, b, c, stream));
  const std::size_t i = kit.plan(t.gemm);
  if (i >= kit.plans.size()) return GpuStatus::error("internal: a GEMM shape without a plan");
  const cublasStatus_t st = kit.plans[i]->run(a, b, c, stream);
  if (st != CUBLAS_STATUS_SUCCESS)
    return GpuStatus::error(strf("cublasLtMatmul %s (%s): %s", kit.plans[i]->shape().c_str(),
                                 t.what.c_str(), gpu::cublas_status_name(st)));
  return {};
}

int grid_for(int sms) { return std::max(1, sms) * 4; }

GpuStatus fill_buffer(const BufferSpec& spec, const gpu::DeviceMem& mem, unsigned long long seed,
                      int sms, cudaStream_t s) {
  (void)cudaGetLastError();
  if (spec.sigma == 0)
    return cuda_status("cudaMemsetAsync", cudaMemsetAsync(mem.get<void>(), 0, mem.bytes(), s));
  // The whole allocation (the fallback's padding too), so no GEMM reads unwritten memory.
  if (spec.dtype == DType::kBf16)
    fill_normal_kernel<<<grid_for(sms), 256, 0, s>>>(mem.get<__nv_bfloat16>(), mem.bytes() / 2,
                                                     spec.sigma, seed);
  else
    fill_normal_kernel<<<grid_for(sms), 256, 0, s>>>(mem.get<float>(), mem.bytes() / 4, spec.sigma,
                                                     seed);
  return cuda_status("fill kernel launch", cudaGetLastError());
}

// ------------------------------------------------------------------------------ buffers

GpuStatus allocate_bytes(gpu::DeviceMem& mem, int dev, std::size_t bytes, const char* what) {
  GPUVET_CUDA_TRY(cuda_status("cudaSetDevice", cudaSetDevice(dev)));
  if (GpuStatus s = mem.allocate(dev, bytes); !s.ok())
    return GpuStatus::error(strf("cudaMalloc of %.1f MiB (%s): %s",
                                 static_cast<double>(bytes) / kMiB, what, s.text.c_str()),
                            s.code);
  return {};
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
enum class Phase { kStep, kComputeOnly, kCommOnly, kVerify };

struct Decision {
  bool run = false;
  bool timed = false;
  Phase phase = Phase::kStep;
  int index = 0;              // warm-up index, timed index, or index within its phase
  Clock::time_point epoch{};  // start of the first timed step (arrival origin for infer)
};

class Schedule {
 public:
  Schedule(int warmup, int steps, double duration_s, int compute_only = 0, int comm_only = 0,
           int verify = 0)
      : warmup_(warmup),
        steps_(steps),
        duration_s_(duration_s),
        compute_only_(compute_only),
        comm_only_(comm_only),
        verify_(verify) {}
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
      if (d.run || verify_ == 0 || verified_) return d;
      verified_ = true;  // sustained: the checks once, after the last step
      d.run = true;
      d.timed = false;
      d.phase = Phase::kVerify;
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
    if (d.index < comm_only_) {
      d.phase = Phase::kCommOnly;
      return d;
    }
    d.index -= comm_only_;
    d.phase = Phase::kVerify;
    d.run = d.index < verify_;
    return d;
  }

 private:
  int warmup_, steps_;
  double duration_s_;
  int compute_only_, comm_only_, verify_;
  bool verified_ = false;
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
  Shared(const EngineConfig& c, const StepSchedule& s, int n, Schedule schedule,
         std::chrono::milliseconds deadline)
      : cfg(c), plan(s), timeout(deadline), barrier(n, schedule) {}
  const EngineConfig& cfg;
  const StepSchedule& plan;
  const std::chrono::milliseconds timeout;  // a wait with no progress for this long is a stall
  const NcclLib* lib = nullptr;             // null: no collectives
  const gpu::CublasLtLib* blas = nullptr;   // null: the WMMA fallback
  std::vector<ncclComm_t> comms;            // rank r's communicator
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
  double compute_ms = 0;  // GEMMs and the optimizer, summed
  double gemm_ms = 0;     // GEMMs alone (the TFLOP/s rate)
  double comm_ms = 0;     // collectives, summed
  double exposed_ms = 0;  // collective time with no compute under it
  double span_ms = 0;     // first task's start to the last task's end
};

// Where a rank was when the run stopped on a stall: `progress` counts completed tasks, so
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
  Kit kit;
  gpu::HostMem host;       // pinned: GEMM samples and collective counters read back
  gpu::DeviceMem scratch;  // the same on the device
  // Timing: one event at each stream's start of the step, and an end event after a task only
  // where a boundary needs one (see timed_boundary): a run of GEMMs costs no events between
  // them, so a decode request's thousands of tasks do not pay a host call each.
  gpu::EventSet origins;  // [0] compute stream, [1] comm stream
  gpu::EventSet ends;     // per task; recorded where `recorded[i]`
  std::vector<char> recorded;
  std::vector<std::vector<cudaEvent_t>> stream_ends;  // per stream, its recorded end events
  std::vector<std::vector<std::size_t>> stream_tasks;
  std::vector<StepRecord> records;
  std::vector<StepRecord> compute_alone, comm_alone;  // train: the isolated phases
  std::vector<std::string> wrong;                     // failed checks (data-corruption)
  std::size_t gemms_checked = 0, collectives_checked = 0;
  std::optional<Stall> stall;

  std::string name() const { return strf("rank %d (GPU %d)", rank, device); }
  cudaStream_t stream(StreamId id) const {
    return id == StreamId::kComm ? comm.get() : compute.get();
  }
  void leak() {
    kit.leak();
    scratch.leak();
    host.leak();
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
  const auto timeout = sh.timeout;
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

// One collective task in place on its buffer. A nonblocking communicator may answer
// ncclInProgress (connection setup): NCCL then wants the state settled before the next call.
GpuStatus collective(Shared& sh, const RankState& rs, const Task& t, cudaStream_t stream) {
  ncclComm_t comm = sh.comms[static_cast<std::size_t>(rs.rank)];
  const BufferSpec& spec = sh.plan.buffers[static_cast<std::size_t>(t.buffer)];
  const ncclDataType_t type = spec.dtype == DType::kBf16 ? ncclBfloat16 : ncclFloat32;
  const std::size_t elem = dtype_bytes(spec.dtype);
  char* p = rs.kit.buffers[static_cast<std::size_t>(t.buffer)].get<char>() + t.offset * elem;
  const std::size_t ranks = static_cast<std::size_t>(sh.plan.ranks);
  const std::size_t slice = t.count / std::max<std::size_t>(ranks, 1);
  char* mine = p + static_cast<std::size_t>(rs.rank) * slice * elem;
  ncclResult_t r = ncclSuccess;
  const char* call = "ncclAllReduce";
  switch (t.kind) {
    case TaskKind::kAllReduce:
      r = sh.lib->all_reduce(p, p, t.count, type, ncclSum, comm, stream);
      break;
    case TaskKind::kAllGather:
      call = "ncclAllGather";
      r = sh.lib->all_gather(mine, p, slice, type, comm, stream);
      break;
    case TaskKind::kReduceScatter:
      call = "ncclReduceScatter";
      r = sh.lib->reduce_scatter(p, mine, slice, type, ncclSum, comm, stream);
      break;
    default:
      return GpuStatus::error("internal: not a collective");
  }
  if (r == ncclSuccess) return {};
  if (r != ncclInProgress)
    return GpuStatus::error(std::string(call) + ": " + sh.lib->text(r, comm));
  const auto deadline = Clock::now() + sh.timeout;
  for (;;) {
    bool in_progress = false;
    GPUVET_CUDA_TRY(gpu::with_context(call, gpu::comm_state(*sh.lib, comm, &in_progress)));
    if (!in_progress) return {};
    if (sh.stop) return GpuStatus::stopped();
    if (Clock::now() >= deadline) return GpuStatus::timeout();
    std::this_thread::sleep_for(kPoll);
  }
}

GpuStatus run_optimizer(const Task& t, const RankState& rs, cudaStream_t s) {
  const auto& b = rs.kit.buffers;
  (void)cudaGetLastError();
  adam_kernel<<<grid_for(rs.sms), 256, 0, s>>>(b[static_cast<std::size_t>(t.state[0])].get<float>(),
                                               b[static_cast<std::size_t>(t.buffer)].get<float>(),
                                               b[static_cast<std::size_t>(t.state[1])].get<float>(),
                                               b[static_cast<std::size_t>(t.state[2])].get<float>(),
                                               t.count);
  return cuda_status("optimizer kernel launch", cudaGetLastError());
}

std::vector<char> timed_boundaries(const StepSchedule& plan);  // below

// Setup: streams, buffers filled, plans, events; then every distinct GEMM runs once and
// kGemmSamples of its outputs are compared with the device's fp32 reference (outside any
// timed window). A mismatch is kept as wrong data; the run goes on.
GpuStatus setup_rank(Shared& sh, RankState& rs) {
  const StepSchedule& plan = sh.plan;
  GPUVET_CUDA_TRY(cuda_status("cudaSetDevice", cudaSetDevice(rs.device)));
  GPUVET_CUDA_TRY(
      cuda_status("cudaDeviceGetAttribute",
                  cudaDeviceGetAttribute(&rs.sms, cudaDevAttrMultiProcessorCount, rs.device)));
  GPUVET_CUDA_TRY(gpu::with_context("cudaStreamCreateWithFlags", rs.compute.create(rs.device)));
  GPUVET_CUDA_TRY(gpu::with_context("cudaStreamCreateWithFlags", rs.comm.create(rs.device)));
  Kit& kit = rs.kit;
  kit.blas = sh.blas;
  const auto sizes = buffer_bytes(plan, !kit.blas);
  kit.buffers.resize(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i)
    GPUVET_CUDA_TRY(
        allocate_bytes(kit.buffers[i], rs.device, sizes[i], plan.buffers[i].role.c_str()));
  if (kit.blas) {
    GPUVET_CUDA_TRY(
        allocate_bytes(kit.workspace, rs.device, kWorkspaceBytes, "cuBLASLt workspace"));
    for (const auto& t : plan.tasks) {
      if (t.kind != TaskKind::kGemm || kit.plan(t.gemm) < kit.shapes.size()) continue;
      std::string why;
      auto g = gpu::BlasGemm::create(*kit.blas, t.gemm.m, t.gemm.n, t.gemm.k, t.gemm.ta, t.gemm.tb,
                                     kit.workspace.get<void>(), kWorkspaceBytes, &why);
      if (!g) return GpuStatus::error(strf("%s GEMM: %s", t.what.c_str(), why.c_str()));
      kit.shapes.push_back(t.gemm);
      kit.plans.push_back(std::move(g));
    }
  }
  if (plan.tasks.size() > kMaxEvents)
    return GpuStatus::error(strf("%zu tasks in one step: too many to time (at most %zu)",
                                 plan.tasks.size(), kMaxEvents));
  GPUVET_CUDA_TRY(gpu::with_context("cudaEventCreate", rs.origins.create(rs.device, 2)));
  GPUVET_CUDA_TRY(
      gpu::with_context("cudaEventCreate", rs.ends.create(rs.device, plan.tasks.size())));
  rs.recorded = timed_boundaries(plan);
  rs.stream_ends.assign(2, {});
  rs.stream_tasks.assign(2, {});
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    if (!rs.recorded[i]) continue;
    const int s = plan.tasks[i].stream == StreamId::kComm ? 1 : 0;
    rs.stream_ends[static_cast<std::size_t>(s)].push_back(rs.ends[i]);
    rs.stream_tasks[static_cast<std::size_t>(s)].push_back(i);
  }
  const std::size_t scratch_floats = 3 * kGemmSamples;
  GPUVET_CUDA_TRY(allocate_bytes(rs.scratch, rs.device, scratch_floats * 4, "check results"));
  GPUVET_CUDA_TRY(gpu::with_context(
      "cudaHostAlloc", rs.host.allocate(scratch_floats * 4, gpu::HostMem::Kind::kPinned)));
  gpu::EventSet ev;
  GPUVET_CUDA_TRY(gpu::with_context("cudaEventCreate", ev.create(rs.device, 1)));
  const cudaStream_t s = rs.compute.get();
  // The same data on every rank: a data-parallel step's replicas start equal.
  for (std::size_t i = 0; i < plan.buffers.size(); ++i)
    GPUVET_CUDA_TRY(fill_buffer(plan.buffers[i], kit.buffers[i], mix64(0x5CA1E + i), rs.sms, s));
  const auto limit = std::max<std::chrono::milliseconds>(sh.timeout, kSetupTimeout);
  auto wait = [&](const char* what) -> GpuStatus {
    GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(ev[0], s)));
    GpuStatus w = poll_event(ev[0], Clock::now() + limit);
    if (w.is_timeout())
      return GpuStatus::error(
          strf("setup (%s) did not finish within %s", what, seconds_text(limit).c_str()));
    return w;
  };
  GPUVET_CUDA_TRY(wait("filling the buffers"));
  std::set<std::tuple<int, int, int>> seen;
  bool planted = false;
  for (const auto& t : plan.tasks) {
    if (t.kind != TaskKind::kGemm || !seen.insert({t.a, t.b, t.c}).second) continue;
    GPUVET_CUDA_TRY(run_gemm(t, kit, s));
    const Gemm lay = kit.blas ? t.gemm : padded(t.gemm);
    void* c = kit.buffers[static_cast<std::size_t>(t.c)].get<void>();
    if (sh.cfg.plant == Plant::kGemm && rs.rank == 0 && !planted) {
      planted = true;
      plant_kernel<<<1, 1, 0, s>>>(c, !kit.blas,
                                   static_cast<std::size_t>(t.gemm.m - 1) * lay.n + (t.gemm.n - 1));
    }
    gemm_sample_kernel<<<1, kGemmSamples, 0, s>>>(
        t.gemm.m, t.gemm.n, lay.m, lay.n, lay.k, t.gemm.ta, t.gemm.tb,
        kit.buffers[static_cast<std::size_t>(t.a)].get<__nv_bfloat16>(),
        kit.buffers[static_cast<std::size_t>(t.b)].get<__nv_bfloat16>(), c, !kit.blas, kGemmSamples,
        mix64(rs.gemms_checked), rs.scratch.get<float>());
    GPUVET_CUDA_TRY(cuda_status("check kernel launch", cudaGetLastError()));
    GPUVET_CUDA_TRY(cuda_status("cudaMemcpyAsync",
                                cudaMemcpyAsync(rs.host.get<void>(), rs.scratch.get<void>(),
                                                scratch_floats * 4, cudaMemcpyDeviceToHost, s)));
    GPUVET_CUDA_TRY(wait("the GEMM check"));
    ++rs.gemms_checked;
    const float* r = rs.host.get<float>();
    int bad = 0, first = -1;
    for (int i = 0; i < kGemmSamples; ++i)
      if (!gemm_sample_ok(r[3 * i], r[3 * i + 1], r[3 * i + 2], !kit.blas)) {
        ++bad;
        if (first < 0) first = i;
      }
    if (bad > 0)
      rs.wrong.push_back(
          strf("the %s GEMM (%d×%d×%d) gave %d of %d sampled outputs wrong on %s "
               "(one is %g, the fp32 reference %g)",
               t.what.c_str(), t.gemm.m, t.gemm.n, t.gemm.k, bad, kGemmSamples, rs.name().c_str(),
               r[3 * first + 2], r[3 * first]));
  }
  return {};
}

enum class Mode { kStep, kComputeOnly, kCommOnly };

enum class Work { kGemm, kOther, kCollective };
Work work_of(const Task& t) {
  return is_collective(t.kind)       ? Work::kCollective
         : t.kind == TaskKind::kGemm ? Work::kGemm
                                     : Work::kOther;
}

// Which tasks get an end event: the last of its stream, one followed on its stream by another
// kind of work (GEMM, other compute, collective) or by a task that waits for the other
// stream, and one another task waits for. Between two such events a stream runs one kind of
// work without a gap, so the events bound every interval the timelines need.
std::vector<char> timed_boundaries(const StepSchedule& plan) {
  const std::size_t n = plan.tasks.size();
  std::vector<char> out(n, 0);
  std::vector<int> next(n, -1);
  int last[2] = {-1, -1};
  for (std::size_t i = n; i-- > 0;) {
    const int s = plan.tasks[i].stream == StreamId::kComm ? 1 : 0;
    next[i] = last[s];
    last[s] = static_cast<int>(i);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Task& t = plan.tasks[i];
    for (int a : t.after) out[static_cast<std::size_t>(a)] = 1;
    if (next[i] < 0) {
      out[i] = 1;
      continue;
    }
    const Task& u = plan.tasks[static_cast<std::size_t>(next[i])];
    bool waits = false;
    for (int a : u.after)
      waits = waits || plan.tasks[static_cast<std::size_t>(a)].stream != u.stream;
    if (work_of(u) != work_of(t) || waits) out[i] = 1;
  }
  return out;
}

// Queues one step of the schedule. A task left out by the mode still records its event (no
// work before it), so every wait and the layout stay the same. *queued counts tasks queued (a
// stall while queueing names the next).
GpuStatus enqueue_step(Shared& sh, RankState& rs, Mode mode, std::size_t* queued) {
  const StepSchedule& plan = sh.plan;
  GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.origins[0], rs.compute.get())));
  GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.origins[1], rs.comm.get())));
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    *queued = i;
    const Task& t = plan.tasks[i];
    const cudaStream_t s = rs.stream(t.stream);
    for (int a : t.after)
      if (plan.tasks[static_cast<std::size_t>(a)].stream != t.stream)
        GPUVET_CUDA_TRY(
            cuda_status("cudaStreamWaitEvent",
                        cudaStreamWaitEvent(s, rs.ends[static_cast<std::size_t>(a)], 0)));
    const bool coll = is_collective(t.kind);
    if (coll && mode != Mode::kComputeOnly) {
      GpuStatus st = collective(sh, rs, t, s);
      if (st.is_error()) st.text = t.what + ": " + st.text;
      GPUVET_CUDA_TRY(std::move(st));
    } else if (t.kind == TaskKind::kGemm && mode != Mode::kCommOnly) {
      GPUVET_CUDA_TRY(run_gemm(t, rs.kit, s));
    } else if (t.kind == TaskKind::kOptimizer && mode != Mode::kCommOnly) {
      GPUVET_CUDA_TRY(run_optimizer(t, rs, s));
    }
    if (rs.recorded[i])
      GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(rs.ends[i], s)));
  }
  *queued = plan.tasks.size();
  return {};
}

// The two timelines of a finished step, from its events, in ms from the compute stream's
// start: per stream, each interval between two recorded events holds one kind of work; a
// task that waits for the other stream starts no earlier than what it waits for.
GpuStatus record_step(const Shared& sh, const RankState& rs, StepRecord* r) {
  const StepSchedule& plan = sh.plan;
  std::vector<std::pair<double, double>> comm, compute;
  double at[2] = {0, 0};
  GPUVET_CUDA_TRY(elapsed_ms(rs.origins[0], rs.origins[1], &at[1]));
  double lo = std::min(0.0, at[1]), hi = 0;
  std::vector<double> end(plan.tasks.size(), 0.0);
  bool open[2] = {false, false};  // a segment started (its start known) and not closed yet
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const Task& t = plan.tasks[i];
    const int s = t.stream == StreamId::kComm ? 1 : 0;
    if (!open[s]) {
      for (int a : t.after) at[s] = std::max(at[s], end[static_cast<std::size_t>(a)]);
      open[s] = true;
    }
    if (!rs.recorded[i]) continue;
    double b = 0;
    GPUVET_CUDA_TRY(elapsed_ms(rs.origins[0], rs.ends[i], &b));
    end[i] = b;
    const Work w = work_of(t);
    const double a = std::min(at[s], b);
    (w == Work::kCollective ? comm : compute).emplace_back(a, b);
    (w == Work::kCollective ? r->comm_ms : r->compute_ms) += b - a;
    if (w == Work::kGemm) r->gemm_ms += b - a;
    hi = std::max(hi, b);
    at[s] = b;
    open[s] = false;
  }
  r->exposed_ms = uncovered_ms(comm, compute);
  r->span_ms = hi - lo;
  return {};
}

// The check step: every distinct collective (kind and range), one after the other on its
// stream: each rank writes its known values, the collective runs, a kernel counts the
// elements that differ from the exact result, the counters come back.
GpuStatus verify_collectives(Shared& sh, RankState& rs, ncclComm_t comm) {
  const StepSchedule& plan = sh.plan;
  std::vector<std::size_t> distinct;
  std::set<std::tuple<int, int, std::size_t, std::size_t>> seen;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const Task& t = plan.tasks[i];
    if (is_collective(t.kind) &&
        seen.insert({static_cast<int>(t.kind), t.buffer, t.offset, t.count}).second)
      distinct.push_back(i);
  }
  if (distinct.empty()) return {};
  gpu::DeviceMem counters;
  gpu::HostMem back;
  gpu::EventSet done;
  const std::size_t bytes = distinct.size() * 2 * sizeof(unsigned long long);
  GPUVET_CUDA_TRY(allocate_bytes(counters, rs.device, bytes, "collective check counters"));
  GPUVET_CUDA_TRY(
      gpu::with_context("cudaHostAlloc", back.allocate(bytes, gpu::HostMem::Kind::kPinned)));
  GPUVET_CUDA_TRY(gpu::with_context("cudaEventCreate", done.create(rs.device, distinct.size())));
  const cudaStream_t s = rs.comm.get();
  auto* cnt = counters.get<unsigned long long>();
  for (std::size_t j = 0; j < distinct.size(); ++j) {
    const unsigned long long init[2] = {0ull, ~0ull};
    GPUVET_CUDA_TRY(cuda_status("cudaMemcpyAsync", cudaMemcpyAsync(cnt + 2 * j, init, sizeof init,
                                                                   cudaMemcpyHostToDevice, s)));
  }
  const int ranks = plan.ranks;
  for (std::size_t j = 0; j < distinct.size(); ++j) {
    const Task& t = plan.tasks[distinct[j]];
    const BufferSpec& spec = plan.buffers[static_cast<std::size_t>(t.buffer)];
    const bool bf16 = spec.dtype == DType::kBf16;
    void* base = rs.kit.buffers[static_cast<std::size_t>(t.buffer)].get<void>();
    const std::size_t slice = t.count / static_cast<std::size_t>(ranks);
    // Each rank's contribution: its slice (all-gather) or the whole range.
    const std::size_t fill_first =
        t.offset + (t.kind == TaskKind::kAllGather ? rs.rank * slice : 0);
    const std::size_t fill_count = t.kind == TaskKind::kAllGather ? slice : t.count;
    (void)cudaGetLastError();
    if (bf16)
      fill_check_kernel<<<grid_for(rs.sms), 256, 0, s>>>(static_cast<__nv_bfloat16*>(base),
                                                         fill_first, fill_count, rs.rank, true);
    else
      fill_check_kernel<<<grid_for(rs.sms), 256, 0, s>>>(static_cast<float*>(base), fill_first,
                                                         fill_count, rs.rank, false);
    GPUVET_CUDA_TRY(cuda_status("check fill launch", cudaGetLastError()));
    GpuStatus st = collective(sh, rs, t, s);
    if (st.is_error()) st.text = t.what + " (check): " + st.text;
    GPUVET_CUDA_TRY(std::move(st));
    // What to compare: the whole range, except the rank's own slice after a reduce-scatter.
    const std::size_t first = t.offset + (t.kind == TaskKind::kReduceScatter ? rs.rank * slice : 0);
    const std::size_t count = t.kind == TaskKind::kReduceScatter ? slice : t.count;
    if (sh.cfg.plant == Plant::kCollective && rs.rank == 0 && j == 0)
      plant_value_kernel<<<1, 1, 0, s>>>(base, bf16, first);
    const bool sum = t.kind != TaskKind::kAllGather;
    // Offsets relative to the range for the owner of an all-gathered element.
    if (bf16)
      count_bad_kernel<<<grid_for(rs.sms), 256, 0, s>>>(static_cast<const __nv_bfloat16*>(base),
                                                        first, count, sum, ranks, slice, true,
                                                        cnt + 2 * j);
    else
      count_bad_kernel<<<grid_for(rs.sms), 256, 0, s>>>(
          static_cast<const float*>(base), first, count, sum, ranks, slice, false, cnt + 2 * j);
    GPUVET_CUDA_TRY(cuda_status("check count launch", cudaGetLastError()));
    GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(done[j], s)));
  }
  GPUVET_CUDA_TRY(cuda_status(
      "cudaMemcpyAsync", cudaMemcpyAsync(back.get<void>(), cnt, bytes, cudaMemcpyDeviceToHost, s)));
  gpu::EventSet copied;
  GPUVET_CUDA_TRY(gpu::with_context("cudaEventCreate", copied.create(rs.device, 1)));
  GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(copied[0], s)));
  Track tracks[2] = {{done.data(), done.size(), 0}, {copied.data(), 1, 0}};
  GPUVET_CUDA_TRY(wait_tracks(sh, comm, tracks, 2));
  const auto* got = back.get<unsigned long long>();
  for (std::size_t j = 0; j < distinct.size(); ++j) {
    ++rs.collectives_checked;
    if (got[2 * j] == 0) continue;
    const Task& t = plan.tasks[distinct[j]];
    const std::size_t count = t.kind == TaskKind::kReduceScatter ? t.count / ranks : t.count;
    rs.wrong.push_back(strf("%s: %llu of %zu values wrong on %s (first at element %llu)",
                            t.what.c_str(), got[2 * j], count, rs.name().c_str(), got[2 * j + 1]));
  }
  return {};
}

std::string task_where(const StepSchedule& plan, std::size_t i, const std::string& label) {
  if (i >= plan.tasks.size()) return "the end of " + label;
  return "the " + plan.tasks[i].what + " in " + label;
}

void rank_body(Shared& sh, RankState& rs) {
  if (GpuStatus s = setup_rank(sh, rs); !s.ok()) {
    sh.fail(rs.name() + ": " + s.text);
    return;
  }
  const StepSchedule& plan = sh.plan;
  const bool train = sh.cfg.preset.workload == "train";
  const double rate = sh.cfg.request_rate_hz;
  ncclComm_t comm = sh.lib ? sh.comms[static_cast<std::size_t>(rs.rank)] : nullptr;
  for (;;) {
    Decision d;
    if (!sh.barrier.arrive(&d) || !d.run) return;
    const std::string label =
        d.phase == Phase::kVerify ? std::string("the collective check")
        : !train  ? (d.timed ? strf("request %d", d.index) : strf("warm-up request %d", d.index))
        : d.timed ? strf("step %d", d.index)
                  : strf("warm-up step %d", d.index);
    if (d.phase == Phase::kVerify) {
      GpuStatus s = verify_collectives(sh, rs, comm);
      if (s.is_error()) {
        sh.fail(rs.name() + ": " + label + ": " + s.text);
        return;
      }
      if (!s.ok()) {
        rs.stall = Stall{s.is_timeout(), label, -1};
        if (s.is_timeout()) sh.halt();
        return;
      }
      continue;
    }
    // Fixed arrivals (timed requests only): request q arrives at epoch + q / rate; one that
    // arrives while the previous one still runs waits, and its latency includes the wait.
    Clock::time_point arrival{};
    const bool paced = !train && d.timed && rate > 0;
    if (paced) {
      arrival = d.epoch + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(d.index / rate));
      while (!sh.stop && Clock::now() < arrival)
        std::this_thread::sleep_for(
            std::min<Clock::duration>(arrival - Clock::now(), std::chrono::milliseconds(10)));
      if (sh.stop) return;
    }
    const auto t0 = Clock::now();
    if (!paced) arrival = t0;
    const Mode mode = d.phase == Phase::kComputeOnly ? Mode::kComputeOnly
                      : d.phase == Phase::kCommOnly  ? Mode::kCommOnly
                                                     : Mode::kStep;
    std::size_t queued = 0;
    Track tracks[2] = {{rs.stream_ends[0].data(), rs.stream_ends[0].size(), 0},
                       {rs.stream_ends[1].data(), rs.stream_ends[1].size(), 0}};
    GpuStatus s = enqueue_step(sh, rs, mode, &queued);
    const bool enqueued = s.ok();
    if (enqueued) s = wait_tracks(sh, comm, tracks, 2);
    if (!s.ok()) {
      if (s.is_error()) {
        sh.fail(rs.name() + ": " + label + ": " + s.text);
        return;
      }
      Stall st;
      st.timed_out = s.is_timeout();
      if (!enqueued) {
        // Stuck while queueing (a collective that stayed ncclInProgress): least progress.
        st.where = task_where(plan, queued, label) + " (still being queued)";
        st.progress = -1;
      } else {
        // The first task not done on the stream that got least far.
        std::size_t first = plan.tasks.size();
        for (int k = 0; k < 2; ++k)
          if (tracks[k].done < tracks[k].count)
            first = std::min(first, rs.stream_tasks[static_cast<std::size_t>(k)][tracks[k].done]);
        st.where = task_where(plan, first, label);
        st.progress = static_cast<long long>(tracks[0].done + tracks[1].done);
        if (!st.timed_out && first == plan.tasks.size()) return;  // idle when stopped
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
    if (GpuStatus e = record_step(sh, rs, &r); !e.ok()) {
      sh.fail(rs.name() + ": " + label + ": " + e.text);
      return;
    }
    (d.phase == Phase::kStep          ? rs.records
     : d.phase == Phase::kComputeOnly ? rs.compute_alone
                                      : rs.comm_alone)
        .push_back(r);
  }
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

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

// What the step is, in one note: GEMMs, collectives by kind with their bytes, optimizer.
std::string schedule_text(const StepSchedule& plan, const ScalePreset& p, const EngineConfig& cfg) {
  std::size_t gemms = 0;
  double gemm_flops = 0;
  std::map<TaskKind, std::pair<std::size_t, double>> coll;  // count, bytes
  bool optimizer = false;
  for (const auto& t : plan.tasks) {
    if (t.kind == TaskKind::kGemm) {
      ++gemms;
      gemm_flops += t.flops();
    } else if (t.kind == TaskKind::kOptimizer) {
      optimizer = true;
    } else {
      auto& c = coll[t.kind];
      ++c.first;
      c.second +=
          static_cast<double>(t.count) *
          static_cast<double>(dtype_bytes(plan.buffers[static_cast<std::size_t>(t.buffer)].dtype));
    }
  }
  const bool train = p.workload == "train";
  std::string s = strf(
      "%s (%s): per GPU per %s %zu bf16 GEMMs, %.4g GFLOP, every one with its own "
      "buffers of normal-distributed data",
      train ? "train" : "infer", parallelism_name(p.parallelism), train ? "step" : "request", gemms,
      gemm_flops / 1e9);
  for (const auto& [kind, c] : coll) {
    const char* name = kind == TaskKind::kAllReduce   ? "all-reduce"
                       : kind == TaskKind::kAllGather ? "all-gather"
                                                      : "reduce-scatter";
    s += strf("; %zu %s%s, %.1f MiB in all", c.first, name, c.first == 1 ? "" : "s",
              c.second / kMiB);
  }
  if (p.parallelism == Parallelism::kDataParallel && !plan.buckets.empty() && !coll.empty())
    s += strf(" (%zu DDP buckets, %s)", plan.buckets.size(),
              cfg.overlap ? "each once the dW GEMMs of its parameters are done, on a second stream"
                          : "after the last GEMM");
  if (p.parallelism == Parallelism::kTensorParallel && !coll.empty())
    s += " (after attention out and after MLP down, on the compute stream: the critical path)";
  if (optimizer) s += "; then the optimizer (fused Adam over fp32 parameters)";
  if (coll.empty())
    s += plan.ranks == 1 ? "; 1 GPU: no collective (comm 0)" : "; nothing to reduce";
  return s;
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
  ScalePreset p = cfg.preset;
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
  if (cfg.duration_s > 0 && !train) return fail("sustained mode runs train presets only");
  if (cfg.duration_s <= 0 && cfg.steps < 1) return fail("at least one timed step is needed");
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

  // ---- the schedule (plain data, step_schedule.cc)
  if (cfg.flops_override) p.hidden = p.ffn = 0;  // --flops: square GEMMs of that many FLOPs
  StepOptions so;
  so.ranks = cfg.force_collectives ? std::max(n, 2) : n;
  so.accumulation = cfg.grad_accumulation;
  so.overlap = cfg.overlap;
  StepSchedule plan;
  try {
    plan = build_schedule(p, so);
  } catch (const std::invalid_argument& e) {
    return fail(e.what());
  }
  plan.ranks = n;  // force_collectives: one rank, collectives kept
  const bool need_nccl = !plan.collectives().empty();
  const double actual_flops = plan.flops();
  const double target_flops =
      train ? p.flops * cfg.grad_accumulation : p.flops / n * p.tokens_per_request;
  const auto deadline = std::chrono::milliseconds(static_cast<long long>(
      1000 *
      collective_deadline_s(plan, static_cast<double>(cfg.collective_timeout.count()) / 1000)));

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

  // ---- memory: every buffer of the schedule and the workspace against 80 % of free memory
  double need = blas ? static_cast<double>(kWorkspaceBytes) : 0.0;
  for (std::size_t b : buffer_bytes(plan, !blas)) need += static_cast<double>(b);
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
  // there is something to reduce; with collectives, one check step at the end.
  const int alone = train && cfg.duration_s <= 0 ? std::clamp(cfg.steps, 1, 10) : 0;
  Shared sh(cfg, plan, n,
            Schedule(std::max(cfg.warmup_steps, 0), cfg.steps, cfg.duration_s, alone,
                     need_nccl ? alone : 0, need_nccl ? 1 : 0),
            deadline);
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
    comms.emplace(*lib, cfg.devices, deadline);
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
  if (deadline > cfg.collective_timeout)
    res.notes.push_back(
        strf("deadline %s without progress: ten times what the largest collective "
             "needs at %g GB/s",
             seconds_text(deadline).c_str(), hw::kSlowestBusGbps));

  // ---- one thread per GPU
  std::vector<std::thread> threads;
  try {
    for (auto& up : ranks) {
      RankState* rs = up.get();
      threads.emplace_back([&sh, rs] { guarded(sh, *rs, [&] { rank_body(sh, *rs); }); });
    }
  } catch (const std::exception& e) {
    sh.fail(std::string("cannot start a thread per GPU: ") + e.what());
  }
  for (auto& t : threads) t.join();

  // Checks first: wrong data is reported whatever else happened.
  std::size_t gemms_checked = 0, collectives_checked = 0;
  for (const auto& rs : ranks) {
    for (const auto& w : rs->wrong) res.wrong_data.push_back({rs->device, w});
    gemms_checked = std::max(gemms_checked, rs->gemms_checked);
    collectives_checked = std::max(collectives_checked, rs->collectives_checked);
  }
  bool failed = sh.stop.load();
  for (const auto& rs : ranks) failed = failed || rs->stall.has_value();
  if (failed) {
    res.error = !sh.first_error.empty() ? sh.first_error : stall_text(ranks, deadline);
    if (std::string note = drain_after_failure(comms ? &*comms : nullptr, ranks); !note.empty())
      res.notes.push_back(note);
    return res;
  }
  if (comms)
    if (GpuStatus e = comms->close(); !e.ok())
      res.notes.push_back("communicator teardown: " + comms->describe(e, "ncclCommFinalize") +
                          " (aborted)");
  res.notes.push_back(
      strf("checked: %zu distinct GEMM%s (%d sampled outputs each against an fp32 reference on the "
           "device)%s",
           gemms_checked, gemms_checked == 1 ? "" : "s", kGemmSamples,
           need_nccl ? strf(", %zu distinct collective%s (every element against the exact result)",
                            collectives_checked, collectives_checked == 1 ? "" : "s")
                           .c_str()
                     : ""));

  // ---- aggregation (every rank ran the same steps; min guards against a mismatch)
  std::size_t steps = ranks.front()->records.size();
  for (const auto& rs : ranks) steps = std::min(steps, rs->records.size());
  if (steps == 0) return fail("no step was timed");
  std::vector<double> compute(steps), comm(steps), exposed(steps), span(steps);
  double gemm_total = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    double latency = 0;
    for (const auto& rs : ranks) {
      const StepRecord& r = rs->records[s];
      latency = std::max(latency, ms_between(r.arrival, r.end));
      compute[s] += r.compute_ms / n;
      comm[s] += r.comm_ms / n;
      exposed[s] += r.exposed_ms / n;
      span[s] += r.span_ms / n;
      gemm_total += r.gemm_ms;
    }
    res.step_ms.push_back(latency);
  }
  res.mean_ms = mean(res.step_ms);
  res.compute_ms = mean(compute);
  res.comm_ms = need_nccl ? mean(comm) : 0.0;
  res.exposed_comm_ms = need_nccl ? mean(exposed) : 0.0;
  // The isolated phases: wall time of the slowest GPU, as for a step; and the compute time
  // of the compute-only steps, against which the step's compute shows the slowdown the
  // collectives beside it caused.
  auto alone_ms = [&](std::vector<StepRecord> RankState::*phase,
                      double StepRecord::*field) -> std::optional<double> {
    std::size_t k = (ranks.front().get()->*phase).size();
    for (const auto& rs : ranks) k = std::min(k, (rs.get()->*phase).size());
    if (k == 0) return std::nullopt;
    std::vector<double> v(k);
    for (std::size_t i = 0; i < k; ++i)
      for (const auto& rs : ranks) {
        const StepRecord& r = (rs.get()->*phase)[i];
        v[i] = field ? v[i] + r.*field / n : std::max(v[i], ms_between(r.start, r.end));
      }
    return mean(v);
  };
  res.compute_alone_ms = alone_ms(&RankState::compute_alone, nullptr);
  res.comm_alone_ms = alone_ms(&RankState::comm_alone, nullptr);
  if (train && !need_nccl && res.compute_alone_ms) res.comm_alone_ms = 0.0;
  double slowdown = 0;
  if (need_nccl)
    if (const auto gemm_alone = alone_ms(&RankState::compute_alone, &StepRecord::compute_ms)) {
      slowdown = std::max(0.0, *res.compute_ms - *gemm_alone);
      res.overlap_slowdown_ms = slowdown;
    }
  // comm share: the collectives with no compute under them, plus the compute they slowed,
  // over the GPU's step span (mean over GPUs). On one stream (tensor parallel) all of it.
  const double span_ms = mean(span);
  res.run.comm_share = need_nccl && span_ms > 0
                           ? std::clamp((*res.exposed_comm_ms + slowdown) / span_ms, 0.0, 1.0)
                           : 0.0;
  if (gemm_total > 0)
    res.achieved_tflops = tflops(actual_flops * static_cast<double>(steps) * n, gemm_total);

  const auto colls = plan.collectives();
  if (train) {
    // Items: one batch per GPU per compute phase, so a step is N × grad_accumulation items.
    const double items = static_cast<double>(n) * cfg.grad_accumulation;
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
    res.notes.push_back(
        "throughput = GPUs × grad_accumulation / mean step time (one batch per "
        "GPU per compute phase); step = slowest GPU's wall time from a common "
        "start to both streams idle");
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
        cfg.request_rate_hz > 0
            ? strf("requests arrive every %.3g ms; latency = arrival to last token on every "
                   "GPU (queueing included); throughput = requests / (first arrival to last "
                   "completion)",
                   1000.0 / cfg.request_rate_hz)
            : std::string("requests back to back; latency = start to last token on every GPU; "
                          "throughput = requests / (first start to last completion)"));
  }
  res.notes.push_back(schedule_text(plan, p, cfg));
  res.notes.push_back(
      "comm share = (communication with no compute under it + compute slowed by the "
      "collectives beside it) / the GPU's step span, from events around every task on both "
      "streams (mean over GPUs); compute alone / comm alone = the same step with only its "
      "compute / only its collectives (slowest GPU's wall time); TFLOP/s = GEMM FLOPs / GEMM "
      "time, per GPU");
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
    Kit kit;
    kit.blas = gpu::cublaslt_library(cublas_library, &why);
    // The dense bf16 GEMM peak as a framework sees it: one 8192³ GEMM through cuBLASLt (the
    // size PyTorch benchmarks quote), on random data, or 4096³ through the fallback kernel.
    const int e = kit.blas ? 8192 : 4096;
    Task op;
    op.gemm = {e, e, e, false, false};
    op.a = 0, op.b = 1, op.c = 2;
    op.what = "peak";
    if (backend) *backend = kit.blas ? "cuBLASLt bf16 8192³" : "WMMA bf16 4096³ (no cuBLASLt)";
    gpu::Stream stream;
    gpu::EventSet ev;
    GpuStatus s = cuda_status("cudaSetDevice", cudaSetDevice(device));
    if (s.ok()) s = gpu::with_context("cudaStreamCreateWithFlags", stream.create(device));
    if (s.ok()) s = gpu::with_context("cudaEventCreate", ev.create(device, 2));
    const std::size_t elems = static_cast<std::size_t>(e) * e;
    const BufferSpec specs[3] = {{elems, DType::kBf16, 1.0f, "peak A"},
                                 {elems, DType::kBf16, 0.02f, "peak B"},
                                 {elems, DType::kFp32, 0.0f, "peak C"}};
    kit.buffers.resize(3);
    for (int i = 0; s.ok() && i < 3; ++i)
      s = allocate_bytes(kit.buffers[static_cast<std::size_t>(i)], device, specs[i].bytes(),
                         specs[i].role.c_str());
    if (s.ok() && kit.blas) {
      s = allocate_bytes(kit.workspace, device, kWorkspaceBytes, "cuBLASLt workspace");
      if (s.ok()) {
        auto g = gpu::BlasGemm::create(*kit.blas, e, e, e, false, false, kit.workspace.get<void>(),
                                       kWorkspaceBytes, &why);
        if (!g) return fail(strf("GPU %d: %s", device, why.c_str()));
        kit.shapes.push_back(op.gemm);
        kit.plans.push_back(std::move(g));
      }
    }
    int sms = 1;
    if (s.ok())
      s = cuda_status("cudaDeviceGetAttribute",
                      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    for (int i = 0; s.ok() && i < 3; ++i)
      s = fill_buffer(specs[i], kit.buffers[static_cast<std::size_t>(i)], mix64(0x9EA4 + i), sms,
                      stream.get());
    if (!s.ok()) return fail(strf("GPU %d: %s", device, s.text.c_str()));
    // `reps` GEMMs between two events, polled (60 s: far above any real run).
    auto timed = [&](int reps, double* ms) -> GpuStatus {
      GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(ev[0], stream.get())));
      for (int i = 0; i < reps; ++i) GPUVET_CUDA_TRY(run_gemm(op, kit, stream.get()));
      GPUVET_CUDA_TRY(cuda_status("cudaEventRecord", cudaEventRecord(ev[1], stream.get())));
      GPUVET_CUDA_TRY(poll_event(ev[1], Clock::now() + std::chrono::seconds(60)));
      return elapsed_ms(ev[0], ev[1], ms);
    };
    auto failed = [&](const GpuStatus& st) {
      if (st.is_timeout()) {
        kit.leak();
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
      if (ms > 0) best = std::max(best, tflops(op.gemm.flops() * reps, ms));
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
