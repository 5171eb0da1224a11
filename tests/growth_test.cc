// Inputs that grew super-linearly once, checked at two sizes (growth_util.h): a storm of Xid
// events on one GPU, and a session paste of many commands judged end to end.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "fixture_util.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
#include "growth_util.h"

namespace gpuvet {
namespace {

// n Xid 31 (page fault) events of one application channel in the same second, a faulting
// program's storm: each looked back through every earlier event for a cause of another code.
TEST(Growth, AnXidStormOnOneGpuIsJudgedInTimeThatGrowsWithIt) {
  auto work = [](std::size_t n) {
    std::string log;
    for (std::size_t i = 0; i < n; ++i)
      log += fmt::format(
          "[ 1000.{:06}] NVRM: Xid (PCI:0000:65:00): 31, pid=4242, name=python, Ch 00000010\n",
          i % 1000000);
    const Facts f = import_text(log, "dmesg.txt", {});
    EXPECT_EQ(f.kernel_log.xids.size(), n);
    EXPECT_FALSE(diagnose(f).findings.empty());
  };
  testing::expect_linear_growth("xid_storm", work, 2000, 8);
}

// The seed article's tasks 2 and 7 (a PCIe link and a kernel log, behind prompts) pasted again
// and again, as a long terminal session is.
TEST(Growth, ALongSessionPasteIsJudgedInTimeThatGrowsWithIt) {
  const std::string one =
      testing::read_file(std::string(GPUVET_TEST_DATA) + "/fixtures/article/task-02.txt") +
      testing::read_file(std::string(GPUVET_TEST_DATA) + "/fixtures/article/task-07.txt");
  auto work = [&](std::size_t n) {
    std::string paste;
    for (std::size_t i = 0; i < n; ++i) paste += one;
    const Facts f = import_text(paste, "session.txt", {});
    EXPECT_FALSE(diagnose(f).findings.empty());
  };
  testing::expect_linear_growth("session_paste", work, 200, 8);
}

}  // namespace
}  // namespace gpuvet
