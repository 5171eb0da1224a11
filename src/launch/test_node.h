// launch/test_node.h — the node the launch tests place jobs and tasks on: four GPUs on two
// NUMA nodes, placed against index order on purpose (GPU0 and GPU3 on node 1, a replaced
// board; GPU1 and GPU2 on node 0), bus ids in index order. For tests only.
#pragma once

#include <string>

#include "gpuvet/facts.h"

namespace gpuvet::launch_test {

inline Facts two_node_facts() {
  Facts f;
  f.host.numa_nodes = {NumaNode{0, {0, 1, 2, 3}, {}, {}}, NumaNode{1, {4, 5, 6, 7}, {}, {}}};
  const int node_of[] = {1, 0, 0, 1};
  for (int i = 0; i < 4; ++i) {
    GpuFacts g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i) + "aaaaaaa-0000-0000-0000-00000000000" + std::to_string(i);
    g.pci_bus_id = "0000:" + std::to_string(18 + i) + ":00.0";
    g.numa_node = node_of[i];
    f.gpus.push_back(g);
  }
  return f;
}

}  // namespace gpuvet::launch_test
