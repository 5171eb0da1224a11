// The thresholds file: only a small regular file is read, and every value must be a finite
// number a rule can compare with.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "fixture_util.h"
#include "gpuvet/diagnose.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

using TempDirBase = testing::TempDir;
struct TempDir : TempDirBase {
  TempDir() : TempDirBase("gpuvet-thresholds") {}
};

std::string message_of(const Result<Thresholds>& r) {
  return r.is_ok() ? std::string("(accepted)") : r.status().message();
}

TEST(LoadThresholds, ReadsAGoodFile) {
  TempDir dir;
  std::ofstream(dir.file("good.toml")) << "[thresholds]\nhot_temp_c = 90\niowait_pct = 12.5\n";
  auto t = load_thresholds(dir.file("good.toml"));
  ASSERT_TRUE(t.is_ok()) << message_of(t);
  EXPECT_EQ(t.value().hot_temp_c, 90);
  EXPECT_EQ(t.value().iowait_pct, 12.5);
}

TEST(LoadThresholds, RefusesAFifoWithoutWaitingForAWriter) {
  TempDir dir;
  const std::string path = dir.file("fifo.toml");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  // A writer holding the FIFO open with a valid config in it: a load that read the FIFO would
  // wait for the writer to go (at most 20 s here) and then accept the config.
  std::atomic<bool> returned{false};
  std::thread writer([&] {
    const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK);
    if (fd < 0) return;
    const std::string config = "[thresholds]\nhot_temp_c = 90\n";
    [[maybe_unused]] auto n = ::write(fd, config.data(), config.size());
    for (int i = 0; i < 2000 && !returned; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::close(fd);
  });
  auto t = load_thresholds(path);
  returned = true;
  writer.join();
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("FIFO"), std::string::npos) << t.status().message();
}

TEST(LoadThresholds, RefusesADirectoryInsteadOfUsingTheDefaults) {
  TempDir dir;
  auto t = load_thresholds(dir.path());
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find(dir.path()), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("a directory"), std::string::npos) << t.status().message();
}

TEST(LoadThresholds, RefusesACharacterDeviceAtOnce) {
  auto t = load_thresholds("/dev/zero");
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("/dev/zero"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("character device"), std::string::npos)
      << t.status().message();
}

TEST(LoadThresholds, RefusesAFileOverOneMiB) {
  TempDir dir;
  {
    std::string text = "[thresholds]\nhot_temp_c = 90\n";
    text.resize(std::size_t{2} << 20, '\n');
    std::ofstream(dir.file("big.toml"), std::ios::binary) << text;
  }
  ASSERT_EQ(fs::file_size(dir.file("big.toml")), std::uintmax_t{2} << 20);
  auto t = load_thresholds(dir.file("big.toml"));
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("larger than 1 MiB"), std::string::npos)
      << t.status().message();
  // A huge sparse file is refused from its size, not read.
  const std::string sparse = dir.file("sparse.toml");
  std::ofstream(sparse).close();
  fs::resize_file(sparse, std::uintmax_t{8} << 30);
  auto s = load_thresholds(sparse);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("larger than 1 MiB"), std::string::npos)
      << s.status().message();
}

TEST(LoadThresholds, AcceptsAFileOfExactlyOneMiB) {
  TempDir dir;
  std::string text = "[thresholds]\nhot_temp_c = 90\n";
  text.resize(std::size_t{1} << 20, '\n');
  std::ofstream(dir.file("edge.toml"), std::ios::binary) << text;
  auto t = load_thresholds(dir.file("edge.toml"));
  ASSERT_TRUE(t.is_ok()) << message_of(t);
  EXPECT_EQ(t.value().hot_temp_c, 90);
}

TEST(LoadThresholds, NamesTheReasonAMissingFileCannotBeRead) {
  auto t = load_thresholds("/nonexistent/gpuvet.toml");
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("No such file or directory"), std::string::npos)
      << t.status().message();
}

TEST(ParseThresholds, RefusesNonFiniteValuesNamingTheKey) {
  for (const char* value : {"nan", "+nan", "-nan", "inf", "+inf", "-inf"}) {
    for (const char* key : {"clocks_below_fraction", "hot_temp_c"}) {
      const std::string text = std::string("[thresholds]\n") + key + " = " + value + "\n";
      auto t = parse_thresholds(text, "t.toml");
      ASSERT_FALSE(t.is_ok()) << text;
      EXPECT_NE(t.status().message().find(key), std::string::npos) << t.status().message();
      EXPECT_NE(t.status().message().find("finite"), std::string::npos) << t.status().message();
    }
  }
}

TEST(ParseThresholds, RefusesIntegerThresholdsOutOfRangeNamingTheKey) {
  for (const char* value : {"3000000000", "3e9", "1e300", "9223372036854775807"}) {
    const std::string text = std::string("[thresholds]\npcie_replay_warn_count = ") + value + "\n";
    auto t = parse_thresholds(text, "t.toml");
    ASSERT_FALSE(t.is_ok()) << text;
    EXPECT_NE(t.status().message().find("pcie_replay_warn_count"), std::string::npos)
        << t.status().message();
    EXPECT_NE(t.status().message().find("at most 2147483647"), std::string::npos)
        << t.status().message();
  }
  auto max = parse_thresholds("[thresholds]\npcie_replay_warn_count = 2147483647\n", "t.toml");
  ASSERT_TRUE(max.is_ok()) << message_of(max);
  EXPECT_EQ(max.value().pcie_replay_warn_count, 2147483647);
}

}  // namespace
}  // namespace gpuvet
