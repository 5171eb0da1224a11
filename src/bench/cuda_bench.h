// bench/cuda_bench.h — the CUDA measurements behind `gpuvet bench` (cuda_bench.cu).
//
// Method (docs/measurement.md): buffers sized to saturate the link, a warm-up, then for each
// sample all streams of the test are held by a spin kernel on a host flag until every copy
// is queued, released together, and timed with CUDA events; the value is the median of the
// samples, the spread (max-min)/median. Host buffers are pinned (cudaHostAlloc) and first
// touched on the GPU's NUMA node when it is known. Data is verified after the copies. Any
// CUDA error fails only the cell (or the matrix) it happened in, with the error's name and
// text; nothing here calls exit(). A device that hits a sticky error is recorded in the
// run's gpu::DeviceHealth, which every measurement takes first: later cells that need it say
// why they did not run. Only available when built with GPUVET_CUDA.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpu/device_health.h"
#include "gpuvet/bench.h"

namespace gpuvet::bench {

struct CudaEnv {
  bool ok = false;
  std::string error;  // "no CUDA driver (libcuda.so.1 not found)", "cudaErrorNoDevice: …"
  int device_count = 0;
  int driver_version = 0;   // cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;  // cudaRuntimeGetVersion
  std::vector<std::string> names;
  std::vector<std::string> pci_bus_ids;  // "0000:00:06.0", to match CUDA ordinals with NVML
};

// Initialises the runtime (cudaGetDeviceCount) without aborting when there is no driver.
CudaEnv cuda_init();

enum class Engine { kCopyEngine, kSm };  // cudaMemcpyAsync vs a copy kernel

struct Sizing {
  std::size_t bytes = 256u << 20;  // per copy
  int iterations = 4;              // copies per sample, back to back
  int samples = 5;
};

struct HostDeviceSpec {
  bool to_device = true;
  Engine engine = Engine::kCopyEngine;
  bool pinned = true;
  bool bidirectional = false;     // both directions at once; the cell is the measured direction
  bool all_gpus_at_once = false;  // every GPU concurrently (shared switch/root port shows)
};

// One row per GPU ("GPU0" …), one column ("host"). numa_of_gpu[i] (-1 unknown) is where
// GPU i's host buffer is placed. plant_corruption flips one byte after the copy of GPU 0
// so tests can see verification fail.
BenchMatrix host_device_bandwidth(gpu::DeviceHealth& health, const HostDeviceSpec& spec,
                                  const Sizing& sizing, const std::vector<int>& numa_of_gpu,
                                  bool plant_corruption);

// Round trip of a tiny host↔device access by an SM kernel (pointer chase over mapped
// pinned memory), in µs; one row per GPU.
BenchMatrix host_device_latency(gpu::DeviceHealth& health, const Sizing& sizing);

// Device-local copy (HBM read + write), GB/s counted as bytes copied per second; one row
// per GPU.
BenchMatrix device_local_copy(gpu::DeviceHealth& health, const Sizing& sizing);

struct PeerSpec {
  Engine engine = Engine::kCopyEngine;
  bool read = true;  // the destination GPU pulls (read) or the source pushes (write)
  bool bidirectional = false;
};

// Every ordered pair (row = source GPU, column = destination); the diagonal is N/A. Pairs
// where peer access cannot be enabled are measured through pinned host memory and their
// cells say via_host.
BenchMatrix peer_bandwidth(gpu::DeviceHealth& health, const PeerSpec& spec, const Sizing& sizing);
BenchMatrix peer_latency(gpu::DeviceHealth& health, const Sizing& sizing);

// For every pair: cudaDeviceCanAccessPeer both ways, cudaDeviceEnablePeerAccess result, a
// peer copy with its data checked and its bandwidth. Fills the cuda_* and copy_* fields of
// the entries (one per pair a<b, already created by the caller from the facts).
void p2p_truth_cuda(gpu::DeviceHealth& health, std::vector<P2PTruth>& truth, bool plant_corruption);

}  // namespace gpuvet::bench
