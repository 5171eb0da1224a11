#include "hw/expectations.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "core/util.h"
#include "hw/facts_query.h"

namespace gpuvet::hw {
namespace {

// `model` (lower case) as a token of `name_lower`: not preceded by a letter or digit ("h200"
// is not in "gh200") and not followed by a digit ("a10" is not in "a100"; "a10g" is an A10).
bool has_model(std::string_view name_lower, std::string_view model) {
  std::size_t p = 0;
  while ((p = name_lower.find(model, p)) != std::string_view::npos) {
    const std::size_t end = p + model.size();
    const bool before_ok = p == 0 || !std::isalnum(static_cast<unsigned char>(name_lower[p - 1]));
    const bool after_ok =
        end == name_lower.size() || !std::isdigit(static_cast<unsigned char>(name_lower[end]));
    if (before_ok && after_ok) return true;
    ++p;
  }
  return false;
}

bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

std::string gbps_text(double v) { return format_number(v, 1); }

// Links joining a and b: the pair's NV# count, else the active links of either GPU whose far
// end is the other.
std::optional<int> nvlink_count(const Facts& f, const GpuPair& pair) {
  if (pair.nvlinks && *pair.nvlinks > 0) return pair.nvlinks;
  auto count = [&](int from, int to) {
    int n = 0;
    if (const GpuFacts* g = find_gpu(f, from))
      for (const auto& l : g->nvlinks)
        if (l.remote_gpu == to && l.active.value_or(true)) ++n;
    return n;
  };
  const int n = std::max(count(pair.a, pair.b), count(pair.b, pair.a));
  if (n > 0) return n;
  return std::nullopt;
}

struct LinkRate {
  double gbps = 0;
  std::string basis;  // "25 GB/s" or "25 GB/s by NVLink 4"
};

// Per-link rate: what the links themselves report (nvidia-smi nvlink -s, the slowest of the
// links joining the pair), else the GPU model, else the NVLink version, else the default.
LinkRate nvlink_rate(const Facts& f, const GpuPair& pair) {
  std::optional<double> reported;
  std::optional<int> version;
  std::optional<std::string> name;
  for (const auto& [from, to] : {std::pair{pair.a, pair.b}, std::pair{pair.b, pair.a}}) {
    const GpuFacts* g = find_gpu(f, from);
    if (!g) continue;
    if (!name && g->name) name = g->name;
    for (const auto& l : g->nvlinks) {
      if (l.remote_gpu && *l.remote_gpu != to) continue;
      if (l.active == false) continue;
      if (l.speed_gbps && *l.speed_gbps > 0)
        reported = reported ? std::min(*reported, *l.speed_gbps) : *l.speed_gbps;
      if (l.version && !version) version = l.version;
    }
  }
  if (reported)
    return {*reported, fmt::format("{} GB/s reported per link", format_number(*reported, 3))};
  if (name)
    if (auto r = nvlink_link_gbps_for_model(*name))
      return {*r, fmt::format("{} GB/s", gbps_text(*r))};
  if (version)
    if (auto r = nvlink_link_gbps_for_version(*version))
      return {*r, fmt::format("{} GB/s by NVLink {}", gbps_text(*r), *version)};
  return {kDefaultNvlinkLinkGbps,
          fmt::format("{} GB/s assumed per link", gbps_text(kDefaultNvlinkLinkGbps))};
}

}  // namespace

// ---------------------------------------------------------------- PCIe

std::optional<LinkExpectation> expected_pcie(int gen, int width) {
  // Theoretical rate: PCI-SIG line rates after encoding (facts_query.cc pcie_gbps): Gen3 8 GT/s,
  // Gen4 16, Gen5 32 GT/s with 128b/130b, ≈ 0.985 / 1.97 / 3.94 GB/s per lane and direction.
  // Practical share: nvbandwidth host_to_device_memcpy_ce on an H200 Gen5 x16 read 53.9 of
  // 63.0 GB/s (0.86, shared/device-notes.md); the nvbandwidth README's 8-GPU Gen4 box 26.2 of
  // 31.5 GB/s (0.83).
  auto theoretical = pcie_gbps(gen, width);
  if (!theoretical) return std::nullopt;
  LinkExpectation e;
  e.gen = gen;
  e.width = width;
  e.theoretical_gbps = *theoretical;
  e.practical_gbps = *theoretical * kPciePracticalEfficiency;
  return e;
}

std::optional<LinkExpectation> expected_host_device(const GpuFacts& g) {
  if (!g.pcie.gen_max || !g.pcie.width_max) return std::nullopt;
  return expected_pcie(*g.pcie.gen_max, *g.pcie.width_max);
}

// ---------------------------------------------------------------- NVLink

std::optional<double> nvlink_link_gbps_for_model(std::string_view gpu_name) {
  // Per link and direction, from NVIDIA's data sheets (total NVLink bandwidth / links / 2):
  //   P100 NVLink 1: 160 GB/s over 4 links → 20;  V100 NVLink 2: 300 GB/s over 6 → 25;
  //   A100 NVLink 3: 600 GB/s over 12 → 25 (A800: 400 over 8);
  //   H100/H200/H800/H20/GH200 NVLink 4: 900 GB/s over 18 → 25;
  //   B200/GB200/B300 NVLink 5: 1.8 TB/s over 18 → 50.
  // nvidia-smi nvlink -s prints the signalling rate: 25 GB/s on A100, 26.562 on H100.
  struct Row {
    std::string_view model;
    double gbps;
  };
  static constexpr Row kRows[] = {
      {"gb300", 50}, {"b300", 50}, {"gb200", 50}, {"b200", 50}, {"b100", 50},
      {"gh200", 25}, {"h200", 25}, {"h100", 25},  {"h800", 25}, {"h20", 25},
      {"a100", 25},  {"a800", 25}, {"v100", 25},  {"p100", 20},
  };
  const std::string name = to_lower(gpu_name);
  for (const auto& r : kRows)
    if (has_model(name, r.model)) return r.gbps;
  return std::nullopt;
}

std::optional<double> nvlink_link_gbps_for_version(int version) {
  // NVLink 1 (Pascal) 20 GB/s per link and direction; 2 (Volta), 3 (Ampere) and 4 (Hopper)
  // 25 GB/s; 5 (Blackwell) 50 GB/s — the same data sheets as above.
  switch (version) {
    case 1:
      return 20.0;
    case 2:
    case 3:
    case 4:
      return 25.0;
    case 5:
      return 50.0;
    default:
      return std::nullopt;
  }
}

// ---------------------------------------------------------------- peer

std::optional<PeerExpectation> expected_peer(const Facts& f, const GpuPair& pair) {
  PeerExpectation e;
  e.path = pair.path;
  switch (pair.path) {
    case PathType::kNVLink: {
      const auto links = nvlink_count(f, pair);
      if (!links) return std::nullopt;
      const LinkRate rate = nvlink_rate(f, pair);
      e.gbps = *links * rate.gbps;
      e.basis = fmt::format("{} links × {}", *links, rate.basis);
      return e;
    }
    case PathType::kPIX:
    case PathType::kPXB:
    case PathType::kPHB:
    case PathType::kNODE:
    case PathType::kSYS: {
      const GpuFacts* ga = find_gpu(f, pair.a);
      const GpuFacts* gb = find_gpu(f, pair.b);
      if (!ga || !gb) return std::nullopt;
      auto la = expected_host_device(*ga);
      auto lb = expected_host_device(*gb);
      if (!la || !lb) return std::nullopt;
      const LinkExpectation& slow = la->theoretical_gbps <= lb->theoretical_gbps ? *la : *lb;
      const std::string link = fmt::format("Gen{} x{} link", slow.gen, slow.width);
      // A PCIe switch (PIX, PXB) forwards peer traffic at link rate: the nvbandwidth issue-50
      // RTX A6000 box reads 26.3 GB/s between GPUs under one switch (Gen4 x16, 31.5). Through
      // the host bridge the root complex forwards it, more slowly (PHB, NODE); across sockets
      // it also crosses the CPU interconnect (SYS): the same box reads 21.9 GB/s between its
      // two halves, and cross-socket P2P is often refused and staged through host memory.
      if (pair.path == PathType::kPIX || pair.path == PathType::kPXB) {
        e.gbps = slow.theoretical_gbps;
        e.basis = "the " + link + " of the slower GPU";
      } else if (pair.path == PathType::kSYS) {
        e.gbps = slow.theoretical_gbps * kCrossSocketPeerFactor;
        e.basis = fmt::format("{} × a {}: the traffic crosses the CPU interconnect",
                              format_number(kCrossSocketPeerFactor, 2), link);
      } else {
        e.gbps = slow.theoretical_gbps * kHostBridgePeerFactor;
        e.basis = fmt::format("{} × a {}: the CPU host bridge forwards the traffic",
                              format_number(kHostBridgePeerFactor, 2), link);
      }
      return e;
    }
    case PathType::kSelf:
    case PathType::kUnknown:
      return std::nullopt;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- device memory

std::optional<MemoryExpectation> expected_device_memory(std::string_view gpu_name) {
  const std::string n = to_lower(gpu_name);
  auto make = [](std::string model, double peak) {
    MemoryExpectation e;
    e.model = std::move(model);
    e.peak_gbps = peak;
    e.copy_gbps = peak / 2;
    e.practical_copy_gbps = e.copy_gbps * kMemoryCopyEfficiency;
    return std::optional<MemoryExpectation>(std::move(e));
  };
  // Peak memory bandwidth from NVIDIA's product data sheets.
  // GH200 ships with 96 GB HBM3 (4.0 TB/s) or 144 GB HBM3e (4.9 TB/s): the name alone does not
  // tell which.
  if (has_model(n, "gh200")) return std::nullopt;
  // H200 SXM and H200 NVL: 4.8 TB/s HBM3e (H200 data sheet). nvbandwidth device_local_copy
  // read 2091.5 GB/s on one (shared/device-notes.md): 0.87 of 2400.
  if (has_model(n, "h200")) return make("H200", 4800);
  // H100 data sheet: SXM 3.35 TB/s, PCIe 2.0 TB/s, NVL 3.9 TB/s.
  if (has_model(n, "h100")) {
    if (contains(n, "nvl")) return make("H100 NVL", 3900);
    if (contains(n, "pcie")) return make("H100 PCIe", 2000);
    return make("H100 SXM", 3350);
  }
  // A100 data sheet: 80GB SXM 2,039 GB/s, 80GB PCIe 1,935 GB/s, 40GB 1,555 GB/s.
  if (has_model(n, "a100")) {
    if (contains(n, "80gb")) {
      if (contains(n, "pcie")) return make("A100 80GB PCIe", 1935);
      return make("A100 80GB SXM", 2039);
    }
    if (contains(n, "40gb")) return make("A100 40GB", 1555);
    return std::nullopt;  // memory size not in the name: 1,555 or ~2,000
  }
  // V100 data sheet: 900 GB/s (SXM2 and PCIe); V100S PCIe 1,134 GB/s.
  if (has_model(n, "v100s")) return make("V100S", 1134);
  if (has_model(n, "v100")) return make("V100", 900);
  // L40S and L40: 864 GB/s GDDR6; A40: 696 GB/s; A30: 933 GB/s HBM2; A10 (and AWS A10G):
  // 600 GB/s GDDR6; L4: 300 GB/s — their data sheets.
  if (has_model(n, "l40s")) return make("L40S", 864);
  if (has_model(n, "l40")) return make("L40", 864);
  if (has_model(n, "a40")) return make("A40", 696);
  if (has_model(n, "a30")) return make("A30", 933);
  if (has_model(n, "a10")) return make("A10", 600);  // "a10g" too: a letter may follow
  if (has_model(n, "l4")) return make("L4", 300);
  return std::nullopt;
}

}  // namespace gpuvet::hw
