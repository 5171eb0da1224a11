// gpu/nccl_comms.cc — the nonblocking communicator protocol (nccl_comms.h).
#include "gpu/nccl_comms.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

static_assert(sizeof(gpuvet_ncclConfig_v21400) == 24, "ncclConfig_v21400 is 24 bytes on LP64");
static_assert(sizeof(ncclUniqueId) == 128);

namespace gpuvet::gpu {
namespace {

using Clock = std::chrono::steady_clock;

// Sleeps between polls: 20 µs at first, doubling to 1 ms, so a quick wait stays quick and a
// long one does not spin.
class Backoff {
 public:
  void nap() {
    std::this_thread::sleep_for(nap_);
    nap_ = std::min<std::chrono::microseconds>(nap_ * 2, std::chrono::milliseconds(1));
  }

 private:
  std::chrono::microseconds nap_{20};
};

// The polling loop behind every wait: per rank the communicator first (when `lib` is given),
// its stream only once the communicator is idle. Never blocks in CUDA or NCCL.
GpuStatus poll_ranks(const NcclLib* lib, const std::vector<ncclComm_t>& comms,
                     const std::vector<int>& devices, const std::vector<cudaStream_t>& streams,
                     SteadyTime deadline) {
  Backoff backoff;
  for (;;) {
    std::vector<int> pending;
    const std::size_t n = streams.empty() ? comms.size() : streams.size();
    for (std::size_t r = 0; r < n; ++r) {
      const int rank = static_cast<int>(r);
      bool busy = false;
      if (lib && r < comms.size() && comms[r]) {
        GpuStatus s = comm_state(*lib, comms[r], &busy);
        if (!s.ok()) return at_rank(rank, std::move(s));
      }
      if (!busy && r < streams.size() && streams[r]) {
        (void)cudaSetDevice(devices[r]);
        const cudaError_t e = cudaStreamQuery(streams[r]);
        if (e == cudaErrorNotReady)
          busy = true;
        else if (e != cudaSuccess)
          return at_rank(rank, cuda_status("cudaStreamQuery", e));
      }
      if (busy) pending.push_back(rank);
    }
    if (pending.empty()) return {};
    if (Clock::now() >= deadline) return GpuStatus::timeout(std::move(pending));
    backoff.nap();
  }
}

}  // namespace

GpuStatus comm_state(const NcclLib& lib, ncclComm_t comm, bool* in_progress) {
  *in_progress = false;
  ncclResult_t async = ncclSuccess;
  if (ncclResult_t q = lib.comm_get_async_error(comm, &async); q != ncclSuccess)
    return GpuStatus::error("ncclCommGetAsyncError: " + lib.text(q, comm));
  if (async == ncclInProgress)
    *in_progress = true;
  else if (async != ncclSuccess)
    return GpuStatus::error(lib.text(async, comm));
  return {};
}

GpuStatus wait_streams(const std::vector<int>& devices, const std::vector<cudaStream_t>& streams,
                       SteadyTime deadline) {
  return poll_ranks(nullptr, {}, devices, streams, deadline);
}

std::vector<int> drain_streams(const std::vector<int>& devices,
                               const std::vector<std::vector<cudaStream_t>>& streams,
                               std::chrono::milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  std::vector<bool> settled(streams.size(), false);
  std::vector<int> leak;
  Backoff backoff;
  for (;;) {
    bool any_busy = false;
    for (std::size_t r = 0; r < streams.size(); ++r) {
      if (settled[r]) continue;
      bool busy = false;
      bool broken = false;
      bool current = false;
      for (cudaStream_t s : streams[r]) {
        if (!s) continue;
        if (!current) {
          (void)cudaSetDevice(devices[r]);
          current = true;
        }
        const cudaError_t e = cudaStreamQuery(s);
        if (e == cudaErrorNotReady) {
          busy = true;
        } else if (e != cudaSuccess) {
          (void)cudaGetLastError();
          broken = true;
        }
      }
      if (broken) leak.push_back(static_cast<int>(r));
      if (broken || !busy)
        settled[r] = true;
      else
        any_busy = true;
    }
    if (!any_busy) break;
    if (Clock::now() >= deadline) {
      for (std::size_t r = 0; r < streams.size(); ++r)
        if (!settled[r]) leak.push_back(static_cast<int>(r));
      break;
    }
    backoff.nap();
  }
  std::sort(leak.begin(), leak.end());
  return leak;
}

std::string rank_failure_text(const GpuStatus& s, const std::vector<int>& devices,
                              std::chrono::milliseconds timeout, const std::string& what) {
  auto named = [&](int rank) {
    if (rank >= 0 && rank < static_cast<int>(devices.size()))
      return fmt::format("{} (GPU {})", rank, devices[static_cast<std::size_t>(rank)]);
    return std::to_string(rank);
  };
  if (s.ok()) return {};
  if (s.is_timeout()) {
    if (s.ranks.empty())
      return fmt::format("timeout after {}: {} did not finish", seconds_text(timeout), what);
    std::string t = fmt::format("timeout after {}: rank {} did not finish {}",
                                seconds_text(timeout), named(s.ranks.front()), what);
    for (std::size_t i = 1; i < s.ranks.size(); ++i)
      t += (i == 1 ? "; also pending: rank " : ", ") + named(s.ranks[i]);
    return t;
  }
  const std::string text = s.is_stopped() && s.text.empty() ? "stopped" : s.text;
  if (!s.ranks.empty()) return fmt::format("{}: rank {}: {}", what, named(s.ranks.front()), text);
  return what + ": " + text;
}

// ------------------------------------------------------------------------------ Communicators

Communicators::Communicators(const NcclLib& lib, std::vector<int> devices,
                             std::chrono::milliseconds timeout)
    : lib_(lib), devices_(std::move(devices)), timeout_(timeout) {}

GpuStatus Communicators::init() {
  const int n = static_cast<int>(devices_.size());
  handles_.assign(devices_.size(), nullptr);
  nonblocking_ = lib_.nonblocking();
  if (!nonblocking_) {
    // NCCL < 2.14: blocking init, no deadline possible. On failure the handles are not
    // trusted (NCCL may have freed them) and are dropped, not aborted.
    const ncclResult_t r = lib_.comm_init_all(handles_.data(), n, devices_.data());
    if (r != ncclSuccess) {
      handles_.assign(devices_.size(), nullptr);
      return GpuStatus::error("ncclCommInitAll: " + lib_.text(r));
    }
    return {};
  }
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (ncclResult_t r = lib_.get_unique_id(&id); r != ncclSuccess)
    return GpuStatus::error("ncclGetUniqueId: " + lib_.text(r));
  gpuvet_ncclConfig_v21400 config{sizeof(gpuvet_ncclConfig_v21400), GPUVET_NCCL_CONFIG_MAGIC,
                                  GPUVET_NCCL_CONFIG_VERSION, /*blocking=*/0,
                                  GPUVET_NCCL_CONFIG_UNDEF_INT};
  if (ncclResult_t r = lib_.group_start(); r != ncclSuccess)
    return GpuStatus::error("ncclGroupStart: " + lib_.text(r));
  GpuStatus first;
  for (int rank = 0; rank < n; ++rank) {
    if (GpuStatus s = cuda_status("cudaSetDevice", cudaSetDevice(devices_[rank])); !s.ok()) {
      if (first.ok()) first = at_rank(rank, std::move(s));
      continue;
    }
    const ncclResult_t r = lib_.comm_init_rank_config(&handles_[rank], n, id, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress && first.ok())
      first = at_rank(rank, GpuStatus::error("ncclCommInitRankConfig: " + lib_.text(r)));
  }
  const ncclResult_t end = lib_.group_end();  // always paired with the start
  if (!first.ok()) return first;
  if (end != ncclSuccess && end != ncclInProgress)
    return GpuStatus::error("ncclGroupEnd (communicator init): " + lib_.text(end));
  return wait({}, Clock::now() + timeout_);
}

GpuStatus Communicators::wait(const std::vector<cudaStream_t>& streams, SteadyTime deadline) const {
  return poll_ranks(&lib_, handles_, devices_, streams, deadline);
}

GpuStatus Communicators::close() {
  if (nonblocking_) {
    for (std::size_t r = 0; r < handles_.size(); ++r) {
      if (!handles_[r]) continue;
      const ncclResult_t f = lib_.comm_finalize(handles_[r]);
      if (f != ncclSuccess && f != ncclInProgress) {
        GpuStatus s = at_rank(static_cast<int>(r), GpuStatus::error(lib_.text(f, handles_[r])));
        abort();
        return s;
      }
    }
    if (GpuStatus w = wait({}, Clock::now() + timeout_); !w.ok()) {
      abort();
      return w;
    }
  }
  GpuStatus first;
  for (std::size_t r = 0; r < handles_.size(); ++r) {
    if (!handles_[r]) continue;
    const ncclResult_t d = lib_.comm_destroy(handles_[r]);
    if (d != ncclSuccess && d != ncclInProgress && first.ok())
      first = at_rank(static_cast<int>(r), GpuStatus::error("ncclCommDestroy: " + lib_.text(d)));
    handles_[r] = nullptr;
  }
  return first;
}

void Communicators::abort() {
  for (auto& h : handles_) {
    if (h) (void)lib_.comm_abort(h);
    h = nullptr;
  }
}

std::vector<int> Communicators::abort_and_drain(
    const std::vector<std::vector<cudaStream_t>>& streams, std::chrono::milliseconds grace) {
  abort();
  return drain_streams(devices_, streams, grace);
}

std::string Communicators::describe(const GpuStatus& s, const std::string& what) const {
  return rank_failure_text(s, devices_, timeout_, what);
}

}  // namespace gpuvet::gpu
