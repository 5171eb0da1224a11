#include "core/small_file.h"

#include <gtest/gtest.h>

#include <string>

#include "fixture_util.h"

namespace gpuvet {
namespace {

TEST(SmallFileTest, ReadsAFileWhole) {
  testing::TempDir dir("gpuvet-small-file");
  const std::string text(100000, 'x');
  auto r = read_small_file(dir.write("a.json", text), std::size_t{1} << 20, "report file");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r.value(), text);
  auto empty = read_small_file(dir.write("empty.json", ""), 16, "report file");
  ASSERT_TRUE(empty.is_ok()) << empty.status().message();
  EXPECT_EQ(empty.value(), "");
}

TEST(SmallFileTest, AFileAtTheLimitReadsOneByteMoreIsRefused) {
  testing::TempDir dir("gpuvet-small-file");
  auto at = read_small_file(dir.write("at.toml", std::string(64, 'a')), 64, "baseline file");
  ASSERT_TRUE(at.is_ok()) << at.status().message();
  EXPECT_EQ(at.value().size(), 64u);
  auto over = read_small_file(dir.write("over.toml", std::string(65, 'a')), 64, "baseline file");
  ASSERT_FALSE(over.is_ok());
  EXPECT_NE(over.status().message().find("larger than 64 bytes"), std::string::npos)
      << over.status().message();
}

// A fleet ingest reads thousands of small reports under a 64 MiB limit: each read must cost
// about its file's size, not the limit.
TEST(SmallFileTest, MemoryFollowsTheFileNotTheLimit) {
  testing::TempDir dir("gpuvet-small-file");
  auto r = read_small_file(dir.write("gate.json", std::string(2000, '{')), std::size_t{64} << 20,
                           "report file");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r.value().size(), 2000u);
  EXPECT_LT(r.value().capacity(), std::size_t{1} << 20);
}

}  // namespace
}  // namespace gpuvet
