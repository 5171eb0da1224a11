#include "probe/pressure.h"

#include <gtest/gtest.h>

#include "fakes/file_systems.h"

#include <map>
#include <set>

namespace gpuvet::probe {
namespace {

using namespace gpuvet::testing;  // NOLINT: test fakes

CpuTimes cpu_times(int cpu, std::uint64_t user, std::uint64_t idle, std::uint64_t iowait,
                   std::uint64_t steal) {
  CpuTimes t;
  t.cpu = cpu;
  t.user = user;
  t.idle = idle;
  t.iowait = iowait;
  t.steal = steal;
  return t;
}

const CpuCoreLoad* core(const HostPressure& p, int cpu) {
  for (const auto& c : p.cores) {
    if (c.cpu == cpu) return &c;
  }
  return nullptr;
}
const DiskLoad* disk(const HostPressure& p, const std::string& name) {
  for (const auto& d : p.disks) {
    if (d.device == name) return &d;
  }
  return nullptr;
}
const NicLoad* nic(const HostPressure& p, const std::string& name) {
  for (const auto& n : p.nics) {
    if (n.device == name) return &n;
  }
  return nullptr;
}

// Two hand-written snapshots one second apart.
PressureSnapshot before_snapshot() {
  PressureSnapshot s;
  s.total = cpu_times(-1, 3000, 15000, 100, 0);
  s.cpus = {cpu_times(0, 1000, 5000, 0, 0), cpu_times(1, 1000, 5000, 100, 0),
            cpu_times(2, 1000, 5000, 0, 0), cpu_times(3, 5000, 5000, 0, 0)};
  s.disks = {{"sda", 1000, 0, 10000},
             {"nvme0n1", 0, 0, 4294967000u},  // io_ticks about to wrap at 2^32 ms
             {"dm-0", 900000, 900000, 1000000000}};
  s.nics = {{"lo", 0, 0}, {"eth0", 0, 0}, {"ib0", 5000000000, 0}, {"docker0", 0, 0}};
  return s;
}

PressureSnapshot after_snapshot() {
  PressureSnapshot s;
  s.total = cpu_times(-1, 3125, 15100, 150, 25);
  s.cpus = {cpu_times(0, 1100, 5000, 0, 0),    // 100 ticks, all busy
            cpu_times(1, 1000, 5050, 150, 0),  // 50 idle + 50 iowait
            cpu_times(2, 1025, 5050, 0, 25),   // 25 user + 25 steal + 50 idle
            cpu_times(3, 4000, 5100, 0, 0),    // user went backwards (hotplug reset)
            cpu_times(4, 10, 10, 0, 0)};       // not in the first snapshot
  s.disks = {{"sda", 1000 + 2048, 4096, 10500},
             {"nvme0n1", 0, 0, 200},
             {"dm-0", 10, 10, 10},  // counters reset (device re-created)
             {"sdb", 100, 100, 100}};
  s.nics = {{"lo", 1000000000, 1000000000},
            {"eth0", 1125000000, 100000000},
            {"ib0", 1000, 2500000000},  // rx reset, tx 20 Gb/s
            {"docker0", 1000, 1000},
            {"eth9", 5, 5}};
  return s;
}

TEST(PressureTest, DeltaMathOnHandWrittenSnapshots) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));  // for NIC speeds
  HostPressure p = compute_pressure(before_snapshot(), after_snapshot(), 1.0, *fs);
  EXPECT_DOUBLE_EQ(p.window_s, 1.0);

  ASSERT_NE(core(p, 0), nullptr);
  EXPECT_DOUBLE_EQ(core(p, 0)->busy_pct, 100.0);
  EXPECT_DOUBLE_EQ(core(p, 0)->iowait_pct, 0.0);
  ASSERT_NE(core(p, 1), nullptr);
  EXPECT_DOUBLE_EQ(core(p, 1)->busy_pct, 0.0);
  EXPECT_DOUBLE_EQ(core(p, 1)->iowait_pct, 50.0);
  ASSERT_NE(core(p, 2), nullptr);
  EXPECT_DOUBLE_EQ(core(p, 2)->busy_pct, 50.0);  // steal counts as busy
  EXPECT_DOUBLE_EQ(core(p, 2)->steal_pct, 25.0);
  ASSERT_NE(core(p, 3), nullptr);  // the decrease counts as 0, the idle ticks remain
  EXPECT_DOUBLE_EQ(core(p, 3)->busy_pct, 0.0);
  EXPECT_EQ(core(p, 4), nullptr);
  ASSERT_TRUE(p.iowait_pct.has_value());
  EXPECT_NEAR(*p.iowait_pct, 100.0 * 50 / 300, 1e-9);

  ASSERT_NE(disk(p, "sda"), nullptr);
  EXPECT_DOUBLE_EQ(disk(p, "sda")->util_pct, 50.0);
  EXPECT_DOUBLE_EQ(disk(p, "sda")->read_bytes_per_s, 2048.0 * 512);
  EXPECT_DOUBLE_EQ(disk(p, "sda")->write_bytes_per_s, 4096.0 * 512);
  ASSERT_NE(disk(p, "nvme0n1"), nullptr);
  EXPECT_NEAR(disk(p, "nvme0n1")->util_pct, 49.6, 1e-9);  // 32-bit wrap: 296 + 200 ms
  ASSERT_NE(disk(p, "dm-0"), nullptr);
  EXPECT_DOUBLE_EQ(disk(p, "dm-0")->util_pct, 0.0);
  EXPECT_DOUBLE_EQ(disk(p, "dm-0")->read_bytes_per_s, 0.0);
  EXPECT_EQ(disk(p, "sdb"), nullptr);

  EXPECT_EQ(nic(p, "lo"), nullptr);
  EXPECT_EQ(nic(p, "eth9"), nullptr);
  ASSERT_NE(nic(p, "eth0"), nullptr);
  EXPECT_DOUBLE_EQ(nic(p, "eth0")->rx_bytes_per_s, 1125000000.0);
  EXPECT_DOUBLE_EQ(nic(p, "eth0")->tx_bytes_per_s, 100000000.0);
  EXPECT_EQ(nic(p, "eth0")->speed_mbit_s, 10000.0);
  ASSERT_TRUE(nic(p, "eth0")->peak_util_pct.has_value());
  EXPECT_NEAR(*nic(p, "eth0")->peak_util_pct, 90.0, 1e-9);
  ASSERT_NE(nic(p, "ib0"), nullptr);
  EXPECT_DOUBLE_EQ(nic(p, "ib0")->rx_bytes_per_s, 0.0);
  EXPECT_NEAR(*nic(p, "ib0")->peak_util_pct, 10.0, 1e-9);
  ASSERT_NE(nic(p, "docker0"), nullptr);
  EXPECT_FALSE(nic(p, "docker0")->speed_mbit_s.has_value());  // no speed file
  EXPECT_FALSE(nic(p, "docker0")->peak_util_pct.has_value());

  for (const auto& c : p.cores) {
    EXPECT_GE(c.busy_pct, 0.0);
    EXPECT_LE(c.busy_pct, 100.0);
    EXPECT_GE(c.iowait_pct, 0.0);
    EXPECT_GE(c.steal_pct, 0.0);
  }
  for (const auto& d : p.disks) {
    EXPECT_GE(d.util_pct, 0.0);
    EXPECT_LE(d.util_pct, 100.0);
    EXPECT_GE(d.read_bytes_per_s, 0.0);
    EXPECT_GE(d.write_bytes_per_s, 0.0);
  }
  for (const auto& n : p.nics) {
    EXPECT_GE(n.rx_bytes_per_s, 0.0);
    EXPECT_GE(n.tx_bytes_per_s, 0.0);
  }
}

TEST(PressureTest, DiskUtilisationIsClampedAndZeroWindowGivesNoRates) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  PressureSnapshot a = before_snapshot();
  PressureSnapshot b = after_snapshot();
  b.disks[0].io_ticks_ms = 10000 + 5000;  // 5 s of busy time in a 1 s window
  HostPressure p = compute_pressure(a, b, 1.0, *fs);
  EXPECT_DOUBLE_EQ(disk(p, "sda")->util_pct, 100.0);

  HostPressure z = compute_pressure(a, b, 0.0, *fs);
  EXPECT_FALSE(z.cores.empty());  // shares come from ticks, not from the window
  EXPECT_TRUE(z.disks.empty());
  EXPECT_TRUE(z.nics.empty());
}

TEST(PressureTest, ParsesProcStatIncludingOldKernelLines) {
  auto s = parse_proc_stat(
      "cpu  10 0 5 100\n"
      "cpu0 4 0 2 50\n"
      "cpu1 6 1 3 50 7 1 2 3 4 5\n"
      "cpuX 1 2 3 4\n"
      "cpu2 1 2\n"
      "intr 1 2 3\n");
  ASSERT_TRUE(s.is_ok());
  ASSERT_TRUE(s.value().total.has_value());
  EXPECT_EQ(s.value().total->user, 10u);
  EXPECT_EQ(s.value().total->iowait, 0u);
  ASSERT_EQ(s.value().cpus.size(), 2u);
  EXPECT_EQ(s.value().cpus[1].cpu, 1);
  EXPECT_EQ(s.value().cpus[1].iowait, 7u);
  EXPECT_EQ(s.value().cpus[1].steal, 3u);
}

TEST(PressureTest, SnapshotOfDualSocketHostKeepsWholeDisksAndNics) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  auto s = take_pressure_snapshot(*fs);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s.value().cpus.size(), 32u);
  EXPECT_EQ(s.value().cpus.back().cpu, 31);
  ASSERT_TRUE(s.value().total.has_value());
  EXPECT_EQ(s.value().total->user, 2215230u);
  EXPECT_EQ(s.value().total->iowait, 40233u);
  std::vector<std::string> disks;
  for (const auto& d : s.value().disks) disks.push_back(d.device);
  EXPECT_EQ(disks, (std::vector<std::string>{"sda", "nvme0n1", "md0", "dm-0"}));
  EXPECT_EQ(s.value().disks[0].sectors_read, 4410092u);
  EXPECT_EQ(s.value().disks[0].sectors_written, 3402216u);
  EXPECT_EQ(s.value().disks[0].io_ticks_ms, 101220u);
  std::vector<std::string> nics;
  for (const auto& n : s.value().nics) nics.push_back(n.device);
  EXPECT_EQ(nics, (std::vector<std::string>{"eth0", "ib0", "docker0"}));
  EXPECT_EQ(s.value().nics[0].rx_bytes, 912233012231u);
  EXPECT_EQ(s.value().nics[0].tx_bytes, 411229302211u);
  EXPECT_TRUE(s.value().unreadable.empty());
}

TEST(PressureTest, VmSnapshotSkipsZramAndUnknownNicSpeed) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  auto s = take_pressure_snapshot(*fs);
  ASSERT_TRUE(s.is_ok());
  ASSERT_EQ(s.value().disks.size(), 1u);
  EXPECT_EQ(s.value().disks[0].device, "vda");
  ASSERT_EQ(s.value().nics.size(), 1u);
  PressureSnapshot later = s.value();
  later.nics[0].rx_bytes += 1000;
  HostPressure p = compute_pressure(s.value(), later, 1.0, *fs);
  ASSERT_EQ(p.nics.size(), 1u);
  EXPECT_DOUBLE_EQ(p.nics[0].rx_bytes_per_s, 1000.0);
  EXPECT_FALSE(p.nics[0].speed_mbit_s.has_value());  // speed -1
  EXPECT_FALSE(p.nics[0].peak_util_pct.has_value());
  EXPECT_TRUE(p.cores.empty());  // no ticks between identical snapshots
  EXPECT_FALSE(p.iowait_pct.has_value());
}

TEST(PressureTest, GarbageFilesFailOrParseToNothing) {
  auto fs = make_rooted_file_system(sysroot("sysroot-garbage"));
  auto s = take_pressure_snapshot(*fs);  // /proc/stat is binary junk
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);

  auto diskstats = fs->read_file("/proc/diskstats");
  ASSERT_TRUE(diskstats.is_ok());
  EXPECT_TRUE(parse_diskstats(diskstats.value()).empty());
  auto netdev = fs->read_file("/proc/net/dev");
  ASSERT_TRUE(netdev.is_ok());
  EXPECT_TRUE(parse_net_dev(netdev.value()).empty());
  EXPECT_FALSE(parse_proc_stat(std::string("\0\xff\x01", 3)).is_ok());
  EXPECT_FALSE(parse_proc_stat("").is_ok());
}

TEST(PressureTest, PsiFromTheFilesAndItsShareOverTheWindowFromTheTotals) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  auto s = take_pressure_snapshot(*fs);
  ASSERT_TRUE(s.is_ok());
  ASSERT_TRUE(s.value().psi_io);
  EXPECT_EQ(*s.value().psi_io->some_total_us, 41234567u);
  ASSERT_TRUE(s.value().psi_cpu);
  ASSERT_TRUE(s.value().psi_memory);

  // A direct-I/O storm: 280 ms of the 1 s window with some task stalled on I/O, 250 ms with
  // every task stalled.
  PressureSnapshot later = s.value();
  *later.psi_io->some_total_us += 280000;
  *later.psi_io->full_total_us += 250000;
  later.psi_io->averages.some_avg10 = 26.4;
  HostPressure p = compute_pressure(s.value(), later, 1.0, *fs);
  ASSERT_TRUE(p.psi_io);
  EXPECT_NEAR(*p.psi_io->some_window_pct, 28.0, 1e-9);
  EXPECT_NEAR(*p.psi_io->full_window_pct, 25.0, 1e-9);
  EXPECT_DOUBLE_EQ(*p.psi_io->some_avg10, 26.4);  // the later reading's average
  ASSERT_TRUE(p.psi_cpu);
  EXPECT_DOUBLE_EQ(*p.psi_cpu->some_window_pct, 0.0);

  // One reading (no window): averages only.
  HostPressure once = compute_pressure(s.value(), s.value(), 0, *fs);
  ASSERT_TRUE(once.psi_io);
  EXPECT_FALSE(once.psi_io->some_window_pct);
  EXPECT_DOUBLE_EQ(*once.psi_io->some_avg10, 1.20);
}

TEST(PressureTest, NoPsiFilesIsOneUnreadableEntryNotAFailure) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  auto s = take_pressure_snapshot(*fs);
  ASSERT_TRUE(s.is_ok());
  EXPECT_FALSE(s.value().psi_io);
  ASSERT_EQ(s.value().unreadable.size(), 1u);
  EXPECT_EQ(s.value().unreadable[0].rfind("/proc/pressure (", 0), 0u) << s.value().unreadable[0];
  EXPECT_NE(s.value().unreadable[0].find("4.20"), std::string::npos);

  auto junk = make_rooted_file_system(sysroot("sysroot-garbage"));
  auto io = junk->read_file("/proc/pressure/io");
  ASSERT_TRUE(io.is_ok());
  EXPECT_FALSE(import::parse_psi_file(io.value()));  // nan, negative, over 100: no reading
}

TEST(PressureTest, UnreadableSourcesAreListedOrFail) {
  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  DenyingFileSystem some(*inner, {"/proc/diskstats", "/proc/net/dev"});
  auto s = take_pressure_snapshot(some);
  ASSERT_TRUE(s.is_ok());
  EXPECT_TRUE(s.value().disks.empty());
  EXPECT_TRUE(s.value().nics.empty());
  EXPECT_EQ(s.value().unreadable, (std::vector<std::string>{"/proc/diskstats (permission denied)",
                                                            "/proc/net/dev (permission denied)"}));

  DenyingFileSystem stat(*inner, {"/proc/stat"});
  auto f = take_pressure_snapshot(stat);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(f.status().message(), "/proc/stat unreadable (permission denied)");
}

TEST(PressureTest, WholeDiskHeuristicWithoutSysBlock) {
  EmptyFileSystem fs;
  EXPECT_TRUE(is_whole_disk(fs, "sda"));
  EXPECT_FALSE(is_whole_disk(fs, "sda1"));
  EXPECT_TRUE(is_whole_disk(fs, "nvme0n1"));
  EXPECT_FALSE(is_whole_disk(fs, "nvme0n1p2"));
  EXPECT_FALSE(is_whole_disk(fs, "mmcblk0p1"));
  EXPECT_TRUE(is_whole_disk(fs, "md0"));
  EXPECT_TRUE(is_whole_disk(fs, "dm-0"));
  EXPECT_TRUE(is_whole_disk(fs, "xvda"));
  EXPECT_FALSE(is_whole_disk(fs, "loop0"));
  EXPECT_FALSE(is_whole_disk(fs, "ram0"));
  EXPECT_FALSE(is_whole_disk(fs, "zram0"));
  EXPECT_FALSE(is_whole_disk(fs, "sr0"));
  EXPECT_FALSE(is_whole_disk(fs, "../etc"));
}

TEST(PressureTest, SampleSleepsOnTheClockAndUsesItsWindow) {
  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  SequencedFileSystem fs(*inner,
                         {{"/proc/stat",
                           {"cpu  100 0 0 900 0 0 0 0 0 0\ncpu0 100 0 0 900 0 0 0 0 0 0\n",
                            "cpu  300 0 0 900 200 0 0 0 0 0\ncpu0 300 0 0 900 200 0 0 0 0 0\n"}},
                          {"/proc/diskstats",
                           {"   8       0 sda 1 0 0 0 1 0 0 0 0 1000 0 0 0 0 0 0 0\n",
                            "   8       0 sda 1 0 4096 0 1 0 0 0 0 2000 0 0 0 0 0 0 0\n"}},
                          {"/proc/net/dev",
                           {"  eth0: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                            "  eth0: 2500000000 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"}}});
  FakeClock clock;
  auto p = sample_host_pressure(fs, clock, std::chrono::milliseconds(2000));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(clock.slept(), std::chrono::milliseconds(2000));
  EXPECT_DOUBLE_EQ(p.value().window_s, 2.0);
  ASSERT_EQ(p.value().cores.size(), 1u);
  EXPECT_DOUBLE_EQ(p.value().cores[0].busy_pct, 50.0);
  EXPECT_DOUBLE_EQ(p.value().cores[0].iowait_pct, 50.0);
  EXPECT_DOUBLE_EQ(*p.value().iowait_pct, 50.0);
  ASSERT_EQ(p.value().disks.size(), 1u);
  EXPECT_DOUBLE_EQ(p.value().disks[0].util_pct, 50.0);
  EXPECT_DOUBLE_EQ(p.value().disks[0].read_bytes_per_s, 4096.0 * 512 / 2);
  ASSERT_EQ(p.value().nics.size(), 1u);
  EXPECT_DOUBLE_EQ(p.value().nics[0].rx_bytes_per_s, 1250000000.0);
  EXPECT_NEAR(*p.value().nics[0].peak_util_pct, 100.0, 1e-9);  // 10 Gb/s on a 10 Gb/s port
}

TEST(PressureTest, SampleFailsCleanlyWithoutProcStat) {
  EmptyFileSystem fs;
  FakeClock clock;
  auto p = sample_host_pressure(fs, clock, std::chrono::milliseconds(500));
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(clock.slept(), std::chrono::milliseconds(0));  // no point in waiting
}

TEST(PressureTest, LiveHostShortSample) {
  auto fs = make_rooted_file_system("/");
  auto clock = make_system_clock();
  auto p = sample_host_pressure(*fs, *clock, std::chrono::milliseconds(50));
  if (!p.is_ok()) GTEST_SKIP() << p.status().to_string();
  EXPECT_GT(p.value().window_s, 0.0);
  for (const auto& c : p.value().cores) {
    EXPECT_GE(c.busy_pct, 0.0);
    EXPECT_LE(c.busy_pct, 100.0);
  }
  for (const auto& d : p.value().disks) EXPECT_LE(d.util_pct, 100.0);
}

}  // namespace
}  // namespace gpuvet::probe
