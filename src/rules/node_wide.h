// rules/node_wide.h — one finding for a fault that every GPU of a node reports at once.
//
// Eight GPUs with PCIe replays, or the same Xid on all of them within a minute, are one fault
// of what they share (the PCIe fabric, the power delivery, the driver, one job across every
// GPU), not eight faults: the rule groups hand their per-GPU findings here, and what covers
// every GPU of the node (two or more) alike becomes one finding with all of them as subjects
// and a reading that fits a node-wide cause. Anything else is emitted per GPU, as before.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/xid_table.h"
#include "rules/rule.h"

namespace gpuvet::rules {

// "GPU0–GPU7" for a contiguous run of three or more indices, else "GPU0, GPU2".
std::string gpu_span(const std::vector<int>& gpus);

// Whether `gpus` (indices, any order) are every GPU the facts know, and two or more.
bool every_gpu(const Facts& f, const std::vector<int>& gpus);

// One GPU's PCIe replay counter, judged on its own.
struct ReplayFinding {
  int gpu = 0;
  std::uint64_t count = 0;
  Severity severity = Severity::kInfo;
  std::string evidence;  // the per-GPU evidence
};

// pcie-replay-errors: per GPU, or one node-level finding (at the worst GPU's severity) when
// every GPU of the node has replays.
void emit_replays(const Context& c, const std::vector<ReplayFinding>& found, Emitter& e);

// One group of Xid events (one code, one subject, one cause), judged on its own.
struct XidFinding {
  std::optional<int> gpu;  // the GPU the subject names, when it names one
  int code = 0;
  std::optional<int> cause;
  const hw::XidInfo* judged = nullptr;  // the cause's entry, else the code's
  int count = 0;
  bool current = false;                   // recent or of unknown time (else history)
  std::optional<std::int64_t> last_unix;  // the latest event's time, when known
  std::optional<double> last_uptime_s;
  std::string detail;  // the evidence after "Xid N ×k on GPUi (bus)": " — name (origin)…"
  Finding finding;     // the per-GPU finding
};

// xid-error: per group, except that one code (same cause, same severity) on every GPU of
// the node within kNodeWideXidWindowS is one node-level finding.
void emit_xids(const Context& c, std::vector<XidFinding> found, Emitter& e);

// Xid events of one code on every GPU this close together are one event of the node.
inline constexpr double kNodeWideXidWindowS = 60;

}  // namespace gpuvet::rules
