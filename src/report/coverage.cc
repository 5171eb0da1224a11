// The coverage part of the diagnosis report: what was checked, on what, and what was not.
#include "report/coverage.h"

#include "report/text_layout.h"

#include <string>
#include <string_view>
#include <vector>

namespace gpuvet::report {
namespace {

using json = nlohmann::ordered_json;

constexpr Style kBold{"\x1b[1m"};
constexpr Style kReset{"\x1b[0m"};

bool counts(const CoverageItem& c) { return !c.optional; }

bool is_host(const CoverageItem& c) { return c.check.rfind("host-", 0) == 0; }

// The titles of the non-optional items with status `s`, the three host checks said as "host"
// when they share it.
std::vector<std::string> titles_with(const Diagnosis& d, CoverageStatus s) {
  std::size_t host_total = 0, host_same = 0;
  for (const auto& c : d.coverage)
    if (counts(c) && is_host(c)) {
      ++host_total;
      if (c.status == s) ++host_same;
    }
  const bool merge_host = host_total > 1 && host_same == host_total;
  std::vector<std::string> out;
  bool host_said = false;
  for (const auto& c : d.coverage) {
    if (!counts(c) || c.status != s) continue;
    if (merge_host && is_host(c)) {
      if (!host_said) out.emplace_back("host");
      host_said = true;
      continue;
    }
    out.push_back(c.title);
  }
  return out;
}

const char* status_label(CoverageStatus s) {
  switch (s) {
    case CoverageStatus::kChecked:
      return "checked";
    case CoverageStatus::kPartial:
      return "partly";
    case CoverageStatus::kNotChecked:
      return "not checked";
    case CoverageStatus::kNotApplicable:
      return "n/a";
  }
  return "";
}

json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

bool coverage_complete(const Diagnosis& d) {
  for (const auto& c : d.coverage)
    if (counts(c) && c.status != CoverageStatus::kChecked &&
        c.status != CoverageStatus::kNotApplicable)
      return false;
  return true;
}

std::string coverage_headline(const Diagnosis& d) {
  if (coverage_complete(d)) return {};
  const auto checked = titles_with(d, CoverageStatus::kChecked);
  const auto partly = titles_with(d, CoverageStatus::kPartial);
  const auto missing = titles_with(d, CoverageStatus::kNotChecked);
  const bool clean = d.worst <= Severity::kInfo && d.incomplete.empty();
  std::string ran = join(checked, ", ");
  if (!partly.empty()) ran += (ran.empty() ? "partly: " : "; partly: ") + join(partly, ", ");
  std::string s;
  if (ran.empty())
    s = "Nothing the playbook checks could be checked";
  else if (clean)
    s = "OK for what was checked (" + ran + ")";
  else
    s = "Checked: " + ran;
  if (!missing.empty())
    s += (ran.empty() ? ": not checked: " : "; not checked: ") + join(missing, ", ");
  return s + " — see Coverage";
}

void render_coverage_text(TerminalText& o, const Diagnosis& d, bool verbose, bool color,
                          std::size_t width) {
  if (d.coverage.empty()) return;
  auto c = [&](Style s) { return color ? s : kNoStyle; };
  constexpr std::size_t kLabel = 15;  // "  not checked  "
  o << "\n" << c(kBold) << "Coverage" << c(kReset) << "\n";
  auto label = [&](const char* text, bool first) {
    std::string l = first ? "  " + std::string(text) : std::string();
    l.resize(kLabel, ' ');
    return l;
  };
  // Checked (and not applicable) in one line each; -v names each one's evidence.
  for (CoverageStatus s : {CoverageStatus::kChecked, CoverageStatus::kNotApplicable}) {
    std::vector<std::string> names;
    for (const auto& item : d.coverage) {
      if (item.status != s) continue;
      std::string n = item.title;
      if (verbose && s == CoverageStatus::kChecked && !item.evidence.empty())
        n += " (" + item.evidence + ")";
      if (verbose && s == CoverageStatus::kNotApplicable && !item.missing.empty())
        n += " (" + item.missing + ")";
      names.push_back(n);
    }
    if (names.empty()) continue;
    o << label(status_label(s), true) << wrap_text(join(names, ", "), width, kLabel, kLabel)
      << "\n";
  }
  // Each gap with what is missing and the command that fills it.
  for (CoverageStatus s : {CoverageStatus::kPartial, CoverageStatus::kNotChecked}) {
    bool first = true;
    for (const auto& item : d.coverage) {
      if (item.status != s) continue;
      std::string text = item.title;
      if (verbose && !item.evidence.empty()) text += " (" + item.evidence + ")";
      if (!item.missing.empty()) text += " — " + item.missing;
      if (!item.how_to_get.empty()) text += ": " + item.how_to_get;
      o << label(status_label(s), first) << wrap_text(text, width, kLabel, kLabel + 2) << "\n";
      first = false;
    }
  }
}

json coverage_json(const Diagnosis& d) {
  json out = json::array();
  for (const auto& c : d.coverage)
    out.push_back({{"check", c.check},
                   {"title", c.title},
                   {"status", coverage_status_name(c.status)},
                   {"evidence", text_or_null(c.evidence)},
                   {"missing", text_or_null(c.missing)},
                   {"how_to_get", text_or_null(c.how_to_get)},
                   {"optional", c.optional}});
  return out;
}

}  // namespace gpuvet::report
