// GPU-only checks of the CUDA measurements (ctest label "gpu"; needs a GPU, a driver and a
// gpuvet built with GPUVET_CUDA). Sizes are small so the whole file runs in seconds. The
// figures are held to what the hardware can do, tightly enough that a factor of 2 in the
// method fails: host↔device within [0.7, 1.0] × the theoretical rate of the GPU's PCIe link
// (NVML's maximum generation and width; an H200 on Gen5 x16 reads ≈55 of 63 GB/s) and within
// [0.67, 1.5] × a plain cudaMemcpy timed here on the host clock; a device-local copy at most
// half the HBM peak (it reads and writes each byte; H200 ≈2.1 of 2.4 TB/s).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bench/cuda_bench.h"
#include "gpu/device_health.h"
#include "gpuvet/collect.h"
#include "gpuvet/env.h"
#include "hw/expectations.h"

namespace gpuvet::bench {
namespace {

Sizing quick() {
  Sizing s;
  s.bytes = 64u << 20;
  s.iterations = 4;
  s.samples = 3;
  return s;
}

const CudaEnv& cuda_env() {
  static const CudaEnv env = cuda_init();
  return env;
}

int gpus() { return cuda_env().ok ? cuda_env().device_count : 0; }

// This node's facts from NVML (no kernel log, hwloc or pressure sampling), read once.
const Facts& live_facts() {
  static const Facts facts = [] {
    const SystemEnv env;
    CollectOptions o;
    o.kernel_log = false;
    o.hwloc = false;
    o.pressure_window = std::chrono::milliseconds(0);
    return collect_facts(o, env).facts;
  }();
  return facts;
}

// The NVML facts of CUDA device `dev`, matched by PCI bus id; null when NVML does not list it.
const GpuFacts* nvml_gpu(int dev) {
  if (dev < 0 || dev >= static_cast<int>(cuda_env().pci_bus_ids.size())) return nullptr;
  const std::string& bus = cuda_env().pci_bus_ids[dev];
  for (const auto& g : live_facts().gpus)
    if (g.pci_bus_id && *g.pci_bus_id == bus) return &g;
  return nullptr;
}

// Theoretical per-direction GB/s of the PCIe link of CUDA device `dev`; 0 (and a failure)
// when NVML does not tell its generation and width.
double link_gbps(int dev) {
  const GpuFacts* g = nvml_gpu(dev);
  const auto link = g ? hw::expected_host_device(*g) : std::nullopt;
  if (!link) {
    ADD_FAILURE() << "no PCIe generation and width from NVML for CUDA device " << dev;
    return 0;
  }
  std::printf("GPU%d PCIe Gen%d x%d: %.2f GB/s theoretical\n", dev, link->gen, link->width,
              link->theoretical_gbps);
  return link->theoretical_gbps;
}

enum class PlainCopy { kToDevice, kToHost, kLocal };

// An independent probe: `bytes` from pinned host memory to device `dev`, back, or within the
// device, with plain cudaMemcpyAsync calls on one stream timed by two events around `copies`
// copies; the median of `samples`, in GB/s (1e9 B/s). Shares nothing with gpuvet's method (no
// start hold, no NUMA placement, no verification, its own buffers and arithmetic).
std::optional<double> plain_copy_gbps(int dev, std::size_t bytes, PlainCopy what, int copies,
                                      int samples) {
  if (cudaSetDevice(dev) != cudaSuccess) return std::nullopt;
  void* host = nullptr;
  void* a = nullptr;
  void* b = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  bool ok = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
            cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess &&
            cudaMalloc(&a, bytes) == cudaSuccess;
  if (ok && what == PlainCopy::kLocal) ok = cudaMalloc(&b, bytes) == cudaSuccess;
  if (ok && what != PlainCopy::kLocal) ok = cudaMallocHost(&host, bytes) == cudaSuccess;
  if (host) std::memset(host, 0x5a, bytes);
  void* dst = what == PlainCopy::kToDevice ? a : what == PlainCopy::kToHost ? host : b;
  const void* src = what == PlainCopy::kToDevice ? host : a;
  std::vector<double> gbps;
  if (ok)
    ok = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream) == cudaSuccess;  // warm-up
  for (int s = 0; ok && s < samples; ++s) {
    ok = cudaEventRecord(start, stream) == cudaSuccess;
    for (int c = 0; ok && c < copies; ++c)
      ok = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream) == cudaSuccess;
    ok = ok && cudaEventRecord(stop, stream) == cudaSuccess &&
         cudaEventSynchronize(stop) == cudaSuccess;
    float ms = 0;
    ok = ok && cudaEventElapsedTime(&ms, start, stop) == cudaSuccess;
    if (ok && ms > 0) gbps.push_back(static_cast<double>(bytes) * copies / (ms * 1e-3) / 1e9);
  }
  if (stream) cudaStreamSynchronize(stream);
  cudaFree(a);
  cudaFree(b);
  cudaFreeHost(host);
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  if (stream) cudaStreamDestroy(stream);
  if (!ok || gbps.empty()) return std::nullopt;
  std::sort(gbps.begin(), gbps.end());
  return gbps[gbps.size() / 2];
}

// The cell of GPU `dev` lies within [lo, hi] × its PCIe link's theoretical rate.
void expect_within_link(const BenchCell& cell, int dev, double lo, double hi) {
  const double link = link_gbps(dev);
  ASSERT_TRUE(cell.value);
  if (link <= 0) return;
  EXPECT_GE(*cell.value, lo * link) << "GPU" << dev << ": " << *cell.value << " of " << link;
  EXPECT_LE(*cell.value, hi * link) << "GPU" << dev << ": " << *cell.value << " of " << link;
}

// The pair (CUDA devices s, d) as the live facts know it (NVML indices, the path between them).
const GpuPair* live_pair(int s, int d) {
  const GpuFacts* a = nvml_gpu(s);
  const GpuFacts* b = nvml_gpu(d);
  if (!a || !b) return nullptr;
  for (const auto& p : live_facts().pairs)
    if ((p.a == a->index && p.b == b->index) || (p.a == b->index && p.b == a->index)) return &p;
  return nullptr;
}

// A peer figure lies within [lo × allowance, hi] × its path's theoretical rate
// (hw::expected_peer: NV# × the per-link rate, or the slower PCIe link, with the PHB/SYS
// allowance): a factor-of-2 error in bytes or time fails it, as the 1-GPU figures' bounds do.
void expect_within_peer_path(const BenchCell& cell, int s, int d, double lo, double hi) {
  ASSERT_TRUE(cell.value) << "GPU" << s << "→GPU" << d;
  const GpuPair* pair = live_pair(s, d);
  const auto want = pair ? hw::expected_peer(live_facts(), *pair) : std::nullopt;
  if (!want) {
    ADD_FAILURE() << "no path expectation for GPU" << s << "–GPU" << d << " from NVML";
    return;
  }
  std::printf("GPU%d→GPU%d: %.1f GB/s of %.1f theoretical (%s, allowance %.2f)\n", s, d,
              *cell.value, want->theoretical_gbps, want->basis.c_str(), want->allowance);
  EXPECT_GE(*cell.value, lo * want->allowance * want->theoretical_gbps)
      << "GPU" << s << "→GPU" << d;
  EXPECT_LE(*cell.value, hi * want->theoretical_gbps) << "GPU" << s << "→GPU" << d;
}

// gpuvet's figure for GPU0 agrees with the independent probe of the same size, in the same
// run, within [0.85, 1.15]: an error of 2 in bytes, copies or the median fails, and so does a
// quarter.
void expect_like_plain_copy(const BenchCell& cell, PlainCopy what, const Sizing& s) {
  ASSERT_TRUE(cell.value);
  const auto plain = plain_copy_gbps(0, s.bytes, what, s.iterations, 5);
  ASSERT_TRUE(plain) << "the plain cudaMemcpyAsync probe failed";
  std::printf("GPU0 %s: gpuvet %.2f GB/s, plain cudaMemcpyAsync %.2f GB/s (ratio %.3f)\n",
              what == PlainCopy::kToDevice ? "host → device"
              : what == PlainCopy::kToHost ? "device → host"
                                           : "device-local",
              *cell.value, *plain, *cell.value / *plain);
  EXPECT_GE(*cell.value / *plain, 0.85);
  EXPECT_LE(*cell.value / *plain, 1.15);
}

// The matrix on stdout, so the test log doubles as a record of the run.
void print(const BenchMatrix& m) {
  std::printf("%s [%s] %.0f ms\n", m.title.c_str(), m.unit.c_str(), m.wall_ms);
  for (std::size_t r = 0; r < m.cells.size(); ++r) {
    for (std::size_t c = 0; c < m.cells[r].size(); ++c) {
      const BenchCell& cell = m.cells[r][c];
      std::printf("  %s -> %s: %s%s%s\n", m.rows[r].c_str(), m.cols[c].c_str(),
                  cell.value ? std::to_string(*cell.value).c_str() : "-",
                  cell.verified ? " verified" : "",
                  cell.error ? (" ERROR " + *cell.error).c_str() : "");
    }
  }
  for (const auto& note : m.notes) std::printf("  note: %s\n", note.c_str());
}

void expect_shape(const BenchMatrix& m, int rows, int cols) {
  ASSERT_FALSE(m.error) << *m.error;
  ASSERT_FALSE(m.skipped) << *m.skipped;
  ASSERT_EQ(static_cast<int>(m.rows.size()), rows);
  ASSERT_EQ(static_cast<int>(m.row_gpu.size()), rows);
  ASSERT_EQ(static_cast<int>(m.cols.size()), cols);
  ASSERT_EQ(static_cast<int>(m.col_gpu.size()), cols);
  ASSERT_EQ(static_cast<int>(m.cells.size()), rows);
}

void expect_good_gbps(const BenchCell& cell, double at_least) {
  EXPECT_FALSE(cell.error) << *cell.error;
  ASSERT_TRUE(cell.value);
  EXPECT_GT(*cell.value, at_least);
  EXPECT_TRUE(cell.verified);
  ASSERT_TRUE(cell.spread_pct);
  EXPECT_GE(*cell.spread_pct, 0.0);
}

TEST(CudaBenchGpu, InitFindsTheDevices) {
  const CudaEnv env = cuda_init();
  ASSERT_TRUE(env.ok) << env.error;
  EXPECT_TRUE(env.error.empty());
  ASSERT_GE(env.device_count, 1);
  EXPECT_GT(env.driver_version, 0);
  EXPECT_GT(env.runtime_version, 0);
  ASSERT_EQ(static_cast<int>(env.names.size()), env.device_count);
  ASSERT_EQ(static_cast<int>(env.pci_bus_ids.size()), env.device_count);
  for (int i = 0; i < env.device_count; ++i) {
    EXPECT_FALSE(env.names[i].empty());
    const std::string& id = env.pci_bus_ids[i];  // "0000:00:06.0"
    ASSERT_EQ(id.size(), 12u) << id;
    EXPECT_EQ(id[4], ':');
    EXPECT_EQ(id[7], ':');
    EXPECT_EQ(id[10], '.');
    for (char c : id) EXPECT_FALSE(std::isupper(static_cast<unsigned char>(c))) << id;
  }
}

TEST(CudaBenchGpu, HostToDeviceCopyEnginePinned) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  HostDeviceSpec spec;
  spec.to_device = true;
  const BenchMatrix m = host_device_bandwidth(health, spec, quick(), {}, false);
  print(m);
  expect_shape(m, gpus(), 1);
  EXPECT_EQ(m.unit, "GB/s");
  EXPECT_EQ(m.col_gpu[0], -1);
  EXPECT_EQ(m.row_gpu[0], 0);
  ASSERT_TRUE(m.size_bytes);
  EXPECT_EQ(*m.size_bytes, 64u << 20);
  expect_good_gbps(m.cells[0][0], 5.0);
  for (int g = 0; g < gpus(); ++g) expect_within_link(m.cells[g][0], g, 0.7, 1.0);
  expect_like_plain_copy(m.cells[0][0], PlainCopy::kToDevice, quick());
}

TEST(CudaBenchGpu, DeviceToHostCopyEnginePinned) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  HostDeviceSpec spec;
  spec.to_device = false;
  const BenchMatrix m = host_device_bandwidth(health, spec, quick(), {0}, false);  // GPU0 on node 0
  print(m);
  expect_shape(m, gpus(), 1);
  expect_good_gbps(m.cells[0][0], 5.0);
  for (int g = 0; g < gpus(); ++g) expect_within_link(m.cells[g][0], g, 0.7, 1.0);
  expect_like_plain_copy(m.cells[0][0], PlainCopy::kToHost, quick());
}

TEST(CudaBenchGpu, HostToDeviceSmEngine) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  HostDeviceSpec spec;
  spec.engine = Engine::kSm;
  const BenchMatrix m = host_device_bandwidth(health, spec, quick(), {}, false);
  print(m);
  expect_shape(m, gpus(), 1);
  expect_good_gbps(m.cells[0][0], 5.0);
  for (int g = 0; g < gpus(); ++g) expect_within_link(m.cells[g][0], g, 0.7, 1.0);
  expect_like_plain_copy(m.cells[0][0], PlainCopy::kToDevice, quick());
}

TEST(CudaBenchGpu, BidirectionalReportsTheOtherDirectionInNotes) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  HostDeviceSpec spec;
  spec.bidirectional = true;
  const BenchMatrix m = host_device_bandwidth(health, spec, quick(), {}, false);
  print(m);
  expect_shape(m, gpus(), 1);
  expect_good_gbps(m.cells[0][0], 5.0);
  // Each direction shares the link's overheads with the other: at least half its rate.
  for (int g = 0; g < gpus(); ++g) expect_within_link(m.cells[g][0], g, 0.5, 1.0);
  bool other = false;
  for (const auto& note : m.notes)
    if (note.rfind("GPU0: device → host at the same time: ", 0) == 0) other = true;
  EXPECT_TRUE(other);
}

TEST(CudaBenchGpu, PageableHostToDevice) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  HostDeviceSpec spec;
  spec.pinned = false;
  const BenchMatrix m = host_device_bandwidth(health, spec, quick(), {}, false);
  print(m);
  expect_shape(m, gpus(), 1);
  expect_good_gbps(m.cells[0][0], 1.0);
  // Staged through pinned buffers: never faster than the link.
  for (int g = 0; g < gpus(); ++g) expect_within_link(m.cells[g][0], g, 0.0, 1.0);
}

TEST(CudaBenchGpu, AllGpusAtOnce) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  HostDeviceSpec spec;
  spec.all_gpus_at_once = true;
  const BenchMatrix m = host_device_bandwidth(health, spec, quick(), {}, false);
  print(m);
  expect_shape(m, gpus(), 1);
  for (int g = 0; g < gpus(); ++g) {
    expect_good_gbps(m.cells[g][0], 1.0);
    expect_within_link(m.cells[g][0], g, 0.0, 1.0);  // host memory may limit the sum
  }
}

TEST(CudaBenchGpu, PlantedCorruptionIsReportedAsWrongData) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  for (bool to_device : {true, false}) {
    HostDeviceSpec spec;
    spec.to_device = to_device;
    const BenchMatrix m = host_device_bandwidth(health, spec, quick(), {}, true);
    print(m);
    expect_shape(m, gpus(), 1);
    const BenchCell& cell = m.cells[0][0];
    EXPECT_FALSE(cell.verified);
    ASSERT_TRUE(cell.error);
    // Planted in the middle sample, which the next sample would have overwritten: only a
    // check after every sample sees it.
    EXPECT_EQ(*cell.error, "wrong data: 1 mismatched words in 1 of 3 samples");
    EXPECT_TRUE(cell.wrong_data);
    EXPECT_TRUE(cell.value);  // the figure is kept
    for (int g = 1; g < gpus(); ++g) EXPECT_TRUE(m.cells[g][0].verified) << g;
  }
}

TEST(CudaBenchGpu, DeviceLocalCopy) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  Sizing s = quick();
  s.bytes = 512u << 20;  // well past L2
  const BenchMatrix m = device_local_copy(health, s);
  print(m);
  expect_shape(m, gpus(), 1);
  for (int g = 0; g < gpus(); ++g) {
    expect_good_gbps(m.cells[g][0], 100.0);
    // A copy reads and writes every byte and counts it once: at most half the HBM peak, and
    // a healthy GPU gets well over half of that (H200: ≈2120 of 2400 GB/s).
    const auto mem = hw::expected_device_memory(cuda_env().names[g]);
    if (!mem) {
      std::printf("GPU%d %s: no HBM figure in the table; only the lower bound\n", g,
                  cuda_env().names[g].c_str());
      continue;
    }
    ASSERT_TRUE(m.cells[g][0].value);
    std::printf("GPU%d local copy %.1f GB/s of %.1f (HBM peak %.1f / 2)\n", g, *m.cells[g][0].value,
                mem->copy_gbps, mem->peak_gbps);
    EXPECT_LE(*m.cells[g][0].value, mem->copy_gbps);
    EXPECT_GE(*m.cells[g][0].value, 0.6 * mem->copy_gbps);
  }
  expect_like_plain_copy(m.cells[0][0], PlainCopy::kLocal, s);
}

// nvbandwidth's sizes (512 MiB × 16 copies × 3 samples), as --match nvbandwidth runs them,
// agree with the independent probe too.
TEST(CudaBenchGpu, AtNvbandwidthSizesHostToDeviceAgreesWithThePlainProbe) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  const Sizing s{kNvbandwidthBufferBytes, kNvbandwidthLoopCount, kNvbandwidthSamples};
  HostDeviceSpec spec;
  const BenchMatrix m = host_device_bandwidth(health, spec, s, {}, false);
  print(m);
  expect_shape(m, gpus(), 1);
  expect_good_gbps(m.cells[0][0], 5.0);
  expect_like_plain_copy(m.cells[0][0], PlainCopy::kToDevice, s);
}

TEST(CudaBenchGpu, HostDeviceLatency) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  const BenchMatrix m = host_device_latency(health, quick());
  print(m);
  expect_shape(m, gpus(), 1);
  EXPECT_EQ(m.unit, "us");
  for (int g = 0; g < gpus(); ++g) {
    const BenchCell& cell = m.cells[g][0];
    EXPECT_FALSE(cell.error) << *cell.error;
    ASSERT_TRUE(cell.value);
    EXPECT_GT(*cell.value, 0.1);
    EXPECT_LT(*cell.value, 100.0);
    EXPECT_TRUE(cell.verified);
  }
}

TEST(CudaBenchGpu, PeerTestsSkipWithOneGpu) {
  gpu::DeviceHealth health;
  if (gpus() != 1) GTEST_SKIP() << "machine has " << gpus() << " GPUs";
  const BenchMatrix bw = peer_bandwidth(health, PeerSpec{}, quick());
  ASSERT_TRUE(bw.skipped);
  EXPECT_EQ(*bw.skipped, "needs 2 or more GPUs");
  EXPECT_FALSE(bw.error);
  const BenchMatrix lat = peer_latency(health, quick());
  ASSERT_TRUE(lat.skipped);
  EXPECT_FALSE(lat.error);
}

TEST(CudaBenchGpu, PeerBandwidthWithTwoOrMoreGpus) {
  gpu::DeviceHealth health;
  if (gpus() < 2) GTEST_SKIP() << "needs 2 or more GPUs";
  const BenchMatrix m = peer_bandwidth(health, PeerSpec{}, quick());
  print(m);
  expect_shape(m, gpus(), gpus());
  for (int s = 0; s < gpus(); ++s) {
    for (int d = 0; d < gpus(); ++d) {
      const BenchCell& cell = m.cells[s][d];
      if (s == d) {
        EXPECT_FALSE(cell.value);
        EXPECT_FALSE(cell.error);
      } else {
        expect_good_gbps(cell, 1.0);
        expect_within_peer_path(cell, s, d, 0.3, 1.05);
      }
    }
  }
}

TEST(CudaBenchGpu, P2PTruthWithTwoOrMoreGpus) {
  gpu::DeviceHealth health;
  if (gpus() < 2) GTEST_SKIP() << "needs 2 or more GPUs";
  std::vector<P2PTruth> truth(1);
  truth[0].a = 0;
  truth[0].b = 1;
  p2p_truth_cuda(health, truth, false);
  EXPECT_TRUE(truth[0].cuda_can_access.has_value());  // true or false: the machine decides
  ASSERT_TRUE(truth[0].copy_verified);
  EXPECT_TRUE(*truth[0].copy_verified);
  ASSERT_TRUE(truth[0].copy_gbps);
  EXPECT_GT(*truth[0].copy_gbps, 1.0);
  BenchCell copy;
  copy.value = *truth[0].copy_gbps;
  // One verified copy, not a tuned loop: a looser floor, the same ceiling.
  expect_within_peer_path(copy, 0, 1, 0.1, 1.05);

  p2p_truth_cuda(health, truth, true);  // planted: the check must see it
  ASSERT_TRUE(truth[0].copy_verified);
  EXPECT_FALSE(*truth[0].copy_verified);
}

}  // namespace
}  // namespace gpuvet::bench
