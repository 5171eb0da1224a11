// src/fleet/analysis.cc — the fleet report: each node's latest report against its group of
// like nodes and against its own last passing gate, robust statistics over what was measured,
// and the drain circuit breaker.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuvet/fleet.h"

namespace gpuvet {

Result<FleetGrouping> parse_fleet_grouping(std::string_view name) {
  if (name == "model") return FleetGrouping::kModel;
  if (name == "baseline") return FleetGrouping::kBaseline;
  return Status::invalid_input(
      fmt::format("unknown grouping '{}' (model: same GPU model and count; baseline: same "
                  "gate baseline)",
                  name));
}

const char* fleet_grouping_name(FleetGrouping g) {
  return g == FleetGrouping::kBaseline ? "baseline" : "model";
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(v.begin(), mid);
  return (lower + upper) / 2;
}

double mad_of(const std::vector<double>& v, double median) {
  std::vector<double> d;
  d.reserve(v.size());
  for (double x : v) d.push_back(std::fabs(x - median));
  return median_of(std::move(d));
}

namespace {

constexpr const char* kParts[] = {"topology", "p2p", "links"};
constexpr int kMaxDetails = 4;  // detail lines per kind before "… and N more"

std::string day(std::optional<std::int64_t> t) {
  if (!t) return "an unknown date";
  const std::time_t tt = static_cast<std::time_t>(*t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

template <class T>
std::string show(const std::optional<T>& v) {
  if (!v) return "?";
  if constexpr (std::is_same_v<T, std::string>)
    return *v;
  else
    return fmt::format("{}", *v);
}

const PairPrint* find_pair(const NodePrint& p, int a, int b) {
  for (const auto& q : p.pairs)
    if (q.a == a && q.b == b) return &q;
  return nullptr;
}

const GpuPrint* find_gpu(const NodePrint& p, int index) {
  for (const auto& g : p.gpus)
    if (g.index == index) return &g;
  return nullptr;
}

// The lines that say how `node` differs from `ref` in one part. `theirs` names the reference
// in the text: "group" ("GPU0-GPU1 path SYS (group PIX)") or "since last pass".
std::vector<std::string> differences(const NodePrint& node, const NodePrint& ref,
                                     std::string_view part, bool since) {
  std::vector<std::string> lines;
  const auto add = [&](std::string subject_what, const std::string& mine,
                       const std::string& theirs) {
    lines.push_back(since ? fmt::format("{} {} (was {} at last pass)", subject_what, mine, theirs)
                          : fmt::format("{} {} (group {})", subject_what, mine, theirs));
  };
  if (part == "topology" || part == "p2p") {
    std::set<std::pair<int, int>> keys;
    for (const auto& q : node.pairs) keys.insert({q.a, q.b});
    for (const auto& q : ref.pairs) keys.insert({q.a, q.b});
    for (const auto& [a, b] : keys) {
      const auto* mine = find_pair(node, a, b);
      const auto* theirs = find_pair(ref, a, b);
      if (part == "topology") {
        const std::string m = mine ? mine->path : "absent";
        const std::string t = theirs ? theirs->path : "absent";
        if (m != t) add(pair_label(a, b) + " path", m, t);
      } else {
        const std::string m = mine ? show(mine->p2p) : "absent";
        const std::string t = theirs ? show(theirs->p2p) : "absent";
        if (m != t) add(pair_label(a, b) + " P2P", m, t);
      }
    }
  } else {
    if (node.gpu_count != ref.gpu_count)
      add("GPU count", std::to_string(node.gpu_count), std::to_string(ref.gpu_count));
    std::set<int> indices;
    for (const auto& g : node.gpus) indices.insert(g.index);
    for (const auto& g : ref.gpus) indices.insert(g.index);
    for (int i : indices) {
      const auto* mine = find_gpu(node, i);
      const auto* theirs = find_gpu(ref, i);
      if (!mine || !theirs) continue;  // the GPU count says it
      const auto width = [](const std::optional<int>& w) {
        return w ? fmt::format("x{}", *w) : "?";
      };
      const auto gen = [](const std::optional<int>& g) {
        return g ? fmt::format("Gen{}", *g) : "?";
      };
      if (mine->pcie_width != theirs->pcie_width)
        add(gpu_label(i) + " PCIe width", width(mine->pcie_width), width(theirs->pcie_width));
      if (mine->pcie_width_max != theirs->pcie_width_max)
        add(gpu_label(i) + " PCIe max width", width(mine->pcie_width_max),
            width(theirs->pcie_width_max));
      if (mine->pcie_gen_max != theirs->pcie_gen_max)
        add(gpu_label(i) + " PCIe max generation", gen(mine->pcie_gen_max),
            gen(theirs->pcie_gen_max));
      if (mine->numa_node != theirs->numa_node)
        add(gpu_label(i) + " NUMA node", show(mine->numa_node), show(theirs->numa_node));
      if (mine->nvlinks_up != theirs->nvlinks_up)
        add(gpu_label(i) + " NVLinks up", show(mine->nvlinks_up), show(theirs->nvlinks_up));
    }
  }
  if (lines.empty())  // the hashes differ but nothing printable does (a value order?)
    lines.push_back(since ? fmt::format("{} differs from the last pass", part)
                          : fmt::format("{} differs from the group", part));
  if (static_cast<int>(lines.size()) > kMaxDetails) {
    const auto more = lines.size() - kMaxDetails;
    lines.resize(kMaxDetails);
    lines.push_back(fmt::format("… and {} more {} differences", more, part));
  }
  return lines;
}

struct Node {
  std::string host;
  const FleetDocument* latest = nullptr;            // the latest document of any kind
  const FleetDocument* print = nullptr;             // the latest with a fingerprint
  const FleetDocument* gate = nullptr;              // the latest gate document
  const FleetDocument* last_pass = nullptr;         // the latest passing gate before `print`
  std::map<std::string, std::string> hashes;        // of print, per part
  std::map<std::string, BandwidthValue> bandwidth;  // latest value per measured key
  std::string group;
};

std::string value_key(const BandwidthValue& v) {
  return v.size_bytes ? fmt::format("{} {} @{}", v.key, v.subject, *v.size_bytes)
                      : fmt::format("{} {}", v.key, v.subject);
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} B", bytes);
}

std::string value_label(const BandwidthValue& v) {
  return v.size_bytes ? fmt::format("{} {} at {}", v.key, v.subject, size_text(*v.size_bytes))
                      : fmt::format("{} {}", v.key, v.subject);
}

}  // namespace

FleetReport fleet_report(const std::vector<FleetDocument>& history, const FleetOptions& options) {
  FleetReport report;
  report.options = options;
  report.documents = static_cast<int>(history.size());

  // Oldest first; documents without a time count as the oldest, in the order given.
  std::vector<const FleetDocument*> docs;
  docs.reserve(history.size());
  for (const auto& d : history) docs.push_back(&d);
  std::stable_sort(docs.begin(), docs.end(), [](const auto* x, const auto* y) {
    return x->collected_unix.value_or(std::numeric_limits<std::int64_t>::min()) <
           y->collected_unix.value_or(std::numeric_limits<std::int64_t>::min());
  });

  std::map<std::string, Node> nodes;
  for (const auto* d : docs) {
    Node& n = nodes[d->host];
    n.host = d->host;
    n.latest = d;
    if (d->collected_unix)
      report.newest_unix =
          std::max(report.newest_unix.value_or(*d->collected_unix), *d->collected_unix);
    if (d->has_print) {
      // The previous print's passing gate is the last pass before this one.
      if (n.print && n.print->verdict && *n.print->verdict == "pass") n.last_pass = n.print;
      n.print = d;
    }
    if (d->schema == "gpuvet.gate/1") n.gate = d;
    for (const auto& v : d->print.bandwidth) n.bandwidth[value_key(v)] = v;
  }
  report.nodes = static_cast<int>(nodes.size());

  // Groups.
  std::map<std::string, std::vector<Node*>> members;
  for (auto& [host, n] : nodes) {
    if (options.group_by == FleetGrouping::kBaseline) {
      n.group = n.gate && n.gate->baseline ? *n.gate->baseline : "no baseline";
    } else if (n.print) {
      n.group = fmt::format("{} x {}", n.print->print.gpu_count,
                            n.print->print.gpu_model.value_or("unknown GPU"));
    } else {
      n.group = "no fingerprint (bench reports only)";
    }
    if (n.print)
      for (const char* part : kParts) n.hashes[part] = print_hash(n.print->print, part);
    members[n.group].push_back(&n);
  }

  std::map<std::string, FleetOutlier> outliers;  // by host
  const auto outlier = [&](Node& n) -> FleetOutlier& {
    auto [it, fresh] = outliers.try_emplace(n.host);
    if (fresh) {
      it->second.host = n.host;
      it->second.group = n.group;
      it->second.report_unix = n.latest->collected_unix;
    }
    return it->second;
  };
  const auto add_kind = [](FleetOutlier& o, const std::string& kind) {
    if (std::find(o.kinds.begin(), o.kinds.end(), kind) == o.kinds.end()) o.kinds.push_back(kind);
  };

  for (auto& [name, list] : members) {
    FleetGroup g;
    g.name = name;
    g.nodes = static_cast<int>(list.size());
    if (options.group_by == FleetGrouping::kModel && list.front()->print) {
      g.gpu_model = list.front()->print->print.gpu_model;
      g.gpu_count = list.front()->print->print.gpu_count;
    }
    for (const Node* n : list) {
      if (!n->gate || !n->gate->verdict) continue;
      const auto& v = *n->gate->verdict;
      (v == "pass" ? g.gate_pass : v == "fail" ? g.gate_fail : g.gate_unknown)++;
    }

    // Categorical: the majority fingerprint of each part, and who differs from it.
    std::map<std::string, std::set<std::string>> from_group;  // host → parts
    for (const char* part : kParts) {
      FleetMajority m;
      m.part = part;
      std::map<std::string, int> count;
      for (const Node* n : list)
        if (n->print) {
          ++m.nodes_with_print;
          ++count[n->hashes.at(part)];
        }
      const auto best =
          std::max_element(count.begin(), count.end(),
                           [](const auto& x, const auto& y) { return x.second < y.second; });
      if (best != count.end() && 2 * best->second > m.nodes_with_print) {
        m.hash = best->first;
        m.nodes_with_it = best->second;
      } else if (best != count.end()) {
        m.nodes_with_it = best->second;
        g.notes.push_back(fmt::format(
            "no {} fingerprint is shared by more than half of the group ({} of {} at most): "
            "nodes are not compared on it",
            part, best->second, m.nodes_with_print));
      }
      if (m.hash) {
        const Node* ref = nullptr;
        for (const Node* n : list)
          if (n->print && n->hashes.at(part) == *m.hash) {
            ref = n;
            break;
          }
        for (Node* n : list) {
          if (!n->print || n->hashes.at(part) == *m.hash) continue;
          auto& o = outlier(*n);
          o.categorical = true;
          add_kind(o, part);
          from_group[n->host].insert(part);
          for (auto& line : differences(n->print->print, ref->print->print, part, false))
            o.reasons.push_back(std::move(line));
        }
      }
      g.majority.push_back(std::move(m));
    }

    // Changed since the node's own last passing gate.
    for (Node* n : list) {
      if (!n->print || !n->last_pass) continue;
      std::vector<std::string> changed;
      for (const char* part : kParts)
        if (print_hash(n->last_pass->print, part) != n->hashes.at(part)) changed.push_back(part);
      if (changed.empty()) continue;
      auto& o = outlier(*n);
      o.categorical = true;
      o.changed_since_last_pass = true;
      o.last_pass_unix = n->last_pass->collected_unix;
      const NodePrint& now = n->print->print;
      const NodePrint& then = n->last_pass->print;
      const bool other_gpus = now.gpu_count != then.gpu_count || now.gpu_model != then.gpu_model;
      if (other_gpus)  // other hardware: pair by pair differences would only be noise
        o.reasons.push_back(fmt::format("{} x {} (was {} x {} at last pass)", now.gpu_count,
                                        show(now.gpu_model), then.gpu_count, show(then.gpu_model)));
      for (const auto& part : changed) {
        add_kind(o, part);
        if (other_gpus || from_group[n->host].count(part)) continue;  // said already
        for (auto& line : differences(now, then, part, true)) o.reasons.push_back(std::move(line));
      }
      o.reasons.push_back(fmt::format("changed since its last passing gate ({}): {}",
                                      day(n->last_pass->collected_unix), fmt::join(changed, ", ")));
    }

    // Numeric: robust statistics per measured value over the group's latest values.
    std::map<std::string, std::vector<std::pair<Node*, const BandwidthValue*>>> values;
    for (Node* n : list)
      for (const auto& [key, v] : n->bandwidth) values[key].push_back({n, &v});
    int too_few = 0;
    for (const auto& [key, vs] : values) {
      if (static_cast<int>(vs.size()) < options.min_numeric_group) {
        ++too_few;
        continue;
      }
      std::vector<double> xs;
      xs.reserve(vs.size());
      for (const auto& [n, v] : vs) xs.push_back(v->gbps);
      const double med = median_of(xs);
      const double mad = mad_of(xs, med);
      for (const auto& [n, v] : vs) {
        const double drop = med > 0 ? 1.0 - v->gbps / med : 0.0;
        if (drop < options.min_drop) continue;
        const double z =
            mad > 0 ? 0.6745 * (v->gbps - med) / mad : -std::numeric_limits<double>::infinity();
        if (z >= -options.robust_z) continue;
        auto& o = outlier(*n);
        add_kind(o, "bandwidth");
        o.worst_z = std::min(o.worst_z, z);
        o.reasons.push_back(fmt::format(
            "{} {:.1f} GB/s, group median {:.1f} (-{:.0f} %, robust z {})", value_label(*v),
            v->gbps, med, 100 * drop, std::isfinite(z) ? fmt::format("{:.1f}", z) : "-inf, MAD 0"));
      }
    }
    if (too_few > 0)
      g.notes.push_back(fmt::format(
          "{} measured value(s) are reported by fewer than {} nodes of the group: no numeric "
          "outliers on them",
          too_few, options.min_numeric_group));

    // The circuit breaker: the worst first, at most max_drain_share of the group.
    std::vector<FleetOutlier*> in_group;
    for (Node* n : list)
      if (auto it = outliers.find(n->host); it != outliers.end()) in_group.push_back(&it->second);
    std::stable_sort(in_group.begin(), in_group.end(), [](const auto* x, const auto* y) {
      if (x->categorical != y->categorical) return x->categorical;
      return x->worst_z < y->worst_z;
    });
    g.outliers = static_cast<int>(in_group.size());
    g.drain_limit =
        std::max(1, static_cast<int>(std::floor(options.max_drain_share * g.nodes + 1e-9)));
    for (int i = 0; i < static_cast<int>(in_group.size()); ++i)
      in_group[static_cast<std::size_t>(i)]->drain = i < g.drain_limit;
    if (g.outliers > g.drain_limit) {
      g.circuit_breaker = true;
      g.notes.push_back(fmt::format(
          "circuit breaker: {} of {} nodes are outliers, more than {:.0f} % of the group; "
          "draining only the {} worst. So many at once is more often a change to the whole "
          "group (a driver, a BIOS, the baseline) than {} broken nodes: check it first",
          g.outliers, g.nodes, 100 * options.max_drain_share, g.drain_limit, g.outliers));
    }
    report.groups.push_back(std::move(g));
  }

  for (auto& [host, o] : outliers) {
    // Kinds in a fixed order.
    std::vector<std::string> ordered;
    for (const char* k : {"topology", "p2p", "links", "bandwidth"})
      if (std::find(o.kinds.begin(), o.kinds.end(), k) != o.kinds.end()) ordered.push_back(k);
    o.kinds = std::move(ordered);
    report.outliers.push_back(std::move(o));
  }
  std::stable_sort(report.outliers.begin(), report.outliers.end(),
                   [](const auto& x, const auto& y) {
                     if (x.categorical != y.categorical) return x.categorical;
                     if (x.group != y.group) return x.group < y.group;
                     return x.host < y.host;
                   });

  const std::optional<std::int64_t> reference =
      report.newest_unix && options.now_unix ? std::min(*report.newest_unix, *options.now_unix)
                                             : report.newest_unix;
  for (const auto& [host, n] : nodes)
    if (reference && n.latest->collected_unix &&
        *reference - *n.latest->collected_unix > options.stale_after_s)
      report.stale.push_back({host, n.latest->collected_unix});

  bool categorical = false;
  for (const auto& o : report.outliers) categorical = categorical || o.categorical;
  report.exit_code = categorical ? 2 : report.outliers.empty() ? 0 : 1;
  fleet_repairs(history, options, report);
  return report;
}

}  // namespace gpuvet
