// `gpuvet watch`: follow every GPU through NVML interval by interval — a live line each on a
// terminal, JSON lines for programs, a recording that `diagnose --from` reads back — and judge
// the series at the end (clocks-degrade-over-time and the other rules over time).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "gpuvet/watch.h"
#include "live.h"

namespace gpuvet::cli {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop = true; }

// SIGINT/SIGTERM end the watch with its verdict instead of killing gpuvet; the previous
// handlers (which also end child processes) come back when the watch is over.
class StopSignals {
 public:
  StopSignals() {
    g_stop = false;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// The recording: a gpuvet.report/1 document written beside its final name and renamed, so a
// reader never sees half of it.
Status write_recording(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::invalid_input("cannot write " + tmp);
    out << text << "\n";
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::invalid_input("cannot write " + tmp + " (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return Status::invalid_input("cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace

std::function<Outcome()> setup_watch(CLI::App& app) {
  auto live = std::make_shared<LiveArgs>();
  add_live_options(app, *live);
  auto interval = std::make_shared<double>(1.0);
  auto duration = std::make_shared<double>(0.0);
  auto gpus = std::make_shared<std::vector<int>>();
  auto record = std::make_shared<std::string>();
  auto config = std::make_shared<std::string>();
  app.add_option("--interval", *interval, "Seconds between samples")
      ->check(finite_range(0.05, 3600.0))
      ->capture_default_str();
  app.add_option("--duration", *duration, "Seconds to watch (0: until Ctrl-C or SIGTERM)")
      ->check(finite_range(0.0, 30.0 * 86400.0))
      ->capture_default_str();
  app.add_option("--gpus", *gpus, "Only these GPU indices, e.g. 0,2,3")
      ->delimiter(',')
      ->check(CLI::Range(0, 4095));
  app.add_option("--record", *record,
                 "Write the facts and the whole series to FILE at the end (gpuvet.report/1; "
                 "gpuvet diagnose --from FILE judges it again)");
  app.add_option("--config", *config, "TOML file with a [thresholds] table (docs/findings.md)");
  return [=]() -> Outcome {
    if (!live->from.empty()) {
      std::cerr
          << "gpuvet: watch follows the live node; a saved series (a --record file, "
             "nvidia-smi dmon or --query-gpu -l output) is judged by gpuvet diagnose --from\n";
      return {kExitUnusable, false};
    }
    DiagnoseOptions judge;
    if (!config->empty()) {
      auto t = load_thresholds(*config);
      if (!t.is_ok()) {
        std::cerr << "gpuvet: " << t.status().message() << "\n";
        return {kExitUnusable, false};
      }
      judge.thresholds = t.value();
    }
    if (!record->empty()) {
      const auto dir = std::filesystem::path(*record).parent_path();
      std::error_code ec;
      if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
        std::cerr << "gpuvet: --record " << terminal_safe(*record) << ": no directory "
                  << terminal_safe(dir.string()) << "\n";
        return {kExitUnusable, false};
      }
    }
    WatchOptions o;
    o.interval_s = *interval;
    o.duration_s = *duration;
    o.gpus = *gpus;
    o.collect = collect_options(*live);
    const SystemEnv env(o.collect.root);
    Watch w(o, env.env());
    const Collection& c = w.start();
    if (nvml_library_unusable(c, o.collect) || c.facts.gpus.empty()) {
      std::cerr << "gpuvet: no GPU to watch"
                << (c.nvml_failure_message.empty() ? "" : ": " + c.nvml_failure_message) << "\n";
      return {kExitUnusable, w.abandoned_probes()};
    }
    for (int g : *gpus)
      if (g >= static_cast<int>(c.facts.gpus.size())) {
        std::cerr << "gpuvet: --gpus " << g << ": this node has GPU 0 to "
                  << c.facts.gpus.size() - 1 << "\n";
        return {kExitUnusable, w.abandoned_probes()};
      }
    const StopSignals signals;
    if (!live->json) std::cout << render_watch_header(c.facts, *gpus, *interval) << std::flush;
    std::vector<GpuSample> previous;
    while (auto iv = w.next(g_stop)) {
      if (live->json)
        std::cout << watch_interval_to_json(*iv) << "\n" << std::flush;
      else
        std::cout << render_watch_interval(*iv, previous) << std::flush;
      previous = iv->gpus;
    }
    const double watched = w.elapsed_s();
    Facts series = w.finish();
    judge.now_unix = env.env().clock.unix_now();
    judge.now_uptime_s = series.host.uptime_s;
    const Diagnosis d = diagnose(series, judge);
    int code = kExitOk;
    for (const auto& f : d.findings)
      if (finding_measured_by(f.id, kByWatch))
        code = std::max(code, severity_exit_code(f.severity));
    if (live->json)
      std::cout << watch_verdict_to_json(series, d, watched) << "\n";
    else
      std::cout << render_watch_verdict(series, d, watched);
    if (!record->empty()) {
      const Status s =
          write_recording(*record, diagnosis_to_json(series, d, JsonOptions{"watch", 2}));
      if (!s.is_ok()) {
        std::cerr << "gpuvet: " << s.message() << "\n";
        code = kExitUnusable;
      }
    }
    return {code, w.abandoned_probes()};
  };
}

}  // namespace gpuvet::cli
