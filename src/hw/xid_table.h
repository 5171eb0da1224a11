// hw/xid_table.h — what NVIDIA's Xid codes mean: one table of data, not code.
//
// Each entry gives NVIDIA's mnemonic and short description and its "immediate action"
// resolution bucket, as published in the Xid catalog for Ampere and newer GPUs
// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html; the older Xid error listing
// for codes the new catalog marks unused), plus gpuvet's reading of it: what the event usually
// means, where it most likely comes from, and a default severity for the xid-error finding.
// The table is append-only and sorted by code; codes not in it are "unknown" to the rules,
// never an error. Immutable static data: safe from any thread.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gpuvet/severity.h"

namespace gpuvet::hw {

enum class XidOrigin {
  kHardware,      // the board, its PCIe link or power delivery
  kApplication,   // the program running on the GPU (bad address, illegal instruction, …)
  kDriver,        // the driver or its firmware (GSP, micro-controllers)
  kThermalPower,  // cooling or power supply
  kMemory,        // GPU memory errors (ECC, row remapping)
  kNvlink,        // NVLink / NVSwitch fabric
  kUnknown,
};

// "hardware", "application", "driver", "thermal-power", "memory", "nvlink", "unknown".
const char* xid_origin_name(XidOrigin origin);

struct XidInfo {
  int code;
  const char* mnemonic;  // NVIDIA's, e.g. "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
  const char* name;      // NVIDIA's short description, e.g. "GPU has fallen off the bus"
  const char* meaning;   // what it usually means and what to look at, one or two sentences
  XidOrigin origin;      // most likely origin
  Severity severity;     // default for the xid-error finding: info, warning or critical
  const char* action;    // NVIDIA's immediate resolution bucket: "RESTART_APP", "RESET_GPU", …
};

// Every entry, sorted by code.
std::span<const XidInfo> xid_catalog();

// The entry for `code`, or nullptr when the table does not know it.
const XidInfo* find_xid(int code);

// ---- chains: codes that report the consequence of an earlier fault

// Codes whose event is the aftermath of another Xid on the same GPU rather than a fault of
// its own: 43 (channel reset after an application fault), 45 (preemptive cleanup "due to
// previous errors") and 154 (the recovery action an earlier fault calls for). NVIDIA's
// catalog tells the reader to follow the Xid that came before them.
bool xid_is_consequence(int code);

// The cause a driver message names: "… caused by previous Xid 149" → 149 (Xid 45 on R560 and
// later prints it). Empty when the message names none.
std::optional<int> xid_named_cause(std::string_view message);

// The channel (the GPU context's command queue) an Xid message names, in the driver's spellings
// across versions: "Ch 0000003a", "ChID 0052", "Channel ID 00000052", "Channel 00000020",
// "channel 0x0000000f" (hexadecimal). Empty when it names none.
std::optional<unsigned> xid_channel(std::string_view message);

// Xid 154's "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)": the
// action now required (nvmlDeviceGpuRecoveryAction_t) and the severity it calls for — none:
// info (recovered); drain P2P, recover IMEX domain: warning; any reset or reboot: critical.
struct XidRecoveryAction {
  int code = 0;
  std::string text;  // "Node Reboot Required", or NVML's name when the message gives none
  Severity severity = Severity::kWarning;
};
std::optional<XidRecoveryAction> xid_recovery_action(std::string_view message);
// An nvmlDeviceGpuRecoveryAction_t as nvidia-smi -q prints it ("None", "Reset", "Reboot",
// "Drain P2P", "Drain and Reset", …); "action N" for a code this table does not know.
std::string recovery_action_name(int code);

}  // namespace gpuvet::hw
