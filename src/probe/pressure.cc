#include "probe/pressure.h"

#include <algorithm>
#include <map>

#include "core/util.h"
#include "probe/host_sysfs.h"

namespace gpuvet::probe {
namespace {

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < s.size() && !(s[j] == ' ' || s[j] == '\t' || s[j] == '\r')) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool is_device_name(std::string_view s) {
  return !s.empty() && s != "." && s != ".." && s.size() < 256 &&
         std::all_of(s.begin(), s.end(), [](char c) {
           auto u = static_cast<unsigned char>(c);
           return u > 0x20 && u < 0x7f;
         });
}

// Delta of a cumulative counter. A decrease is read as a 32-bit wrap only when
// the old value sat in the top quarter of the 32-bit range and the new one in
// the bottom quarter (io_ticks is printed as a 32-bit value and wraps after
// ~49 days; 32-bit kernels wrap byte counters); any other decrease is a reset
// (device re-added, CPU hotplug, /proc/stat iowait going backwards) and counts 0.
std::uint64_t counter_delta(std::uint64_t before, std::uint64_t after) {
  if (after >= before) return after - before;
  constexpr std::uint64_t k32 = std::uint64_t{1} << 32;
  constexpr std::uint64_t kQuarter = k32 >> 2;
  if (before < k32 && before >= k32 - kQuarter && after < kQuarter) return k32 - before + after;
  return 0;
}

double pct(double part, double whole) {
  if (whole <= 0) return 0;
  return std::clamp(100.0 * part / whole, 0.0, 100.0);
}

struct CpuDelta {
  std::uint64_t busy = 0;
  std::uint64_t iowait = 0;
  std::uint64_t steal = 0;
  std::uint64_t total = 0;
};

CpuDelta cpu_delta(const CpuTimes& a, const CpuTimes& b) {
  CpuDelta d;
  auto user = counter_delta(a.user, b.user);
  auto nice = counter_delta(a.nice, b.nice);
  auto system = counter_delta(a.system, b.system);
  auto idle = counter_delta(a.idle, b.idle);
  auto irq = counter_delta(a.irq, b.irq);
  auto softirq = counter_delta(a.softirq, b.softirq);
  d.iowait = counter_delta(a.iowait, b.iowait);
  d.steal = counter_delta(a.steal, b.steal);
  d.busy = user + nice + system + irq + softirq + d.steal;
  d.total = d.busy + idle + d.iowait;
  return d;
}

std::optional<double> nic_speed_mbit(const FileSystem& fs, const std::string& device) {
  auto r = fs.read_file("/sys/class/net/" + device + "/speed", 256);
  if (!r.is_ok()) return std::nullopt;  // EINVAL for virtual and down links
  auto v = parse_int(r.value());
  if (!v || *v <= 0 || *v > 100'000'000) return std::nullopt;  // -1: unknown
  return static_cast<double>(*v);
}

}  // namespace

Result<PressureSnapshot> parse_proc_stat(std::string_view text) {
  PressureSnapshot snap;
  std::map<int, CpuTimes> cpus;
  for (auto line : split_lines(text)) {
    if (!starts_with(line, "cpu")) continue;
    auto words = split_words(line);
    if (words.size() < 5) continue;  // name + user nice system idle at the least
    CpuTimes t;
    auto name = words[0];
    if (name == "cpu") {
      t.cpu = -1;
    } else {
      auto id = parse_int(name.substr(3));
      if (!id || *id < 0 || *id >= (1 << 16) || name[3] < '0' || name[3] > '9') continue;
      t.cpu = static_cast<int>(*id);
    }
    std::uint64_t* fields[] = {&t.user,   &t.nice, &t.system,  &t.idle,
                               &t.iowait, &t.irq,  &t.softirq, &t.steal};
    bool ok = true;
    for (std::size_t i = 0; i < std::size(fields) && i + 1 < words.size(); ++i) {
      auto v = parse_uint(words[i + 1]);
      if (!v) {
        ok = false;
        break;
      }
      *fields[i] = *v;
    }
    if (!ok) continue;
    if (t.cpu < 0) {
      snap.total = t;
    } else {
      cpus[t.cpu] = t;
    }
  }
  if (!snap.total && cpus.empty()) {
    return Status::invalid_input("/proc/stat: no well-formed cpu lines");
  }
  for (auto& [id, t] : cpus) snap.cpus.push_back(t);
  return snap;
}

std::vector<DiskCounters> parse_diskstats(std::string_view text) {
  std::vector<DiskCounters> out;
  for (auto line : split_lines(text)) {
    auto w = split_words(line);
    // major minor name + 11 stats (kernels >= 2.6.25; 4.18 and 5.5 appended more).
    if (w.size() < 14 || !parse_uint(w[0]) || !parse_uint(w[1]) || !is_device_name(w[2])) continue;
    auto sectors_read = parse_uint(w[5]);
    auto sectors_written = parse_uint(w[9]);
    auto io_ticks = parse_uint(w[12]);
    if (!sectors_read || !sectors_written || !io_ticks) continue;
    out.push_back({std::string(w[2]), *sectors_read, *sectors_written, *io_ticks});
  }
  return out;
}

std::vector<NicCounters> parse_net_dev(std::string_view text) {
  std::vector<NicCounters> out;
  for (auto line : split_lines(text)) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto name = trim(line.substr(0, colon));
    auto w = split_words(line.substr(colon + 1));
    // 8 receive columns then 8 transmit columns; bytes lead each group.
    if (!is_device_name(name) || w.size() < 16) continue;
    auto rx = parse_uint(w[0]);
    auto tx = parse_uint(w[8]);
    if (!rx || !tx) continue;
    out.push_back({std::string(name), *rx, *tx});
  }
  return out;
}

bool is_whole_disk(const FileSystem& fs, std::string_view name) {
  if (!is_device_name(name) || name.find("..") != std::string_view::npos) return false;
  for (std::string_view skip : {"loop", "ram", "zram", "fd", "sr"}) {
    if (starts_with(name, skip)) return false;
  }
  if (fs.exists("/sys/block")) {
    std::string sys_name(name);
    std::replace(sys_name.begin(), sys_name.end(), '/', '!');
    return fs.exists("/sys/block/" + sys_name);
  }
  // No /sys/block: drop names shaped like partitions.
  auto ends_digit = [](std::string_view s) {
    return !s.empty() && s.back() >= '0' && s.back() <= '9';
  };
  for (std::string_view p : {"sd", "vd", "xvd", "hd"}) {
    if (starts_with(name, p) && ends_digit(name)) return false;
  }
  if (starts_with(name, "nvme") || starts_with(name, "mmcblk")) {
    auto p = name.rfind('p');
    if (p != std::string_view::npos && p > 0 && ends_digit(name.substr(0, p)) &&
        parse_int(name.substr(p + 1))) {
      return false;
    }
  }
  return true;
}

Result<PressureSnapshot> take_pressure_snapshot(const FileSystem& fs) {
  auto stat = fs.read_file("/proc/stat", 16 << 20);
  if (!stat.is_ok()) {
    return Status(stat.status().code(),
                  "/proc/stat unreadable (" + read_failure_words(stat.status()) + ")");
  }
  auto snap = parse_proc_stat(stat.value());
  if (!snap.is_ok()) return snap.status();
  PressureSnapshot& s = snap.value();

  if (auto r = fs.read_file("/proc/diskstats", 16 << 20); r.is_ok()) {
    for (auto& d : parse_diskstats(r.value())) {
      if (is_whole_disk(fs, d.device)) s.disks.push_back(std::move(d));
    }
  } else {
    s.unreadable.push_back("/proc/diskstats (" + read_failure_words(r.status()) + ")");
  }

  if (auto r = fs.read_file("/proc/net/dev", 16 << 20); r.is_ok()) {
    for (auto& n : parse_net_dev(r.value())) {
      if (n.device != "lo") s.nics.push_back(std::move(n));
    }
  } else {
    s.unreadable.push_back("/proc/net/dev (" + read_failure_words(r.status()) + ")");
  }

  std::string psi_failure;
  for (auto [file, slot] :
       {std::pair{"/proc/pressure/cpu", &s.psi_cpu}, std::pair{"/proc/pressure/io", &s.psi_io},
        std::pair{"/proc/pressure/memory", &s.psi_memory}}) {
    auto r = fs.read_file(file, 4096);
    if (r.is_ok())
      *slot = import::parse_psi_file(r.value());
    else if (psi_failure.empty())
      psi_failure = read_failure_words(r.status());
  }
  if (!s.psi_cpu && !s.psi_io && !s.psi_memory)
    s.unreadable.push_back("/proc/pressure (" +
                           (psi_failure.empty() ? std::string("no pressure line") : psi_failure) +
                           "; PSI needs kernel 4.20+ without psi=0)");
  return snap;
}

HostPressure compute_pressure(const PressureSnapshot& before, const PressureSnapshot& after,
                              double window_s, const FileSystem& fs) {
  HostPressure p;
  p.window_s = window_s > 0 ? window_s : 0;

  std::map<int, const CpuTimes*> old_cpus;
  for (const auto& c : before.cpus) old_cpus[c.cpu] = &c;
  CpuDelta sum;
  for (const auto& c : after.cpus) {
    auto it = old_cpus.find(c.cpu);
    if (it == old_cpus.end()) continue;
    CpuDelta d = cpu_delta(*it->second, c);
    if (d.total == 0) continue;  // no ticks seen: nothing to say about this core
    sum.iowait += d.iowait;
    sum.total += d.total;
    p.cores.push_back({c.cpu, pct(static_cast<double>(d.busy), static_cast<double>(d.total)),
                       pct(static_cast<double>(d.iowait), static_cast<double>(d.total)),
                       pct(static_cast<double>(d.steal), static_cast<double>(d.total))});
  }
  if (before.total && after.total) {
    CpuDelta d = cpu_delta(*before.total, *after.total);
    if (d.total > 0)
      p.iowait_pct = pct(static_cast<double>(d.iowait), static_cast<double>(d.total));
  } else if (sum.total > 0) {
    p.iowait_pct = pct(static_cast<double>(sum.iowait), static_cast<double>(sum.total));
  }

  auto psi = [&](const std::optional<import::PsiFile>& was,
                 const std::optional<import::PsiFile>& now) -> std::optional<PsiReading> {
    if (!now) return std::nullopt;
    PsiReading r = now->averages;
    auto share = [&](std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
      std::optional<double> out;
      if (a && b && window_s > 0)
        out = pct(static_cast<double>(counter_delta(*a, *b)), window_s * 1e6);
      return out;
    };
    if (was) {
      r.some_window_pct = share(was->some_total_us, now->some_total_us);
      r.full_window_pct = share(was->full_total_us, now->full_total_us);
    }
    return r;
  };
  p.psi_cpu = psi(before.psi_cpu, after.psi_cpu);
  p.psi_io = psi(before.psi_io, after.psi_io);
  p.psi_memory = psi(before.psi_memory, after.psi_memory);

  if (window_s <= 0) return p;

  std::map<std::string, const DiskCounters*, std::less<>> old_disks;
  for (const auto& d : before.disks) old_disks[d.device] = &d;
  for (const auto& d : after.disks) {
    auto it = old_disks.find(d.device);
    if (it == old_disks.end()) continue;
    const DiskCounters& o = *it->second;
    DiskLoad load;
    load.device = d.device;
    load.util_pct =
        pct(static_cast<double>(counter_delta(o.io_ticks_ms, d.io_ticks_ms)), window_s * 1000.0);
    load.read_bytes_per_s =
        static_cast<double>(counter_delta(o.sectors_read, d.sectors_read)) * 512.0 / window_s;
    load.write_bytes_per_s =
        static_cast<double>(counter_delta(o.sectors_written, d.sectors_written)) * 512.0 / window_s;
    p.disks.push_back(std::move(load));
  }

  std::map<std::string, const NicCounters*, std::less<>> old_nics;
  for (const auto& n : before.nics) old_nics[n.device] = &n;
  for (const auto& n : after.nics) {
    auto it = old_nics.find(n.device);
    if (it == old_nics.end() || n.device == "lo") continue;
    NicLoad load;
    load.device = n.device;
    load.rx_bytes_per_s =
        static_cast<double>(counter_delta(it->second->rx_bytes, n.rx_bytes)) / window_s;
    load.tx_bytes_per_s =
        static_cast<double>(counter_delta(it->second->tx_bytes, n.tx_bytes)) / window_s;
    load.speed_mbit_s = nic_speed_mbit(fs, n.device);
    if (load.speed_mbit_s) {
      double peak_bits = std::max(load.rx_bytes_per_s, load.tx_bytes_per_s) * 8.0;
      load.peak_util_pct = pct(peak_bits, *load.speed_mbit_s * 1e6);
    }
    p.nics.push_back(std::move(load));
  }
  return p;
}

Result<HostPressure> sample_host_pressure(const FileSystem& fs, const Clock& clock,
                                          std::chrono::milliseconds window) {
  auto first = take_pressure_snapshot(fs);
  if (!first.is_ok()) return first.status();
  const auto start = clock.now();
  clock.sleep_for(window);
  const auto end = clock.now();
  auto second = take_pressure_snapshot(fs);
  if (!second.is_ok()) return second.status();
  double measured = std::chrono::duration<double>(end - start).count();
  double window_s = measured > 0 ? measured : std::chrono::duration<double>(window).count();
  return compute_pressure(first.value(), second.value(), window_s, fs);
}

}  // namespace gpuvet::probe
