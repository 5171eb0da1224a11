// Coverage: which of the playbook's checks ran on what evidence, so that "no finding" is never
// read as "checked". Each check looks at the facts its rules need, GPU by GPU: "checked" when
// they are there for every GPU (or for the host), "partial" when for some, "not-checked" when
// for none; each gap names the command that would fill it.
//
// Live NVML answers NOT_SUPPORTED for what a GPU does not have (no ECC on a GeForce, no
// NVLink on a PCIe card) and records every other failure in GpuFacts::unreadable, so for the
// "has none" facts (ECC, NVLink, processes) a GPU NVML answered for, with no failure recorded,
// is covered even when the field is empty. Link width, clocks, temperatures are never assumed:
// empty there means the rule could not look.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpuvet/diagnose.h"
#include "hw/facts_query.h"
#include "rules/rule.h"

namespace gpuvet {
namespace {

using rules::join;

enum class Level { kNone, kSome, kFull };

// Every unordered pair of the GPUs' indices, with its facts when there are any.
struct PairSlot {
  int a, b;
  const GpuPair* pair;
};

std::vector<PairSlot> all_pairs(const Facts& f) {
  std::vector<int> idx;
  for (const auto& g : f.gpus) idx.push_back(g.index);
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  // One pass over the pairs (the last entry of a pair wins), then one lookup per slot: a
  // 1024-GPU topo -m has half a million pairs.
  std::unordered_map<std::uint64_t, const GpuPair*> by_key;
  auto key = [](int a, int b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(std::min(a, b))) << 32) |
           static_cast<std::uint32_t>(std::max(a, b));
  };
  by_key.reserve(f.pairs.size());
  for (const auto& p : f.pairs) by_key[key(p.a, p.b)] = &p;
  std::vector<PairSlot> out;
  out.reserve(idx.size() * (idx.size() - (idx.empty() ? 0 : 1)) / 2);
  for (std::size_t i = 0; i < idx.size(); ++i)
    for (std::size_t j = i + 1; j < idx.size(); ++j) {
      const auto it = by_key.find(key(idx[i], idx[j]));
      out.push_back({idx[i], idx[j], it == by_key.end() ? nullptr : it->second});
    }
  return out;
}

struct View {
  const Facts& f;
  bool offline = false;
  bool nvml = false;  // NVML answered (live, or a gpuvet capture of a live run)
  std::set<std::string> formats;
  std::map<int, std::vector<int>> nodes;
  std::vector<PairSlot> pairs;  // all_pairs(f), made once
};

bool nvml_answered(const Facts& f) {
  return std::any_of(f.sources.begin(), f.sources.end(),
                     [](const SourceInfo& s) { return s.name == "nvml" && s.ok; });
}

// NVML answered for this GPU and recorded no failure for fields starting with `prefix`.
bool answered(const View& v, const GpuFacts& g, std::string_view prefix) {
  if (!v.nvml || g.unresponsive) return false;
  return std::none_of(g.unreadable.begin(), g.unreadable.end(),
                      [&](const std::string& u) { return u.rfind(prefix, 0) == 0; });
}

// "GPU0–7" for a run of three or more, else "GPU0, GPU2".
std::string gpu_list(std::vector<int> gpus) {
  std::sort(gpus.begin(), gpus.end());
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < gpus.size();) {
    std::size_t j = i;
    while (j + 1 < gpus.size() && gpus[j + 1] == gpus[j] + 1) ++j;
    if (j - i >= 2) {
      parts.push_back(fmt::format("GPU{}–{}", gpus[i], gpus[j]));
    } else {
      for (std::size_t k = i; k <= j; ++k) parts.push_back(fmt::format("GPU{}", gpus[k]));
    }
    i = j + 1;
  }
  return join(parts, ", ");
}

// The imported formats among `relevant`, for evidence ("nvidia-smi-q, topo-m").
std::string formats_among(const View& v, std::initializer_list<const char*> relevant) {
  std::vector<std::string> out;
  for (const char* r : relevant)
    if (v.formats.count(r)) out.emplace_back(r);
  return join(out, ", ");
}

CoverageItem item(const char* check, const char* title) {
  CoverageItem c;
  c.check = check;
  c.title = title;
  return c;
}

// The per-GPU tally of one check: which GPUs have all of it, some of it, none of it.
struct Tally {
  std::vector<int> full, some, none;
  std::vector<std::string> gaps;  // what is missing, in first-seen order

  void add(int gpu, Level l, const std::vector<std::string>& missing = {}) {
    (l == Level::kFull ? full : l == Level::kSome ? some : none).push_back(gpu);
    if (l != Level::kFull)
      for (const auto& m : missing)
        if (std::find(gaps.begin(), gaps.end(), m) == gaps.end()) gaps.push_back(m);
  }
  std::size_t total() const { return full.size() + some.size() + none.size(); }
};

// Sets status and `missing` from a tally; `how` only when something is missing.
void settle(CoverageItem& c, const Tally& t, const std::string& how) {
  if (t.total() == 0) {
    c.status = CoverageStatus::kNotChecked;
  } else if (t.full.size() == t.total()) {
    c.status = CoverageStatus::kChecked;
    return;
  } else if (t.full.empty() && t.some.empty()) {
    c.status = CoverageStatus::kNotChecked;
  } else {
    c.status = CoverageStatus::kPartial;
  }
  std::vector<int> lacking = t.some;
  lacking.insert(lacking.end(), t.none.begin(), t.none.end());
  if (!t.gaps.empty())
    c.missing = join(t.gaps, "; ") + (lacking.empty() ? "" : " (" + gpu_list(lacking) + ")");
  c.how_to_get = how;
}

std::string live_or(const View& v, std::string live, std::string offline) {
  if (!v.offline) return live;
  return offline.empty() ? "imported input" : offline;
}

bool reasons_known(const GpuFacts& g) {
  return g.clock_events.active_mask.has_value() || !g.clock_events.active.empty();
}

// ---------------------------------------------------------------- GPUs

CoverageItem inventory(const View& v) {
  auto c = item("gpu-inventory", "GPU inventory");
  c.evidence = live_or(
      v, "live NVML",
      formats_among(v, {"gpuvet-json", "nvidia-smi-q-xml", "nvidia-smi-q", "nvidia-smi-L",
                        "nvidia-smi", "nvidia-smi-query-csv", "topo-m", "lspci", "dcgmi-diag"}));
  if (v.f.gpus.empty()) {
    if (v.nvml) {
      c.status = CoverageStatus::kChecked;
      c.evidence = "live NVML (no GPU visible)";
      return c;
    }
    c.status = CoverageStatus::kNotChecked;
    c.evidence.clear();
    c.missing = v.offline ? "no GPU in the input" : "NVML did not answer";
    c.how_to_get = v.offline ? "paste `nvidia-smi -q` (or `nvidia-smi -L`)"
                             : "load the NVIDIA driver (see the notes), then run gpuvet again";
    return c;
  }
  Tally t;
  for (const auto& g : v.f.gpus)
    t.add(g.index, g.name || g.unresponsive ? Level::kFull : Level::kSome,
          {"model unknown (GPU count only)"});
  settle(c, t, "paste `nvidia-smi -L` or `nvidia-smi -q`");
  return c;
}

// A pair check: "not-applicable" on one GPU, else checked when every pair is known.
CoverageItem pair_check(const View& v, const char* check, const char* title,
                        Level (*level)(const GpuPair&), const char* what_missing, const char* how,
                        std::string evidence) {
  auto c = item(check, title);
  c.evidence = std::move(evidence);
  if (v.f.gpus.size() == 1) {
    c.status = CoverageStatus::kNotApplicable;
    c.missing = "one GPU: no pair to check";
    return c;
  }
  if (v.f.gpus.empty()) {
    c.status = CoverageStatus::kNotChecked;
    c.missing = "no GPU facts";
    c.how_to_get = how;
    return c;
  }
  constexpr std::size_t kShown = 6;
  std::size_t full = 0, some = 0, lacking = 0;
  std::vector<std::string> head;  // the first kShown lacking pairs
  const auto& pairs = v.pairs;
  for (const auto& s : pairs) {
    const Level l = s.pair ? level(*s.pair) : Level::kNone;
    if (l == Level::kFull) {
      ++full;
      continue;
    }
    if (l == Level::kSome) ++some;
    if (++lacking <= kShown) head.push_back(fmt::format("GPU{}-GPU{}", s.a, s.b));
  }
  if (full == pairs.size()) {
    c.status = CoverageStatus::kChecked;
    return c;
  }
  c.status = full + some == 0 ? CoverageStatus::kNotChecked : CoverageStatus::kPartial;
  c.missing = fmt::format("{} ({}{})", what_missing,
                          lacking == pairs.size() ? std::string("every pair") : join(head, ", "),
                          lacking == pairs.size() || lacking <= kShown
                              ? ""
                              : fmt::format(", {} more", lacking - kShown));
  c.how_to_get = how;
  return c;
}

CoverageItem topology(const View& v) {
  return pair_check(
      v, "topology", "topology",
      [](const GpuPair& p) { return p.path != PathType::kUnknown ? Level::kFull : Level::kNone; },
      "path unknown", "paste `nvidia-smi topo -m`",
      live_or(v, "live NVML",
              formats_among(v, {"gpuvet-json", "topo-m", "lspci", "nccl-topo-xml"})));
}

CoverageItem p2p(const View& v) {
  return pair_check(
      v, "p2p", "P2P",
      [](const GpuPair& p) {
        if (p.p2p_read || p.p2p_write || p.p2p_pcie) return Level::kFull;
        return p.p2p_nvlink || p.p2p_atomics ? Level::kSome : Level::kNone;
      },
      "P2P read/write status unknown",
      "paste `nvidia-smi topo -p2p r` and `nvidia-smi topo -p2p w`",
      live_or(v, "live NVML", formats_among(v, {"gpuvet-json", "topo-p2p"})));
}

CoverageItem nvlink(const View& v) {
  auto c = item("nvlink", "NVLink");
  c.evidence =
      live_or(v, "live NVML", formats_among(v, {"gpuvet-json", "nvlink-status", "topo-m"}));
  const bool any_links = std::any_of(v.f.gpus.begin(), v.f.gpus.end(),
                                     [](const GpuFacts& g) { return !g.nvlinks.empty(); });
  if (v.f.gpus.size() == 1 && !any_links) {
    c.status = CoverageStatus::kNotApplicable;
    c.missing = "one GPU: no NVLink peer";
    return c;
  }
  // A GPU whose pairs all have a known path: topo -m's NV# gives its link counts per pair.
  // Per GPU: is the path to every other GPU known?
  std::unordered_map<int, bool> every_path_known;
  every_path_known.reserve(v.f.gpus.size());
  for (const auto& s : v.pairs)
    for (const int g : {s.a, s.b}) {
      auto [it, inserted] = every_path_known.try_emplace(g, true);
      it->second = it->second && s.pair && s.pair->path != PathType::kUnknown;
    }
  Tally t;
  for (const auto& g : v.f.gpus) {
    if (!g.nvlinks.empty() || answered(v, g, "nvlink")) {
      t.add(g.index, Level::kFull);
      continue;
    }
    const auto known = every_path_known.find(g.index);
    const bool paths = known == every_path_known.end() || known->second;
    t.add(g.index, paths ? Level::kSome : Level::kNone,
          {paths ? "per-link state unknown (topo -m gives link counts per pair only)"
                 : "NVLink state unknown"});
  }
  settle(c, t, "paste `nvidia-smi nvlink -s`");
  return c;
}

CoverageItem pcie_link(const View& v) {
  auto c = item("pcie-link", "PCIe link");
  c.evidence = live_or(v, "live NVML",
                       formats_among(v, {"gpuvet-json", "nvidia-smi-q-xml", "nvidia-smi-q",
                                         "nvidia-smi-query-csv", "lspci", "nccl-debug-log"}));
  Tally t;
  for (const auto& g : v.f.gpus) {
    const auto& l = g.pcie;
    const bool link = l.gen_current && l.gen_max && l.width_current && l.width_max;
    const bool replay = l.replay_counter.has_value() || answered(v, g, "pcie.replay_counter");
    std::vector<std::string> missing;
    if (!link) missing.emplace_back("link generation or width (current and max) unknown");
    if (!replay) missing.emplace_back("replay counter unknown");
    const bool any = l.gen_current || l.gen_max || l.width_current || l.width_max ||
                     l.replay_counter.has_value();
    t.add(g.index, link && replay ? Level::kFull : any ? Level::kSome : Level::kNone, missing);
  }
  settle(c, t,
         v.offline ? "paste `nvidia-smi -q` (its GPU Link Info and replay counter), or `sudo "
                     "lspci -vvv` for the link alone"
                   : "on a VM the hypervisor hides the link: run gpuvet on the host");
  if (v.f.gpus.empty()) c.how_to_get = "paste `nvidia-smi -q`";
  return c;
}

CoverageItem acs_iommu(const View& v) {
  auto c = item("acs-iommu", "ACS/IOMMU");
  c.evidence = live_or(v, "sysfs (PCI config space of the bridges, /sys/kernel/iommu_groups)",
                       formats_among(v, {"gpuvet-json", "lspci", "kernel-log"}));
  if (v.f.gpus.size() == 1) {
    c.status = CoverageStatus::kNotApplicable;
    c.missing = "one GPU: no peer traffic for ACS to redirect";
    return c;
  }
  // The IOMMU side: its mode (live sysfs, a capture) or, from a kernel log, its faults.
  const bool iommu = v.f.host.iommu.active.has_value() || v.f.kernel_log.readable;
  std::vector<int> acs_unknown;
  for (const auto& g : v.f.gpus)
    if (!g.acs_redirects_p2p) acs_unknown.push_back(g.index);
  const bool acs_all = !v.f.gpus.empty() && acs_unknown.empty();
  const bool acs_some =
      acs_unknown.size() < v.f.gpus.size() || !v.f.host.acs_redirect_unplaced.empty();
  if (acs_all && iommu) {
    c.status = CoverageStatus::kChecked;
    return c;
  }
  c.status = !acs_some && !iommu ? CoverageStatus::kNotChecked : CoverageStatus::kPartial;
  std::vector<std::string> missing, how;
  if (!acs_all) {
    missing.push_back("ACS state of the bridges above the GPUs unknown" +
                      (v.f.gpus.empty() ? std::string() : " (" + gpu_list(acs_unknown) + ")"));
    how.emplace_back(v.offline ? "paste `sudo lspci -vvv`"
                               : "run gpuvet as root (the bridges' config space needs it)");
  }
  if (!iommu) {
    missing.emplace_back("IOMMU mode and faults unknown");
    how.emplace_back(v.offline ? "`dmesg | grep -i -e DMAR -e IOMMU`"
                               : "give gpuvet the kernel log (root or CAP_SYSLOG)");
  }
  c.missing = join(missing, "; ");
  c.how_to_get = join(how, " and ");
  return c;
}

CoverageItem numa(const View& v) {
  auto c = item("numa-affinity", "NUMA affinity");
  c.evidence = live_or(v, "sysfs (NUMA nodes, GPU affinity)",
                       formats_among(v, {"gpuvet-json", "topo-m", "numactl-hardware", "lscpu",
                                         "nvidia-smi-q-xml", "nvidia-smi-q"}));
  const bool one_node = v.f.host.numa_nodes.size() == 1;
  Tally t;
  for (const auto& g : v.f.gpus) {
    if (one_node || hw::gpu_node(g, v.nodes)) {
      t.add(g.index, Level::kFull);
      continue;
    }
    t.add(g.index, g.cpu_affinity.empty() ? Level::kNone : Level::kSome, {"NUMA node unknown"});
  }
  settle(c, t,
         "paste `nvidia-smi topo -m` (its CPU and NUMA affinity columns) and `numactl --hardware`");
  return c;
}

// The GPUs whose load and clocks can be judged: an unresponsive GPU's are stale.
template <typename Fn>
Tally per_responsive_gpu(const View& v, Fn fn) {
  Tally t;
  for (const auto& g : v.f.gpus)
    if (!g.unresponsive) fn(g, t);
  return t;
}

const char* kGpuStateFormats[] = {"gpuvet-json", "nvidia-smi-q-xml",     "nvidia-smi-q",
                                  "nvidia-smi",  "nvidia-smi-query-csv", "nvidia-smi-dmon"};

std::string gpu_state_evidence(const View& v) {
  std::vector<std::string> out;
  for (const char* r : kGpuStateFormats)
    if (v.formats.count(r)) out.emplace_back(r);
  return live_or(v, "live NVML", join(out, ", "));
}

CoverageItem clocks(const View& v) {
  auto c = item("clocks-throttle", "clocks");
  c.evidence = gpu_state_evidence(v);
  Tally t = per_responsive_gpu(v, [&](const GpuFacts& g, Tally& tally) {
    const bool clk = g.clocks.sm_mhz && g.clocks.sm_max_mhz;
    const bool load =
        g.utilization.gpu_pct || (g.power.draw_w && (g.power.limit_w || g.power.enforced_limit_w));
    std::vector<std::string> missing;
    if (!clk) missing.emplace_back("SM clock or its max unknown");
    if (!reasons_known(g)) missing.emplace_back("clock-event (throttle) reasons unknown");
    if (!load) missing.emplace_back("load unknown");
    const bool any = g.clocks.sm_mhz || g.clocks.sm_max_mhz || reasons_known(g) || g.pstate ||
                     g.utilization.gpu_pct;
    tally.add(g.index, missing.empty() ? Level::kFull : any ? Level::kSome : Level::kNone, missing);
  });
  settle(c, t, "paste `nvidia-smi -q -d CLOCK,PERFORMANCE,UTILIZATION`");
  return c;
}

CoverageItem power(const View& v) {
  auto c = item("power", "power");
  c.evidence = gpu_state_evidence(v);
  Tally t = per_responsive_gpu(v, [&](const GpuFacts& g, Tally& tally) {
    const auto& p = g.power;
    std::vector<std::string> missing;
    if (!p.draw_w) missing.emplace_back("power draw unknown");
    if (!p.limit_w && !p.enforced_limit_w) missing.emplace_back("power limit unknown");
    if (!p.default_limit_w) missing.emplace_back("default power limit unknown");
    const bool any = p.draw_w || p.limit_w || p.enforced_limit_w || p.default_limit_w;
    tally.add(g.index, missing.empty() ? Level::kFull : any ? Level::kSome : Level::kNone, missing);
  });
  settle(c, t, "paste `nvidia-smi -q -d POWER`");
  return c;
}

CoverageItem thermal(const View& v) {
  auto c = item("thermal", "thermal");
  c.evidence = gpu_state_evidence(v);
  Tally t;
  for (const auto& g : v.f.gpus) {  // a temperature seen before a GPU hung still counts
    const auto& th = g.thermal;
    std::vector<std::string> missing;
    if (!th.gpu_c) missing.emplace_back("temperature unknown");
    if (!th.margin_c && !th.slowdown_c) missing.emplace_back("slowdown limit unknown");
    if (!reasons_known(g)) missing.emplace_back("thermal slowdown reasons unknown");
    const bool any = th.gpu_c || th.margin_c || th.slowdown_c || reasons_known(g);
    t.add(g.index, missing.empty() ? Level::kFull : any ? Level::kSome : Level::kNone, missing);
  }
  settle(c, t, "paste `nvidia-smi -q -d TEMPERATURE,PERFORMANCE`");
  return c;
}

CoverageItem ecc(const View& v) {
  auto c = item("ecc", "ECC");
  c.evidence = gpu_state_evidence(v);
  Tally t;
  for (const auto& g : v.f.gpus) {
    const Ecc& e = g.ecc;
    // ECC off: the counters mean nothing, and the rule says only when it is about to change.
    if ((e.enabled && !*e.enabled) || answered(v, g, "ecc")) {
      t.add(g.index, Level::kFull);
      continue;
    }
    std::vector<std::string> missing;
    if (!e.volatile_counts.uncorrected)
      missing.emplace_back("volatile uncorrectable count unknown");
    if (!e.aggregate_counts.uncorrected)
      missing.emplace_back("lifetime (aggregate) counts unknown");
    const bool retirement = e.retired_pages_dbe || e.retired_pages_pending ||
                            e.remapped_rows_uncorrectable || e.remapping_pending ||
                            e.remapping_failed;
    if (!retirement) missing.emplace_back("retired pages or remapped rows unknown");
    const bool any = e.enabled || e.volatile_counts.uncorrected || e.volatile_counts.corrected ||
                     e.aggregate_counts.uncorrected || e.aggregate_counts.corrected || retirement;
    t.add(g.index, missing.empty() ? Level::kFull : any ? Level::kSome : Level::kNone, missing);
  }
  settle(c, t, "paste `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`");
  return c;
}

CoverageItem xid(const View& v) {
  auto c = item("xid", "Xid");
  const KernelLog& k = v.f.kernel_log;
  if (k.readable) {
    c.status = CoverageStatus::kChecked;
    c.evidence = v.offline ? formats_among(v, {"kernel-log", "gpuvet-json"}) : k.source;
    if (c.evidence.empty()) c.evidence = "kernel log";
    return c;
  }
  c.status = CoverageStatus::kNotChecked;
  if (v.offline) {
    c.missing = "no kernel log in the input";
    c.how_to_get = "paste `sudo dmesg -T` (or `journalctl -k -b`)";
  } else {
    c.missing = k.source.empty() ? "the kernel log was not read"
                                 : "kernel log " + k.source + " not readable" +
                                       (k.why_unreadable ? " (" + *k.why_unreadable + ")" : "");
    c.how_to_get = "run gpuvet as root (or with CAP_SYSLOG), or paste `sudo dmesg -T`";
  }
  return c;
}

CoverageItem processes(const View& v) {
  auto c = item("processes", "processes");
  if (!v.offline) {
    c.evidence = "live NVML";
    if (!v.nvml) {
      c.status = CoverageStatus::kNotChecked;
      c.missing = "NVML did not answer";
      c.how_to_get = "load the NVIDIA driver, then run gpuvet again";
      return c;
    }
    Tally t;
    for (const auto& g : v.f.gpus)
      t.add(g.index, answered(v, g, "processes") ? Level::kFull : Level::kNone,
            {"process list unreadable"});
    if (v.f.gpus.empty())
      c.status = CoverageStatus::kChecked;
    else
      settle(c, t, "run gpuvet as root to see every process");
    return c;
  }
  // A process list is in the input when a format that lists processes was imported: the
  // nvidia-smi table, pmon, -q -x, a gpuvet report, or a whole nvidia-smi -q (its main
  // sections there, not a `-d` fragment).
  const bool whole_q = v.formats.count("nvidia-smi-q") &&
                       std::any_of(v.f.gpus.begin(), v.f.gpus.end(), [](const GpuFacts& g) {
                         return g.name && g.memory.total_bytes;
                       });
  c.evidence =
      formats_among(v, {"gpuvet-json", "nvidia-smi", "nvidia-smi-q-xml", "nvidia-smi-pmon"});
  if (whole_q) c.evidence += std::string(c.evidence.empty() ? "" : ", ") + "nvidia-smi-q";
  if (!c.evidence.empty() || !v.f.processes.empty()) {
    c.status = CoverageStatus::kChecked;
    if (c.evidence.empty()) c.evidence = "imported input";
    return c;
  }
  c.status = CoverageStatus::kNotChecked;
  c.missing = "no process list in the input";
  c.how_to_get = "paste `nvidia-smi` (with its process table)";
  return c;
}

// ---------------------------------------------------------------- host

CoverageItem host_check(const View& v, const char* check, const char* title, Level level,
                        const char* missing, const char* how, std::string offline_evidence) {
  auto c = item(check, title);
  const auto& p = v.f.host.pressure;
  if (!v.offline && p) {
    c.status = CoverageStatus::kChecked;
    c.evidence = fmt::format("/proc and /sys sampled over {} s", hw::format_number(p->window_s));
    return c;
  }
  c.evidence = v.offline ? std::move(offline_evidence) : std::string();
  c.status = level == Level::kFull   ? CoverageStatus::kChecked
             : level == Level::kSome ? CoverageStatus::kPartial
                                     : CoverageStatus::kNotChecked;
  if (c.status == CoverageStatus::kChecked) return c;
  c.missing = missing;
  c.how_to_get = v.offline ? how : "run gpuvet diagnose with a sample window (--sample-window 2)";
  return c;
}

CoverageItem host_cpu(const View& v) {
  const auto& p = v.f.host.pressure;
  const Level l = !p                  ? Level::kNone
                  : !p->cores.empty() ? Level::kFull
                  : p->psi_cpu        ? Level::kSome
                                      : Level::kNone;
  return host_check(v, "host-cpu", "host CPU", l,
                    l == Level::kSome ? "per-core load unknown (PSI only)" : "CPU load not sampled",
                    "paste `mpstat -P ALL 1 5` and `cat /proc/pressure/cpu`",
                    formats_among(v, {"gpuvet-json", "mpstat", "psi"}));
}

CoverageItem host_io(const View& v) {
  const auto& p = v.f.host.pressure;
  const Level l = !p                                     ? Level::kNone
                  : (p->iowait_pct || !p->disks.empty()) ? Level::kFull
                  : p->psi_io                            ? Level::kSome
                                                         : Level::kNone;
  return host_check(
      v, "host-io", "host I/O", l,
      l == Level::kSome ? "disk load and iowait unknown (PSI only)" : "disk load not sampled",
      "paste `iostat -x 1 5` and `cat /proc/pressure/io`",
      formats_among(v, {"gpuvet-json", "iostat-x", "mpstat", "psi"}));
}

CoverageItem host_network(const View& v) {
  const auto& p = v.f.host.pressure;
  const Level l = p && !p->nics.empty() ? Level::kFull : Level::kNone;
  return host_check(v, "host-network", "host network", l, "NIC load not sampled",
                    "paste `sar -n DEV 1 5`", formats_among(v, {"gpuvet-json", "sar-net-dev"}));
}

CoverageItem measurements(const View& v) {
  auto c = item("measurements", "measurements");
  c.optional = true;
  if (!v.f.measurements.empty() || !v.f.scale_runs.empty()) {
    c.status = CoverageStatus::kChecked;
    c.evidence = formats_among(v, {"gpuvet-json", "nccl-tests", "nvbandwidth", "bandwidthTest",
                                   "p2pBandwidthLatencyTest", "simpleP2P"});
    if (c.evidence.empty()) c.evidence = "gpuvet bench / scale";
    return c;
  }
  c.status = CoverageStatus::kNotChecked;
  c.missing = "no bandwidth or scaling measurement";
  c.how_to_get = "run `gpuvet bench` and `gpuvet scale` (or paste nvbandwidth / nccl-tests output)";
  return c;
}

// The user's own job: listed only when its traces, Inspector output or step logs were given
// (a node's report does not ask for them).
std::optional<CoverageItem> job(const View& v) {
  if (v.f.job_ranks.empty()) return std::nullopt;
  auto c = item("job", "the job's steps");
  c.status = CoverageStatus::kChecked;
  c.evidence = formats_among(v, {"pytorch-profiler-trace", "nccl-inspector", "step-log",
                                 "step-log (--step-regex)"});
  return c;
}

}  // namespace

const char* coverage_status_name(CoverageStatus s) {
  switch (s) {
    case CoverageStatus::kChecked:
      return "checked";
    case CoverageStatus::kPartial:
      return "partial";
    case CoverageStatus::kNotChecked:
      return "not-checked";
    case CoverageStatus::kNotApplicable:
      return "not-applicable";
  }
  return "not-checked";
}

std::vector<CoverageItem> compute_coverage(const Facts& facts) {
  View v{facts};
  v.offline = !facts.imported.empty();
  v.nvml = nvml_answered(facts);
  for (const auto& i : facts.imported) v.formats.insert(i.format);
  v.nodes = hw::node_cpus(facts);
  v.pairs = all_pairs(facts);
  std::vector<CoverageItem> items = {
      inventory(v), topology(v), p2p(v),     nvlink(v),       pcie_link(v),   acs_iommu(v),
      numa(v),      clocks(v),   power(v),   thermal(v),      ecc(v),         xid(v),
      processes(v), host_cpu(v), host_io(v), host_network(v), measurements(v)};
  if (auto j = job(v)) items.push_back(std::move(*j));
  return items;
}

std::optional<std::string> acs_unknown_note(const Facts& facts) {
  std::vector<std::string> pairs;
  for (const auto& p : facts.pairs) {
    if (p.a == p.b) continue;
    if (p.path != PathType::kPIX && p.path != PathType::kPXB && p.path != PathType::kNODE) continue;
    const GpuFacts* a = hw::find_gpu(facts, p.a);
    const GpuFacts* b = hw::find_gpu(facts, p.b);
    if (a && b && a->acs_redirects_p2p && b->acs_redirects_p2p) continue;
    pairs.push_back(fmt::format("GPU{}-GPU{} ({})", std::min(p.a, p.b), std::max(p.a, p.b),
                                path_type_name(p.path)));
  }
  if (pairs.empty()) return std::nullopt;
  const std::size_t shown = std::min<std::size_t>(pairs.size(), 8);
  std::vector<std::string> head(pairs.begin(), pairs.begin() + static_cast<std::ptrdiff_t>(shown));
  const bool offline = !facts.imported.empty();
  const char* how = !offline ? "run gpuvet as root so it can read the bridges' ACS control"
                    : facts.kernel_log.readable
                        ? "paste `sudo lspci -vvv`"
                        : "paste `sudo lspci -vvv` and `dmesg | grep -i -e DMAR -e IOMMU`";
  return fmt::format(
      "ACS state unknown on {} PCIe pair{} below a switch or host bridge ({}{}): P2P hangs or "
      "corrupt transfers on such pairs are the ACS/IOMMU signature; {}",
      pairs.size(), pairs.size() == 1 ? "" : "s", join(head, ", "),
      shown < pairs.size() ? fmt::format(", {} more", pairs.size() - shown) : "", how);
}

}  // namespace gpuvet
