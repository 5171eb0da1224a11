// src/fleet/repairs.cc — repairs with memory: the same fault on the same GPU coming back after
// each reset or reboot, from the fleet history, and the fleet's failures by cause class.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/util.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/fleet.h"
#include "hw/xid_table.h"

namespace gpuvet {

std::string fault_cause_class(std::string_view fault) {
  if (fault.starts_with("xid-")) {
    const auto code = parse_int(fault.substr(4));
    const hw::XidInfo* x = code ? hw::find_xid(static_cast<int>(*code)) : nullptr;
    return std::string("xid: ") + (x ? hw::xid_origin_name(x->origin) : "unknown");
  }
  if (const CatalogEntry* e = find_catalog_entry(fault)) return e->category;
  return "other";
}

void fleet_repairs(const std::vector<FleetDocument>& history, const FleetOptions& options,
                   FleetReport& report) {
  // Each host's judged reports, oldest first (undated ones first, in the order given).
  std::map<std::string, std::vector<const FleetDocument*>> by_host;
  for (const auto& d : history)
    if (d.judged) by_host[d.host].push_back(&d);
  using Key = std::tuple<std::string, std::string, std::string>;  // host, fault, subject
  std::map<Key, FleetRepair> repairs;
  for (auto& [host, docs] : by_host) {
    std::stable_sort(docs.begin(), docs.end(), [](const auto* x, const auto* y) {
      return x->collected_unix.value_or(std::numeric_limits<std::int64_t>::min()) <
             y->collected_unix.value_or(std::numeric_limits<std::int64_t>::min());
    });
    // (fault, subject) → the last report that showed it; those in the previous report.
    std::map<std::pair<std::string, std::string>, const FleetDocument*> last_seen;
    std::set<std::pair<std::string, std::string>> present;
    for (const FleetDocument* d : docs) {
      std::set<std::pair<std::string, std::string>> now;
      for (const auto& f : d->faults) {
        now.insert({f.key, f.subject});
        repairs[{host, f.key, f.subject}].acknowledged = f.acknowledged;  // the latest report's
      }
      for (const auto& [fault, subject] : now) {
        const auto previous = last_seen.find({fault, subject});
        // A new episode: absent from the previous judged report, or the node rebooted since
        // the report that last showed it.
        const bool rebooted = previous != last_seen.end() && previous->second->boot_unix &&
                              d->boot_unix && *previous->second->boot_unix != *d->boot_unix;
        if (!present.contains({fault, subject}) || rebooted) {
          FleetRepair& r = repairs[{host, fault, subject}];
          r.host = host;
          r.fault = fault;
          r.subject = subject;
          ++r.episodes;
          if (d->collected_unix) r.starts.push_back(*d->collected_unix);
        }
        last_seen[{fault, subject}] = d;
      }
      present = std::move(now);
    }
    for (const auto& [fault, subject] : present) repairs[{host, fault, subject}].current = true;
  }

  for (auto& [key, r] : repairs) {
    r.cause_class = fault_cause_class(r.fault);
    r.escalate = r.episodes > options.repairs_before_rma;
    if (r.escalate && r.current && !r.acknowledged)
      report.exit_code = std::max(report.exit_code, 2);
    report.repairs.push_back(std::move(r));
  }
  std::stable_sort(
      report.repairs.begin(), report.repairs.end(), [](const FleetRepair& a, const FleetRepair& b) {
        return std::tuple(!a.escalate, !a.current) < std::tuple(!b.escalate, !b.current);
      });

  // The taxonomy: per class, episodes, nodes, and the gaps between a node's episodes.
  struct Class {
    int episodes = 0;
    std::set<std::string> nodes;
    std::map<std::string, std::vector<std::int64_t>> starts;  // per node
  };
  std::map<std::string, Class> classes;
  for (const auto& r : report.repairs) {
    Class& c = classes[r.cause_class];
    c.episodes += r.episodes;
    c.nodes.insert(r.host);
    auto& s = c.starts[r.host];
    s.insert(s.end(), r.starts.begin(), r.starts.end());
  }
  for (auto& [name, c] : classes) {
    FleetFailureClass out;
    out.cause_class = name;
    out.episodes = c.episodes;
    out.nodes = static_cast<int>(c.nodes.size());
    std::vector<double> gaps;
    for (auto& [host, s] : c.starts) {
      std::sort(s.begin(), s.end());
      for (std::size_t i = 1; i < s.size(); ++i)
        if (s[i] > s[i - 1]) gaps.push_back(static_cast<double>(s[i] - s[i - 1]));
    }
    if (!gaps.empty()) out.median_between_s = median_of(std::move(gaps));
    report.taxonomy.push_back(std::move(out));
  }
  std::stable_sort(report.taxonomy.begin(), report.taxonomy.end(),
                   [](const auto& a, const auto& b) { return a.episodes > b.episodes; });
}

}  // namespace gpuvet
