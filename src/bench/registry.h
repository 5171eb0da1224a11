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
// Sets each entry's verdict from what was claimed and what worked.
void judge_p2p_truth(std::vector<P2PTruth>& truth);

}  // namespace gpuvet::bench
