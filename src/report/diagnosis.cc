// The diagnosis report: JSON per the contract (docs/json-schema.md) and the terminal
// report an engineer reads in ten seconds — verdict and bottleneck first, then each
// warning/critical finding with evidence, meaning and decision, then the info lines, the
// recognised symptom patterns and what could not be checked.
#include <fmt/format.h>

#include <sstream>
#include <string>
#include <string_view>

#include "core/util.h"
#include "gpuvet/report.h"
#include "hw/subject_gpus.h"
#include "report/coverage.h"
#include "report/diagnosis_text.h"
#include "report/json_document.h"
#include "report/terminal_text.h"
#include "report/text_layout.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;
using report::kBold;
using report::kNoStyle;
using report::kReset;
using report::severity_color;
using report::Style;
using report::upper;

const SymptomPattern* find_symptom(std::string_view id) {
  for (const auto& s : symptom_catalog())
    if (id == s.id) return &s;
  return nullptr;
}

std::string machine_line(const Facts& facts) {
  std::vector<std::string> parts;
  if (facts.host.hostname) parts.push_back(*facts.host.hostname);
  if (!facts.gpus.empty()) {
    // A GPU with no name (one that stopped answering, a partial paste) makes no mix.
    std::optional<std::string> model;
    bool same = true;
    for (const auto& g : facts.gpus)
      if (g.name) {
        if (!model) model = g.name;
        same = same && *g.name == *model;
      }
    parts.push_back(
        fmt::format("{}× {}", facts.gpus.size(), same ? model.value_or("GPU") : "mixed GPUs"));
  } else {
    parts.push_back("no GPU facts");
  }
  if (facts.host.driver_version) parts.push_back("driver " + *facts.host.driver_version);
  if (!facts.imported.empty())
    parts.push_back(facts.host.collected_unix
                        ? "offline input captured " +
                              format_utc(*facts.host.collected_unix, "%Y-%m-%d %H:%M")
                        : std::string("offline input"));
  return report::join(parts, " · ");
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

nlohmann::ordered_json findings_json(const std::vector<Finding>& findings, const Facts& facts) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& f : findings) out.push_back(finding_json(f, facts));
  return out;
}

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
      {"decision", finding_decision(f)},
      {"decision_note", f.decision_note ? json(*f.decision_note) : json(nullptr)},
      {"bottleneck",
       bottleneck_name(f.bottleneck ? *f.bottleneck : (e ? e->bottleneck : Bottleneck::kUnknown))},
      {"article", e ? e->article : ""},
      {"gpus", gpus_json(f, facts)},
      {"observed", value_json(f.observed, false)},
      {"expected", value_json(f.expected, true)},
      {"action", action_name(finding_action(f))},
      {"fault", finding_fault(f) ? json(*finding_fault(f)) : json(nullptr)},
      {"acknowledged",
       f.acknowledged ? json{{"reason", f.acknowledged->reason},
                             {"expires_unix", f.acknowledged->expires_unix},
                             {"by", f.acknowledged->by ? json(*f.acknowledged->by) : json(nullptr)}}
                      : json(nullptr)},
  };
}

}  // namespace report

std::string diagnosis_to_json(const Facts& facts, const Diagnosis& d, const JsonOptions& options) {
  json doc = report::facts_document(facts, options);
  json findings = report::findings_json(d.findings, facts);
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

namespace {

// The machine line and the headline: verdict, finding counts, bottleneck and what decided it.
void write_headline(report::TerminalText& o, const report::TextLayout& l, const Facts& facts,
                    const Diagnosis& d, std::span<const report::FindingGroup> groups) {
  const auto c = [&](Style s) { return l.c(s); };
  o << c(kBold) << "gpuvet diagnose" << c(kReset) << " — " << l.wrap(machine_line(facts), 18, 4)
    << "\n";
  // The verdict word agrees with the exit code: a warning found in an input that could not be
  // read in full is exit 3, INCOMPLETE, with why on the next line.
  const bool clean = d.worst <= Severity::kInfo;
  const bool incomplete = diagnosis_exit_code(d) == 3;
  const std::string verdict = incomplete ? "INCOMPLETE"
                              : clean    ? "OK"
                                         : upper(severity_name(d.worst));
  std::string rest =
      "— " + report::finding_counts(groups) + " · bottleneck: " + bottleneck_name(d.bottleneck);
  // The deciding finding by name only: its evidence follows in full below.
  const report::FindingGroup* decisive = nullptr;
  for (const auto& g : groups)
    if (g.first().severity >= Severity::kWarning &&
        d.bottleneck_reason.rfind(g.first().id, 0) == 0) {
      decisive = &g;
      break;
    }
  if (decisive) {
    const std::string subjects = report::compact_subjects(decisive->subjects);
    rest += " (" + decisive->first().id + (subjects.empty() ? "" : " " + subjects) + ")";
  } else if (!d.bottleneck_reason.empty()) {
    rest += " — " + d.bottleneck_reason;
  }
  o << c(kBold) << c(severity_color(d.worst)) << verdict << c(kReset) << c(kBold) << " "
    << l.wrap(rest, report::display_width(verdict) + 1, 4) << c(kReset) << "\n";
  if (incomplete && !clean)  // (with nothing found, the bottleneck reason above says why)
    for (const auto& why : d.incomplete) o << "  incomplete: " << l.wrap(why, 14, 14) << "\n";
  if (const std::string cov = report::coverage_headline(d); !cov.empty())
    o << l.wrap(cov, 2, 2) << "\n";
}

}  // namespace

std::string render_diagnosis_text(const Facts& facts, const Diagnosis& d,
                                  const TextOptions& options) {
  // Every string from the input (host and GPU names, evidence, notes) is made safe on the way in.
  report::TerminalText o;
  const report::TextLayout l{options};
  const std::vector<report::FindingGroup> groups = report::group_findings(d.findings);
  write_headline(o, l, facts, d, groups);
  report::write_summary_list(o, l, groups);
  const int shown = report::write_finding_blocks(o, l, groups);
  const bool info = report::write_info_lines(o, l, groups);
  if (shown == 0 && !info && report::coverage_complete(d))
    o << "\nNo finding: nothing the playbook checks is wrong here.\n";
  report::write_symptoms(o, l, d);
  report::render_coverage_text(o, d, options.verbose, options.color,
                               static_cast<std::size_t>(options.width));
  report::write_notes(o, l, d);
  return o.str();
}

}  // namespace gpuvet
