// The sections of the diagnose terminal report (diagnosis_text.h).
#include "report/diagnosis_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/util.h"
#include "report/text_layout.h"

namespace gpuvet::report {
namespace {

// A group with more members than this shows the first kShownMembers - 1 and a count.
constexpr std::size_t kShownMembers = 3;
constexpr std::size_t kNotesShown = 12;
// The summary's subject column is padded to the widest subjects up to this many columns.
constexpr std::size_t kSubjectColumnMax = 18;
// Room the title must have beside the aligned columns; with less it goes on its own line.
constexpr std::size_t kTitleMinRoom = 20;

std::string pad(std::string_view s, std::size_t columns) {
  std::string out(s);
  const std::size_t w = display_width(s);
  if (w < columns) out.append(columns - w, ' ');
  return out;
}

// The severity as the report labels it: upper case for warning and critical.
std::string severity_label(Severity s) {
  return s >= Severity::kWarning ? upper(severity_name(s)) : std::string(severity_name(s));
}

const char* title_of(const Finding& f) {
  const CatalogEntry* e = find_catalog_entry(f.id);
  return e ? e->title : "";
}

// The member's own decision notes (distinct, in order), then the catalog's decision.
std::string decision_of(const FindingGroup& g) {
  std::vector<std::string> notes;
  for (const Finding* f : g.members)
    if (f->decision_note && std::find(notes.begin(), notes.end(), *f->decision_note) == notes.end())
      notes.push_back(*f->decision_note);
  if (std::string d = finding_decision(g.first()); !d.empty()) notes.push_back(std::move(d));
  return join(notes, " ");
}

// The subjects of members [from, end), compacted: what "… N more" stands for.
std::string subjects_from(const FindingGroup& g, std::size_t from) {
  // A set beside the list: 130 816 pair findings of a 512-GPU topology were O(n²) here.
  std::vector<std::string> rest;
  std::unordered_set<std::string_view> seen;
  for (std::size_t i = from; i < g.members.size(); ++i)
    for (const auto& s : g.members[i]->subjects)
      if (seen.insert(s).second) rest.push_back(s);
  return compact_subjects(rest);
}

std::string utc_day_text(std::int64_t t) { return format_utc(t, "%Y-%m-%d"); }

// Each member's evidence from `column` on, every one on a line of its own at `indent`; a
// group of more than kShownMembers shows the first ones and a count unless verbose.
void write_evidence(TerminalText& o, const TextLayout& l, const FindingGroup& g, std::size_t column,
                    std::size_t indent) {
  const std::size_t n = g.members.size();
  const std::size_t shown = l.options.verbose || n <= kShownMembers ? n : kShownMembers - 1;
  for (std::size_t i = 0; i < shown; ++i) {
    if (i > 0) o << "\n" << std::string(indent, ' ');
    const Finding& f = *g.members[i];
    std::string text = f.evidence;
    if (f.acknowledged)  // said with the evidence: acknowledged, not gone
      text += fmt::format(" [acknowledged until {}: {}]",
                          utc_day_text(f.acknowledged->expires_unix), f.acknowledged->reason);
    o << l.wrap(text, i == 0 ? column : indent, indent);
  }
  if (shown < n) {
    const std::string subjects = subjects_from(g, shown);
    o << "\n"
      << std::string(indent, ' ')
      << l.wrap(fmt::format("… {} more like it{}{} (-v shows each)", n - shown,
                            subjects.empty() ? "" : ": ", subjects),
                indent, indent);
  }
}

// "power-throttle (GPU0, GPU1, …, GPU7)", as the rules name a symptom's findings, with the
// subjects compacted: "power-throttle (GPU0–7)".
std::string compact_because(const std::string& because) {
  const std::size_t open = because.find(" (");
  if (open == std::string::npos || because.back() != ')') return because;
  std::vector<std::string> subjects;
  const std::string_view inside =
      std::string_view(because).substr(open + 2, because.size() - open - 3);
  for (std::size_t i = 0; i <= inside.size();) {
    std::size_t j = inside.find(", ", i);
    if (j == std::string_view::npos) j = inside.size();
    subjects.emplace_back(inside.substr(i, j - i));
    i = j + 2;
  }
  return because.substr(0, open) + " (" + compact_subjects(subjects) + ")";
}

}  // namespace

Style severity_color(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return kRed;
    case Severity::kWarning:
      return kYellow;
    case Severity::kInfo:
      return kCyan;
    case Severity::kOk:
      return kGreen;
  }
  return kNoStyle;
}

std::string upper(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

std::size_t TextLayout::width() const {
  // Below this the labels alone fill the line; the CLI never asks for less than 60.
  return static_cast<std::size_t>(std::max(options.width, 40));
}

std::string TextLayout::wrap(std::string_view text, std::size_t first_column,
                             std::size_t indent) const {
  return wrap_text(terminal_safe(text), width(), first_column, indent);
}

std::vector<FindingGroup> group_findings(std::span<const Finding> findings) {
  std::vector<FindingGroup> groups;
  std::vector<std::unordered_set<std::string_view>> seen;  // per group: its subjects, to dedupe
  for (const auto& f : findings) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const FindingGroup& g) {
      return g.first().id == f.id && g.first().severity == f.severity;
    });
    if (it == groups.end()) {
      groups.push_back({});
      seen.emplace_back();
      it = std::prev(groups.end());
    }
    it->members.push_back(&f);
    auto& subjects = seen[static_cast<std::size_t>(it - groups.begin())];
    for (const auto& s : f.subjects)
      if (subjects.insert(s).second) it->subjects.push_back(s);
  }
  return groups;
}

std::string finding_counts(std::span<const FindingGroup> groups) {
  int critical = 0, warning = 0, info = 0, acknowledged = 0;
  for (const auto& g : groups) {
    const Severity s = g.first().severity;
    if (g.first().acknowledged)
      ++acknowledged;
    else if (s == Severity::kCritical)
      ++critical;
    else if (s == Severity::kWarning)
      ++warning;
    else
      ++info;
  }
  return fmt::format("{} critical, {} warning{}, {} info{}", critical, warning,
                     warning == 1 ? "" : "s", info,
                     acknowledged ? fmt::format(", {} acknowledged", acknowledged) : "");
}

void write_summary_list(TerminalText& o, const TextLayout& l,
                        std::span<const FindingGroup> groups) {
  if (groups.empty()) return;
  std::size_t id_width = 0, subject_width = 0;
  std::vector<std::string> compact;
  for (const auto& g : groups) {
    compact.push_back(compact_subjects(g.subjects));
    id_width = std::max(id_width, display_width(g.first().id));
    subject_width =
        std::max(subject_width, std::min(display_width(compact.back()), kSubjectColumnMax));
  }
  constexpr std::size_t kSeverityWidth = 8;  // "CRITICAL"
  o << "\n";
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const Finding& f = groups[i].first();
    const std::string label = severity_label(f.severity);
    const std::string title = terminal_safe(title_of(f));
    const std::string subjects = terminal_safe(compact[i]);
    const std::size_t subjects_column = 2 + kSeverityWidth + 2 + id_width + 2;
    const std::size_t title_column =
        subjects_column + std::max(subject_width, display_width(subjects)) + 2;
    o << "  " << l.c(severity_color(f.severity)) << pad(label, kSeverityWidth) << l.c(kReset)
      << "  ";
    if (title_column + kTitleMinRoom <= l.width()) {
      o << pad(terminal_safe(f.id), id_width) << "  "
        << pad(subjects, title_column - subjects_column - 2) << "  "
        << wrap_text(title, l.width(), title_column, title_column) << "\n";
      continue;
    }
    // Too narrow for columns: the id, the subjects beside it or under it, then the title.
    const std::size_t column = 2 + kSeverityWidth + 2 + display_width(f.id);
    o << f.id;
    if (!subjects.empty()) {
      if (column + 2 + display_width(subjects) <= l.width())
        o << "  " << subjects;
      else
        o << "\n      " << wrap_text(subjects, l.width(), 6, 6);
    }
    o << "\n";
    if (!title.empty()) o << "      " << wrap_text(title, l.width(), 6, 6) << "\n";
  }
}

int write_finding_blocks(TerminalText& o, const TextLayout& l,
                         std::span<const FindingGroup> groups) {
  int written = 0;
  for (const auto& g : groups) {
    const Finding& f = g.first();
    if (f.severity < Severity::kWarning) continue;
    const CatalogEntry* e = find_catalog_entry(f.id);
    const std::string label = fmt::format("{:<9}", severity_label(f.severity));
    const std::string subjects = terminal_safe(compact_subjects(g.subjects));
    const std::string step = e ? fmt::format("[{}]", triage_step_name(e->step)) : "";
    o << "\n"
      << l.c(kBold) << l.c(severity_color(f.severity)) << label << l.c(kReset) << l.c(kBold) << f.id
      << l.c(kReset);
    const std::size_t one_line = display_width(label) + display_width(f.id) +
                                 (subjects.empty() ? 0 : 2 + display_width(subjects)) +
                                 (step.empty() ? 0 : 2 + step.size());
    const bool subjects_inline = one_line <= l.width();
    if (subjects_inline && !subjects.empty()) o << "  " << subjects;
    if (!step.empty()) o << l.c(kDim) << "  " << step << l.c(kReset);
    o << "\n";
    if (e) o << "  " << l.wrap(e->title, 2, 2) << "\n";
    // The full list when verbose and the compact form hides some; the compact form when it
    // did not fit on the first line.
    const std::string full = join(g.subjects, ", ");
    const bool full_differs = full != compact_subjects(g.subjects);
    if (!subjects_inline || (l.options.verbose && full_differs))
      o << "  subjects: "
        << (l.options.verbose ? l.wrap(full, 12, 12) : wrap_text(subjects, l.width(), 12, 12))
        << "\n";
    o << "  seen:    ";
    write_evidence(o, l, g, 11, 11);
    o << "\n";
    if (e) o << "  means:   " << l.wrap(e->meaning, 11, 11) << "\n";
    const std::string decision = decision_of(g);
    if (!decision.empty()) o << "  do:      " << l.wrap(decision, 11, 11) << "\n";
    ++written;
  }
  return written;
}

bool write_info_lines(TerminalText& o, const TextLayout& l, std::span<const FindingGroup> groups) {
  bool any = false;
  for (const auto& g : groups) {
    const Finding& f = g.first();
    if (f.severity >= Severity::kWarning) continue;
    if (!any) o << "\n" << l.c(kBold) << "Also noted" << l.c(kReset) << "\n";
    any = true;
    const std::string subjects = compact_subjects(g.subjects);
    // "  info  ID  SUBJECTS: evidence", wrapped under the id.
    o << "  " << l.c(kCyan) << "info" << l.c(kReset) << "  " << f.id;
    std::size_t column = 8 + display_width(f.id);
    if (!subjects.empty()) {
      const std::string wrapped = l.wrap(subjects + ":", column + 2, 8);
      o << "  " << wrapped;
      const auto last_line = wrapped.rfind('\n');
      column = last_line == std::string::npos
                   ? column + 2 + display_width(wrapped)
                   : display_width(std::string_view(wrapped).substr(last_line + 1));
    } else {
      o << ":";
      ++column;
    }
    // The evidence begins beside the subjects, so wrap_text sees it as following a label.
    o << " ";
    write_evidence(o, l, g, column + 1, 8);
    o << "\n";
    if (l.options.verbose) {
      const std::string full = join(g.subjects, ", ");
      if (full != subjects) o << "        subjects: " << l.wrap(full, 18, 18) << "\n";
      const std::string decision = decision_of(g);
      if (!decision.empty()) o << "        do: " << l.wrap(decision, 12, 12) << "\n";
    }
  }
  return any;
}

void write_symptoms(TerminalText& o, const TextLayout& l, const Diagnosis& d) {
  if (d.symptoms.empty()) return;
  o << "\n" << l.c(kBold) << "Symptom patterns this matches" << l.c(kReset) << "\n";
  for (const auto& m : d.symptoms) {
    const auto catalog = symptom_catalog();
    const auto s = std::find_if(catalog.begin(), catalog.end(),
                                [&](const SymptomPattern& p) { return m.id == p.id; });
    if (s == catalog.end()) continue;
    o << "  " << l.wrap(fmt::format("{}: \"{}\"", s->article, s->title), 2, 4) << "\n";
    std::vector<std::string> because = m.because;
    if (!l.options.verbose)
      for (auto& b : because) b = compact_because(b);
    o << "    because: " << l.wrap(join(because, ", "), 13, 13) << "\n";
    o << "    cause:   " << l.wrap(s->root_cause, 13, 13) << "\n";
    o << "    fix:     " << l.wrap(s->fix, 13, 13) << "\n";
  }
}

void write_notes(TerminalText& o, const TextLayout& l, const Diagnosis& d) {
  if (d.notes.empty()) return;
  o << "\n" << l.c(kBold) << "Not checked / notes" << l.c(kReset) << "\n";
  const std::size_t limit = l.options.verbose ? d.notes.size() : kNotesShown;
  for (std::size_t i = 0; i < d.notes.size() && i < limit; ++i)
    o << "  - " << l.wrap(d.notes[i], 4, 4) << "\n";
  if (d.notes.size() > limit) o << "  … " << d.notes.size() - limit << " more (-v shows all)\n";
}

}  // namespace gpuvet::report
