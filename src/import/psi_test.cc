#include "import/psi.h"

#include <gtest/gtest.h>

#include <string>

#include "import/host_tools.h"

namespace gpuvet::import {
namespace {

// The layout of Documentation/accounting/psi.rst (kernel 4.20+), with the figures of a
// direct-I/O write storm (dd oflag=direct) on a 16-core host.
constexpr const char* kGrepH =
    "/proc/pressure/cpu:some avg10=0.52 avg60=0.40 avg300=0.21 total=912345678\n"
    "/proc/pressure/cpu:full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    "/proc/pressure/io:some avg10=28.10 avg60=11.52 avg300=3.01 total=81234567\n"
    "/proc/pressure/io:full avg10=27.10 avg60=11.02 avg300=2.90 total=79234567\n"
    "/proc/pressure/memory:some avg10=0.00 avg60=0.00 avg300=0.00 total=1234\n"
    "/proc/pressure/memory:full avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n";

TEST(Psi, OneFileGivesAveragesAndTotals) {
  auto f = parse_psi_file(
      "some avg10=1.25 avg60=0.50 avg300=0.10 total=123456\n"
      "full avg10=0.75 avg60=0.25 avg300=0.05 total=65432\n");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(*f->averages.some_avg10, 1.25);
  EXPECT_DOUBLE_EQ(*f->averages.some_avg60, 0.50);
  EXPECT_DOUBLE_EQ(*f->averages.full_avg10, 0.75);
  EXPECT_DOUBLE_EQ(*f->averages.full_avg60, 0.25);
  EXPECT_EQ(*f->some_total_us, 123456u);
  EXPECT_EQ(*f->full_total_us, 65432u);
  EXPECT_FALSE(f->averages.some_window_pct);  // one reading has no window

  // Kernels before 5.13 print no full line for cpu.
  auto cpu = parse_psi_file("some avg10=3.00 avg60=2.00 avg300=1.00 total=99\n");
  ASSERT_TRUE(cpu);
  EXPECT_FALSE(cpu->averages.full_avg10);

  EXPECT_FALSE(parse_psi_file(""));
  EXPECT_FALSE(parse_psi_file("some avg10=abc avg60=1 total=2\n"));
  EXPECT_FALSE(parse_psi_file("some avg10=250.0 avg60=1 total=2\n"));  // not a share
  EXPECT_FALSE(parse_psi_file(std::string("\0\xff\x01some", 7)));
}

TEST(Psi, GrepDashHNamesEachResource) {
  EXPECT_GE(sniff_psi(kGrepH), 90);
  Facts f;
  ASSERT_TRUE(import_psi(kGrepH, f).is_ok());
  ASSERT_TRUE(f.host.pressure);
  const auto& p = *f.host.pressure;
  ASSERT_TRUE(p.psi_io);
  EXPECT_DOUBLE_EQ(*p.psi_io->some_avg10, 28.10);
  EXPECT_DOUBLE_EQ(*p.psi_io->full_avg10, 27.10);
  EXPECT_DOUBLE_EQ(*p.psi_io->some_avg60, 11.52);
  ASSERT_TRUE(p.psi_cpu);
  EXPECT_DOUBLE_EQ(*p.psi_cpu->some_avg10, 0.52);
  ASSERT_TRUE(p.psi_memory);
  EXPECT_DOUBLE_EQ(*p.psi_memory->some_avg10, 0.0);
  EXPECT_TRUE(p.cores.empty());  // PSI is not a per-core reading
  EXPECT_TRUE(f.notes.empty());
}

TEST(Psi, HeadersCommandLinesAndBarePathsNameTheLinesBelow) {
  const char* head =
      "==> /proc/pressure/cpu <==\n"
      "some avg10=4.00 avg60=3.00 avg300=2.00 total=10\n"
      "\n"
      "==> /proc/pressure/io <==\n"
      "some avg10=35.50 avg60=20.00 avg300=5.00 total=20\n"
      "full avg10=30.00 avg60=18.00 avg300=4.00 total=15\n";
  Facts a;
  ASSERT_TRUE(import_psi(head, a).is_ok());
  EXPECT_DOUBLE_EQ(*a.host.pressure->psi_cpu->some_avg10, 4.0);
  EXPECT_DOUBLE_EQ(*a.host.pressure->psi_io->some_avg10, 35.5);
  EXPECT_FALSE(a.host.pressure->psi_memory);

  const char* cat =
      "user@gpu07:~$ cat /proc/pressure/memory\n"
      "some avg10=12.00 avg60=8.00 avg300=2.00 total=500\n"
      "full avg10=6.00 avg60=4.00 avg300=1.00 total=300\n";
  Facts b;
  ASSERT_TRUE(import_psi(cat, b).is_ok());
  EXPECT_DOUBLE_EQ(*b.host.pressure->psi_memory->full_avg10, 6.0);
  EXPECT_FALSE(b.host.pressure->psi_io);

  const char* loop =
      "/proc/pressure/io\n"
      "some avg10=2.00 avg60=1.00 avg300=0.50 total=7\n"
      "full avg10=1.00 avg60=0.50 avg300=0.25 total=5\n";
  Facts c;
  ASSERT_TRUE(import_psi(loop, c).is_ok());
  EXPECT_DOUBLE_EQ(*c.host.pressure->psi_io->some_avg10, 2.0);
}

TEST(Psi, LinesWithoutTheirFileOrACgroupsAreNotTakenForTheHost) {
  // Which resource stalled is unknown: never guessed.
  Facts a;
  const Status s = import_psi(
      "some avg10=40.00 avg60=30.00 avg300=10.00 total=1\n"
      "full avg10=35.00 avg60=25.00 avg300=8.00 total=1\n",
      a);
  EXPECT_FALSE(s.is_ok());
  EXPECT_FALSE(a.host.pressure);
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes[0].find("grep -H . /proc/pressure/*"), std::string::npos) << a.notes[0];

  Facts b;
  EXPECT_FALSE(import_psi("/sys/fs/cgroup/job42/io.pressure:some avg10=90.00 avg60=80.00 "
                          "avg300=40.00 total=9\n",
                          b)
                   .is_ok());
  EXPECT_FALSE(b.host.pressure);
  ASSERT_FALSE(b.notes.empty());
  EXPECT_NE(b.notes[0].find("container"), std::string::npos) << b.notes[0];
}

TEST(Psi, OtherHostToolsAreNotPsi) {
  EXPECT_EQ(sniff_psi("Linux 5.15.0 (node7) \t01/15/2024 \t_x86_64_\t(96 CPU)\n\n"
                      "12:00:01 AM  CPU    %usr   %nice    %sys %iowait    %irq   %soft  "
                      "%steal  %guest  %gnice   %idle\n"),
            0);
  EXPECT_EQ(sniff_psi(""), 0);
  EXPECT_EQ(sniff_psi("something avg10=1.0 total=3\n"), 0);
  EXPECT_EQ(sniff_mpstat(kGrepH), 0);
}

}  // namespace
}  // namespace gpuvet::import
