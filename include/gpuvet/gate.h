// gpuvet/gate.h — `gpuvet gate`: one node (live or saved) against its server model's baseline
// plus the diagnose rules, as a pass / fail / unknown verdict with a one-line reason and the
// exit code the system running it expects (Slurm, NHC, node-problem-detector, Nagios).
//
// The verdict: fail when a finding (a baseline deviation or a diagnose finding) is at or above
// --fail-on; else unknown when a value the baseline pins could not be read or the input does
// not allow a full verdict; else pass. Everything here is a pure function of its inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/baseline.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet {

enum class GateProfile { kQuick, kFull };  // facts only | facts and the bandwidth floors
enum class GateVerdict { kPass, kFail, kUnknown };
const char* gate_verdict_name(GateVerdict v);  // "pass", "fail", "unknown"
const char* gate_profile_name(GateProfile p);  // "quick", "full"

// Exit codes for the systems that run a gate:
//   gpuvet, nagios  0 ok/info, 1 warning, 2 critical, 3 unknown (the same scale)
//   npd             0 OK (pass), 1 NonOK (fail), 2 Unknown (node-problem-detector plugin)
//   slurm           0 healthy (pass), 1 fail, 2 unknown (a prolog or HealthCheckProgram)
// Input that cannot be used at all (a bad baseline, an unreadable --from) exits
// gate_unusable_exit_code(style): 3, or 2 for npd.
enum class ExitStyle { kGpuvet, kNagios, kNpd, kSlurm };
Result<ExitStyle> parse_exit_style(std::string_view name);
const char* exit_style_name(ExitStyle s);
int gate_unusable_exit_code(ExitStyle s);
// The line a line reader (NPD, NHC, a drain reason) gets when the input cannot be used:
// "gpuvet: unknown: <message>", ASCII (one '?' per other character), at most 80 characters.
std::string gate_unusable_line(std::string_view message);

struct GateOptions {
  GateProfile profile = GateProfile::kQuick;
  Severity fail_on = Severity::kCritical;  // --fail-on warning|critical
  ExitStyle exit_style = ExitStyle::kGpuvet;
  // --fail-on-host: transient host state (CPUs pegged, iowait, a saturated NIC, clocks under
  // load) counts in the verdict too. Off: it is shown, never fails a node.
  bool fail_on_host = false;
};

// The [gate] table of gpuvet's configuration file (/etc/gpuvet/gpuvet.toml): what a node's
// health check uses when its command line does not say (the flags win). Keys: baseline (a
// path), profile (quick|full), exit_style (gpuvet|nagios|npd|slurm), fail_on
// (warning|critical). Unknown keys and bad values are errors; a file without [gate] is empty.
struct GateConfig {
  std::optional<std::string> baseline;
  std::optional<std::string> profile;
  std::optional<std::string> exit_style;
  std::optional<std::string> fail_on;
};
Result<GateConfig> parse_gate_config(std::string_view toml_text, const std::string& origin);
Result<GateConfig> load_gate_config(const std::string& path);

// One cause, one line: for each GPU of `facts` that stopped answering, the deviations of its
// values (and of its pairs) become one critical deviation "GPU<i> lost (why)", first, whose
// evidence lists the values it made uncheckable.
void group_under_lost_gpus(const Facts& facts, std::vector<Deviation>& deviations);

// Whether a diagnose finding counts in the gate's verdict: every one, except transient host
// state (CPUs pegged, iowait, a saturated NIC, clocks under load) unless fail_on_host.
bool gate_counts(const Finding& f, const GateOptions& options);

struct GateReport {
  std::string baseline_path;
  std::string baseline_digest;
  std::optional<std::string> baseline_name;
  GateOptions options;
  NodePrint node;  // with the bandwidth measured (full profile)
  std::vector<Deviation> deviations;
  // The diagnose findings plus one finding per deviation (baseline-deviation,
  // baseline-bandwidth-below-floor, baseline-value-unknown), worst first.
  Diagnosis diagnosis;
  GateVerdict verdict = GateVerdict::kUnknown;
  std::string reason;  // one ASCII line of at most 80 characters, "gpuvet: …"
  // The first cause of a fail or unknown verdict in a few words ("GPU3 PCIe x8<x16", "GPU1
  // lost", "ecc-errors GPU0"), and how many causes there are: the Slurm drain reason.
  std::string brief;
  int causes = 0;
  int exit_code = 3;
  std::vector<std::string> notes;
  std::optional<std::int64_t> collected_unix;
  // The node's uptime then: with collected_unix, when it booted (the fleet tells a fault that
  // came back after a reboot from one that never went away).
  std::optional<double> uptime_s;
};

// Floors from a node's measured bandwidth: `fraction` of each value (0.9: 10 % headroom),
// with where it came from.
std::vector<Floor> floors_from(const std::vector<BandwidthValue>& bandwidth, double fraction,
                               std::string_view source);

// Judges a node. `facts` are the node's (live or imported); `diagnosis` is diagnose(facts)
// with bench measurements in it for the full profile; `bandwidth` what was measured.
GateReport judge_gate(const Baseline& baseline, const Facts& facts, Diagnosis diagnosis,
                      std::vector<BandwidthValue> bandwidth, const GateOptions& options);

}  // namespace gpuvet
