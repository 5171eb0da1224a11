// The diagnosis report: JSON per the contract (docs/json-schema.md) and the terminal
// report an engineer reads in ten seconds — verdict and bottleneck first, then each
// warning/critical finding with evidence, meaning and decision, then the info lines, the
// recognised symptom patterns and what could not be checked.
#include <fmt/format.h>

#include <sstream>
#include <string>
#include <string_view>

#include "gpuvet/report.h"
#include "hw/subject_gpus.h"
#include "report/coverage.h"
#include "report/json_document.h"
#include "report/terminal_text.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;
using report::kNoStyle;
using report::Style;

constexpr Style kRed{"\x1b[31m"};
constexpr Style kYellow{"\x1b[33m"};
constexpr Style kCyan{"\x1b[36m"};
constexpr Style kGreen{"\x1b[32m"};
constexpr Style kBold{"\x1b[1m"};
constexpr Style kDim{"\x1b[2m"};
constexpr Style kReset{"\x1b[0m"};

const SymptomPattern* find_symptom(std::string_view id) {
  for (const auto& s : symptom_catalog())
    if (id == s.id) return &s;
  return nullptr;
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

// Greedy word wrap; continuation lines get `indent` spaces.
std::string wrap(std::string_view text, std::size_t width, std::size_t indent) {
  std::string out, line;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t j = text.find(' ', i);
    if (j == std::string_view::npos) j = text.size();
    const std::string_view word = text.substr(i, j - i);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    i = j;
  }
  return out + line;
}

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

std::string machine_line(const Facts& facts) {
  std::vector<std::string> parts;
  if (facts.host.hostname) parts.push_back(*facts.host.hostname);
  if (!facts.gpus.empty()) {
    std::string model = facts.gpus.front().name.value_or("GPU");
    bool same = true;
    for (const auto& g : facts.gpus) same = same && g.name.value_or("GPU") == model;
    parts.push_back(fmt::format("{}× {}", facts.gpus.size(), same ? model : "mixed GPUs"));
  } else {
    parts.push_back("no GPU facts");
  }
  if (facts.host.driver_version) parts.push_back("driver " + *facts.host.driver_version);
  if (!facts.imported.empty()) parts.push_back("offline input");
  return join(parts, " · ");
}

}  // namespace

namespace report {

namespace {

json value_json(const std::optional<FindingValue>& v, bool with_bound) {
  if (!v) return nullptr;
  json o = {{"quantity", v->quantity}, {"value", v->value}, {"unit", v->unit}};
  if (with_bound) o["bound"] = bound_name(v->bound);
  return o;
}

json gpus_json(const Finding& f, const Facts& facts) {
  json gpus = json::array();
  for (const auto& g : hw::subject_gpus(facts, f.subjects))
    gpus.push_back({{"index", g.index ? json(*g.index) : json(nullptr)},
                    {"uuid", g.uuid ? json(*g.uuid) : json(nullptr)},
                    {"pci_bus_id", g.pci_bus_id ? json(*g.pci_bus_id) : json(nullptr)}});
  return gpus;
}

}  // namespace

nlohmann::ordered_json finding_json(const Finding& f) { return finding_json(f, Facts{}); }

nlohmann::ordered_json finding_json(const Finding& f, const Facts& facts) {
  const CatalogEntry* e = find_catalog_entry(f.id);
  return {
      {"id", f.id},
      {"severity", severity_name(f.severity)},
      {"title", e ? e->title : ""},
      {"category", e ? e->category : "unknown"},
      {"step", e ? triage_step_name(e->step) : "unknown"},
      {"subjects", f.subjects},
      {"evidence", f.evidence},
      {"meaning", e ? e->meaning : ""},
      {"decision", e ? e->decision : ""},
      {"decision_note", f.decision_note ? json(*f.decision_note) : json(nullptr)},
      {"bottleneck",
       bottleneck_name(f.bottleneck ? *f.bottleneck : (e ? e->bottleneck : Bottleneck::kUnknown))},
      {"article", e ? e->article : ""},
      {"gpus", gpus_json(f, facts)},
      {"observed", value_json(f.observed, false)},
      {"expected", value_json(f.expected, true)},
      {"action", action_name(finding_action(f))},
  };
}

}  // namespace report

std::string diagnosis_to_json(const Facts& facts, const Diagnosis& d, const JsonOptions& options) {
  json doc = report::facts_document(facts, options);
  json findings = json::array();
  for (const auto& f : d.findings) findings.push_back(report::finding_json(f, facts));
  json symptoms = json::array();
  for (const auto& m : d.symptoms) {
    const SymptomPattern* s = find_symptom(m.id);
    symptoms.push_back({{"id", m.id},
                        {"title", s ? s->title : ""},
                        {"root_cause", s ? s->root_cause : ""},
                        {"fix", s ? s->fix : ""},
                        {"article", s ? s->article : ""},
                        {"because", m.because}});
  }
  doc["findings"] = findings;
  doc["bottleneck"] = bottleneck_name(d.bottleneck);
  doc["bottleneck_reason"] = d.bottleneck_reason;
  doc["symptoms"] = symptoms;
  doc["verdict"] = severity_name(d.worst);
  doc["exit_code"] = diagnosis_exit_code(d);
  doc["notes"] = d.notes;
  doc["coverage"] = report::coverage_json(d);
  return report::dump_document(doc, options.indent);
}

std::string render_diagnosis_text(const Facts& facts, const Diagnosis& d,
                                  const TextOptions& options) {
  auto c = [&](Style s) { return options.color ? s : kNoStyle; };
  constexpr std::size_t kWidth = 100;
  // Every string from the input (host and GPU names, evidence, notes) is made safe on the way in.
  report::TerminalText o;
  o << c(kBold) << "gpuvet diagnose" << c(kReset) << " — " << machine_line(facts) << "\n";
  const bool clean = d.worst <= Severity::kInfo;
  o << c(kBold) << c(severity_color(d.worst))
    << (clean ? (d.incomplete.empty() ? "OK" : "INCOMPLETE") : upper(severity_name(d.worst)))
    << c(kReset) << c(kBold) << "  bottleneck: " << bottleneck_name(d.bottleneck) << c(kReset);
  // The deciding finding by name only: its evidence follows in full just below.
  const Finding* decisive = nullptr;
  for (const auto& f : d.findings)
    if (f.severity >= Severity::kWarning && d.bottleneck_reason.rfind(f.id, 0) == 0) {
      decisive = &f;
      break;
    }
  if (decisive)
    o << " (" << decisive->id
      << (decisive->subjects.empty() ? "" : " " + join(decisive->subjects, ", ")) << ")";
  else if (!d.bottleneck_reason.empty())
    o << " — " << wrap(d.bottleneck_reason, kWidth - 30, 4);
  o << "\n";
  if (const std::string cov = report::coverage_headline(d); !cov.empty())
    o << wrap(cov, kWidth, 2) << "\n";

  int shown = 0;
  for (const auto& f : d.findings) {
    if (f.severity < Severity::kWarning) continue;
    const CatalogEntry* e = find_catalog_entry(f.id);
    o << "\n"
      << c(kBold) << c(severity_color(f.severity))
      << fmt::format("{:<9}", upper(severity_name(f.severity))) << c(kReset) << c(kBold) << f.id
      << c(kReset);
    if (!f.subjects.empty()) o << "  " << join(f.subjects, ", ");
    if (e) o << c(kDim) << "  [" << triage_step_name(e->step) << "]" << c(kReset);
    o << "\n";
    if (e) o << "  " << e->title << "\n";
    o << "  seen:    " << wrap(f.evidence, kWidth - 11, 11) << "\n";
    if (e) {
      o << "  means:   " << wrap(e->meaning, kWidth - 11, 11) << "\n";
      o << "  do:      "
        << wrap(f.decision_note ? *f.decision_note + " " + e->decision : e->decision, kWidth - 11,
                11)
        << "\n";
    } else if (f.decision_note) {
      o << "  do:      " << wrap(*f.decision_note, kWidth - 11, 11) << "\n";
    }
    ++shown;
  }
  bool info_header = false;
  for (const auto& f : d.findings) {
    if (f.severity >= Severity::kWarning) continue;
    if (!info_header) {
      o << "\n" << c(kBold) << "Also noted" << c(kReset) << "\n";
      info_header = true;
    }
    o << "  " << c(kCyan) << "info" << c(kReset) << "  " << f.id;
    if (!f.subjects.empty()) o << "  " << join(f.subjects, ", ");
    o << ": " << wrap(f.evidence, kWidth - 10, 8) << "\n";
    if (options.verbose) {
      if (const CatalogEntry* e = find_catalog_entry(f.id))
        o << "        do: "
          << wrap(f.decision_note ? *f.decision_note + " " + e->decision : e->decision, kWidth - 12,
                  12)
          << "\n";
    }
  }
  if (shown == 0 && !info_header && report::coverage_complete(d))
    o << "\nNo finding: nothing the playbook checks is wrong here.\n";

  if (!d.symptoms.empty()) {
    o << "\n" << c(kBold) << "Symptom patterns this matches" << c(kReset) << "\n";
    for (const auto& m : d.symptoms) {
      const SymptomPattern* s = find_symptom(m.id);
      if (!s) continue;
      o << "  " << s->article << ": \"" << s->title << "\"\n";
      o << "    because: " << wrap(join(m.because, ", "), kWidth - 13, 13) << "\n";
      o << "    cause:   " << wrap(s->root_cause, kWidth - 13, 13) << "\n";
      o << "    fix:     " << wrap(s->fix, kWidth - 13, 13) << "\n";
    }
  }
  report::render_coverage_text(o, d, options.verbose, options.color, kWidth);
  if (!d.notes.empty()) {
    o << "\n" << c(kBold) << "Not checked / notes" << c(kReset) << "\n";
    const std::size_t limit = options.verbose ? d.notes.size() : 12;
    for (std::size_t i = 0; i < d.notes.size() && i < limit; ++i)
      o << "  - " << wrap(d.notes[i], kWidth - 4, 4) << "\n";
    if (d.notes.size() > limit) o << "  … " << d.notes.size() - limit << " more (-v shows all)\n";
  }
  return o.str();
}

}  // namespace gpuvet
