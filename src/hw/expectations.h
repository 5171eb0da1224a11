// hw/expectations.h — what a healthy machine should measure: host↔device bandwidth from the
// PCIe link, GPU↔GPU bandwidth from the path between two GPUs, and device-memory bandwidth from
// the GPU model.
//
// The measurement rules (rules_measurements.cc) compare imported benchmark figures with these;
// `gpuvet bench` can print them next to its own figures. All bandwidths are GB/s (1e9 bytes/s)
// per direction unless a name says otherwise. Each number carries its source in the .cc.
// Plain functions of their inputs: thread-safe, no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpuvet/facts.h"

namespace gpuvet::hw {

// ---------------------------------------------------------------- PCIe (host↔device)

// Share of the theoretical per-direction rate that a healthy copy-engine transfer reaches
// (TLP/DLLP overhead, read completions): ~0.85 on Gen4 and Gen5 x16.
inline constexpr double kPciePracticalEfficiency = 0.85;

struct LinkExpectation {
  int gen = 0;
  int width = 0;
  double theoretical_gbps = 0;  // per direction after line encoding (pcie_gbps)
  double practical_gbps = 0;    // theoretical × kPciePracticalEfficiency
};

// For a generation and width; empty when either is out of range.
std::optional<LinkExpectation> expected_pcie(int gen, int width);
// What the GPU's link should carry: from its *maximum* generation and width (gen_max,
// width_max), so that a link that trained down is measured against what it should be.
// Empty when either is unknown.
std::optional<LinkExpectation> expected_host_device(const GpuFacts& g);

// ---------------------------------------------------------------- peer (GPU↔GPU)

// Peer traffic through the CPU's host bridge (PHB, NODE) and across sockets (SYS) reaches
// less than a PCIe switch (PIX, PXB) does: these scale the slower GPU's link.
inline constexpr double kHostBridgePeerFactor = 0.8;
inline constexpr double kCrossSocketPeerFactor = 0.5;
// NVLink per-link rate when neither the links, the GPU model nor the NVLink version tell it:
// the NVLink 2–4 figure, the lowest of the common generations after NVLink 1.
inline constexpr double kDefaultNvlinkLinkGbps = 25;

// Per-link, per-direction NVLink rate by GPU model name (case-insensitive, "NVIDIA H200",
// "Tesla V100-SXM2-32GB"…); empty when the model is not known to have NVLink.
std::optional<double> nvlink_link_gbps_for_model(std::string_view gpu_name);
// Per-link, per-direction rate by the NVLink version NVML reports (1–5); empty otherwise.
std::optional<double> nvlink_link_gbps_for_version(int version);

struct PeerExpectation {
  PathType path = PathType::kUnknown;
  double gbps = 0;    // per direction
  std::string basis;  // for evidence: "NV18 ≈ 450 GB/s expected (18 links × 25 GB/s)"
};

// For a pair of GPUs in `f`: NV# → links × per-link rate (reported link speed, else GPU model,
// else NVLink version, else kDefaultNvlinkLinkGbps); PIX/PXB → the PCIe link of the slower
// GPU; PHB/NODE → that × kHostBridgePeerFactor; SYS → that × kCrossSocketPeerFactor. Empty
// when the path is unknown, or the links or link count it needs are.
std::optional<PeerExpectation> expected_peer(const Facts& f, const GpuPair& pair);

// ---------------------------------------------------------------- device memory

struct MemoryExpectation {
  std::string model;               // "H200", "H100 SXM", "A100 80GB SXM", …
  double peak_gbps = 0;            // datasheet HBM/GDDR bandwidth (reads and writes together)
  double copy_gbps = 0;            // ceiling of a device-local copy counted once (nvbandwidth
                                   // device_local_copy): a copy reads and writes, so peak / 2
  double practical_copy_gbps = 0;  // copy_gbps × kMemoryCopyEfficiency
};
// A healthy device-local copy reaches ~0.85–0.9 of peak/2 (H200: 2091.5 of 2400 GB/s).
inline constexpr double kMemoryCopyEfficiency = 0.85;

// By GPU model name (case-insensitive); empty for models not in the table.
std::optional<MemoryExpectation> expected_device_memory(std::string_view gpu_name);

}  // namespace gpuvet::hw
