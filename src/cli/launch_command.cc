// `gpuvet launch --per-gpu -- CMD …` (one job per GPU, bound to its node, stopped as a group)
// and `gpuvet ckpt-slot -- CMD …` (at most K checkpoint writers at once); the work is in
// src/launch, the rendering in src/report.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "gpuvet/collect.h"
#include "gpuvet/launch.h"
#include "gpuvet/launch_report.h"
#include "live.h"

namespace gpuvet::cli {

namespace {

// The node as a launch needs it: GPUs, UUIDs, NUMA nodes; no kernel log, no pressure sampling.
// Empty (said on stderr, after `who`) when there is no GPU to place anything on.
std::optional<Collection> collect_placement_facts(const LiveArgs& live, const char* who,
                                                  std::optional<std::string>& nvml_library,
                                                  bool& abandoned) {
  CollectOptions co = collect_options(live);
  co.kernel_log = false;
  co.pressure_window = std::chrono::milliseconds(0);
  nvml_library = co.nvml_library;
  const SystemEnv env(co.root);
  Collection c = collect_facts(co, env.env());
  abandoned = c.abandoned_probes;
  if (nvml_library_unusable(c, co) || c.facts.gpus.empty()) {
    std::cerr << "gpuvet: " << who << ": no GPU on this node"
              << (c.nvml_failure_message.empty() ? "" : ": " + c.nvml_failure_message)
              << ": nothing started\n";
    return std::nullopt;
  }
  return c;
}

// `gpuvet launch --in-task`: check, say, then exec (or stop with --strict or bad input).
Outcome run_in_task(const LiveArgs& live, const TaskOptions& t, const std::string& report_path,
                    bool quiet) {
  const Inheritance inherited = Inheritance::of_this_process();  // before NVML opens anything
  std::optional<std::string> nvml_library;
  bool abandoned = false;
  auto collected = collect_placement_facts(live, "launch --in-task", nvml_library, abandoned);
  if (!collected) return {kExitUnusable, abandoned};
  const Collection& c = *collected;
  auto planned = plan_task(c.facts, TaskIdentity::from_environment(&std::getenv),
                           LaunchHost::of_this_process(), t);
  if (!planned.is_ok()) {
    std::cerr << "gpuvet: " << planned.status().message() << "\n";
    return {kExitUnusable, c.abandoned_probes};
  }
  TaskCheck check = std::move(planned).value();
  bind_and_judge_task(check, t);
  if (!quiet || !check.findings.empty() || check.exit_code != 0)
    std::cerr << render_task_text(check, c.facts) << std::flush;
  if (!report_path.empty()) {
    std::string path = report_path;
    for (auto at = path.find("{rank}"); at != std::string::npos; at = path.find("{rank}"))
      path.replace(at, 6, check.task.rank ? std::to_string(*check.task.rank) : "none");
    std::ofstream out(path, std::ios::trunc);
    out << task_to_json(check, c.facts) << "\n";
    if (!out.flush()) {
      std::cerr << "gpuvet: launch --in-task: cannot write --report " << path
                << ": nothing started\n";
      return {kExitUnusable, c.abandoned_probes};
    }
  }
  if (check.exit_code != 0) return {check.exit_code, c.abandoned_probes};
  std::cout << std::flush;
  const std::string why = exec_task(check, inherited);  // returns only when exec failed
  std::cerr << "gpuvet: " << why << "\n";
  return {kExitUnusable, c.abandoned_probes};
}

}  // namespace

std::function<Outcome()> setup_launch(CLI::App& app) {
  auto live = std::make_shared<LiveArgs>();
  add_probe_options(app, *live);
  auto o = std::make_shared<LaunchOptions>();
  auto per_gpu = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto no_cgroup = std::make_shared<bool>(false);
  auto gpus = std::make_shared<std::string>();
  auto cpu = std::make_shared<std::string>("node");
  auto mem = std::make_shared<std::string>("bind");
  auto in_task = std::make_shared<bool>(false);
  auto bind = std::make_shared<bool>(false);
  auto report_path = std::make_shared<std::string>();
  auto* per_gpu_flag =
      app.add_flag("--per-gpu", *per_gpu, "One copy of the command per GPU, started by gpuvet");
  auto* in_task_flag = app.add_flag(
      "--in-task", *in_task,
      "Inside one task a scheduler started (srun, mpirun, torchrun): check the task's GPU and "
      "CPU/memory binding, then run the command in gpuvet's place (exec)");
  in_task_flag->excludes(per_gpu_flag);
  auto* bind_flag = app.add_flag("--bind", *bind,
                                 "With --in-task: bind the task to its GPU's NUMA node (CPUs, "
                                 "memory per --mem) before the command starts");
  auto* report_opt = app.add_option(
      "--report", *report_path,
      "With --in-task: write the gpuvet.launch-task/1 document to FILE ({rank} expands)");
  std::vector<CLI::Option*> per_gpu_only;
  CLI::Option* gpus_opt = app.add_option(
      "--gpus", *gpus, "GPUs to use: indices, UUIDs or bus ids, comma-separated (default: all)");
  per_gpu_only.push_back(gpus_opt);
  per_gpu_only.push_back(
      app.add_option("--log-dir", o->log_dir,
                     "Each job's stdout and stderr to DIR/job<rank>-gpu<index>.log (created)"));
  app.add_option("--cpu", *cpu, "CPU binding: node (the GPU's NUMA node's CPUs) or none")
      ->check(CLI::IsMember({"node", "none"}))
      ->capture_default_str();
  app.add_option("--mem", *mem, "Memory policy: bind, preferred (to the GPU's node) or none")
      ->check(CLI::IsMember({"bind", "preferred", "none"}))
      ->capture_default_str();
  app.add_flag("--strict", o->strict,
               "Refuse to start a job that cannot be bound as intended, and stop every job when "
               "one runs on another GPU than its own; with --in-task, do not run the command of a "
               "task placed off its GPU's node (exit 2)");
  per_gpu_only.push_back(
      app.add_flag("--keep-going", o->keep_going, "A failed job does not stop the others"));
  per_gpu_only.push_back(
      app.add_option("--grace", o->grace_s, "Seconds between SIGTERM and SIGKILL when stopping")
          ->check(finite_range(0.0, 3600.0))
          ->capture_default_str());
  per_gpu_only.push_back(
      app.add_option(
             "--check-timeout", o->check_timeout_s,
             "Seconds to look for each job's processes on the GPUs through NVML (0: no check)")
          ->check(finite_range(0.0, 86400.0))
          ->capture_default_str());
  per_gpu_only.push_back(
      app.add_option(
             "--sample-interval", o->sample_interval_s,
             "Seconds between samples of the jobs' GPUs (clocks, temperature, power; 0: none)")
          ->check(finite_range(0.0, 3600.0))
          ->capture_default_str());
  per_gpu_only.push_back(
      app.add_option("--throughput-regex", o->throughput_regex,
                     "A regex whose first group is a job's throughput on its log lines (with "
                     "--log-dir), e.g. '([0-9.]+) samples/s'"));
  per_gpu_only.push_back(
      app.add_option("--ckpt-slots", o->ckpt_slots,
                     "Let at most K jobs write a checkpoint at once: jobs wrap their save in "
                     "`gpuvet ckpt-slot -- CMD` (GPUVET_CKPT_SLOTS and GPUVET_CKPT_DIR are set)")
          ->check(CLI::Range(1, 4096)));
  per_gpu_only.push_back(
      app.add_option("--ckpt-dir", o->ckpt_dir, "Directory of the checkpoint slot lock files"));
  per_gpu_only.push_back(
      app.add_flag("--no-cgroup", *no_cgroup,
                   "Track jobs by process group only, even where a cgroup v2 leaf could be made"));
  per_gpu_only.push_back(
      app.add_flag("--watch", o->live,
                   "While the jobs run, a line per --sample-interval on stderr: each job's GPU "
                   "clock, temperature, power and clock-event reasons"));
  per_gpu_only.push_back(
      app.add_flag("--json", *json, "Print the gpuvet.launch/1 document (docs/launch.md)"));
  for (CLI::Option* opt : per_gpu_only) in_task_flag->excludes(opt);
  bind_flag->needs(in_task_flag);
  report_opt->needs(in_task_flag);
  app.add_flag("-q,--quiet", *quiet, "No progress lines on stderr");
  app.add_option("command", o->command,
                 "The command and its arguments, after --; {gpu}, "
                 "{uuid}, {numa} and {rank} expand in each argument")
      ->expected(-1);
  return [=]() -> Outcome {
    if (!*per_gpu && !*in_task) {
      std::cerr << "gpuvet: launch needs a mode: --per-gpu (gpuvet starts one job per GPU) or "
                   "--in-task (inside each task srun or mpirun started): gpuvet launch --per-gpu "
                   "-- CMD ARGS…\n";
      return {kExitUnusable, false};
    }
    o->cpu = *cpu == "none" ? CpuBind::kNone : CpuBind::kNode;
    o->mem = *mem == "none"        ? MemBind::kNone
             : *mem == "preferred" ? MemBind::kPreferred
                                   : MemBind::kBind;
    if (*in_task) {
      TaskOptions t;
      t.command = o->command;
      t.bind = *bind;
      t.cpu = o->cpu;
      t.mem = o->mem;
      t.strict = o->strict;
      return run_in_task(*live, t, *report_path, *quiet);
    }
    o->use_cgroup = !*no_cgroup;
    o->job_output_to_stderr = *json;  // the JSON document alone on stdout
    o->gpus.clear();
    std::string word;
    for (char c : *gpus + ",") {
      if (c != ',') {
        word += c;
        continue;
      }
      if (!word.empty()) o->gpus.push_back(word);
      word.clear();
    }
    // Given but naming nothing (`--gpus ""`, `--gpus ,`): never "every GPU".
    if (gpus_opt->count() > 0 && o->gpus.empty()) {
      std::cerr << "gpuvet: --gpus: the list is empty\n";
      return {kExitUnusable, false};
    }

    const Inheritance inherited = Inheritance::of_this_process();  // before NVML opens anything
    std::optional<std::string> nvml_library;
    bool abandoned = false;
    auto collected = collect_placement_facts(*live, "launch", nvml_library, abandoned);
    if (!collected) return {kExitUnusable, abandoned};
    const Collection& c = *collected;
    auto plan = plan_launch(c.facts, *o, LaunchHost::of_this_process());
    if (!plan.is_ok()) {
      std::cerr << "gpuvet: " << plan.status().message() << "\n";
      return {kExitUnusable, c.abandoned_probes};
    }
    auto progress = [quiet = *quiet](const std::string& line) {
      if (!quiet) std::cerr << "gpuvet launch: " << line << "\n" << std::flush;
    };
    for (const auto& j : plan.value())
      for (const auto& note : j.notes) progress("note: " + note);
    const LaunchReport r = run_launch(plan.value(), *o, nvml_library, inherited, progress);
    std::cout << (*json ? launch_to_json(r, *o, c.facts) + "\n" : render_launch_text(r, *o))
              << std::flush;
    return {r.exit_code, c.abandoned_probes};
  };
}

std::function<Outcome()> setup_ckpt_slot(CLI::App& app) {
  auto o = std::make_shared<CkptSlotOptions>();
  auto quiet = std::make_shared<bool>(false);
  app.add_option("--max", o->slots,
                 "At most this many holders at once (default: $GPUVET_CKPT_SLOTS, which gpuvet "
                 "launch --ckpt-slots sets)");
  app.add_option("--dir", o->dir, "Directory of the slot lock files (default: $GPUVET_CKPT_DIR)");
  app.add_option("--timeout", o->timeout_s, "Give up after this many seconds of waiting (0: never)")
      ->check(finite_range(0.0, 30.0 * 86400.0));
  app.add_flag("-q,--quiet", *quiet, "No progress lines on stderr");
  app.add_option("command", o->command, "The command to run while holding a slot, after --")
      ->expected(-1);
  return [=]() -> Outcome {
    CkptSlotOptions opts = *o;
    if (opts.slots == 0)
      if (const char* v = std::getenv("GPUVET_CKPT_SLOTS")) opts.slots = std::atoi(v);
    if (opts.dir.empty())
      if (const char* v = std::getenv("GPUVET_CKPT_DIR")) opts.dir = v;
    auto progress = [quiet = *quiet](const std::string& line) {
      if (!quiet) std::cerr << "gpuvet " << line << "\n" << std::flush;
    };
    auto r = run_in_ckpt_slot(opts, progress);
    if (!r.is_ok()) {
      std::cerr << "gpuvet: " << r.status().message() << "\n";
      // Waiting too long is not bad input: timeout(1)'s code, so a job can tell the two apart.
      return {r.status().code() == StatusCode::kTimeout ? 124 : kExitUnusable, false};
    }
    return {r.value(), false};
  };
}

}  // namespace gpuvet::cli
