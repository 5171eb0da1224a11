// bench/cuda_bench.cu — the CUDA measurements behind `gpuvet bench` (contract: cuda_bench.h).
//
// How one bandwidth figure is made (after nvbandwidth's method, written anew here):
//   * every copy is a Job: one stream on the device that issues it, a start and a stop event;
//   * warm-up: one copy per job, then the streams are drained;
//   * per sample: each stream first gets a spin kernel that waits on a flag in mapped pinned
//     host memory, then the start event, `iterations` copies and the stop event; only when
//     every stream of the test is queued does the host set the flag, so concurrent copies
//     really start together and no enqueue or launch overhead sits inside the events;
//   * bandwidth = bytes × iterations / (stop − start); the cell is the median over the
//     samples, its spread (max − min) / median (that arithmetic is in sample_stats.h);
//   * the destination is poisoned before every sample and checked against the source's
//     pattern after it (a compare kernel on the GPU, a loop for host memory), so a copy that
//     goes wrong in any sample, or does not happen, is caught; the check is outside the
//     events.
// Every CUDA call is checked; a failure fails only the cell (or the matrix for setup work)
// with "cudaErrorXxx: text". After a sticky error the device's context is unusable until a
// reset (which we must not do behind the caller's back), so the device is recorded in the
// run's DeviceHealth and every later cell that needs it says why it was not run. The CUDA
// handles, error text and NUMA-placed host memory come from the kit in src/gpu/.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/cuda_bench.h"
#include "bench/sample_stats.h"
#include "gpu/cuda_resources.h"
#include "gpu/cuda_status.h"
#include "gpu/device_health.h"

namespace gpuvet::bench {
namespace {

// A spin kernel gives up after this long: the host never needs more than a few ms to queue
// a sample, so hitting it means something stalled, and a hang would be worse than a late start.
constexpr unsigned long long kSpinTimeoutNs = 2'000'000'000ull;
constexpr int kCopyThreads = 512;              // per block of the SM copy kernel
constexpr int kUtilThreads = 256;              // fill / compare kernels
constexpr std::size_t kChaseBytes = 1u << 20;  // pointer-chase working set
constexpr std::size_t kChaseStride = 64;       // one node per 64 B: no two share a sector
constexpr int kChaseWarmupSteps = 256;
constexpr std::size_t kTruthCopyBytes = 64u << 20;
constexpr int kTruthSamples = 3;

using gpu::GpuStatus;

void add_note_once(std::vector<std::string>& notes, const std::string& note) {
  if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
}

std::string gbps_text(double v) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << v << " GB/s";
  return out.str();
}

// ------------------------------------------------------------------------------ start gate

// The start gate shared by every stream of a test: word 0 is the flag the spin kernels wait
// on, word 1 is set by a spin kernel that gave up waiting.
class ReleaseFlag {
 public:
  GpuStatus create() {
    GPUVET_CUDA_TRY(mem_.allocate(64, gpu::HostMem::Kind::kPinnedMapped));
    host_ = static_cast<volatile int*>(mem_.get());
    dev_ = static_cast<int*>(mem_.mapped());
    reset();
    return {};
  }
  void reset() {
    host_[0] = 0;
    host_[1] = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  void release() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    host_[0] = 1;
  }
  bool timed_out() const { return host_[1] != 0; }
  int* device_flag() const { return dev_; }
  int* device_timeout() const { return dev_ + 1; }

 private:
  gpu::HostMem mem_;
  volatile int* host_ = nullptr;
  int* dev_ = nullptr;
};

// ------------------------------------------------------------------------------ kernels

// Index-based pattern: every word differs from its neighbours and between sources (seed),
// so a shifted, stale or foreign copy shows as mismatches.
__host__ __device__ inline std::uint32_t pattern_word(std::size_t i, std::uint32_t seed) {
  return static_cast<std::uint32_t>(i) * 0x9E3779B1u + seed;
}

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Holds its stream until the host sets *flag. The timeout uses %globaltimer (wall ns), not
// clock64: SM clocks range from ~345 MHz idle to ~2 GHz, so a cycle budget is no time budget.
__global__ void spin_until_released(const volatile int* flag, volatile int* timed_out,
                                    unsigned long long timeout_ns) {
  const unsigned long long start = globaltimer_ns();
  while (*flag == 0) {
    if (globaltimer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

// Grid-stride copy of 16-byte vectors with several loads in flight per thread before the
// first store: over PCIe or NVLink each load waits ~1 µs, so parallelism is what sets the rate.
__global__ void copy_vec16(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n) {
  constexpr int kUnroll = 8;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) dst[i + k * stride] = v[k];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__global__ void fill_pattern(std::uint32_t* p, std::size_t words, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride)
    p[i] = pattern_word(i, seed);
}

__global__ void count_mismatches(const std::uint32_t* p, std::size_t words, std::uint32_t seed,
                                 unsigned long long* count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long wrong = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride)
    wrong += p[i] != pattern_word(i, seed) ? 1 : 0;
  for (int offset = 16; offset > 0; offset /= 2)
    wrong += __shfl_down_sync(0xffffffffu, wrong, offset);
  if ((threadIdx.x & 31) == 0 && wrong != 0) atomicAdd(count, wrong);
}

struct ChaseResult {
  unsigned long long ns;
  std::uint32_t last;
};

// One thread follows `steps` dependent indices. __ldcv ("cache as volatile") refetches each
// node, so the working set in L2 does not hide the link. The last load may still be in flight
// when the timer is read: an error of one access in thousands.
__global__ void pointer_chase(const std::uint32_t* chain, std::uint32_t first, int steps,
                              ChaseResult* out) {
  std::uint32_t idx = first;
  const unsigned long long t0 = globaltimer_ns();
  for (int k = 0; k < steps; ++k) idx = __ldcv(chain + idx);
  const unsigned long long t1 = globaltimer_ns();
  out->ns = t1 - t0;
  out->last = idx;
}

// ------------------------------------------------------------------------------ helpers

GpuStatus device_count(int& n) {
  n = 0;
  GPUVET_CUDA_TRY(cudaGetDeviceCount(&n));
  if (n <= 0) return GpuStatus::error("cudaErrorNoDevice: no CUDA-capable device is detected");
  return {};
}

GpuStatus sm_count(int dev, int& sms) {
  GPUVET_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  if (sms <= 0) sms = 1;
  return {};
}

GpuStatus fill_device(const gpu::DeviceMem& buf, std::size_t bytes, std::uint32_t seed) {
  int sms = 1;
  GPUVET_CUDA_TRY(sm_count(buf.device(), sms));
  GPUVET_CUDA_TRY(cudaSetDevice(buf.device()));
  fill_pattern<<<sms * 4, kUtilThreads>>>(static_cast<std::uint32_t*>(buf.get()), bytes / 4, seed);
  GPUVET_CUDA_TRY(cudaGetLastError());
  GPUVET_CUDA_TRY(cudaDeviceSynchronize());
  return {};
}

// A value no pattern word is likely to be, so an unwritten destination cannot pass.
GpuStatus poison_device(const gpu::DeviceMem& buf, std::size_t bytes) {
  GPUVET_CUDA_TRY(cudaSetDevice(buf.device()));
  GPUVET_CUDA_TRY(cudaMemset(buf.get(), 0xA5, bytes));
  GPUVET_CUDA_TRY(cudaDeviceSynchronize());
  return {};
}

void fill_host(void* p, std::size_t bytes, const std::uint32_t* seed) {
  auto* w = static_cast<std::uint32_t*>(p);
  if (!seed) {
    std::memset(p, 0xA5, bytes);
    return;
  }
  for (std::size_t i = 0, n = bytes / 4; i < n; ++i) w[i] = pattern_word(i, *seed);
}

// Mismatched words of a destination: a compare kernel on the GPU that holds it, or a loop
// on the host for host memory (dev < 0).
GpuStatus count_wrong_words(const void* p, int dev, std::size_t bytes, std::uint32_t seed,
                            unsigned long long& wrong) {
  wrong = 0;
  const std::size_t words = bytes / 4;
  if (dev < 0) {
    const auto* w = static_cast<const std::uint32_t*>(p);
    for (std::size_t i = 0; i < words; ++i) wrong += w[i] != pattern_word(i, seed) ? 1 : 0;
    return {};
  }
  gpu::DeviceMem counter;
  GPUVET_CUDA_TRY(counter.allocate(dev, sizeof(unsigned long long)));
  GPUVET_CUDA_TRY(cudaMemset(counter.get(), 0, sizeof(unsigned long long)));
  int sms = 1;
  GPUVET_CUDA_TRY(sm_count(dev, sms));
  count_mismatches<<<sms * 4, kUtilThreads>>>(static_cast<const std::uint32_t*>(p), words, seed,
                                              static_cast<unsigned long long*>(counter.get()));
  GPUVET_CUDA_TRY(cudaGetLastError());
  GPUVET_CUDA_TRY(cudaMemcpy(&wrong, counter.get(), sizeof(wrong), cudaMemcpyDeviceToHost));
  return {};
}

// Tests only: one word of the destination no longer matches, so verification must fail.
GpuStatus corrupt_one_word(void* p, int dev, std::size_t bytes, std::uint32_t seed) {
  const std::size_t i = bytes / 8;  // a word in the middle
  const std::uint32_t bad = ~pattern_word(i, seed);
  if (dev < 0) {
    static_cast<std::uint32_t*>(p)[i] = bad;
    return {};
  }
  GPUVET_CUDA_TRY(cudaSetDevice(dev));
  GPUVET_CUDA_TRY(
      cudaMemcpy(static_cast<std::uint32_t*>(p) + i, &bad, sizeof(bad), cudaMemcpyHostToDevice));
  return {};
}

// Verifies a destination into `cell` (plants a bad word first when asked).
void verify_into(gpu::DeviceHealth& health, BenchCell& cell, void* dst, int dev, std::size_t bytes,
                 std::uint32_t seed, bool plant) {
  GpuStatus s;
  if (plant) s = corrupt_one_word(dst, dev, bytes, seed);
  unsigned long long wrong = 0;
  if (s.ok()) s = count_wrong_words(dst, dev, bytes, seed, wrong);
  if (!s.ok()) {
    health.record(dev, s);
    cell.error = "verification failed: " + s.text;
  } else if (wrong != 0) {
    cell.error = "wrong data: " + std::to_string(wrong) + " mismatched words";
    cell.wrong_data = true;
  } else {
    cell.verified = true;
  }
}

void summarize(const std::vector<double>& samples, BenchCell& cell) {
  const SampleSummary s = summarize_samples(samples);
  if (!s.median) return;
  cell.value = s.median;
  if (s.spread_pct) cell.spread_pct = s.spread_pct;
}

std::size_t copy_bytes(const Sizing& sizing) { return sizing.bytes / 16 * 16; }
int iterations_of(const Sizing& sizing) { return std::max(1, sizing.iterations); }
int samples_of(const Sizing& sizing) { return std::max(1, sizing.samples); }

// A host buffer for GPU `gpu` on NUMA node `numa` (when >= 0), filled with the pattern of
// `seed` (poison when null) from that node's CPUs: gpu/cuda_resources.h says how.
GpuStatus make_host_buffer(gpu::HostMem& out, int gpu, std::size_t bytes, bool pinned, int numa,
                           const std::uint32_t* seed, std::vector<std::string>& notes) {
  const auto kind = pinned ? gpu::HostMem::Kind::kPinnedMapped : gpu::HostMem::Kind::kPageable;
  return gpu::allocate_host_on_node(
      out, gpu, bytes, kind, numa, [&](void* p) { fill_host(p, bytes, seed); }, notes);
}

// ------------------------------------------------------------------------------ timed copies

enum class CopyKind { kMemcpy, kMemcpyPeer, kKernel };

// One stream of copies. `issuer` is the device whose stream (and copy engine or SMs) does
// the work; `other` is the second device involved, if any (-1: host).
struct Job {
  int issuer = 0;
  int other = -1;
  CopyKind kind = CopyKind::kMemcpy;
  void* dst = nullptr;
  const void* src = nullptr;
  std::size_t bytes = 0;
  int dst_dev = -1;  // cudaMemcpyPeerAsync only
  int src_dev = -1;
  bool hold = true;                     // start behind the spin kernel
  gpu::DeviceHealth* health = nullptr;  // the run's, where failures are recorded
  gpu::Stream stream;
  gpu::EventSet events;  // [0] start, [1] stop
  int blocks = 1;
  std::vector<double> gbps;
  GpuStatus status;
  // Every sample's destination is checked (check_dev: the GPU holding it, -1 host memory)
  // against the pattern of check_seed, then poisoned for the next one.
  bool check = false;
  void* check_ptr = nullptr;  // the destination as the host sees it (host memory: not mapped)
  int check_dev = -1;
  std::uint32_t check_seed = 0;
  bool plant = false;  // tests: one word goes bad in the middle sample
  int checked = 0;     // samples whose destination was checked
  int wrong_samples = 0;
  unsigned long long wrong_words = 0;
};

// Checks `j`'s destination after every sample against `seed`'s pattern.
void verify_every_sample(Job& j, int dev, std::uint32_t seed, bool plant = false,
                         void* host_view = nullptr) {
  j.check = true;
  j.check_ptr = host_view ? host_view : j.dst;
  j.check_dev = dev;
  j.check_seed = seed;
  j.plant = plant;
}

Job make_job(gpu::DeviceHealth& health, int issuer, int other, CopyKind kind, void* dst,
             const void* src, std::size_t bytes) {
  Job j;
  j.health = &health;
  j.issuer = issuer;
  j.other = other;
  j.kind = kind;
  j.dst = dst;
  j.src = src;
  j.bytes = bytes;
  return j;
}

GpuStatus enqueue_copies(Job& j, int count) {
  for (int k = 0; k < count; ++k) {
    switch (j.kind) {
      case CopyKind::kMemcpy:
        GPUVET_CUDA_TRY(cudaMemcpyAsync(j.dst, j.src, j.bytes, cudaMemcpyDefault, j.stream.get()));
        break;
      case CopyKind::kMemcpyPeer:
        GPUVET_CUDA_TRY(
            cudaMemcpyPeerAsync(j.dst, j.dst_dev, j.src, j.src_dev, j.bytes, j.stream.get()));
        break;
      case CopyKind::kKernel:
        copy_vec16<<<j.blocks, kCopyThreads, 0, j.stream.get()>>>(
            static_cast<uint4*>(j.dst), static_cast<const uint4*>(j.src), j.bytes / 16);
        GPUVET_CUDA_TRY(cudaGetLastError());
        break;
    }
  }
  return {};
}

bool usable(Job& j) {
  if (!j.status.ok()) return false;
  for (int dev : {j.issuer, j.other}) {
    if (dev < 0) continue;
    GpuStatus dead = j.health->check(dev);
    if (!dead.ok()) {
      j.status = dead;
      return false;
    }
  }
  return true;
}

void fail(Job& j, const GpuStatus& s) {
  if (!j.status.ok()) return;
  j.status = s;
  j.health->record(j.issuer, s);
}

// Poisons a job's destination so that a copy that does not happen cannot pass the next check.
GpuStatus poison(const Job& j) {
  if (j.check_dev < 0) {
    fill_host(j.check_ptr, j.bytes, nullptr);
    return {};
  }
  GPUVET_CUDA_TRY(cudaSetDevice(j.check_dev));
  GPUVET_CUDA_TRY(cudaMemset(j.check_ptr, 0xA5, j.bytes));
  GPUVET_CUDA_TRY(cudaDeviceSynchronize());
  return {};
}

// After sample `index` of `samples`: the destination against the pattern, then poison.
void check_sample(Job& j, int index, int samples) {
  if (!j.check || !usable(j)) return;
  GpuStatus s;
  if (j.plant && index == samples / 2)
    s = corrupt_one_word(j.check_ptr, j.check_dev, j.bytes, j.check_seed);
  unsigned long long wrong = 0;
  if (s.ok()) s = count_wrong_words(j.check_ptr, j.check_dev, j.bytes, j.check_seed, wrong);
  if (s.ok() && index + 1 < samples) s = poison(j);
  if (!s.ok()) {
    fail(j, GpuStatus::error("verification failed: " + s.text));
    return;
  }
  ++j.checked;
  if (wrong) {
    ++j.wrong_samples;
    j.wrong_words += wrong;
  }
}

GpuStatus prepare(Job& j) {
  GPUVET_CUDA_TRY(j.stream.create(j.issuer));
  GPUVET_CUDA_TRY(j.events.create(j.issuer, 2));
  if (j.kind == CopyKind::kKernel) {
    int sms = 1;
    GPUVET_CUDA_TRY(sm_count(j.issuer, sms));
    j.blocks = sms * 2;  // 1024 threads per SM, 8 loads each in flight
  }
  return {};
}

double gbps_of(const Job& j, int iterations, double seconds) {
  return copy_gbps(j.bytes, iterations, seconds);
}

// One sample, all jobs released together by the flag, timed by each stream's events.
void sample_with_events(std::vector<Job*>& jobs, int iterations, ReleaseFlag& flag,
                        bool& timed_out) {
  flag.reset();
  for (Job* j : jobs) {
    if (!usable(*j)) continue;
    GpuStatus s = gpu::cuda_status(cudaSetDevice(j->issuer));
    if (s.ok() && j->hold) {
      spin_until_released<<<1, 1, 0, j->stream.get()>>>(flag.device_flag(), flag.device_timeout(),
                                                        kSpinTimeoutNs);
      s = gpu::cuda_status(cudaGetLastError());
    }
    if (s.ok()) s = gpu::cuda_status(cudaEventRecord(j->events[0], j->stream.get()));
    if (s.ok()) s = enqueue_copies(*j, iterations);
    if (s.ok()) s = gpu::cuda_status(cudaEventRecord(j->events[1], j->stream.get()));
    if (!s.ok()) fail(*j, s);
  }
  flag.release();  // even when a job failed: the others (and its spin kernel) wait on it
  for (Job* j : jobs) {
    if (!j->status.ok() && j->stream.get() == nullptr) continue;
    GpuStatus s = gpu::cuda_status(cudaSetDevice(j->issuer));
    if (s.ok()) s = gpu::cuda_status(cudaStreamSynchronize(j->stream.get()));
    if (!j->status.ok()) continue;  // drained; nothing to time
    float ms = 0;
    if (s.ok()) s = gpu::cuda_status(cudaEventElapsedTime(&ms, j->events[0], j->events[1]));
    if (s.ok())
      j->gbps.push_back(gbps_of(*j, iterations, ms / 1e3));
    else
      fail(*j, s);
  }
  if (flag.timed_out()) timed_out = true;
}

// One sample for pageable memory. cudaMemcpyAsync from or to pageable memory returns only
// after staging (D2H: after the copy), so a stream held by a spin kernel would deadlock the
// enqueueing thread; instead each job gets a host thread, all start at one gate, and the host
// clock measures from the first call to the stream's completion.
void sample_with_host_clock(std::vector<Job*>& jobs, int iterations) {
  std::vector<Job*> live;
  for (Job* j : jobs)
    if (usable(*j)) live.push_back(j);
  if (live.empty()) return;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  auto body = [&](Job* j) {
    try {
      GpuStatus s = gpu::cuda_status(cudaSetDevice(j->issuer));
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      const auto t0 = std::chrono::steady_clock::now();
      if (s.ok()) s = enqueue_copies(*j, iterations);
      if (s.ok()) s = gpu::cuda_status(cudaStreamSynchronize(j->stream.get()));
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      if (s.ok())
        j->gbps.push_back(gbps_of(*j, iterations, took.count()));
      else
        fail(*j, s);
    } catch (const std::exception& e) {
      fail(*j, GpuStatus::error(std::string("internal error: ") + e.what()));
    }
  };
  try {
    threads.reserve(live.size());
    for (Job* j : live) threads.emplace_back(body, j);
  } catch (...) {  // no thread: let the started ones run and end before reporting
    go.store(true);
    for (auto& t : threads) t.join();
    throw;
  }
  while (ready.load() < static_cast<int>(live.size())) std::this_thread::yield();
  go.store(true);
  for (auto& t : threads) t.join();
}

// Warm-up and samples for jobs that run concurrently. Failures stay in each job's status.
void run_samples(std::vector<Job>& jobs, const Sizing& sizing, ReleaseFlag& flag, bool host_clock,
                 std::vector<std::string>& notes) {
  std::vector<Job*> all;
  for (Job& j : jobs) {
    if (!usable(j)) continue;
    GpuStatus s = prepare(j);
    if (!s.ok()) fail(j, s);
    all.push_back(&j);
  }
  // Warm-up: module load, first-touch of mappings and peer paths stay out of the samples.
  for (Job* j : all) {
    if (!usable(*j)) continue;
    GpuStatus s = gpu::cuda_status(cudaSetDevice(j->issuer));
    if (s.ok()) s = enqueue_copies(*j, 1);
    if (!s.ok()) fail(*j, s);
  }
  for (Job* j : all) {
    if (!usable(*j)) continue;
    GpuStatus s = gpu::cuda_status(cudaSetDevice(j->issuer));
    if (s.ok()) s = gpu::cuda_status(cudaStreamSynchronize(j->stream.get()));
    if (!s.ok()) fail(*j, s);
  }
  // The warm-up wrote the destinations: poison them before the first sample.
  for (Job* j : all) {
    if (!j->check || !usable(*j)) continue;
    if (GpuStatus s = poison(*j); !s.ok()) fail(*j, s);
  }
  bool timed_out = false;
  const int iterations = iterations_of(sizing);
  const int samples = samples_of(sizing);
  for (int n = 0; n < samples; ++n) {
    if (host_clock)
      sample_with_host_clock(all, iterations);
    else
      sample_with_events(all, iterations, flag, timed_out);
    for (Job* j : all) check_sample(*j, n, samples);
  }
  if (timed_out)
    add_note_once(notes,
                  "a start hold timed out after 2 s: some streams started before all copies "
                  "were queued, so they did not start together and the figures may be off");
}

// The job's figure; with checks, "wrong data: …" (the figure kept) or verified when every
// sample's destination matched.
BenchCell cell_of(const Job& j) {
  BenchCell cell;
  if (!j.status.ok()) {
    cell.error = j.status.text;
    return cell;
  }
  summarize(j.gbps, cell);
  if (!j.check) return cell;
  if (j.wrong_samples > 0) {
    cell.error = "wrong data: " + std::to_string(j.wrong_words) + " mismatched words in " +
                 std::to_string(j.wrong_samples) + " of " + std::to_string(j.checked) + " samples";
    cell.wrong_data = true;
  } else
    cell.verified = j.checked > 0 && j.checked == static_cast<int>(j.gbps.size());
  return cell;
}

// ------------------------------------------------------------------------------ matrices

// Runs `body` on a fresh matrix, catching anything thrown (bad_alloc, thread creation), and
// records the wall time.
template <class Body>
BenchMatrix guarded(const std::string& name, const char* unit, Body&& body) {
  const auto t0 = std::chrono::steady_clock::now();
  BenchMatrix m;
  m.key = name;
  m.title = name;
  m.unit = unit;
  try {
    body(m);
  } catch (const std::exception& e) {
    m.error = std::string("internal error: ") + e.what();
  } catch (...) {
    m.error = "internal error";
  }
  m.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

std::string gpu_label(int i) { return "GPU" + std::to_string(i); }

// Rows GPU0…, one column; false (with m.error set) when there is no device.
bool one_column_per_gpu_rows(BenchMatrix& m, int& n, const char* column) {
  GpuStatus s = device_count(n);
  if (!s.ok()) {
    m.error = s.text;
    return false;
  }
  for (int i = 0; i < n; ++i) {
    m.rows.push_back(gpu_label(i));
    m.row_gpu.push_back(i);
  }
  m.cols = {column};
  m.col_gpu = {-1};
  m.cells.assign(n, std::vector<BenchCell>(1));
  return true;
}

bool square_gpu_matrix(BenchMatrix& m, int& n) {
  GpuStatus s = device_count(n);
  if (!s.ok()) {
    m.error = s.text;
    return false;
  }
  if (n < 2) {
    m.skipped = "needs 2 or more GPUs";
    return false;
  }
  for (int i = 0; i < n; ++i) {
    m.rows.push_back(gpu_label(i));
    m.cols.push_back(gpu_label(i));
    m.row_gpu.push_back(i);
    m.col_gpu.push_back(i);
  }
  m.cells.assign(n, std::vector<BenchCell>(n));
  return true;
}

std::uint32_t seed_for(int gpu, int role) {
  return 0x5EED0000u + static_cast<std::uint32_t>(gpu) * 16u + static_cast<std::uint32_t>(role);
}

std::string host_device_name(const HostDeviceSpec& spec) {
  std::string name = spec.all_gpus_at_once ? (spec.to_device ? "host_to_all" : "all_to_host")
                                           : (spec.to_device ? "host_to_device" : "device_to_host");
  if (spec.bidirectional) name += "_bidirectional";
  name += spec.engine == Engine::kSm ? "_memcpy_sm" : "_memcpy_ce";
  if (!spec.pinned) name += "_pageable";
  return name;
}

// The buffers of one GPU for a host↔device test.
struct HostDeviceSet {
  gpu::DeviceMem dev_src, dev_dst;
  gpu::HostMem host_src, host_dst;
};

// Opens the peer path between every ordered pair the driver allows; can[a][b] says a kernel
// or copy engine on a may touch b's memory.
struct PeerAccess {
  std::vector<std::vector<bool>> can;
  std::vector<std::vector<std::string>> error;
};

GpuStatus enable_peer(int from, int to) {
  GPUVET_CUDA_TRY(cudaSetDevice(from));
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
    return {};
  }
  return gpu::cuda_status(e);
}

PeerAccess open_peer_paths(gpu::DeviceHealth& health, int n) {
  PeerAccess p;
  p.can.assign(n, std::vector<bool>(n, false));
  p.error.assign(n, std::vector<std::string>(n));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b || !health.usable(a) || !health.usable(b)) continue;
      int can = 0;
      GpuStatus s = gpu::cuda_status(cudaDeviceCanAccessPeer(&can, a, b));
      if (s.ok() && can) s = enable_peer(a, b);
      if (!s.ok()) {
        health.record(a, s);
        p.error[a][b] = s.text;
        continue;
      }
      p.can[a][b] = can != 0;
    }
  }
  return p;
}

// A random single cycle over the nodes of a kChaseBytes region (Sattolo's shuffle), as word
// indices: chain[node k] holds the word index of the next node. Returns the chain image.
std::vector<std::uint32_t> make_chain() {
  const std::size_t nodes = kChaseBytes / kChaseStride;
  const std::size_t words_per_node = kChaseStride / 4;
  std::vector<std::uint32_t> order(nodes);
  for (std::size_t k = 0; k < nodes; ++k) order[k] = static_cast<std::uint32_t>(k);
  std::mt19937 rng(12345);
  for (std::size_t k = nodes - 1; k > 0; --k) {
    std::uniform_int_distribution<std::size_t> pick(0, k - 1);
    std::swap(order[k], order[pick(rng)]);
  }
  std::vector<std::uint32_t> chain(kChaseBytes / 4, 0);
  for (std::size_t k = 0; k < nodes; ++k) {
    const std::size_t next = order[k];
    chain[k * words_per_node] = static_cast<std::uint32_t>(next * words_per_node);
  }
  return chain;
}

std::uint32_t walk(const std::vector<std::uint32_t>& chain, std::uint32_t idx, int steps) {
  for (int k = 0; k < steps; ++k) idx = chain[idx];
  return idx;
}

// Chases `chain` (device-visible address) from device `dev`: samples of µs per access into
// `cell`, and verified when the walk ends where the host's walk does.
void chase_into(gpu::DeviceHealth& health, BenchCell& cell, int dev, const std::uint32_t* chain,
                const std::vector<std::uint32_t>& image, const Sizing& sizing) {
  const int steps = static_cast<int>(kChaseBytes / kChaseStride);
  auto run = [&]() -> GpuStatus {
    GPUVET_CUDA_TRY(health.check(dev));
    gpu::DeviceMem out;
    GPUVET_CUDA_TRY(out.allocate(dev, sizeof(ChaseResult)));
    auto* result = static_cast<ChaseResult*>(out.get());
    pointer_chase<<<1, 1>>>(chain, 0, kChaseWarmupSteps, result);
    GPUVET_CUDA_TRY(cudaGetLastError());
    GPUVET_CUDA_TRY(cudaDeviceSynchronize());
    std::vector<double> us;
    const std::uint32_t expected = walk(image, 0, steps);
    for (int n = 0; n < samples_of(sizing); ++n) {
      pointer_chase<<<1, 1>>>(chain, 0, steps, result);
      GPUVET_CUDA_TRY(cudaGetLastError());
      ChaseResult r{};
      GPUVET_CUDA_TRY(cudaMemcpy(&r, result, sizeof(r), cudaMemcpyDeviceToHost));
      if (r.last != expected) {
        cell.wrong_data = true;
        return GpuStatus::error("wrong data: pointer chase ended at word " +
                                std::to_string(r.last) + ", expected " + std::to_string(expected));
      }
      us.push_back(static_cast<double>(r.ns) / steps / 1e3);
    }
    summarize(us, cell);
    cell.verified = true;
    return {};
  };
  GpuStatus s = run();
  if (!s.ok()) {
    if (!cell.wrong_data) health.record(dev, s);  // a wrong walk is data, not a device error
    cell.error = s.text;
  }
}

}  // namespace

// ================================================================================ public

CudaEnv cuda_init() {
  CudaEnv env;
  try {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      env.error = gpu::cuda_text(e);
      (void)cudaGetLastError();
      return env;
    }
    if (n <= 0) {
      env.error = "cudaErrorNoDevice: no CUDA-capable device is detected";
      return env;
    }
    env.device_count = n;
    (void)cudaDriverGetVersion(&env.driver_version);
    (void)cudaRuntimeGetVersion(&env.runtime_version);
    for (int i = 0; i < n; ++i) {
      cudaDeviceProp prop{};
      const cudaError_t pe = cudaGetDeviceProperties(&prop, i);
      env.names.push_back(pe == cudaSuccess ? std::string(prop.name) : std::string());
      char bus[32] = {};
      std::string id;
      if (cudaDeviceGetPCIBusId(bus, sizeof(bus), i) == cudaSuccess) {
        id = bus;
        for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        // The domain may come as 8 hex digits ("00000000:06:00.0"); NVML facts use 4.
        const auto colon = id.find(':');
        if (colon != std::string::npos && colon > 4) id.erase(0, colon - 4);
        if (colon != std::string::npos && colon < 4) id.insert(0, 4 - colon, '0');
      }
      env.pci_bus_ids.push_back(id);
      (void)cudaGetLastError();
    }
    env.ok = true;
  } catch (const std::exception& ex) {
    env.ok = false;
    env.error = std::string("internal error: ") + ex.what();
  }
  return env;
}

BenchMatrix host_device_bandwidth(gpu::DeviceHealth& health, const HostDeviceSpec& spec,
                                  const Sizing& sizing, const std::vector<int>& numa_of_gpu,
                                  bool plant_corruption) {
  return guarded(host_device_name(spec), "GB/s", [&](BenchMatrix& m) {
    int n = 0;
    if (!one_column_per_gpu_rows(m, n, "host")) return;
    if (!spec.pinned && spec.engine == Engine::kSm) {
      m.skipped = "an SM copy needs pinned (mapped) host memory";
      return;
    }
    const std::size_t bytes = copy_bytes(sizing);
    if (bytes == 0) {
      m.error = "copy size under 16 bytes";
      return;
    }
    m.size_bytes = bytes;
    ReleaseFlag flag;
    if (GpuStatus s = flag.create(); !s.ok()) {
      m.error = s.text;
      return;
    }
    if (spec.pinned)
      m.notes.push_back("pinned host memory; timed with CUDA events behind a start hold");
    else
      m.notes.push_back(
          "pageable host memory (not an nvbandwidth test): timed with the host clock, "
          "no start hold (cudaMemcpyAsync blocks on pageable memory)");
    // As nvbandwidth does: the other direction copies twice the bytes, so that it covers the
    // whole measured window and every measured copy shares the link.
    const std::size_t h2d_bytes = spec.bidirectional && !spec.to_device ? 2 * bytes : bytes;
    const std::size_t d2h_bytes = spec.bidirectional && spec.to_device ? 2 * bytes : bytes;
    if (spec.bidirectional)
      m.notes.push_back(std::string("each cell: the ") +
                        (spec.to_device ? "host → device" : "device → host") +
                        " direction while the other ran at the same time (twice the bytes, so "
                        "it covers the whole measured window)");
    if (spec.all_gpus_at_once)
      m.notes.push_back("all GPUs copy at once; each cell is that GPU's own bandwidth");

    std::vector<std::vector<int>> groups;
    if (spec.all_gpus_at_once) {
      groups.emplace_back();
      for (int i = 0; i < n; ++i) groups.back().push_back(i);
    } else {
      for (int i = 0; i < n; ++i) groups.push_back({i});
    }
    const CopyKind kind = spec.engine == Engine::kSm ? CopyKind::kKernel : CopyKind::kMemcpy;
    std::vector<HostDeviceSet> sets(n);
    for (const auto& group : groups) {
      std::vector<Job> jobs;
      jobs.reserve(group.size() * 2);
      std::vector<int> h2d(n, -1), d2h(n, -1);
      for (int g : group) {
        BenchCell& cell = m.cells[g][0];
        if (GpuStatus dead = health.check(g); !dead.ok()) {
          cell.error = dead.text;
          continue;
        }
        const int numa = g < static_cast<int>(numa_of_gpu.size()) ? numa_of_gpu[g] : -1;
        HostDeviceSet& set = sets[g];
        auto setup = [&]() -> GpuStatus {
          if (spec.to_device || spec.bidirectional) {
            const std::uint32_t seed = seed_for(g, 0);
            GPUVET_CUDA_TRY(
                make_host_buffer(set.host_src, g, h2d_bytes, spec.pinned, numa, &seed, m.notes));
            GPUVET_CUDA_TRY(set.dev_dst.allocate(g, h2d_bytes));
            GPUVET_CUDA_TRY(poison_device(set.dev_dst, h2d_bytes));
          }
          if (!spec.to_device || spec.bidirectional) {
            GPUVET_CUDA_TRY(set.dev_src.allocate(g, d2h_bytes));
            GPUVET_CUDA_TRY(fill_device(set.dev_src, d2h_bytes, seed_for(g, 1)));
            GPUVET_CUDA_TRY(
                make_host_buffer(set.host_dst, g, d2h_bytes, spec.pinned, numa, nullptr, m.notes));
          }
          return {};
        };
        if (GpuStatus s = setup(); !s.ok()) {
          health.record(g, s);
          cell.error = s.text;
          set = HostDeviceSet();
          continue;
        }
        const bool sm = kind == CopyKind::kKernel;
        // The planted bad word goes into GPU 0's measured direction.
        const bool plant = plant_corruption && g == 0;
        if (set.host_src.get()) {
          h2d[g] = static_cast<int>(jobs.size());
          jobs.push_back(make_job(health, g, -1, kind, set.dev_dst.get(),
                                  sm ? set.host_src.mapped() : set.host_src.get(), h2d_bytes));
          verify_every_sample(jobs.back(), g, seed_for(g, 0), plant && spec.to_device);
        }
        if (set.host_dst.get()) {
          d2h[g] = static_cast<int>(jobs.size());
          jobs.push_back(make_job(health, g, -1, kind,
                                  sm ? set.host_dst.mapped() : set.host_dst.get(),
                                  set.dev_src.get(), d2h_bytes));
          // Checked through the host pointer (an SM kernel writes it through the mapping).
          verify_every_sample(jobs.back(), -1, seed_for(g, 1), plant && !spec.to_device,
                              set.host_dst.get());
        }
      }
      for (Job& j : jobs) j.hold = spec.pinned;
      run_samples(jobs, sizing, flag, !spec.pinned, m.notes);

      for (int g : group) {
        HostDeviceSet& set = sets[g];
        const int main = spec.to_device ? h2d[g] : d2h[g];
        if (main < 0) continue;  // setup failed: the cell already says why
        BenchCell& cell = m.cells[g][0];
        cell = cell_of(jobs[main]);
        const int other = spec.to_device ? d2h[g] : h2d[g];
        if (spec.bidirectional && other >= 0) {
          const std::string dir = spec.to_device ? "device → host" : "host → device";
          const BenchCell o = cell_of(jobs[other]);
          // Wrong data in the other direction is wrong data of this measurement too.
          if (o.wrong_data && !cell.error) {
            cell.error = dir + " at the same time: " + *o.error;
            cell.verified = false;
            cell.wrong_data = true;
          }
          if (o.value && !o.error)
            m.notes.push_back(gpu_label(g) + ": " + dir +
                              " at the same time: " + gbps_text(*o.value));
          else
            m.notes.push_back(gpu_label(g) + ": " + dir +
                              " at the same time failed: " + o.error.value_or("no value"));
        }
      }
      for (int g : group) sets[g] = HostDeviceSet();  // free before the next GPU's buffers
    }
  });
}

BenchMatrix host_device_latency(gpu::DeviceHealth& health, const Sizing& sizing) {
  return guarded("host_device_latency_sm", "us", [&](BenchMatrix& m) {
    int n = 0;
    if (!one_column_per_gpu_rows(m, n, "host")) return;
    m.notes.push_back(
        "one thread chases dependent 4-byte loads over 1 MiB of mapped pinned host memory "
        "(random cycle, 64 B apart, uncached loads), timed with %globaltimer; µs per access");
    const std::vector<std::uint32_t> image = make_chain();
    gpu::HostMem chain;
    if (GpuStatus s = chain.allocate(kChaseBytes, gpu::HostMem::Kind::kPinnedMapped); !s.ok()) {
      m.error = s.text;
      return;
    }
    std::memcpy(chain.get(), image.data(), kChaseBytes);
    for (int g = 0; g < n; ++g) {
      BenchCell& cell = m.cells[g][0];
      GpuStatus s = gpu::cuda_status(cudaSetDevice(g));
      if (!s.ok()) {
        cell.error = s.text;
        continue;
      }
      chase_into(health, cell, g, static_cast<const std::uint32_t*>(chain.mapped()), image, sizing);
    }
  });
}

BenchMatrix device_local_copy(gpu::DeviceHealth& health, const Sizing& sizing) {
  return guarded("device_local_copy", "GB/s", [&](BenchMatrix& m) {
    int n = 0;
    if (!one_column_per_gpu_rows(m, n, "local")) return;
    const std::size_t bytes = copy_bytes(sizing);
    if (bytes == 0) {
      m.error = "copy size under 16 bytes";
      return;
    }
    m.size_bytes = bytes;
    m.notes.push_back(
        "cudaMemcpyAsync device → device on one GPU; bytes copied per second "
        "(HBM traffic is twice that)");
    ReleaseFlag flag;
    if (GpuStatus s = flag.create(); !s.ok()) {
      m.error = s.text;
      return;
    }
    for (int g = 0; g < n; ++g) {
      BenchCell& cell = m.cells[g][0];
      gpu::DeviceMem src, dst;
      auto setup = [&]() -> GpuStatus {
        GPUVET_CUDA_TRY(health.check(g));
        GPUVET_CUDA_TRY(src.allocate(g, bytes));
        GPUVET_CUDA_TRY(dst.allocate(g, bytes));
        GPUVET_CUDA_TRY(fill_device(src, bytes, seed_for(g, 2)));
        return poison_device(dst, bytes);
      };
      if (GpuStatus s = setup(); !s.ok()) {
        health.record(g, s);
        cell.error = s.text;
        continue;
      }
      std::vector<Job> jobs;
      jobs.push_back(make_job(health, g, -1, CopyKind::kMemcpy, dst.get(), src.get(), bytes));
      verify_every_sample(jobs.back(), g, seed_for(g, 2));
      run_samples(jobs, sizing, flag, false, m.notes);
      cell = cell_of(jobs[0]);
    }
  });
}

BenchMatrix peer_bandwidth(gpu::DeviceHealth& health, const PeerSpec& spec, const Sizing& sizing) {
  std::string name =
      spec.bidirectional ? "device_to_device_bidirectional_memcpy_" : "device_to_device_memcpy_";
  name += spec.read ? "read_" : "write_";
  name += spec.engine == Engine::kSm ? "sm" : "ce";
  return guarded(name, "GB/s", [&](BenchMatrix& m) {
    int n = 0;
    if (!square_gpu_matrix(m, n)) return;
    const std::size_t bytes = copy_bytes(sizing);
    if (bytes == 0) {
      m.error = "copy size under 16 bytes";
      return;
    }
    m.size_bytes = bytes;
    m.notes.push_back(std::string("row = source GPU, column = destination; ") +
                      (spec.read ? "read: the destination issues the copy (pulls)"
                                 : "write: the source issues the copy (pushes)"));
    if (spec.bidirectional)
      m.notes.push_back("bidirectional: each cell is row → column while column → row ran");
    ReleaseFlag flag;
    if (GpuStatus s = flag.create(); !s.ok()) {
      m.error = s.text;
      return;
    }
    // Per GPU one source (its own pattern) and one destination.
    std::vector<gpu::DeviceMem> src(n), dst(n);
    std::vector<std::string> setup_error(n);
    for (int g = 0; g < n; ++g) {
      auto setup = [&]() -> GpuStatus {
        GPUVET_CUDA_TRY(health.check(g));
        GPUVET_CUDA_TRY(src[g].allocate(g, bytes));
        GPUVET_CUDA_TRY(dst[g].allocate(g, bytes));
        return fill_device(src[g], bytes, seed_for(g, 3));
      };
      if (GpuStatus s = setup(); !s.ok()) {
        health.record(g, s);
        setup_error[g] = s.text;
        src[g] = gpu::DeviceMem();
        dst[g] = gpu::DeviceMem();
      }
    }
    const PeerAccess peers = open_peer_paths(health, n);

    // A job copying s → d, issued by the puller (read) or the pusher (write).
    auto job_for = [&](int s, int d) {
      const int issuer = spec.read ? d : s;
      const int other = spec.read ? s : d;
      const bool p2p = peers.can[issuer][other];
      CopyKind kind = CopyKind::kMemcpyPeer;
      if (p2p) kind = spec.engine == Engine::kSm ? CopyKind::kKernel : CopyKind::kMemcpy;
      Job j = make_job(health, issuer, other, kind, dst[d].get(), src[s].get(), bytes);
      j.dst_dev = d;
      j.src_dev = s;
      // Without P2P the driver stages through host memory and may block the enqueueing
      // thread, which a held stream would turn into a 2 s stall: no hold there.
      j.hold = p2p;
      return j;
    };

    for (int s = 0; s < n; ++s) {
      for (int d = 0; d < n; ++d) {
        if (s == d) continue;  // empty value and error: rendered N/A
        BenchCell& cell = m.cells[s][d];
        std::string why = !setup_error[s].empty() ? setup_error[s] : setup_error[d];
        if (why.empty()) why = health.check(s).text;
        if (why.empty()) why = health.check(d).text;
        if (!why.empty()) {
          cell.error = why;
          continue;
        }
        if (GpuStatus p = poison_device(dst[d], bytes); !p.ok()) {
          health.record(d, p);
          cell.error = p.text;
          continue;
        }
        if (spec.bidirectional) {
          if (GpuStatus p = poison_device(dst[s], bytes); !p.ok()) {
            health.record(s, p);
            cell.error = p.text;
            continue;
          }
        }
        std::vector<Job> jobs;
        jobs.push_back(job_for(s, d));
        verify_every_sample(jobs.back(), d, seed_for(s, 3));
        if (spec.bidirectional) {
          jobs.push_back(job_for(d, s));
          verify_every_sample(jobs.back(), s, seed_for(d, 3));
        }
        const bool via_host = jobs[0].kind == CopyKind::kMemcpyPeer;
        // With one-way peer access a bidirectional pair mixes a held and an unheld (via-host)
        // stream, so the latter may start a little early: rare enough to accept.
        run_samples(jobs, sizing, flag, false, m.notes);
        cell = cell_of(jobs[0]);
        cell.via_host = via_host;
        if (via_host) {
          const std::string err = peers.error[jobs[0].issuer][jobs[0].other];
          add_note_once(m.notes, gpu_label(s) + "→" + gpu_label(d) +
                                     ": no peer access, measured with cudaMemcpyPeerAsync "
                                     "through host memory" +
                                     (err.empty() ? "" : " (" + err + ")"));
          if (spec.engine == Engine::kSm)
            add_note_once(m.notes,
                          "SM copies need peer access; via-host cells used the "
                          "copy engines");
        }
        if (spec.bidirectional && !cell.error) {
          const BenchCell o = cell_of(jobs[1]);
          if (o.error && o.error->rfind("wrong data", 0) == 0) {
            cell.error = gpu_label(d) + "→" + gpu_label(s) + " at the same time: " + *o.error;
            cell.verified = false;
          }
        }
      }
    }
  });
}

BenchMatrix peer_latency(gpu::DeviceHealth& health, const Sizing& sizing) {
  return guarded("device_to_device_latency_sm", "us", [&](BenchMatrix& m) {
    int n = 0;
    if (!square_gpu_matrix(m, n)) return;
    m.notes.push_back(
        "row = GPU holding the memory, column = GPU chasing pointers in it; "
        "1 MiB random cycle, 64 B apart, uncached loads; µs per access");
    const std::vector<std::uint32_t> image = make_chain();
    std::vector<gpu::DeviceMem> chain(n);
    std::vector<std::string> setup_error(n);
    for (int g = 0; g < n; ++g) {
      auto setup = [&]() -> GpuStatus {
        GPUVET_CUDA_TRY(health.check(g));
        GPUVET_CUDA_TRY(chain[g].allocate(g, kChaseBytes));
        GPUVET_CUDA_TRY(
            cudaMemcpy(chain[g].get(), image.data(), kChaseBytes, cudaMemcpyHostToDevice));
        return {};
      };
      if (GpuStatus s = setup(); !s.ok()) {
        health.record(g, s);
        setup_error[g] = s.text;
      }
    }
    const PeerAccess peers = open_peer_paths(health, n);
    for (int owner = 0; owner < n; ++owner) {
      for (int reader = 0; reader < n; ++reader) {
        if (owner == reader) continue;
        BenchCell& cell = m.cells[owner][reader];
        const std::string& why =
            !setup_error[owner].empty() ? setup_error[owner] : setup_error[reader];
        if (!why.empty()) {
          cell.error = why;
          continue;
        }
        if (!peers.can[reader][owner]) {  // left empty: rendered N/A, the note says why
          const std::string& err = peers.error[reader][owner];
          add_note_once(m.notes, gpu_label(reader) + " cannot access " + gpu_label(owner) +
                                     "'s memory" + (err.empty() ? "" : " (" + err + ")") +
                                     ": not measured");
          continue;
        }
        if (GpuStatus s = gpu::cuda_status(cudaSetDevice(reader)); !s.ok()) {
          cell.error = s.text;
          continue;
        }
        chase_into(health, cell, reader, static_cast<const std::uint32_t*>(chain[owner].get()),
                   image, sizing);
      }
    }
  });
}

void p2p_truth_cuda(gpu::DeviceHealth& health, std::vector<P2PTruth>& truth,
                    bool plant_corruption) {
  int n = 0;
  if (GpuStatus s = device_count(n); !s.ok()) {
    for (P2PTruth& t : truth) t.enable_error = s.text;
    return;
  }
  bool planted = false;
  for (P2PTruth& t : truth) {
    try {
      const int a = t.a, b = t.b;
      if (a < 0 || b < 0 || a >= n || b >= n || a == b) {
        t.enable_error =
            "no such pair of CUDA devices (" + std::to_string(a) + ", " + std::to_string(b) + ")";
        continue;
      }
      if (GpuStatus dead = health.check(a).ok() ? health.check(b) : health.check(a); !dead.ok()) {
        t.enable_error = dead.text;
        continue;
      }
      int ab = 0, ba = 0;
      GpuStatus s = gpu::cuda_status(cudaDeviceCanAccessPeer(&ab, a, b));
      if (s.ok()) s = gpu::cuda_status(cudaDeviceCanAccessPeer(&ba, b, a));
      if (!s.ok()) {
        t.enable_error = s.text;
        continue;
      }
      t.cuda_can_access = ab != 0 && ba != 0;
      // Try both ways even when the driver says no: its refusal is part of the truth.
      std::string enable;
      for (auto [from, to] : {std::pair<int, int>{a, b}, std::pair<int, int>{b, a}}) {
        GpuStatus e = enable_peer(from, to);
        if (!e.ok()) {
          health.record(from, e);
          if (!enable.empty()) enable += "; ";
          enable += gpu_label(from) + "→" + gpu_label(to) + ": " + e.text;
        }
      }
      if (!enable.empty()) t.enable_error = enable;

      // 64 MiB a → b with cudaMemcpyPeerAsync (through host when P2P is off), checked.
      const std::uint32_t seed = seed_for(a, 4);
      const bool plant = plant_corruption && !planted;
      gpu::DeviceMem src, dst;
      gpu::Stream stream;
      gpu::EventSet ev;  // start, stop
      std::vector<double> gbps;
      auto copy = [&]() -> GpuStatus {
        GPUVET_CUDA_TRY(src.allocate(a, kTruthCopyBytes));
        GPUVET_CUDA_TRY(fill_device(src, kTruthCopyBytes, seed));
        GPUVET_CUDA_TRY(dst.allocate(b, kTruthCopyBytes));
        GPUVET_CUDA_TRY(poison_device(dst, kTruthCopyBytes));
        GPUVET_CUDA_TRY(stream.create(a));
        GPUVET_CUDA_TRY(ev.create(a, 2));
        GPUVET_CUDA_TRY(cudaSetDevice(a));
        for (int k = 0; k <= kTruthSamples; ++k) {  // k == 0: warm-up
          GPUVET_CUDA_TRY(cudaEventRecord(ev[0], stream.get()));
          GPUVET_CUDA_TRY(
              cudaMemcpyPeerAsync(dst.get(), b, src.get(), a, kTruthCopyBytes, stream.get()));
          GPUVET_CUDA_TRY(cudaEventRecord(ev[1], stream.get()));
          GPUVET_CUDA_TRY(cudaStreamSynchronize(stream.get()));
          float ms = 0;
          GPUVET_CUDA_TRY(cudaEventElapsedTime(&ms, ev[0], ev[1]));
          if (k > 0 && ms > 0) gbps.push_back(copy_gbps(kTruthCopyBytes, 1, ms / 1e3));
        }
        return {};
      };
      s = copy();
      if (!s.ok()) {
        health.record(a, s);
        t.copy_verified = false;
        t.enable_error =
            (t.enable_error ? *t.enable_error + "; " : std::string()) + "peer copy: " + s.text;
        continue;
      }
      BenchCell cell;
      summarize(gbps, cell);
      if (cell.value) t.copy_gbps = cell.value;
      verify_into(health, cell, dst.get(), b, kTruthCopyBytes, seed, plant);
      if (plant) planted = true;
      t.copy_verified = cell.verified;
      if (!cell.verified && cell.error && cell.error->rfind("wrong data", 0) != 0)
        t.enable_error = (t.enable_error ? *t.enable_error + "; " : std::string()) + *cell.error;
    } catch (const std::exception& ex) {
      t.enable_error = std::string("internal error: ") + ex.what();
    }
  }
}

}  // namespace gpuvet::bench
