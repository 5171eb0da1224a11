// probe/pressure.h — host pressure (per-core CPU, iowait, disk utilisation, NIC
// throughput) over a short sample window, from procfs/sysfs counters.
//
// Two snapshots of cumulative kernel counters (/proc/stat jiffies,
// /proc/diskstats sectors and io_ticks, /proc/net/dev bytes) taken a window
// apart; the rates are their deltas. Snapshot parsing and the delta math are
// pure functions so tests feed hand-written snapshots; only sampling sleeps,
// and it sleeps through the Clock seam. Counters that go backwards (a counter
// reset, a 32-bit wrap, the known iowait decrease of /proc/stat) never yield
// negative numbers. Stateless; safe to call from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/env.h"
#include "gpuvet/facts.h"
#include "gpuvet/status.h"
#include "import/psi.h"

namespace gpuvet::probe {

// One "cpu"/"cpuN" line of /proc/stat, in USER_HZ ticks. guest/guest_nice are
// already counted inside user/nice, so they are not kept.
struct CpuTimes {
  int cpu = -1;  // -1: the aggregate "cpu" line
  std::uint64_t user = 0;
  std::uint64_t nice = 0;
  std::uint64_t system = 0;
  std::uint64_t idle = 0;
  std::uint64_t iowait = 0;
  std::uint64_t irq = 0;
  std::uint64_t softirq = 0;
  std::uint64_t steal = 0;
};

// A whole disk of /proc/diskstats. Sectors are always 512 bytes there.
struct DiskCounters {
  std::string device;  // "nvme0n1"
  std::uint64_t sectors_read = 0;
  std::uint64_t sectors_written = 0;
  std::uint64_t io_ticks_ms = 0;  // time with I/O in flight
};

// An interface of /proc/net/dev.
struct NicCounters {
  std::string device;  // "eth0"
  std::uint64_t rx_bytes = 0;
  std::uint64_t tx_bytes = 0;
};

struct PressureSnapshot {
  std::optional<CpuTimes> total;    // the aggregate line
  std::vector<CpuTimes> cpus;       // per CPU, by id
  std::vector<DiskCounters> disks;  // whole disks only (no partitions, loop, ram, zram)
  std::vector<NicCounters> nics;    // all but "lo"
  // /proc/pressure/cpu, io, memory (PSI; absent before kernel 4.20 or with psi=0).
  std::optional<import::PsiFile> psi_cpu;
  std::optional<import::PsiFile> psi_io;
  std::optional<import::PsiFile> psi_memory;
  // Sources that could not be read, "/proc/diskstats (permission denied)": the
  // matching lists are then empty for lack of data, not for lack of devices.
  std::vector<std::string> unreadable;
};

// Pure parsers of the three files. parse_proc_stat fails on text without a
// single well-formed cpu line; the other two skip lines they do not understand.
Result<PressureSnapshot> parse_proc_stat(std::string_view text);
std::vector<DiskCounters> parse_diskstats(std::string_view text);  // every device, unfiltered
std::vector<NicCounters> parse_net_dev(std::string_view text);     // every interface, lo included

// Whether a /proc/diskstats name is a whole disk worth reporting: present in
// /sys/block (partitions are not; "cciss/c0d0" is "cciss!c0d0" there) and not a
// loop, ram, zram, floppy or optical device. Without a readable /sys/block,
// names that look like partitions ("sda1", "nvme0n1p2", "mmcblk0p1") are dropped.
bool is_whole_disk(const FileSystem& fs, std::string_view name);

// Reads /proc/stat (required: fails without it), /proc/diskstats and
// /proc/net/dev (optional: listed in `unreadable` when missing) and the PSI files
// /proc/pressure/{cpu,io,memory} (optional: one `unreadable` entry when none can be read).
Result<PressureSnapshot> take_pressure_snapshot(const FileSystem& fs);

// Deltas over window_s seconds. CPUs, disks and NICs present in both snapshots
// only. Percentages are clamped to [0, 100]. NIC speed from
// /sys/class/net/<if>/speed (Mb/s); -1, 0 or unreadable leaves it (and the
// utilisation) empty. PSI: the kernel's averages of `after`, and the stall share over
// the window from the two totals. window_s <= 0: per-core shares and PSI averages only.
HostPressure compute_pressure(const PressureSnapshot& before, const PressureSnapshot& after,
                              double window_s, const FileSystem& fs);

// Snapshot, clock.sleep_for(window), snapshot, compute. The window is measured
// on the clock when it moves, else taken as the nominal one (fake clocks).
Result<HostPressure> sample_host_pressure(const FileSystem& fs, const Clock& clock,
                                          std::chrono::milliseconds window);

}  // namespace gpuvet::probe
