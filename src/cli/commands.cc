#include <sys/ioctl.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <ctime>
#include <iostream>
#include <string_view>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"

#include "build_info.h"
#include "gpuvet/bundle.h"
#include "gpuvet/collect.h"
#include "gpuvet/import.h"
#include "gpuvet/prometheus.h"
#include "gpuvet/report.h"
#include "live.h"

#include <cstdlib>
#include <filesystem>

namespace gpuvet::cli {

namespace {
constexpr const char* kDefaultConfig = "/etc/gpuvet/gpuvet.toml";
}  // namespace

CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number";
        // Checked first: every comparison with NaN is false, so a range check lets it through.
        if (!std::isfinite(v)) return "'" + text + "' is not a finite number";
        if (v < lo || v > hi) return fmt::format("{} is not in the range {} to {}", text, lo, hi);
        return {};
      },
      fmt::format("NUMBER in [{} - {}]", lo, hi));
}

void add_live_options(CLI::App& app, LiveArgs& args) {
  app.add_flag("--json", args.json, "Print JSON (schema gpuvet.report/1, docs/json-schema.md)");
  app.add_flag("-v,--verbose", args.verbose, "Show every Xid event, unreadable field and note");
  app.add_flag("--no-color", args.no_color, "No ANSI colours even on a terminal");
  add_probe_options(app, args);
  app.add_option(
      "--from", args.from,
      "Read saved outputs (a file or a directory: nvidia-smi, topo, dmesg, numactl, NCCL logs, "
      "gpuvet capture bundles, …) instead of this machine; - reads a paste on standard input");
  app.add_option("--step-regex", args.step_regex,
                 "With --from: read step times from any log with this RE2 pattern, named groups "
                 "ms, s or items_per_s (and step, rank), e.g. 'step (?P<step>\\d+).* "
                 "(?P<ms>[0-9.]+) ms'");
}

void add_probe_options(CLI::App& app, LiveArgs& args) {
  app.add_option("--nvml", args.nvml,
                 "NVML library to load (default libnvidia-ml.so.1, or $GPUVET_NVML_LIBRARY)");
  app.add_option("--root", args.root, "Read /proc and /sys under this directory (a saved tree)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--gpu-timeout", args.gpu_timeout_s,
                 "Seconds a GPU may take to answer before it is reported hung")
      ->check(finite_range(0.05, 600.0));
  app.add_option("--init-timeout", args.init_timeout_s, "Seconds NVML initialisation may take")
      ->check(finite_range(0.05, 600.0));
  app.add_option("--sample-window", args.sample_window_s,
                 "Seconds of host CPU/disk/NIC sampling (0 to skip); runs while GPUs are probed")
      ->check(finite_range(0.0, 60.0))
      ->capture_default_str();
  app.add_flag("--no-kernel-log", args.no_kernel_log, "Do not read the kernel log for Xid events");
}

std::string config_file(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("GPUVET_CONFIG"); env && *env) return env;
  std::error_code ec;
  if (std::filesystem::is_regular_file(kDefaultConfig, ec)) return kDefaultConfig;
  return "";
}

Status load_acks_option(const std::string& flag, DiagnoseOptions& options) {
  constexpr const char* kDefaultAcks = "/etc/gpuvet/acks.toml";
  std::string path = flag;
  std::error_code ec;
  if (path.empty() && std::filesystem::is_regular_file(kDefaultAcks, ec)) path = kDefaultAcks;
  if (path.empty()) return Status::ok();
  auto acks = load_acks(path, static_cast<std::int64_t>(std::time(nullptr)));
  if (!acks.is_ok()) return acks.status();
  options.acks = std::move(acks).value();
  return Status::ok();
}

std::string config_template_toml() {
  std::string out = fmt::format(
      "# {} — gpuvet's configuration, read by diagnose, watch and export when present\n"
      "# (--config FILE or $GPUVET_CONFIG name another). Every threshold is commented out at\n"
      "# its default: uncomment a line to change it. Unknown keys are errors (exit 3), never\n"
      "# silently ignored. What each threshold decides: docs/findings.md, gpuvet findings.\n"
      "\n[thresholds]\n",
      kDefaultConfig);
  for (const auto& t : describe_thresholds(Thresholds{}))
    out += fmt::format("# {}\n# {} = {}\n", t.description, t.name, t.value);
  out +=
      "\n# What `gpuvet gate` uses when its command line does not say (the flags win).\n"
      "[gate]\n"
      "# The server model's baseline (gpuvet baseline capture -o FILE writes one)\n"
      "# baseline = \"/etc/gpuvet/baseline.toml\"\n"
      "# quick: facts only, seconds; full: also the bandwidth floors through the bench\n"
      "# profile = \"quick\"\n"
      "# Exit codes for who runs it: gpuvet, nagios, npd (node-problem-detector), slurm\n"
      "# exit_style = \"gpuvet\"\n"
      "# The severity that fails the node: warning or critical\n"
      "# fail_on = \"critical\"\n";
  return out;
}

CollectOptions collect_options(const LiveArgs& args) {
  CollectOptions o;
  o.root = args.root;
  o.nvml_library = nvml_library_choice(args.nvml);
  o.gpu_timeout = std::chrono::milliseconds(std::llround(args.gpu_timeout_s * 1000.0));
  o.init_timeout = std::chrono::milliseconds(std::llround(args.init_timeout_s * 1000.0));
  o.pressure_window = std::chrono::milliseconds(std::llround(args.sample_window_s * 1000.0));
  o.kernel_log = !args.no_kernel_log;
  return o;
}

std::optional<std::string> nvml_library_choice(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("GPUVET_NVML_LIBRARY");
  if (env && *env) return std::string(env);
  return std::nullopt;
}

bool nvml_library_unusable(const Collection& c, const CollectOptions& o) {
  return o.nvml_library && (c.nvml_failure == NvmlFailure::kLibraryMissing ||
                            c.nvml_failure == NvmlFailure::kLibraryInvalid);
}

Result<Facts> import_from(const std::string& path, const ImportOptions& options) {
  if (!options.step_regex.empty())
    if (Status st = check_step_regex(options.step_regex); !st.is_ok()) return st;
  if (path != "-") return import_path(path, options);
  // A paste on standard input (a ticket's text piped in), bounded like a file.
  constexpr std::size_t kMaxStdin = std::size_t{256} << 20;
  std::string text;
  char buf[1 << 16];
  while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(std::cin.gcount()));
    if (text.size() > kMaxStdin) return Status::invalid_input("standard input larger than 256 MiB");
  }
  return import_paste(text, "stdin", options);
}

bool any_recognised(const Facts& facts) {
  return std::any_of(facts.imported.begin(), facts.imported.end(),
                     [](const ImportedFile& f) { return f.format != "unrecognised"; });
}

std::string nothing_recognised(const std::string& path, const Facts& facts) {
  std::string m = "nothing in " + path + " is a supported output (gpuvet formats lists them)";
  for (const auto& p : facts.input_problems) m += "; " + p;
  return m;
}

bool prom_target_usable(const std::string& path) {
  if (path.empty()) return true;
  const Status s = check_textfile_target(path);
  if (!s.is_ok()) std::cerr << "gpuvet: " << s.message() << "\n";
  return s.is_ok();
}

bool write_prom_file(const std::string& path, const Facts& facts, const Diagnosis* diagnosis,
                     std::optional<int> expect_gpus, std::optional<double> duration_s) {
  if (path.empty()) return true;
  MetricsSnapshot m = snapshot_from_facts(facts, diagnosis);
  m.gpus_expected = expect_gpus;
  m.collect_duration_s = duration_s;
  const Status s = write_textfile(path, render_prometheus(m));
  if (!s.is_ok()) std::cerr << "gpuvet: " << s.message() << "\n";
  return s.is_ok();
}

bool use_color(const LiveArgs& args) {
  return color_wanted(ColorContext{args.no_color, ::isatty(STDOUT_FILENO) == 1, std::getenv("TERM"),
                                   std::getenv("NO_COLOR")});
}

int stdout_text_width() {
  WidthContext context;
  struct winsize size {};
  if (::isatty(STDOUT_FILENO) == 1 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0)
    context.tty_columns = size.ws_col;
  context.columns = std::getenv("COLUMNS");
  return text_width_wanted(context);
}

namespace {

std::chrono::milliseconds seconds_to_ms(double s) {
  return std::chrono::milliseconds(static_cast<long long>(std::llround(s * 1000.0)));
}

// Exit code of `gpuvet facts`: 3 when it could not run as asked, 2 when GPU
// facts are missing (no driver, stub, mismatch, hung or lost GPU, an NVML query
// that hung), 1 when some GPU fields failed to read, 0 otherwise.
int facts_exit_code(const Collection& c, const CollectOptions& o) {
  if (nvml_library_unusable(c, o)) return kExitUnusable;
  if (c.facts.gpu_facts_unavailable) return kExitCritical;
  if (!c.nvml_timeouts.empty()) return kExitCritical;
  for (const auto& g : c.facts.gpus)
    if (g.unresponsive) return kExitCritical;
  for (const auto& g : c.facts.gpus)
    if (!g.unreadable.empty()) return kExitWarning;
  return kExitOk;
}

// `facts --from PATH`: 3 when nothing could be read or recognised or the input has a problem
// (Facts::input_problems), else 0.
Outcome facts_from(const std::string& path, bool json, const TextOptions& text,
                   const ImportOptions& options) {
  auto imported = import_from(path, options);
  if (!imported.is_ok()) {
    std::cerr << "gpuvet: " << imported.status().message() << "\n";
    return {kExitUnusable, false};
  }
  const Facts& facts = imported.value();
  const bool recognised = any_recognised(facts);
  if (json)
    std::cout << facts_to_json(facts, JsonOptions{"facts --from", 2}) << "\n";
  else
    std::cout << render_facts_text(facts, text);
  if (!recognised) {
    std::cerr << "gpuvet: " << nothing_recognised(path, facts) << "\n";
    return {kExitUnusable, false};
  }
  if (!facts.input_problems.empty()) return {kExitUnusable, false};  // said in the notes
  return {kExitOk, false};
}

std::function<Outcome()> setup_facts(CLI::App& app) {
  auto args = std::make_shared<LiveArgs>();
  auto prom = std::make_shared<std::string>();
  add_live_options(app, *args);
  app.add_option("--prom", *prom,
                 "Also write the readings as Prometheus metrics to FILE (node_exporter textfile "
                 "collector; written atomically; see docs/prometheus.md)");
  return [args, prom]() -> Outcome {
    TextOptions text;
    text.color = use_color(*args);
    text.verbose = args->verbose;
    if (!prom_target_usable(*prom)) return {kExitUnusable, false};
    if (!args->from.empty()) {
      ImportOptions import_options;
      import_options.step_regex = args->step_regex;
      if (prom->empty()) return facts_from(args->from, args->json, text, import_options);
      Outcome outcome = facts_from(args->from, args->json, text, import_options);
      if (outcome.exit_code == kExitUnusable) return outcome;
      auto imported = import_from(args->from, import_options);
      if (!imported.is_ok() ||
          !write_prom_file(*prom, imported.value(), nullptr, std::nullopt, std::nullopt))
        return {kExitUnusable, false};
      return outcome;
    }
    const auto start = std::chrono::steady_clock::now();
    const CollectOptions o = collect_options(*args);
    const SystemEnv env(o.root);
    Collection c = collect_facts(o, env);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Outcome outcome{facts_exit_code(c, o), c.abandoned_probes};
    if (outcome.exit_code == kExitUnusable) {
      std::cerr << "gpuvet: " << c.nvml_failure_message << "\n";
      return outcome;
    }
    if (args->json)
      std::cout << facts_to_json(c.facts) << "\n";
    else
      std::cout << render_facts_text(c.facts, text);
    if (!write_prom_file(*prom, c.facts, nullptr, std::nullopt, took))
      outcome.exit_code = kExitUnusable;
    return outcome;
  };
}

struct CaptureArgs {
  std::string out_dir;
  bool redact = false;
  double timeout_s = 20;
  std::string nvml;
  std::string root = "/";
};

std::function<Outcome()> setup_capture(CLI::App& app) {
  auto args = std::make_shared<CaptureArgs>();
  app.add_option("OUTDIR", args->out_dir, "New or empty directory for the bundle")->required();
  app.add_flag("--redact", args->redact,
               "Replace serial numbers, UUIDs, host names (and FQDNs), MAC and IP addresses and "
               "/home/<user> by stable tokens");
  app.add_option("--timeout", args->timeout_s, "Seconds each command may run")
      ->check(finite_range(0.1, 600.0));
  app.add_option("--nvml", args->nvml, "NVML library for gpuvet's own facts");
  app.add_option("--root", args->root,
                 "Read /proc and /sys under this directory (a saved tree: this machine's "
                 "commands are then not run)")
      ->check(CLI::ExistingDirectory);
  return [args]() -> Outcome {
    CollectOptions o;
    o.root = args->root;
    o.nvml_library = nvml_library_choice(args->nvml);
    o.pressure_window = std::chrono::milliseconds(500);
    CaptureOptions c;
    c.out_dir = args->out_dir;
    c.redact = args->redact;
    c.command_timeout = seconds_to_ms(args->timeout_s);
    const SystemEnv env(o.root);
    auto summary = capture_bundle(c, o, env);
    if (!summary.is_ok()) {
      std::cerr << "gpuvet: " << summary.status().message() << "\n";
      return {kExitUnusable, false};
    }
    const auto& s = summary.value();
    std::cout << "Bundle " << c.out_dir << ": " << s.files.size() << " files (" << s.ran
              << " commands ran, " << s.missing << " not installed here, "
              << (s.not_run ? std::to_string(s.not_run) + " not run (--root: another machine), "
                            : "")
              << s.failed << " failed or timed out; see manifest.json)"
              << (c.redact ? ", redacted" : "") << "\n";
    std::cout << "Read it back with: gpuvet facts --from " << c.out_dir << "\n";
    return {kExitOk, s.abandoned_probes};
  };
}

std::function<Outcome()> setup_formats(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  app.add_flag("--markdown", *markdown, "Print a Markdown table (docs/formats.md is made from it)");
  return [markdown]() -> Outcome {
    std::cout << (*markdown ? formats_to_markdown(import_formats())
                            : render_formats_text(import_formats()));
    return {kExitOk, false};
  };
}

}  // namespace

// diagnose_command.cc
std::function<Outcome()> setup_diagnose(CLI::App& app);
std::function<Outcome()> setup_findings(CLI::App& app);
// bench_command.cc
std::function<Outcome()> setup_bench(CLI::App& app);
// scale_command.cc
std::function<Outcome()> setup_scale(CLI::App& app);
// gate_command.cc
std::function<Outcome()> setup_baseline(CLI::App& app);
std::function<Outcome()> setup_gate(CLI::App& app);
// fleet_command.cc
std::function<Outcome()> setup_fleet(CLI::App& app);
// export_command.cc
std::function<Outcome()> setup_export(CLI::App& app);
// watch_command.cc
std::function<Outcome()> setup_watch(CLI::App& app);
// report_command.cc
std::function<Outcome()> setup_report(CLI::App& app);
// advise_command.cc
std::function<Outcome()> setup_advise(CLI::App& app);
// docs_command.cc
std::function<Outcome()> setup_man(CLI::App& app);
std::function<Outcome()> setup_completion(CLI::App& app);
// launch_command.cc
std::function<Outcome()> setup_launch(CLI::App& app);
std::function<Outcome()> setup_ckpt_slot(CLI::App& app);
// culprit_command.cc
std::function<Outcome()> setup_culprit(CLI::App& app);

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::optional<int> refuse_unknown_command(int argc, char** argv) {
  // The first word that is not an option names the command (the top level takes no values).
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.starts_with("-")) continue;
    const Command* nearest = nullptr;
    std::size_t best = 0;
    for (const auto& cmd : commands()) {
      if (word == cmd.name) return std::nullopt;
      const std::size_t d = edit_distance(word, cmd.name);
      if (!nearest || d < best) nearest = &cmd, best = d;
    }
    std::string names;
    for (const auto& cmd : commands()) names += (names.empty() ? "" : ", ") + std::string(cmd.name);
    std::cerr << "gpuvet: unknown command '" << terminal_safe(word) << "' (did you mean '"
              << nearest->name << "'?)\n"
              << "Commands: " << names << " (gpuvet --help says what each does)\n";
    return kExitUnusable;
  }
  return std::nullopt;
}

void add_commands(CLI::App& app, std::function<Outcome()>& run) {
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  for (const auto& cmd : commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.summary);
    auto handler = cmd.setup(*sub);
    sub->callback([&run, handler] { run = handler; });
  }
}

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"diagnose",
       "Run the triage playbook: findings with evidence, meaning and decision, the bottleneck "
       "class and the symptom patterns, worst first (exit 0 ok, 1 warning, 2 critical)",
       setup_diagnose},
      {"facts",
       "Collect and print what the node is: GPUs, links, topology, P2P, NUMA, clocks, ECC, Xids, "
       "processes",
       setup_facts},
      {"formats", "List the saved outputs that --from recognises, and what each fills",
       setup_formats},
      {"capture",
       "Save the raw outputs of every triage command, gpuvet's facts and a manifest into a bundle",
       setup_capture},
      {"bench",
       "Measure host↔device, device-local and GPU↔GPU bandwidth and latency, NCCL collectives "
       "and the P2P truth table, against what the links should give",
       setup_bench},
      {"scale",
       "Run the same training step and inference request on 1 GPU and on N: time per step, "
       "throughput, scaling efficiency, comm share, p50/p95/p99",
       setup_scale},
      {"watch",
       "Follow every GPU through NVML interval by interval (clocks, thermal margin, power, "
       "clock-event reasons, PCIe/ECC/NVLink counters, host PSI) and judge the series over time",
       setup_watch},
      {"baseline",
       "baseline capture: write a node's conformance fingerprint (GPUs, links, paths, P2P, "
       "NUMA, configuration, bandwidth floors) as a baseline file for its server model",
       setup_baseline},
      {"gate",
       "Compare the node with its server model's baseline and run the rules: pass, fail or "
       "unknown, a one-line reason, exit codes for Slurm, NHC, node-problem-detector, Nagios",
       setup_gate},
      {"fleet",
       "fleet ingest: keep node reports (gate, diagnose, bench JSON) in a SQLite history; "
       "fleet report: group like nodes and name the drifted ones",
       setup_fleet},
      {"report",
       "report --html OUT FILES: draw gpuvet's JSON outputs (diagnose, gate, bench, scale, watch) "
       "as one self-contained HTML page: findings, GPUs, topology, heat maps, series",
       setup_report},
      {"advise",
       "A second GPU, or one bigger GPU? The article's checklist as a calculator: memory per GPU, "
       "step time, all-reduce (fitted from this node's bench), latency; one recommendation with "
       "the numbers that decide it",
       setup_advise},
      {"launch",
       "launch --per-gpu -- CMD: one job per GPU (CUDA_VISIBLE_DEVICES=<UUID>), bound to its "
       "GPU's NUMA node (CPUs and memory), checked through NVML, stopped as a group when one "
       "fails; the first failure's exit code. launch --in-task -- CMD: inside each task srun or "
       "mpirun started, check its GPU and binding, then run CMD in gpuvet's place",
       setup_launch},
      {"ckpt-slot",
       "ckpt-slot --max K -- CMD: run CMD holding one of K checkpoint slots, so at most K jobs "
       "write checkpoints at once",
       setup_ckpt_slot},
      {"man",
       "Print gpuvet's manual page (roff, generated from these commands): gpuvet man | man -l -",
       setup_man},
      {"completion",
       "Print the bash completion script (generated from these commands): source <(gpuvet "
       "completion bash)",
       setup_completion},
      {"culprit",
       "Which rank of a hung distributed job did not arrive: reads its per-rank PyTorch logs, "
       "flight-recorder dumps, NCCL RAS status and kernel logs offline and names the rank, its "
       "host, pid and GPU, the collective and the signature (exit 0 no hang, 2 hang, 3 bad input)",
       setup_culprit},
      {"findings", "List the findings catalog (ids, severities, what each means)", setup_findings},
      {"export",
       "Serve this node's GPU readings, findings and verdict as Prometheus metrics (/metrics on "
       "loopback) or keep a node_exporter textfile fresh, collecting at most every --interval",
       setup_export},
  };
  return kCommands;
}

bool json_requested(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view w = argv[i];
    if (w == "--") return false;
    if (w == "--json") return true;
  }
  return false;
}

std::string error_document(int argc, char** argv, int exit_code, const std::string& stderr_text) {
  nlohmann::ordered_json args = nlohmann::ordered_json::array();
  std::string command;
  for (int i = 1; i < argc; ++i) {
    args.push_back(std::string(argv[i]));
    if (command.empty() && argv[i][0] != '-') command = argv[i];
  }
  std::string message = stderr_text;
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  nlohmann::ordered_json doc = {
      {"schema", "gpuvet.error/1"}, {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}}},
      {"command", command},         {"exit_code", exit_code},
      {"message", message},         {"argv", args}};
  // Invalid UTF-8 replaced; JSON escapes the control characters.
  return doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace gpuvet::cli
