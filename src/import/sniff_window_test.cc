// Every sniffer looks at its window only: given a huge text whose bytes outside
// sniff_head() and sniff_tail() cannot be read at all (the pages are mapped without
// access), each one answers without touching them. A sniffer that splits or scans the
// whole text dies on the first byte past its window.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/text_scan.h"
#include "import/importer.h"

namespace gpuvet::import {
namespace {

// `size` bytes of address space of which only the first and last `window` bytes are backed
// and filled with `fill`; the rest faults when read. Costs 2 × window of memory.
class GuardedText {
 public:
  GuardedText(std::size_t size, std::size_t window, char fill) : size_(size) {
    base_ = static_cast<char*>(
        ::mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (base_ == MAP_FAILED) {
      base_ = nullptr;
      return;
    }
    ::mprotect(base_, window, PROT_READ | PROT_WRITE);
    std::memset(base_, fill, window);
    ::mprotect(base_ + size_ - window, window, PROT_READ | PROT_WRITE);
    std::memset(base_ + size_ - window, fill, window);
  }
  ~GuardedText() {
    if (base_) ::munmap(base_, size_);
  }
  bool ok() const { return base_ != nullptr; }
  std::string_view view() const { return {base_, size_}; }

 private:
  char* base_ = nullptr;
  std::size_t size_;
};

constexpr std::size_t kHuge = std::size_t{512} << 20;  // the largest file --from reads

void expect_every_sniffer_stays_in_its_window(char fill) {
  static_assert(kSniffHeadBytes % 4096 == 0 && kSniffTailBytes == kSniffHeadBytes);
  GuardedText text(kHuge, kSniffHeadBytes, fill);
  ASSERT_TRUE(text.ok());
  for (const auto& imp : importers()) {
    EXPECT_EXIT(
        {
          (void)imp.sniff(text.view());
          std::_Exit(0);
        },
        ::testing::ExitedWithCode(0), "")
        << imp.format << " read past its sniff window";
  }
}

TEST(SniffWindowTest, EverySnifferReadsOnlyItsWindowOfAHugeTextOfNewlines) {
  expect_every_sniffer_stays_in_its_window('\n');
}

TEST(SniffWindowTest, EverySnifferReadsOnlyItsWindowOfOneHugeLine) {
  expect_every_sniffer_stays_in_its_window('a');
}

TEST(SniffWindowTest, SniffHeadAndTailDoNotOverlap) {
  const std::string small(100, 'x');
  EXPECT_EQ(sniff_head(small).size(), 100u);
  EXPECT_TRUE(sniff_tail(small).empty());
  const std::string mid(kSniffHeadBytes + 10, 'x');
  EXPECT_EQ(sniff_tail(mid).size(), 10u);
  EXPECT_EQ(sniff_tail(mid).data(), mid.data() + kSniffHeadBytes);
}

TEST(SniffWindowTest, LineReaderStopsAtItsByteBound) {
  const std::string text = "one\ntwo\r\nthree\nfour\n";
  text_scan::LineReader lines(text, 12);
  std::string_view line;
  ASSERT_TRUE(lines.next(line));
  EXPECT_EQ(line, "one");
  ASSERT_TRUE(lines.next(line));
  EXPECT_EQ(line, "two");
  ASSERT_TRUE(lines.next(line));
  EXPECT_EQ(line, "thr");  // cut at the bound
  EXPECT_FALSE(lines.next(line));
}

}  // namespace
}  // namespace gpuvet::import
