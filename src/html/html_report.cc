// html/html_report.cc — `gpuvet report --html`: the page, section by section, from the
// recognised documents. Every string taken from an input goes through escape() (html/svg.h)
// on its way into the page, in HTML text, attributes and SVG alike.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/small_file.h"
#include "gpuvet/facts.h"
#include "gpuvet/html_report.h"
#include "html/charts.h"
#include "html/documents.h"
#include "html/svg.h"

namespace gpuvet {

namespace {

using html::array;
using html::Document;
using html::DocumentKind;
using html::escape;
using html::json;
using html::member;
using html::number;
using html::text;

constexpr std::size_t kMaxInputBytes = std::size_t{1} << 30;

const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1d232a;
 margin:0;background:#f6f7f9}
main{max-width:1080px;margin:0 auto;padding:16px 20px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d5db;
 padding-bottom:4px}h3{font-size:15px;margin:14px 0 6px}
code,.mono{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0 10px;background:#fff;font-size:13px}
th,td{border:1px solid #d9dde2;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{background:#fde2e1}.warn{background:#fff1d6}.good{background:#e3f4e1}.muted{color:#68717c}
nav{font-size:13px;margin:6px 0 12px}nav a{margin-right:12px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#fff;border:1px solid #d9dde2;border-left:6px solid #9aa3ad;border-radius:4px;
 padding:8px 12px;min-width:230px;flex:1 1 300px}
.card h3{margin:0 0 4px;font-size:14px}
.badge{display:inline-block;border-radius:3px;padding:0 6px;color:#fff;font-size:12px;font-weight:600;
 text-transform:uppercase;letter-spacing:.03em;background:#78838f}
.badge.critical,.badge.fail{background:#c62828}.badge.warning{background:#ef6c00}
.badge.info{background:#1565c0}.badge.ok,.badge.pass{background:#2e7d32}.badge.unknown{background:#6d4c41}
.finding{background:#fff;border:1px solid #d9dde2;border-left:6px solid #9aa3ad;border-radius:4px;
 margin:8px 0;padding:8px 12px}
.finding h3{margin:0 0 6px}.finding dl{display:grid;grid-template-columns:100px 1fr;gap:2px 10px;margin:0}
.finding dt{color:#5b6570;font-weight:600}.finding dd{margin:0}
/* after .card and .finding: their border-left shorthand would reset the colour */
.sev-critical{border-left-color:#c62828}.sev-warning{border-left-color:#ef6c00}
.sev-info{border-left-color:#1565c0}.sev-ok,.sev-pass{border-left-color:#2e7d32}
.sev-fail{border-left-color:#c62828}.sev-unknown{border-left-color:#6d4c41}
.subject{display:inline-block;background:#eef1f4;border-radius:3px;padding:0 5px;margin-right:4px;
 font-size:12.5px}
figure{margin:8px 0 14px;background:#fff;border:1px solid #d9dde2;border-radius:4px;padding:6px;
 overflow-x:auto}figcaption{font-size:12.5px;color:#5b6570;margin:2px 4px}
svg text{font-family:system-ui,"DejaVu Sans",sans-serif;font-size:11px;fill:#333}
svg .figure-title{font-size:13px;font-weight:600}svg .cell-text{font-size:12px;font-weight:600}
svg .cell-subtext{font-size:10px}svg .empty{font-size:13px;fill:#888}svg .legend{font-size:11.5px}
details{margin:4px 0}summary{cursor:pointer;color:#37474f}
footer{margin-top:32px;font-size:12px;color:#68717c}
)";

int severity_rank(const std::string& s) {
  if (s == "critical") return 3;
  if (s == "warning") return 2;
  if (s == "info") return 1;
  if (s == "ok") return 0;
  return -1;
}

std::string num_text(double v, int decimals = 1) { return html::num(v, decimals); }

std::string opt_num(const json& o, std::string_view key, int decimals = 1,
                    std::string_view unit = {}) {
  const auto v = number(o, key);
  if (!v) return "–";
  return num_text(*v, decimals) + (unit.empty() ? "" : " " + std::string(unit));
}

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return num_text(b, b < 10 ? 1 : 0) + " " + units[u];
}

std::string utc_text(double unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return "?";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// A string of an input, or a dash for nothing, escaped.
std::string cell(const std::string& s) { return s.empty() ? "–" : escape(s); }

std::string badge(const std::string& severity) {
  return "<span class=\"badge " + escape(severity) + "\">" + escape(severity) + "</span>";
}

std::string host_of(const Document& d) {
  if (d.kind == DocumentKind::kGate) return text(d.doc, "host");
  if (const json* h = member(d.doc, "host"); h && h->is_object()) return text(*h, "hostname");
  return "";
}

bool is_report(const Document& d) {
  return d.kind == DocumentKind::kDiagnose || d.kind == DocumentKind::kFacts ||
         d.kind == DocumentKind::kWatchRecord;
}

// ---------------------------------------------------------------- findings

struct FindingRow {
  const json* finding;
  std::vector<std::string> sources;
  int rank;
};

std::string subjects_of(const json& f) {
  std::string out;
  for (const auto& s : array(f, "subjects"))
    if (s.is_string()) out += "<span class=\"subject\">" + escape(s.get<std::string>()) + "</span>";
  return out;
}

std::string compared_text(const json& f) {
  const json* o = member(f, "observed");
  const json* x = member(f, "expected");
  if (!o || !o->is_object()) return "";
  std::string unit = text(*o, "unit");
  std::string out = opt_num(*o, "value", 2, unit);
  if (x && x->is_object()) {
    std::string bound = text(*x, "bound");
    if (bound == "at-least") bound = "at least";
    if (bound == "at-most") bound = "at most";
    out += " (expected " + (bound.empty() ? "" : bound + " ") +
           opt_num(*x, "value", 2, text(*x, "unit")) + ")";
  }
  return escape(text(*o, "quantity")) + ": " + escape(out);
}

std::string render_finding(const FindingRow& row, std::size_t n) {
  const json& f = *row.finding;
  const std::string id = text(f, "id");
  const std::string sev = text(f, "severity");
  std::string out = fmt::format(
      "<article class=\"finding sev-{0}\" id=\"finding-{1}\" data-finding=\"{2}\" "
      "data-severity=\"{0}\">\n<h3>{3} <code>{2}</code> {4} {5}</h3>\n<dl>\n",
      escape(sev), n, escape(id), badge(sev), escape(text(f, "title")), subjects_of(f));
  auto row_if = [&out](const char* term, const std::string& html_value) {
    if (!html_value.empty())
      out += "<dt>" + std::string(term) + "</dt><dd>" + html_value + "</dd>\n";
  };
  row_if("Evidence", escape(text(f, "evidence")));
  row_if("Compared", compared_text(f));
  row_if("Meaning", escape(text(f, "meaning")));
  std::string decision = escape(text(f, "decision"));
  if (const std::string note = text(f, "decision_note"); !note.empty())
    decision += " <em>" + escape(note) + "</em>";
  row_if("Decision", decision);
  row_if("Action",
         text(f, "action").empty() ? "" : "<code>" + escape(text(f, "action")) + "</code>");
  std::string gpus;
  for (const auto& g : array(f, "gpus")) {
    if (!g.is_object()) continue;
    const auto index = number(g, "index");
    gpus += (gpus.empty() ? "" : "; ") +
            (index ? "GPU" + num_text(*index, 0) : std::string("GPU ?")) + " " +
            escape(text(g, "uuid")) + " " + escape(text(g, "pci_bus_id"));
  }
  row_if("GPUs", gpus.empty() ? "" : "<span class=\"mono\">" + gpus + "</span>");
  std::string from;
  for (const auto& s : row.sources) from += (from.empty() ? "" : ", ") + escape(s);
  row_if("From", "<span class=\"muted\">" + from + "</span>");
  return out + "</dl>\n</article>\n";
}

std::string findings_section(const std::vector<Document>& docs) {
  std::vector<FindingRow> rows;
  std::map<std::string, std::size_t> seen;
  for (const auto& d : docs) {
    if (d.kind == DocumentKind::kBench || d.kind == DocumentKind::kScale ||
        d.kind == DocumentKind::kFacts)
      continue;
    for (const auto& f : array(d.doc, "findings")) {
      if (!f.is_object()) continue;
      std::string key = text(f, "id") + "\x1f" + text(f, "evidence");
      for (const auto& s : array(f, "subjects"))
        if (s.is_string()) key += "\x1f" + s.get<std::string>();
      if (auto it = seen.find(key); it != seen.end()) {
        rows[it->second].sources.push_back(d.name);
        continue;
      }
      seen[key] = rows.size();
      rows.push_back({&f, {d.name}, severity_rank(text(f, "severity"))});
    }
  }
  // Worst first; within a severity the documents' own (triage) order.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const FindingRow& a, const FindingRow& b) { return a.rank > b.rank; });
  std::string out = "<section id=\"findings\">\n<h2>Findings</h2>\n";
  if (rows.empty()) {
    bool judged = std::any_of(docs.begin(), docs.end(), [](const Document& d) {
      return d.kind == DocumentKind::kDiagnose || d.kind == DocumentKind::kGate ||
             d.kind == DocumentKind::kWatchRecord || d.kind == DocumentKind::kWatchLines;
    });
    out += judged ? "<p class=\"good\">No finding in these inputs.</p>\n"
                  : "<p class=\"muted\">None of these inputs carries findings (diagnose, gate and "
                    "watch outputs do).</p>\n";
  }
  std::map<int, int> counts;
  for (const auto& r : rows) ++counts[r.rank];
  if (!rows.empty())
    out += fmt::format("<p>{} critical, {} warning, {} info, worst first.</p>\n", counts[3],
                       counts[2], counts[1] + counts[0]);
  for (std::size_t i = 0; i < rows.size(); ++i) out += render_finding(rows[i], i + 1);
  return out + "</section>\n";
}

// ---------------------------------------------------------------- summary

std::string summary_card(const Document& d) {
  std::string cls = "card", head, body;
  const json& doc = d.doc;
  switch (d.kind) {
    case DocumentKind::kDiagnose:
    case DocumentKind::kWatchRecord: {
      const std::string verdict = text(doc, "verdict");
      cls += " sev-" + escape(verdict);
      head = (d.kind == DocumentKind::kDiagnose ? "Diagnosis " : "Watch recording ") +
             (verdict.empty() ? "" : badge(verdict));
      body += "<p>Bottleneck: <b>" + cell(text(doc, "bottleneck")) + "</b>";
      if (const std::string why = text(doc, "bottleneck_reason"); !why.empty())
        body += " — " + escape(why);
      body += "</p>";
      if (const auto code = number(doc, "exit_code"))
        body += "<p class=\"muted\">exit code " + num_text(*code, 0) + "</p>";
      std::string symptoms;
      for (const auto& s : array(doc, "symptoms"))
        if (s.is_object())
          symptoms += "<li><b>" + escape(text(s, "title")) +
                      "</b>: " + escape(text(s, "root_cause")) + " <i>Fix:</i> " +
                      escape(text(s, "fix")) + "</li>";
      if (!symptoms.empty()) body += "<p>Symptom patterns:</p><ul>" + symptoms + "</ul>";
      if (d.kind == DocumentKind::kWatchRecord)
        body += fmt::format("<p>{} GPU samples, {} host samples</p>", array(doc, "samples").size(),
                            array(doc, "host_samples").size());
      break;
    }
    case DocumentKind::kFacts:
      head = "Facts";
      body = fmt::format("<p>{} GPU(s), {} pair(s)</p>", array(doc, "gpus").size(),
                         html::pair_count(doc));
      break;
    case DocumentKind::kGate: {
      const std::string verdict = text(doc, "verdict");
      cls += " sev-" + escape(verdict);
      head = "Gate " + (verdict.empty() ? "" : badge(verdict));
      body += "<p class=\"mono\">" + cell(text(doc, "reason")) + "</p>";
      if (const json* b = member(doc, "baseline"); b && b->is_object())
        body += "<p>Baseline: " + cell(text(*b, "name")) + " <span class=\"muted mono\">" +
                escape(text(*b, "path")) + "</span></p>";
      body += "<p class=\"muted\">profile " + cell(text(doc, "profile")) + ", fails on " +
              cell(text(doc, "fail_on")) + "</p>";
      break;
    }
    case DocumentKind::kBench: {
      head = "Benchmarks";
      const json* cuda = member(doc, "cuda_available");
      body =
          fmt::format("<p>{} measurement(s){}</p>", array(doc, "results").size(),
                      cuda && cuda->is_boolean() && !cuda->get<bool>() ? ", CUDA unavailable" : "");
      break;
    }
    case DocumentKind::kScale:
      head = "Scaling";
      body = fmt::format("<p>{} configuration(s)</p>", array(doc, "results").size());
      break;
    case DocumentKind::kWatchLines:
      head = "Watch (JSON lines)";
      body = fmt::format("<p>{} GPU samples over {} s; {} finding(s) in its verdict</p>",
                         array(doc, "samples").size(), opt_num(doc, "watched_s", 1),
                         array(doc, "findings").size());
      break;
  }
  std::string host = host_of(d);
  return "<div class=\"" + cls + "\"><h3>" + head + "</h3>" +
         (host.empty() ? "" : "<p>Host <b>" + escape(host) + "</b></p>") + body +
         "<p class=\"muted mono\">" + escape(d.name) + "</p></div>\n";
}

std::string inputs_table(const std::vector<Document>& docs) {
  std::string out =
      "<table><tr><th>input</th><th>what</th><th>host</th><th>collected</th>"
      "<th>gpuvet</th></tr>\n";
  for (const auto& d : docs) {
    std::optional<double> when = number(d.doc, "collected_unix");
    if (const json* h = member(d.doc, "host"); !when && h && h->is_object())
      when = number(*h, "collected_unix");
    std::string version;
    if (const json* t = member(d.doc, "tool"); t && t->is_object())
      version =
          text(*t, "version") + (text(*t, "command").empty() ? "" : " " + text(*t, "command"));
    out += "<tr><td class=\"mono\">" + escape(d.name) + "</td><td>" +
           escape(html::document_kind_description(d.kind)) + "</td><td>" + cell(host_of(d)) +
           "</td><td>" + (when ? utc_text(*when) : "–") + "</td><td>" + cell(version) +
           "</td></tr>\n";
  }
  return out + "</table>\n";
}

// ---------------------------------------------------------------- coverage

// `measured_here`: the page holds a bench or scale document, so the diagnosis's own
// "measurements: not checked" is answered on this page and is not shown as a gap beside it.
std::string coverage_table(const json& doc, bool measured_here) {
  const json& cov = array(doc, "coverage");
  if (cov.empty()) return "";
  std::string out =
      "<table class=\"coverage\"><tr><th>check</th><th>status</th><th>on</th>"
      "<th>missing</th><th>how to get it</th></tr>\n";
  for (const auto& c : cov) {
    if (!c.is_object()) continue;
    std::string status = text(c, "status");
    std::string evidence = text(c, "evidence"), missing = text(c, "missing"),
                how = text(c, "how_to_get");
    if (measured_here && text(c, "check") == "measurements" && status == "not-checked") {
      status = "checked";
      evidence = "the bench / scale results on this page";
      missing.clear();
      how.clear();
    }
    const char* cls = status == "checked"       ? "good"
                      : status == "partial"     ? "warn"
                      : status == "not-checked" ? "bad"
                                                : "muted";
    out += "<tr><td>" + cell(text(c, "title")) + "</td><td class=\"" + cls + "\">" + cell(status) +
           "</td><td>" + cell(evidence) + "</td><td>" + cell(missing) + "</td><td>" + cell(how) +
           "</td></tr>\n";
  }
  return out + "</table>\n";
}

// ---------------------------------------------------------------- GPUs, topology, P2P

std::string gpu_table(const json& gpus) {
  std::string out =
      "<table class=\"gpus\"><tr><th>GPU</th><th>name</th><th>UUID / bus id</th><th>PCIe</th>"
      "<th>NUMA</th><th>SM MHz</th><th>°C (margin)</th><th>power W</th><th>memory</th>"
      "<th>ECC</th><th>NVLink</th><th>clock events</th></tr>\n";
  for (const auto& g : gpus) {
    if (!g.is_object()) continue;
    const json empty = json::object();
    auto sub = [&](const char* k) -> const json& {
      const json* v = member(g, k);
      return v && v->is_object() ? *v : empty;
    };
    const json &pcie = sub("pcie"), &clocks = sub("clocks"), &thermal = sub("thermal"),
               &power = sub("power"), &memory = sub("memory"), &ecc = sub("ecc"),
               &events = sub("clock_events");
    std::string row = "<tr data-gpu=\"" + opt_num(g, "index", 0) + "\">";
    const std::string unresponsive = text(g, "unresponsive");
    row += "<td>GPU" + opt_num(g, "index", 0) + "</td><td>" + cell(text(g, "name")) +
           (unresponsive.empty() ? ""
                                 : "<br><span class=\"bad\">" + escape(unresponsive) + "</span>") +
           "</td>";
    row += "<td class=\"mono\">" + cell(text(g, "uuid")) + "<br>" + cell(text(g, "pci_bus_id")) +
           "</td>";
    const auto gen = number(pcie, "gen_current"), gen_max = number(pcie, "gen_max");
    const auto width = number(pcie, "width_current"), width_max = number(pcie, "width_max");
    const bool narrow = width && width_max && *width < *width_max;
    row += std::string("<td") + (narrow ? " class=\"bad\"" : "") + ">Gen" +
           opt_num(pcie, "gen_current", 0) + "/" + opt_num(pcie, "gen_max", 0) + " x" +
           opt_num(pcie, "width_current", 0) + "/" + opt_num(pcie, "width_max", 0) + "</td>";
    (void)gen, (void)gen_max;
    row += "<td class=\"num\">" + opt_num(g, "numa_node", 0) + "</td>";
    row += "<td class=\"num\">" + opt_num(clocks, "sm_mhz", 0) + " / " +
           opt_num(clocks, "sm_max_mhz", 0) + "</td>";
    const auto margin = number(thermal, "margin_c");
    row += std::string("<td class=\"num") + (margin && *margin <= 5 ? " bad" : "") + "\">" +
           opt_num(thermal, "gpu_c", 0) + " (" + opt_num(thermal, "margin_c", 0) + ")</td>";
    row += "<td class=\"num\">" + opt_num(power, "draw_w", 0) + " / " +
           opt_num(power, "enforced_limit_w", 0) + "</td>";
    const auto used = number(memory, "used_bytes"), total = number(memory, "total_bytes");
    row += "<td class=\"num\">" + (used ? bytes_text(*used) : "–") + " / " +
           (total ? bytes_text(*total) : "–") + "</td>";
    std::string ecc_text = "–";
    bool ecc_bad = false;
    if (const json* en = member(ecc, "enabled"); en && en->is_boolean()) {
      ecc_text = en->get<bool>() ? "on" : "off";
      if (const json* vol = member(ecc, "volatile"); vol && vol->is_object()) {
        const auto ce = number(*vol, "corrected"), ue = number(*vol, "uncorrected");
        if (ce || ue)
          ecc_text += " " + (ce ? num_text(*ce, 0) : "?") + " CE / " +
                      (ue ? num_text(*ue, 0) : "?") + " UE";
        ecc_bad = ue && *ue > 0;
      }
      if (const json* agg = member(ecc, "aggregate"); agg && agg->is_object()) {
        const auto ue = number(*agg, "uncorrected");
        ecc_bad = ecc_bad || (ue && *ue > 0);
      }
    }
    row += std::string("<td") + (ecc_bad ? " class=\"bad\"" : "") + ">" + ecc_text + "</td>";
    int up = 0, links = 0;
    for (const auto& l : array(g, "nvlinks")) {
      ++links;
      if (const json* a = member(l, "active"); a && a->is_boolean() && a->get<bool>()) ++up;
    }
    row += std::string("<td") + (up < links ? " class=\"bad\"" : "") + ">" +
           (links ? fmt::format("{}/{} up", up, links) : "–") + "</td>";
    std::string active;
    for (const auto& a : array(events, "active"))
      if (a.is_string()) active += (active.empty() ? "" : ", ") + escape(a.get<std::string>());
    row += "<td>" + (active.empty() ? "–" : active) + "</td></tr>\n";
    out += row;
  }
  return out + "</table>\n";
}

// gate's node.gpus: the fingerprint's own fields.
std::string gate_gpu_table(const json& gpus) {
  std::string out =
      "<table class=\"gpus\"><tr><th>GPU</th><th>name</th><th>UUID / bus id</th>"
      "<th>PCIe max</th><th>width</th><th>NUMA</th><th>NVLinks up</th><th>VBIOS</th>"
      "<th>power limit W</th></tr>\n";
  for (const auto& g : gpus) {
    if (!g.is_object()) continue;
    out += "<tr data-gpu=\"" + opt_num(g, "index", 0) + "\"><td>GPU" + opt_num(g, "index", 0) +
           "</td><td>" + cell(text(g, "name")) + "</td><td class=\"mono\">" +
           cell(text(g, "uuid")) + "<br>" + cell(text(g, "pci_bus_id")) + "</td><td>Gen" +
           opt_num(g, "pcie_gen_max", 0) + " x" + opt_num(g, "pcie_width_max", 0) + "</td><td>x" +
           opt_num(g, "pcie_width", 0) + "</td><td class=\"num\">" + opt_num(g, "numa_node", 0) +
           "</td><td class=\"num\">" + opt_num(g, "nvlinks_up", 0) + "</td><td class=\"mono\">" +
           cell(text(g, "vbios")) + "</td><td class=\"num\">" + opt_num(g, "power_limit_w", 0) +
           "</td></tr>\n";
  }
  return out + "</table>\n";
}

std::string path_colour(const std::string& path) {
  if (path.starts_with("NV")) return "#2e7d32";
  if (path == "PIX" || path == "PXB") return "#9ccc65";
  if (path == "PHB" || path == "NODE") return "#ffd54f";
  if (path == "SYS") return "#ef6c00";
  return "#cfd8dc";
}

std::string p2p_colour(const std::string& code) {
  if (code == "OK") return "#66bd63";
  if (code.empty() || code == "U") return "#cfd8dc";
  return "#d73027";
}

// The GPU indices the pairs (or the GPU list) name, in order.
std::vector<int> gpu_indices(const json& gpus, const json& pairs) {
  std::set<int> ids;
  for (const auto& g : gpus)
    if (auto i = number(g, "index")) ids.insert(static_cast<int>(*i));
  for (const auto& p : pairs) {
    if (auto a = number(p, "a")) ids.insert(static_cast<int>(*a));
    if (auto b = number(p, "b")) ids.insert(static_cast<int>(*b));
  }
  return {ids.begin(), ids.end()};
}

std::string pair_grids(const json& gpus, const json& pairs, bool gate_shape) {
  const std::vector<int> ids = gpu_indices(gpus, pairs);
  if (ids.size() < 2 || pairs.empty()) return "";
  std::map<int, std::size_t> pos;
  for (std::size_t i = 0; i < ids.size(); ++i) pos[ids[i]] = i;
  html::Grid topo, p2p;
  topo.title = "Topology (path between each pair, as nvidia-smi topo -m)";
  p2p.title = "P2P read (as nvidia-smi topo -p2p r)";
  for (int i : ids) {
    topo.rows.push_back("GPU" + std::to_string(i));
    topo.cols.push_back("GPU" + std::to_string(i));
  }
  p2p.rows = topo.rows, p2p.cols = topo.cols;
  const std::size_t n = ids.size();
  const double w = n > 10 ? 52 : 64;
  topo.cell_width = p2p.cell_width = w;
  topo.cells.assign(n, std::vector<html::GridCell>(n));
  p2p.cells = topo.cells;
  for (std::size_t i = 0; i < n; ++i) {
    topo.cells[i][i] = {"X", "", "#e0e0e0", "", "self"};
    p2p.cells[i][i] = {"X", "", "#e0e0e0", "", "self"};
  }
  for (const auto& p : pairs) {
    const auto a = number(p, "a"), b = number(p, "b");
    if (!a || !b || !pos.count(static_cast<int>(*a)) || !pos.count(static_cast<int>(*b))) continue;
    const std::size_t i = pos[static_cast<int>(*a)], j = pos[static_cast<int>(*b)];
    const std::string subject = text(p, "subject");
    const std::string path = text(p, "path");
    std::string code;
    if (gate_shape) {
      code = text(p, "p2p");
    } else if (const json* s = member(p, "p2p"); s && s->is_object()) {
      code = text(*s, "read");
    }
    const html::GridCell t{path.empty() ? "?" : path, "", path_colour(path), subject + ": " + path,
                           "path"};
    const html::GridCell c{code.empty() ? "?" : code, "", p2p_colour(code),
                           subject + ": P2P read " + (code.empty() ? "unknown" : code), "p2p"};
    topo.cells[i][j] = topo.cells[j][i] = t;
    p2p.cells[i][j] = p2p.cells[j][i] = c;
  }
  topo.legend = {{"#2e7d32", "NVLink"},
                 {"#9ccc65", "PIX/PXB (PCIe switch)"},
                 {"#ffd54f", "PHB/NODE"},
                 {"#ef6c00", "SYS (crosses CPUs)"},
                 {"#cfd8dc", "unknown"}};
  p2p.legend = {{"#66bd63", "OK"}, {"#d73027", "not supported / disabled"}, {"#cfd8dc", "unknown"}};
  return "<figure class=\"topology\">" + html::grid_svg(topo) +
         "</figure>\n<figure class=\"p2p\">" + html::grid_svg(p2p) + "</figure>\n";
}

std::string node_section(const std::vector<Document>& docs) {
  std::string out;
  std::set<std::string> hosts_done;
  for (const auto& d : docs) {
    const bool gate = d.kind == DocumentKind::kGate;
    if (!is_report(d) && !gate) continue;
    const json empty = json::object();
    const json* node = gate ? member(d.doc, "node") : &d.doc;
    if (!node || !node->is_object()) continue;
    const json& gpus = array(*node, "gpus");
    if (gpus.empty() && array(*node, "pairs").empty()) continue;
    const std::string host = host_of(d);
    if (!hosts_done.insert(host).second) continue;
    out += "<h3>" + (host.empty() ? std::string("This node") : escape(host)) + ": " +
           std::to_string(gpus.size()) + " GPU(s) <span class=\"muted mono\">from " +
           escape(d.name) + "</span></h3>\n";
    if (!gate) {
      if (const json* h = member(d.doc, "host"); h && h->is_object())
        out += "<p class=\"muted\">driver " + cell(text(*h, "driver_version")) + ", CUDA " +
               cell(text(*h, "cuda_driver_version")) + ", kernel " + cell(text(*h, "kernel")) +
               ", " + opt_num(*h, "logical_cpus", 0) + " CPUs, " +
               std::to_string(array(*h, "numa_nodes").size()) + " NUMA node(s)</p>\n";
    }
    out += gate ? gate_gpu_table(gpus) : gpu_table(gpus);
    out += pair_grids(gpus, array(*node, "pairs"), gate);
  }
  if (out.empty()) return "";
  return "<section id=\"gpus\">\n<h2>GPUs and topology</h2>\n" + out + "</section>\n";
}

// ---------------------------------------------------------------- gate deviations

std::string gate_section(const std::vector<Document>& docs) {
  std::string out;
  for (const auto& d : docs) {
    if (d.kind != DocumentKind::kGate) continue;
    const json& devs = array(d.doc, "deviations");
    out += "<h3>Deviations from the baseline <span class=\"muted mono\">" + escape(d.name) +
           "</span></h3>\n";
    if (devs.empty()) {
      out += "<p class=\"good\">None: the node matches its baseline.</p>\n";
      continue;
    }
    out +=
        "<table><tr><th>severity</th><th>what</th><th>expected</th><th>found</th>"
        "<th>evidence</th></tr>\n";
    for (const auto& v : devs) {
      if (!v.is_object()) continue;
      auto val = [&](const char* k) {
        const json* x = member(v, k);
        return !x               ? std::string("–")
               : x->is_string() ? escape(x->get<std::string>())
                                : escape(x->dump());
      };
      out += "<tr><td>" + badge(text(v, "severity")) + "</td><td class=\"mono\">" +
             cell(text(v, "key")) + "</td><td>" + val("expected") + "</td><td>" + val("found") +
             "</td><td>" + cell(text(v, "evidence")) + "</td></tr>\n";
    }
    out += "</table>\n";
  }
  if (out.empty()) return "";
  return "<section id=\"gate\">\n<h2>Gate</h2>\n" + out + "</section>\n";
}

// ---------------------------------------------------------------- bench

std::string bench_cell_value(double v) { return num_text(v, v >= 100 ? 0 : v >= 10 ? 1 : 2); }

std::string bench_result(const json& r) {
  const std::string title = text(r, "title").empty() ? text(r, "key") : text(r, "title");
  const std::string unit = text(r, "unit");
  std::string out;
  const json& rows = array(r, "rows");
  const json& cols = array(r, "cols");
  const json& cells = array(r, "cells");
  if (const std::string skipped = text(r, "skipped"); !skipped.empty())
    return "<p><b>" + escape(title) + "</b>: <span class=\"muted\">skipped: " + escape(skipped) +
           "</span></p>\n";
  if (const std::string error = text(r, "error"); !error.empty() && cells.empty())
    return "<p><b>" + escape(title) + "</b>: <span class=\"bad\">" + escape(error) +
           "</span></p>\n";
  html::Grid g;
  g.title = title + (unit.empty() ? "" : " (" + unit + ")");
  for (const auto& x : rows) g.rows.push_back(x.is_string() ? x.get<std::string>() : x.dump());
  for (const auto& x : cols) g.cols.push_back(x.is_string() ? x.get<std::string>() : x.dump());
  double v_max = 0;
  bool any_expected = false;
  for (const auto& row : cells)
    for (const auto& c : row.is_array() ? row : json::array()) {
      if (auto v = number(c, "value")) v_max = std::max(v_max, *v);
      if (number(c, "expected")) any_expected = true;
    }
  const bool higher_is_better = unit != "us";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    std::vector<html::GridCell> line;
    const json& row = cells[i];
    for (std::size_t j = 0; row.is_array() && j < row.size(); ++j) {
      const json& c = row[j];
      html::GridCell out_cell;
      const std::string where =
          (i < g.rows.size() ? g.rows[i] : "?") + " → " + (j < g.cols.size() ? g.cols[j] : "?");
      const auto v = number(c, "value");
      const auto expected = number(c, "expected");
      const std::string error = text(c, "error");
      const json* wrong = member(c, "wrong_data");
      const bool wrong_data = wrong && wrong->is_boolean() && wrong->get<bool>();
      if (!v && error.empty()) {
        out_cell = {"–", "", "#eeeeee", where + ": does not apply", "na"};
      } else if (wrong_data) {
        out_cell = {"WRONG", "data", "#6a1b9a", where + ": wrong data: " + error, "cell-bad"};
      } else if (!v) {
        out_cell = {"error", "", "#d73027", where + ": " + error, "cell-bad"};
      } else {
        out_cell.text = bench_cell_value(*v);
        std::string tip = where + ": " + bench_cell_value(*v) + " " + unit;
        if (expected && *expected > 0 && higher_is_better) {
          const double ratio = *v / *expected;
          out_cell.fill = html::ratio_colour(ratio);
          out_cell.subtext = num_text(ratio * 100, 0) + " %";
          tip += " of " + bench_cell_value(*expected) + " expected (" + num_text(ratio * 100, 0) +
                 " %)";
        } else {
          out_cell.fill = html::shade_colour(v_max > 0 ? *v / v_max : 0);
        }
        if (const auto spread = number(c, "spread_pct"))
          tip += ", spread " + num_text(*spread, 1) + " %";
        if (const json* via = member(c, "via_host"); via && via->is_boolean() && via->get<bool>())
          tip += ", through host memory";
        if (const json* ok = member(c, "verified"); ok && ok->is_boolean() && ok->get<bool>())
          tip += ", data checked";
        out_cell.title = tip;
      }
      line.push_back(std::move(out_cell));
    }
    g.cells.push_back(std::move(line));
  }
  if (any_expected && higher_is_better)
    g.legend = {{html::ratio_colour(0.5), "≤ 50 % of expected"},
                {html::ratio_colour(0.75), "75 %"},
                {html::ratio_colour(0.95), "≥ 90 %"},
                {"#eeeeee", "does not apply"}};
  else
    g.legend = {{html::shade_colour(0.1), "low"},
                {html::shade_colour(1), "highest of this matrix"}};
  g.cell_width = std::max(56.0, std::min(84.0, 760.0 / std::max<std::size_t>(g.cols.size(), 1)));
  g.cell_height = 34;
  out += "<figure class=\"bench\" data-key=\"" + escape(text(r, "key")) + "\">" + html::grid_svg(g);
  std::string notes;
  for (const auto& n : array(r, "notes"))
    if (n.is_string()) notes += "<li>" + escape(n.get<std::string>()) + "</li>";
  if (!notes.empty()) out += "<details><summary>notes</summary><ul>" + notes + "</ul></details>";
  return out + "</figure>\n";
}

std::string bench_section(const std::vector<Document>& docs) {
  std::string out;
  for (const auto& d : docs) {
    if (d.kind != DocumentKind::kBench) continue;
    out += "<h3>" + escape(d.name) + "</h3>\n";
    if (const json* cuda = member(d.doc, "cuda_available");
        cuda && cuda->is_boolean() && !cuda->get<bool>())
      out += "<p class=\"warn\">CUDA was not available: nothing was measured.</p>\n";
    for (const auto& r : array(d.doc, "results"))
      if (r.is_object()) out += bench_result(r);
    const json& truth = array(d.doc, "p2p_truth");
    if (!truth.empty()) {
      out +=
          "<h3>P2P truth table</h3>\n<table><tr><th>pair</th><th>path</th><th>NVML read</th>"
          "<th>CUDA access</th><th>copy</th><th>GB/s</th><th>NCCL</th><th>verdict</th></tr>\n";
      for (const auto& t : truth) {
        if (!t.is_object()) continue;
        auto flag = [&](const char* k) {
          const json* v = member(t, k);
          return !v || !v->is_boolean() ? std::string("–") : v->get<bool>() ? "yes" : "no";
        };
        out += "<tr><td>" + cell(text(t, "subject")) + "</td><td>" + cell(text(t, "path")) +
               "</td><td>" + cell(text(t, "nvml_read")) + "</td><td>" + flag("cuda_can_access") +
               "</td><td>" + flag("copy_verified") + "</td><td class=\"num\">" +
               opt_num(t, "copy_gbps", 1) + "</td><td>" + flag("nccl_allreduce_ok") + "</td><td>" +
               cell(text(t, "verdict")) + "</td></tr>\n";
      }
      out += "</table>\n";
    }
  }
  if (out.empty()) return "";
  return "<section id=\"bench\">\n<h2>Bandwidth and latency</h2>\n<p class=\"muted\">Each cell: "
         "the "
         "median measured figure; coloured by its share of what the link should carry where the "
         "benchmark knows it (hover a cell for the figures).</p>\n" +
         out + "</section>\n";
}

// ---------------------------------------------------------------- scale

std::string scale_section(const std::vector<Document>& docs) {
  std::string out;
  for (const auto& d : docs) {
    if (d.kind != DocumentKind::kScale) continue;
    out += "<h3>" + escape(d.name) + "</h3>\n";
    // Results grouped by workload and preset, in their order of appearance.
    std::vector<std::pair<std::string, std::vector<const json*>>> groups;
    for (const auto& r : array(d.doc, "results")) {
      if (!r.is_object()) continue;
      const std::string key = text(r, "workload") + " · " + text(r, "preset");
      auto it =
          std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end()) groups.push_back({key, {}}), it = groups.end() - 1;
      it->second.push_back(&r);
    }
    if (groups.empty()) out += "<p class=\"muted\">No scaling result in this file.</p>\n";
    for (auto& [key, results] : groups) {
      std::stable_sort(results.begin(), results.end(), [](const json* a, const json* b) {
        return number(*a, "gpus").value_or(0) < number(*b, "gpus").value_or(0);
      });
      std::optional<double> one;
      for (const json* r : results)
        if (number(*r, "gpus") == 1.0) one = number(*r, "throughput");
      html::BarChart tput, lat;
      tput.title = key + ": throughput, 1 GPU against N";
      tput.unit = "items/s";
      tput.legend = {{"#4e79a7", "measured"}, {"", "ideal: N × 1-GPU"}};
      lat.title = key + ": time per step / request";
      lat.unit = "ms";
      lat.legend = {{"#59a14f", "p50"}, {"#59a14fcc", "p99 (lighter)"}};
      for (const json* r : results) {
        const double n = number(*r, "gpus").value_or(0);
        html::Bar b;
        b.label = num_text(n, 0) + (n == 1 ? " GPU" : " GPUs");
        const std::string error = text(*r, "error");
        if (!error.empty()) {
          b.text = "error: " + error.substr(0, 60);
          tput.bars.push_back(b);
          lat.bars.push_back(b);
          continue;
        }
        b.value = number(*r, "throughput");
        if (one && n > 1) b.outline = n * *one;
        const auto eff = number(*r, "efficiency");
        b.text = (b.value ? num_text(*b.value, 1) : "–") +
                 (eff ? " · efficiency " + num_text(*eff * 100, 0) + " %" : "");
        tput.bars.push_back(b);
        html::Bar l;
        l.label = b.label;
        l.colour = "#59a14f";
        l.value = number(*r, "p50_ms");
        l.behind = number(*r, "p99_ms");
        l.text = "p50 " + opt_num(*r, "p50_ms", 2) + " · p99 " + opt_num(*r, "p99_ms", 2) + " ms";
        if (const auto share = number(*r, "comm_share"))
          l.text += " · comm " + num_text(*share * 100, 0) + " %";
        lat.bars.push_back(l);
      }
      out += "<figure class=\"scale\" data-group=\"" + escape(key) + "\">" +
             html::bar_chart_svg(tput) + html::bar_chart_svg(lat) + "</figure>\n";
    }
  }
  if (out.empty()) return "";
  return "<section id=\"scale\">\n<h2>Scaling</h2>\n" + out + "</section>\n";
}

// ---------------------------------------------------------------- time series

struct ReasonStyle {
  const char* label;
  const char* colour;
};

// The clock-event reasons a band shows; idle and the display clock are no limit.
std::optional<ReasonStyle> reason_style(const std::string& name) {
  if (name == "sw_power_cap") return ReasonStyle{"power cap", "#f28e2b"};
  if (name == "hw_power_brake_slowdown") return ReasonStyle{"power brake", "#6a3d9a"};
  if (name == "sw_thermal_slowdown" || name == "hw_thermal_slowdown")
    return ReasonStyle{"thermal", "#d7301f"};
  if (name == "hw_slowdown") return ReasonStyle{"HW slowdown", "#8c564b"};
  if (name == "sync_boost") return ReasonStyle{"sync boost", "#17becf"};
  if (name == "applications_clocks_setting") return ReasonStyle{"application clocks", "#7f7f7f"};
  return std::nullopt;
}

struct GpuSeries {
  std::vector<const json*> samples;  // by time
};

void add_band(std::vector<html::Band>& bands, double t0, double t1, const ReasonStyle& s) {
  for (auto& b : bands)
    if (b.label == s.label && t0 <= b.t1 && t1 >= b.t0) {
      b.t0 = std::min(b.t0, t0), b.t1 = std::max(b.t1, t1);
      return;
    }
  bands.push_back({t0, t1, s.label, s.colour});
}

std::string series_figures(const json& samples, const json& host_samples, const std::string& what) {
  std::map<int, GpuSeries> by_gpu;
  for (const auto& s : samples) {
    const auto gpu = number(s, "gpu");
    const auto t = number(s, "t_s");
    if (!gpu || !t) continue;
    by_gpu[static_cast<int>(*gpu)].samples.push_back(&s);
  }
  if (by_gpu.empty()) return "<p class=\"muted\">No GPU samples in " + escape(what) + ".</p>\n";
  double t_min = 1e300, t_max = -1e300;
  for (auto& [gpu, series] : by_gpu) {
    std::stable_sort(
        series.samples.begin(), series.samples.end(),
        [](const json* a, const json* b) { return *number(*a, "t_s") < *number(*b, "t_s"); });
    t_min = std::min(t_min, *number(*series.samples.front(), "t_s"));
    t_max = std::max(t_max, *number(*series.samples.back(), "t_s"));
  }
  // Bands: a reason in force from its sample to the GPU's next one.
  std::vector<html::Lane> lanes;
  std::vector<html::Band> all_bands;
  for (const auto& [gpu, series] : by_gpu) {
    html::Lane lane{"GPU" + std::to_string(gpu), {}};
    const auto& ss = series.samples;
    for (std::size_t i = 0; i < ss.size(); ++i) {
      const auto mask = number(*ss[i], "clock_event_mask");
      if (!mask || *mask < 0) continue;
      const double t0 = *number(*ss[i], "t_s");
      double t1 = i + 1 < ss.size() ? *number(*ss[i + 1], "t_s")
                                    : t0 + (i > 0 ? t0 - *number(*ss[i - 1], "t_s") : 1.0);
      for (const auto& name : clock_event_names(static_cast<std::uint64_t>(*mask)))
        if (const auto style = reason_style(name)) {
          add_band(lane.bands, t0, t1, *style);
          add_band(all_bands, t0, t1, *style);
        }
    }
    lanes.push_back(std::move(lane));
  }
  struct Metric {
    const char* key;
    const char* title;
    const char* unit;
  };
  static const Metric kMetrics[] = {{"sm_mhz", "SM clock", "MHz"},
                                    {"gpu_c", "GPU temperature", "°C"},
                                    {"power_w", "Power draw", "W"}};
  std::string out;
  for (const auto& m : kMetrics) {
    html::TimeChart chart;
    chart.title = std::string(m.title) + " per GPU (" + m.unit + "), clock-event reasons shaded";
    chart.unit = m.unit;
    chart.bands = all_bands;
    std::size_t k = 0;
    for (const auto& [gpu, series] : by_gpu) {
      html::Series s;
      s.name = "GPU" + std::to_string(gpu);
      s.colour = html::series_colour(k++);
      s.data = {{"gpu", std::to_string(gpu)}, {"metric", m.key}};
      for (const json* x : series.samples)
        s.points.push_back({*number(*x, "t_s"), number(*x, m.key)});
      chart.series.push_back(std::move(s));
    }
    out += "<figure class=\"series\" data-metric=\"" + std::string(m.key) + "\">" +
           html::time_series_svg(chart) + "</figure>\n";
  }
  out += "<figure class=\"reasons\">" +
         html::lanes_svg("Clock-event reasons per GPU (idle not shown)", lanes, t_min, t_max) +
         "</figure>\n";
  if (!host_samples.empty()) {
    html::TimeChart psi;
    psi.title = "Host pressure (PSI some, % of wall time)";
    psi.unit = "%";
    static const std::pair<const char*, const char*> kPsi[] = {
        {"psi_cpu_some_pct", "CPU"}, {"psi_io_some_pct", "I/O"}, {"psi_memory_some_pct", "memory"}};
    std::size_t k = 0;
    for (const auto& [key, name] : kPsi) {
      html::Series s;
      s.name = name;
      s.colour = html::series_colour(k++ + 6);
      s.data = {{"metric", key}};
      for (const auto& h : host_samples)
        if (const auto t = number(h, "t_s")) s.points.push_back({*t, number(h, key)});
      psi.series.push_back(std::move(s));
    }
    out += "<figure class=\"series host\">" + html::time_series_svg(psi) + "</figure>\n";
  }
  return out;
}

std::string watch_section(const std::vector<Document>& docs) {
  std::string out;
  for (const auto& d : docs) {
    if (d.kind == DocumentKind::kWatchRecord || d.kind == DocumentKind::kWatchLines ||
        (d.kind == DocumentKind::kDiagnose && !array(d.doc, "samples").empty())) {
      out += "<h3>" + escape(d.name) + "</h3>\n" +
             series_figures(array(d.doc, "samples"), array(d.doc, "host_samples"), d.name);
    } else if (d.kind == DocumentKind::kScale) {
      const json* s = member(d.doc, "sustained");
      if (!s || !s->is_object()) continue;
      out += "<h3>" + escape(d.name) + ": sustained run</h3>\n";
      const json& tput = array(*s, "throughput");
      if (!tput.empty()) {
        html::TimeChart chart;
        chart.title = "Throughput over the sustained run (items/s)";
        chart.unit = "items/s";
        html::Series series{"throughput", html::series_colour(0), {}, {{"metric", "throughput"}}};
        for (const auto& p : tput)
          if (p.is_array() && p.size() == 2 && p[0].is_number())
            series.points.push_back({p[0].get<double>(), p[1].is_number()
                                                             ? std::optional(p[1].get<double>())
                                                             : std::nullopt});
        chart.series.push_back(std::move(series));
        out += "<figure class=\"series\" data-metric=\"throughput\">" +
               html::time_series_svg(chart) + "</figure>\n";
      }
      out += series_figures(array(*s, "samples"), json::array(), d.name);
    }
  }
  if (out.empty()) return "";
  return "<section id=\"watch\">\n<h2>Over time</h2>\n" + out + "</section>\n";
}

// ---------------------------------------------------------------- notes

std::string notes_section(const std::vector<Document>& docs) {
  std::string out;
  for (const auto& d : docs) {
    std::string items;
    for (const auto& n : array(d.doc, "notes"))
      if (n.is_string()) items += "<li>" + escape(n.get<std::string>()) + "</li>";
    if (items.empty()) continue;
    out += "<details><summary>" + escape(d.name) +
           fmt::format(" ({} notes)", array(d.doc, "notes").size()) + "</summary><ul>" + items +
           "</ul></details>\n";
  }
  std::string coverage;
  const bool measured_here = std::any_of(docs.begin(), docs.end(), [](const Document& d) {
    return d.kind == DocumentKind::kBench || d.kind == DocumentKind::kScale;
  });
  for (const auto& d : docs) {
    const std::string table = coverage_table(d.doc, measured_here);
    if (!table.empty())
      coverage +=
          "<h3>Coverage <span class=\"muted mono\">" + escape(d.name) + "</span></h3>\n" + table;
  }
  std::string result;
  if (!coverage.empty())
    result += "<section id=\"coverage\">\n<h2>What was checked</h2>\n" + coverage + "</section>\n";
  if (!out.empty()) result += "<section id=\"notes\">\n<h2>Notes</h2>\n" + out + "</section>\n";
  return result;
}

}  // namespace

Result<std::string> render_html_report(const std::vector<HtmlReportInput>& inputs) {
  if (inputs.empty()) return Status::invalid_input("no input: give gpuvet JSON outputs to draw");
  std::vector<Document> docs;
  for (const auto& in : inputs) {
    auto d = html::recognise_document(in.name, in.text);
    if (!d.is_ok()) return d.status();
    docs.push_back(std::move(d).value());
  }
  std::vector<std::string> hosts;
  for (const auto& d : docs)
    if (const std::string h = host_of(d);
        !h.empty() && std::find(hosts.begin(), hosts.end(), h) == hosts.end())
      hosts.push_back(h);
  std::string host_list;
  for (const auto& h : hosts) host_list += (host_list.empty() ? "" : ", ") + h;
  const std::string title = "gpuvet report" + (host_list.empty() ? "" : " — " + host_list);

  std::string summary = "<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"cards\">\n";
  for (const auto& d : docs) summary += summary_card(d);
  summary += "</div>\n" + inputs_table(docs) + "</section>\n";
  const std::vector<std::pair<const char*, std::string>> sections = {
      // Over time comes right after the findings it explains, before the tables.
      {"summary", summary},           {"findings", findings_section(docs)},
      {"watch", watch_section(docs)}, {"gpus", node_section(docs)},
      {"gate", gate_section(docs)},   {"bench", bench_section(docs)},
      {"scale", scale_section(docs)}, {"coverage", notes_section(docs)},
  };
  static const std::map<std::string, std::string> kNames = {
      {"summary", "Summary"}, {"findings", "Findings"},         {"gpus", "GPUs and topology"},
      {"gate", "Gate"},       {"bench", "Bandwidth"},           {"scale", "Scaling"},
      {"watch", "Over time"}, {"coverage", "Checked and notes"}};
  std::string nav = "<nav>";
  for (const auto& [id, body] : sections)
    if (!body.empty()) nav += "<a href=\"#" + std::string(id) + "\">" + kNames.at(id) + "</a>";
  nav += "</nav>\n";

  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // Nothing is fetched and nothing runs: the page is readable offline and from an e-mail.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta "
      "name=\"generator\" content=\"gpuvet " GPUVET_VERSION "\">\n<title>" +
      escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<main>\n<h1>" +
      escape(title) + "</h1>\n" + nav;
  for (const auto& [id, body] : sections) page += body;
  page += "<footer>Drawn by gpuvet " GPUVET_VERSION
          " report --html from the inputs listed in the summary; hover a cell, a bar or a "
          "line for its figures.</footer>\n</main>\n</body>\n</html>\n";
  return page;
}

Result<std::string> html_report_from_files(const std::vector<std::string>& paths) {
  std::vector<HtmlReportInput> inputs;
  for (const auto& p : paths) {
    auto text_in = read_small_file(p, kMaxInputBytes, "input");
    if (!text_in.is_ok()) return text_in.status();
    inputs.push_back({p, std::move(text_in).value()});
  }
  return render_html_report(inputs);
}

Status write_file_atomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::invalid_input(path + ": directory " + dir.string() + " does not exist");
  if (fs::is_directory(target, ec)) return Status::invalid_input(path + " is a directory");
  const std::string tmp =
      (dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()))).string();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Status::invalid_input("cannot write " + tmp + " (is " + dir.string() + " writable?)");
    out << content;
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      return Status::invalid_input("cannot write " + tmp + " (disk full?)");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return Status::invalid_input("cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace gpuvet
