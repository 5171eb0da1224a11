// bench/registry.h — internals of the registry shared with its tests and the renderers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuvet/bench.h"
#include "gpuvet/status.h"

namespace gpuvet::bench {

// Message sizes of the collectives: the quick suite's four, or 8 B … 4 GiB ×2 (nccl-tests'
// -b 8 -e 4G -f 2) for --full.
std::vector<std::size_t> collective_sizes(bool full);
// "8 B", "1 MiB", "4 GiB"; sizes that are not a power-of-1024 multiple keep the smaller unit.
std::string size_label(std::uint64_t bytes);
// The keys to run: options.only (unknown keys are an error), else the quick or full suite.
[[nodiscard]] Status select(const BenchOptions& options, std::vector<std::string>& keys);
// How big a suite's copies are: per copy, copies per sample, samples (the median is the
// figure), for the host↔device and peer tests and for the device-local copy.
struct CopySizes {
  std::size_t bytes = 0;
  int iterations = 0;
  int samples = 0;
};
struct SuiteSizes {
  CopySizes copy;   // host↔device and peer
  CopySizes local;  // device-local copy
  int latency_samples = 0;
};
// Quick: 64 MiB × 8 × 5 (device-local 1 GiB × 4); full: 256 MiB × 8 × 9; --match nvbandwidth:
// nvbandwidth's 512 MiB × 16 × 3 for every copy. options.samples overrides the count.
SuiteSizes suite_sizes(const BenchOptions& options);
// One line: the suite's scope and sizes, and how it compares with nvbandwidth's
// (BenchReport::suite).
std::string suite_text(const BenchOptions& options, const std::vector<std::string>& keys);
// Sets each entry's verdict from what was claimed and what worked.
void judge_p2p_truth(std::vector<P2PTruth>& truth);

}  // namespace gpuvet::bench
