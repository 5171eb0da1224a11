// rules/rules_measurements.cc — what benchmark figures and scaling runs say: host↔device and
// GPU↔GPU bandwidth against what the links carry in theory (hw/expectations.h), copies and
// collectives whose data came back wrong, multi-GPU scaling efficiency and tail latency, and — when
// scaling is lost to communication on hardware with nothing wrong — the pointer to step 5
// (tune the framework).
//
// The engine runs this group last, on the Emitter the other groups filled: tune-framework
// looks at what they found.

#include <algorithm>
#include <cstdint>
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
#include "rules/rule.h"

namespace gpuvet::rules {

// What a healthy link should carry (hw/expectations.h).
using namespace gpuvet::hw;
namespace {

// Transfers smaller than this are latency-bound (bandwidthTest's range/shmoo rows start at
// 1 kB): they say nothing about what a link carries. bandwidthTest's quick mode uses 32 MB,
// nvbandwidth 512 MiB.
constexpr std::uint64_t kMinBulkBytes = 4'000'000;

std::string fixed(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }
// "63.0", "11.2", "450": GB/s as evidence shows them.
std::string gbps(double v) { return fixed(v, v >= 100 ? 0 : 1); }
std::string percent(double fraction) { return fixed(fraction * 100, 0) + " %"; }

std::string bytes_text(std::uint64_t b) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return format_number(v, 1) + " " + kUnits[u];
}

bool too_small(const Measurement& m) { return m.size_bytes && *m.size_bytes < kMinBulkBytes; }

std::string source_of(const Measurement& m) { return m.tool + " " + m.test; }

// ================================================================ host↔device

enum class HostDir { kToDevice = 0, kToHost = 1 };

const char* dir_text(HostDir d) { return d == HostDir::kToDevice ? "host→device" : "device→host"; }

// Unidirectional copy-engine figures only. SM copies are left out: on some systems the SM
// kernel itself is the limit (nvbandwidth issue 24: H100 host_to_device_memcpy_sm 35 GB/s
// while device_to_host_memcpy_sm reads 52.8 on the same Gen5 link); bidirectional and pageable
// figures measure something else than the link.
std::optional<HostDir> host_direction(const Measurement& m) {
  if (m.note && (*m.note == "sum" || starts_with(*m.note, "bidirectional"))) return std::nullopt;
  std::string_view to_device, to_host;
  if (m.tool == "nvbandwidth") {
    to_device = "host_to_device_memcpy_ce";
    to_host = "device_to_host_memcpy_ce";
  } else if (m.tool == "bandwidthTest") {
    to_device = "host_to_device_pinned";
    to_host = "device_to_host_pinned";
  } else if (m.tool == "gpuvet") {
    to_device = "host_to_device_ce";
    to_host = "device_to_host_ce";
  } else {
    return std::nullopt;
  }
  if (m.test == to_device) return HostDir::kToDevice;
  if (m.test == to_host) return HostDir::kToHost;
  return std::nullopt;
}

// The GPU end of a host↔device copy; a single-GPU box owns the figures that do not say.
std::optional<int> host_copy_gpu(const Facts& f, const Measurement& m, HostDir d) {
  const auto& first = d == HostDir::kToDevice ? m.dst_gpu : m.src_gpu;
  const auto& other = d == HostDir::kToDevice ? m.src_gpu : m.dst_gpu;
  if (first) return first;
  if (other) return other;
  if (f.gpus.size() == 1) return f.gpus.front().index;
  return std::nullopt;
}

struct HostFigure {
  double gbps = 0;
  std::string source;
};

void check_host_device(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  std::map<int, std::map<HostDir, HostFigure>> best;  // gpu → direction → best figure
  std::vector<int> only_small;
  bool unattributed = false;
  for (const auto& m : f.measurements) {
    const auto dir = host_direction(m);
    if (!dir || !m.bandwidth_gbps || m.wrong_data) continue;  // wrong data: data-corruption
    const auto gpu = host_copy_gpu(f, m, *dir);
    if (!gpu) {
      unattributed = true;
      continue;
    }
    if (too_small(m)) {
      only_small.push_back(*gpu);
      continue;
    }
    auto& slot = best[*gpu][*dir];
    if (*m.bandwidth_gbps > slot.gbps) slot = {*m.bandwidth_gbps, source_of(m)};
  }
  if (unattributed)
    e.note(
        "h2d-bandwidth-low: some host↔device figures do not say which GPU they ran on; they "
        "were not judged");
  for (int g : only_small)
    if (!best.count(g))
      e.note(fmt::format(
          "h2d-bandwidth-low: {}'s host↔device figures are all transfers under {}; too small "
          "to judge its link",
          gpu_subject(g), bytes_text(kMinBulkBytes)));

  std::vector<std::string> unknown;
  for (const auto& [index, dirs] : best) {
    const GpuFacts* g = find_gpu(f, index);
    const auto link = g ? expected_host_device(*g) : std::nullopt;
    if (!link) {
      unknown.push_back(gpu_subject(index));
      continue;
    }
    std::vector<std::pair<HostDir, const HostFigure*>> low;
    for (const auto& [dir, fig] : dirs)
      if (fig.gbps < c.t.h2d_fraction * link->theoretical_gbps) low.emplace_back(dir, &fig);
    if (low.empty()) continue;

    const std::string link_text = fmt::format("Gen{} x{}", link->gen, link->width);
    std::string ev = gpu_subject(index) + " ";
    if (low.size() == 1) {
      ev += fmt::format("{} {} GB/s; a {} link carries {} GB/s per direction ({} of theoretical)",
                        dir_text(low[0].first), gbps(low[0].second->gbps), link_text,
                        gbps(link->theoretical_gbps),
                        percent(low[0].second->gbps / link->theoretical_gbps));
    } else {
      for (std::size_t i = 0; i < low.size(); ++i)
        ev += fmt::format("{}{} {} GB/s ({} of theoretical)", i ? ", " : "", dir_text(low[i].first),
                          gbps(low[i].second->gbps),
                          percent(low[i].second->gbps / link->theoretical_gbps));
      ev += fmt::format("; a {} link carries {} GB/s per direction", link_text,
                        gbps(link->theoretical_gbps));
    }
    bool link_full = false;
    if (g->pcie.gen_current && g->pcie.width_current) {
      const std::string now =
          fmt::format("Gen{} x{}", *g->pcie.gen_current, *g->pcie.width_current);
      link_full = *g->pcie.gen_current == link->gen && *g->pcie.width_current == link->width;
      if (link_full)
        ev += "; the link reads " + now +
              " now, so the loss is past it (host buffer on the far NUMA node, IOMMU, a shared "
              "switch uplink)";
      else
        ev += "; the link reads " + now + " now";
    }
    ev += "; best figure from " + low[0].second->source;
    const HostFigure* worst = low[0].second;
    for (const auto& [dir, fig] : low)
      if (fig->gbps < worst->gbps) worst = fig;
    Finding& fd =
        e.add("h2d-bandwidth-low", Severity::kWarning, {gpu_subject(index)}, std::move(ev));
    measure(fd, "bandwidth", "GB/s", worst->gbps, c.t.h2d_fraction * link->theoretical_gbps,
            Bound::kAtLeast);
    // The link itself is fine: the loss is placement or the IOMMU, a setting.
    if (link_full) fd.action = Action::kFixConfig;
  }
  if (!unknown.empty()) {
    std::string list;
    for (const auto& s : unknown) list += (list.empty() ? "" : ", ") + s;
    e.note("h2d-bandwidth-low: the PCIe maximum generation/width of " + list +
           " is unknown, so the expected host↔device bandwidth is unknown and its figures were "
           "not judged");
  }
}

// ================================================================ GPU↔GPU

// How many times the per-direction expectation a figure may reach: 2 for the cuda-samples
// bidirectional matrix and nvbandwidth's bidirectional "Total" matrix (they add both
// directions), 1 otherwise (nvbandwidth's Read1/Read2, Write1/Write2 and gpuvet's
// bidirectional cells are one direction each). Empty: not a peer-bandwidth figure (p2p
// *disabled* matrices measure a copy staged through the host on purpose).
std::optional<double> peer_factor(const Measurement& m) {
  if (m.note && *m.note == "sum") return std::nullopt;
  if (m.tool == "nvbandwidth" && starts_with(m.test, "device_to_device_"))
    return m.note && *m.note == "bidirectional total" ? 2.0 : 1.0;
  if (m.tool == "gpuvet" && starts_with(m.test, "device_to_device")) return 1.0;
  if (m.tool == "simpleP2P" && m.test == "cudaMemcpyPeer") return 1.0;
  if (m.tool == "p2pBandwidthLatencyTest") {
    if (starts_with(m.test, "unidirectional p2p enabled")) return 1.0;
    if (starts_with(m.test, "bidirectional p2p enabled")) return 2.0;
  }
  return std::nullopt;
}

const GpuPair* find_pair(const Facts& f, int a, int b) {
  if (a > b) std::swap(a, b);
  for (const auto& p : f.pairs)
    if (p.a == a && p.b == b) return &p;
  return nullptr;
}

std::string path_label(const GpuPair& p) {
  if (p.path == PathType::kNVLink && p.nvlinks) return "NV" + std::to_string(*p.nvlinks);
  return path_type_name(p.path);
}

// "P2P read CNS, write CNS" for the capabilities that are not OK; empty when none is known bad.
std::string p2p_problems(const GpuPair& p) {
  std::string s;
  auto add = [&](const char* what, const std::optional<P2PStatus>& st) {
    if (!st || *st == P2PStatus::kOk) return;
    s += fmt::format("{}{} {}", s.empty() ? "P2P " : ", ", what, p2p_status_code(*st));
  };
  add("read", p.p2p_read);
  add("write", p.p2p_write);
  if (p.path == PathType::kNVLink)
    add("nvlink", p.p2p_nvlink);
  else
    add("pcie", p.p2p_pcie);
  return s;
}

struct PeerFigure {
  const Measurement* m = nullptr;
  double factor = 1;
};

void check_peer(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  std::map<std::pair<int, int>, std::vector<PeerFigure>> by_pair;
  for (const auto& m : f.measurements) {
    const auto factor = peer_factor(m);
    if (!factor || !m.bandwidth_gbps || !m.src_gpu || !m.dst_gpu || *m.src_gpu == *m.dst_gpu ||
        too_small(m) || m.wrong_data)  // wrong data: data-corruption, not a bandwidth
      continue;
    const int a = std::min(*m.src_gpu, *m.dst_gpu);
    const int b = std::max(*m.src_gpu, *m.dst_gpu);
    by_pair[{a, b}].push_back({&m, *factor});
  }

  std::vector<std::string> unknown;
  for (const auto& [key, figures] : by_pair) {
    const GpuPair* pair = find_pair(f, key.first, key.second);
    const auto expect = pair ? expected_peer(f, *pair) : std::nullopt;
    if (!expect || expect->theoretical_gbps <= 0) {
      unknown.push_back(pair_subject(key.first, key.second));
      continue;
    }
    // The best figure for the pair: a path that reaches its bandwidth in any test is healthy.
    const PeerFigure* top = nullptr;
    double top_ratio = -1;
    for (const auto& fig : figures) {
      const double ratio = *fig.m->bandwidth_gbps / (fig.factor * expect->theoretical_gbps);
      if (ratio > top_ratio) {
        top_ratio = ratio;
        top = &fig;
      }
    }
    // Host-bridge and cross-socket paths are held to a share of the threshold (their
    // allowance, hw/expectations.h): the root complex forwards peer traffic at its own rate.
    if (!top || top_ratio >= c.t.p2p_fraction * expect->allowance) continue;

    const Measurement& m = *top->m;
    std::string ev;
    if (top->factor > 1)
      ev = fmt::format("{}↔{} {} GB/s both directions together", gpu_subject(*m.src_gpu),
                       gpu_subject(*m.dst_gpu), gbps(*m.bandwidth_gbps));
    else
      ev = fmt::format("{}→{} {} GB/s", gpu_subject(*m.src_gpu), gpu_subject(*m.dst_gpu),
                       gbps(*m.bandwidth_gbps));
    if (figures.size() == 1)
      ev += " (" + source_of(m) + ")";
    else
      ev += fmt::format(" ({}, the best of {} peer figures)", source_of(m), figures.size());
    ev += fmt::format("; path {} carries {} GB/s per direction in theory ({})", path_label(*pair),
                      gbps(expect->theoretical_gbps), expect->basis);
    if (top->factor > 1)
      ev += fmt::format(", {} GB/s both ways", gbps(expect->theoretical_gbps * top->factor));
    ev += fmt::format(": {} of theoretical", percent(top_ratio));
    if (expect->allowance < 1)
      ev += fmt::format(" (a {} path is judged under {} of theoretical, {} × {}: {})",
                        path_label(*pair), percent(c.t.p2p_fraction * expect->allowance),
                        format_number(expect->allowance, 2), percent(c.t.p2p_fraction),
                        expect->allowance_reason);
    if (const std::string bad = p2p_problems(*pair); !bad.empty())
      ev += "; " + bad + ": the traffic is likely routed via host memory";
    measure(e.add("p2p-bandwidth-low", Severity::kWarning, {pair_subject(key.first, key.second)},
                  std::move(ev)),
            "bandwidth", "GB/s", *m.bandwidth_gbps,
            c.t.p2p_fraction * expect->allowance * top->factor * expect->theoretical_gbps,
            Bound::kAtLeast);
  }
  if (!unknown.empty()) {
    std::string list;
    for (const auto& s : unknown) list += (list.empty() ? "" : ", ") + s;
    e.note("p2p-bandwidth-low: no expected bandwidth for " + list +
           " (path type, NVLink count or PCIe links unknown); their peer figures were not judged");
  }
}

// The same host↔device copy (tool, direction, GPU, transfer size) measured more than once,
// at rates more than 2× apart: the link is the same, so the host side differs between the
// runs — the far NUMA node's memory or CPUs, or a busy host. Needs no expected figure.
void check_host_device_spread(const Context& c, Emitter& e) {
  struct Spread {
    double lo = 0, hi = 0;
    int n = 0;
    std::set<std::string> origins;
  };
  std::map<std::tuple<std::string, int, int, std::uint64_t>, Spread> by;
  for (const auto& m : c.facts.measurements) {
    const auto dir = host_direction(m);
    if (!dir || !m.bandwidth_gbps || *m.bandwidth_gbps <= 0 || m.wrong_data || too_small(m))
      continue;
    const int gpu = host_copy_gpu(c.facts, m, *dir).value_or(-1);
    Spread& sp = by[{m.tool, static_cast<int>(*dir), gpu, m.size_bytes.value_or(0)}];
    sp.origins.insert(m.origin.value_or(""));
    if (sp.n++ == 0) {
      sp.lo = sp.hi = *m.bandwidth_gbps;
    } else {
      sp.lo = std::min(sp.lo, *m.bandwidth_gbps);
      sp.hi = std::max(sp.hi, *m.bandwidth_gbps);
    }
  }
  for (const auto& [key, sp] : by) {
    // Two runs are two inputs: one file may hold runs of several machines (a comparison).
    if (sp.n < 2 || sp.hi < 2 * sp.lo || sp.origins.size() < 2) continue;
    const auto& [tool, dir, gpu, size] = key;
    e.add("h2d-bandwidth-low", Severity::kWarning,
          {gpu >= 0 ? gpu_subject(gpu) : std::string("host")},
          fmt::format("the same {} copy{} ({}{}) ran at {} GB/s in one run and {} GB/s in "
                      "another: the link is the same, so the host side differs — memory or "
                      "CPUs on the far NUMA node (bind the process to the GPU's node: numactl "
                      "--cpunodebind/--membind), or a busy host",
                      dir_text(static_cast<HostDir>(dir)),
                      gpu >= 0 ? " to " + gpu_subject(gpu) : std::string(), tool,
                      size ? ", " + bytes_text(size) : std::string(), gbps(sp.lo), gbps(sp.hi)));
  }
}

// p2pBandwidthLatencyTest measures every pair twice: with peer access on and off (through
// host memory). Peer access slower than the copy through host memory needs no expected figure:
// the direct path is broken, most often by PCIe ACS or the IOMMU redirecting peer traffic
// through the root complex.
void check_p2p_slower_than_host(const Context& c, Emitter& e) {
  struct Both {
    std::optional<double> on, off;
  };
  std::map<std::tuple<std::string, int, int>, Both> by;
  for (const auto& m : c.facts.measurements) {
    if (m.tool != "p2pBandwidthLatencyTest" || !m.bandwidth_gbps || !m.src_gpu || !m.dst_gpu ||
        *m.src_gpu == *m.dst_gpu)
      continue;
    const bool on = m.test.find(" p2p enabled") != std::string::npos;
    const bool off = m.test.find(" p2p disabled") != std::string::npos;
    if (on == off) continue;
    std::string kind = m.test.substr(0, m.test.find(" p2p "));
    Both& b = by[{kind, *m.src_gpu, *m.dst_gpu}];
    (on ? b.on : b.off) = *m.bandwidth_gbps;
  }
  std::map<std::pair<int, int>, std::string> slow;  // pair → the worst case, said
  std::map<std::pair<int, int>, double> worst;
  for (const auto& [key, b] : by) {
    if (!b.on || !b.off || *b.off <= 0 || *b.on >= 0.5 * *b.off) continue;
    const auto& [kind, src, dst] = key;
    const std::pair<int, int> pair{std::min(src, dst), std::max(src, dst)};
    const double ratio = *b.on / *b.off;
    if (worst.count(pair) && worst[pair] <= ratio) continue;
    worst[pair] = ratio;
    slow[pair] = fmt::format("{}→{} {}: {} GB/s with peer access, {} GB/s through host memory",
                             gpu_subject(src), gpu_subject(dst), kind, gbps(*b.on), gbps(*b.off));
  }
  if (slow.empty()) return;
  std::vector<std::string> subjects, said;
  for (const auto& [pair, text] : slow) {
    subjects.push_back(pair_subject(pair.first, pair.second));
    if (said.size() < 4) said.push_back(text);
  }
  e.add("p2p-bandwidth-low", Severity::kWarning, subjects,
        fmt::format("peer access is slower than copying through host memory on {} pair{} ({}{}): "
                    "the direct path is broken; PCIe ACS or the IOMMU redirecting peer traffic "
                    "through the root complex is the usual cause (check ACSCtl in lspci -vvv and "
                    "the kernel's iommu= setting)",
                    slow.size(), slow.size() == 1 ? "" : "s", join(said, "; "),
                    slow.size() > said.size() ? "; …" : ""));
}

// ================================================================ data corruption

// "#wrong 3" → 3.
std::optional<std::uint64_t> wrong_count(const std::string& text) {
  const std::size_t p = text.find("#wrong");
  if (p == std::string::npos) return std::nullopt;
  std::size_t i = p + 6;
  while (i < text.size() && (text[i] == ' ' || text[i] == '=' || text[i] == ':')) ++i;
  std::size_t j = i;
  while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
  return parse_uint(std::string_view(text).substr(i, j - i));
}

// "GPU0-GPU1", "GPU3" or nothing: where a figure with wrong data ran.
std::optional<std::string> subject_of(const Measurement& m) {
  if (m.src_gpu && m.dst_gpu && *m.src_gpu != *m.dst_gpu)
    return pair_subject(std::min(*m.src_gpu, *m.dst_gpu), std::max(*m.src_gpu, *m.dst_gpu));
  if (m.src_gpu) return gpu_subject(*m.src_gpu);
  if (m.dst_gpu) return gpu_subject(*m.dst_gpu);
  return std::nullopt;
}

// One finding per benchmark test whose data check failed: nccl-tests' #wrong, a gpuvet bench
// copy or collective with wrong data, nvbandwidth's pattern check. A link that moves wrong
// data is broken, however fast it is: its figures were left out of the bandwidth rules.
void check_data_corruption(const Context& c, Emitter& e) {
  struct Wrong {
    std::string tool, test;
    std::uint64_t count = 0;  // summed "#wrong N" (collectives)
    std::size_t figures = 0;
    std::string first;  // the first check's text, for the others
    std::vector<std::uint64_t> sizes;
    std::vector<std::string> subjects;
  };
  std::vector<Wrong> by_test;  // in order of appearance
  for (const auto& m : c.facts.measurements) {
    if (!m.wrong_data) continue;
    auto it = std::find_if(by_test.begin(), by_test.end(),
                           [&](const Wrong& w) { return w.tool == m.tool && w.test == m.test; });
    if (it == by_test.end()) it = by_test.insert(by_test.end(), Wrong{m.tool, m.test});
    Wrong& w = *it;
    ++w.figures;
    if (const auto n = wrong_count(*m.wrong_data))
      w.count += *n;
    else if (w.first.empty())
      w.first = *m.wrong_data;
    if (m.size_bytes && std::find(w.sizes.begin(), w.sizes.end(), *m.size_bytes) == w.sizes.end())
      w.sizes.push_back(*m.size_bytes);
    if (auto s = subject_of(m);
        s && std::find(w.subjects.begin(), w.subjects.end(), *s) == w.subjects.end())
      w.subjects.push_back(*s);
  }
  for (auto& w : by_test) {
    const std::string test = w.test.empty() ? "a benchmark" : w.tool + " " + w.test;
    std::string ev;
    if (w.count > 0) {
      ev = fmt::format("{} reported {} wrong result{}", test, w.count, w.count == 1 ? "" : "s");
      if (!w.sizes.empty()) {
        std::sort(w.sizes.begin(), w.sizes.end());
        ev += " at ";
        const std::size_t shown = std::min<std::size_t>(w.sizes.size(), 4);
        for (std::size_t i = 0; i < shown; ++i) ev += (i ? ", " : "") + bytes_text(w.sizes[i]);
        if (w.sizes.size() > shown) ev += fmt::format(" and {} more sizes", w.sizes.size() - shown);
      }
      if (!w.first.empty()) ev += "; also: " + w.first;
    } else {
      ev = fmt::format("{}: the data it moved failed its check ({})", test, w.first);
      if (w.figures > 1) ev += fmt::format(", {} figures", w.figures);
    }
    if (!w.subjects.empty()) {
      ev += " on ";
      const std::size_t shown = std::min<std::size_t>(w.subjects.size(), 4);
      for (std::size_t i = 0; i < shown; ++i) ev += (i ? ", " : "") + w.subjects[i];
      if (w.subjects.size() > shown) ev += fmt::format(" and {} more", w.subjects.size() - shown);
    }
    ev +=
        "; the destination did not hold what was sent, so none of its figures count as "
        "bandwidth";
    Finding& fd = e.add("data-corruption", Severity::kCritical, w.subjects, std::move(ev));
    if (w.count > 0)
      measure(fd, "wrong_results", "count", static_cast<double>(w.count), 0, Bound::kAtMost);
  }
}

// ================================================================ scaling and tail latency

struct ScaleGroup {
  std::string workload;
  std::string preset;
  std::map<int, const ScaleRun*> fastest;   // gpus → run with the best throughput
  std::map<int, const ScaleRun*> best_p99;  // gpus → run with the lowest p99
  std::string name() const { return workload + "/" + preset; }
};

std::vector<ScaleGroup> scale_groups(const Facts& f) {
  std::vector<ScaleGroup> groups;
  for (const auto& r : f.scale_runs) {
    if (r.gpus < 1) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const ScaleGroup& g) {
      return g.workload == r.workload && g.preset == r.preset;
    });
    if (it == groups.end()) {
      ScaleGroup g;
      g.workload = r.workload;
      g.preset = r.preset;
      it = groups.insert(groups.end(), std::move(g));
    }
    if (r.throughput && *r.throughput > 0) {
      auto& slot = it->fastest[r.gpus];
      if (!slot || *r.throughput > *slot->throughput) slot = &r;
    }
    if (r.p99_ms && *r.p99_ms > 0) {
      auto& slot = it->best_p99[r.gpus];
      if (!slot || *r.p99_ms < *slot->p99_ms) slot = &r;
    }
  }
  return groups;
}

// Topology and hardware findings that must be fixed before any framework tuning (step 3 and the
// hardware side of step 4): "no bucket size makes up for missing lanes".
bool blocks_tuning(const Finding& f) {
  static constexpr FindingId kIds[] = {
      "pcie-link-degraded", "p2p-unavailable", "nvlink-down",        "gpu-pair-crosses-numa",
      "acs-blocks-p2p",     "fabric-degraded", "nccl-degraded-path", "h2d-bandwidth-low",
      "p2p-bandwidth-low",  "nccl-error",      "data-corruption"};
  if (f.severity < Severity::kWarning) return false;
  return std::any_of(std::begin(kIds), std::end(kIds),
                     [&](FindingId id) { return f.id == id.str(); });
}

struct ScalingLoss {
  std::string group;
  double efficiency = 0;
  std::optional<double> comm_share;
};

void check_scaling(const Context& c, Emitter& e, const std::vector<ScaleGroup>& groups,
                   std::vector<ScalingLoss>& comms_bound) {
  for (const auto& g : groups) {
    const auto one = g.fastest.find(1);
    const bool has_multi = std::any_of(g.fastest.begin(), g.fastest.end(),
                                       [](const auto& kv) { return kv.first > 1; });
    if (!has_multi) continue;
    if (one == g.fastest.end()) {
      e.note("scaling-inefficient: " + g.name() +
             " has no 1-GPU run with a throughput; its efficiency was not computed");
      continue;
    }
    const double base = *one->second->throughput;
    // At a fixed offered load (--rate) throughput follows the load: compare latency instead
    // (ideal N-way tensor parallelism answers N times sooner).
    const bool paced = one->second->offered_rate_hz.has_value();
    const double base_p50 = one->second->p50_ms.value_or(0);
    if (paced && !(base_p50 > 0)) continue;
    struct Point {
      int gpus;
      double efficiency;
      const ScaleRun* run;
    };
    std::vector<Point> low;
    for (const auto& [n, run] : g.fastest) {
      if (n < 2) continue;
      if (paced != run->offered_rate_hz.has_value()) continue;  // not like for like
      double eff = 0;
      if (paced) {
        if (!run->p50_ms || !(*run->p50_ms > 0)) continue;
        eff = base_p50 / (n * *run->p50_ms);
      } else {
        eff = *run->throughput / (n * base);
      }
      if (eff < c.t.scaling_efficiency) low.push_back({n, eff, run});
    }
    if (low.empty()) continue;
    const Point worst = *std::min_element(
        low.begin(), low.end(),
        [](const Point& a, const Point& b) { return a.efficiency < b.efficiency; });

    const char* unit = g.workload == "infer" ? "request" : "step";
    std::string ev =
        paced ? fmt::format(
                    "{} at {}/s offered: {} GPUs answer in {} ms (p50), one GPU in {} ms "
                    "(efficiency {}: ideal is {}× sooner)",
                    g.name(), fixed(*one->second->offered_rate_hz, 1), worst.gpus,
                    fixed(*worst.run->p50_ms, 2), fixed(base_p50, 2), fixed(worst.efficiency, 2),
                    worst.gpus)
              : fmt::format("{}: {} GPUs give {}× one GPU (efficiency {})", g.name(), worst.gpus,
                            fixed(*worst.run->throughput / base, 2), fixed(worst.efficiency, 2));
    Finding fd;
    fd.severity = Severity::kWarning;
    fd.subjects = {g.name()};
    const auto& share = worst.run->comm_share;
    if (share && *share >= c.t.comm_share_high) {
      fd.bottleneck = Bottleneck::kComms;
      ev += fmt::format("; {} of each {} is communication", percent(*share), unit);
    } else if (share) {
      fd.bottleneck = Bottleneck::kCompute;
      ev += fmt::format(
          "; only {} of each {} is communication, so the per-GPU work itself got slower "
          "(clocks, memory)",
          percent(*share), unit);
    } else {
      fd.bottleneck = Bottleneck::kUnknown;
      ev += "; the communication share was not measured";
    }
    for (const auto& p : low)
      if (p.gpus != worst.gpus)
        ev += fmt::format("; {} GPUs: efficiency {}", p.gpus, fixed(p.efficiency, 2));
    fd.evidence = std::move(ev);

    if (fd.bottleneck == Bottleneck::kComms) {
      std::vector<std::string> blockers;
      for (const auto& prior : e.findings())
        if (blocks_tuning(prior)) {
          std::string b = prior.id;
          if (!prior.subjects.empty()) b += " " + prior.subjects.front();
          if (std::find(blockers.begin(), blockers.end(), b) == blockers.end())
            blockers.push_back(std::move(b));
        }
      if (!blockers.empty()) {
        std::string list;
        for (std::size_t i = 0; i < blockers.size() && i < 4; ++i)
          list += (i ? ", " : "") + blockers[i];
        if (blockers.size() > 4) list += ", …";
        fd.decision_note = "Fix the topology/hardware findings first (" + list +
                           "), then re-run the scaling test: no bucket size or batch setting "
                           "makes up for a degraded path.";
        fd.action = Action::kFixConfig;  // the path first, the application after
      }
      comms_bound.push_back({g.name(), worst.efficiency, share});
    }
    measure(fd, "scaling_efficiency", "fraction", worst.efficiency, c.t.scaling_efficiency,
            Bound::kAtLeast);
    e.add("scaling-inefficient", std::move(fd));
  }
}

void check_tail_latency(const Context& c, Emitter& e, const std::vector<ScaleGroup>& groups) {
  for (const auto& g : groups) {
    if (g.workload != "infer") continue;
    const auto one_it = g.best_p99.find(1);
    if (one_it == g.best_p99.end()) continue;
    const ScaleRun& one = *one_it->second;
    struct Point {
      int gpus;
      double p99_ratio;
      std::optional<double> spread_ratio;  // (p99/p50)(N) / (p99/p50)(1)
      const ScaleRun* run;
      double score() const { return std::max(p99_ratio, spread_ratio.value_or(0)); }
    };
    std::vector<Point> hits;
    for (const auto& [n, run] : g.best_p99) {
      if (n < 2) continue;
      Point p{n, *run->p99_ms / *one.p99_ms, std::nullopt, run};
      if (run->p50_ms && one.p50_ms && *run->p50_ms > 0 && *one.p50_ms > 0)
        p.spread_ratio = (*run->p99_ms / *run->p50_ms) / (*one.p99_ms / *one.p50_ms);
      if (p.score() >= c.t.tail_p99_ratio) hits.push_back(p);
    }
    if (hits.empty()) continue;
    const Point worst =
        *std::max_element(hits.begin(), hits.end(),
                          [](const Point& a, const Point& b) { return a.score() < b.score(); });
    const ScaleRun& r = *worst.run;
    std::string ev = g.name() + ": ";
    if (r.throughput && one.throughput && *one.throughput > 0 && *r.throughput > *one.throughput)
      ev += fmt::format("throughput {}× on {} GPUs but p99 {} ms vs {} ms on one ({}×)",
                        fixed(*r.throughput / *one.throughput, 1), worst.gpus, fixed(*r.p99_ms, 1),
                        fixed(*one.p99_ms, 1), fixed(worst.p99_ratio, 2));
    else
      ev += fmt::format("p99 {} ms on {} GPUs vs {} ms on one ({}×)", fixed(*r.p99_ms, 1),
                        worst.gpus, fixed(*one.p99_ms, 1), fixed(worst.p99_ratio, 2));
    if (worst.spread_ratio && *worst.spread_ratio >= c.t.tail_p99_ratio)
      ev += fmt::format("; p99/p50 {} on {} GPUs vs {} on one (the tail widened {}×)",
                        fixed(*r.p99_ms / *r.p50_ms, 1), worst.gpus,
                        fixed(*one.p99_ms / *one.p50_ms, 1), fixed(*worst.spread_ratio, 2));
    Finding fd;
    fd.severity = Severity::kWarning;
    fd.subjects = {g.name()};
    fd.evidence = std::move(ev);
    fd.bottleneck = Bottleneck::kComms;
    measure(fd, worst.p99_ratio >= worst.spread_ratio.value_or(0) ? "p99_ratio" : "p99_p50_ratio",
            "ratio", worst.score(), c.t.tail_p99_ratio, Bound::kAtMost);
    e.add("tail-latency-amplified", std::move(fd));
  }
}

void check_tune_framework(Emitter& e, const std::vector<ScalingLoss>& comms_bound) {
  if (comms_bound.empty()) return;
  if (std::any_of(e.findings().begin(), e.findings().end(), blocks_tuning)) return;
  Finding fd;
  fd.severity = Severity::kInfo;
  fd.bottleneck = Bottleneck::kComms;
  std::string list;
  for (const auto& l : comms_bound) {
    fd.subjects.push_back(l.group);
    list += fmt::format("{}{} (efficiency {}{})", list.empty() ? "" : ", ", l.group,
                        fixed(l.efficiency, 2),
                        l.comm_share ? ", " + percent(*l.comm_share) + " communication" : "");
  }
  fd.evidence = "follows scaling-inefficient for " + list +
                "; no topology or hardware finding (link, P2P, NVLink, NUMA, ACS, fabric, NCCL "
                "path, measured bandwidth) explains it";
  fd.decision_note =
      "Step 5, only now: raise the per-GPU batch (or use gradient accumulation) so compute "
      "outweighs the all-reduce, tune DDP bucket sizes, overlap communication with compute, use "
      "mixed precision to halve the bytes exchanged; then re-run the scaling test.";
  e.add("tune-framework", std::move(fd));
}

}  // namespace

void check_measurements(const Context& c, Emitter& e) {
  check_host_device(c, e);
  check_host_device_spread(c, e);
  check_peer(c, e);
  check_p2p_slower_than_host(c, e);
  check_data_corruption(c, e);
  const auto groups = scale_groups(c.facts);
  std::vector<ScalingLoss> comms_bound;
  check_scaling(c, e, groups, comms_bound);
  check_tail_latency(c, e, groups);
  check_tune_framework(e, comms_bound);
}

}  // namespace gpuvet::rules
