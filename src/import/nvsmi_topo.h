// import/nvsmi_topo.h — offline importers for nvidia-smi's topology outputs: the
// `topo -m` matrix, the `topo -p2p` capability matrix and `nvlink -s` link status.
//
// Each format is a sniff/import pair matching capture/importer.h (SniffFn, ParseFn):
//   "topo-m"         nvidia-smi topo -m / --matrix / -mp: GPU-GPU paths (X, NV#, PIX, PXB, PHB,
//                    NODE, SYS, legacy SOC) into Facts.pairs, NIC columns or rows into
//                    Facts.nic_paths (NICn renamed mlx5_n through the "NIC Legend:"), CPU
//                    Affinity / NUMA Affinity / GPU NUMA ID into GpuFacts. Tab-separated or
//                    space-aligned (tabs expanded by a terminal copy), ANSI escapes, CRLF.
//   "topo-p2p"       nvidia-smi topo -p2p r|w|n|a|p: OK/CNS/GNS/TNS/NS/DR/U per pair into
//                    GpuPair.p2p_*. The capability is read from a "topo -p2p X" command line
//                    or a "P2P Read/Write/Atomics" / "NVLink" title in the text; the printed
//                    matrix alone does not say it, and then it is taken as read (the usual
//                    `-p2p r`) and a note says so. "p" (PCIe property) has no field: noted only.
//   "nvlink-status"  nvidia-smi nvlink -s / --status (per-link GB/s or <inactive>, the
//                    "does not have or support Nvlink" and "all links are inActive" cases),
//                    nvidia-smi nvlink -R (remote bus id per link) and dcgmi nvlink -s (the
//                    U/D/X/_ link grid) into GpuFacts.nvlinks. nvlink -c (capabilities) and
//                    -gt/-e counters hold no field of ours: sniff answers 0 for them.
//
// Hand-written scanning over string_view (no regular expressions): linear time, bounded
// memory (matrix size and notes are capped), safe on garbage, truncated or binary input.
// Stateless free functions; thread-safe.
#pragma once

#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

int sniff_topo_m(std::string_view text);
Status import_topo_m(std::string_view text, Facts& out);

int sniff_topo_p2p(std::string_view text);
Status import_topo_p2p(std::string_view text, Facts& out);

int sniff_nvlink_status(std::string_view text);
Status import_nvlink_status(std::string_view text, Facts& out);

}  // namespace gpuvet::import
