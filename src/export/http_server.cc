// MetricsServer: one thread, poll(), non-blocking sockets.
//
// Why not a library: cpp-httplib 0.11 (Debian 12) gives each connection a thread for as long as
// it reads, with a timeout per read, so 20 clients that send one header line a second hold every
// thread and no scrape is answered (slowloris); none of Debian's HTTP libraries bounds the whole
// request head. Here a waiting connection costs a slot in a poll set, not a thread, and:
// - the whole request head must arrive within head_timeout (3 s), the whole answer be written
//   within write_timeout; the head is at most max_head_bytes and max_header_lines;
// - at most max_connections are open and max_per_peer from one address; a new connection over
//   either cap closes the oldest one of that peer (or of all) still sending its head, so a
//   scrape, whose head comes in one packet, always gets in;
// - every answer is one HTTP/1.1 response with Connection: close.
// The request is read only as far as its request line: GET and HEAD of /metrics and /.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "gpuvet/prometheus.h"

namespace gpuvet {

namespace {

using Clock = std::chrono::steady_clock;

struct Connection {
  int fd = -1;
  std::string peer;  // the address, without the port
  enum class State { kReading, kWriting, kDraining } state = State::kReading;
  Clock::time_point deadline;
  std::string in;
  std::string out;
  std::size_t sent = 0;
};

std::string peer_address(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr))  // ::ffff:a.b.c.d is the IPv4 peer a.b.c.d
      inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], text, sizeof text);
    else
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
  }
  return text;
}

std::string response(int code, std::string_view reason, std::string_view type,
                     std::string_view body, bool head_only, std::string_view extra = {}) {
  std::string r = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
      code, reason, type, body.size(), extra);
  if (!head_only) r += body;
  return r;
}

std::string error_response(int code, std::string_view reason) {
  return response(code, reason, "text/plain; charset=utf-8",
                  fmt::format("{} {} (gpuvet serves GET /metrics and /)\n", code, reason), false);
}

class PollServer : public MetricsServer {
 public:
  PollServer(const MetricsServerOptions& o, std::function<std::string()> metrics,
             std::string index_page)
      : options_(o), metrics_(std::move(metrics)), index_(std::move(index_page)) {}

  ~PollServer() override {
    for (auto& c : connections_) ::close(c.fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    for (int fd : wake_) ::close(fd);
  }

  Status bind() {
    const std::string port = std::to_string(options_.port);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const char* host = options_.host.empty() ? nullptr : options_.host.c_str();
    if (int rc = ::getaddrinfo(host, port.c_str(), &hints, &found); rc != 0)
      return Status::invalid_input(fmt::format("cannot listen on {}:{}: {}", options_.host,
                                               options_.port, ::gai_strerror(rc)));
    int last_errno = 0;
    for (addrinfo* a = found; a && listen_fd_ < 0; a = a->ai_next) {
      int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) {
        last_errno = errno;
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
        listen_fd_ = fd;
      } else {
        last_errno = errno;
        ::close(fd);
      }
    }
    ::freeaddrinfo(found);
    if (listen_fd_ < 0)
      return Status::invalid_input(fmt::format(
          "cannot listen on {}:{}: {} (address not on this machine, or the port is in use or "
          "needs privileges)",
          options_.host, options_.port, std::strerror(last_errno)));
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    if (::pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0) {
      wake_[0] = wake_[1] = -1;
      return Status::unavailable(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
    }
    // Each connection is a descriptor: stay well under the process's limit.
    rlimit nofile{};
    std::size_t cap = options_.max_connections;
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur > 64)
      cap = std::min<std::size_t>(cap, static_cast<std::size_t>(nofile.rlim_cur) - 64);
    max_connections_ = std::max<std::size_t>(cap, 1);
    return Status::ok();
  }

  int port() const override { return port_; }

  void run() override {
    std::vector<pollfd> fds;
    while (!stopped_) {
      fds.clear();
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      auto now = Clock::now();
      auto next = now + std::chrono::seconds(1);
      for (const auto& c : connections_) {
        fds.push_back(
            {c.fd, static_cast<short>(c.state == Connection::State::kWriting ? POLLOUT : POLLIN),
             0});
        next = std::min(next, c.deadline);
      }
      const auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
      if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<long>(wait, 0))) < 0 &&
          errno != EINTR)
        break;
      if (stopped_) break;
      // Connections first, so a head that has arrived is answered before an eviction.
      std::size_t i = 2;
      for (auto it = connections_.begin(); it != connections_.end(); ++i) {
        const short revents = fds[i].revents;
        bool keep = true;
        if (revents & (POLLERR | POLLNVAL))
          keep = false;
        else if (revents & (POLLIN | POLLHUP) && it->state == Connection::State::kReading)
          keep = read_head(*it);
        else if (revents & POLLOUT && it->state == Connection::State::kWriting)
          keep = write_answer(*it);
        else if (revents & (POLLIN | POLLHUP) && it->state == Connection::State::kDraining)
          keep = drain(*it);
        if (keep && Clock::now() >= it->deadline) keep = false;  // too slow: cut
        it = keep ? std::next(it) : close(it);
      }
      if (fds[1].revents & POLLIN) accept_all();
    }
    for (auto it = connections_.begin(); it != connections_.end();) it = close(it);
  }

  void stop() override {
    stopped_ = true;
    if (wake_[1] >= 0) {
      const char byte = 1;
      [[maybe_unused]] auto n = ::write(wake_[1], &byte, 1);
    }
  }

 private:
  using Iterator = std::list<Connection>::iterator;

  Iterator close(Iterator it) {
    ::close(it->fd);
    if (auto p = per_peer_.find(it->peer); p != per_peer_.end() && --p->second == 0)
      per_peer_.erase(p);
    return connections_.erase(it);
  }

  // Under a cap that is full: closes the oldest connection (of `peer`, or of anyone when
  // empty) still sending its head or already answered, never one being answered. connections_
  // is in opening order, so the first match is the oldest. False when there is none to close.
  bool make_room(const std::string& peer) {
    const auto victim =
        std::find_if(connections_.begin(), connections_.end(), [&](const Connection& c) {
          return c.state != Connection::State::kWriting && (peer.empty() || c.peer == peer);
        });
    if (victim == connections_.end()) return false;
    close(victim);
    return true;
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a transient error (EMFILE, ECONNABORTED): poll again
      std::string peer = peer_address(addr);
      const auto held = per_peer_.find(peer);
      if ((held != per_peer_.end() && held->second >= options_.max_per_peer && !make_room(peer)) ||
          (connections_.size() >= max_connections_ && !make_room({}))) {
        ::close(fd);  // a peer is never left counted for a connection it did not get
        continue;
      }
      Connection c;
      c.fd = fd;
      c.peer = std::move(peer);
      c.deadline = Clock::now() + options_.head_timeout;
      ++per_peer_[c.peer];
      connections_.push_back(std::move(c));
    }
  }

  // false: close it.
  bool read_head(Connection& c) {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      const std::size_t scanned = c.in.size() >= 3 ? c.in.size() - 3 : 0;
      c.in.append(buffer, static_cast<std::size_t>(n));
      const auto end = c.in.find("\r\n\r\n", scanned);
      if (end != std::string::npos) c.in.resize(end + 2);  // the head; a body is never read
      // The request line and the header lines, each ended by a newline.
      const bool too_many_lines =
          static_cast<std::size_t>(std::count(c.in.begin(), c.in.end(), '\n')) >
          options_.max_header_lines + 1;
      std::optional<std::string> out;
      if (too_many_lines)
        out = error_response(431, "Request Header Fields Too Large");
      else if (end != std::string::npos)
        out = route(c.in);
      else if (c.in.size() > options_.max_head_bytes)
        out = c.in.find('\n') != std::string::npos
                  ? error_response(431, "Request Header Fields Too Large")
                  : error_response(414, "URI Too Long");
      if (out) {
        answer(c, std::move(*out));
        return write_answer(c);
      }
    }
  }

  void answer(Connection& c, std::string out) {
    c.state = Connection::State::kWriting;
    c.out = std::move(out);
    c.sent = 0;
    c.deadline = Clock::now() + options_.write_timeout;
    c.in.clear();
    c.in.shrink_to_fit();
  }

  bool write_answer(Connection& c) {
    while (c.sent < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      c.sent += static_cast<std::size_t>(n);
    }
    // All written. Closing now with unread request bytes would send a reset that can destroy
    // the answer in the client's buffer: end our side, then read and drop until the client
    // closes (bounded by linger_timeout).
    ::shutdown(c.fd, SHUT_WR);
    c.state = Connection::State::kDraining;
    c.out.clear();
    c.out.shrink_to_fit();
    c.deadline = Clock::now() + options_.linger_timeout;
    return true;
  }

  bool drain(Connection& c) {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    }
  }

  // The head, up to and including its last CRLF: only the request line matters.
  std::string route(std::string_view head) {
    const auto eol = head.find("\r\n");
    const std::string_view line = head.substr(0, eol);
    const auto sp1 = line.find(' ');
    const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos ||
        !line.substr(sp2 + 1).starts_with("HTTP/1."))
      return error_response(400, "Bad Request");
    const std::string_view method = line.substr(0, sp1);
    std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    target = target.substr(0, target.find('?'));
    const bool head_only = method == "HEAD";
    if (method != "GET" && !head_only)
      return response(405, "Method Not Allowed", "text/plain; charset=utf-8",
                      "405 Method Not Allowed (gpuvet serves GET /metrics and /)\n", false,
                      "Allow: GET, HEAD\r\n");
    if (target == "/metrics")
      return response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", metrics_(), head_only);
    if (target == "/") return response(200, "OK", "text/plain; charset=utf-8", index_, head_only);
    return error_response(404, "Not Found");
  }

  MetricsServerOptions options_;
  std::function<std::string()> metrics_;
  std::string index_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = -1;
  std::size_t max_connections_ = 0;
  std::list<Connection> connections_;  // in opening order
  std::map<std::string, std::size_t> per_peer_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

Result<std::unique_ptr<MetricsServer>> bind_metrics_server(const MetricsServerOptions& options,
                                                           std::function<std::string()> metrics,
                                                           std::string index_page) {
  auto server = std::make_unique<PollServer>(options, std::move(metrics), std::move(index_page));
  if (Status s = server->bind(); !s.is_ok()) return s;
  return std::unique_ptr<MetricsServer>(std::move(server));
}

}  // namespace gpuvet
