// read_small_file: whole files read exactly, the limit held, files that report no size
// (procfs) read whole.
#include "core/small_file.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

struct TempFile {
  TempFile()
      : path(
            (fs::temp_directory_path() / ("gpuvet-small-" + std::to_string(::getpid()))).string()) {
  }
  ~TempFile() { fs::remove(path); }
  std::string path;
};

TEST(SmallFile, AFileIsReadExactlyUpToTheLimitAndRefusedOneByteBeyond) {
  TempFile t;
  const std::string text(1000, 'a');
  std::ofstream(t.path) << text;
  auto at_limit = read_small_file(t.path, 1000, "test file");
  ASSERT_TRUE(at_limit.is_ok()) << at_limit.status().to_string();
  EXPECT_EQ(at_limit.value(), text);
  // Each read costs about its file's size, not the limit (a fleet ingest reads thousands).
  auto big_limit = read_small_file(t.path, std::size_t{64} << 20, "test file");
  ASSERT_TRUE(big_limit.is_ok());
  EXPECT_LT(big_limit.value().capacity(), std::size_t{1} << 20);
  auto over = read_small_file(t.path, 999, "test file");
  ASSERT_FALSE(over.is_ok());
  std::ofstream(t.path, std::ios::trunc);
  auto empty = read_small_file(t.path, 1000, "test file");
  ASSERT_TRUE(empty.is_ok());
  EXPECT_TRUE(empty.value().empty());
}

TEST(SmallFile, AFileThatReportsNoSizeIsStillReadWhole) {
  // procfs files say they are empty and are not: the buffer grows as the read goes.
  auto status = read_small_file("/proc/self/status", 1 << 20, "test file");
  ASSERT_TRUE(status.is_ok()) << status.status().to_string();
  EXPECT_NE(status.value().find("Name:"), std::string::npos);
  EXPECT_NE(status.value().find("VmRSS"), std::string::npos);
  auto small = read_small_file("/proc/self/status", 16, "test file");
  EXPECT_FALSE(small.is_ok());
}

}  // namespace
}  // namespace gpuvet
