// The /metrics server on real loopback sockets: its answers, and that slow or numerous clients
// cannot keep a scrape from being answered (E8: 20 connections sending a header line a second
// starved cpp-httplib's 16 threads).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gpuvet/prometheus.h"

namespace gpuvet {
namespace {

using namespace std::chrono_literals;

class Running {
 public:
  explicit Running(MetricsServerOptions o) {
    auto bound = bind_metrics_server(
        o,
        [this] {
          ++scrapes;
          return std::string("gpuvet_up 1\n");
        },
        "see /metrics\n");
    EXPECT_TRUE(bound.is_ok()) << bound.status().to_string();
    server_ = std::move(bound.value());
    thread_ = std::thread([this] { server_->run(); });
  }
  ~Running() {
    server_->stop();
    thread_.join();
  }
  int port() const { return server_->port(); }
  std::atomic<int> scrapes{0};

 private:
  std::unique_ptr<MetricsServer> server_;
  std::thread thread_;
};

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes, or what came before `limit` ran out.
std::string read_all(int fd, std::chrono::milliseconds limit) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left <= 0ms) return out + "<timeout>";
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return out;
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

// One request on a fresh connection; the whole answer (the server closes after it).
std::string ask(int port, const std::string& request, std::chrono::milliseconds limit = 10s) {
  const int fd = connect_to(port);
  if (fd < 0) return "<refused>";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out = read_all(fd, limit);
  ::close(fd);
  return out;
}

bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(MetricsServer, AnswersGetAndHeadAndRefusesTheRest) {
  Running s(MetricsServerOptions{});
  const auto metrics = ask(s.port(), "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(starts(metrics, "HTTP/1.1 200 OK\r\n")) << metrics;
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics.find("Content-Length: 12\r\n"), std::string::npos) << metrics;
  EXPECT_TRUE(metrics.ends_with("\r\n\r\ngpuvet_up 1\n")) << metrics;
  const auto head = ask(s.port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(starts(head, "HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n")) << head;
  EXPECT_TRUE(ask(s.port(), "GET / HTTP/1.0\r\n\r\n").ends_with("see /metrics\n"));
  EXPECT_TRUE(starts(ask(s.port(), "GET /nope HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 "));
  const auto post = ask(s.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_TRUE(starts(post, "HTTP/1.1 405 ")) << post;
  EXPECT_NE(post.find("Allow: GET, HEAD\r\n"), std::string::npos);
  EXPECT_TRUE(starts(ask(s.port(), "NOT HTTP AT ALL\r\n\r\n"), "HTTP/1.1 400 "));
  EXPECT_TRUE(starts(ask(s.port(), "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n"),
                     "HTTP/1.1 414 "));
  std::string many = "GET /metrics HTTP/1.1\r\n";
  for (int i = 0; i < 70; ++i) many += "X-" + std::to_string(i) + ": y\r\n";
  EXPECT_TRUE(starts(ask(s.port(), many + "\r\n"), "HTTP/1.1 431 "));
  EXPECT_EQ(s.scrapes.load(), 2);  // GET and HEAD of /metrics, nothing else
}

// Slowloris: 40 connections each sending a header line every 200 ms never finish their head;
// scrapes in the middle of it are answered, and each slow connection is cut at the head
// deadline (the old server cut only a connection silent for a whole read timeout).
TEST(MetricsServer, SlowClientsAreCutAndDoNotStarveScrapes) {
  MetricsServerOptions o;
  o.head_timeout = 1000ms;
  Running s(o);
  std::vector<int> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(connect_to(s.port()));
    ASSERT_GE(slow.back(), 0);
    ::send(slow.back(), "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
  }
  std::atomic<bool> done{false};
  std::thread dribble([&] {
    while (!done) {
      for (int fd : slow) ::send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
      std::this_thread::sleep_for(200ms);
    }
  });
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(starts(ask(s.port(), "GET /metrics HTTP/1.1\r\n\r\n", 5s), "HTTP/1.1 200 "))
        << "scrape " << i;
  // Every slow connection is closed by the server well before the dribble would end its head.
  int cut = 0;
  for (int fd : slow) {
    const std::string rest = read_all(fd, 5s);
    if (rest.find("<timeout>") == std::string::npos) ++cut;
  }
  done = true;
  dribble.join();
  for (int fd : slow) ::close(fd);
  EXPECT_EQ(cut, 40);
}

// More connections from one peer than it may hold: the newest (a scrape) is answered and the
// peer's oldest idle connection is the one closed.
TEST(MetricsServer, APeerOverItsCapLosesItsOldestIdleConnection) {
  MetricsServerOptions o;
  o.max_per_peer = 4;
  o.head_timeout = 60000ms;  // only the cap can close them here
  Running s(o);
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(connect_to(s.port()));
  std::this_thread::sleep_for(100ms);  // accepted, in order
  EXPECT_TRUE(starts(ask(s.port(), "GET /metrics HTTP/1.1\r\n\r\n", 5s), "HTTP/1.1 200 "));
  EXPECT_EQ(read_all(idle[0], 2s), "");              // closed by the server: EOF, no timeout
  EXPECT_EQ(read_all(idle[3], 300ms), "<timeout>");  // the newest idle one is still open
  for (int fd : idle) ::close(fd);
}

}  // namespace
}  // namespace gpuvet
