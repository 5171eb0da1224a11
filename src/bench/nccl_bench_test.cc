// NCCL bench without a GPU: a loading failure reaches NcclEnv and skips the collectives
// instead of crashing, and the nccl-tests arithmetic (busbw factors, buffer counts per size)
// is right. The loader's own failures are tested in gpu/nccl_lib_test.cc.
#include "bench/nccl_bench.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "bench/registry.h"

namespace gpuvet::bench {
namespace {

TEST(NcclBench, MissingLibraryIsAClearError) {
  NcclEnv env = nccl_load("/nonexistent/libnccl.so.2");
  EXPECT_FALSE(env.ok);
  EXPECT_FALSE(env.version.has_value());
  EXPECT_NE(env.error.find("/nonexistent/libnccl.so.2"), std::string::npos) << env.error;
  EXPECT_NE(env.error.find("no such file"), std::string::npos) << env.error;
  EXPECT_EQ(env.library, "/nonexistent/libnccl.so.2");  // what was asked for, when it fails
}

TEST(NcclBench, CollectiveWithoutNcclIsSkippedNotCrashed) {
  NcclEnv env = nccl_load("/nonexistent/libnccl.so.2");
  CollectiveSpec spec;
  spec.sizes = {8, 1u << 20};
  BenchMatrix m = nccl_collective(env, spec);
  EXPECT_TRUE(m.skipped.has_value());
  EXPECT_TRUE(m.cells.empty());
  std::vector<P2PTruth> truth(1);
  truth[0].a = 0;
  truth[0].b = 1;
  p2p_truth_nccl(env, truth, std::chrono::milliseconds(1000));
  EXPECT_FALSE(truth[0].nccl_allreduce_ok.has_value());
}

TEST(NcclBench, UnknownCollectiveIsAnError) {
  CollectiveSpec spec;
  spec.op = "all_to_all";
  spec.sizes = {8};
  BenchMatrix m = nccl_collective(NcclEnv{}, spec);
  ASSERT_TRUE(m.error.has_value());
  EXPECT_NE(m.error->find("all_to_all"), std::string::npos);
}

TEST(NcclBench, BusBandwidthFactorsAreNcclTests) {
  // nccl-tests: all_reduce 2(n-1)/n, all_gather and reduce_scatter (n-1)/n.
  EXPECT_DOUBLE_EQ(*detail::bus_bw_factor("all_reduce", 8), 1.75);
  EXPECT_DOUBLE_EQ(*detail::bus_bw_factor("all_reduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(*detail::bus_bw_factor("all_reduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(*detail::bus_bw_factor("all_gather", 8), 0.875);
  EXPECT_DOUBLE_EQ(*detail::bus_bw_factor("reduce_scatter", 8), 0.875);
  EXPECT_DOUBLE_EQ(*detail::bus_bw_factor("reduce_scatter", 2), 0.5);
  // One rank: busbw 0, as nccl-tests prints it.
  EXPECT_DOUBLE_EQ(*detail::bus_bw_factor("all_reduce", 1), 0.0);
  EXPECT_DOUBLE_EQ(*detail::bus_bw_factor("all_gather", 1), 0.0);
  EXPECT_FALSE(detail::bus_bw_factor("all_reduce", 0));
  EXPECT_FALSE(detail::bus_bw_factor("broadcast", 8));
  // An 8-GPU H100 all_reduce at 8 GiB: algbw 274 GB/s is busbw 479.5 GB/s.
  EXPECT_NEAR(274.0 * *detail::bus_bw_factor("all_reduce", 8), 479.5, 1e-9);
}

TEST(NcclBench, CountsPerSizeFollowNcclTests) {
  // all_reduce: both buffers are `size`.
  auto ar = detail::collective_counts("all_reduce", 1u << 20, 8);
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->send_count, (1u << 20) / 4);
  EXPECT_EQ(ar->recv_count, (1u << 20) / 4);
  EXPECT_EQ(ar->param_count, (1u << 20) / 4);
  EXPECT_EQ(ar->bytes, 1u << 20);
  EXPECT_EQ(detail::collective_counts("all_reduce", 8, 8)->param_count, 2u);

  // all_gather: size is the output; each rank sends size/n.
  auto ag = detail::collective_counts("all_gather", 64u << 20, 8);
  ASSERT_TRUE(ag);
  EXPECT_EQ(ag->send_count, (8u << 20) / 4);
  EXPECT_EQ(ag->recv_count, (64u << 20) / 4);
  EXPECT_EQ(ag->param_count, ag->send_count);
  EXPECT_EQ(ag->bytes, 64u << 20);

  // reduce_scatter: size is the input; each rank receives size/n.
  auto rs = detail::collective_counts("reduce_scatter", 64u << 20, 8);
  ASSERT_TRUE(rs);
  EXPECT_EQ(rs->send_count, (64u << 20) / 4);
  EXPECT_EQ(rs->recv_count, (8u << 20) / 4);
  EXPECT_EQ(rs->param_count, rs->recv_count);
  EXPECT_EQ(rs->bytes, 64u << 20);

  // Chunks are whole 16 bytes: 1000 B over 3 ranks is 250 floats → 83 → 80 per rank.
  auto odd = detail::collective_counts("all_gather", 1000, 3);
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->param_count, 80u);
  EXPECT_EQ(odd->bytes, 960u);
  // Too small for a 16-byte chunk per rank: one float each instead of an empty op.
  auto tiny = detail::collective_counts("reduce_scatter", 8, 8);
  ASSERT_TRUE(tiny);
  EXPECT_EQ(tiny->param_count, 1u);
  EXPECT_EQ(tiny->bytes, 32u);

  EXPECT_FALSE(detail::collective_counts("all_reduce", 2, 8));  // below one float
  EXPECT_FALSE(detail::collective_counts("all_reduce", 8, 0));
  EXPECT_FALSE(detail::collective_counts("send_recv", 8, 2));
}

TEST(NcclBench, RowLabelsAreTheSizes) {
  // The rows of a collective matrix are the sizes actually run, labelled like nccl-tests' -b/-e.
  EXPECT_EQ(size_label(8), "8 B");
  EXPECT_EQ(size_label(1u << 20), "1 MiB");
  EXPECT_EQ(size_label(64u << 20), "64 MiB");
  EXPECT_EQ(size_label(detail::collective_counts("reduce_scatter", 8, 8)->bytes), "32 B");
}

}  // namespace
}  // namespace gpuvet::bench
