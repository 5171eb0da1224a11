// gunzip: what a gzip member holds, several members as one stream, and every bad input refused
// with its reason (not gzip, cut short, corrupt, over the limit).
#include <gtest/gtest.h>

#include <zlib.h>

#include <string>

#include "core/gzip.h"

namespace gpuvet {
namespace {

std::string gz(const std::string& plain) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, plain.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(Gzip, InflatesOneAndSeveralMembers) {
  const std::string a(300000, 'a'), b = "tail\n";
  auto one = gunzip(gz(a), 1 << 20);
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ(one.value(), a);
  auto two = gunzip(gz(a) + gz(b), 1 << 20);
  ASSERT_TRUE(two.is_ok());
  EXPECT_EQ(two.value(), a + b);
}

TEST(Gzip, RefusesBadInputWithItsReason) {
  EXPECT_FALSE(looks_gzipped("{\"a\": 1}"));
  EXPECT_EQ(gunzip("plain", 100).status().code(), StatusCode::kInvalidInput);
  const std::string whole = gz(std::string(100000, 'x'));
  auto cut = gunzip(whole.substr(0, whole.size() / 2), 1 << 20);
  ASSERT_FALSE(cut.is_ok());
  EXPECT_NE(cut.status().message().find("cut short"), std::string::npos);
  std::string corrupt = whole;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x55);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0x55);
  EXPECT_FALSE(gunzip(corrupt, 1 << 20).is_ok());
  // A bomb: 64 MiB of zeros compress to about 64 kB; the limit stops it at 1 MiB.
  auto bomb = gunzip(gz(std::string(64u << 20, '\0')), 1 << 20);
  ASSERT_FALSE(bomb.is_ok());
  EXPECT_NE(bomb.status().message().find("more than 1 MiB"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet
