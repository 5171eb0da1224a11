// rules_topology.cc — the article's step 3: the plumbing between GPUs, and NCCL's view of it.
//
// pcie-link-degraded, pcie-replay-errors, gpu-pair-crosses-numa, p2p-unavailable,
// nvlink-down, fabric-degraded, acs-blocks-p2p, pcie-aer-errors, iommu-fault,
// nccl-degraded-path, nccl-error.
//
// Benign cases stay quiet: an idle GPU that downshifted its PCIe generation, a VM that hides
// the link (a note), a one-GPU box without P2P or with NVLink disabled (a note), P2P that the
// GPU model does not have by design (info), chipset P2P refused across sockets (info).
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/util.h"
#include "hw/expectations.h"
#include "rules/node_wide.h"
#include "rules/rule.h"

namespace gpuvet::rules {
namespace {

constexpr std::size_t npos = std::string_view::npos;
// A log can hold thousands of distinct events; findings stay readable.
constexpr std::size_t kMaxNcclFindingsPerKind = 8;
constexpr std::size_t kMaxDetailInEvidence = 240;
// Links per pair from which a fully NVLink-connected box is expected to be uniform.
constexpr int kUniformMeshMinLinks = 6;

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != npos; }

std::string shorten(std::string_view s, std::size_t max = kMaxDetailInEvidence) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max)) + "…";
}

std::string bus_suffix(const GpuFacts& g) {
  return g.pci_bus_id ? " (" + *g.pci_bus_id + ")" : std::string();
}

// ---------------------------------------------------------------- scaling evidence

struct Scaling {
  double efficiency = 1;
  int gpus = 0;
  std::string preset;
};

// The worst throughput(N) / (N × throughput(1)) among the scale runs, within a preset.
std::optional<Scaling> worst_scaling(const Facts& f) {
  std::optional<Scaling> worst;
  for (const auto& r : f.scale_runs) {
    if (r.gpus < 2 || !r.throughput) continue;
    for (const auto& base : f.scale_runs) {
      if (base.gpus != 1 || base.workload != r.workload || base.preset != r.preset ||
          !base.throughput || *base.throughput <= 0)
        continue;
      const double eff = *r.throughput / (r.gpus * *base.throughput);
      if (!worst || eff < worst->efficiency) worst = Scaling{eff, r.gpus, r.preset};
      break;
    }
  }
  return worst;
}

// ---------------------------------------------------------------- PCIe

void check_pcie(const Context& c, Emitter& e) {
  const bool vm = c.facts.host.virtual_machine.value_or(false);
  std::vector<ReplayFinding> replays;
  for (const auto& g : c.facts.gpus) {
    const auto& l = g.pcie;
    const bool width_known =
        l.width_current && l.width_max && *l.width_current > 0 && *l.width_max > 0;
    const bool gen_known = l.gen_current && l.gen_max && *l.gen_current > 0 && *l.gen_max > 0;
    // A GPU that stopped answering has no link values because it does not answer, whatever
    // the hypervisor shows: its own finding says so, not a note blaming the VM.
    const bool blame_vm = vm && !g.unresponsive;
    if (blame_vm && !width_known && !gen_known)
      e.note(fmt::format(
          "PCIe link width/generation hidden by the hypervisor on {}: link checks skipped",
          gpu_subject(g.index)));
    else if (blame_vm && !width_known)
      e.note(fmt::format("PCIe link width hidden by the hypervisor on {}: width check skipped",
                         gpu_subject(g.index)));
    else if (blame_vm && !gen_known)
      e.note(fmt::format(
          "PCIe link generation hidden by the hypervisor on {}: generation check skipped",
          gpu_subject(g.index)));

    const bool narrow = width_known && *l.width_current < *l.width_max;
    // An idle GPU drops to Gen1 on purpose and comes back up under load: only a busy GPU
    // below its maximum generation is degraded.
    const bool slow = gen_known && *l.gen_current < *l.gen_max && is_busy(c.facts, g, c.t);
    if (narrow || slow) {
      std::string ev = gpu_subject(g.index) + " PCIe";
      if (slow)
        ev += fmt::format(" Gen{} of max Gen{}", *l.gen_current, *l.gen_max);
      else if (l.gen_current && *l.gen_current > 0)
        ev += fmt::format(" Gen{}", *l.gen_current);
      if (narrow)
        ev += fmt::format(" x{} of max x{}", *l.width_current, *l.width_max);
      else if (l.width_current && *l.width_current > 0)
        ev += fmt::format(" x{}", *l.width_current);
      ev += bus_suffix(g);
      // What it costs, per direction.
      if (gen_known || (l.gen_max && *l.gen_max > 0)) {
        const int gen_max = *l.gen_max;
        const int gen_now = slow ? *l.gen_current : gen_max;
        const int w_now = width_known ? *l.width_current : 0;
        const int w_max = width_known ? *l.width_max : 0;
        const auto now = w_now > 0 ? pcie_gbps(gen_now, w_now) : std::nullopt;
        const auto best = w_max > 0 ? pcie_gbps(gen_max, w_max) : std::nullopt;
        if (now && best)
          ev += fmt::format(": {} of {} GB/s per direction{}", format_number(*now),
                            format_number(*best),
                            !slow && l.gen_current && *l.gen_current != gen_max
                                ? fmt::format(" at Gen{}", gen_max)
                                : std::string());
      }
      if (slow) {
        const std::string load = load_phrase(g);
        ev += "; generation below max while busy" + (load.empty() ? "" : " (" + load + ")");
      }
      Finding& fd =
          e.add("pcie-link-degraded", Severity::kWarning, {gpu_subject(g.index)}, std::move(ev));
      if (narrow)
        measure(fd, "pcie_width", "lanes", *l.width_current, *l.width_max, Bound::kExactly);
      else
        measure(fd, "pcie_gen", "generation", *l.gen_current, *l.gen_max, Bound::kExactly);
    }

    // The counter only grows (since the driver loaded), so a handful on a node that has been
    // up for weeks is noise; many, or a rising count, is a marginal link.
    if (l.replay_counter && *l.replay_counter > 0) {
      const bool many = *l.replay_counter >= static_cast<std::uint64_t>(c.t.pcie_replay_warn_count);
      replays.push_back(
          {g.index, *l.replay_counter, many ? Severity::kWarning : Severity::kInfo,
           fmt::format("{} PCIe replay counter {}{}{}", gpu_subject(g.index), *l.replay_counter,
                       bus_suffix(g),
                       many ? ""
                            : fmt::format(" (under {}: watch whether it rises under load)",
                                          c.t.pcie_replay_warn_count))});
    }
  }
  // Replays on every GPU at once are one finding of the node's PCIe (rules/node_wide.h).
  emit_replays(c, replays, e);
}

// ---------------------------------------------------------------- pairs

// One finding per pair of NUMA nodes (and one for SYS inside a node), never one per pair: the
// SYS pairs of a 1024-GPU node are half a million.
void check_numa_pairs(const Context& c, Emitter& e) {
  const auto nodes = node_cpus(c.facts);
  const auto scaling = worst_scaling(c.facts);
  const bool slow_together = scaling && scaling->efficiency < c.t.scaling_efficiency;
  // NUMA node of each GPU once (gpu_node walks the node list), not once per pair.
  std::map<int, std::optional<int>> node_of;
  for (const auto& g : c.facts.gpus) node_of.emplace(g.index, gpu_node(g, nodes));
  auto node = [&](int gpu) {
    const auto it = node_of.find(gpu);
    return it == node_of.end() ? std::nullopt : it->second;
  };
  constexpr int kUnknown = -1;
  // (node of the first side, node of the second): the same for both inside one node.
  std::map<std::pair<int, int>, PairSet> groups;
  std::set<std::pair<int, int>> seen;
  for (const auto& p : c.facts.pairs) {
    if (p.a == p.b || p.path != PathType::kSYS) continue;
    int a = std::min(p.a, p.b), b = std::max(p.a, p.b);
    if (!seen.emplace(a, b).second) continue;
    const auto na = node(a), nb = node(b);
    if (!na || !nb) {
      groups[{kUnknown, kUnknown}].pairs.emplace_back(a, b);
      continue;
    }
    if (*nb < *na) std::swap(a, b);  // the GPU on the lower node first
    groups[{std::min(*na, *nb), std::max(*na, *nb)}].pairs.emplace_back(a, b);
  }
  for (const auto& [key, set] : groups) {
    const auto [n1, n2] = key;
    const bool one = set.pairs.size() == 1;
    std::string ev;
    if (n1 != kUnknown && n1 == n2) {
      // SYS inside one NUMA node: the GPUs sit below different PCIe root complexes (host
      // bridges) that meet only in the CPU's own fabric. Saying "crosses the CPU interconnect
      // (node 0, node 0)" would contradict itself.
      ev = fmt::format(
          "{} path SYS although {} report NUMA node {}: they sit below different PCIe root "
          "complexes (host bridges) that meet only inside the CPU's fabric — one socket, or "
          "sockets the BIOS or hypervisor presents as one NUMA node — not behind a shared PCIe "
          "switch or host bridge",
          set.phrase(), one ? "both GPUs" : "the GPUs of each pair", n1);
    } else {
      ev = fmt::format("{} path SYS: traffic between them crosses the CPU interconnect",
                       set.phrase());
      if (n1 != kUnknown) {
        std::set<int> first, second;
        for (const auto& [a, b] : set.pairs) {
          first.insert(a);
          second.insert(b);
        }
        ev += fmt::format(" ({} on NUMA node {}, {} on node {})", gpu_set_subject(first), n1,
                          gpu_set_subject(second), n2);
      }
    }
    Severity sev = Severity::kInfo;
    if (slow_together) {
      sev = Severity::kWarning;
      ev += fmt::format(
          "; measured scaling efficiency {} % on {} GPUs (preset {}), under the {} % target",
          format_number(scaling->efficiency * 100, 0), scaling->gpus, scaling->preset,
          format_number(c.t.scaling_efficiency * 100, 0));
    }
    Finding& fd = e.add("gpu-pair-crosses-numa", sev, set.subjects(), std::move(ev));
    if (slow_together) {
      measure(fd, "scaling_efficiency", "fraction", scaling->efficiency, c.t.scaling_efficiency,
              Bound::kAtLeast);
      fd.action = Action::kFixApplication;  // place communicating ranks on one socket
    }
  }
}

bool p2p_bad(const std::optional<P2PStatus>& s) { return s && *s != P2PStatus::kOk; }

// P2P read/write refused in a way that matters (not "the model has none by design").
bool p2p_rw_refused(const GpuPair& p) {
  for (const auto* s : {&p.p2p_read, &p.p2p_write, &p.p2p_pcie})
    if (p2p_bad(*s) && **s != P2PStatus::kGpuNotSupported) return true;
  return false;
}

// Both GPUs of a pair (or every GPU, for a pair of unknown ends) are GeForce cards, whose
// driver has no PCIe peer-to-peer: a refusal there is expected.
bool consumer_pair(const Facts& f, int a, int b) {
  const GpuFacts* ga = find_gpu(f, a);
  const GpuFacts* gb = find_gpu(f, b);
  return ga && gb && ga->name && gb->name && hw::consumer_gpu(*ga->name) &&
         hw::consumer_gpu(*gb->name);
}

bool all_consumer(const Facts& f) {
  return !f.gpus.empty() && std::all_of(f.gpus.begin(), f.gpus.end(), [](const GpuFacts& g) {
    return g.name && hw::consumer_gpu(*g.name);
  });
}

constexpr const char* kConsumerP2p =
    "GeForce cards: NVIDIA's driver offers them no PCIe peer-to-peer (expected; only an NVLink "
    "bridge gives them P2P)";

// No GPU of the pair is known to be other than GeForce, and at least one's model is not in
// the input (a topo -p2p matrix alone): an NS there may be the GeForce driver's design, so it
// is not read as a datacenter card's fault.
bool model_unknown(const GpuFacts* g) { return !g || !g->name; }
bool consumer_or_unknown(const GpuFacts* g) {
  return model_unknown(g) || hw::consumer_gpu(*g->name);
}
bool unknown_pair(const Facts& f, int a, int b) {
  const GpuFacts* ga = find_gpu(f, a);
  const GpuFacts* gb = find_gpu(f, b);
  return (model_unknown(ga) || model_unknown(gb)) && consumer_or_unknown(ga) &&
         consumer_or_unknown(gb);
}

constexpr const char* kUnknownModelP2p =
    "the GPU model is not in the input: this is expected on GeForce cards (their driver offers "
    "no PCIe peer-to-peer) and a fault on datacenter cards (ACS/IOMMU, BIOS); paste "
    "`nvidia-smi -L` beside it to tell which";

void check_p2p(const Context& c, Emitter& e) {
  // One finding per distinct answer (severity and what was refused, path and why), its pairs
  // together: on a big node the same refusal holds for thousands of pairs.
  std::map<std::pair<Severity, std::string>, PairSet> groups;
  std::vector<const std::pair<const std::pair<Severity, std::string>, PairSet>*> order;
  for (const auto& p : c.facts.pairs) {
    if (p.a == p.b) continue;
    const bool consumer = p.path != PathType::kNVLink && consumer_pair(c.facts, p.a, p.b);
    const bool unknown =
        p.path != PathType::kNVLink && !consumer && unknown_pair(c.facts, p.a, p.b);
    const bool nv_path = p.path == PathType::kNVLink || (p.nvlinks && *p.nvlinks > 0);
    // The PCIe P2P property (topo -p2p p) says what read/write say, for PCIe; an NVLink pair's
    // peer traffic does not take PCIe.
    const std::optional<P2PStatus> pcie = nv_path ? std::nullopt : p.p2p_pcie;
    const bool rw_known = p.p2p_read.has_value() || p.p2p_write.has_value() || pcie.has_value();
    Severity sev = Severity::kOk;
    std::vector<std::string> why;
    auto raise = [&](Severity s) { sev = std::max(sev, s); };
    for (const auto* s : {&p.p2p_read, &p.p2p_write, &pcie}) {
      if (!p2p_bad(*s)) continue;
      if (**s == P2PStatus::kGpuNotSupported) {
        raise(Severity::kInfo);
        why.push_back("the GPU model has no peer-to-peer support by design");
      } else if (**s == P2PStatus::kChipsetNotSupported && p.path == PathType::kSYS) {
        raise(Severity::kInfo);
        why.push_back("the CPUs do not forward peer traffic between sockets (expected on SYS)");
      } else if (consumer) {
        raise(Severity::kInfo);
        why.push_back(kConsumerP2p);
      } else if (unknown && **s == P2PStatus::kNotSupported) {
        // NS is what the GeForce driver answers for PCIe P2P; CNS/TNS/U/disabled name the
        // platform, whatever the card.
        raise(Severity::kInfo);
        why.push_back(kUnknownModelP2p);
      } else {
        raise(Severity::kWarning);
      }
    }
    // NVLink P2P: "NS" is a tautology on a pair that has no NVLink. It matters on an NVLink
    // path, and is worth an info when nothing else tells whether P2P works at all.
    if (p2p_bad(p.p2p_nvlink)) {
      if (nv_path)
        raise(Severity::kWarning);
      else if (!rw_known && p.path == PathType::kUnknown) {
        raise(Severity::kInfo);
        why.push_back("no NVLink peer access; P2P over PCIe was not captured");
      }
    }
    if (sev == Severity::kOk) continue;
    std::vector<std::string> codes;
    const std::pair<const char*, const std::optional<P2PStatus>*> all[] = {
        {"read", &p.p2p_read},
        {"write", &p.p2p_write},
        {"nvlink", &p.p2p_nvlink},
        {"atomics", &p.p2p_atomics},
        {"pcie", &pcie}};
    for (const auto& [what, s] : all)
      if (p2p_bad(*s)) codes.push_back(fmt::format("{} {}", what, p2p_status_code(**s)));
    std::string ev = "P2P " + join(codes, ", ");
    if (p.path != PathType::kUnknown) ev += fmt::format(" (path {})", path_type_name(p.path));
    std::sort(why.begin(), why.end());
    why.erase(std::unique(why.begin(), why.end()), why.end());
    if (sev == Severity::kInfo && !why.empty()) ev += ": " + join(why, "; ");
    auto [it, added] = groups.try_emplace({sev, std::move(ev)});
    if (added) order.push_back(&*it);
    it->second.pairs.emplace_back(std::min(p.a, p.b), std::max(p.a, p.b));
  }
  for (const auto* g : order) {  // in the order of each answer's first pair
    const auto& [key, set] = *g;
    Finding& fd =
        e.add("p2p-unavailable", key.first, set.subjects(), set.phrase() + " " + key.second);
    if (key.first == Severity::kInfo) fd.action = Action::kNone;  // expected for the model or path
  }
}

// ---------------------------------------------------------------- NVLink

// A model that normally has NVLink to its peers: SXM/HGX boards, Grace-Hopper/Blackwell
// modules, and the PCIe "NVL" cards sold with bridges.
bool nvlink_model(const GpuFacts& g) {
  if (!g.name) return false;
  const std::string n = to_lower(*g.name);
  if (contains(n, "nvl")) return true;  // H100 NVL, H200 NVL, GB200 NVL
  if (contains(n, "pcie")) return false;
  for (const char* k : {"sxm", "hgx", "h100 80gb hbm3", "h100 sxm", "h200", "h800", "h20 ", "b100",
                        "b200", "b300", "gh200", "gb200", "gb300"})
    if (contains(n + " ", k)) return true;
  return false;
}

// NVML lists links only for GPUs that have them.
bool has_nvlink(const GpuFacts& g) { return !g.nvlinks.empty() || nvlink_model(g); }

void check_nvlink(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  const bool driver_off = f.host.nvlink_disabled_by_driver.value_or(false);

  // NvLinkDisable=1: the driver never trains the links.
  bool driver_reported = false;
  if (driver_off) {
    std::vector<std::string> capable;
    std::set<std::string> models;
    for (const auto& g : f.gpus)
      if (has_nvlink(g)) {
        capable.push_back(gpu_subject(g.index));
        if (g.name) models.insert(*g.name);
      }
    bool names_known = std::any_of(f.gpus.begin(), f.gpus.end(),
                                   [](const GpuFacts& g) { return g.name.has_value(); });
    if (f.gpus.size() == 1) {
      e.note(
          "NvLinkDisable=1 in /proc/driver/nvidia/params on a one-GPU box: no NVLink peer to "
          "lose");
    } else if (f.gpus.size() >= 2 && !capable.empty()) {
      std::vector<std::string> m(models.begin(), models.end());
      e.add("nvlink-down", Severity::kWarning, capable,
            fmt::format("NvLinkDisable=1 in /proc/driver/nvidia/params on {} GPUs{} that "
                        "normally talk over NVLink: peer traffic falls back to PCIe",
                        f.gpus.size(), m.empty() ? "" : " (" + join(m, ", ") + ")"))
          .action = Action::kFixConfig;  // a driver parameter, not the hardware
      driver_reported = true;
    } else if (f.gpus.size() >= 2 && !names_known) {
      e.note(
          "NvLinkDisable=1 in /proc/driver/nvidia/params, GPU models unknown: whether NVLink is "
          "lost could not be checked");
    }
  }

  // Links per GPU.
  std::set<int> in_nv_pair;
  for (const auto& p : f.pairs)
    if (p.a != p.b && p.path == PathType::kNVLink) {
      in_nv_pair.insert(p.a);
      in_nv_pair.insert(p.b);
    }
  std::vector<int> with_active;
  for (const auto& g : f.gpus)
    if (std::any_of(g.nvlinks.begin(), g.nvlinks.end(),
                    [](const NvLink& l) { return l.active.value_or(false); }))
      with_active.push_back(g.index);

  std::vector<std::string> all_down_subjects;
  std::vector<std::string> all_down_parts;
  std::vector<std::string> unbridged;         // bridge cards with no bridge fitted
  std::vector<std::string> bridged_as_built;  // bridge cards with their full set up
  std::string bridged_what;
  std::vector<int> warned;           // GPUs whose own links were reported
  std::vector<std::string> bridged;  // bridge cards with their full set up
  for (const auto& g : f.gpus) {
    int active = 0;
    std::vector<int> down;
    for (const auto& l : g.nvlinks) {
      if (!l.active) continue;
      if (*l.active)
        ++active;
      else
        down.push_back(l.link);
    }
    const auto config = g.name ? hw::expected_nvlink(*g.name) : std::nullopt;
    const bool bridge_card = config && config->form == hw::NvlinkFormFactor::kBridge;
    if (bridge_card && active >= config->links) {
      bridged.push_back(gpu_subject(g.index));
      if (!down.empty()) {
        bridged_as_built.push_back(gpu_subject(g.index));
        bridged_what = config->what;
      }
      continue;
    }
    // nvidia-smi nvlink -s could not read a single link ("all links are inActive"): a GPU with
    // NVLink whose links are all down (a PCIe card without NVLink says so in other words).
    if (g.nvlinks_all_inactive && active == 0 && !bridge_card && !driver_reported) {
      warned.push_back(g.index);
      e.add("nvlink-down", Severity::kWarning, {gpu_subject(g.index)},
            fmt::format("{}{}: nvidia-smi nvlink -s found all its NVLinks inactive (\"Unable to "
                        "retrieve NVLink information as all links are inActive\"): its peer "
                        "traffic has no NVLink",
                        gpu_subject(g.index), g.name ? " " + *g.name : std::string()));
      continue;
    }
    if (down.empty()) continue;
    const int known = active + static_cast<int>(down.size());
    std::vector<std::string> ids;
    for (int d : down) ids.push_back(std::to_string(d));
    // PCIe cards with NVLink bridges: links come up only where a bridge is fitted, and the
    // card may list more links than its bridges carry. Healthy: none up (no bridge) or the
    // configuration's full count; fewer is a bridge or link that is missing or down.
    if (bridge_card && !driver_reported) {
      if (active == 0) {
        unbridged.push_back(gpu_subject(g.index));
      } else {
        warned.push_back(g.index);
        measure(e.add("nvlink-down", Severity::kWarning, {gpu_subject(g.index)},
                      fmt::format("{} NVLink: {} links active, fewer than the {} of {} ({} of "
                                  "{} listed links inactive: {})",
                                  gpu_subject(g.index), active, config->links, config->what,
                                  down.size(), known, join(ids, ", "))),
                "nvlinks_active", "links", active, config->links, Bound::kAtLeast);
      }
      continue;
    }
    if (active > 0) {
      measure(e.add("nvlink-down", Severity::kWarning, {gpu_subject(g.index)},
                    fmt::format("{} NVLink: {} of {} links inactive (link{} {}) while {} are "
                                "active",
                                gpu_subject(g.index), down.size(), known,
                                down.size() > 1 ? "s" : "", join(ids, ", "), active)),
              "nvlinks_active", "links", active, known, Bound::kExactly);
      continue;
    }
    if (driver_reported) continue;  // the driver parameter explains it
    const bool peers_active =
        std::any_of(with_active.begin(), with_active.end(), [&](int i) { return i != g.index; });
    const bool nv_pair = in_nv_pair.count(g.index) > 0;
    if (!peers_active && !nv_pair) continue;
    all_down_subjects.push_back(gpu_subject(g.index));
    all_down_parts.push_back(fmt::format("{} all {} links inactive", gpu_subject(g.index), known));
  }
  if (!all_down_subjects.empty()) {
    std::string ev = "NVLink: " + join(all_down_parts, ", ");
    std::vector<std::string> peers;
    for (int i : with_active)
      if (std::find(all_down_subjects.begin(), all_down_subjects.end(), gpu_subject(i)) ==
          all_down_subjects.end())
        peers.push_back(gpu_subject(i));
    if (!peers.empty())
      ev +=
          " while " + join(peers, ", ") + (peers.size() == 1 ? " has" : " have") + " active links";
    else
      ev += " while the topology shows NVLink paths";
    e.add("nvlink-down", Severity::kWarning, all_down_subjects, std::move(ev));
  }
  // A bridged pair's NV# (topo -m) below what its bridges carry: a bridge missing or down.
  for (const auto& p : f.pairs) {
    if (p.a == p.b || p.path != PathType::kNVLink || !p.nvlinks || *p.nvlinks <= 0) continue;
    const GpuFacts* ga = find_gpu(f, p.a);
    const GpuFacts* gb = find_gpu(f, p.b);
    if (!ga || !gb || !ga->name || !gb->name) continue;
    const auto ca = hw::expected_nvlink(*ga->name);
    if (!ca || ca->form != hw::NvlinkFormFactor::kBridge || ca->max_bridged_gpus != 2) continue;
    if (to_lower(*ga->name) != to_lower(*gb->name) || *p.nvlinks >= ca->links) continue;
    if (std::find(warned.begin(), warned.end(), p.a) != warned.end() ||
        std::find(warned.begin(), warned.end(), p.b) != warned.end())
      continue;  // the links themselves were reported
    measure(e.add("nvlink-down", Severity::kWarning, {pair_subject(p.a, p.b)},
                  fmt::format("{} NV{}: fewer links than the {} of {}", pair_subject(p.a, p.b),
                              *p.nvlinks, ca->links, ca->what)),
            "nvlinks", "links", *p.nvlinks, ca->links, Bound::kAtLeast);
  }
  if (!bridged_as_built.empty())
    e.note(
        fmt::format("{}: every NVLink that {} carries is active; the other listed links have "
                    "no bridge lanes (as built)",
                    join(bridged_as_built, ", "), bridged_what));
  if (!unbridged.empty() && !bridged.empty())
    e.add("nvlink-down", Severity::kInfo, unbridged,
          fmt::format("{} {} no active NVLink while {} {} bridged: NVLink bridges join cards two "
                      "at a time, so unbridged cards are normal; if {} should be bridged, reseat "
                      "or fit the bridge",
                      join(unbridged, ", "), unbridged.size() == 1 ? "has" : "have",
                      join(bridged, ", "), bridged.size() == 1 ? "is" : "are",
                      unbridged.size() == 1 ? "it" : "they"))
        .action = Action::kNone;

  // A fully NVLink-connected box whose pairs do not all have the same number of links.
  std::set<int> members;
  std::vector<const GpuPair*> pairs;
  bool all_nv = true;
  for (const auto& p : f.pairs) {
    if (p.a == p.b) continue;
    members.insert(p.a);
    members.insert(p.b);
    pairs.push_back(&p);
    if (p.path != PathType::kNVLink || !p.nvlinks || *p.nvlinks <= 0) all_nv = false;
  }
  const std::size_t n = members.size();
  if (all_nv && n >= 3 && pairs.size() == n * (n - 1) / 2) {
    int most = 0;
    for (const auto* p : pairs) most = std::max(most, *p->nvlinks);
    // Direct-connect V100 meshes mix NV1 and NV2 by design; boxes meant to be uniform
    // (NVSwitch: NV6/NV12/NV18, 4-GPU H100 boards: NV6) show at least this many per pair.
    if (most < kUniformMeshMinLinks) return;
    std::vector<std::string> subjects;
    std::vector<std::string> parts;
    for (const auto* p : pairs)
      if (*p->nvlinks < most) {
        subjects.push_back(pair_subject(p->a, p->b));
        parts.push_back(fmt::format("{} NV{}", pair_subject(p->a, p->b), *p->nvlinks));
      }
    if (!subjects.empty()) {
      int fewest = most;
      for (const auto* p : pairs) fewest = std::min(fewest, *p->nvlinks);
      measure(e.add("nvlink-down", Severity::kWarning, subjects,
                    fmt::format("{} while the other pairs of this fully NVLink-connected box "
                                "have NV{}",
                                join(parts, ", "), most)),
              "nvlinks", "links", fewest, most, Bound::kExactly);
    }
  }
}

// ---------------------------------------------------------------- fabric

void check_fabric(const Context& c, Emitter& e) {
  // GPUs grouped by what is wrong, so that an 8-GPU box without a fabric manager is one finding.
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& g : c.facts.gpus) {
    const auto& fb = g.fabric;
    const std::string state = fb.state ? to_lower(*fb.state) : std::string();
    std::string status = fb.status ? *fb.status : std::string();
    for (auto& ch : status) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const bool status_ok = status.empty() || status == "SUCCESS" || status == "NVML_SUCCESS" ||
                           status == "N/A" || status == "NOT_SUPPORTED";
    std::string what;
    if (!state.empty() && state != "completed" && state != "not_supported" && state != "unknown")
      what = "fabric state " + state + (status.empty() ? "" : ", status " + *fb.status);
    else if ((state.empty() || state == "completed") && !status_ok)
      what = "fabric " + (state.empty() ? std::string("registration") : "state " + state) +
             ", status " + *fb.status;
    // Driver 550+ also grades the fabric as a whole: "Health / Summary : Unhealthy" with the
    // state Completed and the status Success.
    if (what.empty() && fb.health_summary && to_lower(*fb.health_summary) != "healthy" &&
        to_lower(*fb.health_summary) != "n/a" && to_lower(*fb.health_summary) != "not supported")
      what = "fabric health " + *fb.health_summary;
    if (!what.empty()) groups[what].push_back(gpu_subject(g.index));
  }
  for (auto& [what, subjects] : groups)
    e.add("fabric-degraded", Severity::kWarning, subjects,
          fmt::format("{}: {}", join(subjects, ", "), what));
}

// ---------------------------------------------------------------- ACS / IOMMU

void check_acs(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  // Redirecting bridges that no input ties to a GPU (a grep of lspci -vvv): said once for the
  // node, as info, since the bridges may lead to other devices.
  const bool any_gpu_redirected = std::any_of(f.gpus.begin(), f.gpus.end(), [](const GpuFacts& g) {
    return g.acs_redirects_p2p.value_or(false);
  });
  if (!f.host.acs_redirect_unplaced.empty() && !any_gpu_redirected && f.gpus.size() != 1) {
    std::vector<std::string> subjects;
    for (const auto& g : f.gpus) subjects.push_back(gpu_subject(g.index));
    if (subjects.empty()) subjects.push_back("PCIe");
    std::vector<std::string> shown(
        f.host.acs_redirect_unplaced.begin(),
        f.host.acs_redirect_unplaced.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(
                                                   8, f.host.acs_redirect_unplaced.size())));
    e.add("acs-blocks-p2p", Severity::kInfo, subjects,
          fmt::format("ACS request/completion redirect set on {} bridge(s): {}{}; which GPUs sit "
                      "below them is not known (paste the whole `sudo lspci -vvv`, or `lspci "
                      "-tv` with it): if they are the GPUs' switch ports, peer traffic goes up to "
                      "the root complex",
                      f.host.acs_redirect_unplaced.size(), join(shown, ", "),
                      f.host.acs_redirect_unplaced.size() > shown.size() ? ", …" : ""))
        .action = Action::kWatch;  // check which devices sit below those bridges
  }
  if (f.gpus.size() < 2) return;  // peer traffic needs a peer
  std::vector<std::string> subjects;
  std::vector<std::string> parts;
  for (const auto& g : f.gpus) {
    if (!g.acs_redirects_p2p.value_or(false)) continue;
    subjects.push_back(gpu_subject(g.index));
    parts.push_back(gpu_subject(g.index) + (g.acs_bridges.empty()
                                                ? std::string(" behind a bridge")
                                                : " behind " + join(g.acs_bridges, ", ")));
  }
  if (!subjects.empty())
    e.add("acs-blocks-p2p", Severity::kWarning, subjects,
          fmt::format("ACS request/completion redirect set: {}; peer traffic is sent up to the "
                      "root complex",
                      join(parts, "; ")));

  const auto& io = f.host.iommu;
  if (io.active.value_or(false) && !io.passthrough.value_or(false)) {
    std::vector<std::string> pair_subjects;
    std::vector<std::string> pair_parts;
    for (const auto& p : f.pairs) {
      if (p.a == p.b || !p2p_rw_refused(p)) continue;
      // CNS across sockets is the chipset's doing (the CPUs do not forward peer traffic),
      // not the IOMMU's: blaming the IOMMU there would send the reader to the wrong fix.
      const auto chipset_on_sys = [&](const std::optional<P2PStatus>& s) {
        return !p2p_bad(s) || (p.path == PathType::kSYS && *s == P2PStatus::kChipsetNotSupported);
      };
      if (chipset_on_sys(p.p2p_read) && chipset_on_sys(p.p2p_write)) continue;
      std::vector<std::string> codes;
      if (p2p_bad(p.p2p_read))
        codes.push_back(fmt::format("read {}", p2p_status_code(*p.p2p_read)));
      if (p2p_bad(p.p2p_write))
        codes.push_back(fmt::format("write {}", p2p_status_code(*p.p2p_write)));
      pair_subjects.push_back(pair_subject(p.a, p.b));
      pair_parts.push_back(pair_subject(p.a, p.b) + " " + join(codes, ", "));
    }
    if (!pair_subjects.empty())
      e.add("acs-blocks-p2p", Severity::kWarning, pair_subjects,
            fmt::format("IOMMU active in translated mode (not passthrough{}) and P2P refused: {}",
                        io.cmdline_hint ? "; cmdline: " + *io.cmdline_hint : std::string(),
                        join(pair_parts, "; ")));
  }
}

// ---------------------------------------------------------------- PCIe AER, IOMMU faults

// The GPUs at or below a PCI device: the GPU itself, or every GPU whose chain of bridges (as
// lspci placed them) passes through it.
std::vector<int> gpus_at_or_below(const Facts& f, const std::string& bdf) {
  std::vector<int> out;
  if (const GpuFacts* g = find_gpu_by_bus(f, bdf)) return {g->index};
  std::map<std::string, const PciDevice*> by_bdf;
  for (const auto& d : f.pci_devices) by_bdf.emplace(d.bdf, &d);
  for (const auto& g : f.gpus) {
    if (!g.pci_bus_id) continue;
    auto it = by_bdf.find(*g.pci_bus_id);
    for (int depth = 0; it != by_bdf.end() && depth < 32; ++depth) {
      if (!it->second->upstream) break;
      if (*it->second->upstream == bdf) {
        out.push_back(g.index);
        break;
      }
      it = by_bdf.find(*it->second->upstream);
    }
  }
  return out;
}

std::string gpu_list(const std::vector<int>& gpus) {
  std::vector<std::string> names;
  for (int g : gpus) names.push_back(gpu_subject(g));
  return join(names, ", ");
}

// "uptime 5123–9000 s" / "2026-01-13 09:41 UTC … 10:02 UTC": when the errors were logged.
std::string when_logged(const DeviceErrorLog& r) {
  if (r.first_uptime_s && r.last_uptime_s) {
    if (*r.last_uptime_s - *r.first_uptime_s < 1)
      return fmt::format("at uptime {} s", format_number(*r.last_uptime_s, 0));
    return fmt::format("over uptime {}–{} s", format_number(*r.first_uptime_s, 0),
                       format_number(*r.last_uptime_s, 0));
  }
  if (r.first_unix_time && r.last_unix_time)
    return fmt::format("over {} s of log time", *r.last_unix_time - *r.first_unix_time);
  return "time unknown";
}

// Subjects and the phrase naming where the errors are: "GPU1 (0000:19:00.0)", "0000:17:01.0,
// the port above GPU1".
struct Place {
  std::vector<std::string> subjects;
  std::string where;
  bool gpu = false;  // a GPU or a bridge on a GPU's path
};

Place place_device(const Facts& f, const std::optional<std::string>& bdf,
                   const std::optional<std::string>& driver) {
  Place p;
  if (!bdf) {
    p.subjects = {"PCIe"};
    p.where = "a device the log does not name";
    return p;
  }
  const auto gpus = gpus_at_or_below(f, *bdf);
  if (const GpuFacts* g = find_gpu_by_bus(f, *bdf)) {
    p.subjects = {gpu_subject(g->index)};
    p.where = fmt::format("{} ({})", gpu_subject(g->index), *bdf);
    p.gpu = true;
  } else if (!gpus.empty()) {
    for (int i : gpus) p.subjects.push_back(gpu_subject(i));
    p.where = fmt::format("{}, the port above {}", *bdf, gpu_list(gpus));
    p.gpu = true;
  } else if (driver && *driver == "nvidia") {
    p.subjects = {*bdf};
    p.where = *bdf + " (an NVIDIA device, driver nvidia)";
    p.gpu = true;
  } else {
    p.subjects = {*bdf};
    p.where = *bdf + (driver ? " (driver " + *driver + ")" : std::string()) +
              (f.gpus.empty() ? ", not known to be a GPU (no GPU list among the inputs)"
                              : ", not a GPU or a port above one");
  }
  return p;
}

const char* aer_kind_words(const std::string& kind) {
  if (kind == "uncorrected-fatal") return "uncorrectable (fatal)";
  if (kind == "uncorrected-nonfatal") return "uncorrectable (non-fatal)";
  return "corrected";
}

// A fatal error drains the node until the link is fixed; an error on a GPU's link is a
// reseat or RMA (the catalog's); a few corrected ones, or one off the GPUs' path, are watched.
Action aer_action(Severity sev) {
  return sev >= Severity::kCritical  ? Action::kDrain
         : sev >= Severity::kWarning ? Action::kReseatOrRma
                                     : Action::kWatch;
}

void check_pcie_aer(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  for (const auto& r : f.kernel_log.pcie_aer) {
    if (r.count == 0) continue;
    const Place p = place_device(f, r.pci_bus_id, r.driver);
    Severity sev = Severity::kInfo;
    // Known to be off every GPU's path: the node's PCIe, one level down. Not known (a kernel
    // log alone): a fatal error stays critical.
    const bool placement_known = !f.gpus.empty() && r.pci_bus_id;
    if (r.kind == "uncorrected-fatal")
      sev = p.gpu || !placement_known ? Severity::kCritical : Severity::kWarning;
    else if (r.kind == "uncorrected-nonfatal")
      sev = p.gpu ? Severity::kWarning : Severity::kInfo;
    else if (p.gpu &&
             r.count >= static_cast<std::uint64_t>(std::max(1, c.t.pcie_aer_corrected_warn_count)))
      sev = Severity::kWarning;
    std::string ev = fmt::format("kernel log: {} PCIe AER {} error{} on {}", r.count,
                                 aer_kind_words(r.kind), r.count == 1 ? "" : "s", p.where);
    if (!r.details.empty()) ev += " — " + join(r.details, ", ");
    ev += "; " + when_logged(r);
    if (r.kind == "corrected" && p.gpu && sev == Severity::kInfo)
      ev += fmt::format(" (under {}: watch whether it rises under load)",
                        c.t.pcie_aer_corrected_warn_count);
    if (!r.last_message.empty()) ev += ": \"" + shorten(r.last_message, 160) + "\"";
    Finding& fd = e.add("pcie-aer-errors", sev, p.subjects, std::move(ev));
    if (r.kind == "corrected")
      measure(fd, "pcie_aer_corrected", "count", static_cast<double>(r.count),
              c.t.pcie_aer_corrected_warn_count, Bound::kAtMost);
    else
      measure(fd, "pcie_aer_uncorrected", "count", static_cast<double>(r.count), 0, Bound::kAtMost);
    fd.action = aer_action(sev);
  }

  // lspci's AER status registers: sticky bits set since they were last cleared (no count, no
  // time). UnsupReq (config probing of absent functions) and AdvNonFatalErr (its advisory
  // twin) are set on many healthy ports and say nothing about the link.
  auto meaningful = [](const std::vector<std::string>& bits) {
    std::vector<std::string> out;
    for (const auto& b : bits)
      if (b != "UnsupReq" && b != "AdvNonFatalErr") out.push_back(b);
    return out;
  };
  for (const auto& d : f.pci_devices) {
    const auto fatal = meaningful(d.aer_uncorrected_fatal);
    const auto uncorrected = meaningful(d.aer_uncorrected);
    const auto corrected = meaningful(d.aer_corrected);
    if (fatal.empty() && uncorrected.empty() && corrected.empty()) continue;
    const auto gpus = gpus_at_or_below(f, d.bdf);
    if (gpus.empty()) continue;  // only the GPUs' links are ours to judge
    const Place p = place_device(f, d.bdf, d.driver);
    const Severity sev = !fatal.empty()         ? Severity::kCritical
                         : !uncorrected.empty() ? Severity::kWarning
                                                : Severity::kInfo;
    std::vector<std::string> parts;
    if (!fatal.empty()) parts.push_back("uncorrectable, fatal severity: " + join(fatal, ", "));
    std::vector<std::string> nonfatal;
    for (const auto& b : uncorrected)
      if (std::find(fatal.begin(), fatal.end(), b) == fatal.end()) nonfatal.push_back(b);
    if (!nonfatal.empty()) parts.push_back("uncorrectable: " + join(nonfatal, ", "));
    if (!corrected.empty()) parts.push_back("correctable: " + join(corrected, ", "));
    e.add("pcie-aer-errors", sev, p.subjects,
          fmt::format("lspci AER status on {}: {} (set and not masked; sticky since last "
                      "cleared, count and time unknown)",
                      p.where, join(parts, "; ")))
        .action = aer_action(sev);
  }
}

void check_iommu_faults(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  // Peer traffic failing in the same inputs: NCCL's errors or refused peer mappings, a P2P
  // test slower with peer access than without, data a benchmark moved wrong, an Xid 31 (MMU
  // fault). With IOMMU faults on a GPU, those point at the IOMMU (or ACS sending peer traffic
  // to it), not at the GPUs or the network.
  std::vector<std::string> peer_failures;
  for (const auto& ev : f.nccl_events)
    if ((ev.kind == "error" || ev.kind == "p2p" || ev.kind == "timeout") &&
        peer_failures.size() < 2)
      peer_failures.push_back("NCCL: \"" + shorten(ev.detail, 100) + "\"");
  for (const auto& x : f.kernel_log.xids)
    if (x.code == 31 && peer_failures.size() < 3) {
      peer_failures.push_back("Xid 31 (MMU fault)");
      break;
    }
  for (const auto& m : f.measurements)
    if (m.wrong_data) {
      peer_failures.push_back(m.tool + " moved wrong data");
      break;
    }
  for (const auto& r : f.kernel_log.iommu_faults) {
    if (r.count == 0) continue;
    const Place p = place_device(f, r.pci_bus_id, r.driver);
    const bool is_gpu = p.gpu && (!r.pci_bus_id || find_gpu_by_bus(f, *r.pci_bus_id) ||
                                  (r.driver && *r.driver == "nvidia"));
    const std::string kind = r.kind == "dma-read"          ? "DMA read fault"
                             : r.kind == "dma-write"       ? "DMA write fault"
                             : r.kind == "interrupt-remap" ? "interrupt remapping fault"
                             : r.kind == "fault"           ? "DMA remapping fault"
                             : r.kind == "io-page-fault"   ? "I/O page fault"
                                                           : r.kind + " event";
    std::string ev = fmt::format("kernel log: {} IOMMU {}{} on {}", r.count, kind,
                                 r.count == 1 ? "" : "s", p.where);
    if (!r.details.empty()) ev += " — " + join(r.details, ", ");
    ev += "; " + when_logged(r);
    if (!r.last_message.empty()) ev += ": \"" + shorten(r.last_message, 160) + "\"";
    if (is_gpu) ev += "; the GPU's DMA (peer-to-peer, GPUDirect) is being blocked";
    if (is_gpu && !peer_failures.empty())
      ev += "; with " + join(peer_failures, ", ") + " in the same inputs";
    Finding& fd = e.add("iommu-fault", is_gpu ? Severity::kWarning : Severity::kInfo, p.subjects,
                        std::move(ev));
    if (!is_gpu) fd.action = Action::kWatch;
    if (is_gpu && !peer_failures.empty()) {
      fd.action = Action::kFixConfig;
      fd.decision_note =
          "The IOMMU blocked this GPU's DMA while peer traffic failed: the IOMMU (or ACS on the "
          "PCIe bridges redirecting peer traffic to it) is the cause, not the GPUs or the "
          "network. Boot with iommu=pt (or the IOMMU off where the platform allows), or disable "
          "ACS on the bridges above the GPUs (NCCL's troubleshooting guide), then re-run the "
          "P2P test.";
    }
  }
}

// ---------------------------------------------------------------- NCCL

std::optional<int> read_int_at(std::string_view s, std::size_t at, std::size_t* end = nullptr) {
  std::size_t i = at;
  while (i < s.size() && i - at < 6 && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == at) return std::nullopt;
  if (end) *end = i;
  auto v = parse_int(s.substr(at, i - at));
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

// The integer right after `key` (first occurrence).
std::optional<int> int_after(std::string_view s, std::string_view key) {
  const std::size_t p = s.find(key);
  if (p == npos) return std::nullopt;
  return read_int_at(s, p + key.size());
}

// "16.0 GT/s" → Gen4.
std::optional<int> gen_from_gts(std::string_view s) {
  const std::size_t p = s.find(" GT/s");
  if (p == npos) return std::nullopt;
  std::size_t b = p;
  while (b > 0 && (std::isdigit(static_cast<unsigned char>(s[b - 1])) || s[b - 1] == '.')) --b;
  const auto v = parse_double(s.substr(b, p - b));
  if (!v) return std::nullopt;
  const double rates[] = {2.5, 5, 8, 16, 32, 64};
  for (int i = 0; i < 6; ++i)
    if (*v > rates[i] - 0.3 && *v < rates[i] + 0.3) return i + 1;
  return std::nullopt;
}

// A GPU's PCIe link as one of NCCL's link events describes it.
struct NcclLink {
  std::optional<int> dev;  // CUDA device number, when the line gives it
  std::optional<int> gen;
  int width = 0;
  std::string shown;  // "PCIe/Gen4 x8" as NCCL put it, for evidence
};

std::optional<NcclLink> parse_gpu_link(const NcclEvent& ev) {
  const std::string_view d = ev.detail;
  NcclLink out;
  if (starts_with(d, "CUDA Dev ")) {
    // "CUDA Dev 0 [0] PCIe/Gen4 x8"
    out.dev = read_int_at(d, 9);
    const std::size_t p = d.find("PCIe/");
    if (p == npos) return std::nullopt;
    out.gen = int_after(d.substr(p), "PCIe/Gen");
    const auto w = int_after(d.substr(p), " x");
    if (!w) return std::nullopt;
    out.width = *w;
    std::size_t e = d.find_first_of(" (", d.find(" x", p) + 2);
    out.shown = std::string(d.substr(p, (e == npos ? d.size() : e) - p));
  } else if (starts_with(d, "GPU pci ")) {
    // "GPU pci 0000:9a:00.0 link_speed 16.0 GT/s PCIe link_width 8"
    const auto w = int_after(d, "link_width ");
    if (!w) return std::nullopt;
    out.width = *w;
    out.gen = gen_from_gts(d);
    out.shown = out.gen ? fmt::format("PCIe Gen{} x{}", *out.gen, *w) : fmt::format("x{}", *w);
  } else if (starts_with(d, "GPU dev ")) {
    // "GPU dev 1 sm 90: PCI link 16.0 GT/s PCIe x8; narrowest link on the path x8 at …"
    out.dev = read_int_at(d, 8);
    const auto own = int_after(d, "PCIe x");
    const auto path = int_after(d, "narrowest link on the path x");
    if (!own && !path) return std::nullopt;
    out.width = own && path ? std::min(*own, *path) : own ? *own : *path;
    out.gen = gen_from_gts(d);
    out.shown = fmt::format("{}x{}", out.gen ? fmt::format("PCIe Gen{} ", *out.gen) : "",
                            own ? *own : out.width);
    if (own && path && *path < *own) out.shown += fmt::format(", x{} upstream", *path);
  } else {
    return std::nullopt;
  }
  if (out.width <= 0 || out.width > 32) return std::nullopt;
  return out;
}

// Which of our GPUs an NCCL event is about: by bus id, else by the CUDA device number.
std::optional<int> nccl_gpu(const Facts& f, const NcclEvent& ev, std::optional<int> dev) {
  if (ev.pci_bus_id)
    if (const GpuFacts* g = find_gpu_by_bus(f, *ev.pci_bus_id)) return g->index;
  return dev;
}

std::string on_host(const std::optional<std::string>& host) {
  return host ? " on " + *host : std::string();
}

void check_nccl_links(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  struct Seen {
    const NcclEvent* ev;
    NcclLink link;
    std::optional<int> gpu;
  };
  std::map<std::string, std::vector<Seen>> by_host;
  for (const auto& ev : f.nccl_events) {
    if (ev.kind != "link") continue;
    auto link = parse_gpu_link(ev);
    if (!link) continue;
    by_host[ev.host.value_or("")].push_back({&ev, *link, nccl_gpu(f, ev, link->dev)});
  }
  std::set<std::string> reported;
  for (const auto& [host, seen] : by_host) {
    int widest = 0;
    for (const auto& s : seen) widest = std::max(widest, s.link.width);
    for (const auto& s : seen) {
      const GpuFacts* g = s.gpu ? find_gpu(f, *s.gpu) : nullptr;
      const std::optional<int> wmax =
          g && g->pcie.width_max && *g->pcie.width_max > 0 ? g->pcie.width_max : std::nullopt;
      const bool below_peers = seen.size() >= 2 && s.link.width < widest;
      const bool below_max = wmax && s.link.width < *wmax;
      if (!below_peers && !below_max) continue;
      const std::string subject = s.gpu ? gpu_subject(*s.gpu) : std::string("NCCL");
      std::string who = s.gpu ? gpu_subject(*s.gpu) : std::string("a GPU");
      if (s.link.dev) who += fmt::format(" (CUDA Dev {})", *s.link.dev);
      std::string ev = fmt::format("NCCL sees {}{} at {}", who, on_host(s.ev->host), s.link.shown);
      if (below_max) ev += fmt::format(", below the GPU's max x{}", *wmax);
      if (below_peers)
        ev += fmt::format("{} while the widest GPU link in the log is x{}", below_max ? "," : "",
                          widest);
      if (!reported.insert(subject + "|" + ev).second) continue;
      measure(e.add("nccl-degraded-path", Severity::kWarning, {subject}, std::move(ev)),
              "pcie_width", "lanes", s.link.width, below_max ? *wmax : widest, Bound::kExactly);
    }
  }
}

// "2[0] -> 3[1] via SHM/direct/direct": the two ends' CUDA devices (or bus ids in old logs).
struct ChannelEnds {
  std::optional<int> rank_a, rank_b;
  std::optional<int> gpu_a, gpu_b;
};

ChannelEnds parse_ends(const Facts& f, std::string_view d) {
  ChannelEnds out;
  auto end_at = [&](std::size_t at, std::optional<int>& rank, std::optional<int>& gpu) {
    std::size_t i = at;
    rank = read_int_at(d, at, &i);
    if (!rank || i >= d.size() || d[i] != '[') return;
    const std::size_t close = d.find(']', i);
    if (close == npos || close - i > 14) return;
    const std::string_view inside = d.substr(i + 1, close - i - 1);
    if (inside.size() <= 3) {
      gpu = read_int_at(inside, 0);
    } else {
      // Bus id as NCCL packs it ("e3000" → 0000:e3:00.0).
      if (inside.size() > 12) return;
      std::uint64_t x = 0;
      for (char ch : inside) {
        const int v = std::isdigit(static_cast<unsigned char>(ch))    ? ch - '0'
                      : std::isxdigit(static_cast<unsigned char>(ch)) ? (ch | 0x20) - 'a' + 10
                                                                      : -1;
        if (v < 0) return;
        x = x * 16 + static_cast<std::uint64_t>(v);
      }
      const std::string bus = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", x >> 20, (x >> 12) & 0xff,
                                          (x >> 4) & 0xff, x & 0xf);
      if (const GpuFacts* g = find_gpu_by_bus(f, bus)) gpu = g->index;
    }
  };
  end_at(0, out.rank_a, out.gpu_a);
  const std::size_t arrow = d.find("-> ");
  if (arrow != npos) end_at(arrow + 3, out.rank_b, out.gpu_b);
  return out;
}

const GpuPair* find_pair(const Facts& f, int a, int b) {
  if (b < a) std::swap(a, b);
  for (const auto& p : f.pairs)
    if (p.a == a && p.b == b) return &p;
  return nullptr;
}

void check_nccl_fallbacks(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  bool any_transport = false;
  bool net_socket = false;
  for (const auto& ev : f.nccl_events) {
    if (ev.kind != "transport") continue;
    any_transport = true;
    if (contains(ev.detail, "via NET/Socket")) net_socket = true;
  }

  std::size_t count = 0;
  for (const auto& ev : f.nccl_events) {
    // A WARN NCCL prints when it carries on with a slower path (nccl_messages.cc).
    if (ev.kind == "degraded") {
      if (++count > kMaxNcclFindingsPerKind) break;
      e.add("nccl-degraded-path", Severity::kWarning, {ev.host.value_or("NCCL")},
            fmt::format("NCCL{} warned: \"{}\": it carries on with a slower path", on_host(ev.host),
                        shorten(ev.detail)));
      continue;
    }
    if (ev.kind != "fallback") continue;
    Severity sev = Severity::kWarning;
    std::string what;
    if (contains(ev.detail, "P2P_DISABLE")) {
      what = "peer-to-peer transport switched off: GPU traffic goes through host memory";
    } else if (contains(ev.detail, "SHM_DISABLE")) {
      what = "shared-memory transport switched off: traffic without P2P goes over sockets";
    } else if (contains(ev.detail, "IB_DISABLE") || contains(ev.detail, "No device found")) {
      // Only inter-node traffic uses the network: on a single-node job it changes nothing.
      if (net_socket)
        what = "no InfiniBand/RoCE: inter-node traffic runs over TCP sockets (NET/Socket)";
      else if (!any_transport) {
        sev = Severity::kInfo;
        what = "no InfiniBand/RoCE: inter-node traffic, if any, runs over TCP sockets";
      } else {
        continue;
      }
    } else {
      what = "NCCL switched to a slower transport";
    }
    if (++count > kMaxNcclFindingsPerKind) break;
    e.add("nccl-degraded-path", sev, {ev.host.value_or("NCCL")},
          fmt::format("NCCL{}: \"{}\": {}", on_host(ev.host), shorten(ev.detail), what));
  }

  // SHM between two GPUs of one node: a warning where P2P is known to work between them, an
  // info where nothing says whether it could (NCCL also picks SHM when P2P is impossible).
  struct Shm {
    std::vector<std::string> subjects;
    std::string first;
    std::optional<std::string> host;
    bool p2p_known_ok = false;
    int connections = 0;
  };
  // NCCL_P2P_DISABLE=1 explains SHM on its host (its finding above says so).
  std::set<std::string> p2p_off;
  for (const auto& ev : f.nccl_events)
    if (ev.kind == "fallback" && contains(ev.detail, "P2P_DISABLE"))
      p2p_off.insert(ev.host.value_or(""));
  std::map<std::pair<std::string, bool>, Shm> shm;
  for (const auto& ev : f.nccl_events) {
    if (ev.kind != "transport" || !contains(ev.detail, "via SHM")) continue;
    if (p2p_off.count("") || p2p_off.count(ev.host.value_or(""))) continue;
    const ChannelEnds ends = parse_ends(f, ev.detail);
    std::string subject = ev.host.value_or("NCCL");
    bool p2p_ok = false;
    if (ends.gpu_a && ends.gpu_b && *ends.gpu_a != *ends.gpu_b) {
      if (const GpuPair* p = find_pair(f, *ends.gpu_a, *ends.gpu_b)) {
        // Expected when P2P cannot work between these two: SYS path, or P2P refused (those
        // findings say so).
        if (p->path == PathType::kSYS || p2p_rw_refused(*p) ||
            (p2p_bad(p->p2p_read) && *p->p2p_read == P2PStatus::kGpuNotSupported))
          continue;
        p2p_ok = p->path != PathType::kUnknown || p->p2p_read == P2PStatus::kOk ||
                 p->p2p_write == P2PStatus::kOk || p->p2p_pcie == P2PStatus::kOk;
      }
      subject = pair_subject(*ends.gpu_a, *ends.gpu_b);
    }
    auto& s = shm[{ev.host.value_or(""), p2p_ok}];
    if (s.connections == 0) {
      s.first = ev.detail;
      s.host = ev.host;
      s.p2p_known_ok = p2p_ok;
    }
    if (std::find(s.subjects.begin(), s.subjects.end(), subject) == s.subjects.end())
      s.subjects.push_back(subject);
    ++s.connections;
  }
  for (auto& [key, s] : shm) {
    std::sort(s.subjects.begin(), s.subjects.end());
    e.add("nccl-degraded-path", s.p2p_known_ok ? Severity::kWarning : Severity::kInfo, s.subjects,
          fmt::format(
              "NCCL{} moves GPU↔GPU traffic through host shared memory instead of P2P "
              "between {} ({} connection{}, e.g. \"{}\"){}",
              on_host(s.host), join(s.subjects, ", "), s.connections, s.connections > 1 ? "s" : "",
              shorten(s.first),
              s.p2p_known_ok ? "" : "; whether P2P could work between them was not captured"));
  }
}

bool warn_means_error(std::string_view detail) {
  const std::string d = to_lower(detail);
  return contains(d, "timeout") || contains(d, "timed out") || contains(d, "abort") ||
         contains(d, "unhandled");
}

void check_nccl_errors(const Context& c, Emitter& e) {
  struct Group {
    const char* one;
    const char* many;
    std::vector<const NcclEvent*> events;
  };
  Group groups[] = {{"timeout", "timeouts", {}},
                    {"error", "errors", {}},
                    {"warning about a timeout or abort", "warnings about a timeout or abort", {}}};
  for (const auto& ev : c.facts.nccl_events) {
    if (ev.kind == "timeout")
      groups[0].events.push_back(&ev);
    else if (ev.kind == "error")
      groups[1].events.push_back(&ev);
    else if (ev.kind == "warn" && warn_means_error(ev.detail))
      groups[2].events.push_back(&ev);
  }
  for (const auto& g : groups) {
    if (g.events.empty()) continue;
    std::set<int> ranks;
    std::set<std::string> hosts;
    for (const auto* ev : g.events) {
      if (ev->rank) ranks.insert(*ev->rank);
      if (ev->host) hosts.insert(*ev->host);
    }
    std::vector<std::string> subjects;
    for (int r : ranks) subjects.push_back(fmt::format("rank {}", r));
    if (subjects.empty())
      for (const auto& h : hosts) subjects.push_back(h);
    if (subjects.empty()) subjects.push_back("NCCL");
    const std::size_t n = g.events.size();
    const NcclEvent& first = *g.events.front();
    std::string where;
    if (first.rank)
      where = fmt::format(" (rank {})", *first.rank);
    else if (first.host)
      where = " (" + *first.host + ")";
    e.add("nccl-error", subjects,
          fmt::format("{} NCCL {}, first{}: \"{}\"", n, n > 1 ? g.many : g.one, where,
                      shorten(first.detail)));
  }
}

// Peer access refused as a benchmark or NCCL saw it, not as nvidia-smi reports it:
// nvbandwidth waiving its peer tests, NCCL failing to map a peer's memory.
bool peer_test(std::string_view test) {
  return contains(test, "device_to_device") || contains(test, "all_to_one") ||
         contains(test, "one_to_all") || contains(test, "did not name");
}

void check_p2p_refused_at_runtime(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  std::vector<std::string> waived;
  bool nameless = false;
  bool multinode = false;
  for (const auto& m : f.measurements) {
    if (m.tool != "nvbandwidth") continue;
    if (starts_with(m.test, "multinode")) multinode = true;
    if (m.note != "waived" || !peer_test(m.test)) continue;
    if (contains(m.test, "did not name"))
      nameless = true;
    else if (std::find(waived.begin(), waived.end(), m.test) == waived.end())
      waived.push_back(m.test);
  }
  if ((!waived.empty() || nameless) && !multinode) {
    std::string tests =
        waived.empty()
            ? std::string("its testcases (names not printed)")
            : join(std::vector<std::string>(
                       waived.begin(),
                       waived.begin() +
                           static_cast<std::ptrdiff_t>(std::min<std::size_t>(4, waived.size()))),
                   ", ") +
                  (waived.size() > 4 ? ", …" : "");
    const std::size_t n = f.gpus.size();
    if (n == 1) {
      e.note("nvbandwidth waived its peer tests: this input shows one GPU, so there is no peer");
    } else {
      std::vector<std::string> subjects;
      for (const auto& g : f.gpus) subjects.push_back(gpu_subject(g.index));
      if (subjects.empty()) subjects.push_back("nvbandwidth");
      std::string ev = fmt::format(
          "nvbandwidth waived {}: it does so when no pair of GPUs can map each other's memory "
          "(cuDeviceCanAccessPeer is 0 for every pair)",
          tests);
      Severity sev = Severity::kWarning;
      if (n == 0) {
        sev = Severity::kInfo;
        ev += "; the input lists no GPUs, so whether there were two or more is not known";
      } else if (all_consumer(f)) {
        sev = Severity::kInfo;
        ev += fmt::format(" across the {} GPUs; {}", n, kConsumerP2p);
      } else {
        ev += fmt::format(" — none of the {} GPUs reaches another over P2P", n);
      }
      Finding& fd = e.add("p2p-unavailable", sev, std::move(subjects), std::move(ev));
      if (sev <= Severity::kInfo) fd.action = Action::kNone;
    }
  }

  // NCCL's own attempt: one finding per host and pair (or per host when the pair is unknown).
  struct Refusal {
    std::vector<std::string> subjects;
    std::string first;
    std::optional<std::string> host;
    bool consumer = false;
    int count = 0;
  };
  std::map<std::string, Refusal> refused;
  for (const auto& ev : f.nccl_events) {
    if (ev.kind != "p2p") continue;
    std::string subject = ev.host.value_or("NCCL");
    bool consumer = all_consumer(f);
    const std::size_t ch = ev.detail.find("[channel ");
    if (ch != npos) {
      const ChannelEnds ends = parse_ends(f, std::string_view(ev.detail).substr(ch + 9));
      if (ends.gpu_a && ends.gpu_b && *ends.gpu_a != *ends.gpu_b) {
        subject = pair_subject(*ends.gpu_a, *ends.gpu_b);
        consumer = consumer_pair(f, *ends.gpu_a, *ends.gpu_b);
      }
    }
    Refusal& r = refused[ev.host.value_or("") + "|" + subject];
    if (r.count++ == 0) {
      r.subjects = {subject};
      r.first = ev.detail;
      r.host = ev.host;
      r.consumer = consumer;
    }
  }
  for (auto& [key, r] : refused) {
    std::string ev = fmt::format(
        "NCCL{} could not map a peer GPU's memory ({} time{}, e.g. \"{}\"): its P2P transport "
        "failed and the job errors out or falls back to host memory",
        on_host(r.host), r.count, r.count == 1 ? "" : "s", shorten(r.first));
    if (r.consumer) ev += std::string("; ") + kConsumerP2p;
    Finding& fd = e.add("p2p-unavailable", r.consumer ? Severity::kInfo : Severity::kWarning,
                        r.subjects, std::move(ev));
    if (r.consumer) fd.action = Action::kNone;  // GeForce: no PCIe P2P by design
  }
}

}  // namespace

void check_topology(const Context& c, Emitter& e) {
  check_pcie(c, e);
  check_numa_pairs(c, e);
  check_p2p(c, e);
  check_p2p_refused_at_runtime(c, e);
  check_nvlink(c, e);
  check_fabric(c, e);
  check_acs(c, e);
  check_pcie_aer(c, e);
  check_iommu_faults(c, e);
  check_nccl_links(c, e);
  check_nccl_fallbacks(c, e);
  check_nccl_errors(c, e);
}

}  // namespace gpuvet::rules
