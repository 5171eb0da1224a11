// probe/hwloc_topology.h — host CPU/NUMA topology through hwloc.
//
// hwloc knows the machine's packages, cores, NUMA nodes (with memory and the
// SLIT distance matrix) on every platform it supports; we use it for the live
// node and fall back to the sysfs readers for fixture roots. I/O discovery is
// off (GPU locality comes from NVML and sysfs). Stateless; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::probe {

struct HwlocHost {
  std::optional<std::string> cpu_model;
  int packages = 0;
  int cores = 0;
  int logical_cpus = 0;
  std::vector<NumaNode> numa_nodes;
  std::string version;  // hwloc library version, for the report
};

// The running machine.
Result<HwlocHost> read_hwloc_host();
// A synthetic topology in hwloc's syntax ("pack:2 numa:1 core:8 pu:2"), for tests.
Result<HwlocHost> read_hwloc_synthetic(const std::string& description);

}  // namespace gpuvet::probe
