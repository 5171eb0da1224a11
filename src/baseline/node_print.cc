// src/baseline/node_print.cc — a node's fingerprint from its Facts, and short hashes of it.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "baseline/text_hash.h"
#include "gpuvet/baseline.h"

namespace gpuvet {

std::string gpu_label(int index) { return fmt::format("GPU{}", index); }
std::string pair_label(int a, int b) { return fmt::format("GPU{}-GPU{}", a, b); }

namespace {

std::string path_text(const GpuPair& p) {
  if (p.path == PathType::kUnknown) return "?";
  if (p.path == PathType::kNVLink)
    return p.nvlinks ? fmt::format("NV{}", *p.nvlinks) : std::string("NV");
  return path_type_name(p.path);
}

std::optional<int> active_links(const GpuFacts& g) {
  int up = 0;
  bool known = false;
  for (const auto& l : g.nvlinks) {
    if (!l.active) continue;
    known = true;
    if (*l.active) ++up;
  }
  if (!known && !g.nvlinks.empty()) return std::nullopt;
  return up;  // no NVLink at all reads 0 (a PCIe-only GPU)
}

template <class T>
std::string or_unknown(const std::optional<T>& v) {
  if (!v) return "?";
  if constexpr (std::is_same_v<T, std::string>)
    return *v;
  else
    return fmt::format("{}", *v);
}

}  // namespace

NodePrint node_print(const Facts& facts) {
  NodePrint n;
  n.host = facts.host.hostname;
  n.driver_version = facts.host.driver_version;
  std::set<std::string> names;
  for (const auto& g : facts.gpus) {
    GpuPrint p;
    p.index = g.index;
    p.name = g.name;
    p.uuid = g.uuid;
    p.pci_bus_id = g.pci_bus_id;
    p.pcie_gen_max = g.pcie.gen_max;
    p.pcie_width_max = g.pcie.width_max;
    p.pcie_width = g.pcie.width_current;
    p.numa_node = g.numa_node;
    p.nvlinks_up = active_links(g);
    if (g.fabric.state && *g.fabric.state != "not_supported") p.fabric = g.fabric.state;
    p.vbios = g.vbios;
    p.ecc_enabled = g.ecc.enabled;
    p.power_limit_w = g.power.limit_w;
    if (g.name) names.insert(*g.name);
    n.gpus.push_back(std::move(p));
  }
  std::sort(n.gpus.begin(), n.gpus.end(),
            [](const GpuPrint& x, const GpuPrint& y) { return x.index < y.index; });
  n.gpu_count = static_cast<int>(n.gpus.size());
  if (names.size() == 1) {
    n.gpu_model = *names.begin();
  } else if (names.size() > 1) {
    std::string all;
    for (const auto& s : names) all += (all.empty() ? "" : ", ") + s;
    n.gpu_model = "mixed: " + all;
  }
  for (const auto& p : facts.pairs) {
    PairPrint q;
    q.a = std::min(p.a, p.b);
    q.b = std::max(p.a, p.b);
    if (q.a == q.b) continue;
    q.path = path_text(p);
    if (p.p2p_read) q.p2p = p2p_status_code(*p.p2p_read);
    n.pairs.push_back(std::move(q));
  }
  std::sort(n.pairs.begin(), n.pairs.end(), [](const PairPrint& x, const PairPrint& y) {
    return std::tie(x.a, x.b) < std::tie(y.a, y.b);
  });
  n.pairs.erase(
      std::unique(n.pairs.begin(), n.pairs.end(),
                  [](const PairPrint& x, const PairPrint& y) { return x.a == y.a && x.b == y.b; }),
      n.pairs.end());
  return n;
}

std::string print_hash(const NodePrint& print, std::string_view part) {
  std::string canon;
  if (part == "topology") {
    for (const auto& p : print.pairs) canon += fmt::format("{}-{}:{};", p.a, p.b, p.path);
  } else if (part == "p2p") {
    for (const auto& p : print.pairs)
      canon += fmt::format("{}-{}:{};", p.a, p.b, or_unknown(p.p2p));
  } else if (part == "links") {
    for (const auto& g : print.gpus)
      canon += fmt::format("{}:g{}x{}w{}nv{}n{};", g.index, or_unknown(g.pcie_gen_max),
                           or_unknown(g.pcie_width_max), or_unknown(g.pcie_width),
                           or_unknown(g.nvlinks_up), or_unknown(g.numa_node));
  } else {
    canon = std::string(part);
  }
  return text_hash(canon);
}

std::string TextHash::hex() const { return fmt::format("{:016x}", state_); }

std::string text_hash(std::string_view text) { return TextHash().add(text).hex(); }

}  // namespace gpuvet
