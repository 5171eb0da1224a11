#include "import/gpuvet_json.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/util.h"

namespace gpuvet::import {
namespace {

// Ordered: sources[].timings_ms is "slowest first" and must keep the order it was written in.
using json = nlohmann::ordered_json;

constexpr std::string_view kSchemaPrefix = "gpuvet.report/";
constexpr std::int64_t kSchemaVersion = 1;
constexpr std::size_t kSniffWindow = 4096;
// A garbled report could otherwise produce one note per value.
constexpr std::size_t kMaxTypeNotes = 100;
// As many time-series samples as the importers keep (import::SampleSeries::kMaxSamples).
constexpr std::size_t kMaxSamples = 1000000;

// Where the nesting first exceeds `max_depth`, outside strings; linear, no allocation.
std::optional<std::size_t> too_deep_at(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

std::string at(const std::string& path, std::string_view key) {
  std::string s = path;
  if (!s.empty()) s += '.';
  s += key;
  return s;
}

std::string at(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::optional<PathType> path_type_from(std::string_view s, std::optional<int>& nvlinks) {
  if (starts_with(s, "NV")) {
    auto rest = s.substr(2);
    if (rest.empty()) return PathType::kNVLink;
    auto n = parse_int(rest);
    if (!n || *n < 0 || *n > std::numeric_limits<int>::max()) return std::nullopt;
    nvlinks = static_cast<int>(*n);
    return PathType::kNVLink;
  }
  static const std::pair<std::string_view, PathType> kNames[] = {
      {"PIX", PathType::kPIX},   {"PXB", PathType::kPXB},   {"PHB", PathType::kPHB},
      {"NODE", PathType::kNODE}, {"SYS", PathType::kSYS},   {"SOC", PathType::kSYS},
      {"X", PathType::kSelf},    {"?", PathType::kUnknown},
  };
  for (const auto& [name, type] : kNames)
    if (s == name) return type;
  return std::nullopt;
}

std::optional<P2PStatus> p2p_from(std::string_view s) {
  static const std::pair<std::string_view, P2PStatus> kCodes[] = {
      {"OK", P2PStatus::kOk},
      {"CNS", P2PStatus::kChipsetNotSupported},
      {"GNS", P2PStatus::kGpuNotSupported},
      {"TNS", P2PStatus::kTopologyNotSupported},
      {"DR", P2PStatus::kDisabledByRegkey},
      {"NS", P2PStatus::kNotSupported},
      {"U", P2PStatus::kUnknown},
  };
  for (const auto& [code, status] : kCodes)
    if (s == code) return status;
  return std::nullopt;
}

// Reads typed values out of the parsed document. Every mismatch becomes one note naming the
// field by its path ("gpus[0].pcie.gen_current: expected a number") and leaves the field as it
// was; nothing here throws on a well-formed json value.
class Reader {
 public:
  void note(const std::string& path, std::string_view what) {
    if (notes_.size() < kMaxTypeNotes) {
      notes_.push_back(path + ": " + std::string(what));
    } else {
      ++suppressed_;
    }
  }

  std::vector<std::string> take_notes() {
    if (suppressed_ > 0)
      notes_.push_back("… and " + std::to_string(suppressed_) + " more fields of the wrong type");
    suppressed_ = 0;
    return std::move(notes_);
  }

  template <typename T>
  std::optional<T> value(const json& v, const std::string& path) {
    if constexpr (std::is_same_v<T, bool>) {
      if (v.is_boolean()) return v.get<bool>();
      note(path, "expected true or false");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (v.is_string()) return v.get<std::string>();
      note(path, "expected a string");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (v.is_number()) return v.get<double>();
      note(path, "expected a number");
    } else {
      static_assert(std::is_integral_v<T>);
      if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (std::in_range<T>(u)) return static_cast<T>(u);
      } else if (v.is_number_integer()) {
        const auto i = v.get<std::int64_t>();
        if (std::in_range<T>(i)) return static_cast<T>(i);
      } else if (v.is_number_float()) {
        // 700.0 for an integer field is fine; 4.5 or 1e300 is not. Below 2^53 the double is
        // exact, so the int64 cast is safe.
        const double d = v.get<double>();
        if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.0e15) {
          const auto i = static_cast<std::int64_t>(d);
          if (std::in_range<T>(i)) return static_cast<T>(i);
        }
      } else {
        note(path, "expected a number");
        return std::nullopt;
      }
      note(path, "expected a whole number in range");
    }
    return std::nullopt;
  }

  // Optional field: absent or null → nullopt.
  template <typename T>
  void opt(const json& obj, std::string_view key, const std::string& path, std::optional<T>& dst) {
    const json* v = member(obj, key);
    if (!v) return;
    dst = value<T>(*v, at(path, key));
  }

  // Plain field: absent or null leaves the default.
  template <typename T>
  void req(const json& obj, std::string_view key, const std::string& path, T& dst) {
    const json* v = member(obj, key);
    if (!v) return;
    if (auto x = value<T>(*v, at(path, key))) dst = std::move(*x);
  }

  // The member `key` when present and not null.
  static const json* member(const json& obj, std::string_view key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  // Sub-object `key`: nullptr (with a note on a wrong type) unless it is an object.
  const json* object(const json& obj, std::string_view key, const std::string& path) {
    const json* v = member(obj, key);
    if (!v) return nullptr;
    if (!v->is_object()) {
      note(at(path, key), "expected an object");
      return nullptr;
    }
    return v;
  }

  const json* array(const json& obj, std::string_view key, const std::string& path) {
    const json* v = member(obj, key);
    if (!v) return nullptr;
    if (!v->is_array()) {
      note(at(path, key), "expected an array");
      return nullptr;
    }
    return v;
  }

  // An array of scalars; elements of the wrong type are skipped, each with a note.
  template <typename T>
  void list(const json& obj, std::string_view key, const std::string& path, std::vector<T>& dst) {
    const json* a = array(obj, key, path);
    if (!a) return;
    const std::string here = at(path, key);
    for (std::size_t i = 0; i < a->size(); ++i)
      if (auto x = value<T>((*a)[i], at(here, i))) dst.push_back(std::move(*x));
  }

  // Each element of an array of objects, with its path; non-objects are skipped with a note.
  template <typename Fn>
  void each_object(const json& obj, std::string_view key, const std::string& path, Fn&& fn) {
    const json* a = array(obj, key, path);
    if (!a) return;
    const std::string here = at(path, key);
    for (std::size_t i = 0; i < a->size(); ++i) {
      const json& e = (*a)[i];
      if (!e.is_object()) {
        note(at(here, i), "expected an object");
        continue;
      }
      fn(e, at(here, i));
    }
  }

  // An object used as a map: each member through `fn(key, value, path)`.
  template <typename Fn>
  void each_member(const json& obj, std::string_view key, const std::string& path, Fn&& fn) {
    const json* o = object(obj, key, path);
    if (!o) return;
    const std::string here = at(path, key);
    for (auto it = o->begin(); it != o->end(); ++it) fn(it.key(), it.value(), at(here, it.key()));
  }

  // A CPU list: "0-15,32" as written, or an array of ids.
  void cpu_list(const json& obj, std::string_view key, const std::string& path,
                std::vector<int>& dst) {
    const json* v = member(obj, key);
    if (!v) return;
    if (v->is_array()) {
      list(obj, key, path, dst);
      return;
    }
    if (!v->is_string()) {
      note(at(path, key), "expected a CPU list string");
      return;
    }
    if (auto ids = parse_cpu_list(v->get_ref<const std::string&>())) {
      dst = std::move(*ids);
    } else {
      note(at(path, key), "not a CPU list (\"0-15,32\")");
    }
  }

  void path_type(const json& obj, std::string_view key, const std::string& path, PathType& dst,
                 std::optional<int>& nvlinks) {
    std::optional<std::string> s;
    opt(obj, key, path, s);
    if (!s) return;
    std::optional<int> links;
    if (auto t = path_type_from(*s, links)) {
      dst = *t;
      if (!nvlinks && links) nvlinks = links;
    } else {
      note(at(path, key), "unknown path type \"" + s->substr(0, 40) + "\"");
    }
  }

  void p2p(const json& obj, std::string_view key, const std::string& path,
           std::optional<P2PStatus>& dst) {
    std::optional<std::string> s;
    opt(obj, key, path, s);
    if (!s) return;
    dst = p2p_from(*s);
    if (!dst) note(at(path, key), "unknown P2P code \"" + s->substr(0, 40) + "\"");
  }

 private:
  std::vector<std::string> notes_;
  std::size_t suppressed_ = 0;
};

void read_pressure(Reader& r, const json& p, const std::string& path, HostPressure& out) {
  r.req(p, "window_s", path, out.window_s);
  r.opt(p, "iowait_pct", path, out.iowait_pct);
  r.each_object(p, "cores", path, [&](const json& c, const std::string& here) {
    CpuCoreLoad core;
    r.req(c, "cpu", here, core.cpu);
    r.req(c, "busy_pct", here, core.busy_pct);
    r.req(c, "iowait_pct", here, core.iowait_pct);
    r.req(c, "steal_pct", here, core.steal_pct);
    out.cores.push_back(core);
  });
  r.each_object(p, "disks", path, [&](const json& d, const std::string& here) {
    DiskLoad disk;
    r.req(d, "device", here, disk.device);
    r.req(d, "util_pct", here, disk.util_pct);
    r.req(d, "read_bytes_per_s", here, disk.read_bytes_per_s);
    r.req(d, "write_bytes_per_s", here, disk.write_bytes_per_s);
    out.disks.push_back(std::move(disk));
  });
  r.each_object(p, "nics", path, [&](const json& n, const std::string& here) {
    NicLoad nic;
    r.req(n, "device", here, nic.device);
    r.req(n, "rx_bytes_per_s", here, nic.rx_bytes_per_s);
    r.req(n, "tx_bytes_per_s", here, nic.tx_bytes_per_s);
    r.opt(n, "speed_mbit_s", here, nic.speed_mbit_s);
    r.opt(n, "peak_util_pct", here, nic.peak_util_pct);
    out.nics.push_back(std::move(nic));
  });
}

void read_host(Reader& r, const json& h, const std::string& path, HostFacts& out) {
  r.opt(h, "hostname", path, out.hostname);
  r.opt(h, "kernel", path, out.kernel);
  r.opt(h, "os", path, out.os);
  r.opt(h, "cpu_model", path, out.cpu_model);
  r.opt(h, "logical_cpus", path, out.logical_cpus);
  r.opt(h, "physical_cores", path, out.physical_cores);
  r.opt(h, "sockets", path, out.sockets);
  r.opt(h, "memory_bytes", path, out.memory_bytes);
  r.opt(h, "virtual_machine", path, out.virtual_machine);
  r.each_object(h, "numa_nodes", path, [&](const json& n, const std::string& here) {
    NumaNode node;
    r.req(n, "id", here, node.id);
    r.cpu_list(n, "cpus", here, node.cpus);
    r.opt(n, "memory_bytes", here, node.memory_bytes);
    r.list(n, "distances", here, node.distances);
    out.numa_nodes.push_back(std::move(node));
  });
  r.opt(h, "driver_version", path, out.driver_version);
  r.opt(h, "nvml_version", path, out.nvml_version);
  r.opt(h, "cuda_driver_version", path, out.cuda_driver_version);
  r.opt(h, "nvlink_disabled_by_driver", path, out.nvlink_disabled_by_driver);
  r.each_member(h, "driver_params", path,
                [&](const std::string& key, const json& v, const std::string& here) {
                  if (auto s = r.value<std::string>(v, here)) out.driver_params[key] = *s;
                });
  if (const json* i = r.object(h, "iommu", path)) {
    const std::string here = at(path, "iommu");
    r.opt(*i, "active", here, out.iommu.active);
    r.opt(*i, "passthrough", here, out.iommu.passthrough);
    r.opt(*i, "cmdline_hint", here, out.iommu.cmdline_hint);
  }
  if (const json* p = r.object(h, "pressure", path)) {
    HostPressure pressure;
    read_pressure(r, *p, at(path, "pressure"), pressure);
    out.pressure = std::move(pressure);
  }
  r.opt(h, "uptime_s", path, out.uptime_s);
  r.opt(h, "collected_unix", path, out.collected_unix);
}

void read_ecc_counts(Reader& r, const json& ecc, std::string_view key, const std::string& path,
                     EccCounts& out) {
  const json* c = r.object(ecc, key, path);
  if (!c) return;
  const std::string here = at(path, key);
  r.opt(*c, "corrected", here, out.corrected);
  r.opt(*c, "uncorrected", here, out.uncorrected);
}

void read_gpu(Reader& r, const json& g, const std::string& path, GpuFacts& out) {
  r.req(g, "index", path, out.index);
  r.opt(g, "unresponsive", path, out.unresponsive);
  r.opt(g, "uuid", path, out.uuid);
  r.opt(g, "name", path, out.name);
  r.opt(g, "serial", path, out.serial);
  r.opt(g, "vbios", path, out.vbios);
  r.opt(g, "pci_bus_id", path, out.pci_bus_id);
  if (const json* p = r.object(g, "pcie", path)) {
    const std::string here = at(path, "pcie");
    r.opt(*p, "gen_current", here, out.pcie.gen_current);
    r.opt(*p, "gen_max", here, out.pcie.gen_max);
    r.opt(*p, "gen_device_max", here, out.pcie.gen_device_max);
    r.opt(*p, "width_current", here, out.pcie.width_current);
    r.opt(*p, "width_max", here, out.pcie.width_max);
    r.opt(*p, "replay_counter", here, out.pcie.replay_counter);
  }
  r.opt(g, "numa_node", path, out.numa_node);
  r.cpu_list(g, "cpu_affinity", path, out.cpu_affinity);
  if (const json* c = r.object(g, "clocks", path)) {
    const std::string here = at(path, "clocks");
    r.opt(*c, "sm_mhz", here, out.clocks.sm_mhz);
    r.opt(*c, "mem_mhz", here, out.clocks.mem_mhz);
    r.opt(*c, "sm_max_mhz", here, out.clocks.sm_max_mhz);
    r.opt(*c, "mem_max_mhz", here, out.clocks.mem_max_mhz);
  }
  if (const json* c = r.object(g, "clock_events", path)) {
    const std::string here = at(path, "clock_events");
    r.opt(*c, "active_mask", here, out.clock_events.active_mask);
    r.list(*c, "active", here, out.clock_events.active);
    r.each_member(*c, "accumulated_ns", here,
                  [&](const std::string& key, const json& v, const std::string& where) {
                    if (auto ns = r.value<std::uint64_t>(v, where))
                      out.clock_events.accumulated_ns[key] = *ns;
                  });
  }
  if (const json* t = r.object(g, "thermal", path)) {
    const std::string here = at(path, "thermal");
    r.opt(*t, "gpu_c", here, out.thermal.gpu_c);
    r.opt(*t, "margin_c", here, out.thermal.margin_c);
    r.opt(*t, "slowdown_c", here, out.thermal.slowdown_c);
    r.opt(*t, "shutdown_c", here, out.thermal.shutdown_c);
    r.opt(*t, "gpu_max_operating_c", here, out.thermal.gpu_max_operating_c);
    r.opt(*t, "memory_max_c", here, out.thermal.memory_max_c);
    r.opt(*t, "memory_c", here, out.thermal.memory_c);
  }
  if (const json* p = r.object(g, "power", path)) {
    const std::string here = at(path, "power");
    r.opt(*p, "draw_w", here, out.power.draw_w);
    r.opt(*p, "limit_w", here, out.power.limit_w);
    r.opt(*p, "enforced_limit_w", here, out.power.enforced_limit_w);
    r.opt(*p, "default_limit_w", here, out.power.default_limit_w);
  }
  if (const json* e = r.object(g, "ecc", path)) {
    const std::string here = at(path, "ecc");
    r.opt(*e, "enabled", here, out.ecc.enabled);
    r.opt(*e, "pending_enabled", here, out.ecc.pending_enabled);
    read_ecc_counts(r, *e, "volatile", here, out.ecc.volatile_counts);
    read_ecc_counts(r, *e, "aggregate", here, out.ecc.aggregate_counts);
    r.opt(*e, "retired_pages_sbe", here, out.ecc.retired_pages_sbe);
    r.opt(*e, "retired_pages_dbe", here, out.ecc.retired_pages_dbe);
    r.opt(*e, "retired_pages_pending", here, out.ecc.retired_pages_pending);
    r.opt(*e, "remapped_rows_correctable", here, out.ecc.remapped_rows_correctable);
    r.opt(*e, "remapped_rows_uncorrectable", here, out.ecc.remapped_rows_uncorrectable);
    r.opt(*e, "remapping_pending", here, out.ecc.remapping_pending);
    r.opt(*e, "remapping_failed", here, out.ecc.remapping_failed);
  }
  if (const json* m = r.object(g, "memory", path)) {
    const std::string here = at(path, "memory");
    r.opt(*m, "total_bytes", here, out.memory.total_bytes);
    r.opt(*m, "used_bytes", here, out.memory.used_bytes);
  }
  if (const json* u = r.object(g, "utilization", path)) {
    const std::string here = at(path, "utilization");
    r.opt(*u, "gpu_pct", here, out.utilization.gpu_pct);
    r.opt(*u, "memory_pct", here, out.utilization.memory_pct);
  }
  r.opt(g, "mig_enabled", path, out.mig_enabled);
  r.opt(g, "persistence_mode", path, out.persistence_mode);
  r.opt(g, "pstate", path, out.pstate);
  r.each_object(g, "nvlinks", path, [&](const json& l, const std::string& here) {
    NvLink link;
    r.req(l, "link", here, link.link);
    r.opt(l, "active", here, link.active);
    r.opt(l, "version", here, link.version);
    r.opt(l, "remote_pci_bus_id", here, link.remote_pci_bus_id);
    r.opt(l, "remote_gpu", here, link.remote_gpu);
    r.opt(l, "speed_gbps", here, link.speed_gbps);
    out.nvlinks.push_back(std::move(link));
  });
  if (const json* f = r.object(g, "fabric", path)) {
    const std::string here = at(path, "fabric");
    r.opt(*f, "state", here, out.fabric.state);
    r.opt(*f, "status", here, out.fabric.status);
    r.opt(*f, "clique_id", here, out.fabric.clique_id);
    r.opt(*f, "cluster_uuid", here, out.fabric.cluster_uuid);
  }
  r.opt(g, "acs_redirects_p2p", path, out.acs_redirects_p2p);
  r.list(g, "acs_bridges", path, out.acs_bridges);
  r.opt(g, "iommu_group", path, out.iommu_group);
  r.list(g, "unreadable", path, out.unreadable);
}

void read_pair(Reader& r, const json& p, const std::string& path, GpuPair& out) {
  r.req(p, "a", path, out.a);
  r.req(p, "b", path, out.b);
  r.opt(p, "nvlinks", path, out.nvlinks);
  // After nvlinks: "NV18" fills the link count only where the explicit key did not.
  r.path_type(p, "path", path, out.path, out.nvlinks);
  if (const json* c = r.object(p, "p2p", path)) {
    const std::string here = at(path, "p2p");
    r.p2p(*c, "read", here, out.p2p_read);
    r.p2p(*c, "write", here, out.p2p_write);
    r.p2p(*c, "nvlink", here, out.p2p_nvlink);
    r.p2p(*c, "atomics", here, out.p2p_atomics);
  }
}

void read_xid(Reader& r, const json& x, const std::string& path, XidEvent& out) {
  r.req(x, "code", path, out.code);
  r.opt(x, "pci_bus_id", path, out.pci_bus_id);
  r.opt(x, "gpu", path, out.gpu);
  r.opt(x, "uptime_s", path, out.uptime_s);
  r.opt(x, "unix_time", path, out.unix_time);
  r.opt(x, "pid", path, out.pid);
  r.opt(x, "process", path, out.process);
  r.req(x, "message", path, out.message);
}

void read_process(Reader& r, const json& p, const std::string& path, ProcessFacts& out) {
  r.req(p, "host_pid", path, out.host_pid);
  r.opt(p, "local_pid", path, out.local_pid);
  r.list(p, "ns_pids", path, out.ns_pids);
  r.req(p, "gpu", path, out.gpu);
  r.opt(p, "name", path, out.name);
  r.opt(p, "used_memory_bytes", path, out.used_memory_bytes);
  r.opt(p, "cpus_allowed", path, out.cpus_allowed);
  r.opt(p, "mems_allowed", path, out.mems_allowed);
  // The id lists are not written by report/1; the raw lists are in the same "0-15" syntax.
  if (Reader::member(p, "cpus_allowed_ids")) {
    r.list(p, "cpus_allowed_ids", path, out.cpus_allowed_ids);
  } else if (out.cpus_allowed) {
    if (auto ids = parse_cpu_list(*out.cpus_allowed)) out.cpus_allowed_ids = std::move(*ids);
  }
  if (Reader::member(p, "mems_allowed_ids")) {
    r.list(p, "mems_allowed_ids", path, out.mems_allowed_ids);
  } else if (out.mems_allowed) {
    if (auto ids = parse_cpu_list(*out.mems_allowed)) out.mems_allowed_ids = std::move(*ids);
  }
}

void read_source(Reader& r, const json& s, const std::string& path, SourceInfo& out) {
  r.req(s, "name", path, out.name);
  r.req(s, "ok", path, out.ok);
  r.req(s, "detail", path, out.detail);
  r.req(s, "duration_ms", path, out.duration_ms);
  r.each_member(s, "timings_ms", path,
                [&](const std::string& key, const json& v, const std::string& here) {
                  if (auto ms = r.value<double>(v, here)) out.timings_ms.emplace_back(key, *ms);
                });
}

void read_imported_lists(Reader& r, const json& doc, Facts& out) {
  r.each_object(doc, "nic_paths", "", [&](const json& n, const std::string& here) {
    NicPath np;
    std::optional<int> unused_links;
    r.req(n, "nic", here, np.nic);
    r.req(n, "gpu", here, np.gpu);
    r.path_type(n, "path", here, np.path, unused_links);
    out.nic_paths.push_back(std::move(np));
  });
  r.each_object(doc, "nccl_events", "", [&](const json& e, const std::string& here) {
    NcclEvent ev;
    r.req(e, "kind", here, ev.kind);
    r.opt(e, "rank", here, ev.rank);
    r.opt(e, "host", here, ev.host);
    r.opt(e, "pci_bus_id", here, ev.pci_bus_id);
    r.req(e, "detail", here, ev.detail);
    out.nccl_events.push_back(std::move(ev));
  });
  r.each_object(doc, "measurements", "", [&](const json& m, const std::string& here) {
    Measurement ms;
    r.req(m, "tool", here, ms.tool);
    r.req(m, "test", here, ms.test);
    r.opt(m, "src_gpu", here, ms.src_gpu);
    r.opt(m, "dst_gpu", here, ms.dst_gpu);
    r.opt(m, "size_bytes", here, ms.size_bytes);
    r.opt(m, "bandwidth_gbps", here, ms.bandwidth_gbps);
    r.opt(m, "busbw_gbps", here, ms.busbw_gbps);
    r.opt(m, "latency_us", here, ms.latency_us);
    r.opt(m, "note", here, ms.note);
    out.measurements.push_back(std::move(ms));
  });
  std::size_t skipped_samples = 0;
  r.each_object(doc, "samples", "", [&](const json& x, const std::string& here) {
    if (out.samples.size() >= kMaxSamples) {
      ++skipped_samples;
      return;
    }
    GpuSample s;
    r.req(x, "gpu", here, s.gpu);
    r.req(x, "t_s", here, s.t_s);
    r.opt(x, "sm_mhz", here, s.sm_mhz);
    r.opt(x, "gpu_c", here, s.gpu_c);
    r.opt(x, "power_w", here, s.power_w);
    r.opt(x, "util_pct", here, s.util_pct);
    r.opt(x, "clock_event_mask", here, s.clock_event_mask);
    out.samples.push_back(s);
  });
  if (skipped_samples > 0)
    r.note("samples", "more than " + std::to_string(kMaxSamples) + " samples; " +
                          std::to_string(skipped_samples) + " later ones not read");
  r.each_object(doc, "numa_bindings", "", [&](const json& b, const std::string& here) {
    NumaBinding binding;
    r.opt(b, "pid", here, binding.pid);
    r.cpu_list(b, "cpus", here, binding.cpus);
    r.cpu_list(b, "mems", here, binding.mems);
    r.req(b, "source", here, binding.source);
    out.numa_bindings.push_back(std::move(binding));
  });
  r.each_object(doc, "scale_runs", "", [&](const json& x, const std::string& here) {
    ScaleRun run;
    r.req(x, "workload", here, run.workload);
    r.req(x, "preset", here, run.preset);
    r.req(x, "gpus", here, run.gpus);
    r.opt(x, "throughput", here, run.throughput);
    r.opt(x, "p50_ms", here, run.p50_ms);
    r.opt(x, "p95_ms", here, run.p95_ms);
    r.opt(x, "p99_ms", here, run.p99_ms);
    r.opt(x, "max_ms", here, run.max_ms);
    r.opt(x, "comm_share", here, run.comm_share);
    out.scale_runs.push_back(std::move(run));
  });
  r.each_object(doc, "imported", "", [&](const json& f, const std::string& here) {
    ImportedFile file;
    r.req(f, "path", here, file.path);
    r.req(f, "format", here, file.format);
    r.list(f, "notes", here, file.notes);
    out.imported.push_back(std::move(file));
  });
}

void read_report(Reader& r, const json& doc, Facts& out) {
  if (const json* h = r.object(doc, "host", "")) read_host(r, *h, "host", out.host);
  r.each_object(doc, "gpus", "", [&](const json& g, const std::string& here) {
    GpuFacts gpu;
    read_gpu(r, g, here, gpu);
    out.gpus.push_back(std::move(gpu));
  });
  r.req(doc, "gpu_facts_unavailable", "", out.gpu_facts_unavailable);
  r.each_object(doc, "pairs", "", [&](const json& p, const std::string& here) {
    GpuPair pair;
    read_pair(r, p, here, pair);
    out.pairs.push_back(pair);
  });
  if (const json* k = r.object(doc, "kernel_log", "")) {
    r.req(*k, "source", "kernel_log", out.kernel_log.source);
    r.req(*k, "readable", "kernel_log", out.kernel_log.readable);
    r.opt(*k, "why_unreadable", "kernel_log", out.kernel_log.why_unreadable);
    r.list(*k, "fallen_off_bus", "kernel_log", out.kernel_log.fallen_off_bus);
  }
  r.each_object(doc, "xids", "", [&](const json& x, const std::string& here) {
    XidEvent xid;
    read_xid(r, x, here, xid);
    out.kernel_log.xids.push_back(std::move(xid));
  });
  r.each_object(doc, "processes", "", [&](const json& p, const std::string& here) {
    ProcessFacts proc;
    read_process(r, p, here, proc);
    out.processes.push_back(std::move(proc));
  });
  r.each_object(doc, "sources", "", [&](const json& s, const std::string& here) {
    SourceInfo source;
    read_source(r, s, here, source);
    out.sources.push_back(std::move(source));
  });
  r.list(doc, "notes", "", out.notes);
  read_imported_lists(r, doc, out);
}

Status fail(Facts& out, std::string message) {
  out.notes.push_back(message);
  return Status::invalid_input(std::move(message));
}

}  // namespace

int sniff_gpuvet_json(std::string_view text) {
  const std::string_view head = text.substr(0, kSniffWindow);
  std::size_t i = 0;
  if (starts_with(head, "\xEF\xBB\xBF")) i = 3;  // UTF-8 byte order mark
  auto skip_space = [&] {
    while (i < head.size() &&
           (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r'))
      ++i;
  };
  skip_space();
  if (i >= head.size() || head[i] != '{') return 0;
  for (std::size_t pos = head.find("\"schema\"", i); pos != std::string_view::npos;
       pos = head.find("\"schema\"", pos + 1)) {
    i = pos + 8;
    skip_space();
    if (i >= head.size() || head[i] != ':') continue;
    ++i;
    skip_space();
    if (i < head.size() && head[i] == '"' && starts_with(head.substr(i + 1), kSchemaPrefix))
      return 100;
  }
  return 0;
}

Status import_gpuvet_json(std::string_view text, Facts& out) {
  if (auto pos = too_deep_at(text, kMaxGpuvetJsonDepth))
    return fail(out, "gpuvet report: nested deeper than " + std::to_string(kMaxGpuvetJsonDepth) +
                         " levels at byte " + std::to_string(*pos) + "; not read");
  try {
    json doc;
    try {
      doc = json::parse(text.begin(), text.end());
    } catch (const json::parse_error& e) {
      std::string what = e.what();
      // "[json.exception.parse_error.101] parse error at line 1, column 5: …" → the part after
      // the id, which already names line and column.
      if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
      return fail(out,
                  "gpuvet report: not valid JSON (byte " + std::to_string(e.byte) + "): " + what);
    }
    if (!doc.is_object()) return fail(out, "gpuvet report: the document is not a JSON object");
    const auto schema = doc.find("schema");
    if (schema == doc.end() || !schema->is_string())
      return fail(out, "gpuvet report: no \"schema\" string; not a gpuvet report");
    const std::string& name = schema->get_ref<const std::string&>();
    if (!starts_with(name, kSchemaPrefix))
      return fail(out,
                  "gpuvet report: schema \"" + name.substr(0, 80) + "\" is not a gpuvet report");

    Reader r;
    const auto version = parse_int(std::string_view(name).substr(kSchemaPrefix.size()));
    if (!version || *version < kSchemaVersion) {
      r.note("schema",
             "unrecognised version \"" + name.substr(0, 80) + "\"; read as gpuvet.report/1");
    } else if (*version > kSchemaVersion) {
      r.note("schema", name +
                           " is newer than this gpuvet reads (gpuvet.report/1); the keys "
                           "it knows were read, the others ignored");
    }
    read_report(r, doc, out);
    for (auto& n : r.take_notes()) out.notes.push_back(std::move(n));
    return Status::ok();
  } catch (const std::exception& e) {
    // Not expected from a parsed document (types are checked before every get); a guard so
    // that a bug here cannot take the caller down.
    return fail(out, std::string("gpuvet report: could not be read: ") + e.what());
  }
}

}  // namespace gpuvet::import
