// `gpuvet diagnose` (live, or --from saved outputs) and `gpuvet findings` (the catalog).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/collect.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "live.h"

namespace gpuvet::cli {

namespace {

struct DiagnoseArgs {
  LiveArgs live;
  int expect_gpus = -1;
  std::string config;
  std::string ack;  // --ack FILE
  std::string prom;
};

}  // namespace

std::function<Outcome()> setup_diagnose(CLI::App& app) {
  auto args = std::make_shared<DiagnoseArgs>();
  add_live_options(app, args->live);
  app.add_option("--expect-gpus", args->expect_gpus,
                 "GPUs this node must have; fewer is the critical finding gpu-missing")
      ->check(CLI::Range(0, 4096));
  app.add_option("--ack", args->ack, kAckHelp);
  app.add_option("--config", args->config,
                 "TOML file with a [thresholds] table overriding rule thresholds "
                 "(see docs/findings.md)");
  app.add_option("--prom", args->prom,
                 "Also write the readings, findings and verdict as Prometheus metrics to FILE "
                 "(node_exporter textfile collector; written atomically; docs/prometheus.md)");
  return [args]() -> Outcome {
    if (!prom_target_usable(args->prom)) return {kExitUnusable, false};
    DiagnoseOptions options;
    if (const std::string config = config_file(args->config); !config.empty()) {
      auto t = load_thresholds(config);
      if (!t.is_ok()) {
        std::cerr << "gpuvet: " << t.status().message() << "\n";
        return {kExitUnusable, false};
      }
      options.thresholds = t.value();
    }
    if (args->expect_gpus >= 0) options.expect_gpus = args->expect_gpus;
    if (Status s = load_acks_option(args->ack, options); !s.is_ok()) {
      std::cerr << "gpuvet: " << s.message() << "\n";
      return {kExitUnusable, false};
    }

    Facts facts;
    bool abandoned = false;
    std::optional<double> took;
    std::string command = "diagnose";
    if (!args->live.from.empty()) {
      command = "diagnose --from";
      ImportOptions import_options;
      import_options.step_regex = args->live.step_regex;
      auto imported = import_from(args->live.from, import_options);
      if (!imported.is_ok()) {
        std::cerr << "gpuvet: " << imported.status().message() << "\n";
        return {kExitUnusable, false};
      }
      facts = std::move(imported.value());
      const bool recognised = any_recognised(facts);
      if (!recognised) {
        std::cerr << "gpuvet: " << nothing_recognised(args->live.from, facts) << "\n";
        return {kExitUnusable, false};
      }
    } else {
      const auto start = std::chrono::steady_clock::now();
      const CollectOptions o = collect_options(args->live);
      const SystemEnv env(o.root);
      Collection c = collect_facts(o, env);
      took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      abandoned = c.abandoned_probes;
      if (nvml_library_unusable(c, o)) {
        std::cerr << "gpuvet: " << c.nvml_failure_message << "\n";
        return {kExitUnusable, abandoned};
      }
      options.now_unix = env.env().clock.unix_now();
      options.now_uptime_s = c.facts.host.uptime_s;
      facts = std::move(c.facts);
    }
    const Diagnosis d = diagnose(facts, options);
    if (args->live.json) {
      std::cout << diagnosis_to_json(facts, d, JsonOptions{command, 2}) << "\n";
    } else {
      TextOptions text;
      text.color = use_color(args->live);
      text.verbose = args->live.verbose;
      text.width = stdout_text_width();
      std::cout << render_diagnosis_text(facts, d, text);
    }
    if (!write_prom_file(args->prom, facts, &d, options.expect_gpus, took))
      return {kExitUnusable, abandoned};
    return {diagnosis_exit_code(d), abandoned};
  };
}

std::function<Outcome()> setup_findings(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  app.add_flag("--markdown", *markdown,
               "Print the catalog as Markdown (docs/findings.md is made from it)");
  auto config_template = std::make_shared<bool>(false);
  app.add_flag("--config-template", *config_template,
               "Print a configuration file with every threshold commented out at its default "
               "(the package installs it as /etc/gpuvet/gpuvet.toml)");
  return [markdown, config_template]() -> Outcome {
    if (*config_template) {
      std::cout << config_template_toml();
      return {kExitOk, false};
    }
    std::cout << (*markdown ? catalog_to_markdown() : render_catalog_text());
    return {kExitOk, false};
  };
}

}  // namespace gpuvet::cli
