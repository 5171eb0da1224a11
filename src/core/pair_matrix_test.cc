#include "core/pair_matrix.h"

#include <gtest/gtest.h>

namespace gpuvet {
namespace {

GpuPair pair(int a, int b, PathType path, std::optional<int> links = {}) {
  GpuPair p;
  p.a = a;
  p.b = b;
  p.path = path;
  p.nvlinks = links;
  return p;
}

TEST(PairMatrix, RowsAreTopoMCellsAndDecodeBackToThePairs) {
  std::vector<GpuPair> pairs = {pair(0, 1, PathType::kNVLink, 18), pair(0, 3, PathType::kSYS),
                                pair(1, 3, PathType::kUnknown)};
  pairs[2].p2p_read = P2PStatus::kChipsetNotSupported;
  const PairMatrix m = encode_pair_matrix(pairs);
  EXPECT_EQ(m.gpus, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(m.path, (std::vector<std::string>{"X NV18 SYS", "NV18 X ?", "SYS ? X"}));
  ASSERT_EQ(m.p2p.size(), 1u);  // only the capability some pair has
  EXPECT_EQ(m.p2p[0].first, "read");
  EXPECT_EQ(m.p2p[0].second, (std::vector<std::string>{"X - -", "- X CNS", "- CNS X"}));

  std::string problem;
  const auto back = decode_pair_matrix(m, problem);
  EXPECT_EQ(problem, "");
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].b, 1);
  EXPECT_EQ(back[0].path, PathType::kNVLink);
  EXPECT_EQ(back[0].nvlinks, 18);
  EXPECT_EQ(back[1].b, 3);
  EXPECT_EQ(back[1].path, PathType::kSYS);
  EXPECT_FALSE(back[1].p2p_read);
  EXPECT_EQ(back[2].a, 1);
  EXPECT_EQ(back[2].path, PathType::kUnknown);
  EXPECT_EQ(back[2].p2p_read, P2PStatus::kChipsetNotSupported);
}

TEST(PairMatrix, AMalformedMatrixGivesNoPairsAndSaysWhy) {
  PairMatrix m;
  m.gpus = {0, 1};
  m.path = {"X SYS", "SYS"};
  std::string problem;
  EXPECT_TRUE(decode_pair_matrix(m, problem).empty());
  EXPECT_EQ(problem, "path row 1: 1 cells for 2 GPUs");
  m.path = {"X WARP", "WARP X"};
  EXPECT_TRUE(decode_pair_matrix(m, problem).empty());
  EXPECT_EQ(problem, "path row 0: unknown cell \"WARP\"");
  m.path = {"X SYS"};
  EXPECT_TRUE(decode_pair_matrix(m, problem).empty());
  EXPECT_EQ(problem, "path: 1 rows for 2 GPUs");
  m.gpus.assign(kPairMatrixMaxGpus + 1, 0);
  EXPECT_TRUE(decode_pair_matrix(m, problem).empty());
  EXPECT_NE(problem.find("more than the 4096 read"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet
