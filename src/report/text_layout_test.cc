// Terminal layout: compact subject lists, token-safe wrapping, the width the CLI asks for.
#include "report/text_layout.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "gpuvet/report.h"

namespace gpuvet::report {
namespace {

std::string compact(std::vector<std::string> subjects) { return compact_subjects(subjects); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Stand-in for the rules' pair_subject, which this library layer cannot include.
std::string fmt_pair(int a, int b) {
  return "GPU" + std::to_string(a) + "-GPU" + std::to_string(b);
}

TEST(CompactSubjects, RunsOfGpusBecomeRanges) {
  EXPECT_EQ(compact({"GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7"}), "GPU0–7");
  EXPECT_EQ(compact({"GPU0", "GPU2", "GPU3"}), "GPU0,2–3");
  EXPECT_EQ(compact({"GPU0", "GPU1", "GPU3"}), "GPU0–1,3");
  EXPECT_EQ(compact({"GPU0", "GPU2"}), "GPU0,2");
  EXPECT_EQ(compact({"GPU1", "GPU2", "GPU3", "GPU5", "GPU7", "GPU8"}), "GPU1–3,5,7–8");
  // The last run ends where it ends, not one before or after.
  EXPECT_EQ(compact({"GPU0", "GPU1", "GPU2", "GPU4"}), "GPU0–2,4");
  EXPECT_EQ(compact({"GPU4", "GPU5", "GPU6"}), "GPU4–6");
}

TEST(CompactSubjects, OneGpuStaysAsItIs) {
  EXPECT_EQ(compact({"GPU3"}), "GPU3");
  EXPECT_EQ(compact({"GPU0"}), "GPU0");
  EXPECT_EQ(compact({}), "");
}

TEST(CompactSubjects, SortsByNumberAndDropsDuplicates) {
  EXPECT_EQ(compact({"GPU10", "GPU9", "GPU11"}), "GPU9–11");  // numbers, not "GPU10" < "GPU9"
  EXPECT_EQ(compact({"GPU3", "GPU1", "GPU3", "GPU2"}), "GPU1–3");
}

TEST(CompactSubjects, OtherSubjectsAreKeptAsTheyAreInTheirOrder) {
  EXPECT_EQ(compact({"pid 42"}), "pid 42");
  EXPECT_EQ(compact({"nvme0n1"}), "nvme0n1");
  EXPECT_EQ(compact({"nvme1n1", "nvme0n1", "eth0"}), "nvme1n1, nvme0n1, eth0");
  EXPECT_EQ(compact({"GPU0", "GPU1", "pid 24819", "pid 24820"}), "GPU0–1, pid 24819, pid 24820");
  // Not a GPU index: kept whole, not read as GPU1.
  EXPECT_EQ(compact({"GPU01", "GPU", "GPUx", "GPU-1"}), "GPU01, GPU, GPUx, GPU-1");
  EXPECT_EQ(compact({"0000:65:00.0", "host"}), "0000:65:00.0, host");
  // GPUs go where the first GPU was.
  EXPECT_EQ(compact({"pid 7", "GPU2", "host", "GPU1"}), "pid 7, GPU1–2, host");
}

TEST(CompactSubjects, CpusCompactLikeGpus) {
  EXPECT_EQ(compact({"CPU0", "CPU1", "CPU2", "CPU3", "CPU8"}), "CPU0–3,8");
  EXPECT_EQ(compact({"GPU0", "CPU0", "GPU1"}), "GPU0–1, CPU0");
}

TEST(CompactSubjects, PairsBecomeACountWhenThereAreMany) {
  EXPECT_EQ(compact({"GPU0-GPU1"}), "GPU0-GPU1");
  EXPECT_EQ(compact({"GPU0-GPU1", "GPU2-GPU3"}), "GPU0-GPU1, GPU2-GPU3");
  EXPECT_EQ(compact({"GPU0-GPU1", "GPU0-GPU2", "GPU1-GPU2"}), "all 3 pairs of GPU0–2");
  std::vector<std::string> all8;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) all8.push_back(fmt_pair(a, b));
  EXPECT_EQ(compact(all8), "all 28 pairs of GPU0–7");
  all8.pop_back();
  EXPECT_EQ(compact(all8), "27 pairs among GPU0–7");
  // Eight pairs of GPU0 with the others, as topology rules name them.
  EXPECT_EQ(compact({"GPU0-GPU1", "GPU0-GPU2", "GPU0-GPU3", "GPU0-GPU4", "GPU0-GPU5", "GPU0-GPU6",
                     "GPU0-GPU7", "GPU0-GPU8"}),
            "8 pairs among GPU0–8");
  EXPECT_EQ(compact({"GPU1-GPU0", "GPU0-GPU1", "GPU2-GPU3", "GPU4-GPU5"}),
            "3 pairs among GPU0–5");  // one pair written both ways counts once
  EXPECT_EQ(compact({"GPU0", "GPU1", "GPU0-GPU1"}), "GPU0–1, GPU0-GPU1");
}

TEST(DisplayWidth, CountsCodePointsNotBytes) {
  EXPECT_EQ(display_width("GPU0–7"), 6u);
  EXPECT_EQ(display_width("8× H100 · 3 °C"), 14u);
  EXPECT_EQ(display_width(""), 0u);
}

TEST(WrapText, KeepsEveryLineWithinTheWidth) {
  const std::string text =
      "Packets on the link had to be resent: a marginal link (riser, cable, slot, signal "
      "integrity). It costs bandwidth now and often precedes a GPU falling off the bus.";
  for (std::size_t width : {30u, 60u, 100u}) {
    const std::string wrapped = "  means:   " + wrap_text(text, width, 11, 11);
    const auto ls = lines(wrapped);
    for (const auto& l : ls)
      EXPECT_LE(display_width(l), width) << "width " << width << "\n" << wrapped;
    if (width < 100) {
      EXPECT_GT(ls.size(), 1u) << wrapped;
    }
    for (std::size_t i = 1; i < ls.size(); ++i)
      EXPECT_EQ(ls[i].rfind("           ", 0), 0u) << ls[i];
  }
  // Every word is still there, in order.
  std::string joined;
  for (const auto& l : lines(wrap_text(text, 30, 0, 0))) joined += (joined.empty() ? "" : " ") + l;
  EXPECT_EQ(joined, text);
}

TEST(WrapText, FillsTheLineAsFarAsItCan) {
  // "aaaa bbbb" is exactly 9 columns: it fits a width of 9, not of 8.
  EXPECT_EQ(wrap_text("aaaa bbbb", 9, 0, 0), "aaaa bbbb");
  EXPECT_EQ(wrap_text("aaaa bbbb", 8, 0, 2), "aaaa\n  bbbb");
  EXPECT_EQ(wrap_text("aaaa bbbb", 12, 3, 0), "aaaa bbbb");
  EXPECT_EQ(wrap_text("aaaa bbbb", 11, 3, 0), "aaaa\nbbbb");
}

TEST(WrapText, NeverBreaksALongToken) {
  const std::string path = "/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:10.0/config";
  const std::string wrapped = wrap_text("read " + path + " for the link", 40, 11, 11);
  EXPECT_NE(wrapped.find(path), std::string::npos) << wrapped;
  const auto ls = lines(wrapped);
  ASSERT_EQ(ls.size(), 3u) << wrapped;
  EXPECT_EQ(ls[0], "read");
  EXPECT_EQ(ls[1], std::string(11, ' ') + path);  // alone on its line, past the width
  EXPECT_EQ(ls[2], std::string(11, ' ') + "for the link");
  // Too long for any line right after a label: it stays beside the label.
  EXPECT_EQ(wrap_text(path, 40, 11, 11), path);
  // Fits at the indent but not after the label: moves down.
  EXPECT_EQ(wrap_text("0000:65:00.0", 20, 15, 4), "\n    0000:65:00.0");
}

TEST(WrapText, NewlinesInTheTextStartLinesAtTheIndent) {
  EXPECT_EQ(wrap_text("one\ntwo", 80, 0, 4), "one\n    two");
}

TEST(TextWidthWanted, TerminalThenColumnsThenDefaultClamped) {
  const auto width = [](int tty, const char* columns) {
    return text_width_wanted(WidthContext{tty, columns});
  };
  EXPECT_EQ(width(0, nullptr), 100);
  EXPECT_EQ(width(132, nullptr), 132);
  EXPECT_EQ(width(132, "80"), 132);  // the terminal's own size wins
  EXPECT_EQ(width(0, "80"), 80);
  EXPECT_EQ(width(0, "abc"), 100);
  EXPECT_EQ(width(0, "80x"), 100);
  EXPECT_EQ(width(0, ""), 100);
  EXPECT_EQ(width(40, nullptr), 60);
  EXPECT_EQ(width(0, "20"), 60);
  EXPECT_EQ(width(500, nullptr), 200);
  EXPECT_EQ(width(0, "-5"), 100);
  EXPECT_EQ(width(60, nullptr), 60);
  EXPECT_EQ(width(200, nullptr), 200);
}

}  // namespace
}  // namespace gpuvet::report
