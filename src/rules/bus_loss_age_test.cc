// "GPU has fallen off the bus" kernel-log lines are dated like Xids (rules_gpu.cc
// check_unresponsive): a recent one, or one of unknown time, is critical; one older than the
// Xid window or from an earlier boot is history (info). Log lines written for these tests in
// the driver's format (the NVRM "fallen off the bus" line and Xid 79, as dmesg and dmesg -T
// print them).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "gpuvet/diagnose.h"
#include "import/kernel_log.h"
#include "import/load.h"
#include "rules/rule_test_util.h"

namespace gpuvet::rules {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

testing::Out inventory(const Facts& f, const DiagnoseOptions& o) {
  Context c{f, o.thresholds, o};
  Emitter e;
  check_inventory(c, e);
  return {e.take_findings(), e.take_notes()};
}

const Finding* lost(const testing::Out& o) {
  for (const auto& f : o.findings)
    if (f.id == "gpu-unresponsive") return &f;
  return nullptr;
}

constexpr std::int64_t kNov3 = 1793700000;  // 2026-11-03 10:00:00 UTC

const char* kDmesgT =
    "[Tue Nov  3 10:00:00 2026] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n";

TEST(BusLossAge, OldLineIsHistoryRecentIsCritical) {
  const Facts f = import::import_text(kDmesgT, "dmesg-T.txt");
  ASSERT_EQ(f.kernel_log.fallen_off_bus_events.size(), 1u);
  ASSERT_TRUE(f.kernel_log.fallen_off_bus_events[0].unix_time);
  EXPECT_EQ(*f.kernel_log.fallen_off_bus_events[0].unix_time, kNov3);
  DiagnoseOptions o;
  o.now_unix = kNov3 + 31 * 86400;
  auto out = inventory(f, o);
  const Finding* old = lost(out);
  ASSERT_NE(old, nullptr) << testing::dump(out);
  EXPECT_EQ(old->severity, Severity::kInfo);
  EXPECT_THAT(old->evidence, HasSubstr("history: 31 days before now"));
  EXPECT_THAT(old->evidence, HasSubstr("last at 2026-11-03 10:00:00 UTC"));
  ASSERT_TRUE(old->decision_note);
  EXPECT_THAT(*old->decision_note, HasSubstr("History"));

  o.now_unix = kNov3 + 600;
  out = inventory(f, o);
  const Finding* recent = lost(out);
  ASSERT_NE(recent, nullptr);
  EXPECT_EQ(recent->severity, Severity::kCritical);
  EXPECT_THAT(recent->evidence, HasSubstr("10 min before now"));
  EXPECT_THAT(recent->evidence, Not(HasSubstr("history")));
}

// Bracket stamps are seconds since boot: the capture's uptime line dates them.
TEST(BusLossAge, UptimeDatesTheLineAndAnEarlierBootIsHistory) {
  const std::string line =
      "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, name=, GPU has fallen off the "
      "bus.\n";
  const DiagnoseOptions none;
  const std::string up40 =
      "$ uptime\n 10:15:01 up 40 days,  3:02,  1 user,  load average: 0.10, 0.20, 0.30\n"
      "$ dmesg\n" +
      line;
  auto out = inventory(import::import_text(up40, "t.txt"), none);
  ASSERT_NE(lost(out), nullptr) << testing::dump(out);
  EXPECT_EQ(lost(out)->severity, Severity::kInfo) << lost(out)->evidence;
  EXPECT_THAT(lost(out)->evidence, HasSubstr("before the capture"));
  // The Xid 79 of the same line is history too: the two findings agree.
  const Diagnosis d = diagnose(import::import_text(up40, "t.txt"));
  for (const auto& f : d.findings)
    if (f.id == "xid-error" || f.id == "gpu-unresponsive") {
      EXPECT_EQ(f.severity, Severity::kInfo) << f.id << ": " << f.evidence;
    }

  const std::string up25 = " 10:15:01 up 25 min,  1 user,  load average: 0.10, 0.20, 0.30\n" + line;
  out = inventory(import::import_text(up25, "t.txt"), none);
  ASSERT_NE(lost(out), nullptr);
  EXPECT_EQ(lost(out)->severity, Severity::kCritical) << lost(out)->evidence;

  // Up 10 min, but the line is at 1234 s: it was logged before this boot.
  const std::string up10 = " 10:15:01 up 10 min,  1 user,  load average: 0.10, 0.20, 0.30\n" + line;
  out = inventory(import::import_text(up10, "t.txt"), none);
  ASSERT_NE(lost(out), nullptr);
  EXPECT_EQ(lost(out)->severity, Severity::kInfo);
  EXPECT_THAT(lost(out)->evidence, HasSubstr("from an earlier boot"));

  // Live: the caller's uptime.
  DiagnoseOptions live;
  live.now_uptime_s = 1234.6 + 3 * 86400;
  out = inventory(import::import_text(line, "kmsg"), live);
  ASSERT_NE(lost(out), nullptr);
  EXPECT_EQ(lost(out)->severity, Severity::kInfo);
  EXPECT_THAT(lost(out)->evidence, HasSubstr("3 days before now"));
}

// No clock to date it by, or a GPU that does not answer now: critical as before.
TEST(BusLossAge, UnknownTimeOrAGpuNotAnsweringStaysCritical) {
  Facts f = import::import_text(
      "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
      "NVRM: GPU 0000:3b:00.0: GPU is on Board.\n",
      "paste.txt");
  ASSERT_EQ(f.kernel_log.fallen_off_bus.size(), 1u);
  DiagnoseOptions o;
  o.now_unix = kNov3;
  auto out = inventory(f, o);
  ASSERT_NE(lost(out), nullptr) << testing::dump(out);
  EXPECT_EQ(lost(out)->severity, Severity::kCritical);

  f = import::import_text(kDmesgT, "dmesg-T.txt");
  GpuFacts g;
  g.index = 0;
  g.pci_bus_id = "0000:3b:00.0";
  g.unresponsive = "GPU is lost";
  f.gpus.push_back(g);
  o.now_unix = kNov3 + 31 * 86400;
  out = inventory(f, o);
  ASSERT_NE(lost(out), nullptr);
  EXPECT_EQ(lost(out)->severity, Severity::kCritical);
  EXPECT_THAT(lost(out)->evidence, HasSubstr("did not answer"));
}

TEST(BusLossAge, ParserKeepsOneDatedEventPerLine) {
  KernelLog log;
  import::parse_kernel_log(
      "[  100.000000] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
      "[  100.100000] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, name=, GPU has fallen off the "
      "bus.\n",
      log);
  ASSERT_EQ(log.fallen_off_bus.size(), 2u);
  ASSERT_EQ(log.fallen_off_bus_events.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(log.fallen_off_bus_events[i].code, 79);
    EXPECT_EQ(log.fallen_off_bus_events[i].message, log.fallen_off_bus[i]);
  }
  EXPECT_DOUBLE_EQ(*log.fallen_off_bus_events[0].uptime_s, 100.0);
  EXPECT_DOUBLE_EQ(*log.fallen_off_bus_events[1].uptime_s, 100.1);
}

}  // namespace
}  // namespace gpuvet::rules
