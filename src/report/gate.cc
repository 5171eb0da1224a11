// The gate report: terminal text, `gpuvet.gate/1` JSON (docs/json-schema.md) and JUnit XML for
// fleet CI.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include <map>
#include <sstream>
#include <string>

#include "core/util.h"
#include "gpuvet/gate.h"
#include "gpuvet/report.h"
#include "report/json_document.h"
#include "report/terminal_text.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;

using report::opt;

json node_json(const NodePrint& n) {
  json gpus = json::array();
  for (const auto& g : n.gpus)
    gpus.push_back({{"index", g.index},
                    {"name", opt(g.name)},
                    {"uuid", opt(g.uuid)},
                    {"pci_bus_id", opt(g.pci_bus_id)},
                    {"pcie_gen_max", opt(g.pcie_gen_max)},
                    {"pcie_width_max", opt(g.pcie_width_max)},
                    {"pcie_width", opt(g.pcie_width)},
                    {"numa_node", opt(g.numa_node)},
                    {"nvlinks_up", opt(g.nvlinks_up)},
                    {"fabric", opt(g.fabric)},
                    {"vbios", opt(g.vbios)},
                    {"ecc_enabled", opt(g.ecc_enabled)},
                    {"power_limit_w", opt(g.power_limit_w)}});
  json pairs = json::array();
  for (const auto& p : n.pairs)
    pairs.push_back({{"subject", pair_label(p.a, p.b)},
                     {"a", p.a},
                     {"b", p.b},
                     {"path", p.path},
                     {"p2p", opt(p.p2p)}});
  json bandwidth = json::array();
  for (const auto& v : n.bandwidth)
    bandwidth.push_back({{"key", v.key},
                         {"subject", v.subject},
                         {"size_bytes", opt(v.size_bytes)},
                         {"gbps", v.gbps}});
  return {{"host", opt(n.host)},
          {"gpu_model", opt(n.gpu_model)},
          {"gpu_count", n.gpu_count},
          {"driver_version", opt(n.driver_version)},
          {"gpus", gpus},
          {"pairs", pairs},
          {"bandwidth", bandwidth},
          {"fingerprint",
           {{"topology", print_hash(n, "topology")},
            {"p2p", print_hash(n, "p2p")},
            {"links", print_hash(n, "links")}}}};
}

// The GPUs' identities as the node print has them, for the findings' "gpus".
Facts identities(const NodePrint& n) {
  Facts f;
  for (const auto& g : n.gpus) {
    GpuFacts x;
    x.index = g.index;
    x.uuid = g.uuid;
    x.pci_bus_id = g.pci_bus_id;
    f.gpus.push_back(std::move(x));
  }
  return f;
}

std::string upper(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

std::string gate_to_json(const GateReport& r, const JsonOptions& options) {
  json deviations = json::array();
  for (const auto& d : r.deviations)
    deviations.push_back({{"key", d.key},
                          {"subjects", d.subjects},
                          {"severity", severity_name(d.severity)},
                          {"expected", d.expected},
                          {"found", d.found},
                          {"unknown", d.unknown},
                          {"evidence", d.evidence}});
  json findings = json::array();
  const Facts ids = identities(r.node);
  for (const auto& f : r.diagnosis.findings) findings.push_back(report::finding_json(f, ids));
  std::vector<std::string> notes = r.notes;
  notes.insert(notes.end(), r.diagnosis.notes.begin(), r.diagnosis.notes.end());
  const json doc = {
      {"schema", "gpuvet.gate/1"},
      {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}, {"command", options.command}}},
      {"host", opt(r.node.host)},
      {"collected_unix", opt(r.collected_unix)},
      {"uptime_s", opt(r.uptime_s)},
      {"profile", gate_profile_name(r.options.profile)},
      {"fail_on", severity_name(r.options.fail_on)},
      {"exit_style", exit_style_name(r.options.exit_style)},
      {"baseline",
       {{"path", r.baseline_path}, {"digest", r.baseline_digest}, {"name", opt(r.baseline_name)}}},
      {"verdict", gate_verdict_name(r.verdict)},
      {"reason", r.reason},
      {"exit_code", r.exit_code},
      {"node", node_json(r.node)},
      {"deviations", deviations},
      {"findings", findings},
      {"worst", severity_name(r.diagnosis.worst)},
      {"notes", notes},
  };
  return report::dump_document(doc, options.indent);
}

std::string render_gate_text(const GateReport& r, const TextOptions& options) {
  using report::Style;
  const auto c = [&](Style s) { return options.color ? s : report::kNoStyle; };
  constexpr Style bold{"\x1b[1m"};
  constexpr Style reset{"\x1b[0m"};
  const Style colour = r.verdict == GateVerdict::kPass   ? Style{"\x1b[32m"}
                       : r.verdict == GateVerdict::kFail ? Style{"\x1b[31m"}
                                                         : Style{"\x1b[33m"};
  report::TerminalText o;
  o << c(bold) << "gpuvet gate" << c(reset) << " — " << r.node.host.value_or("unknown host") << ", "
    << r.node.gpu_count << " x " << r.node.gpu_model.value_or("unknown GPU") << ", profile "
    << gate_profile_name(r.options.profile) << "\n";
  o << "baseline " << r.baseline_path << "@" << r.baseline_digest.substr(0, 8)
    << (r.baseline_name ? " (" + *r.baseline_name + ")" : "") << "\n";
  o << c(bold) << c(colour) << upper(gate_verdict_name(r.verdict)) << c(reset) << "  " << r.reason
    << "\n";
  if (!r.deviations.empty()) {
    o << "\n" << c(bold) << "Differences from the baseline" << c(reset) << "\n";
    for (const auto& d : r.deviations)
      o << fmt::format("  {:<9} ", d.unknown ? "UNKNOWN" : upper(severity_name(d.severity)))
        << d.evidence << "\n";
  }
  bool header = false;
  for (const auto& f : r.diagnosis.findings) {
    if (f.id.rfind("baseline-", 0) == 0 || f.severity < Severity::kWarning) continue;
    if (!header) {
      o << "\n"
        << c(bold) << "Diagnose findings" << c(reset) << " (gpuvet diagnose explains each)\n";
      header = true;
    }
    std::string subjects;
    for (const auto& s : f.subjects) subjects += (subjects.empty() ? "" : ", ") + s;
    o << fmt::format("  {:<9} ", upper(severity_name(f.severity))) << f.id
      << (subjects.empty() ? "" : "  " + subjects) << ": " << f.evidence << "\n";
  }
  if (r.deviations.empty() && !header) o << "\nEvery value the baseline pins matches.\n";
  std::vector<std::string> notes = r.notes;
  if (options.verbose)
    notes.insert(notes.end(), r.diagnosis.notes.begin(), r.diagnosis.notes.end());
  if (!notes.empty()) {
    o << "\n" << c(bold) << "Notes" << c(reset) << "\n";
    for (const auto& n : notes) o << "  - " << n << "\n";
  }
  return o.str();
}

namespace {

// Text XML 1.0 can hold: C0 controls other than tab, newline and carriage return are not
// allowed even as character references (a CI system drops the whole file), and bytes that are
// not UTF-8 would make it unreadable: both become U+FFFD.
std::string xml_safe(std::string_view s) {
  std::string out;
  for (const char c : valid_utf8(s)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t' && c != '\n' && c != '\r')
      out += "\xEF\xBF\xBD";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string gate_junit_xml(const GateReport& r) {
  // One test case per subject the baseline checks (node, each GPU, each pair, each floor) and
  // one per diagnose finding at or above --fail-on, so fleet CI shows what failed where.
  std::map<std::string, std::vector<const Deviation*>> by_subject;
  by_subject["node"];
  for (const auto& g : r.node.gpus) by_subject[gpu_label(g.index)];
  for (const auto& d : r.deviations)
    by_subject[d.subjects.empty() ? "node" : d.subjects.front()].push_back(&d);
  pugi::xml_document doc;
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  auto suites = doc.append_child("testsuites");
  auto suite = suites.append_child("testsuite");
  const std::string host = xml_safe(r.node.host.value_or("unknown-host"));
  suite.append_attribute("name") = ("gpuvet gate " + host).c_str();
  int failures = 0, tests = 0, skipped = 0;
  for (const auto& [subject, devs] : by_subject) {
    auto tc = suite.append_child("testcase");
    ++tests;
    tc.append_attribute("classname") = ("gpuvet.gate." + host).c_str();
    tc.append_attribute("name") = xml_safe("baseline " + subject).c_str();
    std::string failed, unknown;
    for (const auto* d : devs) {
      std::string& into = d->unknown ? unknown : failed;
      if (!d->unknown && d->severity < r.options.fail_on) continue;
      into += (into.empty() ? "" : "\n") + xml_safe(d->evidence);
    }
    if (!failed.empty()) {
      auto f = tc.append_child("failure");
      f.append_attribute("message") = failed.substr(0, failed.find('\n')).c_str();
      f.append_attribute("type") = "baseline-deviation";
      f.text() = failed.c_str();
      ++failures;
    } else if (!unknown.empty()) {
      auto s = tc.append_child("skipped");
      s.append_attribute("message") = ("could not be checked: " + unknown).c_str();
      ++skipped;
    }
  }
  for (const auto& f : r.diagnosis.findings) {
    if (f.id.rfind("baseline-", 0) == 0 || f.severity < r.options.fail_on ||
        !gate_counts(f, r.options))
      continue;
    auto tc = suite.append_child("testcase");
    ++tests;
    ++failures;
    tc.append_attribute("classname") = ("gpuvet.gate." + host).c_str();
    std::string subjects;
    for (const auto& s : f.subjects) subjects += (subjects.empty() ? "" : ",") + s;
    tc.append_attribute("name") =
        xml_safe("diagnose " + f.id + (subjects.empty() ? "" : " " + subjects)).c_str();
    auto x = tc.append_child("failure");
    x.append_attribute("message") = xml_safe(f.evidence).c_str();
    x.append_attribute("type") = f.id.c_str();
  }
  suite.append_attribute("tests") = tests;
  suite.append_attribute("failures") = failures;
  suite.append_attribute("skipped") = skipped;
  suite.append_attribute("errors") = 0;
  std::ostringstream out;
  doc.save(out, "  ");
  return out.str();
}

}  // namespace gpuvet
