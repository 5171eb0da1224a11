#include "hw/xid_table.h"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace gpuvet::hw {
namespace {

using O = XidOrigin;
using S = Severity;

// Mnemonic, description and action bucket follow NVIDIA's Xid catalog; the meaning text is
// our summary. Keep sorted by code (find_xid binary-searches) and only append.
constexpr XidInfo kXids[] = {
    {8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing",
     "A channel stopped making progress and the driver timed it out. Usually a hung or "
     "faulting application; repeated occurrences point at the driver or the board.",
     O::kDriver, S::kWarning, "RESTART_APP"},
    {13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics Engine Exception",
     "An SM raised an exception (out-of-range address, illegal instruction, warp error). "
     "Almost always the application (check with compute-sanitizer); rarely hardware if it "
     "follows the GPU rather than the program.",
     O::kApplication, S::kInfo, "RESTART_APP"},
    {31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault",
     "A GPU engine accessed an unmapped or protected virtual address (MMU fault). Usually an "
     "application bug (illegal memory access); also seen with broken peer-to-peer mappings.",
     O::kApplication, S::kInfo, "RESTART_APP"},
    {32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream",
     "The command stream the GPU fetched was invalid. Often corruption on the way in "
     "(PCIe bus, system memory) or a driver error rather than the application itself.",
     O::kHardware, S::kWarning, "RESTART_APP"},
    {38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error",
     "A watchdog in the GPU's internal firmware expired. Driver or firmware issue; report "
     "it if it repeats.",
     O::kDriver, S::kWarning, "IGNORE"},
    {43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing",
     "The driver reset a channel after a fault, typically following an application error "
     "(Xid 13/31); the GPU stays usable.",
     O::kApplication, S::kInfo, "IGNORE"},
    {45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors",
     "The driver tore down an application's channels because of an earlier error (an ECC "
     "error, an NVLink error, a killed process). Follow the Xid that came before it; alone, "
     "it is usually a process ended while using the GPU.",
     O::kApplication, S::kInfo, "WORKFLOW_XID_45"},
    {46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing",
     "The GPU as a whole stopped responding to the driver; it needs a reset.", O::kDriver,
     S::kCritical, "RESET_GPU"},
    {48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error",
     "An uncorrectable (double-bit) ECC error in GPU memory. Applications using it are "
     "killed; the page/row is retired or remapped at the next reset. Repeats mean RMA.",
     O::kMemory, S::kCritical, "WORKFLOW_XID_48"},
    {54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board",
     "The board runs without its auxiliary power connector: clocks are cut. Check the power "
     "cables.",
     O::kThermalPower, S::kCritical, "CHECK_MECHANICALS"},
    {61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint/warning",
     "An internal micro-controller (PMU) hit a breakpoint or warning (older GPUs; unused on "
     "Ampere and newer). Driver or firmware issue; a reset may be needed if it repeats.",
     O::kDriver, S::kWarning, "CONTACT_SUPPORT"},
    {62, "PMU_HALT_ERROR", "Internal micro-controller halt",
     "An internal micro-controller halted: the GPU needs a reset. Hardware, driver or "
     "thermal causes.",
     O::kHardware, S::kCritical, "RESET_GPU"},
    {63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event",
     "A memory page was retired or a row marked for remapping after ECC errors (recorded in "
     "the InfoROM). Takes effect at the next GPU reset; not a failure by itself.",
     O::kMemory, S::kWarning, "IGNORE"},
    {64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure",
     "Page retirement or row remapping failed (no spare rows left, or the InfoROM write "
     "failed). Reset the GPU; persisting means RMA.",
     O::kMemory, S::kCritical, "RESET_GPU"},
    {68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception",
     "The video decoder engine raised an exception. Usually the decoding application or the "
     "driver.",
     O::kDriver, S::kWarning, "RESTART_APP"},
    {69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error",
     "The graphics/compute engine rejected a method of the command stream. Usually the "
     "application or its CUDA/graphics stack.",
     O::kApplication, S::kInfo, "RESTART_APP"},
    {74, "NVLINK_ERROR", "NVLINK Error",
     "An NVLink link reported an error (CRC/replay/training fault, link down). The message "
     "names the link; check it with nvidia-smi nvlink and the fabric manager.",
     O::kNvlink, S::kCritical, "WORKFLOW_NVLINK_ERR"},
    {79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
     "The GPU stopped answering on PCIe: power, thermal, riser/slot or board failure. Only a "
     "reboot brings it back; repeats mean hardware service.",
     O::kHardware, S::kCritical, "RESTART_BM"},
    {92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate",
     "Correctable ECC errors arrive at a high rate. Not fatal; watch the ECC counters and "
     "remapped rows for a degrading board.",
     O::kMemory, S::kWarning, "IGNORE"},
    {94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error",
     "An uncorrectable memory error that the GPU contained to the affected applications: "
     "restart them; the GPU keeps running. Remapping takes effect at the next reset.",
     O::kMemory, S::kWarning, "RESTART_APP"},
    {95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error",
     "An uncorrectable memory error that could not be contained: every application on the "
     "GPU is affected and the GPU must be reset.",
     O::kMemory, S::kCritical, "RESET_GPU"},
    {109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error",
     "A context switch did not complete in time: a hung kernel, or a driver/firmware "
     "problem. Reset the GPU; report it if it repeats.",
     O::kDriver, S::kCritical, "RESET_GPU"},
    {119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout",
     "The GPU System Processor firmware did not answer a driver call in time. The GPU "
     "usually needs a reset; frequent on some driver versions (update the driver).",
     O::kDriver, S::kCritical, "RESET_GPU"},
    {120, "GSP_ERROR", "GSP Error",
     "The GPU System Processor firmware reported an error. Reset the GPU; update the "
     "driver if it repeats.",
     O::kDriver, S::kCritical, "RESET_GPU"},
    {121, "C2C_ERROR", "C2C Error",
     "An error on the chip-to-chip link between a Grace CPU and its GPU. Usually corrected; "
     "report it if it repeats.",
     O::kHardware, S::kWarning, "IGNORE"},
    {122, "SPI_PMU_RPC_READ_FAIL", "SPI PMU RPC read failure",
     "Reading the board's SPI flash through the PMU failed (marked unused in the current "
     "catalog). Board or firmware issue.",
     O::kHardware, S::kWarning, "CONTACT_SUPPORT"},
    {123, "SPI_PMU_RPC_WRITE_FAIL", "SPI PMU RPC write failure",
     "Writing the board's SPI flash through the PMU failed (marked unused in the current "
     "catalog). Board or firmware issue.",
     O::kHardware, S::kWarning, "CONTACT_SUPPORT"},
    {136, "ALI_TRAINING_FAIL", "Link Training Failed",
     "An NVLink link failed to train. Reset the GPU; persisting means a link or cabling "
     "problem.",
     O::kNvlink, S::kCritical, "RESET_GPU"},
    {137, "NVLINK_PRIV_ERR", "NVLink Privilege Error",
     "An NVLink access was refused for lack of privilege: usually software misconfiguration "
     "rather than a link fault.",
     O::kNvlink, S::kWarning, "IGNORE"},
    {140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error",
     "An uncorrectable ECC error escaped containment. Reset the GPU; repeats mean RMA.", O::kMemory,
     S::kCritical, "RESET_GPU"},
    {143, "GPU_INIT_ERROR", "GPU Initialization Error",
     "The GPU failed to initialise. Reset it; persisting means board or firmware failure.",
     O::kHardware, S::kCritical, "RESET_GPU"},
    {144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error",
     "NVLink5 error in the SAW unit. Fatal or not depends on the error status in the message "
     "(NVIDIA's Xid 144-150 decode table); fatal ones need a GPU reset and kill the "
     "applications on the link (Xid 45).",
     O::kNvlink, S::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error",
     "NVLink5 error in the RLW unit. Fatal or not depends on the error status in the message "
     "(Xid 144-150 decode table); fatal ones need a GPU reset and kill the applications on "
     "the link (Xid 45).",
     O::kNvlink, S::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error",
     "NVLink5 error in the TLW unit. Fatal or not depends on the error status in the message "
     "(Xid 144-150 decode table); fatal ones need a GPU reset.",
     O::kNvlink, S::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error",
     "NVLink5 error in the TREX unit. Fatal or not depends on the error status in the "
     "message (Xid 144-150 decode table); fatal ones need a GPU reset.",
     O::kNvlink, S::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error",
     "NVLink5 error in the NVLPW control unit. Fatal or not depends on the error status in "
     "the message (Xid 144-150 decode table); fatal ones need a GPU reset.",
     O::kNvlink, S::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error",
     "NVLink5 error in the NETIR unit (link/fabric level). Fatal or not depends on the error "
     "status in the message (Xid 144-150 decode table); fatal ones need a GPU reset and kill "
     "the applications on the link (Xid 45).",
     O::kNvlink, S::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error",
     "NVLink5 error in the MSE unit. Fatal or not depends on the error status in the message "
     "(Xid 144-150 decode table); fatal ones need a GPU reset.",
     O::kNvlink, S::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed",
     "The driver's recommended recovery action for this GPU changed (None, GPU Reset, Node "
     "Reboot, Drain P2P, Drain and Reset), as named in the message. Informational about "
     "another Xid: act on the action it names.",
     O::kUnknown, S::kWarning, "XID_154"},
    {155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error",
     "A software-defined NVLink error. Reset the GPU; check the software using the fabric.",
     O::kNvlink, S::kCritical, "RESET_GPU"},
    {156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event",
     "A GPU resource was retired after errors; takes effect at the next GPU reset.", O::kHardware,
     S::kWarning, "RESET_GPU"},
    {157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure",
     "Retiring a faulty GPU resource failed. Report it; persisting means RMA.", O::kHardware,
     S::kCritical, "IGNORE"},
    {158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout",
     "The GPU hit a fatal timeout and needs a reset.", O::kHardware, S::kCritical, "RESET_GPU"},
};

constexpr bool sorted_by_code() {
  for (std::size_t i = 1; i < std::size(kXids); ++i)
    if (kXids[i - 1].code >= kXids[i].code) return false;
  return true;
}
static_assert(sorted_by_code(), "kXids must stay sorted by code, without duplicates");

}  // namespace

const char* xid_origin_name(XidOrigin origin) {
  switch (origin) {
    case XidOrigin::kHardware:
      return "hardware";
    case XidOrigin::kApplication:
      return "application";
    case XidOrigin::kDriver:
      return "driver";
    case XidOrigin::kThermalPower:
      return "thermal-power";
    case XidOrigin::kMemory:
      return "memory";
    case XidOrigin::kNvlink:
      return "nvlink";
    case XidOrigin::kUnknown:
      break;
  }
  return "unknown";
}

std::span<const XidInfo> xid_catalog() { return kXids; }

bool xid_is_consequence(int code) { return code == 43 || code == 45 || code == 154; }

std::optional<int> xid_named_cause(std::string_view message) {
  for (std::string_view key : {"previous Xid ", "previous XID ", "previous xid "}) {
    std::size_t p = message.find(key);
    if (p == std::string_view::npos) continue;
    p += key.size();
    int v = 0;
    std::size_t n = 0;
    while (p + n < message.size() && n < 4 && message[p + n] >= '0' && message[p + n] <= '9')
      v = v * 10 + (message[p + n++] - '0');
    if (n > 0 && v > 0) return v;
  }
  return std::nullopt;
}

std::optional<unsigned> xid_channel(std::string_view message) {
  // Longest spelling first: "Channel ID " before "Channel ", "ChID " before "Ch ".
  for (std::string_view key : {"Channel ID ", "channel ", "Channel ", "ChID ", "ChId ", "Ch "}) {
    std::size_t p = message.find(key);
    // A whole word: "Ch " must not match inside "Mismatch ".
    while (p != std::string_view::npos && p > 0 &&
           (std::isalnum(static_cast<unsigned char>(message[p - 1])) != 0))
      p = message.find(key, p + 1);
    if (p == std::string_view::npos) continue;
    p += key.size();
    if (message.substr(p, 2) == "0x" || message.substr(p, 2) == "0X") p += 2;
    unsigned v = 0;
    std::size_t n = 0;
    for (; p + n < message.size() && n < 8; ++n) {
      const char ch = message[p + n];
      const int d = ch >= '0' && ch <= '9'   ? ch - '0'
                    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                             : -1;
      if (d < 0) break;
      v = v * 16 + static_cast<unsigned>(d);
    }
    if (n > 0) return v;
  }
  return std::nullopt;
}

std::string recovery_action_name(int code) {
  // nvmlDeviceGpuRecoveryAction_t: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain
  // and reset, 5 recover IMEX domain, 6 bus reset, 7 system reboot; nvidia-smi's words.
  static constexpr const char* kNames[] = {"None",      "Reset",           "Reboot",
                                           "Drain P2P", "Drain and Reset", "Recover IMEX Domain",
                                           "Bus Reset", "System Reboot"};
  return code >= 0 && code < 8 ? kNames[code] : "action " + std::to_string(code);
}

std::optional<XidRecoveryAction> xid_recovery_action(std::string_view message) {
  // "… changed from 0x0 (None) to 0x2 (Node Reboot Required)", or "… changed to 0x1 (…)".
  const std::size_t changed = message.find("recovery action changed");
  if (changed == std::string_view::npos) return std::nullopt;
  std::size_t to = message.find(" to 0x", changed);
  if (to == std::string_view::npos) return std::nullopt;
  to += 6;
  int code = 0;
  std::size_t n = 0;
  while (to + n < message.size() && n < 4) {
    const char ch = message[to + n];
    int d = ch >= '0' && ch <= '9'   ? ch - '0'
            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
            : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                     : -1;
    if (d < 0) break;
    code = code * 16 + d;
    ++n;
  }
  if (n == 0) return std::nullopt;
  XidRecoveryAction a;
  a.code = code;
  a.text = recovery_action_name(code);
  const std::size_t open = message.find('(', to + n);
  if (open != std::string_view::npos && open <= to + n + 2) {
    const std::size_t close = message.find(')', open);
    if (close != std::string_view::npos && close - open > 1 && close - open < 48)
      a.text = std::string(message.substr(open + 1, close - open - 1));
  }
  a.severity = code == 0                ? Severity::kInfo
               : code == 3 || code == 5 ? Severity::kWarning
                                        : Severity::kCritical;
  return a;
}

const XidInfo* find_xid(int code) {
  auto it = std::lower_bound(std::begin(kXids), std::end(kXids), code,
                             [](const XidInfo& info, int c) { return info.code < c; });
  return it != std::end(kXids) && it->code == code ? &*it : nullptr;
}

}  // namespace gpuvet::hw
