// `gpuvet export`: the node's metrics for Prometheus, kept fresh. Collects (NVML, sysfs, the
// kernel log, under the same per-GPU watchdog as `diagnose`) and diagnoses at most every
// --interval seconds; serves the last result on /metrics (--listen) and/or rewrites a
// node_exporter textfile (--prom) after each collection. SIGTERM and SIGINT stop it.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/collect.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/prometheus.h"
#include "live.h"

namespace gpuvet::cli {

namespace {

struct ExportArgs {
  LiveArgs live;
  std::string listen;
  bool allow_remote = false;
  std::string prom;
  double interval_s = 15;
  int expect_gpus = -1;
  std::string config;
  std::string ack;  // --ack FILE
};

// The write end of the pipe SIGTERM/SIGINT write to: a signal handler may only touch
// async-signal-safe state, hence this one process-wide value (set before the handlers).
std::atomic<int> g_signal_pipe{-1};

void on_termination_signal(int) {
  const int fd = g_signal_pipe.load();
  if (fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);
  }
}

// One collection and its diagnosis, rendered.
struct Snapshot {
  std::shared_ptr<const std::string> text;
  bool abandoned = false;
  bool unusable = false;  // the NVML library the user named is missing or not NVML
  std::string message;
};

Snapshot collect_once(const ExportArgs& args, const DiagnoseOptions& base) {
  Snapshot out;
  const auto start = std::chrono::steady_clock::now();
  const CollectOptions o = collect_options(args.live);
  const SystemEnv env(o.root);
  Collection c = collect_facts(o, env);
  out.abandoned = c.abandoned_probes;
  if (nvml_library_unusable(c, o)) {
    out.unusable = true;
    out.message = c.nvml_failure_message;
    return out;
  }
  DiagnoseOptions options = base;
  options.now_unix = env.env().clock.unix_now();
  options.now_uptime_s = c.facts.host.uptime_s;
  const Diagnosis d = diagnose(c.facts, options);
  MetricsSnapshot m = snapshot_from_facts(c.facts, &d);
  m.gpus_expected = options.expect_gpus;
  m.collect_duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.text = std::make_shared<const std::string>(render_prometheus(m));
  return out;
}

class Exporter {
 public:
  Exporter(const ExportArgs& args, DiagnoseOptions options)
      : args_(args), options_(std::move(options)) {}

  // The first collection, before anything is served: an unusable setup fails here (exit 3).
  bool start(std::string& error) {
    Snapshot s = collect_once(args_, options_);
    abandoned_ = s.abandoned;
    if (s.unusable) {
      error = s.message;
      return false;
    }
    if (!publish(s, error)) return false;
    return true;
  }

  std::shared_ptr<const std::string> current() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

  // Collects every interval until stop(); returns at once when a probe is stuck.
  void loop() {
    const auto interval = std::chrono::milliseconds(std::llround(args_.interval_s * 1000.0));
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (wake_.wait_for(lock, interval, [this] { return stopping_; })) return;
      }
      if (abandoned_) {
        // A driver call of an earlier collection never returned: asking again would leave
        // another thread stuck each time. The last readings stay served, and their
        // timestamp (gpuvet_last_collect_timestamp_seconds) shows they age.
        if (!said_stuck_) {
          std::cerr << "gpuvet export: a GPU stopped answering; collection paused, the last "
                       "readings stay served (restart gpuvet export once the GPU is back)\n";
          said_stuck_ = true;
        }
        continue;
      }
      Snapshot s = collect_once(args_, options_);
      abandoned_ = abandoned_ || s.abandoned;
      std::string error;
      if (!s.unusable && !publish(s, error)) std::cerr << "gpuvet export: " << error << "\n";
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
  }

  bool abandoned() const { return abandoned_; }

 private:
  bool publish(const Snapshot& s, std::string& error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      text_ = s.text;
    }
    if (!args_.prom.empty()) {
      if (Status st = write_textfile(args_.prom, *s.text); !st.is_ok()) {
        error = st.message();
        return false;
      }
    }
    return true;
  }

  const ExportArgs& args_;
  const DiagnoseOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::shared_ptr<const std::string> text_;
  std::atomic<bool> abandoned_{false};
  bool said_stuck_ = false;
};

std::string index_page(const ExportArgs& args) {
  return fmt::format(
      "gpuvet export {}\n\n"
      "/metrics  this node's GPU readings, findings and verdict (Prometheus text format 0.0.4),\n"
      "          collected at most every {} s; names and labels: docs/prometheus.md\n",
      GPUVET_VERSION, args.interval_s);
}

Outcome run_export(const ExportArgs& args) {
  if (args.listen.empty() && args.prom.empty()) {
    std::cerr << "gpuvet export: nothing to do: give --listen HOST:PORT (serve /metrics), "
                 "--prom FILE (node_exporter textfile), or both\n";
    return {kExitUnusable, false};
  }
  std::optional<ListenAddress> address;
  if (!args.listen.empty()) {
    auto parsed = parse_listen_address(args.listen);
    if (!parsed.is_ok()) {
      std::cerr << "gpuvet export: " << parsed.status().message() << "\n";
      return {kExitUnusable, false};
    }
    address = parsed.value();
    if (!address->loopback && !args.allow_remote) {
      std::cerr << "gpuvet export: --listen " << args.listen
                << " is not a loopback address: anyone who can reach it reads this node's "
                   "GPU inventory and findings; add --allow-remote to serve it anyway\n";
      return {kExitUnusable, false};
    }
  }
  if (!args.prom.empty()) {
    if (Status s = check_textfile_target(args.prom); !s.is_ok()) {
      std::cerr << "gpuvet export: " << s.message() << "\n";
      return {kExitUnusable, false};
    }
  }
  DiagnoseOptions options;
  if (const std::string config = config_file(args.config); !config.empty()) {
    auto t = load_thresholds(config);
    if (!t.is_ok()) {
      std::cerr << "gpuvet export: " << t.status().message() << "\n";
      return {kExitUnusable, false};
    }
    options.thresholds = t.value();
  }
  if (args.expect_gpus >= 0) options.expect_gpus = args.expect_gpus;
  if (Status s = load_acks_option(args.ack, options); !s.is_ok()) {
    std::cerr << "gpuvet export: " << s.message() << "\n";
    return {kExitUnusable, false};
  }

  // SIGTERM/SIGINT from here on only wake the signal thread, which stops the rest.
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    std::cerr << "gpuvet export: pipe: " << std::strerror(errno) << "\n";
    return {kExitUnusable, false};
  }
  g_signal_pipe = pipe_fds[1];
  struct sigaction sa {};
  sa.sa_handler = on_termination_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a scraper that hangs up mid-response is no reason to die

  Exporter exporter(args, options);
  std::string error;
  if (!exporter.start(error)) {
    std::cerr << "gpuvet export: " << error << "\n";
    return {kExitUnusable, exporter.abandoned()};
  }

  std::unique_ptr<MetricsServer> server;
  if (address) {
    MetricsServerOptions so;
    so.host = address->host;
    so.port = address->port;
    auto bound = bind_metrics_server(
        so, [&exporter] { return *exporter.current(); }, index_page(args));
    if (!bound.is_ok()) {
      std::cerr << "gpuvet export: " << bound.status().message() << "\n";
      return {kExitUnusable, exporter.abandoned()};
    }
    server = std::move(bound.value());
    const bool v6 = address->host.find(':') != std::string::npos;
    std::cerr << fmt::format("gpuvet export: serving http://{}{}{}:{}/metrics", v6 ? "[" : "",
                             address->host, v6 ? "]" : "", server->port());
  } else {
    std::cerr << "gpuvet export: writing " << args.prom;
  }
  if (!args.prom.empty() && server) std::cerr << " and " << args.prom;
  std::cerr << fmt::format(", collecting every {} s (SIGTERM or Ctrl-C stops)\n", args.interval_s)
            << std::flush;

  std::thread signals([&] {
    char byte;
    while (::read(pipe_fds[0], &byte, 1) < 0 && errno == EINTR) {
    }
    exporter.stop();
    if (server) server->stop();
  });
  if (server) {
    std::thread collector([&] { exporter.loop(); });
    server->run();
    exporter.stop();
    collector.join();
  } else {
    exporter.loop();
  }
  // Wakes the signal thread when the loop ended for another reason.
  on_termination_signal(0);
  signals.join();
  std::cerr << "gpuvet export: stopped\n";
  return {kExitOk, exporter.abandoned()};
}

}  // namespace

std::function<Outcome()> setup_export(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  app.add_option("--listen", args->listen,
                 "Serve /metrics on HOST:PORT (127.0.0.1:9401; [::1]:9401; port 0 picks a free "
                 "one); a non-loopback address needs --allow-remote");
  app.add_flag("--allow-remote", args->allow_remote,
               "Allow --listen on an address other hosts can reach");
  app.add_option("--prom", args->prom,
                 "Also rewrite FILE (node_exporter textfile collector, *.prom) after each "
                 "collection, atomically");
  app.add_option("--interval", args->interval_s,
                 "Seconds between collections (at most one "
                 "collection per interval, whatever the scrapes)")
      ->check(finite_range(1.0, 86400.0))
      ->capture_default_str();
  app.add_option("--expect-gpus", args->expect_gpus,
                 "GPUs this node must have; fewer is the critical finding gpu-missing")
      ->check(CLI::Range(0, 4096));
  app.add_option("--ack", args->ack, kAckHelp);
  app.add_option("--config", args->config,
                 "TOML file with a [thresholds] table overriding rule thresholds");
  add_probe_options(app, args->live);
  return [args]() -> Outcome { return run_export(*args); };
}

}  // namespace gpuvet::cli
