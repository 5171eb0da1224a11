// MetricsServer on cpp-httplib (Debian's libcpp-httplib-dev), in builds that have it.
//
// Bounds: `threads` connections are served at once and `queued_connections` more wait for a
// thread; when both are full the accept loop waits, so further clients wait in the kernel's
// listen backlog instead of growing a queue. Reads and writes time out; a request line or a
// header line over 8 KiB and a body over max_request_body_bytes are refused by the library.
#include "gpuvet/prometheus.h"

#ifdef GPUVET_HAVE_HTTPLIB

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

namespace gpuvet {

namespace {

// httplib's own ThreadPool queues without limit; this one makes the accept loop wait.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(int threads, int capacity) : capacity_(static_cast<std::size_t>(capacity)) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mutex_);
    space_.wait(lock, [this] { return jobs_.size() < capacity_ || shutdown_; });
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_ = true;
    }
    ready_.notify_all();
    space_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return !jobs_.empty() || shutdown_; });
        if (jobs_.empty()) return;  // shut down and drained
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      space_.notify_one();
      fn();  // serves one connection and closes it
    }
  }

  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  bool shutdown_ = false;
};

class HttplibServer : public MetricsServer {
 public:
  HttplibServer(const MetricsServerOptions& o, std::function<std::string()> metrics,
                std::string index_page)
      : options_(o), metrics_(std::move(metrics)), index_(std::move(index_page)) {
    const int threads = std::max(1, o.threads);
    const int queued = std::max(1, o.queued_connections);
    server_.new_task_queue = [threads, queued] { return new BoundedPool(threads, queued); };
    server_.set_read_timeout(o.read_timeout);
    server_.set_write_timeout(o.write_timeout);
    server_.set_keep_alive_timeout(o.keep_alive_timeout.count());
    server_.set_keep_alive_max_count(100);
    server_.set_payload_max_length(o.max_request_body_bytes);
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_(), "text/plain; version=0.0.4; charset=utf-8");
    });
    server_.Get("/", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(index_, "text/plain; charset=utf-8");
    });
    server_.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty())
        res.set_content(fmt::format("{} (gpuvet serves /metrics and /)\n", res.status),
                        "text/plain; charset=utf-8");
    });
  }

  Status bind() {
    if (options_.port == 0) {
      port_ = server_.bind_to_any_port(options_.host);
      if (port_ <= 0) port_ = -1;
    } else if (server_.bind_to_port(options_.host, options_.port)) {
      port_ = options_.port;
    } else {
      port_ = -1;
    }
    if (port_ < 0)
      return Status::invalid_input(fmt::format(
          "cannot listen on {}:{} (address not on this machine, or the port is in use or "
          "needs privileges)",
          options_.host, options_.port));
    return Status::ok();
  }

  int port() const override { return port_; }

  void run() override {
    running_ = true;
    if (!stopped_) server_.listen_after_bind();
    running_ = false;
  }

  void stop() override {
    stopped_ = true;
    // httplib's stop() does nothing before its loop has started: repeat until run() is over.
    while (running_) {
      server_.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  MetricsServerOptions options_;
  std::function<std::string()> metrics_;
  std::string index_;
  httplib::Server server_;
  int port_ = -1;
  std::atomic<bool> running_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace

bool metrics_server_available() { return true; }

Result<std::unique_ptr<MetricsServer>> bind_metrics_server(const MetricsServerOptions& options,
                                                           std::function<std::string()> metrics,
                                                           std::string index_page) {
  auto server = std::make_unique<HttplibServer>(options, std::move(metrics), std::move(index_page));
  if (Status s = server->bind(); !s.is_ok()) return s;
  return std::unique_ptr<MetricsServer>(std::move(server));
}

}  // namespace gpuvet

#else  // no HTTP library in this build (the portable static build)

namespace gpuvet {

bool metrics_server_available() { return false; }

Result<std::unique_ptr<MetricsServer>> bind_metrics_server(const MetricsServerOptions&,
                                                           std::function<std::string()>,
                                                           std::string) {
  return Status::unavailable(
      "this gpuvet build has no HTTP server (the portable static build links none); write "
      "the metrics with --prom FILE for node_exporter's textfile collector instead");
}

}  // namespace gpuvet

#endif
