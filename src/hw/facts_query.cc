#include "hw/facts_query.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/util.h"

namespace gpuvet::hw {

const GpuFacts* find_gpu(const Facts& f, int index) {
  // GPUs are nearly always listed in index order from 0: the per-pair rules of a large node
  // then find each in one step instead of a scan.
  if (index >= 0 && static_cast<std::size_t>(index) < f.gpus.size() &&
      f.gpus[static_cast<std::size_t>(index)].index == index)
    return &f.gpus[static_cast<std::size_t>(index)];
  for (const auto& g : f.gpus)
    if (g.index == index) return &g;
  return nullptr;
}

const GpuFacts* find_gpu_by_bus(const Facts& f, std::string_view pci_bus_id) {
  const auto want = normalize_pci_bus_id(pci_bus_id);
  if (!want) return nullptr;
  for (const auto& g : f.gpus)
    if (g.pci_bus_id && normalize_pci_bus_id(*g.pci_bus_id) == want) return &g;
  return nullptr;
}

std::optional<double> pcie_gbps(int gen, int width) {
  // Per lane and direction: transfer rate (GT/s) × line-encoding efficiency / 8 bits. PCI
  // Express Base Specification: 2.5 GT/s (Gen1, Rev 1.1) and 5.0 GT/s (Gen2, Rev 2.0) with
  // 8b/10b (§4.2.1); 8.0 (Gen3, Rev 3.0), 16.0 (Gen4, Rev 4.0) and 32.0 GT/s (Gen5, Rev 5.0)
  // with 128b/130b (§4.2.2); 64.0 GT/s (Gen6, Rev 6.0) in Flit Mode, where of each 256-byte
  // flit 242 bytes carry TLPs and DLLPs and 14 the CRC and FEC. Gen4 x16: 16 × 16 × 128/130 /
  // 8 = 31.5 GB/s.
  struct Rate {
    double gt_s;
    double encoding;
  };
  static constexpr Rate kRates[] = {
      {0, 0},
      {2.5, 8.0 / 10.0},
      {5.0, 8.0 / 10.0},
      {8.0, 128.0 / 130.0},
      {16.0, 128.0 / 130.0},
      {32.0, 128.0 / 130.0},
      {64.0, 242.0 / 256.0},
  };
  if (gen < 1 || gen > 6 || width < 1 || width > 32) return std::nullopt;
  return kRates[gen].gt_s * kRates[gen].encoding / 8.0 * width;
}

std::string format_number(double v, int decimals) {
  if (!std::isfinite(v)) return "?";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  return s;
}

std::map<int, std::vector<int>> node_cpus(const Facts& f) {
  std::map<int, std::vector<int>> nodes;
  for (const auto& n : f.host.numa_nodes)
    if (!n.cpus.empty()) nodes[n.id] = n.cpus;
  for (const auto& g : f.gpus)
    if (g.numa_node && *g.numa_node >= 0 && !g.cpu_affinity.empty() && !nodes.count(*g.numa_node))
      nodes[*g.numa_node] = g.cpu_affinity;
  for (auto& [id, cpus] : nodes) std::sort(cpus.begin(), cpus.end());
  return nodes;
}

std::optional<int> gpu_node(const GpuFacts& g, const std::map<int, std::vector<int>>& nodes) {
  if (g.numa_node && *g.numa_node >= 0) return g.numa_node;
  if (g.cpu_affinity.empty()) return std::nullopt;
  std::optional<int> found;
  for (const auto& node : nodes) {
    // (A plain pair, not a structured binding: clang 14 cannot capture those in a lambda.)
    const std::vector<int>& cpus = node.second;
    const bool all = std::all_of(g.cpu_affinity.begin(), g.cpu_affinity.end(), [&](int cpu) {
      return std::binary_search(cpus.begin(), cpus.end(), cpu);
    });
    if (all) {
      if (found) return std::nullopt;  // ambiguous (overlapping node lists)
      found = node.first;
    }
  }
  return found;
}

std::optional<PsiChoice> psi_choice(const PsiReading& r, double window_s) {
  const bool windowed = r.some_window_pct && (window_s >= kPsiWindowMinS || !r.some_avg10);
  const std::optional<double> some = windowed ? r.some_window_pct : r.some_avg10;
  if (!some) return std::nullopt;
  return PsiChoice{*some, windowed ? r.full_window_pct : r.full_avg10, windowed};
}

}  // namespace gpuvet::hw
