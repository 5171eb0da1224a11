// rules_host.cc — the host around the GPUs (step 2/4: CPU, storage, network) and how the
// processes are mapped onto the GPUs and NUMA nodes.
//
// check_host:    cpu-saturated, io-bound, network-saturated.
// check_mapping: gpu-shared-by-processes, gpu-idle-while-peer-busy, memory-imbalance,
//                memory-near-full, numa-misbinding.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/util.h"
#include "rules/rule.h"

namespace gpuvet::rules {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// Pegged cores listed one by one up to here; the rest are counted.
constexpr std::size_t kMaxCoresListed = 8;

std::string pct(double v) { return format_number(v, 1) + " %"; }

// ---------------------------------------------------------------- PSI

// Which figure is judged: hw::psi_choice, shared with the report.
std::optional<double> psi_some(const std::optional<PsiReading>& r, double window_s) {
  if (!r) return std::nullopt;
  const auto choice = hw::psi_choice(*r, window_s);
  return choice ? std::optional<double>(choice->some_pct) : std::nullopt;
}

// "I/O pressure (PSI): some 28.1 %, full 25 % of the time over the 2 s window (avg10 some
// 27.9 %)" or "… of the time (kernel's 10 s average; over the 0.05 s window some 31 %)".
std::string psi_phrase(const char* what, const PsiReading& r, double window_s) {
  const auto choice = hw::psi_choice(r, window_s);
  const bool windowed = choice && choice->windowed;
  std::vector<std::string> shares;
  if (choice) shares.push_back("some " + pct(choice->some_pct));
  if (choice && choice->full_pct) shares.push_back("full " + pct(*choice->full_pct));
  std::string s = fmt::format("{} pressure (PSI): {} of the time", what, join(shares, ", "));
  std::vector<std::string> also;
  if (windowed) {
    s += fmt::format(" over the {} s window", format_number(window_s, 2));
    if (r.some_avg10) also.push_back("avg10 some " + pct(*r.some_avg10));
  } else {
    also.push_back("kernel's 10 s average");
    if (r.some_window_pct)
      also.push_back(fmt::format("over the {} s window some {}", format_number(window_s, 2),
                                 pct(*r.some_window_pct)));
  }
  if (r.some_avg60) also.push_back("avg60 some " + pct(*r.some_avg60));
  return s + " (" + join(also, "; ") + ")";
}

// ---------------------------------------------------------------- NUMA placement

std::map<int, int> cpu_to_node(const std::map<int, std::vector<int>>& nodes) {
  std::map<int, int> out;
  for (const auto& [id, cpus] : nodes)
    for (int cpu : cpus) out.emplace(cpu, id);
  return out;
}

// "node 0" / "nodes 0-1".
std::string nodes_phrase(const std::set<int>& nodes, const char* word = "node") {
  const std::vector<int> v(nodes.begin(), nodes.end());
  return fmt::format("{}{} {}", word, v.size() > 1 ? "s" : "", format_cpu_list(v));
}

// ---------------------------------------------------------------- host pressure

void check_cpu(const Context& c, const HostPressure& hp, Emitter& e) {
  const Facts& f = c.facts;
  std::vector<const CpuCoreLoad*> pegged;
  for (const auto& core : hp.cores)
    if (core.busy_pct >= c.t.cpu_pegged_pct) pegged.push_back(&core);
  if (pegged.empty()) return;
  std::sort(pegged.begin(), pegged.end(),
            [](const CpuCoreLoad* a, const CpuCoreLoad* b) { return a->cpu < b->cpu; });

  std::vector<std::string> subjects;
  std::vector<std::string> listed;
  for (const auto* core : pegged) {
    subjects.push_back(fmt::format("CPU{}", core->cpu));
    if (listed.size() < kMaxCoresListed)
      listed.push_back(fmt::format("CPU {} {} %", core->cpu, format_number(core->busy_pct, 0)));
  }
  std::string ev = join(listed, ", ");
  if (pegged.size() > kMaxCoresListed)
    ev += fmt::format(" and {} more", pegged.size() - kMaxCoresListed);
  std::optional<int> logical = f.host.logical_cpus;
  if (!logical && !f.host.numa_nodes.empty()) {
    int n = 0;
    for (const auto& node : f.host.numa_nodes) n += static_cast<int>(node.cpus.size());
    if (n > 0) logical = n;
  }
  if (logical) ev += fmt::format(" of {} logical CPUs", *logical);

  // Which NUMA node the pegged cores belong to.
  const auto by_cpu = cpu_to_node(node_cpus(f));
  std::map<int, std::vector<int>> per_node;
  for (const auto* core : pegged)
    if (auto it = by_cpu.find(core->cpu); it != by_cpu.end())
      per_node[it->second].push_back(core->cpu);
  if (!per_node.empty()) {
    std::vector<std::string> parts;
    for (const auto& [node, cpus] : per_node)
      parts.push_back(fmt::format("{} {}: CPU{} {}", parts.empty() ? "NUMA node" : "node", node,
                                  cpus.size() > 1 ? "s" : "", format_cpu_list(cpus)));
    ev += " (" + join(parts, "; ") + ")";
  }
  // Runnable tasks waiting for a CPU: more threads than cores, not only busy cores.
  if (hp.psi_cpu && psi_some(hp.psi_cpu, hp.window_s))
    ev += "; " + psi_phrase("CPU", *hp.psi_cpu, hp.window_s);

  // Saturated GPUs next to a spinning launch thread: the CPU is not what limits them now.
  Severity sev = Severity::kWarning;
  if (f.gpus.empty()) {
    ev += "; no GPU facts to tell whether the GPUs starve";
  } else {
    std::vector<std::string> not_busy;
    std::vector<std::string> busy;
    for (const auto& g : f.gpus) {
      const std::string load = load_phrase(g);
      const std::string s = gpu_subject(g.index) + (load.empty() ? "" : " " + load);
      (is_busy(f, g, c.t) ? busy : not_busy).push_back(s);
    }
    if (not_busy.empty()) {
      sev = Severity::kInfo;
      ev += "; every GPU is busy (" + join(busy, ", ") +
            "): the pegged cores do not hold the GPUs back now";
    } else {
      ev += "; not busy: " + join(not_busy, ", ") + " (GPU starvation possible)";
    }
  }
  double top = 0;
  for (const auto* core : pegged) top = std::max(top, core->busy_pct);
  Finding& fd = e.add("cpu-saturated", sev, subjects, std::move(ev));
  measure(fd, "cpu_busy", "%", top, c.t.cpu_pegged_pct, Bound::kAtMost);
  if (sev == Severity::kInfo) fd.action = Action::kNone;
}

void check_io(const Context& c, const HostPressure& hp, Emitter& e) {
  const bool iowait_high = hp.iowait_pct && *hp.iowait_pct >= c.t.iowait_pct;
  // PSI counts stalled tasks, not idle CPUs: one thread waiting on a saturated disk of a
  // 128-CPU machine is under 1 % iowait but shows as I/O pressure.
  const auto psi = psi_some(hp.psi_io, hp.window_s);
  const bool psi_high = psi && *psi >= c.t.psi_io_some_pct;
  std::vector<const DiskLoad*> busy;
  for (const auto& d : hp.disks)
    if (d.util_pct >= c.t.disk_util_pct) busy.push_back(&d);
  if (!iowait_high && !psi_high && busy.empty()) return;

  std::vector<std::string> parts;
  if (hp.psi_io && psi) parts.push_back(psi_phrase("I/O", *hp.psi_io, hp.window_s));
  if (hp.iowait_pct) parts.push_back("iowait " + pct(*hp.iowait_pct));
  auto describe = [](const DiskLoad& d) {
    std::string s = fmt::format("{} {} % busy", d.device, format_number(d.util_pct, 0));
    if (d.read_bytes_per_s > 0)
      s += fmt::format(", reading {} MB/s", format_number(d.read_bytes_per_s / 1e6));
    if (d.write_bytes_per_s > 0)
      s += fmt::format(", writing {} MB/s", format_number(d.write_bytes_per_s / 1e6));
    return s;
  };
  std::vector<std::string> subjects;
  for (const auto* d : busy) {
    subjects.push_back(d->device);
    parts.push_back(describe(*d));
  }
  if (busy.empty()) {
    subjects.push_back("host");
    // No disk over the line: still name the busiest one, it is where to look first.
    const DiskLoad* top = nullptr;
    for (const auto& d : hp.disks)
      if (!top || d.util_pct > top->util_pct) top = &d;
    if (top) parts.push_back("busiest disk " + describe(*top));
  }
  Finding& fd = e.add("io-bound", Severity::kWarning, subjects, join(parts, ", "));
  // The signal that decided: a busy disk, else I/O pressure, else iowait.
  if (!busy.empty()) {
    double top = 0;
    for (const auto* d : busy) top = std::max(top, d->util_pct);
    measure(fd, "disk_util", "%", top, c.t.disk_util_pct, Bound::kAtMost);
  } else if (psi_high) {
    measure(fd, "psi_io_some", "%", *psi, c.t.psi_io_some_pct, Bound::kAtMost);
  } else {
    measure(fd, "iowait", "%", *hp.iowait_pct, c.t.iowait_pct, Bound::kAtMost);
  }
}

void check_network(const Context& c, const HostPressure& hp, Emitter& e) {
  for (const auto& n : hp.nics) {
    const double peak_bytes = std::max(n.rx_bytes_per_s, n.tx_bytes_per_s);
    const double rx_gbit = n.rx_bytes_per_s * 8 / 1e9;
    const double tx_gbit = n.tx_bytes_per_s * 8 / 1e9;
    const std::string rates = fmt::format("rx {} Gbit/s, tx {} Gbit/s", format_number(rx_gbit, 2),
                                          format_number(tx_gbit, 2));
    const bool speed_known = n.speed_mbit_s && *n.speed_mbit_s > 0;
    std::optional<double> util = n.peak_util_pct;
    if (!util && speed_known) util = peak_bytes * 8 / 1e6 / *n.speed_mbit_s * 100;
    if (util) {
      if (*util < c.t.nic_util_pct) continue;
      std::string line =
          speed_known ? fmt::format(" of {} Gbit/s", format_number(*n.speed_mbit_s / 1000, 0))
                      : std::string(" of its line rate");
      measure(
          e.add("network-saturated", Severity::kWarning, {n.device},
                fmt::format("{} at {} %{} ({})", n.device, format_number(*util, 0), line, rates)),
          "nic_util", "%", *util, c.t.nic_util_pct, Bound::kAtMost);
      continue;
    }
    const double peak_gbit = peak_bytes * 8 / 1e9;
    if (peak_gbit < c.t.nic_unknown_speed_gbit_s) continue;
    measure(e.add("network-saturated", Severity::kWarning, {n.device},
                  fmt::format("{} {}, line rate unknown: {} % of 10 GbE, {} % of 25 GbE", n.device,
                              rates, format_number(peak_gbit / 10 * 100, 0),
                              format_number(peak_gbit / 25 * 100, 0))),
            "nic_rate", "Gbit/s", peak_gbit, c.t.nic_unknown_speed_gbit_s, Bound::kAtMost);
  }
}

// ---------------------------------------------------------------- mapping

std::string mib(std::uint64_t bytes) { return format_number(static_cast<double>(bytes) / kMiB, 0); }

std::string memory_phrase(const GpuFacts& g) {
  const auto frac = memory_fraction(g);
  if (!frac) return gpu_subject(g.index);
  return fmt::format("{} {}/{} MiB ({} %)", gpu_subject(g.index), mib(*g.memory.used_bytes),
                     mib(*g.memory.total_bytes), format_number(*frac * 100, 0));
}

std::string process_name(const ProcessFacts& p) {
  return p.name ? fmt::format("{} ({})", p.host_pid, *p.name) : std::to_string(p.host_pid);
}

// On a two-GPU box (the article's case) or when NCCL shows a job spanning the GPUs, an idle
// or empty GPU next to a full one is a mapping fault. On a bigger node it is as likely to be
// several independent jobs that were simply given some of the GPUs: said, as info.
bool one_job_expected(const Facts& f) { return f.gpus.size() <= 2 || !f.nccl_events.empty(); }

constexpr const char* kSharedNodeCaveat =
    " (on a node shared by several jobs this is allocation; if one job should span every GPU, "
    "a rank is missing or CUDA_VISIBLE_DEVICES is wrong)";

// Returns the GPUs reported as idle-with-no-process, so that gpu-idle-while-peer-busy does
// not say the same thing again.
std::set<int> check_shared(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  std::set<int> reported_idle;
  if (f.processes.empty()) return reported_idle;
  std::map<int, std::vector<const ProcessFacts*>> by_gpu;
  std::set<int> known;
  for (const auto& g : f.gpus)
    if (!g.unresponsive) known.insert(g.index);
  std::set<std::pair<int, long long>> seen;  // (gpu, host pid): a process once per GPU
  for (const auto& p : f.processes) {
    known.insert(p.gpu);
    auto& v = by_gpu[p.gpu];
    if (seen.emplace(p.gpu, static_cast<long long>(p.host_pid)).second) v.push_back(&p);
  }
  // GPUs that run nothing: no process and (if we know its load) not busy either.
  std::vector<int> empty;
  for (int i : known) {
    if (by_gpu.count(i)) continue;
    const GpuFacts* g = find_gpu(f, i);
    if (g && is_busy(f, *g, c.t)) continue;
    empty.push_back(i);
  }
  if (empty.empty()) return reported_idle;
  for (const auto& [gpu, procs] : by_gpu) {
    if (procs.size() < 2) continue;
    const GpuFacts* g = find_gpu(f, gpu);
    if (g && g->mig_enabled.value_or(false)) continue;  // MIG instances are separate GPUs
    std::vector<std::string> subjects{gpu_subject(gpu)};
    std::vector<std::string> idle_names;
    for (int i : empty) {
      subjects.push_back(gpu_subject(i));
      idle_names.push_back(gpu_subject(i));
      reported_idle.insert(i);
    }
    std::vector<std::string> pids;
    for (const auto* p : procs) {
      subjects.push_back(fmt::format("pid {}", p->host_pid));
      pids.push_back(process_name(*p));
    }
    // The message names at most kNamed processes; the subjects keep every pid.
    constexpr std::size_t kNamed = 10;
    const std::size_t named = pids.size() > kNamed + 1 ? kNamed : pids.size();
    std::string list;
    for (std::size_t i = 0; i < named; ++i)
      list += (i == 0 ? "" : i + 1 == pids.size() ? " and " : ", ") + pids[i];
    if (named < pids.size()) list += fmt::format(" and {} more", pids.size() - named);
    measure(e.add("gpu-shared-by-processes", Severity::kWarning, subjects,
                  fmt::format("{} processes share {}: pids {}; {} run{} no process", procs.size(),
                              gpu_subject(gpu), list, join(idle_names, ", "),
                              idle_names.size() == 1 ? "s" : "")),
            "processes", "count", static_cast<double>(procs.size()), 1, Bound::kAtMost);
  }
  return reported_idle;
}

void check_idle_peer(const Context& c, const std::set<int>& already, Emitter& e) {
  const Facts& f = c.facts;
  std::vector<const GpuFacts*> busy;
  std::vector<const GpuFacts*> idle;
  for (const auto& g : f.gpus) {
    if (g.unresponsive) continue;
    if (is_busy(f, g, c.t))
      busy.push_back(&g);
    else if (is_idle(f, g, c.t) && !already.count(g.index))
      idle.push_back(&g);
  }
  if (busy.empty()) return;
  std::vector<std::string> busy_parts;
  for (const auto* g : busy) {
    const std::string load = load_phrase(*g);
    busy_parts.push_back(gpu_subject(g->index) + (load.empty() ? "" : " (" + load + ")"));
  }
  if (idle.empty()) return;
  // One finding for all idle GPUs: on an 8-GPU box with one rank alive, eight findings would
  // bury the point.
  std::vector<std::string> subjects;
  std::vector<std::string> idle_parts;
  for (const auto* g : idle) {
    subjects.push_back(gpu_subject(g->index));
    const std::string load = load_phrase(*g);
    idle_parts.push_back(gpu_subject(g->index) + (load.empty() ? "" : " (" + load + ")"));
  }
  for (const auto* b : busy) subjects.push_back(gpu_subject(b->index));
  const bool one_job = one_job_expected(f);
  Finding& fd =
      e.add("gpu-idle-while-peer-busy", one_job ? Severity::kWarning : Severity::kInfo, subjects,
            fmt::format("{} idle with no process on {} while {} {} busy{}", join(idle_parts, ", "),
                        idle.size() == 1 ? "it" : "them", join(busy_parts, ", "),
                        busy.size() == 1 ? "is" : "are", one_job ? "" : kSharedNodeCaveat));
  if (!one_job) fd.action = Action::kNone;  // likely allocation on a shared node
}

void check_memory(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  std::vector<const GpuFacts*> full;
  std::vector<const GpuFacts*> empty;
  std::size_t known = 0;
  std::size_t near_full = 0;
  for (const auto& g : f.gpus) {
    const auto frac = memory_fraction(g);
    if (!frac) continue;
    ++known;
    if (*frac >= c.t.memory_imbalance_full_fraction) full.push_back(&g);
    if (*frac <= c.t.memory_imbalance_empty_fraction) empty.push_back(&g);
    if (*frac >= c.t.memory_full_fraction) ++near_full;
  }
  if (!full.empty() && !empty.empty()) {
    std::vector<std::string> subjects;
    std::vector<std::string> full_parts;
    std::vector<std::string> empty_parts;
    for (const auto* g : full) {
      subjects.push_back(gpu_subject(g->index));
      full_parts.push_back(memory_phrase(*g));
    }
    for (const auto* g : empty) {
      subjects.push_back(gpu_subject(g->index));
      empty_parts.push_back(memory_phrase(*g));
    }
    const bool one_job = one_job_expected(f);
    double fullest = 0;
    for (const auto* g : full) fullest = std::max(fullest, *memory_fraction(*g));
    // One process on the one full GPU and none on the empty ones (the process list known): a
    // program that uses one GPU, not a job spread unevenly over several (ranks piled on one GPU
    // are several processes there).
    std::size_t on_full = 0, on_empty = 0;
    for (const auto& p : f.processes) {
      on_full +=
          std::any_of(full.begin(), full.end(), [&](const auto* g) { return g->index == p.gpu; });
      on_empty +=
          std::any_of(empty.begin(), empty.end(), [&](const auto* g) { return g->index == p.gpu; });
    }
    const bool one_gpu_program = full.size() == 1 && on_full == 1 && on_empty == 0;
    const bool alarm = one_job && !one_gpu_program;
    Finding& fd = e.add(
        "memory-imbalance", alarm ? Severity::kWarning : Severity::kInfo, subjects,
        fmt::format("{} used while {}{}", join(full_parts, ", "), join(empty_parts, ", "),
                    one_gpu_program ? " — by one process, and none on the empty GPU: a program "
                                      "that uses one GPU, not a job spread unevenly"
                    : one_job       ? ""
                                    : kSharedNodeCaveat));
    measure(fd, "memory_used_fraction", "fraction", fullest, c.t.memory_imbalance_full_fraction,
            Bound::kAtMost);
    if (!alarm) fd.action = Action::kNone;  // a one-GPU program, or a shared node
  }
  // Every GPU full: data parallelism does not pool memory.
  if (f.gpus.size() >= 2 && known == f.gpus.size() && near_full == known) {
    std::vector<std::string> subjects;
    std::vector<std::string> parts;
    for (const auto& g : f.gpus) {
      subjects.push_back(gpu_subject(g.index));
      parts.push_back(memory_phrase(g));
    }
    double least = 1;
    for (const auto& g : f.gpus) least = std::min(least, *memory_fraction(g));
    measure(e.add("memory-near-full", Severity::kInfo, subjects,
                  fmt::format("every GPU at or above {} % memory used: {}",
                              format_number(c.t.memory_full_fraction * 100, 0), join(parts, ", "))),
            "memory_used_fraction", "fraction", least, c.t.memory_full_fraction, Bound::kAtMost);
  }
}

struct NumaView {
  std::map<int, std::vector<int>> nodes;
  std::map<int, int> cpu_node;
};

// A process (or a binding tied to one) on GPU `gpu` whose CPUs or memory are all elsewhere.
bool check_process_binding(const Context& c, const NumaView& v, int pid,
                           const std::optional<std::string>& name, int gpu,
                           const std::vector<int>& cpus, const std::vector<int>& mems,
                           const std::string& source, Emitter& e) {
  const GpuFacts* g = find_gpu(c.facts, gpu);
  if (!g) return false;
  const auto node = gpu_node(*g, v.nodes);
  if (!node) return false;
  std::set<int> cpu_nodes;
  bool unknown_cpu = false;
  for (int cpu : cpus) {
    auto it = v.cpu_node.find(cpu);
    if (it == v.cpu_node.end())
      unknown_cpu = true;
    else
      cpu_nodes.insert(it->second);
  }
  const bool cpus_remote = !cpus.empty() && !unknown_cpu && !cpu_nodes.count(*node);
  const bool mems_remote =
      !mems.empty() && std::find(mems.begin(), mems.end(), *node) == mems.end();
  if (!cpus_remote && !mems_remote) return false;
  const std::set<int> mem_set(mems.begin(), mems.end());
  std::string ev = fmt::format("pid {}{} on {} (NUMA node {}) ", pid,
                               name ? " (" + *name + ")" : std::string(), gpu_subject(gpu), *node);
  if (cpus_remote) {
    ev += fmt::format("is bound to CPUs {} ({})", format_cpu_list(cpus), nodes_phrase(cpu_nodes));
    if (mems_remote)
      ev += " and memory " + nodes_phrase(mem_set);
    else if (!mems.empty())
      ev += ", memory " + nodes_phrase(mem_set);
  } else {
    ev += "may allocate only from memory " + nodes_phrase(mem_set);
    if (!cpus.empty()) ev += fmt::format(" (CPUs {} allowed)", format_cpu_list(cpus));
  }
  if (!source.empty()) ev += " [" + source + "]";
  e.add("numa-misbinding", Severity::kWarning, {fmt::format("pid {}", pid)}, std::move(ev));
  return true;
}

void check_numa(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  NumaView v;
  v.nodes = node_cpus(f);
  v.cpu_node = cpu_to_node(v.nodes);

  std::set<std::pair<int, int>> done;  // (pid, gpu)
  for (const auto& p : f.processes) {
    if (p.cpus_allowed_ids.empty() && p.mems_allowed_ids.empty()) continue;
    if (check_process_binding(c, v, p.host_pid, p.name, p.gpu, p.cpus_allowed_ids,
                              p.mems_allowed_ids, "", e))
      done.insert({p.host_pid, p.gpu});
  }

  // GPU → node, for bindings without a process.
  std::map<int, int> gpu_nodes;
  for (const auto& g : f.gpus)
    if (auto n = gpu_node(g, v.nodes)) gpu_nodes[g.index] = *n;

  for (const auto& b : f.numa_bindings) {
    if (b.cpus.empty() && b.mems.empty()) continue;
    if (b.pid) {
      for (const auto& p : f.processes) {
        const bool same = p.host_pid == *b.pid || (p.local_pid && *p.local_pid == *b.pid) ||
                          std::find(p.ns_pids.begin(), p.ns_pids.end(), *b.pid) != p.ns_pids.end();
        if (!same || done.count({p.host_pid, p.gpu})) continue;
        if (check_process_binding(c, v, p.host_pid, p.name, p.gpu, b.cpus, b.mems, b.source, e))
          done.insert({p.host_pid, p.gpu});
      }
      continue;
    }
    // The launching shell's binding: every rank started from it inherits it.
    std::set<int> all_nodes;
    for (const auto& [gpu, node] : gpu_nodes) all_nodes.insert(node);
    if (all_nodes.size() < 2) continue;
    std::set<int> cpu_nodes;
    bool unknown_cpu = false;
    for (int cpu : b.cpus) {
      auto it = v.cpu_node.find(cpu);
      if (it == v.cpu_node.end())
        unknown_cpu = true;
      else
        cpu_nodes.insert(it->second);
    }
    if (!b.cpus.empty() && unknown_cpu && cpu_nodes.empty() && b.mems.empty()) continue;
    auto covers = [&](int node) {
      const bool cpu_ok = b.cpus.empty() || unknown_cpu || cpu_nodes.count(node);
      const bool mem_ok =
          b.mems.empty() || std::find(b.mems.begin(), b.mems.end(), node) != b.mems.end();
      return cpu_ok && mem_ok;
    };
    std::set<int> covered;
    for (int n : all_nodes)
      if (covers(n)) covered.insert(n);
    if (covered.size() == all_nodes.size()) continue;
    std::vector<std::string> subjects;
    std::vector<std::string> victims;
    for (const auto& [gpu, node] : gpu_nodes)
      if (!covered.count(node)) {
        subjects.push_back(gpu_subject(gpu));
        victims.push_back(fmt::format("{} (node {})", gpu_subject(gpu), node));
      }
    std::vector<std::string> what;
    if (!b.cpus.empty()) what.push_back("CPUs " + format_cpu_list(b.cpus));
    if (!b.mems.empty()) what.push_back("membind " + format_cpu_list(b.mems));
    const std::string cover =
        covered.empty() ? fmt::format("covers none of the GPUs' nodes ({})",
                                      format_cpu_list({all_nodes.begin(), all_nodes.end()}))
                        : "covers " + nodes_phrase(covered) + " only";
    e.add("numa-misbinding", Severity::kInfo, subjects,
          fmt::format("{}: the shell's binding ({}) {}: a rank launched from it for {} pays "
                      "remote memory access",
                      b.source.empty() ? std::string("binding") : b.source, join(what, ", "), cover,
                      join(victims, ", ")));
  }
}

}  // namespace

void check_host(const Context& c, Emitter& e) {
  if (!c.facts.host.pressure) return;
  const HostPressure& hp = *c.facts.host.pressure;
  check_cpu(c, hp, e);
  check_io(c, hp, e);
  check_network(c, hp, e);
}

void check_mapping(const Context& c, Emitter& e) {
  const std::set<int> idle_reported = check_shared(c, e);
  check_idle_peer(c, idle_reported, e);
  check_memory(c, e);
  check_numa(c, e);
}

}  // namespace gpuvet::rules
