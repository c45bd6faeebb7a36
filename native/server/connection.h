// The connections of `runnel serve`, held against hostile clients. cpp-httplib (Debian's
// 0.11, a compiled library whose limits are fixed at its build) reads a request with a
// timeout per wait only, so a client sending one byte every few seconds holds a
// connection thread forever, and it queues accepted connections without bound. This
// file owns the connection loop instead (httplib's extension point for SSL servers):
//   - a request (line, headers, body) must arrive within request_timeout_s of its first
//     byte, each wait at most idle_timeout_s: else 408 and the connection closes;
//   - the request line and headers are at most max_header_bytes: else 431;
//   - a client that takes no bytes of a reply for write_timeout_s is dropped (its
//     generation is cancelled, as for a client that went away);
//   - at most max_connections connections are served at once, each on its own thread;
//     beyond a short backlog, a connection gets 503 + Retry-After and is closed.
// Errors are OpenAI-shaped JSON bodies like the API's.
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace runnel::server {

struct ConnectionLimits {
  size_t max_header_bytes = 16u << 10;  // request line + headers, CRLFs included
  double request_timeout_s = 30;        // from a request's first byte to its last
  double idle_timeout_s = 10;           // the longest wait for the next byte of a request
  double write_timeout_s = 30;          // the longest a client may take no bytes of a reply
  double keep_alive_s = 5;              // an idle connection waits this long for a next request
  int max_connections = 64;             // served at once (one thread each)
  int max_requests_per_connection = 100;
};

// A complete HTTP/1.1 response with an OpenAI error body and Connection: close.
std::string error_response_text(int status, const std::string& message, const std::string& code,
                                const std::string& extra_headers = "");

// Whether `given` equals `expected` (an API key), comparing every byte whatever the
// first difference, so that the time a wrong key takes does not tell how much of it was
// right (the length is not secret). An empty `expected` matches nothing.
bool same_secret(std::string_view given, std::string_view expected);

class HardenedHttpServer : public httplib::Server {
 public:
  explicit HardenedHttpServer(ConnectionLimits limits);
  // Connections being served now (not counting refused ones).
  int open_connections() const { return open_; }
  const ConnectionLimits& limits() const { return limits_; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  void refuse(socket_t sock);

  ConnectionLimits limits_;
  std::atomic<int> open_{0};
};

// httplib's task queue for HardenedHttpServer: max_connections threads, a backlog of a
// few connections for bursts, and one thread that answers the rest with 503.
class ConnectionPool : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(int max_connections);
  ~ConnectionPool() override;
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  void work();
  void refuse_loop();

  std::mutex mutex_;
  std::condition_variable ready_, refuse_ready_;
  std::deque<std::function<void()>> jobs_, refused_;
  int idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::thread refuser_;
};

}  // namespace runnel::server
