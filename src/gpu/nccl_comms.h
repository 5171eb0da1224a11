// gpu/nccl_comms.h — the nonblocking NCCL communicator protocol that bench and scale share.
//
// One process drives every GPU: Communicators holds one communicator per device (rank i is
// devices[i]) and follows the protocol that keeps every NCCL use of gpuvet from hanging:
//   * init: ncclCommInitRankConfig with blocking = 0 (NCCL 2.14+) for every rank in one
//     group from this thread, then ncclCommGetAsyncError polled on each rank until none is
//     ncclInProgress, under the timeout. With an older NCCL, ncclCommInitAll, which cannot
//     be bounded (callers say so in a note: nonblocking() is false);
//   * wait: every later wait (an ncclGroupEnd that answered ncclInProgress, the completion of
//     queued work) polls the communicators and the ranks' streams against a deadline and
//     never blocks inside CUDA or NCCL;
//   * on a failure: abort (ncclCommAbort on every rank; NCCL's kernels see the flag and
//     return), then drain the streams for a short grace. The ranks still busy, or whose
//     stream is in error, are returned: their buffers must be leak()ed, since cudaFree would
//     wait for the stuck kernel;
//   * close: ncclCommFinalize polled under the timeout, then ncclCommDestroy; a failure on
//     the way aborts every communicator.
// Failures are GpuStatus pinned on ranks, and describe() words them, naming the stalled rank
// and its GPU: "timeout after 20 s: rank 3 (GPU 3) did not finish all_reduce of 64 MiB; also
// pending: rank 5 (GPU 5)", "communicator init: rank 1 (GPU 1): ncclSystemError: …".
//
// Ownership: a Communicators owns its communicators (destruction aborts whatever is still
// open; the good path calls close()) and borrows the NcclLib, a registry entry that lives for
// the whole process. Thread safety: init, close and abort from one thread; between init and
// close each handle may be used by one thread at a time (NCCL's rule for a communicator);
// the const members and the free functions are safe from any thread. Only built with
// GPUVET_CUDA; C++17 (CUDA sources include it).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/cuda_status.h"
#include "gpu/nccl_api.h"
#include "gpu/nccl_lib.h"

static_assert(std::is_same_v<gpuvet_cudaStream_t, cudaStream_t>,
              "nccl_api.h's stream type must be cudaStream_t");

namespace gpuvet::gpu {

using SteadyTime = std::chrono::steady_clock::time_point;

// ncclCommGetAsyncError of `comm`: ok, with *in_progress saying whether it is still
// ncclInProgress; an error when the query fails ("ncclCommGetAsyncError: …") or when the
// communicator has failed (NCCL's text, ncclGetLastError included).
[[nodiscard]] GpuStatus comm_state(const NcclLib& lib, ncclComm_t comm, bool* in_progress);

// Polls until every stream is idle; streams[r] is rank r's, on devices[r] (null: none). An
// error is pinned on its rank ("cudaStreamQuery: …"); a timeout on every rank still busy.
[[nodiscard]] GpuStatus wait_streams(const std::vector<int>& devices,
                                     const std::vector<cudaStream_t>& streams, SteadyTime deadline);

// After an abort: polls the streams of every rank (streams[r], on devices[r]; nulls skipped)
// for at most `grace`. Returns the ranks whose streams are still busy or in error (their work
// may never retire), in rank order: their buffers must be leaked.
std::vector<int> drain_streams(const std::vector<int>& devices,
                               const std::vector<std::vector<cudaStream_t>>& streams,
                               std::chrono::milliseconds grace);

// The text of a failure pinned on ranks of `devices` during `what` (see the file comment);
// `timeout` is the deadline a timeout missed. Empty for ok.
std::string rank_failure_text(const GpuStatus& s, const std::vector<int>& devices,
                              std::chrono::milliseconds timeout, const std::string& what);

class Communicators {
 public:
  // `timeout` bounds init, close and every settle; the caller's own waits pass deadlines.
  Communicators(const NcclLib& lib, std::vector<int> devices, std::chrono::milliseconds timeout);
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  ~Communicators() { abort(); }

  // See the file comment. On a failure the communicators that exist stay open until abort()
  // (or the destructor); with ncclCommInitAll failed handles are not trusted and are dropped.
  [[nodiscard]] GpuStatus init();

  // Polls until no communicator is ncclInProgress and every stream in `streams` (streams[r]:
  // rank r's; empty: communicators only) is idle, until `deadline`. Aborted communicators
  // are skipped.
  [[nodiscard]] GpuStatus wait(const std::vector<cudaStream_t>& streams, SteadyTime deadline) const;

  // Finalize (polled under the timeout) and destroy; any failure aborts everything.
  [[nodiscard]] GpuStatus close();

  // ncclCommAbort on every open communicator; the handles become null.
  void abort();

  // abort(), then drain_streams over the ranks' streams.
  std::vector<int> abort_and_drain(const std::vector<std::vector<cudaStream_t>>& streams,
                                   std::chrono::milliseconds grace);

  // rank_failure_text with these devices and this timeout.
  std::string describe(const GpuStatus& s, const std::string& what) const;

  const std::vector<ncclComm_t>& handles() const { return handles_; }
  const std::vector<int>& devices() const { return devices_; }
  bool nonblocking() const { return nonblocking_; }

 private:
  const NcclLib& lib_;
  std::vector<int> devices_;
  std::chrono::milliseconds timeout_;
  std::vector<ncclComm_t> handles_;
  bool nonblocking_ = false;
};

}  // namespace gpuvet::gpu
