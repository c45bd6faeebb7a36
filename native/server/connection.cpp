#include "native/server/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

namespace runnel::server {
namespace {

using Clock = std::chrono::steady_clock;

int to_ms(double seconds) {
  return static_cast<int>(std::clamp(seconds * 1000.0, 0.0, 2e9));
}

// The refusing thread of ConnectionPool: its connections get a 503 without being read.
thread_local bool t_refuse_connections = false;

const char* reason_phrase(int status) {
  switch (status) {
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// Sends all of `text` (a short response), waiting at most timeout_ms per wait.
void send_all(socket_t sock, const std::string& text, int timeout_ms) {
  size_t sent = 0;
  while (sent < text.size()) {
    pollfd p{sock, POLLOUT, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return;
    const ssize_t n = send(sock, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

// Closes after an answer to a request that was not read to its end: a close with unread
// bytes sends a reset, which can destroy the answer before the client reads it. So stop
// sending, then read and drop what still comes for a short while.
void lingering_close(socket_t sock, int linger_ms) {
  shutdown(sock, SHUT_WR);
  const auto end = Clock::now() + std::chrono::milliseconds(linger_ms);
  char sink[4096];
  size_t dropped = 0;
  while (dropped < (1u << 20)) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
    const ssize_t n = recv(sock, sink, sizeof sink, 0);
    if (n <= 0) break;
    dropped += static_cast<size_t>(n);
  }
  close(sock);
}

void address_of(socket_t sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  const int rc = peer ? getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len)
                      : getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

// httplib's view of one connection, with the limits of one request: its deadline, its
// header bytes. httplib reads the request line and headers a byte at a time (buffered
// here) and the body in blocks, and writes the reply; a request that breaks a limit
// fails its reads, and what httplib then tries to answer is dropped: the connection
// loop answers it (408 / 431) instead.
class GuardedStream : public httplib::Stream {
 public:
  enum class Failure { None, Timeout, HeaderTooLarge };

  GuardedStream(socket_t sock, const ConnectionLimits& limits) : sock_(sock), limits_(limits) {}

  // Waits up to timeout_ms for a next request's first byte; false: none came.
  bool wait_request(int timeout_ms) {
    if (pos_ < len_) return true;
    pollfd p{sock_, POLLIN, 0};
    return poll(&p, 1, timeout_ms) > 0 && (p.revents & POLLIN);
  }
  void begin_request() {
    deadline_ = Clock::now() + std::chrono::milliseconds(to_ms(limits_.request_timeout_s));
    in_request_ = true;
    headers_done_ = false;
    header_bytes_ = 0;
    newlines_ = 0;
  }
  Failure failure() const { return failure_; }

  bool is_readable() const override {
    if (pos_ < len_) return true;
    pollfd p{sock_, POLLIN, 0};
    return poll(&p, 1, to_ms(limits_.idle_timeout_s)) > 0;
  }
  // Writable, and the client has not hung up (a stream ends its generation then).
  bool is_writable() const override {
    pollfd p{sock_, POLLOUT, 0};
    if (poll(&p, 1, to_ms(limits_.write_timeout_s)) <= 0 || (p.revents & (POLLERR | POLLHUP)))
      return false;
    char c;
    return recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (failure_ != Failure::None) return -1;
    if (pos_ == len_ && !fill()) return -1;
    const size_t n = std::min(size, len_ - pos_);
    if (!count_header_bytes(buffer_ + pos_, n)) return -1;
    std::memcpy(ptr, buffer_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (failure_ != Failure::None) return static_cast<ssize_t>(size);  // the loop answers instead
    // A reply has begun: generation may take its time. (Not an interim "100 Continue",
    // after which the body is still to come.)
    if (size < 12 || std::memcmp(ptr, "HTTP/1.1 100", 12) != 0) in_request_ = false;
    // All of it, or -1 once the client has taken no bytes for the write timeout. A
    // blocking send of a large body (a non-streamed reply of megabytes) waited past the
    // poll, so an unread reply held its slot for about 2.5 write timeouts instead of one
    // (tests/server/slow_reader.test.mjs); httplib's write_format also expects no partial
    // writes.
    size_t sent = 0;
    while (sent < size) {
      pollfd p{sock_, POLLOUT, 0};
      if (poll(&p, 1, to_ms(limits_.write_timeout_s)) <= 0) return -1;
      const ssize_t n = send(sock_, ptr + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n <= 0) return -1;
      sent += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, false, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  // Reads what the socket has into the buffer, waiting at most the idle timeout and
  // never past the request's deadline.
  bool fill() {
    int wait_ms = to_ms(limits_.idle_timeout_s);
    if (in_request_) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      wait_ms = static_cast<int>(std::clamp<int64_t>(left, 0, wait_ms));
    }
    pollfd p{sock_, POLLIN, 0};
    if (wait_ms <= 0 || poll(&p, 1, wait_ms) <= 0) {
      if (in_request_) failure_ = Failure::Timeout;
      return false;
    }
    const ssize_t n = recv(sock_, buffer_, sizeof buffer_, 0);
    if (n <= 0) return false;
    pos_ = 0;
    len_ = static_cast<size_t>(n);
    return true;
  }

  // Counts the bytes up to the blank line that ends the headers (CRLF CRLF, or LF LF).
  bool count_header_bytes(const char* p, size_t n) {
    for (size_t i = 0; i < n && !headers_done_; ++i) {
      if (++header_bytes_ > limits_.max_header_bytes) {
        failure_ = Failure::HeaderTooLarge;
        return false;
      }
      if (p[i] == '\n') {
        headers_done_ = ++newlines_ == 2;
      } else if (p[i] != '\r') {
        newlines_ = 0;
      }
    }
    return true;
  }

  socket_t sock_;
  const ConnectionLimits& limits_;
  char buffer_[4096];
  size_t pos_ = 0, len_ = 0;
  Clock::time_point deadline_;
  bool in_request_ = false, headers_done_ = false;
  size_t header_bytes_ = 0;
  int newlines_ = 0;
  Failure failure_ = Failure::None;
};

}  // namespace

bool same_secret(std::string_view given, std::string_view expected) {
  if (expected.empty()) return false;
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return diff == 0;
}

std::string error_response_text(int status, const std::string& message, const std::string& code,
                                const std::string& extra_headers) {
  const nlohmann::json error = {
      {"error",
       {{"message", message},
        {"type", status >= 500 ? "server_error" : "invalid_request_error"},
        {"param", nullptr},
        {"code", code}}}};
  const std::string body = error.dump();
  return "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n" + extra_headers + "\r\n" + body;
}

HardenedHttpServer::HardenedHttpServer(ConnectionLimits limits) : limits_(limits) {
  const auto seconds = [](double s) { return static_cast<time_t>(s); };
  const auto micros = [](double s) {
    return static_cast<time_t>((s - static_cast<double>(static_cast<time_t>(s))) * 1e6);
  };
  // httplib's own timeouts (its accept loop, and any path that bypasses the stream).
  set_read_timeout(seconds(limits_.idle_timeout_s), micros(limits_.idle_timeout_s));
  set_write_timeout(seconds(limits_.write_timeout_s), micros(limits_.write_timeout_s));
  set_keep_alive_timeout(std::max<time_t>(1, seconds(limits_.keep_alive_s)));
  set_keep_alive_max_count(static_cast<size_t>(limits_.max_requests_per_connection));
  const int n = limits_.max_connections;
  new_task_queue = [n] { return new ConnectionPool(n); };
}

bool HardenedHttpServer::process_and_close_socket(socket_t sock) {
  if (t_refuse_connections) {
    refuse(sock);
    return false;
  }
  ++open_;
  GuardedStream stream(sock, limits_);
  bool ok = false;
  for (int left = limits_.max_requests_per_connection; left > 0; --left) {
    // Stopping: a request already sent on this connection still gets its answer (503
    // for new work, which a balancer retries elsewhere); an idle connection closes.
    const bool stopping = svr_sock_ == INVALID_SOCKET;
    if (!stream.wait_request(stopping ? 0 : to_ms(limits_.keep_alive_s))) break;
    stream.begin_request();
    bool closed = false;
    // The last request of a connection, or one during shutdown, is answered with
    // Connection: close.
    ok = process_request(stream, left == 1 || stopping || svr_sock_ == INVALID_SOCKET, closed,
                         nullptr);
    if (stream.failure() != GuardedStream::Failure::None) {
      const bool timeout = stream.failure() == GuardedStream::Failure::Timeout;
      const std::string text =
          timeout
              ? error_response_text(
                    408,
                    "the request did not arrive in time (--request-timeout " +
                        nlohmann::json(limits_.request_timeout_s).dump() + " s, --idle-timeout " +
                        nlohmann::json(limits_.idle_timeout_s).dump() + " s per wait)",
                    "request_timeout")
              : error_response_text(431,
                                    "the request line and headers exceed --max-header-bytes " +
                                        std::to_string(limits_.max_header_bytes),
                                    "header_too_large");
      send_all(sock, text, 1000);
      lingering_close(sock, 500);
      --open_;
      return false;
    }
    if (!ok || closed) break;
  }
  shutdown(sock, SHUT_RDWR);
  close(sock);
  --open_;
  return ok;
}

void HardenedHttpServer::refuse(socket_t sock) {
  // What the client sent so far is dropped unread; the answer goes out without waiting.
  char sink[4096];
  for (int i = 0; i < 16 && recv(sock, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
  send_all(sock,
           error_response_text(503,
                               "too many open connections (--max-connections " +
                                   std::to_string(limits_.max_connections) + "); retry later",
                               "too_many_connections", "Retry-After: 1\r\n"),
           100);
  lingering_close(sock, 200);
}

ConnectionPool::ConnectionPool(int max_connections) {
  for (int i = 0; i < max_connections; ++i) workers_.emplace_back([this] { work(); });
  refuser_ = std::thread([this] { refuse_loop(); });
}

ConnectionPool::~ConnectionPool() {
  shutdown();
}

void ConnectionPool::enqueue(std::function<void()> fn) {
  // A short backlog absorbs a burst that finds every thread busy for a moment.
  constexpr size_t kBacklog = 8;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (jobs_.size() < static_cast<size_t>(idle_) + kBacklog) {
      jobs_.push_back(std::move(fn));
      ready_.notify_one();
      return;
    }
    refused_.push_back(std::move(fn));
  }
  refuse_ready_.notify_one();
}

void ConnectionPool::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  ready_.notify_all();
  refuse_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  if (refuser_.joinable()) refuser_.join();
}

void ConnectionPool::work() {
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++idle_;
      ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopping, nothing left
      fn = std::move(jobs_.front());
      jobs_.pop_front();
    }
    fn();
  }
}

void ConnectionPool::refuse_loop() {
  t_refuse_connections = true;
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      refuse_ready_.wait(lock, [&] { return stopping_ || !refused_.empty(); });
      if (refused_.empty()) return;
      fn = std::move(refused_.front());
      refused_.pop_front();
    }
    fn();
  }
}

}  // namespace runnel::server
