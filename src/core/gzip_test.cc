// gunzip: what a gzip member holds, several members as one stream, and every bad input refused
// with its reason (not gzip, cut short, corrupt, over the limit).
#include <gtest/gtest.h>

#include "gzip_test_util.h"

#include <string>

#include "core/gzip.h"

namespace gpuvet {
namespace {


TEST(Gzip, InflatesOneAndSeveralMembers) {
  const std::string a(300000, 'a'), b = "tail\n";
  auto one = gunzip(gpuvet::testing::gzip_of(a), 1 << 20);
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ(one.value(), a);
  auto two = gunzip(gpuvet::testing::gzip_of(a) + gpuvet::testing::gzip_of(b), 1 << 20);
  ASSERT_TRUE(two.is_ok());
  EXPECT_EQ(two.value(), a + b);
}

TEST(Gzip, RefusesBadInputWithItsReason) {
  EXPECT_FALSE(looks_gzipped("{\"a\": 1}"));
  EXPECT_EQ(gunzip("plain", 100).status().code(), StatusCode::kInvalidInput);
  const std::string whole = gpuvet::testing::gzip_of(std::string(100000, 'x'));
  auto cut = gunzip(whole.substr(0, whole.size() / 2), 1 << 20);
  ASSERT_FALSE(cut.is_ok());
  EXPECT_NE(cut.status().message().find("cut short"), std::string::npos);
  std::string corrupt = whole;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x55);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0x55);
  EXPECT_FALSE(gunzip(corrupt, 1 << 20).is_ok());
  // A bomb: 64 MiB of zeros compress to about 64 kB; the limit stops it at 1 MiB.
  auto bomb = gunzip(gpuvet::testing::gzip_of(std::string(64u << 20, '\0')), 1 << 20);
  ASSERT_FALSE(bomb.is_ok());
  EXPECT_NE(bomb.status().message().find("more than 1 MiB"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet
