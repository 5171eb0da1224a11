// `gpuvet watch`: follow every GPU through NVML interval by interval — a live line each on a
// terminal, JSON lines for programs, a recording that `diagnose --from` reads back — and judge
// the series at the end (clocks-degrade-over-time and the other rules over time).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/progress.h"
#include "gpuvet/prometheus.h"
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

// A file can be created beside `path` (where the recording or the textfile is written first,
// then renamed): tried, not inferred from mode bits, which root passes even in /proc.
bool creatable_beside(const std::string& option, const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const std::string probe = path + ".probe-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    std::cerr << "gpuvet: " << option << " " << terminal_safe(path) << ": cannot write in "
              << terminal_safe(dir.string()) << ": " << std::strerror(errno) << "\n";
    return false;
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

// --record FILE, checked before the collection and the sampling (which may run for hours).
// Says why not on stderr.
bool record_target_usable(const std::string& path) {
  const auto say = [&](const std::string& why) {
    std::cerr << "gpuvet: --record " << terminal_safe(path) << ": " << terminal_safe(why) << "\n";
    return false;
  };
  if (path.empty()) return say("no file name");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return say("is a directory");
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    return say("no directory " + dir.string());
  return creatable_beside("--record", path);
}

// --prom FILE: the node's metrics with this interval's samples over the collection's readings,
// and the findings and verdict of `d`.
Status write_watch_prom(const std::string& path, const Facts& facts, const Diagnosis& d,
                        const std::vector<int>& gpus, const std::vector<GpuSample>& latest,
                        std::int64_t now_unix) {
  MetricsSnapshot m = snapshot_from_facts(facts, &d);
  apply_samples(m, gpus, latest);
  m.collected_unix = static_cast<double>(now_unix);
  return write_textfile(path, render_prometheus(m));
}

// Intervals a --duration holds: samples at 0, interval, 2 × interval, … before the end.
int intervals_in(double duration_s, double interval_s) {
  if (duration_s <= 0 || interval_s <= 0) return 0;
  return std::max(1, static_cast<int>(std::ceil(duration_s / interval_s - 1e-9)));
}

}  // namespace

std::function<Outcome()> setup_watch(CLI::App& app) {
  auto live = std::make_shared<LiveArgs>();
  add_live_options(app, *live);
  app.get_option("--json")->description(
      "Print one JSON object per interval and a closing verdict (gpuvet.watch/1, docs/watch.md)");
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
  auto prom = std::make_shared<std::string>();
  app.add_option("--prom", *prom,
                 "Rewrite FILE at every interval with the latest samples as Prometheus metrics "
                 "(node_exporter textfile collector; atomic; docs/prometheus.md)");
  app.add_option("--config", *config, "TOML file with a [thresholds] table (docs/findings.md)");
  auto ack = std::make_shared<std::string>();
  app.add_option("--ack", *ack, kAckHelp);
  return [=]() -> Outcome {
    if (!live->from.empty()) {
      std::cerr
          << "gpuvet: watch follows the live node; a saved series (a --record file, "
             "nvidia-smi dmon or --query-gpu -l output) is judged by gpuvet diagnose --from\n";
      return {kExitUnusable, false};
    }
    DiagnoseOptions judge;
    if (const std::string file = config_file(*config); !file.empty()) {
      auto t = load_thresholds(file);
      if (!t.is_ok()) {
        std::cerr << "gpuvet: " << t.status().message() << "\n";
        return {kExitUnusable, false};
      }
      judge.thresholds = t.value();
    }
    if (Status s = load_acks_option(*ack, judge); !s.is_ok()) {
      std::cerr << "gpuvet: " << s.message() << "\n";
      return {kExitUnusable, false};
    }
    if (!record->empty() && !record_target_usable(*record)) return {kExitUnusable, false};
    if (!prom->empty() && (!prom_target_usable(*prom) || !creatable_beside("--prom", *prom)))
      return {kExitUnusable, false};
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
    judge.now_unix = env.env().clock.unix_now();
    judge.now_uptime_s = c.facts.host.uptime_s;
    // While watching, the metrics carry the findings of the collection at the start; the
    // last write carries the verdict over the whole series.
    const Diagnosis at_start = prom->empty() ? Diagnosis{} : diagnose(c.facts, judge);
    bool prom_failed = false;
    const auto prom_write = [&](const Diagnosis& d, const std::vector<GpuSample>& latest) {
      if (prom->empty() || prom_failed) return;
      const Status s =
          write_watch_prom(*prom, c.facts, d, *gpus, latest, env.env().clock.unix_now());
      if (s.is_ok()) return;
      std::cerr << "gpuvet: " << terminal_safe(s.message()) << " (no more writes of it)\n";
      prom_failed = true;
    };
    if (!live->json) std::cout << render_watch_header(c.facts, *gpus, *interval) << std::flush;
    std::vector<GpuSample> previous;
    bool output_lost = false;
    {
      // `[k/N] …` on stderr for a bounded watch on a terminal; taken off the line before each
      // interval's output and before the verdict.
      Progress progress(STDERR_FILENO, *duration > 0, intervals_in(*duration, *interval));
      const std::string what = "watching for " + (*duration < 60 ? fmt::format("{:g} s", *duration)
                                                                 : format_elapsed(*duration));
      while (auto iv = w.next(g_stop)) {
        progress.clear();
        if (live->json)
          std::cout << watch_interval_to_json(*iv) << "\n" << std::flush;
        else
          std::cout << render_watch_interval(*iv, previous) << std::flush;
        // An output that cannot be written (a full disk, /dev/full): stop now, not at the end
        // of a watch that may never end; main says why and exits 3.
        if (!std::cout) {
          output_lost = true;
          break;
        }
        prom_write(at_start, iv->gpus);
        progress.step(what);
        previous = iv->gpus;
      }
    }
    const double watched = w.elapsed_s();
    Facts series = w.finish();
    judge.now_unix = env.env().clock.unix_now();
    judge.now_uptime_s = series.host.uptime_s;
    const Diagnosis d = diagnose(series, judge);
    // The watch's own findings, and any critical condition of the node (a GPU lost or not
    // answering, an uncorrectable ECC error): exit 2 like diagnose.
    int code = watch_exit_code(d);
    if (output_lost) return {kExitUnusable, w.abandoned_probes()};
    prom_write(d, previous);
    if (prom_failed) code = kExitUnusable;
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
