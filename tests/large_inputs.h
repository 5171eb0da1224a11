// tests/large_inputs.h — generated inputs of fleet size, shared by the import tests and the
// benchmarks: an `nvidia-smi topo -m` of n GPUs and `nvidia-smi pmon` samples of many
// processes. Header-only; no gtest dependency, so bench/ can include it.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "gpuvet/facts.h"

namespace gpuvet::testing {

inline std::string pmon_header() {
  return "# gpu         pid  type    sm   mem   enc   dec   command\n"
         "# Idx           #   C/G     %     %     %     %   name\n";
}

// n pmon rows spread over 8 GPUs, pids first_pid … first_pid + n - 1.
inline std::string pmon_rows(int first_pid, int n) {
  std::string s;
  s.reserve(static_cast<std::size_t>(n) * 64);
  char line[96];
  for (int i = 0; i < n; ++i) {
    std::snprintf(line, sizeof line, "    %d %9d     C    10     5     -     -   python\n", i % 8,
                  first_pid + i);
    s += line;
  }
  return s;
}

// Two samples of 100 000 processes, half of them the same: 150 000 distinct (gpu, pid).
inline std::string pmon_two_samples_of_100k() {
  return "$ nvidia-smi pmon -c 1\n" + pmon_header() + pmon_rows(1000, 100000) +
         "$ nvidia-smi pmon -c 1\n" + pmon_header() + pmon_rows(51000, 100000);
}

// `nvidia-smi topo -m` of n GPUs, every pair NV18, with its legend.
inline std::string topo_matrix(int n) {
  std::string s = "\t";
  for (int j = 0; j < n; ++j) s += "GPU" + std::to_string(j) + "\t";
  s += "CPU Affinity\tNUMA Affinity\tGPU NUMA ID\n";
  for (int i = 0; i < n; ++i) {
    s += "GPU" + std::to_string(i);
    for (int j = 0; j < n; ++j) s += i == j ? "\t X " : "\tNV18";
    s += "\t0-63\t0\t\tN/A\n";
  }
  s += "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP "
       "interconnect between NUMA nodes (e.g., QPI/UPI)\n  NV#  = Connection traversing a "
       "bonded set of # NVLinks\n";
  return s;
}

// `nvidia-smi topo -m` of n GPUs as NVLink islands of `island` GPUs (NV18 inside) joined only
// through the CPUs (SYS between islands), the first half on NUMA node 0 and the rest on node 1:
// every pair of GPUs of different islands is SYS, ~n²/2 of them.
inline std::string topo_islands(int n, int island = 8) {
  std::string s = "\t";
  s.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n) * 5 + 4096);
  for (int j = 0; j < n; ++j) s += "GPU" + std::to_string(j) + "\t";
  s += "CPU Affinity\tNUMA Affinity\tGPU NUMA ID\n";
  for (int i = 0; i < n; ++i) {
    s += "GPU" + std::to_string(i);
    for (int j = 0; j < n; ++j)
      s += i == j ? "\t X " : i / island == j / island ? "\tNV18" : "\tSYS";
    s += i < n / 2 ? "\t0-63\t0\t\tN/A\n" : "\t64-127\t1\t\tN/A\n";
  }
  s += "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP "
       "interconnect between NUMA nodes (e.g., QPI/UPI)\n  NV#  = Connection traversing a "
       "bonded set of # NVLinks\n";
  return s;
}

// Every pair of GPUs 0 … n-1 joined by 18 NVLinks with P2P read and write OK, as an HGX node's
// facts hold them (the benchmarks' nodes).
inline std::vector<GpuPair> nvlink_pairs(int n) {
  std::vector<GpuPair> pairs;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      GpuPair p;
      p.a = a;
      p.b = b;
      p.path = PathType::kNVLink;
      p.nvlinks = 18;
      p.p2p_read = p.p2p_write = P2PStatus::kOk;
      pairs.push_back(p);
    }
  return pairs;
}

}  // namespace gpuvet::testing
