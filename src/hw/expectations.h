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

// Every figure here is a theoretical one, worked out from specifications and data sheets; none
// is a reading of the machine under test. Output compares with it as "% of theoretical".
//
// The protocol ceiling: the share of the line rate (after encoding) left for data once each
// TLP's framing, header and LCRC and the DLLPs between them are paid. PCI Express Base
// Specification Rev 3.0 (the same figures hold through Rev 5.0; Rev 1.1/2.0 frame differently
// but add up to the same bytes), for a posted 64-bit memory write (the device→host case).
// The § numbers follow Rev 3.0's numbering as public summaries of it give them; the
// specification text is members-only and was not checked here, so each number comes with
// its section's title, which is how to find it in any revision.
//   payload      kPcieAssumedMaxPayload = 256 bytes (Max_Payload_Size 256, the common setting
//                on servers; Device Control register, §7.8.4)
//   framing      4 bytes: the STP token, which carries the 12-bit TLP sequence number
//                (§4.2.2, "Framing Tokens"); Gen1/2: STP 1 + sequence 2 + END 1 (§4.2.1,
//                §3.5)
//   header       16 bytes: a 4DW header for 64-bit addresses (§2.2); a 32-bit address or a
//                completion header is 3DW, 12 bytes
//   LCRC         4 bytes (§3.5); no ECRC (optional, off by default)
//   → kPcieTlpOverhead = 24 bytes per TLP
//   DLLPs        8 bytes each on the wire (6-byte DLLP §3.4 + the 2-byte SDP token, §4.2.2;
//                Gen1/2 SDP + END); assumed: one Ack or UpdateFC per 2 TLPs, 4 bytes per TLP
//                (1.4 % of the link) — the spec lets the receiver coalesce them (§3.5,
//                AckNak_LATENCY_TIMER)
//   SKP ordered sets (one 130-bit block per ≤ 375, §4.2.7 Clock Tolerance
//                Compensation): under 0.3 %, left out
//   → 256 / (256 + 24 + 4) = 0.901.
// Reads (host→device copies: the GPU reads host memory) carry their data in completions: a
// 3DW header (12 bytes), so 256-byte completions reach 256 / 280 = 0.914, but a root complex
// that splits completions at the 64-byte Read Completion Boundary (§2.3.1.1) reaches only
// 64 / (64 + 20 + 4) = 0.73. A reading well under the ceiling is not necessarily a fault.
inline constexpr double kPcieAssumedMaxPayload = 256;   // bytes
inline constexpr double kPcieTlpOverhead = 4 + 16 + 4;  // bytes: STP + 4DW header + LCRC
inline constexpr double kPcieDllpPerTlp = 8.0 / 2;      // bytes: one 8-byte DLLP per 2 TLPs
inline constexpr double kPcieProtocolEfficiency =
    kPcieAssumedMaxPayload / (kPcieAssumedMaxPayload + kPcieTlpOverhead + kPcieDllpPerTlp);
// Gen6 Flit Mode (PCI Express Base Specification Rev 6.0): the TLP carries no STP or LCRC of
// its own (the flit's CRC and FEC cover it), DLLPs ride in the flit's 6 DLP bytes; of the 242
// bytes counted in the line rate 236 are TLP bytes. 256-byte writes with a 16-byte header:
// 236 / 242 × 256 / (256 + 16) = 0.918.
inline constexpr double kPcieFlitProtocolEfficiency =
    236.0 / 242.0 * kPcieAssumedMaxPayload / (kPcieAssumedMaxPayload + 16);

struct LinkExpectation {
  int gen = 0;
  int width = 0;
  double theoretical_gbps = 0;       // per direction after line encoding (pcie_gbps)
  double protocol_efficiency = 0;    // kPcieProtocolEfficiency, Gen6 kPcieFlitProtocolEfficiency
  double protocol_ceiling_gbps = 0;  // theoretical × protocol_efficiency
};

// For a generation and width; empty when either is out of range.
std::optional<LinkExpectation> expected_pcie(int gen, int width);
// What the GPU's link should carry: from its *maximum* generation and width (gen_max,
// width_max), so that a link that trained down is measured against what it should be.
// Empty when either is unknown.
std::optional<LinkExpectation> expected_host_device(const GpuFacts& g);

// ---------------------------------------------------------------- peer (GPU↔GPU)

// Peer traffic through the CPU's host bridge (PHB, NODE) or across sockets (SYS) is forwarded
// by the root complex, which the PCIe spec leaves to the implementation (peer-to-peer between
// root ports is optional: Rev 3.0 §1.3.1, "Root Complex"): there is no theoretical figure for it
// below the link's. The theoretical figure stays the slower GPU's link; these allowances lower only
// the share of it that p2p-bandwidth-low accepts. They are judgments, not readings: the one
// published SYS reading we know (nvbandwidth issue 50, RTX A6000, Gen4 x16: 21.9 of 31.5 GB/s,
// 0.70) sits above its allowance.
inline constexpr double kHostBridgePeerFactor = 0.8;
inline constexpr double kCrossSocketPeerFactor = 0.5;
// NVLink per-link rate when neither the GPU model, the NVLink version nor the links tell it:
// the NVLink 2–4 figure, the lowest of the common generations after NVLink 1.
inline constexpr double kDefaultNvlinkLinkGbps = 25;

// Per-link, per-direction NVLink rate by GPU model name (case-insensitive, "NVIDIA H200",
// "Tesla V100-SXM2-32GB"…); empty when the model is not known to have NVLink.
std::optional<double> nvlink_link_gbps_for_model(std::string_view gpu_name);
// Per-link, per-direction rate by the NVLink version NVML reports (1–5); empty otherwise.
std::optional<double> nvlink_link_gbps_for_version(int version);

// How a GPU model's NVLink is wired, and so how many links a healthy one has up. Baseboard
// (SXM/HGX, NVSwitch or direct mesh): every link the GPU lists is wired and should be active.
// Bridge (PCIe cards): links come up only where an NVLink bridge is fitted, bridges join two
// cards (H200 NVL: up to four), and the card may list more links than its bridges carry — an
// H100 PCIe/NVL lists the die's 18, of which its three bridges use 12.
enum class NvlinkFormFactor { kBaseboard, kBridge };

struct NvlinkConfig {
  NvlinkFormFactor form = NvlinkFormFactor::kBaseboard;
  int links = 0;             // links a GPU has up in this configuration (bridge: fully bridged)
  int max_bridged_gpus = 2;  // GPUs one bridge set joins (bridge only)
  std::string what;          // for evidence: "an H100 PCIe/NVL card's three NVLink bridges"
};

// By GPU model name (case-insensitive); empty for models without NVLink or not in the table.
std::optional<NvlinkConfig> expected_nvlink(std::string_view gpu_name);

// GeForce (and TITAN) cards: NVIDIA's driver offers them no peer-to-peer over PCIe (the RTX 20
// series on; only an NVLink bridge gives them P2P), so P2P refused between two of them is
// expected, not a fault. Case-insensitive on the model name.
bool consumer_gpu(std::string_view gpu_name);

struct PeerExpectation {
  PathType path = PathType::kUnknown;
  double theoretical_gbps = 0;   // per direction: NV# × per-link rate, or the slower PCIe link
  double allowance = 1;          // 1; kHostBridgePeerFactor (PHB, NODE); kCrossSocketPeerFactor
  std::string basis;             // for evidence: "18 links × 25 GB/s", "the Gen4 x16 link of …"
  std::string allowance_reason;  // empty when allowance is 1: "the traffic crosses the CPU …"
};

// For a pair of GPUs in `f`: NV# → links × per-link rate (the GPU model's published rate,
// else the NVLink version's, else the rate the links report, else kDefaultNvlinkLinkGbps);
// PIX/PXB/PHB/NODE/SYS → the PCIe link of the slower GPU, PHB/NODE and SYS with their
// allowance. Empty when the path is unknown, or the links or link count it needs are.
std::optional<PeerExpectation> expected_peer(const Facts& f, const GpuPair& pair);

// ---------------------------------------------------------------- device memory

struct MemoryExpectation {
  std::string model;     // "H200", "H100 SXM", "A100 80GB SXM", …
  double peak_gbps = 0;  // data-sheet HBM/GDDR bandwidth (reads and writes together)
  double copy_gbps = 0;  // theoretical device-local copy counted once (nvbandwidth
                         // device_local_copy): a copy reads and writes, so peak / 2
  std::string source;    // the data sheet: "NVIDIA H200 Tensor Core GPU data sheet"
};

// By GPU model name (case-insensitive); empty for models not in the table.
std::optional<MemoryExpectation> expected_device_memory(std::string_view gpu_name);

// ---------------------------------------------------------------- collective deadlines

// The slowest link a collective between healthy GPUs should see: NCCL over sockets, or a
// PCIe x1 riser, about 1 GB/s of bus bandwidth. A wait is allowed ten times what its bytes
// need at this speed before it counts as stuck.
constexpr double kSlowestBusGbps = 1.0;

// Seconds a wait for `bus_bytes` of collective traffic (busbw bytes: the bytes times the
// collective's bus factor, summed over the operations waited for) may take before it is a
// stall: ten times their time at kSlowestBusGbps, and never less than `floor_s`.
double collective_deadline_s(double bus_bytes, double floor_s);

}  // namespace gpuvet::hw
