// The GPU pairs of a big node as rows of cells, in the spirit of `nvidia-smi topo -m`: the
// form gpuvet.report/1 writes them in past kPairsListed pairs ("pair_matrix", docs/json-schema.md),
// where one object per pair made the facts of a 1024-GPU node 139 MB for a 4 MB input.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuvet/facts.h"

namespace gpuvet {

// Every pair of 64 GPUs: up to this many pairs, report/1 writes one object per pair.
inline constexpr std::size_t kPairsListed = 64 * 63 / 2;
// The most GPUs a matrix is read for (its cells grow with the square).
inline constexpr std::size_t kPairMatrixMaxGpus = 4096;

struct PairMatrix {
  std::vector<int> gpus;  // the GPU of each row and column, in order
  // Row i: one cell per GPU, separated by one space. "X" on the diagonal, "-" where there is no
  // pair; path cells as topo -m spells them ("NV18", "SYS", "?" unknown), P2P cells as codes.
  std::vector<std::string> path;
  // "read", "write", "nvlink", "atomics", "pcie": only those some pair has, in that order.
  std::vector<std::pair<std::string, std::vector<std::string>>> p2p;
};

PairMatrix encode_pair_matrix(const std::vector<GpuPair>& pairs);

// The pairs of a matrix, one per GPU pair with any cell known (upper triangle). A malformed
// matrix gives no pairs and says why in `problem`.
std::vector<GpuPair> decode_pair_matrix(const PairMatrix& m, std::string& problem);

// A pair's path as topo -m and report/1 spell it: "NV18" (the link count where known), "SYS", …
std::string path_label(const GpuPair& p);

// Names back to values: "NV18" → kNVLink with 18 links, "SOC" → kSYS, "?" → kUnknown.
std::optional<PathType> path_type_from(std::string_view s, std::optional<int>& nvlinks);
std::optional<P2PStatus> p2p_status_from(std::string_view code);

}  // namespace gpuvet
