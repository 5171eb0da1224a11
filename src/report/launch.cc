// `gpuvet launch` for people (one line per job, the first failure, the findings) and for
// programs (gpuvet.launch/1, docs/launch.md).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "core/util.h"
#include "gpuvet/launch.h"
#include "gpuvet/launch_report.h"
#include "report/json_document.h"
#include "report/terminal_text.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;
using report::opt;

std::string how_it_ended(const JobResult& j) {
  if (!j.start_error.empty()) return "not started";
  if (j.signal)
    return fmt::format("{}{}", j.stopped_by_gpuvet ? "stopped, " : "",
                       sigabbrev_np(*j.signal) ? fmt::format("SIG{}", sigabbrev_np(*j.signal))
                                               : std::to_string(*j.signal));
  if (j.exit_code) return fmt::format("exit {}", *j.exit_code);
  return "running";
}

std::string seen_text(const JobResult& j, const LaunchOptions& o) {
  if (o.check_timeout_s <= 0) return "not checked";
  if (j.seen_on.empty()) return "not seen";
  std::string s;
  for (auto [gpu, pid] : j.seen_on)
    s += fmt::format("{}GPU{}{}", s.empty() ? "" : ",", gpu, gpu == j.plan.gpu ? " ok" : " WRONG");
  return s;
}

std::string binding_text(const JobResult& j) {
  std::string cpus =
      j.cpus_read_back.value_or(j.plan.cpus.empty() ? "any" : format_cpu_list(j.plan.cpus));
  std::string mem = j.mem_policy_read_back.value_or(j.plan.mems.empty() ? "any" : "?");
  return fmt::format("{} / {}", cpus, mem);
}

std::string gpu_series(const JobResult& j) {
  if (!j.sm_mhz_median) return "-";
  std::string s = fmt::format("{}/{}/{}", *j.sm_mhz_min, *j.sm_mhz_median, *j.sm_mhz_max);
  if (j.temp_c_max) s += fmt::format(" {}°C", *j.temp_c_max);
  if (j.power_w_max) s += fmt::format(" {:.0f}W", *j.power_w_max);
  return s;
}

}  // namespace

std::string render_launch_text(const LaunchReport& r, const LaunchOptions& o) {
  report::TerminalText out;
  out << fmt::format("gpuvet launch: {} job(s), one per GPU, in {:.1f} s ({})\n", r.jobs.size(),
                     r.wall_s, r.control);
  const bool throughput = !o.throughput_regex.empty();
  out << fmt::format("{:<4} {:<5} {:<5} {:<22} {:>8} {:>8}  {:<16} {:<12} {:<22}{}\n", "job", "GPU",
                     "node", "CPUs / memory policy", "pid", "wall s", "end", "on GPU",
                     "SM MHz min/med/max", throughput ? " throughput med/last" : "");
  for (const auto& j : r.jobs) {
    std::string tp;
    if (throughput)
      tp = j.throughput_median ? fmt::format(" {}/{} ({} lines)", *j.throughput_median,
                                             *j.throughput_last, j.throughput_lines)
                               : " -";
    out << fmt::format("{:<4} {:<5} {:<5} {:<22} {:>8} {:>8.1f}  {:<16} {:<12} {:<22}{}\n",
                       j.plan.rank, fmt::format("GPU{}", j.plan.gpu),
                       j.plan.numa ? std::to_string(*j.plan.numa) : "?", binding_text(j), j.pid,
                       std::max(0.0, j.end_s - j.start_s), how_it_ended(j), seen_text(j, o),
                       gpu_series(j), tp);
    if (!j.clock_events.empty())
      out << fmt::format("     clock events on GPU{}: {}\n", j.plan.gpu,
                         fmt::join(j.clock_events, ", "));
  }
  if (r.first_failure) {
    const auto& j = r.jobs[*r.first_failure];
    out << fmt::format("\nfirst failure: job {} on GPU{} ({}) {}\n", j.plan.rank, j.plan.gpu,
                       j.plan.uuid, how_it_ended(j));
    if (!j.start_error.empty()) out << "  " << j.start_error << "\n";
    if (!j.log_tail.empty()) {
      out << fmt::format("  last lines of {}:\n", j.plan.log_path);
      for (const auto& l : j.log_tail) out << "    " << l << "\n";
    }
  }
  if (!r.stop_reason.empty() && r.jobs.size() > 1)
    out << "stopped every job: " << r.stop_reason << "\n";
  if (!r.findings.empty()) out << "\n";
  // One block per finding id (worst first): its instances, then its decision once.
  std::vector<std::string> ids;
  for (const auto& f : r.findings)
    if (std::ranges::find(ids, f.id) == ids.end()) ids.push_back(f.id);
  for (const auto& id : ids) {
    bool first = true;
    for (const auto& f : r.findings) {
      if (f.id != id) continue;
      if (first) {
        std::string sev = severity_name(f.severity);
        std::ranges::transform(sev, sev.begin(), ::toupper);
        out << fmt::format("{:<8} {}\n", sev, f.id);
        first = false;
      }
      out << fmt::format("  {}: {}\n", fmt::join(f.subjects, " "), f.evidence);
    }
    if (const auto* c = find_catalog_entry(id)) out << "  → " << c->decision << "\n";
  }
  for (const auto& n : r.notes) out << "note: " << n << "\n";
  if (r.interrupted_by)
    out << fmt::format("\nexit {}: gpuvet was interrupted and stopped every job\n", r.exit_code);
  else if (r.first_failure)
    out << fmt::format("\nexit {}: the exit code of job {}, the first to fail\n", r.exit_code,
                       r.jobs[*r.first_failure].plan.rank);
  else if (r.exit_code != 0)
    out << fmt::format("\nexit {}: gpuvet stopped the jobs (--strict)\n", r.exit_code);
  else
    out << "\nexit 0: every job succeeded\n";
  return out.str();
}

std::string launch_to_json(const LaunchReport& r, const LaunchOptions& o, const Facts& facts,
                           int indent) {
  json doc;
  doc["schema"] = "gpuvet.launch/1";
  doc["command"] = o.command;
  doc["control"] = r.control;
  doc["options"] = {{"cpu", cpu_bind_name(o.cpu)},
                    {"mem", mem_bind_name(o.mem)},
                    {"strict", o.strict},
                    {"keep_going", o.keep_going},
                    {"grace_s", o.grace_s},
                    {"check_timeout_s", o.check_timeout_s},
                    {"log_dir", o.log_dir.empty() ? json(nullptr) : json(o.log_dir)}};
  json jobs = json::array();
  for (const auto& j : r.jobs) {
    json seen = json::array();
    for (auto [gpu, pid] : j.seen_on) seen.push_back({{"gpu", gpu}, {"pid", pid}});
    jobs.push_back({
        {"rank", j.plan.rank},
        {"gpu", j.plan.gpu},
        {"uuid", j.plan.uuid},
        {"pci_bus_id", opt(j.plan.bus_id)},
        {"numa_node", opt(j.plan.numa)},
        {"argv", j.plan.argv},
        {"log", j.plan.log_path.empty() ? json(nullptr) : json(j.plan.log_path)},
        {"cpus_intended", j.plan.cpus.empty() ? json(nullptr) : json(format_cpu_list(j.plan.cpus))},
        {"mems_intended", j.plan.mems.empty() ? json(nullptr) : json(format_cpu_list(j.plan.mems))},
        {"cpus_read_back", opt(j.cpus_read_back)},
        {"mem_policy_read_back", opt(j.mem_policy_read_back)},
        {"binding_notes", j.plan.notes},
        {"bind_errors", j.bind_errors},
        {"pid", j.pid},
        {"start_s", j.start_s},
        {"end_s", j.end_s},
        {"exit_code", opt(j.exit_code)},
        {"signal", opt(j.signal)},
        {"stopped_by_gpuvet", j.stopped_by_gpuvet},
        {"start_error", j.start_error.empty() ? json(nullptr) : json(j.start_error)},
        {"seen_on", seen},
        {"left_behind", j.left_behind},
        {"sm_mhz",
         {{"min", opt(j.sm_mhz_min)},
          {"median", opt(j.sm_mhz_median)},
          {"max", opt(j.sm_mhz_max)}}},
        {"temperature_c_max", opt(j.temp_c_max)},
        {"power_w_max", opt(j.power_w_max)},
        {"clock_events", j.clock_events},
        {"throughput",
         {{"lines", j.throughput_lines},
          {"median", opt(j.throughput_median)},
          {"last", opt(j.throughput_last)}}},
        {"log_tail", j.log_tail},
    });
  }
  doc["jobs"] = std::move(jobs);
  doc["first_failure"] = r.first_failure ? json(r.jobs[*r.first_failure].plan.rank) : json(nullptr);
  doc["stop_reason"] = r.stop_reason.empty() ? json(nullptr) : json(r.stop_reason);
  doc["interrupted_by"] = opt(r.interrupted_by);
  doc["leftover_pids"] = r.leftover_pids;
  doc["findings"] = report::findings_json(r.findings, facts);
  doc["notes"] = r.notes;
  doc["wall_s"] = r.wall_s;
  doc["exit_code"] = r.exit_code;
  return report::dump_document(doc, indent);
}

namespace {

std::string host_text(const LaunchHost& h) {
  return fmt::format("CPUs {}, memory {}", h.cpus.empty() ? "?" : format_cpu_list(h.cpus),
                     h.mem_policy.empty() ? "?" : h.mem_policy);
}

json host_json(const LaunchHost& h) {
  return {{"cpus", format_cpu_list(h.cpus)},
          {"mems_allowed", format_cpu_list(h.mems)},
          {"mem_policy", h.mem_policy.empty() ? json(nullptr) : json(h.mem_policy)}};
}

}  // namespace

std::string render_task_text(const TaskCheck& c, const Facts& facts) {
  const std::string p = "gpuvet launch --in-task: ";
  std::string out = p;
  const TaskIdentity& t = c.task;
  out += t.rank ? fmt::format("task {}", *t.rank) : std::string("this task");
  if (t.local_rank || t.local_world)
    out += fmt::format(" (local {} of {})", t.local_rank ? std::to_string(*t.local_rank) : "?",
                       t.local_world ? std::to_string(*t.local_world) : "?");
  if (!t.launcher.empty()) out += ", " + t.launcher;
  if (c.gpu) {
    out += fmt::format(": GPU{}", *c.gpu);
    for (const auto& g : facts.gpus)
      if (g.index == *c.gpu) {
        if (g.uuid) out += " " + *g.uuid;
        if (g.pci_bus_id) out += " (" + *g.pci_bus_id + ")";
      }
  } else {
    std::vector<std::string> names;
    for (int g : c.visible) names.push_back(fmt::format("GPU{}", g));
    out += fmt::format(": {}", fmt::join(names, ", "));
  }
  out += c.target_nodes.empty() ? ", NUMA node unknown"
                                : fmt::format(", NUMA node {}", format_cpu_list(c.target_nodes));
  out += fmt::format("; placed with {}", host_text(c.before));
  out += "\n";
  if (c.after) out += p + "bound by gpuvet: " + host_text(*c.after) + "\n";
  for (const auto& n : c.notes) out += p + "note: " + n + "\n";
  for (const auto& f : c.findings)
    out += fmt::format("{}{} {}: {}\n", p, severity_name(f.severity), f.id, f.evidence);
  if (c.findings.empty() && !c.target_cpus.empty()) out += p + "binding on the GPU's node: ok\n";
  if (c.exit_code != 0)
    out += fmt::format("{}--strict: {} not started (exit {})\n", p, c.argv.front(), c.exit_code);
  return out;
}

std::string task_to_json(const TaskCheck& c, const Facts& facts, int indent) {
  json doc;
  doc["schema"] = "gpuvet.launch-task/1";
  const TaskIdentity& t = c.task;
  doc["task"] = {{"launcher", t.launcher.empty() ? json(nullptr) : json(t.launcher)},
                 {"rank", opt(t.rank)},
                 {"local_rank", opt(t.local_rank)},
                 {"world", opt(t.world)},
                 {"local_world", opt(t.local_world)},
                 {"cuda_visible_devices", opt(t.visible_devices)}};
  json visible = json::array();
  for (int index : c.visible) {
    json g = {{"gpu", index}, {"uuid", nullptr}, {"pci_bus_id", nullptr}};
    for (const auto& gpu : facts.gpus)
      if (gpu.index == index)
        g = {{"gpu", index}, {"uuid", opt(gpu.uuid)}, {"pci_bus_id", opt(gpu.pci_bus_id)}};
    visible.push_back(std::move(g));
  }
  doc["visible"] = std::move(visible);
  doc["gpu"] = opt(c.gpu);
  doc["numa_nodes"] = c.target_nodes;
  doc["numa_cpus"] = c.target_cpus.empty() ? json(nullptr) : json(format_cpu_list(c.target_cpus));
  doc["placed"] = host_json(c.before);
  doc["bound_by_gpuvet"] = c.after ? host_json(*c.after) : json(nullptr);
  doc["bind_errors"] = c.bind_errors;
  json env = json::object();
  for (const auto& [k, v] : c.env) env[k] = v;
  doc["env"] = std::move(env);
  doc["argv"] = c.argv;
  doc["findings"] = report::findings_json(c.findings, facts);
  doc["notes"] = c.notes;
  doc["exit_code"] = c.exit_code;
  return report::dump_document(doc, indent);
}

}  // namespace gpuvet
