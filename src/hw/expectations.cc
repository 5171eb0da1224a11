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

// Per-link rate: NVIDIA's published figure for the GPU model, else for the NVLink version,
// else what the links themselves report (nvidia-smi nvlink -s, the slowest of the links
// joining the pair: a signalling rate, 26.562 GB/s on H100 against the published 25), else
// the default.
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
  if (name)
    if (auto r = nvlink_link_gbps_for_model(*name))
      return {*r, fmt::format("{} GB/s", gbps_text(*r))};
  if (version)
    if (auto r = nvlink_link_gbps_for_version(*version))
      return {*r, fmt::format("{} GB/s by NVLink {}", gbps_text(*r), *version)};
  if (reported)
    return {*reported, fmt::format("{} GB/s reported per link", format_number(*reported, 3))};
  return {kDefaultNvlinkLinkGbps,
          fmt::format("{} GB/s assumed per link", gbps_text(kDefaultNvlinkLinkGbps))};
}

}  // namespace

// ---------------------------------------------------------------- PCIe

std::optional<LinkExpectation> expected_pcie(int gen, int width) {
  // Theoretical rate: transfer rate × lanes × line encoding (pcie_gbps, which cites the PCIe
  // Base Specification revisions); the protocol ceiling: the TLP/DLLP arithmetic in
  // expectations.h. Neither is taken from a measurement.
  auto theoretical = pcie_gbps(gen, width);
  if (!theoretical) return std::nullopt;
  LinkExpectation e;
  e.gen = gen;
  e.width = width;
  e.theoretical_gbps = *theoretical;
  e.protocol_efficiency = gen >= 6 ? kPcieFlitProtocolEfficiency : kPcieProtocolEfficiency;
  e.protocol_ceiling_gbps = *theoretical * e.protocol_efficiency;
  return e;
}

std::optional<LinkExpectation> expected_host_device(const GpuFacts& g) {
  if (!g.pcie.gen_max || !g.pcie.width_max) return std::nullopt;
  return expected_pcie(*g.pcie.gen_max, *g.pcie.width_max);
}

// ---------------------------------------------------------------- NVLink

std::optional<double> nvlink_link_gbps_for_model(std::string_view gpu_name) {
  // Per link and direction = NVIDIA's published total NVLink bandwidth (both directions
  // together) / links / 2:
  //   P100 (NVLink 1): 160 GB/s over 4 links → 20 — "NVIDIA Tesla P100" whitepaper (2016).
  //   V100 (NVLink 2): 300 GB/s over 6 links → 25 — "NVIDIA Tesla V100 GPU Architecture"
  //     whitepaper (2017).
  //   A100 (NVLink 3): 600 GB/s over 12 links → 25 — "NVIDIA A100 Tensor Core GPU
  //     Architecture" whitepaper (2020); A800: 400 GB/s over 8 (NVIDIA A800 data sheet).
  //   H100/H800/H20/GH200 (NVLink 4): 900 GB/s over 18 links → 25 — "NVIDIA H100 Tensor Core
  //     GPU Architecture" whitepaper (2022), H100 data sheet; H200: 900 GB/s, "NVIDIA H200
  //     Tensor Core GPU" data sheet.
  //   B100/B200/GB200/B300 (NVLink 5): 1.8 TB/s over 18 links → 50 — "NVIDIA Blackwell
  //     Architecture Technical Brief" (2024), NVIDIA's NVLink product page.
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
  // Per link and direction, from the same whitepapers: NVLink 1 (Pascal) 20 GB/s; NVLink 2
  // (Volta), 3 (Ampere) and 4 (Hopper) 25 GB/s; NVLink 5 (Blackwell) 50 GB/s.
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

bool consumer_gpu(std::string_view gpu_name) {
  const std::string n = to_lower(gpu_name);
  return contains(n, "geforce") || contains(n, "titan");
}

std::optional<NvlinkConfig> expected_nvlink(std::string_view gpu_name) {
  const std::string n = to_lower(gpu_name);
  auto bridge = [](int links, std::string what, int gpus = 2) {
    NvlinkConfig c;
    c.form = NvlinkFormFactor::kBridge;
    c.links = links;
    c.max_bridged_gpus = gpus;
    c.what = std::move(what);
    return std::optional<NvlinkConfig>(std::move(c));
  };
  auto board = [](int links, std::string what) {
    NvlinkConfig c;
    c.links = links;
    c.what = std::move(what);
    return std::optional<NvlinkConfig>(std::move(c));
  };
  const bool pcie = contains(n, "pcie");
  const bool nvl = contains(n, "nvl");
  // PCIe cards with bridges, each from its NVIDIA data sheet (NVLink bandwidth / 50 GB/s per
  // link both ways, 28.125 GB/s for NVLink 3 on GA102 boards):
  //   H100 PCIe and H100 NVL: 600 GB/s over three bridges → 12 links (the die lists 18);
  //   H200 NVL: 900 GB/s over 2- or 4-way bridges → 18; A100 PCIe: 600 GB/s → 12;
  //   A800 PCIe: 400 GB/s → 8; RTX A6000/A5500/A5000/A4500, A40, GeForce RTX 3090 (Ti):
  //   112.5 GB/s → 4; TITAN RTX, RTX 2080 Ti, Quadro RTX 8000/6000: 100 GB/s → 2;
  //   RTX 2080 (Super), RTX 2070 Super, Quadro RTX 5000: 50 GB/s → 1.
  if (has_model(n, "h100") && (pcie || nvl))
    return bridge(12, "an H100 PCIe/NVL card's three NVLink bridges (12 of the die's 18 links)");
  if (has_model(n, "h200") && nvl) return bridge(18, "an H200 NVL card's NVLink bridge", 4);
  if (has_model(n, "a100") && pcie) return bridge(12, "an A100 PCIe card's three NVLink bridges");
  if (has_model(n, "a800") && pcie) return bridge(8, "an A800 PCIe card's NVLink bridges");
  for (const char* m : {"rtx a6000", "rtx a5500", "rtx a5000", "rtx a4500", "a40", "rtx 3090"})
    if (has_model(n, m)) return bridge(4, "a 2-GPU NVLink bridge on this card (4 links)");
  for (const char* m : {"titan rtx", "rtx 2080 ti", "quadro rtx 8000", "quadro rtx 6000"})
    if (contains(n, m)) return bridge(2, "a 2-GPU NVLink bridge on this card (2 links)");
  for (const char* m : {"rtx 2080", "rtx 2070 super", "quadro rtx 5000"})
    if (contains(n, m)) return bridge(1, "a 2-GPU NVLink bridge on this card (1 link)");
  if (pcie) return std::nullopt;  // other PCIe boards: no NVLink (V100 PCIe, L40S, …)
  // Baseboards (SXM modules): the whitepapers' link counts, every link wired.
  for (const char* m : {"gb300", "b300", "gb200", "b200", "b100", "h200", "h100", "h20", "gh200"})
    if (has_model(n, m)) return board(18, "an NVLink 4/5 baseboard GPU (18 links)");
  if (has_model(n, "h800")) return board(8, "an H800 SXM baseboard GPU (8 links)");
  if (has_model(n, "a800")) return board(8, "an A800 SXM baseboard GPU (8 links)");
  if (has_model(n, "a100")) return board(12, "an A100 SXM baseboard GPU (12 links)");
  if (has_model(n, "v100") && contains(n, "sxm")) return board(6, "a V100 SXM GPU (6 links)");
  return std::nullopt;
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
      e.theoretical_gbps = *links * rate.gbps;
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
      // The theoretical figure is the link's for every PCIe path: a switch (PIX, PXB)
      // forwards peer traffic at link rate (the nvbandwidth issue-50 RTX A6000 box reads
      // 26.3 GB/s between GPUs under one switch, Gen4 x16); through the host bridge (PHB,
      // NODE) or across sockets (SYS) the root complex forwards it at a rate of its own, for
      // which the allowances in expectations.h stand.
      e.theoretical_gbps = slow.theoretical_gbps;
      e.basis = fmt::format("the Gen{} x{} link of the slower GPU", slow.gen, slow.width);
      if (pair.path == PathType::kSYS) {
        e.allowance = kCrossSocketPeerFactor;
        // Both GPUs on one NUMA node: SYS there means different root complexes, not sockets.
        const bool one_node = ga->numa_node && gb->numa_node && *ga->numa_node == *gb->numa_node;
        e.allowance_reason = one_node ? "the traffic passes between PCIe root complexes inside "
                                        "the CPU"
                                      : "the traffic crosses the CPU interconnect";
      } else if (pair.path == PathType::kPHB || pair.path == PathType::kNODE) {
        e.allowance = kHostBridgePeerFactor;
        e.allowance_reason = "the CPU host bridge forwards the traffic";
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
  auto make = [](std::string model, double peak, std::string source) {
    MemoryExpectation e;
    e.model = std::move(model);
    e.peak_gbps = peak;
    e.copy_gbps = peak / 2;
    e.source = std::move(source);
    return std::optional<MemoryExpectation>(std::move(e));
  };
  // Peak memory bandwidth (GB/s = 1e9 B/s) from NVIDIA's product data sheets, one per row.
  // GH200 ships with 96 GB HBM3 (4.0 TB/s) or 144 GB HBM3e (4.9 TB/s), "NVIDIA GH200 Grace
  // Hopper Superchip" data sheet: the name alone does not tell which.
  if (has_model(n, "gh200")) return std::nullopt;
  // "NVIDIA HGX B200" data sheet (HGX/DGX B200): 8 TB/s HBM3e per GPU.
  if (has_model(n, "b200")) return make("B200", 8000, "NVIDIA HGX B200 data sheet");
  // "NVIDIA H200 Tensor Core GPU" data sheet: H200 SXM and H200 NVL 4.8 TB/s HBM3e.
  if (has_model(n, "h200")) return make("H200", 4800, "NVIDIA H200 Tensor Core GPU data sheet");
  // "NVIDIA H100 Tensor Core GPU" data sheet: SXM 3.35 TB/s, PCIe 2.0 TB/s, NVL 3.9 TB/s.
  if (has_model(n, "h100")) {
    constexpr const char* kH100 = "NVIDIA H100 Tensor Core GPU data sheet";
    if (contains(n, "nvl")) return make("H100 NVL", 3900, kH100);
    if (contains(n, "pcie")) return make("H100 PCIe", 2000, kH100);
    return make("H100 SXM", 3350, kH100);
  }
  // "NVIDIA A100 Tensor Core GPU" data sheet: 80GB SXM 2,039 GB/s, 80GB PCIe 1,935 GB/s,
  // 40GB (SXM and PCIe) 1,555 GB/s.
  if (has_model(n, "a100")) {
    constexpr const char* kA100 = "NVIDIA A100 Tensor Core GPU data sheet";
    if (contains(n, "80gb")) {
      if (contains(n, "pcie")) return make("A100 80GB PCIe", 1935, kA100);
      return make("A100 80GB SXM", 2039, kA100);
    }
    if (contains(n, "40gb")) return make("A100 40GB", 1555, kA100);
    return std::nullopt;  // memory size not in the name: 1,555 or ~2,000
  }
  // "NVIDIA V100 Tensor Core GPU" data sheet: 900 GB/s (SXM2 and PCIe); V100S PCIe 1,134 GB/s.
  if (has_model(n, "v100s")) return make("V100S", 1134, "NVIDIA V100 Tensor Core GPU data sheet");
  if (has_model(n, "v100")) return make("V100", 900, "NVIDIA V100 Tensor Core GPU data sheet");
  // GDDR6 and HBM2 data-centre boards, each from its NVIDIA data sheet: L40S 864 GB/s, L40
  // 864 GB/s, A40 696 GB/s, A30 933 GB/s (HBM2), A10 600 GB/s (AWS A10G alike), L4 300 GB/s.
  if (has_model(n, "l40s")) return make("L40S", 864, "NVIDIA L40S GPU data sheet");
  if (has_model(n, "l40")) return make("L40", 864, "NVIDIA L40 GPU data sheet");
  if (has_model(n, "a40")) return make("A40", 696, "NVIDIA A40 GPU data sheet");
  if (has_model(n, "a30")) return make("A30", 933, "NVIDIA A30 Tensor Core GPU data sheet");
  if (has_model(n, "a10"))  // "a10g" too: a letter may follow
    return make("A10", 600, "NVIDIA A10 Tensor Core GPU data sheet");
  if (has_model(n, "l4")) return make("L4", 300, "NVIDIA L4 Tensor Core GPU data sheet");
  return std::nullopt;
}

double collective_deadline_s(double bus_bytes, double floor_s) {
  return std::max(floor_s, 10.0 * std::max(bus_bytes, 0.0) / (kSlowestBusGbps * 1e9));
}

}  // namespace gpuvet::hw
