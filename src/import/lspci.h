// import/lspci.h — the offline importer for lspci: `lspci -vvv` (also -vv, -v, -nn, -n, -D,
// `-s <bdf>`, with or without root), plain `lspci`, `lspci -tv` trees, and the bare capability
// lines of `lspci -vvv | grep …` (ACSCtl, LnkSta, …).
//
// Per device: its bus id, class, name, driver, PCIe port type and, for bridges, the bus range
// below it ("Bus: primary=00, secondary=01, subordinate=01" or the tree's "-[01-02]-"). Link
// capability and status (LnkCap/LnkSta: Speed 2.5…64 GT/s → Gen1…6, Width xN), ACSCtl flags
// and the AER status bits that are set and not masked (UESta/UEMsk/UESvrt, CESta/CEMsk) go to
// Facts.pci_devices. NVIDIA GPUs (vendor 10de, class 0300/0302, or an NVIDIA VGA/3D
// controller by name) become GpuFacts in bus order, the order nvidia-smi numbers them: bus id,
// PCIe gen/width current (LnkSta), device max (LnkCap) and max with the port above (the lower
// of the two, as NVML and the live sysfs probe report it), and acs_redirects_p2p /
// acs_bridges from the bridges between the GPU and its root port — the same fields the live
// probe fills, so the same rules fire. Bridges with ACS redirect whose GPUs are not known (a
// grep paste, a paste without GPUs) go to HostFacts.acs_redirect_unplaced. GPU pairs below one
// PCIe switch become Facts.pairs with path PIX (ports of one switch) or PXB (switches below a
// switch); pairs meeting at the root port or above are left to topo -m.
//
// Hand-written scanning over string_view (no regular expressions): linear time, bounded
// memory (devices, flags and notes are capped), safe on garbage, truncated or binary input.
// Stateless free functions; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

int sniff_lspci(std::string_view text);
Status import_lspci(std::string_view text, Facts& out);

// "2.5GT/s" → 1 … "64GT/s" → 6; empty for anything else.
std::optional<int> pcie_gen_from_gts(std::string_view speed);

}  // namespace gpuvet::import
