#include "core/util.h"
#include "core/text_scan.h"
#include "core/toml_document.h"

#include <gtest/gtest.h>

namespace gpuvet {
namespace {

TEST(UtilTest, CpuListRoundTrip) {
  auto ids = parse_cpu_list("0-3,8,10-11");
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(format_cpu_list(*ids), "0-3,8,10-11");
  EXPECT_EQ(parse_cpu_list("0-6:2").value(), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_TRUE(parse_cpu_list("")->empty());
  EXPECT_TRUE(parse_cpu_list(" 5\n").has_value());
}

TEST(UtilTest, CpuListRejectsGarbage) {
  EXPECT_FALSE(parse_cpu_list("abc"));
  EXPECT_FALSE(parse_cpu_list("3-1"));
  EXPECT_FALSE(parse_cpu_list("0-4000000000"));  // would allocate gigabytes if trusted
  EXPECT_FALSE(parse_cpu_list("1,,2"));
  EXPECT_FALSE(parse_cpu_list("-1"));
}

TEST(UtilTest, CpuMask) {
  EXPECT_EQ(parse_cpu_mask("ff,00000001").value(),
            (std::vector<int>{0, 32, 33, 34, 35, 36, 37, 38, 39}));
  EXPECT_FALSE(parse_cpu_mask("zz"));
}

TEST(UtilTest, PciBusIdForms) {
  EXPECT_EQ(normalize_pci_bus_id("00000000:3B:00.0").value(), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("0000:3b:00.0").value(), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("PCI:0000:3b:00").value(), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("3b:00.1").value(), "0000:3b:00.1");
  EXPECT_EQ(normalize_pci_bus_id("00000001:C1:1F.7").value(), "0001:c1:1f.7");
  EXPECT_FALSE(normalize_pci_bus_id("GPU-1234"));
  EXPECT_FALSE(normalize_pci_bus_id("0000:3b:40.0"));  // device > 0x1f
  EXPECT_FALSE(normalize_pci_bus_id(""));
}

TEST(UtilTest, Numbers) {
  EXPECT_EQ(parse_int(" -12 ").value(), -12);
  EXPECT_FALSE(parse_int("12a"));
  EXPECT_EQ(parse_uint("18446744073709551615").value(), 18446744073709551615ull);
  EXPECT_DOUBLE_EQ(parse_double("26.562").value(), 26.562);
  EXPECT_FALSE(parse_double("N/A"));
}

TEST(UtilTest, SplitLinesHandlesCrlfAndNoFinalNewline) {
  auto lines = split_lines("a\r\nb\nc");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "a");
  EXPECT_EQ(lines[2], "c");
}

}  // namespace
// Catches: a stray continuation byte, an overlong form, a surrogate or a cut sequence let
// through (an XML or Prometheus reader then drops the whole file); valid text changed.
TEST(UtilTest, CtimeIsReadAsUtcAndAnythingElseIsRefused) {
  EXPECT_EQ(parse_ctime("Wed Jul 31 11:22:39 2024"), 1722424959);
  EXPECT_EQ(parse_ctime(" Mon Jul  1 09:05:00 2024 "), 1719824700);  // padded day, trimmed
  EXPECT_EQ(parse_ctime("Mon Jul 1 09:05:00 2024"), 1719824700);     // padding collapsed
  for (const char* bad :
       {"", "Wed Jul 31 11:22:39", "Wed Jul 31 11:22:39 2024 UTC", "Wed Jly 31 11:22:39 2024",
        "Xyz Jul 31 11:22:39 2024", "Wed Jul 32 11:22:39 2024", "Wed Jul 31 24:00:00 2024",
        "Wed Jul 31 11:2:39 2024", "Wed Jul 31 11:22:39 1969", "Wed Jul 031 11:22:39 2024",
        "Wed Jul 31 11:22:39 20x4"})
    EXPECT_FALSE(parse_ctime(bad).has_value()) << bad;
}

TEST(UtilTest, ValidUtf8ReplacesOnlyWhatIsNotUtf8) {
  const std::string ok = "GPU \xC3\xA9t\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x94\xA5 ASCII";
  EXPECT_EQ(valid_utf8(ok), ok);
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(valid_utf8("a\xFF"
                       "b"),
            "a" + r + "b");
  EXPECT_EQ(valid_utf8("\x80"), r);                          // stray continuation
  EXPECT_EQ(valid_utf8("\xC0\xAF"), r + r);                  // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), r + r + r);          // a surrogate
  EXPECT_EQ(valid_utf8("x\xE2\x86"), "x" + r + r);           // cut short
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), r + r + r + r);  // past U+10FFFF
}

}  // namespace gpuvet

// memmem on an empty view is undefined behaviour (its data() may be null): a sanitizer build
// stops on it, and a shorter haystack than the needle is never searched.
TEST(TextScanFind, AnEmptyOrShorterTextIsNotSearched) {
  EXPECT_EQ(gpuvet::text_scan::find(std::string_view{}, "NCCL"), gpuvet::text_scan::npos);
  EXPECT_EQ(gpuvet::text_scan::find("NCC", "NCCL"), gpuvet::text_scan::npos);
  EXPECT_EQ(gpuvet::text_scan::find("x NCCL", "NCCL", 2), 2u);
  EXPECT_EQ(gpuvet::text_scan::find("x NCCL", "NCCL", 3), gpuvet::text_scan::npos);
}

// toml++ 3.3.0 reaches __builtin_unreachable on some non-ASCII characters outside strings
// (fuzzing: the two bytes of U+0458). TOML allows none there: refused before toml++ sees them,
// with where; inside strings and comments they are text.
namespace gpuvet {
namespace {

TEST(TomlDocument, NonAsciiOutsideStringsAndCommentsIsRefusedWithWhere) {
  EXPECT_EQ(toml_non_ascii_outside_strings("\xd1\x98"), "1:1");
  EXPECT_EQ(toml_non_ascii_outside_strings("a = 1\ncaf\xc3\xa9 = 1\n"), "2:4");
  EXPECT_EQ(toml_non_ascii_outside_strings("x = \"a\\\"\" \xc3\xa9\n"), "1:11");
  for (const char* fine : {"name = \"caf\xc3\xa9\"\n", "# caf\xc3\xa9\nx = 1\n",
                           "x = 'caf\xc3\xa9'\n", "x = \"\"\"\ncaf\xc3\xa9 \"\n\"\"\"\n",
                           "x = '''\ncaf\xc3\xa9\n'''\n", "x = \"a\\\"caf\xc3\xa9\"\n"})
    EXPECT_FALSE(toml_non_ascii_outside_strings(fine).has_value()) << fine;
  const auto r = parse_toml("caf\xc3\xa9 = 1\n", "w.toml");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("w.toml:1:4: a non-ASCII character"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(parse_toml("name = \"caf\xc3\xa9\"\n", "w.toml").is_ok());
}

}  // namespace
}  // namespace gpuvet
