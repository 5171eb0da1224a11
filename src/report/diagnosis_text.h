// report/diagnosis_text.h — the sections of the diagnose terminal report, one function each,
// so render_diagnosis_text (diagnosis.cc) is the list of sections in order: headline, the
// one-line summary of every finding, the critical/warning blocks, the info lines, the symptom
// patterns, the notes. Every section wraps to TextOptions::width and never breaks a token.
// Internal to src/report; pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "report/terminal_text.h"

namespace gpuvet::report {

inline constexpr Style kRed{"\x1b[31m"};
inline constexpr Style kYellow{"\x1b[33m"};
inline constexpr Style kCyan{"\x1b[36m"};
inline constexpr Style kGreen{"\x1b[32m"};
inline constexpr Style kBold{"\x1b[1m"};
inline constexpr Style kDim{"\x1b[2m"};
inline constexpr Style kReset{"\x1b[0m"};

Style severity_color(Severity s);
std::string upper(std::string s);

// The report's options as its sections use them.
struct TextLayout {
  const TextOptions& options;
  Style c(Style s) const { return options.color ? s : kNoStyle; }
  std::size_t width() const;
  // `text` made terminal-safe, then wrapped (text_layout.h wrap_text) to width().
  std::string wrap(std::string_view text, std::size_t first_column, std::size_t indent) const;
};

// Findings with one id and one severity (one rule firing on several GPUs, or one instance
// per Xid code) are one group: one summary line, one block. Groups keep the findings' order.
struct FindingGroup {
  std::vector<const Finding*> members;  // in the diagnosis' order; never empty
  std::vector<std::string> subjects;    // every member's subjects, duplicates dropped
  const Finding& first() const { return *members.front(); }
};
std::vector<FindingGroup> group_findings(std::span<const Finding> findings);

// "1 critical, 3 warnings, 5 info": groups per severity, as the summary lists them.
std::string finding_counts(std::span<const FindingGroup> groups);

// One line per group, worst first: severity, id, compact subjects, the catalog's title.
void write_summary_list(TerminalText& o, const TextLayout& l, std::span<const FindingGroup> groups);
// A block per critical/warning group: title, seen (each member's evidence; beyond three, the
// first two and a count unless verbose), means, do. Returns how many blocks it wrote.
int write_finding_blocks(TerminalText& o, const TextLayout& l,
                         std::span<const FindingGroup> groups);
// "Also noted": one entry per info group with its evidence; verbose adds every member's
// evidence, the full subject list and the decision. Returns whether it wrote any.
bool write_info_lines(TerminalText& o, const TextLayout& l, std::span<const FindingGroup> groups);
void write_symptoms(TerminalText& o, const TextLayout& l, const Diagnosis& d);
// "Not checked / notes": the first 12 notes, all of them when verbose.
void write_notes(TerminalText& o, const TextLayout& l, const Diagnosis& d);

}  // namespace gpuvet::report
