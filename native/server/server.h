// `runnel serve`: one model behind the OpenAI HTTP API, scheduled for a 2 vCPU VM.
//   - `slots` sessions, each keeping its conversation's KV cache: a request goes to
//     the free slot whose cached tokens share the longest prefix with its prompt, so
//     a multi-turn chat re-evaluates only the new turn (prefix caching).
//   - a bounded queue of waiting requests; beyond it, 429 with Retry-After.
//   - one request computes at a time (they share the thread pool); a client that goes
//     away cancels its generation at the next token.
//   - stop(): no new requests (the port closes; a request on an open connection gets
//     503 + Retry-After, /health 503); in-flight ones finish or are cut at the deadline
//     (their streams still end with [DONE]); run() returns when all have ended.
//   - hostile clients meet limits (connection.h: slow or huge requests, too many
//     connections; RequestLimits: what one request may ask for), each a clear 4xx.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/runtime/engine.h"
#include "native/server/api.h"
#include "native/server/connection.h"
#include "native/server/scheduler.h"

namespace runnel::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (reported to on_listening)
  int slots = 1;
  int queue = 8;
  std::string api_key;      // empty: no authentication
  std::string model_alias;  // the model id clients name; default: the file name
  std::string cors_origin;  // empty: no CORS headers
  std::string web_root;     // folder with index.html served at GET /; empty: none
  // With web_root: the served model's file, offered to the demo page at
  // GET /models/<file name> (Range requests work: the page's download resumes).
  std::string model_file;
  size_t max_body_bytes = 8u << 20;
  ConnectionLimits connection;  // timeouts, header bytes, open connections
  RequestLimits limits;         // messages, prompt and completion tokens, stop, logit_bias
  double shutdown_deadline_s = 10;
  std::string session_path;  // slot 0's conversation: restored at start, saved at stop
  // Requests with fields we do not implement (tools, logprobs, suffix, ...):
  // false: 400 naming the field; true: served without them, with a warning line.
  bool lenient = false;
  // Reasoning (text between think markers) of templates that reason: true (auto): in
  // `reasoning_content`; false (`--reasoning-format none`): kept inline in the content.
  bool split_reasoning = true;
  // One line per request on stderr: method, path, status, tokens, milliseconds.
  bool access_log = true;
  // Speculative decoding by prompt lookup for every request (RequestOptions::
  // lookup_ngram; the engine needs EngineOptions::n_draft > 0); 0: off.
  int lookup_ngram = 0;
  // With a draft engine (Server's constructor): the most tokens it proposes at once.
  int n_draft = 8;
};

class Server {
 public:
  // draft: a draft model of the engine's vocabulary (speculative decoding), or null.
  Server(std::unique_ptr<Engine> engine, ServerOptions options, std::unique_ptr<Engine> draft = nullptr);
  ~Server();

  // Binds host:port (throws std::runtime_error naming them on failure), calls
  // on_listening(port), and serves until stop(); returns once every request ended.
  void run(const std::function<void(int port)>& on_listening);
  // Begins the graceful shutdown; safe from any thread (not from a signal handler).
  void stop();

 private:
  struct Slot {
    std::unique_ptr<Session> session;
    std::unique_ptr<Session> draft;  // the draft model's mirror of it, with a draft engine
    bool busy = false;
  };
  class Lease;
  void serve_model_file(httplib::Server& h);
  // Whether GET `path` (percent-decoded) names a file inside web_root once symlinks
  // are resolved (web_root.cpp).
  bool inside_web_root(const std::string& path) const;
  struct Outcome {
    Usage usage;
    std::string finish_reason;  // "error" when the generation failed mid-way
    std::string error;          // why ("" when it did not)
  };

  void install_routes();
  bool admit_fields(const httplib::Request& req, httplib::Response& res, const json& body, Endpoint endpoint);
  void begin_request_log();
  void note_usage(const Usage& usage, const std::string& finish_reason);
  void log_request(const httplib::Request& req, const httplib::Response& res);
  bool authorized(const httplib::Request& req) const;
  void handle_generation(const httplib::Request& req, httplib::Response& res, bool chat);
  void handle_embeddings(const httplib::Request& req, httplib::Response& res);
  std::shared_ptr<Lease> acquire_slot(const std::vector<TokenId>& prompt);
  void release_slot(int index);
  // Runs one choice; `emit` sees each piece of text with the log probabilities of the
  // tokens it completes (RequestRun::take_logprobs), and returns false to abort.
  using Emit = std::function<bool(const std::string& text, std::vector<StepLogprobs>& logprobs)>;
  Outcome generate(int slot, const std::vector<TokenId>& prompt, const RequestOptions& options, const Emit& emit);
  void check_model_name(const std::string& model) const;
  std::string metrics_text();
  void count_request(const std::string& path, int status);
  void save_session();

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Engine> draft_engine_;
  ServerOptions options_;
  PromptFormat prompt_format_;  // chat template and BOS policy
  std::string web_root_canonical_;  // web_root with symlinks resolved
  std::unique_ptr<HardenedHttpServer> http_;

  std::mutex slots_mutex_;  // slots_[i].busy, waiting_, shutting_down_
  std::condition_variable slot_freed_;
  std::vector<Slot> slots_;
  int waiting_ = 0;

  std::mutex compute_mutex_;  // one compute at a time on the shared thread pool (scheduler rounds, embeddings)
  std::unique_ptr<Session> embed_session_;

  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> bound_{false}, listen_ended_{false};  // run()'s progress, for stop()
  std::atomic<int64_t> deadline_ns_{0};  // steady-clock time after which generations stop
  uint64_t fingerprint_ = 0;              // of the model, for session files

  std::mutex metrics_mutex_;
  std::map<std::string, std::map<int, uint64_t>> requests_;  // path -> status -> count
  uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0;
  uint64_t drafted_tokens_ = 0, accepted_drafts_ = 0;  // speculative decoding
  double prompt_seconds_ = 0, generation_seconds_ = 0;
  double last_gen_tokens_per_s_ = 0;

  // The access log's view of the request each connection thread is serving: httplib
  // runs a request's handler, its content provider (where streams generate) and the
  // logger on one thread, and calls the logger once the body has been sent.
  struct RequestLog {
    int64_t start_ns = 0;
    std::string tokens;  // " prompt=25 completion=8 finish=stop"; empty: no tokens
  };
  std::mutex log_mutex_;
  std::map<std::thread::id, RequestLog> request_logs_;

  // Runs every generation (continuous batching); last, so it stops before the sessions
  // and the engine it uses go away.
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace runnel::server
