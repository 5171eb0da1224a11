#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "core/pair_matrix.h"
#include "core/stats.h"
#include "core/util.h"
#include "gpuvet/report.h"
#include "hw/facts_query.h"
#include "report/terminal_text.h"

namespace gpuvet {
namespace {

using report::kNoStyle;
using report::Style;

constexpr Style kRed{"\x1b[31m"};
constexpr Style kYellow{"\x1b[33m"};
constexpr Style kBold{"\x1b[1m"};
constexpr Style kReset{"\x1b[0m"};

std::string dash() { return "-"; }

template <typename T>
std::string or_dash(const std::optional<T>& v) {
  if (!v) return dash();
  return fmt::format("{}", *v);
}

std::string gib(std::uint64_t bytes) {
  return fmt::format("{:.0f}", bytes / (1024.0 * 1024.0 * 1024.0));
}
std::string mib(std::uint64_t bytes) { return fmt::format("{}", bytes / (1024 * 1024)); }

std::string link_text(const PcieLink& l) {
  if (!l.gen_current && !l.width_current) return dash();
  std::string s = fmt::format("Gen{}/{} x{}/{}", or_dash(l.gen_current), or_dash(l.gen_max),
                              or_dash(l.width_current), or_dash(l.width_max));
  return s;
}

std::string temp_text(const Thermal& t) {
  if (t.gpu_c && t.margin_c) return fmt::format("{}C ({}C left)", *t.gpu_c, *t.margin_c);
  if (t.gpu_c) return fmt::format("{}C", *t.gpu_c);
  if (t.margin_c) return fmt::format("{}C left", *t.margin_c);
  return dash();
}

// The path of each pair, looked up by its two GPUs (either order), built once: a lookup per cell
// that walked every pair made the matrix of a 512-GPU node take 33 s.
class PairCells {
 public:
  explicit PairCells(const std::vector<GpuPair>& pairs) {
    for (const auto& p : pairs) cells_.try_emplace(key(p.a, p.b), &p);
  }
  std::string cell(int a, int b) const {
    if (a == b) return "X";
    const auto it = cells_.find(key(a, b));
    if (it == cells_.end()) return "?";
    return path_label(*it->second);
  }

 private:
  static std::pair<int, int> key(int a, int b) { return {std::min(a, b), std::max(a, b)}; }
  std::map<std::pair<int, int>, const GpuPair*> cells_;
};

// Above this many GPUs the matrix (GPUs² cells) gives way to a count of pairs per path.
constexpr std::size_t kMatrixMaxGpus = 64;

// P2P status grouped by value, one line per distinct status, the largest group first and its
// pairs not listed: 28 pairs of an 8-GPU node are one line when they agree (was 735 characters
// with one entry per pair), and a pair that differs is named.
std::string p2p_lines(const std::vector<GpuPair>& pairs) {
  constexpr std::size_t kPairsNamed = 8;
  auto s = [](const std::optional<P2PStatus>& v) { return v ? p2p_status_code(*v) : "-"; };
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // status → pairs
  for (const auto& p : pairs) {
    const std::string status = fmt::format("{}/{}/{}/{}/{}", s(p.p2p_read), s(p.p2p_write),
                                           s(p.p2p_nvlink), s(p.p2p_atomics), s(p.p2p_pcie));
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& group) { return group.first == status; });
    if (g == groups.end()) g = groups.insert(groups.end(), {status, {}});
    g->second.push_back(fmt::format("GPU{}-GPU{}", p.a, p.b));
  }
  if (groups.size() == 1 && groups.front().first == "-/-/-/-/-")
    return "P2P status: not in the input\n";
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::string out = fmt::format("P2P read/write/nvlink/atomics/pcie, {} pairs:\n", pairs.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& [status, names] = groups[i];
    out += fmt::format("  {:<18} {:>3} pair{}", status, names.size(), names.size() == 1 ? "" : "s");
    if (i == 0 && groups.size() > 1) {
      out += " (the others)";
    } else if (i > 0) {
      const std::size_t shown = std::min(names.size(), kPairsNamed);
      out += fmt::format(
          ": {}",
          fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
      if (names.size() > shown) out += fmt::format(" … +{}", names.size() - shown);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

namespace {

// The job's ranks, one line each (at most 64, then a count): who, steps, step time and the split.
void render_job_ranks(report::TerminalText& o, const std::vector<JobRank>& ranks, bool color) {
  o << "\n" << (color ? kBold : kNoStyle) << "Job" << (color ? kReset : kNoStyle) << "\n";
  std::size_t shown = 0;
  for (const auto& r : ranks) {
    if (++shown > 64) {
      o << fmt::format("  … {} more\n", ranks.size() - 64);
      break;
    }
    std::string who = r.rank ? fmt::format("rank {}", *r.rank) : r.origin.value_or("job");
    if (r.world_size) who += fmt::format(" of {}", *r.world_size);
    std::vector<std::string> parts = {r.source};
    if (r.backend) parts.push_back(*r.backend);
    if (r.gpu_name) parts.push_back(*r.gpu_name);
    if (r.cuda_device) parts.push_back(fmt::format("CUDA device {}", *r.cuda_device));
    if (r.host) parts.push_back(*r.host);
    o << fmt::format("  {} ({})", who, fmt::join(parts, ", "));
    std::vector<double> walls, compute, exposed, copy, idle;
    for (const auto& st : r.steps) {
      if (st.wall_ms <= 0) continue;
      walls.push_back(st.wall_ms);
      if (st.compute_ms) compute.push_back(*st.compute_ms / st.wall_ms);
      if (st.comm_exposed_ms) exposed.push_back(*st.comm_exposed_ms / st.wall_ms);
      if (st.copy_ms) copy.push_back(*st.copy_ms / st.wall_ms);
      if (st.idle_ms) idle.push_back(*st.idle_ms / st.wall_ms);
    }
    if (auto p50 = median(walls)) {
      o << fmt::format(": {} steps, p50 {:.2f} ms", r.steps.size(), *p50);
      if (!compute.empty())
        o << fmt::format(
            "; compute {:.0f} %, exposed comm {:.0f} %, copies {:.0f} %, idle {:.0f} %",
            100 * *median(compute), 100 * median(exposed).value_or(0),
            100 * median(copy).value_or(0), 100 * median(idle).value_or(0));
    }
    if (!r.collectives.empty())
      o << fmt::format("; {} kind(s) of collective", r.collectives.size());
    o << "\n";
  }
}

}  // namespace

std::string render_facts_text(const Facts& facts, const TextOptions& options) {
  // Every string from the input (names, versions, notes) is made safe on the way in.
  report::TerminalText o;
  auto c = [&](Style s) { return options.color ? s : kNoStyle; };
  const auto& h = facts.host;

  o << c(kBold) << "Host " << h.hostname.value_or("(unknown host)") << c(kReset);
  if (h.kernel) o << "  Linux " << *h.kernel;
  if (h.os) o << "  " << *h.os;
  if (h.virtual_machine.value_or(false)) o << "  (virtual machine)";
  o << "\n";
  o << "  CPU " << h.cpu_model.value_or("unknown model");
  if (h.sockets) o << ", " << *h.sockets << " socket(s)";
  if (h.physical_cores) o << ", " << *h.physical_cores << " cores";
  if (h.logical_cpus) o << ", " << *h.logical_cpus << " threads";
  if (h.memory_bytes) o << ", " << gib(*h.memory_bytes) << " GiB RAM";
  o << "\n";
  for (const auto& n : h.numa_nodes) {
    o << fmt::format("  NUMA node{}: CPUs {}", n.id,
                     n.cpus.empty() ? "(none)" : format_cpu_list(n.cpus));
    if (n.memory_bytes) o << ", " << gib(*n.memory_bytes) << " GiB";
    if (!n.distances.empty()) {
      o << ", distances";
      for (int d : n.distances) o << " " << d;
    }
    o << "\n";
  }
  o << "  Driver " << h.driver_version.value_or("-") << ", CUDA "
    << h.cuda_driver_version.value_or("-") << ", NVML " << h.nvml_version.value_or("-");
  if (h.nvlink_disabled_by_driver)
    o << ", NvLinkDisable=" << (*h.nvlink_disabled_by_driver ? 1 : 0);
  if (h.iommu.active)
    o << ", IOMMU " << (*h.iommu.active ? "active" : "off")
      << (h.iommu.passthrough.value_or(false) ? " (passthrough)" : "");
  o << "\n";

  if (facts.gpus.empty()) {
    o << "\n" << c(kYellow) << "No GPU facts" << c(kReset);
    if (facts.gpu_facts_unavailable && !facts.notes.empty()) o << ": see notes below";
    o << "\n";
  } else {
    o << "\n"
      << c(kBold)
      << fmt::format("{:<4} {:<24} {:<13} {:<16} {:>11} {:>14} {:>13} {:>16} {:>5} {:<4} {}", "GPU",
                     "Name", "Bus", "PCIe gen/width", "SM MHz", "Temp", "Power W", "Memory MiB",
                     "Util", "ECC", "Clock events")
      << c(kReset) << "\n";
    for (const auto& g : facts.gpus) {
      std::string name = g.name.value_or("-");
      if (name.size() > 24) name = name.substr(0, 23) + "~";
      std::string sm = g.clocks.sm_mhz
                           ? fmt::format("{}/{}", *g.clocks.sm_mhz, or_dash(g.clocks.sm_max_mhz))
                           : dash();
      std::string power =
          g.power.draw_w
              ? fmt::format("{:.0f}/{}", *g.power.draw_w,
                            g.power.limit_w ? fmt::format("{:.0f}", *g.power.limit_w) : "-")
              : dash();
      std::string mem =
          g.memory.total_bytes
              ? fmt::format("{}/{}", g.memory.used_bytes ? mib(*g.memory.used_bytes) : "-",
                            mib(*g.memory.total_bytes))
              : dash();
      std::string util =
          g.utilization.gpu_pct ? fmt::format("{}%", *g.utilization.gpu_pct) : dash();
      std::string ecc = g.ecc.enabled ? (*g.ecc.enabled ? "on" : "off") : dash();
      std::string events =
          g.clock_events.active.empty() ? (g.clock_events.active_mask ? "none" : "-") : "";
      for (const auto& e : g.clock_events.active) events += (events.empty() ? "" : ",") + e;
      o << fmt::format("{:<4} {:<24} {:<13} {:<16} {:>11} {:>14} {:>13} {:>16} {:>5} {:<4} {}",
                       g.index, name, g.pci_bus_id.value_or("-"), link_text(g.pcie), sm,
                       temp_text(g.thermal), power, mem, util, ecc, events)
        << "\n";
      if (g.unresponsive)
        o << "     " << c(kRed) << "GPU" << g.index << " " << *g.unresponsive << c(kReset) << "\n";
      const bool ecc_counts = g.ecc.volatile_counts.uncorrected.value_or(0) ||
                              g.ecc.aggregate_counts.uncorrected.value_or(0) ||
                              g.ecc.volatile_counts.corrected.value_or(0) ||
                              g.ecc.aggregate_counts.corrected.value_or(0);
      if (ecc_counts)
        o << fmt::format(
            "     ECC errors: volatile {} corrected / {} uncorrected, aggregate {} / {}\n",
            or_dash(g.ecc.volatile_counts.corrected), or_dash(g.ecc.volatile_counts.uncorrected),
            or_dash(g.ecc.aggregate_counts.corrected), or_dash(g.ecc.aggregate_counts.uncorrected));
      if (g.ecc.remapping_pending.value_or(false) || g.ecc.remapping_failed.value_or(false))
        o << fmt::format("     Row remapping: pending {}, failed {}\n",
                         *g.ecc.remapping_pending ? "yes" : "no",
                         g.ecc.remapping_failed.value_or(false) ? "yes" : "no");
      if (g.pcie.replay_counter.value_or(0) > 0)
        o << "     PCIe replays: " << *g.pcie.replay_counter << "\n";
      if (g.mig_enabled.value_or(false)) o << "     MIG enabled\n";
      if (!g.nvlinks.empty()) {
        int up = 0;
        for (const auto& l : g.nvlinks) up += l.active.value_or(false) ? 1 : 0;
        o << fmt::format("     NVLink: {}/{} links up", up, g.nvlinks.size());
        if (g.fabric.state && *g.fabric.state != "not_supported")
          o << ", fabric " << *g.fabric.state << " (" << g.fabric.status.value_or("-") << ")";
        o << "\n";
      }
      if (g.acs_redirects_p2p.value_or(false)) {
        o << "     " << c(kYellow) << "ACS redirects P2P on:";
        for (const auto& b : g.acs_bridges) o << " " << b;
        o << c(kReset) << "\n";
      }
      if (options.verbose)
        for (const auto& u : g.unreadable) o << "     unreadable " << u << "\n";
    }

    // Topology matrix in the spirit of `nvidia-smi topo -m`; past kMatrixMaxGpus, a count of
    // pairs per path (the matrix of 1024 GPUs is a million cells).
    if (facts.gpus.size() > kMatrixMaxGpus) {
      // Each pair once, the first listed where one repeats (as the matrix shows it).
      std::map<std::string, std::size_t> per_path;
      std::set<std::pair<int, int>> counted;
      for (const auto& p : facts.pairs)
        if (p.a != p.b && counted.emplace(std::min(p.a, p.b), std::max(p.a, p.b)).second)
          ++per_path[path_label(p)];
      std::vector<std::string> parts;
      for (const auto& [path, n] : per_path) parts.push_back(fmt::format("{} {}", path, n));
      o << "\n"
        << fmt::format(
               "Topology: {} GPUs, the matrix is shown up to {} (--json lists every "
               "pair); pairs per path: {}\n",
               facts.gpus.size(), kMatrixMaxGpus,
               parts.empty() ? std::string("none in the input")
                             : fmt::format("{}", fmt::join(parts, ", ")));
    } else {
      const PairCells cells(facts.pairs);
      o << "\n" << c(kBold) << fmt::format("{:<7}", "");
      for (const auto& g : facts.gpus) o << fmt::format("{:<6}", "GPU" + std::to_string(g.index));
      o << fmt::format("{:<16} {}", "CPU Affinity", "NUMA") << c(kReset) << "\n";
      for (const auto& ga : facts.gpus) {
        o << fmt::format("{:<7}", "GPU" + std::to_string(ga.index));
        for (const auto& gb : facts.gpus) o << fmt::format("{:<6}", cells.cell(ga.index, gb.index));
        o << fmt::format("{:<16} {}",
                         ga.cpu_affinity.empty() ? "-" : format_cpu_list(ga.cpu_affinity),
                         or_dash(ga.numa_node))
          << "\n";
      }
    }
    if (!facts.pairs.empty()) o << p2p_lines(facts.pairs);
  }

  if (!facts.processes.empty()) {
    o << "\n"
      << c(kBold)
      << fmt::format("{:<4} {:>8} {:>8} {:<20} {:>10} {:<14} {}", "GPU", "PID", "LocalPID", "Name",
                     "Mem MiB", "CPUs allowed", "Mems")
      << c(kReset) << "\n";
    for (const auto& p : facts.processes)
      o << fmt::format("{:<4} {:>8} {:>8} {:<20} {:>10} {:<14} {}", p.gpu, p.host_pid,
                       or_dash(p.local_pid), p.name.value_or("-").substr(0, 20),
                       p.used_memory_bytes ? mib(*p.used_memory_bytes) : "-",
                       p.cpus_allowed.value_or("-"), p.mems_allowed.value_or("-"))
        << "\n";
  }

  const auto& k = facts.kernel_log;
  if (!k.source.empty() || k.why_unreadable) {
    o << "\nKernel log (" << (k.source.empty() ? "-" : k.source) << "): ";
    if (!k.readable)
      o << "unreadable";
    else
      o << k.xids.size() << " Xid event(s)";
    o << "\n";
    const std::size_t shown =
        std::min<std::size_t>(k.xids.size(), options.verbose ? k.xids.size() : 10);
    for (std::size_t i = k.xids.size() - shown; i < k.xids.size(); ++i) {
      const auto& x = k.xids[i];
      o << "  " << c(x.code == 79 || x.code == 48 || x.code == 95 ? kRed : kNoStyle) << "Xid "
        << x.code << c(kReset);
      if (x.gpu)
        o << " GPU" << *x.gpu;
      else if (x.pci_bus_id)
        o << " " << *x.pci_bus_id;
      if (x.uptime_s) o << fmt::format(" at {:.0f} s after boot", *x.uptime_s);
      o << ": " << x.message.substr(0, 100) << "\n";
    }
    if (shown < k.xids.size())
      o << "  (" << k.xids.size() - shown << " earlier events; --verbose shows all)\n";
  }

  if (h.pressure) {
    const auto& p = *h.pressure;
    std::vector<std::string> parts;
    if (!p.cores.empty()) {
      int pegged = 0;
      double busiest = 0;
      for (const auto& core : p.cores) {
        pegged += core.busy_pct >= 95 ? 1 : 0;
        busiest = std::max(busiest, core.busy_pct);
      }
      parts.push_back(fmt::format("{} core(s) >= 95% busy (busiest {:.0f}%)", pegged, busiest));
    }
    if (p.iowait_pct) parts.push_back(fmt::format("iowait {:.1f}%", *p.iowait_pct));
    for (const auto& d : p.disks)
      if (d.util_pct >= 1) parts.push_back(fmt::format("{} {:.0f}% util", d.device, d.util_pct));
    for (const auto& n : p.nics)
      if (n.peak_util_pct && *n.peak_util_pct >= 1)
        parts.push_back(fmt::format("{} {:.0f}% of line rate", n.device, *n.peak_util_pct));
    // PSI: the figure the rules judge (hw::psi_choice): over a window of 1 s or more, else
    // the kernel's 10 s average.
    for (auto [name, r] : {std::pair{"cpu", &p.psi_cpu}, std::pair{"io", &p.psi_io},
                           std::pair{"memory", &p.psi_memory}}) {
      if (!*r) continue;
      if (const auto some = hw::psi_choice(**r, p.window_s))
        parts.push_back(fmt::format("{} PSI some {:.1f}%{}", name, some->some_pct,
                                    some->windowed ? "" : " (avg10)"));
    }
    o << (p.window_s > 0 ? fmt::format("\nHost pressure over {:.2f} s: ", p.window_s)
                         : std::string("\nHost pressure: "))
      << (parts.empty() ? std::string("nothing measured")
                        : fmt::format("{}", fmt::join(parts, ", ")))
      << "\n";
  }

  if (!facts.job_ranks.empty()) render_job_ranks(o, facts.job_ranks, options.color);

  if (options.verbose && !facts.sources.empty()) {
    o << "\nSources\n";
    for (const auto& s : facts.sources) {
      o << fmt::format("  {:<10} {:<4} {:7.1f} ms  {}\n", s.name, s.ok ? "ok" : "FAIL",
                       s.duration_ms, s.detail);
      for (const auto& [what, ms] : s.timings_ms)
        o << fmt::format("             {:7.1f} ms  {}\n", ms, what);
    }
  }

  if (!facts.notes.empty()) {
    o << "\n" << c(kBold) << "Notes" << c(kReset) << "\n";
    for (const auto& n : facts.notes) o << "  - " << n << "\n";
  }
  return o.str();
}

}  // namespace gpuvet
