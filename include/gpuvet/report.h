// gpuvet/report.h — render facts, diagnoses, benchmark and scaling results for people
// (terminal) and for programs (JSON).
//
// The JSON follows the contract in docs/json-schema.md ("gpuvet.report/1"):
// keys are added over time, never renamed; unknown values are null, never 0.
// Pure functions of their input; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "gpuvet/bench.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"
#include "gpuvet/fleet.h"
#include "gpuvet/gate.h"
#include "gpuvet/import.h"
#include "gpuvet/scale.h"
#include "gpuvet/watch.h"

namespace gpuvet {

struct JsonOptions {
  std::string command = "facts";
  int indent = 2;  // -1 for one line
};

std::string facts_to_json(const Facts& facts, const JsonOptions& options = {});

struct TextOptions {
  bool color = false;  // ANSI colours (see color_wanted)
  bool verbose = false;
  int width = 100;  // terminal columns the diagnose report wraps to (see text_width_wanted)
};

// What decides whether text output is coloured; the environment strings are null when unset.
struct ColorContext {
  bool no_color_flag = false;  // --no-color
  bool stdout_is_tty = false;
  const char* term = nullptr;      // $TERM
  const char* no_color = nullptr;  // $NO_COLOR
};
// Colour only on a terminal whose TERM is set and not "dumb", and only while NO_COLOR is
// unset or empty (no-color.org); --no-color always wins.
bool color_wanted(const ColorContext& context);

// What decides the width of the text output.
struct WidthContext {
  int tty_columns = 0;            // the terminal's columns when stdout is one (0: not, unknown)
  const char* columns = nullptr;  // $COLUMNS
};
// The terminal's width when known, else $COLUMNS when it is a number, else 100; clamped to
// [60, 200].
int text_width_wanted(const WidthContext& context);

// `text` with its control characters made visible, for a terminal: C0 controls other than
// tab and newline, and DEL, become "\x1b"-style escapes, C1 controls (U+0080–U+009F)
// "\u009b"-style escapes, and bytes that are not UTF-8 U+FFFD. Every text renderer below
// applies it to what it took from its input; JSON escapes the same characters itself.
std::string terminal_safe(std::string_view text);

// nvidia-smi-like GPU table, the pair matrix with P2P marks, NUMA affinity,
// processes, Xids and notes.
std::string render_facts_text(const Facts& facts, const TextOptions& options = {});

// The diagnosis as one gpuvet.report/1 document: the facts plus findings (with the
// catalog's title, meaning and decision), bottleneck, symptoms, verdict and notes.
std::string diagnosis_to_json(const Facts& facts, const Diagnosis& diagnosis,
                              const JsonOptions& options = {});

// The terminal report: verdict and bottleneck, then warning/critical findings worst first
// with evidence, meaning and decision, info findings one line each, symptom patterns, notes.
std::string render_diagnosis_text(const Facts& facts, const Diagnosis& diagnosis,
                                  const TextOptions& options = {});

// `gpuvet culprit`: a hung job's inputs judged (analyse_hang and the collective-hang-*
// findings of diagnose), the culprit first.
struct CulpritReport {
  HangAnalysis analysis;
  std::vector<Finding> findings;      // collective-hang-*, job-*, the Xids of the culprits' GPUs
  std::vector<std::string> inputs;    // "rank3.log: nccl-debug-log", one per input read
  std::vector<std::string> problems;  // inputs that could not be used (Facts::input_problems)
  std::vector<std::string> notes;
  Severity worst = Severity::kOk;
  int exit_code = 0;  // 0 no hang, 1 warning, 2 a hang, 3 unusable input
  std::size_t job_ranks = 0;  // ranks of the job's traces, Inspector output or step logs
};
// The text: the culprit ranks with who they are and why, the signature, the ranks' table per
// process group, the findings with meaning and decision, then notes.
std::string render_culprit_text(const CulpritReport& report, const TextOptions& options = {});
// The gpuvet.culprit/1 document (docs/culprit.md): verdict, culprits, groups with their
// ranks, findings (as in gpuvet.report/1), inputs, problems, notes, exit_code.
std::string culprit_to_json(const Facts& facts, const CulpritReport& report, int indent = 2);

// `gpuvet bench`: matrices like the reference tools print them, the P2P truth table, notes;
// and the gpuvet.bench/1 document (docs/json-schema.md).
std::string render_bench_text(const BenchReport& report);
std::string bench_to_json(const BenchReport& report, int indent = 2);
// The closing "Against expectations" section of `gpuvet bench`: the findings the measurements
// decide (catalog kByBench), worst first, or — only when there is none, CUDA ran, and no cell
// or P2P copy came back with wrong data — that every measured link is as fast as it should
// be. Wrong data without its finding still says data corruption. Empty without CUDA.
std::string render_bench_verdict(const BenchReport& report, const Diagnosis& diagnosis);

// `gpuvet scale`: a row per configuration, the sustained trace, notes; and gpuvet.scale/1.
std::string render_scale_text(const ScaleReport& report);
std::string scale_to_json(const ScaleReport& report, int indent = 2);

// `gpuvet findings`: one line per catalog entry; the Markdown is docs/findings.md (catalog,
// symptom patterns, thresholds).
// gate: `gpuvet.gate/1` JSON, the terminal report, JUnit XML (one test case per checked subject).
std::string gate_to_json(const GateReport& report, const JsonOptions& options);
std::string render_gate_text(const GateReport& report, const TextOptions& options = {});
std::string gate_junit_xml(const GateReport& report);

// fleet: `gpuvet.fleet/1` JSON and the terminal report of `gpuvet fleet report`; `database`
// names the history file.
std::string fleet_to_json(const FleetReport& report, std::string_view database,
                          const JsonOptions& options);
std::string render_fleet_text(const FleetReport& report, std::string_view database,
                              const TextOptions& options = {});

std::string render_catalog_text();
std::string catalog_to_markdown();

// `gpuvet formats`: what each recognised input is and fills; the Markdown is docs/formats.md.
std::string render_formats_text(std::span<const FormatInfo> formats);
std::string formats_to_markdown(std::span<const FormatInfo> formats);

// `gpuvet watch`: the header naming the watched GPUs, one line per interval (every GPU's SM
// clock, temperature and T.Limit margin, power against its limit, utilisation, the active
// clock-event reasons, and what the counters added since `previous`: PCIe replays, ECC
// errors, NVLinks lost), and the same interval as one gpuvet.watch/1 JSON line.
std::string render_watch_header(const Facts& facts, const std::vector<int>& gpus,
                                double interval_s);
std::string render_watch_interval(const WatchInterval& interval,
                                  const std::vector<GpuSample>& previous);
std::string watch_interval_to_json(const WatchInterval& interval);
// What the closing verdict judges: the findings the series decides (catalog kByWatch) and any
// critical condition of the node (a GPU that stopped answering, an uncorrectable ECC error).
bool watch_judges(const Finding& f);
// Its exit code, as diagnose's: 0, 1 warning, 2 critical.
int watch_exit_code(const Diagnosis& diagnosis);
// The closing verdict: the findings watch_judges, or that none fired.
std::string render_watch_verdict(const Facts& facts, const Diagnosis& diagnosis, double watched_s);
std::string watch_verdict_to_json(const Facts& facts, const Diagnosis& diagnosis, double watched_s);

}  // namespace gpuvet
