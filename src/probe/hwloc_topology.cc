#include "probe/hwloc_topology.h"

#include <hwloc.h>

#include <algorithm>
#include <map>
#include <memory>

namespace gpuvet::probe {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::vector<int> cpus_of(hwloc_const_cpuset_t set) {
  std::vector<int> ids;
  if (!set) return ids;
  for (int id = hwloc_bitmap_first(set); id != -1; id = hwloc_bitmap_next(set, id))
    ids.push_back(id);
  return ids;
}

Result<HwlocHost> read(const std::string* synthetic) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return Status::unavailable("hwloc_topology_init failed");
  Topology topo(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (synthetic && hwloc_topology_set_synthetic(raw, synthetic->c_str()) != 0)
    return Status::invalid_input("hwloc: bad synthetic topology: " + *synthetic);
  if (hwloc_topology_load(raw) != 0) return Status::unavailable("hwloc_topology_load failed");

  HwlocHost host;
  unsigned v = hwloc_get_api_version();
  host.version = std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." +
                 std::to_string(v & 0xff);
  host.packages = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PACKAGE);
  host.cores = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_CORE);
  host.logical_cpus = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PU);
  if (host.packages > 0) {
    hwloc_obj_t pkg = hwloc_get_obj_by_type(raw, HWLOC_OBJ_PACKAGE, 0);
    if (const char* model = hwloc_obj_get_info_by_name(pkg, "CPUModel"); model && *model)
      host.cpu_model = model;
  }

  const int n = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_NUMANODE);
  std::map<hwloc_obj_t, std::size_t> position;
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(raw, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    NumaNode node;
    node.id = static_cast<int>(obj->os_index);
    node.cpus = cpus_of(obj->cpuset);
    if (obj->attr && obj->attr->numanode.local_memory)
      node.memory_bytes = obj->attr->numanode.local_memory;
    position[obj] = host.numa_nodes.size();
    host.numa_nodes.push_back(std::move(node));
  }

  // The OS-provided (SLIT) latency matrix, if the platform has one.
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_type(raw, HWLOC_OBJ_NUMANODE, &nr, &dist,
                                  HWLOC_DISTANCES_KIND_FROM_OS | HWLOC_DISTANCES_KIND_MEANS_LATENCY,
                                  0) == 0 &&
      nr >= 1 && dist) {
    for (unsigned i = 0; i < dist->nbobjs; ++i) {
      auto it = position.find(dist->objs[i]);
      if (it == position.end()) continue;
      auto& row = host.numa_nodes[it->second].distances;
      row.assign(host.numa_nodes.size(), 0);
      for (unsigned j = 0; j < dist->nbobjs; ++j) {
        auto jt = position.find(dist->objs[j]);
        if (jt != position.end())
          row[jt->second] = static_cast<int>(dist->values[i * dist->nbobjs + j]);
      }
    }
    hwloc_distances_release(raw, dist);
  }
  std::sort(host.numa_nodes.begin(), host.numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  return host;
}

}  // namespace

Result<HwlocHost> read_hwloc_host() { return read(nullptr); }
Result<HwlocHost> read_hwloc_synthetic(const std::string& description) {
  return read(&description);
}

}  // namespace gpuvet::probe
