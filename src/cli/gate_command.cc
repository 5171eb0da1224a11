// `gpuvet baseline capture` (a node's fingerprint as a baseline file) and `gpuvet gate` (a
// node against it, with the exit code the system running it expects).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/baseline.h"
#include "gpuvet/bench.h"
#include "gpuvet/collect.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/gate.h"
#include "gpuvet/report.h"
#include "gpuvet/sched.h"
#include "live.h"

namespace gpuvet::cli {

namespace {

// The node: imported (--from) or collected live. `abandoned` is set when a probe hung.
struct Node {
  Facts facts;
  std::optional<std::int64_t> now_unix;
  std::string provenance;
  bool abandoned = false;
};

Result<Node> read_node(const LiveArgs& live) {
  Node n;
  if (!live.from.empty()) {
    auto imported = import_from(live.from);
    if (!imported.is_ok()) return imported.status();
    if (!any_recognised(imported.value()))
      return Status::invalid_input(nothing_recognised(live.from, imported.value()));
    n.facts = std::move(imported.value());
    n.provenance = fmt::format("from {}", live.from);
    return n;
  }
  const CollectOptions o = collect_options(live);
  const SystemEnv env(o.root);
  Collection c = collect_facts(o, env);
  n.abandoned = c.abandoned_probes;
  if (nvml_library_unusable(c, o)) return Status::invalid_input(c.nvml_failure_message);
  n.now_unix = env.env().clock.unix_now();
  n.facts = std::move(c.facts);
  n.provenance = fmt::format("live on {}", n.facts.host.hostname.value_or("this node"));
  return n;
}

// --bench FILE: a `gpuvet bench --json` document, its measurements added to the node's.
Status add_bench_file(const std::string& path, Facts& facts) {
  auto m = read_bench_json_file(path);
  if (!m.is_ok()) return m.status();
  facts.measurements.insert(facts.measurements.end(), m.value().begin(), m.value().end());
  return Status::ok();
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// Writes `text` to `path` through a temporary file beside it and a rename, so a reader never
// sees half a file. `overwrite` false refuses an existing file.
Status write_file_atomically(const std::string& path, const std::string& text, bool overwrite) {
  if (!overwrite && ::access(path.c_str(), F_OK) == 0)
    return Status::invalid_input(fmt::format("{} exists (--force replaces it)", path));
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::invalid_input(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::invalid_input(fmt::format("cannot write {}: {}", tmp, std::strerror(e)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Status::invalid_input(fmt::format("cannot write {}: {}", path, std::strerror(e)));
  }
  return Status::ok();
}

// The bench keys that measure what a baseline's floors check.
std::vector<std::string> bench_keys_for(const Baseline& b) {
  std::set<std::string> keys;
  for (const auto& f : b.floors) {
    if (f.value.key == "h2d") keys.insert("host_to_device_ce");
    if (f.value.key == "d2h") keys.insert("device_to_host_ce");
    if (f.value.key == "peer") keys.insert("device_to_device_read_ce");
    if (f.value.key == "allreduce_busbw") keys.insert("all_reduce");
  }
  return {keys.begin(), keys.end()};
}

struct CaptureArgs {
  LiveArgs live;
  std::string out;
  std::string bench;
  double floor_fraction = 0.9;
  bool force = false;
};

struct GateArgs {
  LiveArgs live;
  std::string baseline;
  std::string bench;
  std::string profile = "quick";
  std::string exit_style = "gpuvet";
  std::string fail_on = "critical";
  bool fail_on_host = false;
  std::string junit;
  std::string drain;  // "slurm": act on the verdict through scontrol (src/sched)
  bool one_line = false;
  std::string config;
  std::string ack;  // --ack FILE
};

}  // namespace

std::function<Outcome()> setup_baseline(CLI::App& app) {
  app.require_subcommand(1);
  CLI::App* capture = app.add_subcommand(
      "capture", "Write this node's (or a capture's) conformance fingerprint as a baseline file");
  auto args = std::make_shared<CaptureArgs>();
  add_live_options(*capture, args->live);
  capture->add_option("-o,--output", args->out, "Baseline file to write (TOML)")->required();
  capture->add_option("--bench", args->bench,
                      "A `gpuvet bench --json` output of this node: bandwidth floors from it");
  capture
      ->add_option("--floor-fraction", args->floor_fraction,
                   "Each floor is this share of the measured bandwidth")
      ->check(finite_range(0.1, 1.0));
  capture->add_flag("--force", args->force, "Replace an existing file");
  return [args]() -> Outcome {
    auto node = read_node(args->live);
    if (!node.is_ok()) {
      std::cerr << "gpuvet: " << node.status().message() << "\n";
      return {kExitUnusable, false};
    }
    Facts& facts = node.value().facts;
    if (facts.gpus.empty()) {
      std::cerr << "gpuvet: no GPU in " << node.value().provenance
                << ": a baseline needs at least one GPU's facts\n";
      return {kExitUnusable, node.value().abandoned};
    }
    std::vector<Floor> floors;
    if (!args->bench.empty()) {
      Facts measured;
      if (Status s = add_bench_file(args->bench, measured); !s.is_ok()) {
        std::cerr << "gpuvet: " << s.message() << "\n";
        return {kExitUnusable, node.value().abandoned};
      }
      floors = floors_from(bandwidth_values(measured.measurements), args->floor_fraction,
                           fmt::format("by gpuvet bench ({})", args->bench));
      if (floors.empty()) {
        std::cerr << "gpuvet: " << args->bench
                  << " has no host-device, peer or all-reduce bandwidth to make floors from\n";
        return {kExitUnusable, node.value().abandoned};
      }
    }
    const NodePrint print = node_print(facts);
    const std::string text = baseline_toml(print, floors, node.value().provenance, today());
    // What is written must read back: the file is the contract.
    if (auto check = parse_baseline(text, args->out); !check.is_ok()) {
      std::cerr << "gpuvet: internal error: the baseline does not read back: "
                << check.status().message() << "\n";
      return {kExitUnusable, node.value().abandoned};
    }
    if (Status s = write_file_atomically(args->out, text, args->force); !s.is_ok()) {
      std::cerr << "gpuvet: " << s.message() << "\n";
      return {kExitUnusable, node.value().abandoned};
    }
    std::cout << fmt::format("wrote {}: {} x {}, {} pairs, {} floor(s), {}\n", args->out,
                             print.gpu_count, print.gpu_model.value_or("unknown GPU"),
                             print.pairs.size(), floors.size(), node.value().provenance);
    return {kExitOk, node.value().abandoned};
  };
}

std::function<Outcome()> setup_gate(CLI::App& app) {
  auto args = std::make_shared<GateArgs>();
  add_live_options(app, args->live);
  auto* baseline_opt =
      app.add_option("--baseline", args->baseline,
                     "The server model's baseline file (gpuvet baseline capture writes one; "
                     "default: [gate] baseline of the configuration file)");
  app.add_option("--ack", args->ack, kAckHelp);
  app.add_option("--config", args->config,
                 "Configuration file: its [gate] table gives the defaults of --baseline, "
                 "--profile, --exit-style and --fail-on, its [thresholds] the rules' "
                 "(default: $GPUVET_CONFIG, else /etc/gpuvet/gpuvet.toml when present)");
  app.add_option("--profile", args->profile,
                 "quick: facts only, seconds (a health check, a prolog); full: also the "
                 "bandwidth floors through the bench")
      ->check(CLI::IsMember({"quick", "full"}));
  app.add_option("--bench", args->bench,
                 "A saved `gpuvet bench --json` of this node: its bandwidth for the floors "
                 "(with --from, instead of measuring)");
  app.add_option("--exit-style", args->exit_style,
                 "Exit codes for who runs it: gpuvet|nagios (0 ok, 1 warning, 2 critical, 3 "
                 "unknown), npd (0 OK, 1 NonOK, 2 Unknown), slurm (0 healthy, 1 fail, 2 unknown)")
      ->check(CLI::IsMember({"gpuvet", "nagios", "npd", "slurm"}));
  app.add_option("--fail-on", args->fail_on, "The severity that fails the node")
      ->check(CLI::IsMember({"warning", "critical"}));
  app.add_flag("--fail-on-host", args->fail_on_host,
               "Also fail the node on transient host state (CPUs pegged, iowait, a saturated "
               "NIC, clocks under load); by default it is shown, never judged");
  app.add_option("--junit", args->junit, "Also write the result as JUnit XML to this file");
  app.add_flag("--one-line", args->one_line,
               "Print only the reason line (at most 80 characters; for NHC, NPD, drain reasons)")
      ->excludes("--json");
  app.add_option("--drain", args->drain,
                 "slurm: drain this node ($SLURMD_NODENAME) through scontrol when it fails, "
                 "resume it when it passes, only ever touching gpuvet's own drains")
      ->check(CLI::IsMember({"slurm"}));
  auto* profile_opt = app.get_option("--profile");
  auto* style_opt = app.get_option("--exit-style");
  auto* fail_opt = app.get_option("--fail-on");
  return [args, baseline_opt, profile_opt, style_opt, fail_opt]() -> Outcome {
    // The configuration file's [gate] table fills what the command line left out.
    DiagnoseOptions dopt;
    std::string config_error;
    if (const std::string config = config_file(args->config); !config.empty()) {
      auto gc = load_gate_config(config);
      auto th = load_thresholds(config);
      if (!gc.is_ok())
        config_error = gc.status().message();
      else if (!th.is_ok())
        config_error = th.status().message();
      else {
        const GateConfig& g = gc.value();
        if (!baseline_opt->count() && g.baseline) args->baseline = *g.baseline;
        if (!profile_opt->count() && g.profile) args->profile = *g.profile;
        if (!style_opt->count() && g.exit_style) args->exit_style = *g.exit_style;
        if (!fail_opt->count() && g.fail_on) args->fail_on = *g.fail_on;
        dopt.thresholds = th.value();
      }
    }
    auto style = parse_exit_style(args->exit_style);
    const ExitStyle exit_style = style.is_ok() ? style.value() : ExitStyle::kGpuvet;
    const bool line_only = args->one_line || exit_style == ExitStyle::kNpd;
    // Input that cannot be used: the message on stderr, and for a line reader the same
    // (cut to 80 characters) on stdout, where NPD and NHC take their message from.
    const auto unusable = [&](const std::string& message, bool abandoned) -> Outcome {
      std::cerr << "gpuvet: " << terminal_safe(message) << "\n";
      if (line_only) std::cout << gate_unusable_line(message) << "\n";
      return {gate_unusable_exit_code(exit_style), abandoned};
    };
    // --drain slurm: the node's name first, so a gate run outside slurmd refuses before work.
    std::string slurm_node;
    if (args->drain == "slurm") {
      auto name = slurm_node_name(std::getenv("SLURMD_NODENAME"));
      if (!name.is_ok()) return unusable(name.status().message(), false);
      slurm_node = name.value();
    }
    if (!config_error.empty()) return unusable(config_error, false);
    if (Status s = load_acks_option(args->ack, dopt); !s.is_ok())
      return unusable(s.message(), false);
    if (args->baseline.empty())
      return unusable(
          "no baseline: give --baseline FILE, or baseline = \"FILE\" in the [gate] table of "
          "the configuration file",
          false);
    auto baseline = read_baseline_file(args->baseline);
    if (!baseline.is_ok()) return unusable(baseline.status().message(), false);
    if (!args->bench.empty() && args->live.from.empty())
      return unusable(
          "--bench reads a saved bench run for --from input; live, --profile full "
          "measures",
          false);
    auto node = read_node(args->live);
    if (!node.is_ok()) return unusable(node.status().message(), false);
    Facts& facts = node.value().facts;
    const bool abandoned = node.value().abandoned;

    GateOptions options;
    options.profile = args->profile == "full" ? GateProfile::kFull : GateProfile::kQuick;
    options.fail_on = args->fail_on == "warning" ? Severity::kWarning : Severity::kCritical;
    options.exit_style = exit_style;
    options.fail_on_host = args->fail_on_host;
    std::vector<std::string> notes;
    if (!args->bench.empty()) {
      if (Status s = add_bench_file(args->bench, facts); !s.is_ok())
        return unusable(s.message(), abandoned);
    } else if (options.profile == GateProfile::kFull && args->live.from.empty()) {
      BenchOptions bo;
      bo.progress = true;  // `[k/N] key …` on stderr when it is a terminal
      bo.only = bench_keys_for(baseline.value());
      if (bo.only.empty()) bo.only = {"host_to_device_ce", "device_to_host_ce"};
      bo.only.push_back("p2p_truth");
      BenchReport report = run_benchmarks(facts, bo);
      attach_expectations(report, facts);
      const auto measured = bench_measurements(report);
      facts.measurements.insert(facts.measurements.end(), measured.begin(), measured.end());
      for (const auto& n : report.notes) notes.push_back("bench: " + n);
    }
    dopt.now_unix = node.value().now_unix;
    dopt.now_uptime_s = facts.host.uptime_s;
    Diagnosis d = diagnose(facts, dopt);
    GateReport r = judge_gate(baseline.value(), facts, std::move(d),
                              bandwidth_values(facts.measurements), options);
    r.notes.insert(r.notes.end(), notes.begin(), notes.end());

    // Acting on the verdict: Slurm only logs a health check's exit code, so gpuvet drains
    // (or resumes its own drain) itself. The outcome goes to stderr (slurmd's log); stdout
    // stays the report. A drain that could not be done is a gate that did not do its job.
    if (!slurm_node.empty()) {
      SlurmNodeAction a;
      a.node = slurm_node;
      a.health = r.verdict == GateVerdict::kPass   ? SlurmHealth::kHealthy
                 : r.verdict == GateVerdict::kFail ? SlurmHealth::kUnhealthy
                                                   : SlurmHealth::kUnknown;
      // The cause first, in sinfo -R's 20 characters; the whole line stays in the report.
      a.reason = slurm_drain_reason(r.brief, r.causes - 1);
      const auto runner = make_process_runner();
      auto done = apply_slurm_drain(a, *runner);
      if (!done.is_ok()) return unusable(done.status().message(), abandoned);
      std::cerr << "gpuvet: " << done.value().message << "\n";
      r.notes.push_back(done.value().message);
    }

    if (!args->junit.empty())
      if (Status s = write_file_atomically(args->junit, gate_junit_xml(r), true); !s.is_ok())
        return unusable(s.message(), abandoned);
    if (args->live.json) {
      std::cout << gate_to_json(r, JsonOptions{args->live.from.empty() ? "gate" : "gate --from", 2})
                << "\n";
    } else if (line_only) {
      std::cout << r.reason << "\n";
    } else {
      TextOptions text;
      text.color = use_color(args->live);
      text.verbose = args->live.verbose;
      std::cout << render_gate_text(r, text);
    }
    return {r.exit_code, abandoned};
  };
}

}  // namespace gpuvet::cli
