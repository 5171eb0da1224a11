// GPU-only check (ctest label "gpu"): NCCL collectives on the real GPUs of this node give
// values with every result verified, the busbw factors hold, a 2-rank all-reduce works for
// every pair, and a deadline that is too short ends in a clean, named timeout, not a hang.
// Prints the matrices so the run can be recorded under docs/results/.
#include "bench/nccl_bench.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace gpuvet::bench {
namespace {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

void print(const BenchMatrix& m) {
  std::printf("%s  [%s]\n", m.title.c_str(), m.key.c_str());
  for (const auto& n : m.notes) std::printf("  note: %s\n", n.c_str());
  std::printf("  %-10s %12s %12s %12s\n", "size", "algbw GB/s", "busbw GB/s", "time us");
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    std::printf("  %-10s", m.rows[r].c_str());
    for (const auto& c : m.cells[r]) {
      if (c.error)
        std::printf(" %12s", c.error->c_str());
      else
        std::printf(" %12.2f", c.value.value_or(-1));
    }
    std::printf("\n");
  }
  if (m.error) std::printf("  ERROR: %s\n", m.error->c_str());
  std::printf("  wall %.0f ms\n", m.wall_ms);
}

class NcclBenchGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = nccl_load("");
    if (!env_.ok) GTEST_SKIP() << "NCCL unavailable: " << env_.error;
    gpus_ = device_count();
    if (gpus_ < 1) GTEST_SKIP() << "no CUDA device";
  }

  // Every row present, every cell a verified value without error; busbw = algbw × factor.
  void expect_good(const BenchMatrix& m, const CollectiveSpec& spec, int nranks) {
    ASSERT_FALSE(m.skipped) << *m.skipped;
    ASSERT_FALSE(m.error) << *m.error;
    ASSERT_EQ(m.cols, (std::vector<std::string>{"algbw", "busbw", "time_us"}));
    ASSERT_EQ(m.rows.size(), spec.sizes.size());
    ASSERT_EQ(m.cells.size(), spec.sizes.size());
    const double factor = *detail::bus_bw_factor(spec.op, nranks);
    for (std::size_t r = 0; r < m.rows.size(); ++r) {
      ASSERT_EQ(m.cells[r].size(), 3u);
      for (const auto& c : m.cells[r]) {
        EXPECT_FALSE(c.error) << m.rows[r] << ": " << *c.error;
        EXPECT_TRUE(c.verified) << m.rows[r];
        EXPECT_TRUE(c.value) << m.rows[r];
      }
      const auto& alg = m.cells[r][0];
      const auto& bus = m.cells[r][1];
      const auto& tim = m.cells[r][2];
      if (!alg.value || !bus.value || !tim.value) continue;
      EXPECT_GT(*alg.value, 0) << m.rows[r];
      EXPECT_GT(*tim.value, 0) << m.rows[r];
      EXPECT_NEAR(*bus.value, *alg.value * factor, 1e-9 * (1 + *alg.value)) << m.rows[r];
    }
    bool nvls_note = false;
    for (const auto& n : m.notes) nvls_note |= n.find("NCCL_NVLS_ENABLE") != std::string::npos;
    EXPECT_TRUE(nvls_note);
  }

  NcclEnv env_;
  int gpus_ = 0;
};

TEST_F(NcclBenchGpu, AllReduceOnEveryGpuIsVerified) {
  CollectiveSpec spec;
  spec.op = "all_reduce";
  spec.sizes = {8, std::size_t{1} << 20, std::size_t{64} << 20};
  BenchMatrix m = nccl_collective(env_, spec);
  print(m);
  expect_good(m, spec, gpus_);
  if (!m.error && m.rows.size() == 3) {
    EXPECT_EQ(m.rows[0], "8 B");
    EXPECT_EQ(m.rows[1], "1 MiB");
    EXPECT_EQ(m.rows[2], "64 MiB");
  }
}

TEST_F(NcclBenchGpu, AllGatherAndReduceScatterAreVerified) {
  for (const char* op : {"all_gather", "reduce_scatter"}) {
    CollectiveSpec spec;
    spec.op = op;
    spec.sizes = {std::size_t{1} << 20, std::size_t{64} << 20};  // multiples of 16 B × n
    BenchMatrix m = nccl_collective(env_, spec);
    print(m);
    expect_good(m, spec, gpus_);
  }
}

TEST_F(NcclBenchGpu, OneGpuExercisesThePathWithBusbwZero) {
  CollectiveSpec spec;
  spec.gpus = {0};
  spec.sizes = {std::size_t{1} << 20};
  BenchMatrix m = nccl_collective(env_, spec);
  print(m);
  expect_good(m, spec, 1);
  if (!m.cells.empty() && m.cells[0][1].value) {
    EXPECT_EQ(*m.cells[0][1].value, 0.0);
  }
}

TEST_F(NcclBenchGpu, TwoRankAllReduceWorksForEveryPair) {
  if (gpus_ < 2) GTEST_SKIP() << "needs 2 or more GPUs";
  std::vector<P2PTruth> truth;
  for (int a = 0; a < gpus_; ++a)
    for (int b = a + 1; b < gpus_; ++b) {
      P2PTruth t;
      t.a = a;
      t.b = b;
      truth.push_back(t);
    }
  const auto t0 = std::chrono::steady_clock::now();
  p2p_truth_nccl(env_, truth, std::chrono::seconds(20));
  std::printf(
      "p2p_truth_nccl: %zu pairs in %.0f ms\n", truth.size(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  for (const auto& t : truth) {
    ASSERT_TRUE(t.nccl_allreduce_ok) << t.a << "-" << t.b;
    EXPECT_TRUE(*t.nccl_allreduce_ok) << t.a << "-" << t.b;
    EXPECT_FALSE(t.nccl_transport);  // not learnt: NCCL_DEBUG is never set
  }
}

TEST_F(NcclBenchGpu, TooShortADeadlineIsANamedTimeoutAndLeavesNcclUsable) {
  CollectiveSpec spec;
  spec.sizes = {std::size_t{64} << 20};
  spec.timeout = std::chrono::milliseconds(1);
  const auto t0 = std::chrono::steady_clock::now();
  BenchMatrix m = nccl_collective(env_, spec);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print(m);
  EXPECT_LT(took_s, 60.0);
  ASSERT_TRUE(m.error) << "a 1 ms deadline for init + 64 MiB all-reduce should not be met";
  EXPECT_NE(m.error->find("timeout after 0.001 s: rank "), std::string::npos) << *m.error;
  EXPECT_NE(m.error->find("did not finish"), std::string::npos) << *m.error;

  // The aborted communicators are gone; a normal run works afterwards.
  spec.timeout = std::chrono::seconds(20);
  BenchMatrix again = nccl_collective(env_, spec);
  print(again);
  expect_good(again, spec, gpus_);
}

}  // namespace
}  // namespace gpuvet::bench
