// bench/nccl_bench.cc — NCCL collectives and the 2-rank P2P check behind `gpuvet bench`.
//
// How it measures (after nccl-tests, src/common.cu and the per-collective files):
//   * one process, one communicator per GPU (rank i = spec.gpus[i]);
//   * float32, out of place; each rank's send buffer holds small integers that depend on
//     the rank and the position, so every sum is exact in float and every value can be
//     checked with ==;
//   * per size: `warmup` untimed ops, then `iterations` ops back to back; every op is one
//     ncclGroupStart / one call per rank / ncclGroupEnd. A CUDA event is recorded on each
//     rank's stream before the first op and after each quarter of the loop, so the time per
//     op is max over ranks (elapsed / iterations) — nccl-tests takes host wall time over the
//     same loop, which is the slowest rank too — and the four quarters give the spread;
//   * algbw = size / time (GB/s = 1e9 B/s), busbw = algbw × factor (detail::bus_bw_factor);
//   * after the timed loop the receive buffers are filled with NaN, one more op runs and
//     every value is compared with the expected one.
//
// Never hangs: communicators are nonblocking (ncclCommInitRankConfig, blocking = 0, NCCL
// 2.14+). Every wait — init, an ncclGroupEnd that answers ncclInProgress, the completion of
// the ops, finalize — polls ncclCommGetAsyncError on each communicator and cudaStreamQuery
// on each stream against a deadline (spec.timeout per phase); past it every communicator
// is aborted with ncclCommAbort and the stalled rank is named. Buffers of a GPU whose stream
// is still busy after the abort are deliberately leaked: cudaFree would wait for the stuck
// kernel. With an NCCL older than 2.14 (no nonblocking communicators) ncclCommInitAll and
// blocking communicators are used; the completion of the ops is still polled under the
// deadline, but init and enqueue then cannot be bounded (said in a note).
//
// NCCL_NVLS_ENABLE is set to 0 unless the user set it: NVLink SHARP (multicast) is never
// used by default. NCCL_DEBUG is never set, and NCCL's own log is not parsed, so
// P2PTruth::nccl_transport stays empty.
//
// The library comes from the loader's registry (gpu/nccl_lib.h: nccl_collective finds it
// again from env.library), the communicator protocol from gpu/nccl_comms.h and the CUDA
// handles from gpu/cuda_resources.h; this file holds only the measurements.
#include "bench/nccl_bench.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <new>
#include <utility>

#include "bench/registry.h"
#include "gpu/cuda_resources.h"
#include "gpu/cuda_status.h"
#include "gpu/nccl_api.h"
#include "gpu/nccl_comms.h"
#include "gpu/nccl_lib.h"
#include "hw/expectations.h"

namespace gpuvet::bench {

// ------------------------------------------------------------------------------ helpers

namespace detail {

std::optional<double> bus_bw_factor(std::string_view op, int nranks) {
  if (nranks < 1) return std::nullopt;
  const double n = nranks;
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter") return (n - 1) / n;
  return std::nullopt;
}

std::optional<CollectiveCounts> collective_counts(std::string_view op, std::size_t size_bytes,
                                                  int nranks) {
  if (nranks < 1 || size_bytes < sizeof(float)) return std::nullopt;
  const std::size_t n = static_cast<std::size_t>(nranks);
  const std::size_t count = size_bytes / sizeof(float);
  CollectiveCounts c;
  if (op == "all_reduce") {
    c.send_count = c.recv_count = c.param_count = count;
  } else if (op == "all_gather" || op == "reduce_scatter") {
    // nccl-tests: a per-rank chunk of count/n elements rounded down to 16 bytes (4 floats).
    std::size_t chunk = count / n;
    chunk = chunk >= 4 ? chunk & ~std::size_t{3} : std::max<std::size_t>(chunk, 1);
    c.param_count = chunk;
    if (op == "all_gather") {
      c.send_count = chunk;
      c.recv_count = chunk * n;
    } else {
      c.send_count = chunk * n;
      c.recv_count = chunk;
    }
  } else {
    return std::nullopt;
  }
  c.bytes = std::max(c.send_count, c.recv_count) * sizeof(float);
  return c;
}

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;
using gpu::GpuStatus;

constexpr auto kDrainGrace = std::chrono::seconds(5);  // after an abort, for the streams

// A rank's stream and timing events (gpu/cuda_resources.h: safe to destroy after an abort).
struct RankRes {
  int device = -1;
  gpu::Stream stream;
  gpu::EventSet events;

  GpuStatus create(int dev, int n_events) {
    device = dev;
    GPUVET_CUDA_TRY(stream.create(dev));
    return events.create(dev, static_cast<std::size_t>(n_events));
  }
};

std::vector<int> devices_of(const std::vector<RankRes>& ranks) {
  std::vector<int> d;
  for (const RankRes& r : ranks) d.push_back(r.device);
  return d;
}
std::vector<cudaStream_t> streams_of(const std::vector<RankRes>& ranks) {
  std::vector<cudaStream_t> s;
  for (const RankRes& r : ranks) s.push_back(r.stream.get());
  return s;
}
std::vector<std::vector<cudaStream_t>> stream_lists(const std::vector<RankRes>& ranks) {
  std::vector<std::vector<cudaStream_t>> s;
  for (const RankRes& r : ranks) s.push_back({r.stream.get()});
  return s;
}

std::size_t floats_of(const gpu::DeviceMem& m) { return m.bytes() / sizeof(float); }

std::string rank_list(const std::vector<int>& ranks, const std::vector<int>& devices) {
  std::string s;
  for (int r : ranks) s += fmt::format("{}{} (GPU {})", s.empty() ? "" : ", ", r, devices[r]);
  return s;
}

// ------------------------------------------------------------------------ data patterns

// Small integers: exact in float32, and so is any sum of them over up to 900 ranks (< 2^24).
inline float pattern(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) + 16 * static_cast<int>(i % 1024));
}

struct Expect {
  std::string_view op;
  int nranks;
  std::size_t chunk;  // param_count
  // The value rank `rank` must hold at position i of its receive buffer.
  float operator()(int rank, std::size_t i) const {
    const float base_sum = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2.0f;
    if (op == "all_reduce")
      return base_sum + static_cast<float>(nranks * 16 * static_cast<int>(i % 1024));
    if (op == "all_gather") return pattern(static_cast<int>(i / chunk), i % chunk);
    // reduce_scatter: block `rank` of the element-wise sum.
    const std::size_t j = static_cast<std::size_t>(rank) * chunk + i;
    return base_sum + static_cast<float>(nranks * 16 * static_cast<int>(j % 1024));
  }
};

constexpr std::size_t kStageFloats = std::size_t{16} << 20;  // 64 MiB host staging

// Fills each rank's send buffer with pattern(rank, i): staged copies on the rank's stream.
GpuStatus fill_send(const std::vector<RankRes>& ranks, const std::vector<gpu::DeviceMem>& send,
                    Clock::time_point deadline) {
  std::vector<float> host(std::min(kStageFloats, std::max<std::size_t>(floats_of(send[0]), 1)));
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    cudaSetDevice(ranks[r].device);
    const std::size_t floats = floats_of(send[r]);
    for (std::size_t off = 0; off < floats; off += host.size()) {
      const std::size_t len = std::min(host.size(), floats - off);
      for (std::size_t i = 0; i < len; ++i) host[i] = pattern(static_cast<int>(r), off + i);
      // Pageable source: the call returns once `host` is staged, so it can be refilled; the
      // DMA is ordered on the stream before the collectives.
      if (cudaError_t e =
              cudaMemcpyAsync(send[r].get<float>() + off, host.data(), len * sizeof(float),
                              cudaMemcpyHostToDevice, ranks[r].stream.get());
          e != cudaSuccess)
        return gpu::at_rank(static_cast<int>(r), gpu::cuda_status("cudaMemcpyAsync (fill)", e));
    }
  }
  return gpu::wait_streams(devices_of(ranks), streams_of(ranks), deadline);
}

struct Wrong {
  std::size_t count = 0;
  std::string first;  // "rank 2 (GPU 2) element 17: got 3, expected 36"
};

// Copies every receive buffer back (the streams are idle) and counts into `wrong` the values
// that differ.
GpuStatus check_recv(const std::vector<RankRes>& ranks, const std::vector<gpu::DeviceMem>& recv,
                     const Expect& expect, Wrong& wrong) {
  std::vector<float> host(std::min(kStageFloats, std::max<std::size_t>(floats_of(recv[0]), 1)));
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const int rank = static_cast<int>(r);
    cudaSetDevice(ranks[r].device);
    const std::size_t floats = floats_of(recv[r]);
    for (std::size_t off = 0; off < floats; off += host.size()) {
      const std::size_t len = std::min(host.size(), floats - off);
      // Device → pageable host returns when the copy is done; the stream is idle already.
      if (cudaError_t e =
              cudaMemcpyAsync(host.data(), recv[r].get<float>() + off, len * sizeof(float),
                              cudaMemcpyDeviceToHost, ranks[r].stream.get());
          e != cudaSuccess)
        return gpu::at_rank(rank, gpu::cuda_status("cudaMemcpyAsync (check)", e));
      if (cudaError_t e = cudaStreamSynchronize(ranks[r].stream.get()); e != cudaSuccess)
        return gpu::at_rank(rank, gpu::cuda_status("cudaStreamSynchronize", e));
      for (std::size_t i = 0; i < len; ++i) {
        const float want = expect(rank, off + i);
        if (!(host[i] == want)) {
          if (wrong.count == 0)
            wrong.first = fmt::format("rank {} (GPU {}) element {}: got {:g}, expected {:g}", r,
                                      ranks[r].device, off + i, host[i], want);
          ++wrong.count;
        }
      }
    }
  }
  return {};
}

// One op on every rank: ncclGroupStart, a call per rank, ncclGroupEnd; an ncclInProgress
// answer (nonblocking communicators: connection setup) is polled out under the deadline,
// so on return the op is queued on every stream.
GpuStatus launch(const gpu::NcclLib& lib, std::string_view op, const gpu::Communicators& comms,
                 const std::vector<RankRes>& ranks, const std::vector<gpu::DeviceMem>& send,
                 const std::vector<gpu::DeviceMem>& recv, std::size_t param_count,
                 Clock::time_point deadline) {
  const auto& h = comms.handles();
  if (ncclResult_t r = lib.group_start(); r != ncclSuccess)
    return GpuStatus::error("ncclGroupStart: " + lib.text(r));
  GpuStatus first;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    ncclResult_t res = ncclSuccess;
    const char* fn = "";
    const cudaStream_t stream = ranks[r].stream.get();
    if (op == "all_reduce") {
      fn = "ncclAllReduce";
      res = lib.all_reduce(send[r].get(), recv[r].get(), param_count, ncclFloat32, ncclSum, h[r],
                           stream);
    } else if (op == "all_gather") {
      fn = "ncclAllGather";
      res = lib.all_gather(send[r].get(), recv[r].get(), param_count, ncclFloat32, h[r], stream);
    } else {
      fn = "ncclReduceScatter";
      res = lib.reduce_scatter(send[r].get(), recv[r].get(), param_count, ncclFloat32, ncclSum,
                               h[r], stream);
    }
    if (res != ncclSuccess && res != ncclInProgress && first.ok())
      first = gpu::at_rank(static_cast<int>(r),
                           GpuStatus::error(std::string(fn) + ": " + lib.text(res, h[r])));
  }
  const ncclResult_t end = lib.group_end();  // always paired with the start, even after an error
  if (!first.ok()) return first;
  if (end == ncclInProgress) return comms.wait({}, deadline);
  if (end != ncclSuccess) return GpuStatus::error("ncclGroupEnd: " + lib.text(end));
  return {};
}

double spread_pct(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return median > 0 ? (v.back() - v.front()) / median * 100.0 : 0;
}

const gpu::NcclLib* lib_for(const NcclEnv& env, std::string& error) {
  if (!env.ok) {
    error = env.error.empty() ? "NCCL was not loaded" : env.error;
    return nullptr;
  }
  return gpu::nccl_library(env.library, &error);
}

// Outcome of one size: a row, or a failure that ends the benchmark.
struct SizeOutcome {
  std::vector<BenchCell> cells;
  std::optional<std::string> fatal;
};

std::vector<BenchCell> error_row(const std::string& e) {
  std::vector<BenchCell> row(3);
  for (auto& c : row) c.error = e;
  return row;
}

class CollectiveRun {
 public:
  CollectiveRun(const gpu::NcclLib& lib, const CollectiveSpec& spec, std::vector<int> devices,
                BenchMatrix& m)
      : lib_(lib),
        spec_(spec),
        devices_(std::move(devices)),
        m_(m),
        comms_(lib, devices_, spec.timeout) {}

  void run() {
    const int n = static_cast<int>(devices_.size());
    const int warmup = std::max(spec_.warmup, 0);
    const int iterations = std::max(spec_.iterations, 1);
    const double factor = *detail::bus_bw_factor(spec_.op, n);

    for (int d : devices_) {
      ranks_.emplace_back();
      if (GpuStatus s = ranks_.back().create(d, iterations + 1); !s.ok()) {
        m_.error = fmt::format("GPU {}: creating a stream and events: {}", d, s.text);
        return;
      }
    }
    streams_ = streams_of(ranks_);

    if (GpuStatus f = comms_.init(); !f.ok()) {
      m_.error = comms_.describe(f, "communicator init");
      if (f.is_timeout()) drain_after_failure(nullptr, nullptr);
      return;
    }
    std::string gpu_list;
    for (int d : devices_) gpu_list += (gpu_list.empty() ? "" : ",") + std::to_string(d);
    m_.notes.push_back(fmt::format(
        "NCCL {}: {} rank{} on GPU {}, {} communicators; float32{}, out of place; {} warm-up and "
        "{} timed ops per size; time = slowest rank's mean per op (CUDA events); busbw = algbw "
        "× {:g}",
        gpu::nccl_version_text(lib_.version_code), n, n == 1 ? "" : "s", gpu_list,
        comms_.nonblocking() ? "nonblocking" : "blocking (NCCL < 2.14: init and enqueue unbounded)",
        spec_.op == "all_gather" ? "" : " sum", warmup, iterations, factor));
    if (n == 1) m_.notes.push_back("1 GPU: only the path is exercised (busbw 0, as nccl-tests)");

    std::vector<std::size_t> seen;
    for (std::size_t size : spec_.sizes) {
      auto counts = detail::collective_counts(spec_.op, size, n);
      if (!counts) {
        m_.notes.push_back(fmt::format("{} B skipped: smaller than one float32", size));
        continue;
      }
      if (std::find(seen.begin(), seen.end(), counts->bytes) != seen.end()) continue;
      seen.push_back(counts->bytes);
      if (counts->bytes != size)
        m_.notes.push_back(
            fmt::format("{} runs as {} (whole 16-byte chunks per rank, as nccl-tests)",
                        size_label(size), size_label(counts->bytes)));
      SizeOutcome out = run_size(*counts, warmup, iterations, factor);
      if (out.fatal) {
        m_.error = *out.fatal;
        return;
      }
      m_.rows.push_back(size_label(counts->bytes));
      m_.row_gpu.push_back(-1);
      m_.cells.push_back(std::move(out.cells));
    }

    if (GpuStatus f = comms_.close(); !f.ok())
      m_.notes.push_back("communicator teardown: " + comms_.describe(f, "ncclCommFinalize") +
                         " (aborted)");
  }

 private:
  // Aborts every communicator and leaks the buffers of ranks whose stream stays busy.
  void drain_after_failure(std::vector<gpu::DeviceMem>* send, std::vector<gpu::DeviceMem>* recv) {
    const std::vector<int> stuck = comms_.abort_and_drain(stream_lists(ranks_), kDrainGrace);
    for (int r : stuck) {
      if (send) (*send)[r].leak();
      if (recv) (*recv)[r].leak();
    }
    if (!stuck.empty())
      m_.notes.push_back("still busy after ncclCommAbort, buffers left allocated: rank " +
                         rank_list(stuck, devices_));
  }

  SizeOutcome run_size(const detail::CollectiveCounts& k, int warmup, int iterations,
                       double factor) {
    const std::size_t n = devices_.size();
    const std::string what = fmt::format("{} of {}", spec_.op, size_label(k.bytes));
    SizeOutcome out;
    std::vector<gpu::DeviceMem> send(n), recv(n);
    for (std::size_t r = 0; r < n; ++r) {
      GpuStatus e = send[r].allocate(devices_[r], k.send_count * sizeof(float));
      if (e.ok()) e = recv[r].allocate(devices_[r], k.recv_count * sizeof(float));
      if (!e.ok()) {
        out.cells = error_row(fmt::format("cudaMalloc on GPU {}: {}", devices_[r], e.text));
        return out;
      }
    }
    auto fatal = [&](const GpuStatus& f, const std::string& phase) {
      drain_after_failure(&send, &recv);
      out.fatal = comms_.describe(f, what + phase);
      return out;
    };

    if (GpuStatus f = fill_send(ranks_, send, Clock::now() + spec_.timeout); !f.ok())
      return fatal(f, " (filling the buffers)");

    // Every wait allows the configured timeout, or ten times what its operations need at the
    // slowest link gpuvet expects when that is longer (4 GiB × 20 on a slow PCIe node).
    const double op_bus_bytes =
        static_cast<double>(std::max(k.send_count, k.recv_count)) * sizeof(float) * factor;
    auto deadline_for = [&](int ops) {
      const double floor_s = std::chrono::duration<double>(spec_.timeout).count();
      return Clock::now() +
             std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                 hw::collective_deadline_s(op_bus_bytes * ops, floor_s)));
    };
    // Warm-up.
    auto deadline = deadline_for(warmup);
    for (int i = 0; i < warmup; ++i)
      if (GpuStatus f = launch(lib_, spec_.op, comms_, ranks_, send, recv, k.param_count, deadline);
          !f.ok())
        return fatal(f, " (warm-up)");
    if (GpuStatus f = comms_.wait(streams_, deadline); !f.ok()) return fatal(f, " (warm-up)");

    // Timed loop: an event before the first op and after every op, on every stream.
    deadline = deadline_for(iterations);
    auto record = [&](int slot) -> GpuStatus {
      for (std::size_t r = 0; r < n; ++r) {
        cudaSetDevice(devices_[r]);
        if (cudaError_t e = cudaEventRecord(ranks_[r].events[slot], ranks_[r].stream.get());
            e != cudaSuccess)
          return gpu::at_rank(static_cast<int>(r), gpu::cuda_status("cudaEventRecord", e));
      }
      return {};
    };
    // Events only at chunk boundaries (4 chunks): an event between every op costs host time
    // per launch, which small, launch-bound collectives pay in full (measured on the H200:
    // 8.4 vs 7.2 µs per op at 512 KiB against nccl-tests, which times the whole loop once).
    const int chunk = std::max(1, iterations / 4);
    std::vector<int> marks = {0};  // op counts at which an event was recorded
    if (GpuStatus f = record(0); !f.ok()) return fatal(f, "");
    for (int i = 0; i < iterations; ++i) {
      if (GpuStatus f = launch(lib_, spec_.op, comms_, ranks_, send, recv, k.param_count, deadline);
          !f.ok())
        return fatal(f, "");
      if ((i + 1) % chunk == 0 || i + 1 == iterations) {
        if (GpuStatus f = record(static_cast<int>(marks.size())); !f.ok()) return fatal(f, "");
        marks.push_back(i + 1);
      }
    }
    if (GpuStatus f = comms_.wait(streams_, deadline); !f.ok()) return fatal(f, "");

    const int last = static_cast<int>(marks.size()) - 1;
    double time_us = 0;                    // max over ranks of mean per op
    std::vector<double> op_us(last, 0.0);  // per chunk: mean per op, max over ranks
    for (std::size_t r = 0; r < n; ++r) {
      float ms = 0;
      cudaSetDevice(devices_[r]);
      if (cudaError_t e = cudaEventElapsedTime(&ms, ranks_[r].events[0], ranks_[r].events[last]);
          e != cudaSuccess)
        return fatal(gpu::at_rank(static_cast<int>(r), gpu::cuda_status("cudaEventElapsedTime", e)),
                     "");
      time_us = std::max(time_us, static_cast<double>(ms) * 1000.0 / iterations);
      for (int i = 0; i < last; ++i) {
        if (cudaEventElapsedTime(&ms, ranks_[r].events[i], ranks_[r].events[i + 1]) == cudaSuccess)
          op_us[i] =
              std::max(op_us[i], static_cast<double>(ms) * 1000.0 / (marks[i + 1] - marks[i]));
      }
    }

    // Verification: NaN in every receive buffer, one more op, compare every value.
    deadline = deadline_for(1);
    for (std::size_t r = 0; r < n; ++r) {
      cudaSetDevice(devices_[r]);
      if (cudaError_t e =
              cudaMemsetAsync(recv[r].get(), 0xff, recv[r].bytes(), ranks_[r].stream.get());
          e != cudaSuccess)
        return fatal(gpu::at_rank(static_cast<int>(r), gpu::cuda_status("cudaMemsetAsync", e)),
                     " (check)");
    }
    if (GpuStatus f = launch(lib_, spec_.op, comms_, ranks_, send, recv, k.param_count, deadline);
        !f.ok())
      return fatal(f, " (check)");
    if (GpuStatus f = comms_.wait(streams_, deadline); !f.ok()) return fatal(f, " (check)");
    Wrong wrong;
    if (GpuStatus f =
            check_recv(ranks_, recv, Expect{spec_.op, static_cast<int>(n), k.param_count}, wrong);
        !f.ok())
      return fatal(f, " (check)");

    out.cells.resize(3);
    BenchCell& alg = out.cells[0];
    BenchCell& bus = out.cells[1];
    BenchCell& tim = out.cells[2];
    if (time_us > 0) {
      const double bytes = static_cast<double>(k.bytes);
      alg.value = bytes / (time_us * 1e3);  // B/µs / 1e3 = GB/s
      bus.value = *alg.value * factor;
      tim.value = time_us;
      std::vector<double> bw;
      bool all_positive = true;
      for (double t : op_us) {
        if (t <= 0)
          all_positive = false;
        else
          bw.push_back(bytes / (t * 1e3));
      }
      if (all_positive && op_us.size() > 1) {
        tim.spread_pct = spread_pct(op_us);
        alg.spread_pct = spread_pct(bw);
        if (factor > 0) bus.spread_pct = alg.spread_pct;
      }
    } else {
      for (auto& c : out.cells) c.error = "no time measured";
    }
    for (auto& c : out.cells) c.verified = wrong.count == 0;
    if (wrong.count > 0) {
      for (auto& c : out.cells) {
        c.error = fmt::format("{} wrong values", wrong.count);
        c.wrong_data = true;
      }
      m_.notes.push_back(
          fmt::format("{}: {} wrong values; first: {}", what, wrong.count, wrong.first));
    }
    return out;
  }

  const gpu::NcclLib& lib_;
  const CollectiveSpec& spec_;
  std::vector<int> devices_;
  BenchMatrix& m_;
  // Declared before comms_ so that communicators are aborted before streams go away.
  std::vector<RankRes> ranks_;
  std::vector<cudaStream_t> streams_;  // ranks_' streams, for the waits
  gpu::Communicators comms_;
};

void run_collective(const NcclEnv& env, const CollectiveSpec& spec, BenchMatrix& m) {
  if (!detail::bus_bw_factor(spec.op, 1)) {
    m.error = "unknown collective '" + spec.op + "' (all_reduce, all_gather, reduce_scatter)";
    return;
  }
  std::string why;
  auto lib = lib_for(env, why);
  if (!lib) {
    m.skipped = "NCCL unavailable: " + why;
    return;
  }
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    cudaGetLastError();
    m.skipped = e != cudaSuccess ? "no usable CUDA device: " + gpu::cuda_text(e) : "no CUDA device";
    return;
  }
  std::vector<int> devices = spec.gpus;
  if (devices.empty())
    for (int d = 0; d < count; ++d) devices.push_back(d);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= count) {
      m.error = fmt::format("GPU {} does not exist ({} CUDA devices)", devices[i], count);
      return;
    }
    if (std::find(devices.begin(), devices.begin() + i, devices[i]) != devices.begin() + i) {
      m.error = fmt::format("GPU {} is listed twice", devices[i]);
      return;
    }
  }
  if (spec.sizes.empty()) {
    m.error = "no message sizes given";
    return;
  }
  m.title =
      fmt::format("NCCL {} (float32{}), {} GPU{}", spec.op, spec.op == "all_gather" ? "" : ", sum",
                  devices.size(), devices.size() == 1 ? "" : "s");
  m.notes.push_back(gpu::nccl_keep_multicast_off());
  gpu::KeepCurrentDevice keep;
  CollectiveRun run(*lib, spec, std::move(devices), m);
  run.run();
}

// One 2-rank all-reduce of 1 MiB over GPUs a and b, its sum checked; any failure (setup,
// NCCL error, stall) is false. `wedged` gets the GPUs still busy after an abort.
bool pair_allreduce(const gpu::NcclLib& lib, int a, int b, std::chrono::milliseconds timeout,
                    std::vector<int>& wedged) {
  const std::vector<int> devices{a, b};
  const std::size_t floats = (std::size_t{1} << 20) / sizeof(float);
  std::vector<RankRes> ranks(2);
  for (int r = 0; r < 2; ++r)
    if (!ranks[r].create(devices[r], 0).ok()) return false;
  std::vector<gpu::DeviceMem> send(2), recv(2);
  for (int r = 0; r < 2; ++r) {
    if (!send[r].allocate(devices[r], floats * sizeof(float)).ok() ||
        !recv[r].allocate(devices[r], floats * sizeof(float)).ok())
      return false;
  }
  // After the buffers and streams: torn down first.
  gpu::Communicators comms(lib, devices, timeout);
  auto fail = [&]() {
    for (int r : comms.abort_and_drain(stream_lists(ranks), kDrainGrace)) {
      send[r].leak();
      recv[r].leak();
      wedged.push_back(devices[r]);
    }
    return false;
  };
  if (!fill_send(ranks, send, Clock::now() + timeout).ok()) return fail();
  if (!comms.init().ok()) return fail();
  const auto deadline = Clock::now() + timeout;
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(devices[r]);
    if (cudaMemsetAsync(recv[r].get(), 0xff, recv[r].bytes(), ranks[r].stream.get()) != cudaSuccess)
      return fail();
  }
  if (!launch(lib, "all_reduce", comms, ranks, send, recv, floats, deadline).ok()) return fail();
  if (!comms.wait(streams_of(ranks), deadline).ok()) return fail();
  Wrong wrong;
  if (!check_recv(ranks, recv, Expect{"all_reduce", 2, floats}, wrong).ok()) return fail();
  const bool ok = wrong.count == 0;
  (void)comms.close();  // a teardown failure aborts; the result stands
  return ok;
}

}  // namespace

// ------------------------------------------------------------------------------ public

NcclEnv nccl_load(const std::string& library_path) {
  NcclEnv env;
  try {
    env.library = gpu::nccl_library_name(library_path);
    std::string error;
    const gpu::NcclLib* lib = gpu::nccl_library(env.library, &error);
    if (!lib) {
      env.error = error;
      return env;
    }
    env.ok = true;
    env.library = lib->path;
    env.version = gpu::nccl_version_text(lib->version_code);
  } catch (const std::exception& e) {
    env.ok = false;
    env.error = std::string("loading NCCL: ") + e.what();
  } catch (...) {
    env.ok = false;
    env.error = "loading NCCL: unexpected failure";
  }
  return env;
}

BenchMatrix nccl_collective(const NcclEnv& env, const CollectiveSpec& spec) {
  BenchMatrix m;
  m.key = spec.op;
  m.unit = "GB/s";
  m.cols = {"algbw", "busbw", "time_us"};
  m.col_gpu = {-1, -1, -1};
  const auto t0 = Clock::now();
  try {
    run_collective(env, spec, m);
  } catch (const std::bad_alloc&) {
    m.error = "out of host memory";
  } catch (const std::exception& e) {
    m.error = std::string("unexpected failure: ") + e.what();
  } catch (...) {
    m.error = "unexpected failure";
  }
  m.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return m;
}

// nccl_transport stays empty: NCCL says which transport it chose only in its INFO log
// (NCCL_DEBUG=INFO), which gpuvet does not turn on or parse. a and b are CUDA ordinals, as
// for p2p_truth_cuda. After a stall that leaves a GPU busy even after ncclCommAbort, the
// remaining pairs with that GPU are not tried (nccl_allreduce_ok stays unset).
void p2p_truth_nccl(const NcclEnv& env, std::vector<P2PTruth>& truth,
                    std::chrono::milliseconds timeout) {
  try {
    std::string why;
    auto lib = lib_for(env, why);
    if (!lib) return;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
      cudaGetLastError();
      return;
    }
    gpu::nccl_keep_multicast_off();
    gpu::KeepCurrentDevice keep;
    std::vector<int> wedged;
    for (P2PTruth& t : truth) {
      if (t.a == t.b || t.a < 0 || t.b < 0 || t.a >= count || t.b >= count) continue;
      if (std::find(wedged.begin(), wedged.end(), t.a) != wedged.end() ||
          std::find(wedged.begin(), wedged.end(), t.b) != wedged.end())
        continue;
      t.nccl_allreduce_ok = pair_allreduce(*lib, t.a, t.b, timeout, wedged);
    }
  } catch (...) {
    // Nothing escapes; entries not reached keep nccl_allreduce_ok unset.
  }
}

}  // namespace gpuvet::bench
