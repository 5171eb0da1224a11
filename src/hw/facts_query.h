// hw/facts_query.h — small lookups over a Facts model that several layers share: a GPU by
// index or bus id, the NUMA node of a GPU, the theoretical PCIe rate, the PSI figure to
// judge, and the number format the evidence texts use.
//
// Rules, bench and scale all read facts this way; keeping the lookups here (below them all)
// means none of them includes another's private headers. Plain functions of their inputs:
// thread-safe, no I/O. Returned pointers point into the Facts passed in.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"

namespace gpuvet::hw {

const GpuFacts* find_gpu(const Facts& f, int index);
const GpuFacts* find_gpu_by_bus(const Facts& f, std::string_view pci_bus_id);

// Theoretical one-direction PCIe bandwidth in GB/s (1e9) for a generation and width,
// after line encoding (8b/10b to Gen2, 128b/130b Gen3-5, FLIT Gen6). Empty if unknown.
std::optional<double> pcie_gbps(int gen, int width);

std::string format_number(double v, int decimals = 1);  // "12.5", no trailing noise

// CPUs of each NUMA node (sorted): the host's own table, completed by what the GPUs report
// (nvidia-smi topo -m gives "CPU Affinity" and "NUMA Affinity" per GPU).
std::map<int, std::vector<int>> node_cpus(const Facts& f);
// The GPU's NUMA node: as reported, else the one node whose CPUs hold all of its affinity
// (empty when none or several do).
std::optional<int> gpu_node(const GpuFacts& g, const std::map<int, std::vector<int>>& nodes);

// The PSI reading gpuvet judges and shows for one resource (cpu, io, memory), chosen in one
// place so the report and the rules never quote different figures. Over the sample window
// when the window is at least kPsiWindowMinS long (or the kernel's 10 s average is absent);
// else the kernel's 10 s average, which a short window (diagnose samples 0.05 s by default) is
// too noisy to beat. A capture or a paste holds one reading: its averages.
inline constexpr double kPsiWindowMinS = 1.0;
struct PsiChoice {
  double some_pct = 0;
  std::optional<double> full_pct;
  bool windowed = false;  // over the sample window; false: the kernel's avg10
};
// Empty when the reading has neither a window share nor an avg10 "some".
std::optional<PsiChoice> psi_choice(const PsiReading& r, double window_s);

}  // namespace gpuvet::hw
