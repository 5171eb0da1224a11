// bench/nccl_bench.h — NCCL collectives behind `gpuvet bench` (nccl_bench.cc).
//
// libnccl.so.2 is loaded with dlopen (a path from --nccl-lib / $GPUVET_NCCL_LIBRARY, else
// the loader's search; gpu/nccl_lib.h), with our own declarations of the few symbols used,
// so gpuvet runs without NCCL and says so. One process drives every GPU, one communicator
// per GPU in group calls. Each collective runs under a deadline (gpu/nccl_comms.h):
// nonblocking communicators polled with ncclCommGetAsyncError, aborted with ncclCommAbort
// past the deadline, and the stalled rank named. busbw uses the nccl-tests factors: all-reduce
// 2(n-1)/n, all-gather and reduce-scatter (n-1)/n. Results are checked against the expected sums.
// Only available when built with GPUVET_CUDA.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/bench.h"

namespace gpuvet::bench {

struct NcclEnv {
  bool ok = false;
  std::string library;                 // the path that was loaded
  std::string error;                   // why not: "libnccl.so.2 not found (set --nccl-lib …)"
  std::optional<std::string> version;  // "2.28.9"
};

NcclEnv nccl_load(const std::string& library_path);

struct CollectiveSpec {
  std::string op = "all_reduce";  // "all_reduce", "all_gather", "reduce_scatter"
  // Bytes, nccl-tests' "size": the larger buffer of a rank (all_reduce: each buffer,
  // all_gather: the output, reduce_scatter: the input); see detail::collective_counts.
  std::vector<std::size_t> sizes;
  std::vector<int> gpus;  // CUDA ordinals; empty: all
  int warmup = 5;
  int iterations = 20;
  std::chrono::milliseconds timeout{20000};
};

// Rows: the sizes ("8 B", "1 MiB", …; row_gpu all -1); columns "algbw" and "busbw" in GB/s
// (the matrix unit) and "time_us", the time per operation in µs. A row whose data is wrong
// has an error on every cell ("N wrong values"); a collective past its deadline has the
// stalled rank in the error.
BenchMatrix nccl_collective(const NcclEnv& env, const CollectiveSpec& spec);

// For every pair a<b of `truth`: a tiny 2-rank all-reduce whose result is checked, and
// the transport NCCL reports if it can be learnt (NCCL_DEBUG is not required).
void p2p_truth_nccl(const NcclEnv& env, std::vector<P2PTruth>& truth,
                    std::chrono::milliseconds timeout);

namespace detail {

// busbw = algbw × factor, as nccl-tests: all_reduce 2(n-1)/n, all_gather and
// reduce_scatter (n-1)/n (so 0 for one rank). nullopt for another op or nranks < 1.
std::optional<double> bus_bw_factor(std::string_view op, int nranks);

// Element counts (float32) for one nccl-tests "size", as its *GetCollByteCount do:
// all_reduce sends and receives size/4 floats; all_gather sends a chunk of size/4/n floats
// and receives n chunks; reduce_scatter sends n chunks and receives one. Chunks are rounded
// down to whole 16 bytes like nccl-tests (and up to one float when that leaves nothing, where
// nccl-tests would run an empty op). `bytes` is the size actually run: max(send, recv) × 4.
// algbw = bytes / time for every op. nullopt for another op, nranks < 1 or size < 4.
struct CollectiveCounts {
  std::size_t send_count = 0;   // floats in each rank's send buffer
  std::size_t recv_count = 0;   // floats in each rank's receive buffer
  std::size_t param_count = 0;  // the count given to NCCL
  std::size_t bytes = 0;
};
std::optional<CollectiveCounts> collective_counts(std::string_view op, std::size_t size_bytes,
                                                  int nranks);

}  // namespace detail

}  // namespace gpuvet::bench
