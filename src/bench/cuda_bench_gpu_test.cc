// GPU-only checks of the CUDA measurements (ctest label "gpu"; needs a GPU, a driver and a
// gpuvet built with GPUVET_CUDA). Sizes are small so the whole file runs in seconds; the
// bounds are far under an H200's figures (H2D ~54 GB/s, device-local copy ~2 TB/s,
// host latency ~1.2 µs), so they catch a broken method, not a slow machine.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <string>

#include "bench/cuda_bench.h"
#include "gpu/device_health.h"

namespace gpuvet::bench {
namespace {

Sizing quick() {
  Sizing s;
  s.bytes = 64u << 20;
  s.iterations = 4;
  s.samples = 3;
  return s;
}

int gpus() {
  static const CudaEnv env = cuda_init();
  return env.ok ? env.device_count : 0;
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
}

TEST(CudaBenchGpu, AllGpusAtOnce) {
  gpu::DeviceHealth health;
  ASSERT_GE(gpus(), 1);
  HostDeviceSpec spec;
  spec.all_gpus_at_once = true;
  const BenchMatrix m = host_device_bandwidth(health, spec, quick(), {}, false);
  print(m);
  expect_shape(m, gpus(), 1);
  for (int g = 0; g < gpus(); ++g) expect_good_gbps(m.cells[g][0], 1.0);
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
    EXPECT_EQ(*cell.error, "wrong data: 1 mismatched words");
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
  for (int g = 0; g < gpus(); ++g) expect_good_gbps(m.cells[g][0], 100.0);
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

  p2p_truth_cuda(health, truth, true);  // planted: the check must see it
  ASSERT_TRUE(truth[0].copy_verified);
  EXPECT_FALSE(*truth[0].copy_verified);
}

}  // namespace
}  // namespace gpuvet::bench
