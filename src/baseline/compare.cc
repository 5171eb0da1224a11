// src/baseline/compare.cc — a node against its baseline: every pinned value that differs, or
// that the node could not report, becomes a Deviation with "expected X, found Y".
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "gpuvet/baseline.h"

namespace gpuvet {
namespace {

template <class T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? "on" : "off";
  else if constexpr (std::is_same_v<T, double>)
    return fmt::format("{:g}", v);
  else
    return fmt::format("{}", v);
}

// Compares dotted version strings number by number ("580.95.05" < "580.159.04").
int compare_versions(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    unsigned long long x = 0, y = 0;
    while (i < a.size() && a[i] != '.')
      x = x * 10 + static_cast<unsigned>(std::max('0', a[i++]) - '0');
    while (j < b.size() && b[j] != '.')
      y = y * 10 + static_cast<unsigned>(std::max('0', b[j++]) - '0');
    if (x != y) return x < y ? -1 : 1;
    ++i;
    ++j;
  }
  return 0;
}

class Comparer {
 public:
  explicit Comparer(std::vector<Deviation>& out) : out_(out) {}

  // expected is the baseline's value; found the node's (nullopt: not reported).
  template <class T>
  void check(const std::string& key, const std::string& subject, const std::string& what,
             const std::optional<T>& expected, const std::optional<T>& found, Severity severity,
             Expect how = Expect::kEqual, const char* unit = "", const char* prefix = "") {
    if (!expected) return;
    if (!found) {
      add(key, subject, what, prefix + show(*expected) + unit, "unknown", severity, true);
      return;
    }
    bool ok = false;
    if constexpr (std::is_same_v<T, std::string>) {
      ok = how == Expect::kAtLeast ? compare_versions(*found, *expected) >= 0 : *found == *expected;
    } else if constexpr (std::is_same_v<T, bool>) {
      ok = *found == *expected;
    } else {
      ok = how == Expect::kAtLeast ? *found >= *expected : *found == *expected;
    }
    if (!ok)
      add(key, subject, what,
          (how == Expect::kAtLeast ? "at least " : "") + (prefix + show(*expected)) + unit,
          prefix + show(*found) + unit, severity, false);
  }

  void add(const std::string& key, const std::string& subject, const std::string& what,
           const std::string& expected, const std::string& found, Severity severity, bool unknown,
           bool floor = false) {
    Deviation d;
    d.key = key;
    if (!subject.empty()) d.subjects.push_back(subject);
    d.what = what;
    d.severity = severity;
    d.expected = expected;
    d.found = found;
    d.unknown = unknown;
    d.floor = floor;
    const std::string head = subject.empty() ? what : fmt::format("{} {}", subject, what);
    d.evidence = unknown ? fmt::format("{} not reported (baseline {})", head, expected)
                         : fmt::format("{} {} (baseline {})", head, found, expected);
    out_.push_back(std::move(d));
  }

 private:
  std::vector<Deviation>& out_;
};

const GpuPrint* gpu_at(const NodePrint& n, int index) {
  for (const auto& g : n.gpus)
    if (g.index == index) return &g;
  return nullptr;
}

}  // namespace

std::vector<Deviation> compare(const Baseline& baseline, const NodePrint& node, bool check_floors) {
  std::vector<Deviation> out;
  Comparer c(out);
  const NodePrint& e = baseline.expect;
  constexpr Severity kCrit = Severity::kCritical;
  constexpr Severity kWarn = Severity::kWarning;
  c.check<int>("gpu_count", "", "GPU count", e.gpu_count, node.gpu_count, kCrit);
  c.check("gpu_model", "", "GPU model", e.gpu_model, node.gpu_model, kCrit);
  c.check("driver", "", "driver", e.driver_version, node.driver_version, kWarn, baseline.driver);

  for (const auto& want : e.gpus) {
    const std::string gpu = gpu_label(want.index);
    const std::string k = "gpu." + gpu + ".";
    const GpuPrint* have = gpu_at(node, want.index);
    if (!have) {
      c.add(k + "present", gpu, "present", "yes", "no", kCrit, false);
      continue;
    }
    c.check(k + "pci_bus_id", gpu, "bus id", want.pci_bus_id, have->pci_bus_id, kWarn);
    c.check(k + "pcie_gen_max", gpu, "PCIe max", want.pcie_gen_max, have->pcie_gen_max, kCrit,
            Expect::kEqual, "", "Gen");
    c.check(k + "pcie_width_max", gpu, "PCIe max width", want.pcie_width_max, have->pcie_width_max,
            kCrit, Expect::kEqual, "", "x");
    // The current width must reach the baseline's maximum (a GPU drops its generation when
    // idle, never its width).
    if (want.pcie_width_max && have->pcie_width &&
        (!have->pcie_width_max || *have->pcie_width_max == *want.pcie_width_max))
      c.check(k + "pcie_width", gpu, "PCIe width", want.pcie_width_max, have->pcie_width, kCrit,
              Expect::kAtLeast, "", "x");
    c.check(k + "numa_node", gpu, "NUMA node", want.numa_node, have->numa_node, kCrit);
    c.check(k + "nvlinks_up", gpu, "active NVLinks", want.nvlinks_up, have->nvlinks_up, kCrit,
            Expect::kAtLeast);
    c.check(k + "fabric", gpu, "fabric", want.fabric, have->fabric, kCrit);
    c.check(k + "vbios", gpu, "VBIOS", want.vbios, have->vbios, kWarn, baseline.vbios);
    c.check(k + "ecc", gpu, "ECC", want.ecc_enabled, have->ecc_enabled, kCrit);
    c.check(k + "power_limit_w", gpu, "power limit", want.power_limit_w, have->power_limit_w, kWarn,
            baseline.power_limit, " W");
  }

  std::map<std::pair<int, int>, const PairPrint*> have_pairs;
  for (const auto& p : node.pairs) have_pairs[{p.a, p.b}] = &p;
  for (const auto& want : e.pairs) {
    const std::string pair = pair_label(want.a, want.b);
    const auto it = have_pairs.find({want.a, want.b});
    const PairPrint* have = it == have_pairs.end() ? nullptr : it->second;
    std::optional<std::string> path;
    if (have && have->path != "?") path = have->path;
    if (!want.path.empty())
      c.check("pair." + pair + ".path", pair, "path", std::optional<std::string>(want.path), path,
              kCrit);
    c.check("pair." + pair + ".p2p", pair, "P2P", want.p2p, have ? have->p2p : std::nullopt, kCrit);
  }

  if (check_floors) {
    for (const auto& f : baseline.floors) {
      std::optional<double> best;
      for (const auto& v : node.bandwidth) {
        if (v.key != f.value.key || v.subject != f.value.subject) continue;
        if (f.value.size_bytes && v.size_bytes != f.value.size_bytes) continue;
        best = std::max(best.value_or(0.0), v.gbps);
      }
      const std::string key = "floor." + f.value.key + "." + f.value.subject;
      const std::string what = f.value.key + " bandwidth";
      const std::string want = fmt::format("at least {:.1f} GB/s", f.value.gbps);
      if (!best)
        c.add(key, f.value.subject, what, want, "not measured", kCrit, true, true);
      else if (*best < f.value.gbps)
        c.add(key, f.value.subject, what, want, fmt::format("{:.1f} GB/s", *best), kCrit, false,
              true);
    }
  }
  return out;
}

}  // namespace gpuvet
