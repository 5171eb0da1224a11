// gpuvet/sched.h — scheduler glue: a gate's verdict acted on in Slurm.
//
// Slurm only logs a HealthCheckProgram's exit code, so a health check that should take a node
// out of service must drain it itself. apply_slurm_drain() does that through `scontrol`,
// following the ownership rule NHC uses for its own reasons:
//
//   * every reason gpuvet writes starts with "gpuvet:", and gpuvet only ever changes or clears
//     a drain whose reason starts with it;
//   * unhealthy: a node that is not drained is drained (`state=drain reason="gpuvet: …"`); a
//     node drained by gpuvet with another reason gets the new reason; a node drained by anyone
//     else keeps that drain and its reason; a node that is DOWN (or FAIL) is left alone;
//   * healthy: a node drained (or draining) with a "gpuvet:" reason is resumed; nothing else is
//     touched;
//   * unknown (the gate could not judge the node): nothing changes, either way.
//
// Every `scontrol` call runs through the Env's CommandRunner under SlurmDrainOptions::timeout.
// A missing `scontrol`, one that times out or fails, or a node Slurm does not know is an error
// (Status), never a silent "nothing to do". Pure functions of their inputs otherwise; safe to
// call from several threads with a thread-safe runner.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/env.h"
#include "gpuvet/status.h"

namespace gpuvet {

// gpuvet's drain reasons: "<cause> [gpuvet]", the cause first in at most 20 characters so that
// `sinfo -R`'s default REASON column shows it, the ownership marker after it. Reasons that
// start "gpuvet:" (written by gpuvet before the marker) are gpuvet's too; no other reason is
// ever changed or cleared.
inline constexpr std::string_view kSlurmReasonPrefix = "gpuvet:";
inline constexpr std::string_view kSlurmReasonMarker = " [gpuvet]";
inline constexpr std::size_t kSlurmCauseWidth = 20;

// Whether `reason` is one gpuvet wrote (the marker at its end, or the older prefix).
bool is_gpuvet_reason(std::string_view reason);
// The reason for a drain: `cause` cut to kSlurmCauseWidth (ASCII, one line), " +N" when `more`
// other causes failed the node too, then the marker.
std::string slurm_drain_reason(std::string_view cause, int more);

enum class SlurmHealth { kHealthy, kUnhealthy, kUnknown };

// What the gate found, for one node.
struct SlurmNodeAction {
  std::string node;  // Slurm's node name ($SLURMD_NODENAME in a HealthCheckProgram)
  SlurmHealth health = SlurmHealth::kUnknown;
  std::string reason;  // the drain reason for an unhealthy node: is_gpuvet_reason
};

// The node as `scontrol show node` reports it.
struct SlurmNodeState {
  std::string node;
  std::string state;               // as printed, e.g. "IDLE+DRAIN", "DOWN*+DRAIN"
  std::string base;                // upper case, without flags or suffixes: "IDLE", "DOWN", …
  std::vector<std::string> flags;  // upper case: "DRAIN", "FAIL", "MAINT", …
  std::string reason;              // without Slurm's " [user@time]" suffix; empty when none
  bool drain = false;              // drained or draining (the DRAIN flag)
  bool down = false;               // DOWN or FAIL (not ours to change)
  bool reason_is_ours() const;     // is_gpuvet_reason
};

// Parses `scontrol show node NAME` (the multi-line form, or `-o`'s one line) for `node`.
// Fails (kInvalidInput) when the text has no State= for that node.
Result<SlurmNodeState> parse_scontrol_show_node(std::string_view text, std::string_view node);

enum class SlurmChange {
  kNone,           // nothing needed (already as it should be)
  kDrained,        // drained now, with gpuvet's reason
  kReasonUpdated,  // drained by gpuvet before, its reason replaced
  kResumed,        // gpuvet's drain lifted
  kKeptForeign,    // unhealthy, but drained by someone else: their drain and reason kept
  kLeftDown,       // DOWN or FAIL: left to whoever set it
  kUnknownHealth,  // the gate could not judge: nothing changed
};
const char* slurm_change_name(SlurmChange c);  // "none", "drained", "reason-updated", …

struct SlurmOutcome {
  SlurmChange change = SlurmChange::kNone;
  SlurmNodeState before;  // as read before any change
  std::string message;    // one line for a person, e.g. "slurm: drained vm: gpuvet: …"
};

struct SlurmDrainOptions {
  std::string scontrol = "scontrol";         // the program (found through PATH unless a path)
  std::chrono::milliseconds timeout{10000};  // each scontrol call
};

// Reads the node's state and acts as described at the top of this file. Errors: an empty node
// name or a reason without the prefix (kInvalidInput); scontrol missing (kNotFound), timing out
// (kTimeout), failing or printing what cannot be parsed (kUnavailable / kInvalidInput), with
// scontrol's own message.
Result<SlurmOutcome> apply_slurm_drain(const SlurmNodeAction& action, const CommandRunner& runner,
                                       const SlurmDrainOptions& options = {});

// Slurm's node name from the value of $SLURMD_NODENAME (null or empty: an error saying that
// --drain slurm runs where slurmd runs it: a HealthCheckProgram, prolog or epilog).
Result<std::string> slurm_node_name(const char* slurmd_nodename);

}  // namespace gpuvet
