#include "probe/host_sysfs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "core/util.h"

namespace gpuvet::probe {
namespace {

// Driver parameters worth carrying into the facts, and why. Everything else in
// /proc/driver/nvidia/params (debug levels, device-file modes, power management)
// says nothing about multi-GPU health.
constexpr std::pair<std::string_view, std::string_view> kDriverParamAllowList[] = {
    {"NvLinkDisable", "NVLink switched off by the driver: peer traffic falls back to PCIe"},
    {"RmNvlinkBandwidth", "NVLink reduced-bandwidth mode"},
    {"RmNvlinkBandwidthLinkCount", "NVLink reduced to fewer links per GPU"},
    {"EnableResizableBar", "BAR1 size bounds what peers and NICs can map (P2P, GPUDirect)"},
    {"EnablePCIERelaxedOrderingMode", "changes P2P and GPUDirect RDMA throughput"},
    {"DmaRemapPeerMmio", "peer MMIO mapped through the IOMMU: P2P with the IOMMU on"},
    {"GrdmaPciTopoCheckOverride", "GPUDirect RDMA PCI topology check forced on or off"},
    {"EnableGpuFirmware", "GSP firmware on/off changes error behaviour and Xids"},
    {"EnableUserNUMAManagement", "GPU memory onlined as NUMA nodes (coherent platforms)"},
    {"ImexChannelCount", "multi-node NVLink (IMEX) channels"},
    {"CreateImexChannel0", "multi-node NVLink (IMEX) channel 0 created at load"},
    {"RegistryDwords", "free-form overrides; P2P and NVLink can be forced off here"},
    {"RegistryDwordsPerDevice", "the same, per GPU"},
    {"ExcludedGpus", "GPUs hidden from the driver"},
};

constexpr std::size_t kMaxDirEntries = 1 << 16;  // bounds loops over junk directories

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < s.size() && !(s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r')) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// Printable text only: a junk file must not put control bytes into a report.
bool is_printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u != 0x7f;
  });
}

std::string unreadable_note(std::string_view what, const std::string& path, const Status& s) {
  return std::string(what) + ": " + path + " unreadable (" + read_failure_words(s) + ")";
}

// A one-line sysfs value, trimmed; empty when unreadable, empty or junk.
std::optional<std::string> read_value(const FileSystem& fs, const std::string& path) {
  auto r = fs.read_file(path, 4096);
  if (!r.is_ok()) return std::nullopt;
  auto v = trim(r.value());
  if (v.empty() || !is_printable(v)) return std::nullopt;
  return std::string(v);
}

std::optional<std::int64_t> read_int(const FileSystem& fs, const std::string& path) {
  auto v = read_value(fs, path);
  return v ? parse_int(*v) : std::nullopt;
}

// "key : value" lines, as /proc/cpuinfo and /proc/driver/nvidia/params write them.
std::optional<std::pair<std::string_view, std::string_view>> key_value(std::string_view line) {
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return std::make_pair(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
}

// ---------------------------------------------------------------- identity

std::optional<std::string> os_release_value(std::string_view text, std::string_view key) {
  for (auto line : split_lines(text)) {
    line = trim(line);
    auto eq = line.find('=');
    if (eq == std::string_view::npos || line.substr(0, eq) != key) continue;
    auto v = trim(line.substr(eq + 1));
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
      v = v.substr(1, v.size() - 2);
    }
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '\\' && i + 1 < v.size()) ++i;  // shell-style escapes: \" \\ \$ \`
      out += v[i];
    }
    if (out.empty() || !is_printable(out)) return std::nullopt;
    return out;
  }
  return std::nullopt;
}

struct CpuRecord {
  std::map<std::string, std::string, std::less<>> kv;
};

struct CpuInfo {
  std::vector<CpuRecord> cpus;                             // one per "processor : N"
  std::map<std::string, std::string, std::less<>> global;  // keys outside processor records
};

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo info;
  // aarch64 prints "Hardware", "Revision" after the last record, separated by
  // a blank line; old arm kernels print "Processor : AArch64 ..." before the
  // first. Keys outside a record go to `global`.
  auto* current = &info.global;
  for (auto line : split_lines(text)) {
    if (trim(line).empty()) {
      current = &info.global;
      continue;
    }
    auto kv = key_value(line);
    if (!kv || kv->first.empty() || !is_printable(kv->first) || !is_printable(kv->second)) continue;
    if (kv->first == "processor") {
      if (!parse_int(kv->second)) {
        info.global.emplace(std::string(kv->first), std::string(kv->second));
        continue;
      }
      info.cpus.emplace_back();
      current = &info.cpus.back().kv;
    }
    current->emplace(std::string(kv->first), std::string(kv->second));
  }
  return info;
}

std::optional<std::string> lookup(const CpuInfo& info, std::string_view key) {
  for (const auto& c : info.cpus) {
    if (auto it = c.kv.find(key); it != c.kv.end() && !it->second.empty()) return it->second;
  }
  if (auto it = info.global.find(key); it != info.global.end() && !it->second.empty()) {
    return it->second;
  }
  return std::nullopt;
}

// aarch64 cpuinfo has no model name: name the few server cores we meet,
// otherwise say the raw ids.
std::optional<std::string> arm_cpu_model(const CpuInfo& info) {
  auto part = lookup(info, "CPU part");
  if (!part) return std::nullopt;
  auto impl = lookup(info, "CPU implementer").value_or("?");
  static const std::map<std::pair<std::string, std::string>, std::string> kKnown = {
      {{"0x41", "0xd0c"}, "ARM Neoverse-N1"},       {{"0x41", "0xd40"}, "ARM Neoverse-V1"},
      {{"0x41", "0xd49"}, "ARM Neoverse-N2"},       {{"0x41", "0xd4f"}, "ARM Neoverse-V2"},
      {{"0x41", "0xd84"}, "ARM Neoverse-V3"},       {{"0x41", "0xd8e"}, "ARM Neoverse-N3"},
      {{"0x48", "0xd01"}, "HiSilicon Kunpeng-920"}, {{"0xc0", "0xac3"}, "AmpereOne"},
  };
  auto it = kKnown.find({to_lower(impl), to_lower(*part)});
  if (it != kKnown.end()) return it->second + " (CPU part " + *part + ")";
  return "CPU implementer " + impl + ", part " + *part;
}

// (socket, core) pairs from sysfs topology, for cpuinfo without "physical id"
// (aarch64, some VMs). Empty when any online CPU's topology is unreadable.
std::optional<std::set<std::pair<std::int64_t, std::int64_t>>> sysfs_core_pairs(
    const FileSystem& fs) {
  auto names = fs.list_dir("/sys/devices/system/cpu");
  if (!names.is_ok()) return std::nullopt;
  std::set<std::pair<std::int64_t, std::int64_t>> pairs;
  std::size_t seen = 0;
  for (const auto& n : names.value()) {
    if (++seen > kMaxDirEntries) return std::nullopt;
    if (n.size() < 4 || !starts_with(n, "cpu") || !parse_int(std::string_view(n).substr(3))) {
      continue;
    }
    const std::string topo = "/sys/devices/system/cpu/" + n + "/topology";
    if (!fs.exists(topo)) continue;  // offline CPU
    auto pkg = read_int(fs, topo + "/physical_package_id");
    auto core = read_int(fs, topo + "/core_id");
    if (!pkg || !core) return std::nullopt;
    pairs.emplace(*pkg, *core);
  }
  if (pairs.empty()) return std::nullopt;
  return pairs;
}

void apply_cpuinfo(const FileSystem& fs, const CpuInfo& info, HostFacts& host,
                   std::vector<std::string>& notes) {
  if (info.cpus.empty()) {
    notes.push_back("host: /proc/cpuinfo has no processor entries (CPU model and counts unknown)");
    return;
  }
  host.logical_cpus = static_cast<int>(info.cpus.size());

  if (auto m = lookup(info, "model name")) {
    host.cpu_model = *m;
  } else if (auto hw = lookup(info, "Hardware")) {
    host.cpu_model = *hw;
  } else if (auto arm = arm_cpu_model(info)) {
    host.cpu_model = *arm;
  } else if (auto power = lookup(info, "cpu")) {  // ppc64le: "POWER9, altivec supported"
    host.cpu_model = *power;
  }

  std::set<std::pair<std::int64_t, std::int64_t>> pairs;
  bool complete = true;
  for (const auto& c : info.cpus) {
    auto pid = c.kv.find("physical id");
    auto cid = c.kv.find("core id");
    std::optional<std::int64_t> p = pid != c.kv.end() ? parse_int(pid->second) : std::nullopt;
    std::optional<std::int64_t> k = cid != c.kv.end() ? parse_int(cid->second) : std::nullopt;
    if (!p || !k) {
      complete = false;
      break;
    }
    pairs.emplace(*p, *k);
  }
  std::optional<std::set<std::pair<std::int64_t, std::int64_t>>> core_pairs;
  if (complete) {
    core_pairs = std::move(pairs);
  } else {
    core_pairs = sysfs_core_pairs(fs);
  }
  if (core_pairs) {
    host.physical_cores = static_cast<int>(core_pairs->size());
    std::set<std::int64_t> sockets;
    for (const auto& [socket, core] : *core_pairs) sockets.insert(socket);
    host.sockets = static_cast<int>(sockets.size());
  }

  // x86 only: other architectures have no "flags" line, and then we do not know.
  if (auto flags = lookup(info, "flags")) {
    auto words = split_words(*flags);
    host.virtual_machine = std::find(words.begin(), words.end(), "hypervisor") != words.end();
  }
}

std::optional<std::uint64_t> meminfo_bytes(std::string_view text, std::string_view key) {
  for (auto line : split_lines(text)) {
    auto kv = key_value(line);
    if (!kv) continue;
    // Per-node meminfo: "Node 0 MemTotal:   4548344 kB".
    auto k = kv->first;
    if (k != key && !(k.size() > key.size() && k.substr(k.size() - key.size()) == key &&
                      k[k.size() - key.size() - 1] == ' ')) {
      continue;
    }
    auto words = split_words(kv->second);
    if (words.empty() || words.size() > 2) return std::nullopt;
    auto v = parse_uint(words[0]);
    if (!v) return std::nullopt;
    if (words.size() == 2) {
      if (words[1] != "kB") return std::nullopt;
      if (*v > UINT64_MAX / 1024) return std::nullopt;
      return *v * 1024;
    }
    return v;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- PCI

bool is_bdf(std::string_view s) {
  if (s.size() != 12) return false;
  auto n = normalize_pci_bus_id(s);
  return n && *n == s;
}

std::string acs_flag_names(std::uint16_t control) {
  std::string out;
  if (control & (1u << 2)) out += "RR";
  if (control & (1u << 3)) out += out.empty() ? "CR" : ",CR";
  return out;
}

}  // namespace

std::string read_failure_words(const Status& status) { return status_code_name(status.code()); }

std::optional<int> pcie_gen_from_speed(std::string_view speed) {
  auto words = split_words(speed);
  if (words.empty()) return std::nullopt;
  auto gts = parse_double(words[0]);
  if (!gts) return std::nullopt;
  static constexpr std::pair<double, int> kGens[] = {{2.5, 1},  {5.0, 2},  {8.0, 3},  {16.0, 4},
                                                     {32.0, 5}, {64.0, 6}, {128.0, 7}};
  for (auto [rate, gen] : kGens) {
    if (std::fabs(*gts - rate) < 0.05) return gen;
  }
  return std::nullopt;
}

AcsReading find_acs(std::string_view config) {
  constexpr std::size_t kExtStart = 0x100;
  constexpr std::uint16_t kAcsId = 0x000D;
  constexpr int kMaxHops = 64;
  if (config.size() <= kExtStart) return {AcsReading::Kind::kTruncated, 0};
  auto u8 = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(config[i]));
  };
  auto le32 = [&](std::size_t off) {
    return u8(off) | (u8(off + 1) << 8) | (u8(off + 2) << 16) | (u8(off + 3) << 24);
  };
  std::set<std::size_t> seen;
  std::size_t off = kExtStart;
  for (int hop = 0; hop < kMaxHops; ++hop) {
    if (off < kExtStart || off % 4 != 0 || off + 4 > config.size() || !seen.insert(off).second) {
      return {AcsReading::Kind::kMalformed, 0};
    }
    std::uint32_t header = le32(off);
    // All zeros: no (more) extended capabilities. All ones: the device did not answer.
    if (header == 0) return {AcsReading::Kind::kAbsent, 0};
    if (header == 0xffffffffu) return {AcsReading::Kind::kMalformed, 0};
    if ((header & 0xffffu) == kAcsId) {
      if (off + 8 > config.size()) return {AcsReading::Kind::kMalformed, 0};
      auto control = static_cast<std::uint16_t>(u8(off + 6) | (u8(off + 7) << 8));
      return {AcsReading::Kind::kPresent, control};
    }
    // Next pointer: bits 31:20, the low two bits reserved (PCIe base spec 7.6.3).
    std::size_t next = (header >> 20) & 0xffcu;
    if (next == 0) return {AcsReading::Kind::kAbsent, 0};
    off = next;
  }
  return {AcsReading::Kind::kMalformed, 0};
}

void read_host_identity(const FileSystem& fs, HostFacts& host, std::vector<std::string>& notes) {
  const std::string hostname_path = "/proc/sys/kernel/hostname";
  if (auto r = fs.read_file(hostname_path, 4096); r.is_ok()) {
    auto v = trim(r.value());
    if (!v.empty() && is_printable(v)) host.hostname = std::string(v);
  } else {
    notes.push_back(unreadable_note("host", hostname_path, r.status()));
  }

  const std::string osrelease_path = "/proc/sys/kernel/osrelease";
  if (auto r = fs.read_file(osrelease_path, 4096); r.is_ok()) {
    auto v = trim(r.value());
    if (!v.empty() && is_printable(v)) host.kernel = std::string(v);
  } else {
    notes.push_back(unreadable_note("host", osrelease_path, r.status()));
  }

  // os-release(5): /etc/os-release first, /usr/lib/os-release as the fallback.
  auto os = fs.read_file("/etc/os-release", 64 << 10);
  if (!os.is_ok()) os = fs.read_file("/usr/lib/os-release", 64 << 10);
  if (os.is_ok()) {
    host.os = os_release_value(os.value(), "PRETTY_NAME");
    if (!host.os) host.os = os_release_value(os.value(), "NAME");
  } else {
    notes.push_back(unreadable_note("host", "/etc/os-release", os.status()));
  }

  if (auto r = fs.read_file("/proc/cpuinfo"); r.is_ok()) {
    apply_cpuinfo(fs, parse_cpuinfo(r.value()), host, notes);
  } else {
    notes.push_back(unreadable_note("host", "/proc/cpuinfo", r.status()));
  }

  if (auto r = fs.read_file("/proc/meminfo", 1 << 20); r.is_ok()) {
    host.memory_bytes = meminfo_bytes(r.value(), "MemTotal");
  } else {
    notes.push_back(unreadable_note("host", "/proc/meminfo", r.status()));
  }
}

std::optional<double> read_uptime(const FileSystem& fs, std::vector<std::string>& notes) {
  const std::string path = "/proc/uptime";
  auto r = fs.read_file(path, 4096);
  if (!r.is_ok()) {
    notes.push_back(unreadable_note("host", path, r.status()));
    return std::nullopt;
  }
  // "354123.45 5612345.12": seconds since boot, then idle seconds summed over the CPUs.
  std::string_view text = trim(r.value());
  auto v = parse_double(text.substr(0, text.find_first_of(" \t\n")));
  // Below a century of uptime, or it is not an uptime.
  if (!v || !std::isfinite(*v) || *v < 0 || *v > 3.2e9) {
    notes.push_back("host: " + path + " holds no uptime; Xid ages cannot be told");
    return std::nullopt;
  }
  return *v;
}

Result<std::vector<NumaNode>> read_numa_nodes(const FileSystem& fs) {
  const std::string base = "/sys/devices/system/node";
  auto names = fs.list_dir(base);
  if (!names.is_ok()) {
    return Status(names.status().code(), unreadable_note("NUMA", base, names.status()));
  }
  std::vector<NumaNode> nodes;
  std::size_t seen = 0;
  for (const auto& n : names.value()) {
    if (++seen > kMaxDirEntries) break;
    if (n.size() < 5 || !starts_with(n, "node")) continue;
    auto id = parse_int(std::string_view(n).substr(4));
    if (!id || *id < 0 || *id > 1 << 20 || !std::isdigit(static_cast<unsigned char>(n[4]))) {
      continue;
    }
    NumaNode node;
    node.id = static_cast<int>(*id);
    const std::string dir = base + "/" + n + "/";
    if (auto list = fs.read_file(dir + "cpulist", 1 << 16); list.is_ok()) {
      if (auto cpus = parse_cpu_list(list.value())) node.cpus = std::move(*cpus);
    }
    if (auto mem = fs.read_file(dir + "meminfo", 1 << 16); mem.is_ok()) {
      node.memory_bytes = meminfo_bytes(mem.value(), "MemTotal");
    }
    if (auto dist = fs.read_file(dir + "distance", 1 << 16); dist.is_ok()) {
      std::vector<int> row;
      bool ok = true;
      for (auto w : split_words(dist.value())) {
        auto d = parse_int(w);
        if (!d || *d < 0 || *d > 255) {  // SLIT entries are one byte
          ok = false;
          break;
        }
        row.push_back(static_cast<int>(*d));
      }
      if (ok) node.distances = std::move(row);
    }
    nodes.push_back(std::move(node));
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  return nodes;
}

void read_nvidia_driver_info(const FileSystem& fs, HostFacts& host,
                             std::vector<std::string>& notes) {
  if (!fs.exists("/proc/driver/nvidia")) {
    notes.push_back("NVIDIA kernel driver not loaded (/proc/driver/nvidia absent)");
    return;
  }

  const std::string params_path = "/proc/driver/nvidia/params";
  if (auto r = fs.read_file(params_path, 1 << 20); r.is_ok()) {
    for (auto line : split_lines(r.value())) {
      auto kv = key_value(line);
      // String params left at their default print as "": nothing to tell.
      if (!kv || !is_printable(kv->second) || kv->second == "\"\"") continue;
      for (const auto& [key, why] : kDriverParamAllowList) {
        if (kv->first == key) host.driver_params[std::string(key)] = std::string(kv->second);
      }
      if (kv->first == "NvLinkDisable") {
        if (auto v = parse_int(kv->second)) host.nvlink_disabled_by_driver = *v != 0;
      }
    }
  } else {
    notes.push_back(unreadable_note("NVIDIA driver params", params_path, r.status()));
  }

  if (host.driver_version) return;
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024"
  const std::string version_path = "/proc/driver/nvidia/version";
  auto r = fs.read_file(version_path, 1 << 16);
  if (!r.is_ok()) {
    notes.push_back(unreadable_note("NVIDIA driver version", version_path, r.status()));
    return;
  }
  for (auto line : split_lines(r.value())) {
    if (!starts_with(trim(line), "NVRM version:")) continue;
    for (auto w : split_words(line)) {
      bool digits_and_dots = std::all_of(w.begin(), w.end(),
                                         [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
      if (digits_and_dots && w.find('.') != std::string_view::npos && w.front() != '.' &&
          w.back() != '.') {
        host.driver_version = std::string(w);
        return;
      }
    }
  }
  notes.push_back("NVIDIA driver version: no version number in " + version_path);
}

IommuState read_iommu_state(const FileSystem& fs) {
  IommuState st;
  auto has_entries = [&](const std::string& path) -> std::optional<bool> {
    auto r = fs.list_dir(path);
    if (r.is_ok()) return !r.value().empty();
    if (r.status().code() == StatusCode::kNotFound) return false;
    return std::nullopt;
  };
  auto units = has_entries("/sys/class/iommu");
  auto groups = has_entries("/sys/kernel/iommu_groups");
  if (units.value_or(false) || groups.value_or(false)) {
    st.active = true;
  } else if (units && groups) {
    st.active = false;
  }

  // The default domain type of the groups is what the kernel actually did
  // (kernels >= 5.11); the cmdline only says what was asked for.
  if (groups.value_or(false)) {
    auto names = fs.list_dir("/sys/kernel/iommu_groups");
    int identity = 0;
    int translated = 0;
    std::size_t seen = 0;
    for (const auto& g : names.ok_value().value_or(std::vector<std::string>{})) {
      if (++seen > 4096) break;
      auto type = read_value(fs, "/sys/kernel/iommu_groups/" + g + "/type");
      if (!type) continue;
      if (*type == "identity") ++identity;
      if (starts_with(*type, "DMA")) ++translated;
    }
    if (translated > 0) {
      st.passthrough = false;
    } else if (identity > 0) {
      st.passthrough = true;
    }
  }

  auto cmdline = fs.read_file("/proc/cmdline", 1 << 16);
  if (!cmdline.is_ok()) return st;
  std::string hint;
  std::optional<bool> asked_passthrough;
  for (auto w : split_words(cmdline.value())) {
    auto key = w.substr(0, w.find('='));
    bool relevant = key == "iommu" || key == "intel_iommu" || key == "amd_iommu" ||
                    starts_with(key, "iommu.") || key == "pcie_acs_override" ||
                    (key == "pci" && w.find("acs") != std::string_view::npos);
    if (!relevant || !is_printable(w)) continue;
    if (!hint.empty()) hint += ' ';
    hint += w;
    std::string lw = to_lower(w);
    if (lw == "iommu=pt" || lw == "amd_iommu=pt" || lw == "iommu.passthrough=1" ||
        lw == "iommu.passthrough=on" || lw == "iommu.passthrough=y") {
      asked_passthrough = true;
    } else if (lw == "iommu=nopt" || lw == "iommu.passthrough=0" || lw == "iommu.passthrough=off" ||
               lw == "iommu.passthrough=n") {
      asked_passthrough = false;
    }
  }
  if (!hint.empty()) st.cmdline_hint = hint;
  if (!st.passthrough && asked_passthrough) st.passthrough = asked_passthrough;
  return st;
}

void read_gpu_sysfs(const FileSystem& fs, GpuFacts& gpu, std::vector<std::string>& notes) {
  const std::string who = "GPU" + std::to_string(gpu.index);
  if (!gpu.pci_bus_id) {
    notes.push_back(who + ": no PCI bus id, sysfs PCIe/NUMA/ACS facts not read");
    return;
  }
  auto bdf = normalize_pci_bus_id(*gpu.pci_bus_id);
  if (!bdf) {
    notes.push_back(who + ": PCI bus id \"" + *gpu.pci_bus_id + "\" not understood");
    return;
  }
  const std::string dir = "/sys/bus/pci/devices/" + *bdf;
  if (!fs.exists(dir)) {
    notes.push_back(who + ": " + dir + " absent (sysfs PCIe/NUMA/ACS facts unknown)");
    return;
  }

  // Bridges between the root complex and the GPU, root port first.
  std::optional<std::vector<std::pair<std::string, std::string>>> bridges;  // (bdf, sysfs path)
  auto real = fs.real_path(dir);
  if (real.is_ok()) {
    bridges.emplace();
    std::string prefix;
    for (auto part : split(real.value(), '/')) {
      if (part.empty()) continue;
      prefix += "/";
      prefix += part;
      if (part == *bdf) break;
      if (is_bdf(part)) bridges->emplace_back(std::string(part), prefix);
    }
  }

  // ---- link
  auto speed_gen = [&](const std::string& path) {
    auto v = read_value(fs, path);
    return v ? pcie_gen_from_speed(*v) : std::nullopt;
  };
  auto width = [&](const std::string& path) -> std::optional<int> {
    auto v = read_int(fs, path);
    if (!v || *v <= 0 || *v > 32) return std::nullopt;  // 0: link down or unknown
    return static_cast<int>(*v);
  };
  auto gen_cur = speed_gen(dir + "/current_link_speed");
  auto gen_dev = speed_gen(dir + "/max_link_speed");
  auto width_cur = width(dir + "/current_link_width");
  auto width_dev = width(dir + "/max_link_width");
  // What the slot allows: the lower of the GPU and the port above it. A GPU
  // directly under the root complex (VMs) has no port to limit it.
  std::optional<int> gen_max = gen_dev;
  std::optional<int> width_max = width_dev;
  if (!bridges) {
    gen_max.reset();
    width_max.reset();
  } else if (!bridges->empty()) {
    const std::string& port = bridges->back().second;
    auto port_gen = speed_gen(port + "/max_link_speed");
    auto port_width = width(port + "/max_link_width");
    gen_max =
        gen_dev && port_gen ? std::optional<int>(std::min(*gen_dev, *port_gen)) : std::nullopt;
    width_max = width_dev && port_width ? std::optional<int>(std::min(*width_dev, *port_width))
                                        : std::nullopt;
  }
  if (!gpu.pcie.gen_current) gpu.pcie.gen_current = gen_cur;
  if (!gpu.pcie.gen_device_max) gpu.pcie.gen_device_max = gen_dev;
  if (!gpu.pcie.gen_max) gpu.pcie.gen_max = gen_max;
  if (!gpu.pcie.width_current) gpu.pcie.width_current = width_cur;
  if (!gpu.pcie.width_max) gpu.pcie.width_max = width_max;

  // ---- locality
  if (!gpu.numa_node) {
    if (auto n = read_int(fs, dir + "/numa_node"); n && *n >= 0 && *n < (1 << 20)) {
      gpu.numa_node = static_cast<int>(*n);
    }
  }
  if (gpu.cpu_affinity.empty()) {
    if (auto v = read_value(fs, dir + "/local_cpulist")) {
      if (auto cpus = parse_cpu_list(*v)) gpu.cpu_affinity = std::move(*cpus);
    }
  }
  if (!gpu.iommu_group && fs.exists(dir + "/iommu_group")) {
    if (auto g = fs.real_path(dir + "/iommu_group"); g.is_ok()) {
      auto name = g.value().substr(g.value().rfind('/') + 1);
      if (parse_int(name)) gpu.iommu_group = name;
    }
  }

  // ---- ACS on the bridges above
  const std::string acs_unknown = "ACS state of bridges above " + who + " unknown: ";
  if (!bridges) {
    notes.push_back(acs_unknown + "real path of " + dir + " unreadable (" +
                    read_failure_words(real.status()) + ")");
    return;
  }
  std::vector<std::string> redirecting;
  std::vector<std::string> reasons;
  auto add_reason = [&](std::string r) {
    if (std::find(reasons.begin(), reasons.end(), r) == reasons.end()) reasons.push_back(r);
  };
  for (const auto& [bridge, path] : *bridges) {
    auto config = fs.read_file(path + "/config", 4096);
    if (!config.is_ok()) {
      add_reason("config space of " + bridge + " unreadable (" +
                 read_failure_words(config.status()) + ")");
      continue;
    }
    AcsReading acs = find_acs(config.value());
    switch (acs.kind) {
      case AcsReading::Kind::kPresent:
        if (acs.control & ((1u << 2) | (1u << 3))) {
          redirecting.push_back(bridge + " (" + acs_flag_names(acs.control) + ")");
        }
        break;
      case AcsReading::Kind::kAbsent:
        break;
      case AcsReading::Kind::kTruncated:
        // Unprivileged reads of config stop after the 64-byte header.
        add_reason(config.value().size() <= 64
                       ? std::string("PCI config space needs root")
                       : "extended PCI config space of " + bridge + " not readable");
        break;
      case AcsReading::Kind::kMalformed:
        add_reason("malformed extended capability list in config space of " + bridge);
        break;
    }
  }
  if (!redirecting.empty()) {
    gpu.acs_redirects_p2p = true;
    gpu.acs_bridges = std::move(redirecting);
  } else if (reasons.empty()) {
    gpu.acs_redirects_p2p = false;
  } else {
    std::string joined;
    for (const auto& r : reasons) joined += (joined.empty() ? "" : "; ") + r;
    notes.push_back(acs_unknown + joined);
  }
}

}  // namespace gpuvet::probe
