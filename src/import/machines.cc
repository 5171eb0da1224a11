#include "import/machines.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>

namespace gpuvet::import {
namespace {

// "Node01.cluster.local" and "node01" are one host: case and domain are dropped.
std::string host_key(const std::string& h) {
  std::string k = h.substr(0, h.find('.'));
  for (auto& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return k;
}

// What a machine (or an input) says sits where.
struct Places {
  std::optional<std::string> host;
  std::optional<std::string> driver;
  std::map<std::string, GpuIdentity> by_bus;   // bus id → the board there
  std::map<int, GpuIdentity> by_index;         // index → the board, from inputs without bus ids
  std::map<std::string, GpuListing> listings;  // kind → the first listing of that kind
};

bool differs(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  return a && b && *a != *b;
}

std::string board(const GpuIdentity& g) {
  if (g.uuid) return *g.uuid;
  return "serial " + g.serial.value_or("?");
}

std::string gpus_at(const GpuListing& l) {
  std::string s = fmt::format("{} GPU{}", l.count, l.count == 1 ? "" : "s");
  if (l.buses.empty()) return s;
  s += " (";
  std::size_t n = 0;
  for (const auto& b : l.buses) {
    if (n == 4) {
      s += fmt::format(", … {} more", l.buses.size() - 4);
      break;
    }
    s += (n++ ? ", " : "") + b;
  }
  return s + ")";
}

bool holds(const std::set<std::string>& big, const std::set<std::string>& small) {
  return std::includes(big.begin(), big.end(), small.begin(), small.end());
}

// Two whole listings of one kind that cannot be one machine: "<first>|<second>" (what each
// lists), or empty.
std::string listing_conflict(const GpuListing& a, const GpuListing& b) {
  if (a.count == b.count) {
    if (a.complete() && b.complete() && !a.buses.empty() && !b.buses.empty() && a.buses != b.buses)
      return gpus_at(a) + "|" + gpus_at(b);
    return {};
  }
  // One GPU short in a later snapshot (it fell off the bus) is that machine's fault, not a
  // second machine: the smaller listing's bus ids all sit in the larger one.
  if (a.complete() && b.complete() && !a.buses.empty() && !b.buses.empty() &&
      (holds(a.buses, b.buses) || holds(b.buses, a.buses)))
    return {};
  return gpus_at(a) + "|" + gpus_at(b);
}

// The first contradiction between a machine and an input, or empty.
std::string contradiction(const Places& m, const MachineIdentity& in, const std::string& origin,
                          const std::string& machine_first, bool named) {
  if (in.host && m.host && host_key(*in.host) != host_key(*m.host))
    return fmt::format("host {} in {} but {} in {}", *m.host, machine_first, *in.host, origin);
  for (const auto& g : in.gpus) {
    const GpuIdentity* there = nullptr;
    std::string where;
    if (g.bus) {
      if (auto it = m.by_bus.find(*g.bus); it != m.by_bus.end()) there = &it->second;
      where = "bus id " + *g.bus;
    } else if (auto it = m.by_index.find(g.index); it != m.by_index.end()) {
      there = &it->second;
      where = "GPU" + std::to_string(g.index);
    }
    if (there && (differs(there->uuid, g.uuid) || differs(there->serial, g.serial)))
      return fmt::format("{} holds {} in {} but {} in {}", where, board(*there), machine_first,
                         board(g), origin);
  }
  if (!named && in.listing)
    if (auto it = m.listings.find(in.listing->kind); it != m.listings.end())
      if (auto why = listing_conflict(it->second, *in.listing); !why.empty())
        return fmt::format("{} lists {} in {} but {} in {}", in.listing->kind,
                           why.substr(0, why.find('|')), machine_first,
                           why.substr(why.find('|') + 1), origin);
  // Only between inputs that both list GPUs: a lone /proc/driver/nvidia/version may be the
  // kernel module beside an older user-space library on the same machine (a version mismatch).
  if (!named && !in.gpus.empty() && (!m.by_bus.empty() || !m.by_index.empty()) &&
      differs(m.driver, in.driver))
    return fmt::format("driver {} in {} but {} in {}, and no GPU or host name in common", *m.driver,
                       machine_first, *in.driver, origin);
  return {};
}

bool shares_a_name(const Places& m, const MachineGroup& group, const MachineIdentity& in) {
  if (in.host && m.host && host_key(*in.host) == host_key(*m.host)) return true;
  for (const auto& g : in.gpus)
    for (const auto& h : group.gpus)
      if ((g.uuid && g.uuid == h.uuid) || (g.serial && g.serial == h.serial)) return true;
  return false;
}

void add(Places& m, MachineGroup& group, const MachineIdentity& in, const std::string& origin) {
  if (!m.host && in.host) m.host = group.host = in.host;
  if (!m.driver && in.driver && (!in.gpus.empty() || in.listing))
    m.driver = group.driver = in.driver;
  if (in.listing) {
    m.listings.try_emplace(in.listing->kind, *in.listing);
    if (!group.listing) group.listing = in.listing;
  }
  for (const auto& g : in.gpus) {
    if (g.bus)
      m.by_bus.try_emplace(*g.bus, g);
    else
      m.by_index.try_emplace(g.index, g);
    const bool known = std::any_of(group.gpus.begin(), group.gpus.end(), [&](const auto& h) {
      return (g.uuid && g.uuid == h.uuid) || (g.serial && g.serial == h.serial);
    });
    if (!known) group.gpus.push_back(g);
  }
  group.inputs.push_back(origin);
}

std::string relative(const std::string& origin, const std::string& top) {
  std::string_view o = origin;
  std::string_view t = top;
  while (t.size() > 1 && t.back() == '/') t.remove_suffix(1);
  if (o.size() > t.size() + 1 && o.substr(0, t.size()) == t && o[t.size()] == '/')
    return std::string(o.substr(t.size() + 1));
  return origin;
}

std::string list(const std::vector<std::string>& inputs, const std::string& top) {
  constexpr std::size_t kShown = 6;
  std::string s;
  for (std::size_t i = 0; i < inputs.size() && i < kShown; ++i)
    s += (i ? ", " : "") + relative(inputs[i], top);
  if (inputs.size() > kShown) s += fmt::format(" and {} more", inputs.size() - kShown);
  return s;
}

std::string describe(const MachineGroup& m) {
  std::string gpus;
  if (!m.gpus.empty()) {
    std::map<std::string, int> names;
    for (const auto& g : m.gpus) ++names[g.name.value_or("unnamed GPU")];
    for (const auto& [name, n] : names)
      gpus += fmt::format("{}{}× {}", gpus.empty() ? "" : ", ", n, name);
    gpus += ", first " + board(m.gpus.front());
  }
  if (gpus.empty() && m.listing)
    gpus = fmt::format("{} GPU{} by {}", m.listing->count, m.listing->count == 1 ? "" : "s",
                       m.listing->kind);
  if (m.driver) gpus += (gpus.empty() ? "driver " : ", driver ") + *m.driver;
  if (m.host) return gpus.empty() ? "host " + *m.host : "host " + *m.host + "; " + gpus;
  return gpus.empty() ? "no name" : gpus;
}

}  // namespace

MachineIdentity identity_of(const Facts& f) {
  MachineIdentity id;
  id.host = f.host.hostname;
  id.driver = f.host.driver_version;
  for (const auto& g : f.gpus) {
    if (!g.uuid && !g.serial) continue;
    id.gpus.push_back({g.index, g.pci_bus_id, g.uuid, g.serial, g.name});
  }
  return id;
}

MachineSplit group_by_machine(const std::vector<std::pair<std::string, MachineIdentity>>& inputs) {
  MachineSplit split;
  std::vector<Places> places;
  for (const auto& [origin, id] : inputs) {
    if (id.names_nothing()) {
      split.unnamed.push_back(origin);
      continue;
    }
    std::optional<std::size_t> fits, named;
    std::string first_reason;
    for (std::size_t i = 0; i < split.machines.size() && !named; ++i) {
      const bool shares = shares_a_name(places[i], split.machines[i], id);
      auto why = contradiction(places[i], id, origin, split.machines[i].inputs.front(), shares);
      if (!why.empty()) {
        if (first_reason.empty()) first_reason = why;
        continue;
      }
      if (!fits) fits = i;
      if (shares) named = i;
    }
    const auto at = named ? named : fits;
    if (!at) {
      if (!first_reason.empty()) split.reasons.push_back(first_reason);
      split.machines.emplace_back();
      places.emplace_back();
    }
    const std::size_t i = at.value_or(split.machines.size() - 1);
    add(places[i], split.machines[i], id, origin);
  }
  return split;
}

std::string several_machines_message(const MachineSplit& split, const std::string& top) {
  constexpr std::size_t kShownMachines = 12, kShownReasons = 3;
  std::string s = fmt::format(
      "{}: these inputs describe {} different machines, and gpuvet judges one machine at a time "
      "(merging them would make one box of all their GPUs):",
      top, split.machines.size());
  for (std::size_t i = 0; i < split.machines.size() && i < kShownMachines; ++i)
    s += fmt::format("\n  machine {} ({}): {}", i + 1, describe(split.machines[i]),
                     list(split.machines[i].inputs, top));
  if (split.machines.size() > kShownMachines)
    s += fmt::format("\n  … and {} more machines", split.machines.size() - kShownMachines);
  if (!split.unnamed.empty())
    s += fmt::format("\n  naming no machine (no host name, GPU UUID or serial): {}",
                     list(split.unnamed, top));
  s += "\nwhy they are not one machine:";
  for (std::size_t i = 0; i < split.reasons.size() && i < kShownReasons; ++i)
    s += "\n  " + split.reasons[i];
  if (split.reasons.size() > kShownReasons)
    s += fmt::format("\n  … and {} more", split.reasons.size() - kShownReasons);
  s += "\nrun one machine at a time: give --from one machine's file, or a directory holding "
       "only that machine's files (one directory per machine)";
  return s;
}

}  // namespace gpuvet::import
