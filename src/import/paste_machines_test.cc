#include "import/paste_machines.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "fixture_util.h"
#include "gpuvet/import.h"
#include "growth_util.h"

namespace gpuvet::import {
namespace {

using gpuvet::testing::fixture;
using gpuvet::testing::read_file;
using gpuvet::testing::TempDir;

std::string nvsmi(const std::string& name) { return read_file(fixture("capture/nvsmi/" + name)); }

// Real nvidia-smi tables: an 8× H100 HGX (driver 550) and a 10× Quadro RTX 8000 server
// (driver 470).
std::string h100_table() { return nvsmi("gpud-8x-h100-default-table-drv550.txt"); }
std::string quadro_table() { return nvsmi("gengwg-10x-quadro-rtx8000-default-table-drv470.txt"); }
// A real 8× H100 nvidia-smi -q (driver 535.161).
std::string h100_q() { return nvsmi("gpud-8x-h100-q-drv535.161-hw-power-brake-all-gpus.txt"); }

// The same -q as another box of the same model would print it: same bus ids and driver,
// other boards (every UUID and serial changed).
std::string other_h100_q() {
  std::string q = h100_q();
  for (std::size_t at = q.find("GPU-"); at != std::string::npos; at = q.find("GPU-", at + 4))
    q[at + 4] = q[at + 4] == 'f' ? '0' : 'f';
  for (std::size_t at = q.find("Serial Number"); at != std::string::npos;
       at = q.find("Serial Number", at + 1)) {
    const auto colon = q.find(": ", at);
    q[colon + 2] = q[colon + 2] == '9' ? '0' : '9';
  }
  return q;
}

Result<Facts> import_file(const std::string& text) {
  TempDir dir("gpuvet-paste-machines");
  dir.write("paste.txt", text);
  return import_path(dir.path() + "/paste.txt");
}

TEST(PasteMachines, TwoTablesOfDifferentGpuCountsAreTwoMachines) {
  const std::string paste = "node A:\n" + h100_table() + "\nnode B:\n" + quadro_table();
  const auto split = machines_in_paste(paste, "paste.txt");
  ASSERT_EQ(split.machines.size(), 2u);
  auto f = import_file(paste);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidInput);
  const std::string& m = f.status().message();
  EXPECT_NE(m.find("describe 2 different machines"), std::string::npos) << m;
  EXPECT_NE(m.find("machine 1 (8 GPUs by nvidia-smi table, driver 550.90.07)"), std::string::npos)
      << m;
  EXPECT_NE(m.find("machine 2 (10 GPUs by nvidia-smi table, driver 470.63.01)"), std::string::npos)
      << m;
  EXPECT_NE(m.find("paste.txt, lines 1–"), std::string::npos) << m;
  EXPECT_NE(m.find("nvidia-smi table lists 8 GPUs (0000:19:00.0"), std::string::npos) << m;
  EXPECT_NE(m.find("but 10 GPUs"), std::string::npos) << m;
  EXPECT_NE(m.find("one file per machine"), std::string::npos) << m;
  // The same through the public entry point for pastes (standard input).
  EXPECT_FALSE(import_paste(paste, "stdin").is_ok());
}

TEST(PasteMachines, TwoTablesBehindPromptsAreTwoMachines) {
  const std::string paste = "$ nvidia-smi\n" + h100_table() + "$ nvidia-smi\n" + quadro_table();
  EXPECT_EQ(machines_in_paste(paste, "p").machines.size(), 2u);
}

TEST(PasteMachines, OneTableShownTwiceIsOneMachine) {
  for (const std::string& paste :
       {h100_table() + "\n" + h100_table(),
        "$ nvidia-smi\n" + h100_table() + "$ nvidia-smi\n" + h100_table()}) {
    EXPECT_EQ(paste_segments(paste, "p").size(), 2u);
    EXPECT_LE(machines_in_paste(paste, "p").machines.size(), 1u);
    auto f = import_file(paste);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    EXPECT_EQ(f.value().gpus.size(), 8u);
  }
}

// A later snapshot of one box with a GPU gone (fallen off the bus): its bus ids all sit in
// the first listing, so it is the same machine with a fault, not a second machine.
TEST(PasteMachines, ATableWithOneGpuGoneIsTheSameMachine) {
  std::string seven = h100_table();
  const auto at = seven.find("|   7  NVIDIA H100");
  ASSERT_NE(at, std::string::npos);
  const auto end = seven.find("+---", at);
  seven.erase(at, seven.find('\n', end) + 1 - at);
  const std::string paste = "before:\n" + h100_table() + "after:\n" + seven;
  EXPECT_LE(machines_in_paste(paste, "p").machines.size(), 1u);
  EXPECT_TRUE(import_file(paste).is_ok());
}

TEST(PasteMachines, TwoQOutputsOfOtherBoardsAreTwoMachines) {
  const std::string paste = "node A:\n" + h100_q() + "\nnode B:\n" + other_h100_q();
  auto f = import_file(paste);
  ASSERT_FALSE(f.is_ok());
  const std::string& m = f.status().message();
  EXPECT_NE(m.find("describe 2 different machines"), std::string::npos) << m;
  EXPECT_NE(m.find("bus id 0000:19:00.0 holds GPU-"), std::string::npos) << m;
  // Two real -q of different 8× H100 boxes (other bus ids, other drivers).
  const std::string two_boxes =
      h100_q() + nvsmi("gpud-8x-h100-passthrough-q-drv535.183-pcie-replays.txt");
  EXPECT_EQ(machines_in_paste(two_boxes, "p").machines.size(), 2u);
}

TEST(PasteMachines, OneQShownTwiceIsOneMachine) {
  const std::string paste = h100_q() + "\n" + h100_q();
  EXPECT_EQ(paste_segments(paste, "p").size(), 2u);
  auto f = import_file(paste);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f.value().gpus.size(), 8u);
}

// A session of one machine (a table, -q, a topology matrix, a kernel log) is imported as before.
TEST(PasteMachines, OneMachinesSessionIsImported) {
  const std::string paste = "$ nvidia-smi\n" + h100_table() + "$ nvidia-smi -q\n" + h100_q() +
                            "$ dmesg | grep Xid\n[ 12.5] NVRM: Xid (PCI:0000:19:00): 79, pid=1, "
                            "name=x, GPU has fallen off the bus.\n";
  EXPECT_LE(machines_in_paste(paste, "p").machines.size(), 1u);
  EXPECT_TRUE(import_paste(paste, "p").is_ok());
  EXPECT_TRUE(import_file(paste).is_ok());
}

TEST(PasteMachines, SegmentsAreLabelledByTheirLines) {
  const std::string paste = "a\n$ nvidia-smi\n" + h100_table();
  const auto segments = paste_segments(paste, "t.txt");
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].label, "t.txt, lines 1–1");
  EXPECT_EQ(segments[1].label, "t.txt, lines 3–50");  // the table has no final newline
  EXPECT_EQ(segments[1].text.rfind("$ nvidia-smi\n", 0), 0u);
}

TEST(PasteMachines, LaterSegmentsAreNumberedFromTheStartOfTheWholePaste) {
  const std::string paste = "$ uptime\n 10:00 up 1 day\n$ nvidia-smi\n" + h100_table() +
                            "\n$ uptime\n 10:01 up 1 day\n\n$ uptime\nx\n";
  const auto segments = paste_segments(paste, "t.txt");
  ASSERT_EQ(segments.size(), 4u);
  EXPECT_EQ(segments[0].label, "t.txt, lines 2–2");
  EXPECT_EQ(segments[1].label, "t.txt, lines 4–51");
  EXPECT_EQ(segments[2].label, "t.txt, lines 53–54");
  EXPECT_EQ(segments[3].label, "t.txt, lines 56–56");
}

// A long session (a prompt every two lines: thousands of pieces) is numbered in one pass.
TEST(PasteMachines, NumberingTheSegmentsOfALongSessionGrowsLinearly) {
  auto session = [](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += fmt::format("$ cat /proc/uptime\n{}.25 99.5\n", i);
    return s;
  };
  gpuvet::testing::expect_linear_growth(
      "paste_segments",
      [&](std::size_t n) {
        const std::string text = session(n);
        EXPECT_EQ(paste_segments(text, "p").size(), n);
      },
      4000, 8);
}

}  // namespace
}  // namespace gpuvet::import
