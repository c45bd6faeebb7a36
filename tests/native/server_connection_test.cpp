// runnel serve's connection limits (native/server/connection.h) on a live loopback
// socket, without a model: slow requests get 408 at their deadline, oversized headers
// 431, connections beyond the limit 503, and the server keeps answering others.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "native/server/connection.h"

namespace runnel::server {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A HardenedHttpServer with GET /ok on a free loopback port, serving on its own thread.
class LiveServer {
 public:
  explicit LiveServer(ConnectionLimits limits) : http_(limits) {
    http_.Get("/ok", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("fine", "text/plain");
    });
    // An endless reply, as a long generation: notes when a write fails (the client is
    // gone or takes nothing).
    http_.Get("/endless", [this](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/plain", [this](size_t, httplib::DataSink& sink) {
        const std::string block(64 << 10, 'x');
        while (sink.write(block.data(), block.size())) {
        }
        write_failed_ = true;
        return false;
      });
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    REQUIRE(port_ > 0);
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LiveServer() {
    http_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  HardenedHttpServer& http() { return http_; }
  std::atomic<bool> write_failed_{false};

 private:
  HardenedHttpServer http_;
  int port_ = 0;
  std::thread thread_;
};

int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

void send_text(int fd, const std::string& text) {
  REQUIRE(send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size()));
}

// Everything the server sends until it closes, or until timeout_s passes.
std::string read_reply(int fd, double timeout_s = 5) {
  std::string out;
  const auto start = Clock::now();
  char buf[4096];
  while (seconds_since(start) < timeout_s) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int status_of(const std::string& reply) {
  return reply.size() > 12 ? std::stoi(reply.substr(9, 3)) : 0;
}

nlohmann::json body_of(const std::string& reply) {
  const size_t at = reply.find("\r\n\r\n");
  REQUIRE(at != std::string::npos);
  return nlohmann::json::parse(reply.substr(at + 4));
}

std::string get_ok(int port) {
  const int fd = connect_to(port);
  send_text(fd, "GET /ok HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  std::string reply = read_reply(fd);
  close(fd);
  return reply;
}

}  // namespace

TEST_CASE("same_secret: equal keys only, whatever the lengths", "[server]") {
  CHECK(same_secret("Bearer k3y", "Bearer k3y"));
  CHECK_FALSE(same_secret("Bearer k3x", "Bearer k3y"));
  CHECK_FALSE(same_secret("Bearer k3", "Bearer k3y"));
  CHECK_FALSE(same_secret("Bearer k3yy", "Bearer k3y"));
  CHECK_FALSE(same_secret("", "Bearer k3y"));
  CHECK_FALSE(same_secret("", ""));
}

TEST_CASE("connection: a request that trickles in gets 408 at its deadline; others are served",
          "[server]") {
  ConnectionLimits limits;
  limits.request_timeout_s = 0.6;
  limits.idle_timeout_s = 0.4;
  LiveServer server(limits);
  const int fd = connect_to(server.port());
  const auto start = Clock::now();
  send_text(fd, "GET /ok HTTP/1.1\r\nHost: a\r\nX-Slow: ");
  // One byte every 100 ms: never idle for long, but never done.
  std::string reply;
  while (seconds_since(start) < 3) {
    if (send(fd, "a", 1, MSG_NOSIGNAL) != 1) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      reply = read_reply(fd);
      break;
    }
    // Meanwhile another client is served at once.
    if (seconds_since(start) < 0.3) CHECK(status_of(get_ok(server.port())) == 200);
  }
  const double elapsed = seconds_since(start);
  close(fd);
  CHECK(status_of(reply) == 408);
  CHECK(body_of(reply)["error"]["code"] == "request_timeout");
  CHECK(elapsed >= 0.55);
  CHECK(elapsed < 1.5);
  CHECK(status_of(get_ok(server.port())) == 200);
}

TEST_CASE("connection: a body trickling in after 100 Continue still meets the deadline",
          "[server]") {
  ConnectionLimits limits;
  limits.request_timeout_s = 0.6;
  limits.idle_timeout_s = 0.4;
  LiveServer server(limits);
  const int fd = connect_to(server.port());
  const auto start = Clock::now();
  send_text(fd,
            "POST /ok HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n");
  std::string reply;
  while (seconds_since(start) < 3 && reply.find("408") == std::string::npos) {
    if (send(fd, "a", 1, MSG_NOSIGNAL) != 1) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char buf[4096];
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  CHECK(reply.rfind("HTTP/1.1 100 Continue\r\n", 0) == 0);
  CHECK(reply.find("HTTP/1.1 408 Request Timeout\r\n") != std::string::npos);
  CHECK(seconds_since(start) < 1.5);
}

TEST_CASE("connection: a client that reads none of a reply is dropped after the write timeout",
          "[server]") {
  ConnectionLimits limits;
  limits.write_timeout_s = 0.5;
  LiveServer server(limits);
  const int fd = connect_to(server.port());
  send_text(fd, "GET /endless HTTP/1.1\r\nHost: a\r\n\r\n");
  // The socket buffers fill within moments; then writes wait 0.5 s and fail.
  const auto start = Clock::now();
  while (!server.write_failed_ && seconds_since(start) < 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(server.write_failed_);
  CHECK(seconds_since(start) < 5);
  close(fd);
  CHECK(status_of(get_ok(server.port())) == 200);
}

TEST_CASE("connection: a request that stalls gets 408 after the idle timeout", "[server]") {
  ConnectionLimits limits;
  limits.request_timeout_s = 10;
  limits.idle_timeout_s = 0.3;
  LiveServer server(limits);
  const int fd = connect_to(server.port());
  const auto start = Clock::now();
  send_text(fd, "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{\"partial\":");
  const std::string reply = read_reply(fd);
  close(fd);
  CHECK(status_of(reply) == 408);
  CHECK(seconds_since(start) < 2);
}

TEST_CASE("connection: headers beyond max_header_bytes get 431", "[server]") {
  ConnectionLimits limits;
  limits.max_header_bytes = 1024;
  LiveServer server(limits);
  const int fd = connect_to(server.port());
  std::string request = "GET /ok HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 40; ++i)
    request += "X-Header-" + std::to_string(i) + ": " + std::string(40, 'v') + "\r\n";
  send_text(fd, request + "\r\n");
  const std::string reply = read_reply(fd);
  close(fd);
  CHECK(status_of(reply) == 431);
  CHECK(body_of(reply)["error"]["code"] == "header_too_large");
  // Just under the limit is served.
  const int fd2 = connect_to(server.port());
  send_text(fd2, "GET /ok HTTP/1.1\r\nHost: a\r\nConnection: close\r\nX-Pad: " +
                     std::string(900, 'v') + "\r\n\r\n");
  CHECK(status_of(read_reply(fd2)) == 200);
  close(fd2);
}

TEST_CASE("connection: beyond max_connections and a short backlog, 503 with Retry-After",
          "[server]") {
  ConnectionLimits limits;
  limits.max_connections = 2;
  limits.request_timeout_s = 3;
  limits.idle_timeout_s = 3;
  LiveServer server(limits);
  // Two connections hold both threads (half a request each); eight wait in the backlog.
  std::vector<int> held;
  for (int i = 0; i < 10; ++i) {
    held.push_back(connect_to(server.port()));
    send_text(held.back(), "GET /ok HTTP/1.1\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int extra = connect_to(server.port());
  send_text(extra, "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n");
  const std::string reply = read_reply(extra, 2);
  close(extra);
  CHECK(status_of(reply) == 503);
  CHECK(reply.find("Retry-After: 1\r\n") != std::string::npos);
  CHECK(body_of(reply)["error"]["code"] == "too_many_connections");
  CHECK(server.http().open_connections() == 2);
  for (int fd : held) close(fd);
  // Once they are gone, the server serves again.
  const auto start = Clock::now();
  int status = 0;
  while (status != 200 && seconds_since(start) < 5) {
    status = status_of(get_ok(server.port()));
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(status == 200);
}

}  // namespace runnel::server
