#include "native/server/server.h"

#include <httplib.h>

#include "core/runtime/session_file.h"
#include "native/version.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>

namespace runnel::server {
namespace {

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(prefix) + buf;
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  // 429: the queue is full; 503: this replica drains (a balancer retries elsewhere).
  if (e.status == 429 || e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(e.body().dump(), "application/json");
}

// OpenAI's finish_reason: it has no word for a full context, and "cut" (the shutdown
// timeout) is ours.
std::string openai_finish_reason(FinishReason reason) {
  return reason == FinishReason::ContextFull ? "length" : finish_reason_name(reason);
}

uint64_t random_seed() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

// A chat chunk's delta as OpenAI streams it: content, reasoning_content, and tool_calls
// entries with index, plus id, type and name on a call's first.
json delta_json(const ChatReplyDelta& d) {
  json delta = json::object();
  if (!d.content.empty()) delta["content"] = d.content;
  if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
  if (!d.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCallDelta& c : d.tool_calls) {
      json call = {{"index", c.index}};
      json function = {{"arguments", c.arguments}};
      if (!c.id.empty()) {
        call["id"] = c.id;
        call["type"] = "function";
        function["name"] = c.name;
      }
      call["function"] = function;
      calls.push_back(call);
    }
    delta["tool_calls"] = calls;
  }
  return delta;
}

// The reply's message: content (null when the reply is only calls, as OpenAI sends it),
// reasoning_content and tool_calls when there are any.
json message_json(const ChatReply& reply) {
  json message = {{"role", "assistant"}};
  message["content"] = reply.content.empty() && !reply.tool_calls.empty() ? json(nullptr) : json(reply.content);
  if (!reply.reasoning.empty()) message["reasoning_content"] = reply.reasoning;
  if (!reply.tool_calls.empty()) {
    json calls = json::array();
    for (const ChatToolCall& c : reply.tool_calls) {
      calls.push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    message["tool_calls"] = calls;
  }
  return message;
}

// "tool_calls" when the reply made calls and ended by itself or at max_tokens.
std::string with_calls(const std::string& finish_reason, bool made_calls) {
  return made_calls && (finish_reason == "stop" || finish_reason == "length") ? "tool_calls" : finish_reason;
}

std::string sse(const json& j) { return "data: " + j.dump() + "\n\n"; }

}  // namespace

// Holds a slot for one request; gives it back when the last copy goes away (the
// response's content provider may outlive the handler).
class Server::Lease {
 public:
  Lease(Server& s, int index) : server_(s), index_(index) {}
  ~Lease() { server_.release_slot(index_); }
  int index() const { return index_; }

 private:
  Server& server_;
  int index_;
};

Server::Server(std::unique_ptr<Engine> engine, ServerOptions options, std::unique_ptr<Engine> draft)
    : engine_(std::move(engine)),
      draft_engine_(std::move(draft)),
      options_(std::move(options)),
      prompt_format_(*engine_),
      http_(std::make_unique<HardenedHttpServer>(options_.connection)) {
  if (options_.connection.max_connections < options_.slots + options_.queue + 1) {
    throw std::invalid_argument("--max-connections must be at least slots + queue + 1 = " +
                                std::to_string(options_.slots + options_.queue + 1) + " (requests beyond the queue " +
                                "need a connection to hear their 429), got " +
                                std::to_string(options_.connection.max_connections));
  }
  if (options_.slots < 1) throw std::invalid_argument("--slots must be >= 1, got " + std::to_string(options_.slots));
  if (options_.queue < 0) throw std::invalid_argument("--queue must be >= 0, got " + std::to_string(options_.queue));
  slots_.resize(options_.slots);
  for (Slot& s : slots_) {
    s.session = engine_->new_session();
    if (draft_engine_) s.draft = draft_engine_->new_session();
  }
  if (!options_.session_path.empty()) {
    fingerprint_ = model_fingerprint(engine_->store().model());
    if (load_session_file(options_.session_path, *slots_[0].session, fingerprint_)) {
      std::fprintf(stderr, "runnel serve: slot 0 restored %d tokens from %s\n", slots_[0].session->position(),
                   options_.session_path.c_str());
    }
  }
  scheduler_ = std::make_unique<Scheduler>(*engine_, options_.slots, compute_mutex_);
  install_routes();
}

Server::~Server() = default;

void Server::run(const std::function<void(int port)>& on_listening) {
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host.c_str());
    if (port < 0) throw std::runtime_error("cannot bind " + options_.host + " on any port");
  } else if (!http_->bind_to_port(options_.host.c_str(), port)) {
    throw std::runtime_error("cannot listen on " + options_.host + ":" + std::to_string(port) +
                             " (in use, or not an address of this machine)");
  }
  bound_ = true;
  if (on_listening) on_listening(port);
  http_->listen_after_bind();
  listen_ended_ = true;
  save_session();
}

void Server::save_session() {
  if (options_.session_path.empty()) return;
  std::lock_guard<std::mutex> compute(compute_mutex_);
  save_session_file(options_.session_path, *slots_[0].session, fingerprint_);
  std::fprintf(stderr, "runnel serve: slot 0 saved %d tokens to %s\n", slots_[0].session->position(),
               options_.session_path.c_str());
}

void Server::stop() {
  if (shutting_down_.exchange(true)) return;
  deadline_ns_ = now_ns() + static_cast<int64_t>(options_.shutdown_deadline_s * 1e9);
  scheduler_->cut_after(deadline_ns_);
  {
    std::lock_guard<std::mutex> lock(slots_mutex_);
    slot_freed_.notify_all();  // queued requests answer 503
  }
  // httplib's stop() acts only on a running accept loop: a stop between the bind and
  // the loop's start (a signal pending since start-up) would otherwise be lost.
  while (bound_ && !listen_ended_ && !http_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
}

void Server::install_routes() {
  httplib::Server& h = *http_;
  h.set_payload_max_length(options_.max_body_bytes);
  // httplib's default sets SO_REUSEPORT, with which a second server on a busy port
  // starts and the two split the traffic. SO_REUSEADDR alone still lets a restarted
  // server bind while the old one's connections linger in TIME_WAIT.
  h.set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // Connection threads (HardenedHttpServer): --max-connections, at least slots + queue
  // + 1, so that requests beyond the queue reach us and get a 429 instead of waiting
  // unseen in the accept backlog.
  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    begin_request_log();
    if (!options_.cors_origin.empty()) {
      // Only the configured origin hears that it may read replies ("*": any); a
      // preflight from another is refused.
      const std::string origin = req.get_header_value("Origin");
      res.set_header("Vary", "Origin");
      if (options_.cors_origin == "*" || origin == options_.cors_origin) {
        res.set_header("Access-Control-Allow-Origin", options_.cors_origin);
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        if (req.method == "OPTIONS") {
          res.status = 204;
          return httplib::Server::HandlerResponse::Handled;
        }
      } else if (req.method == "OPTIONS") {
        send_error(res, ApiError(403, "origin '" + origin + "' is not allowed (--cors " + options_.cors_origin + ")",
                                 "", "origin_not_allowed"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (!options_.web_root.empty() && (req.method == "GET" || req.method == "HEAD") && !inside_web_root(req.path)) {
      send_error(res, ApiError(404, "not found", "", "not_found"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!authorized(req)) {
      send_error(res, ApiError(401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "",
                               "invalid_api_key", "authentication_error"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // httplib's own refusals (413, 414, 400 malformed, 404) come without a body.
  h.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = "HTTP " + std::to_string(res.status);
    if (res.status == 404) message = "no such endpoint: " + req.method + " " + req.path;
    if (res.status == 413) message = "request body exceeds --max-body-bytes " + std::to_string(options_.max_body_bytes);
    if (res.status == 414) message = "request URI too long (at most 8192 bytes)";
    if (res.status == 400) message = "malformed HTTP request";
    res.set_content(ApiError(res.status, message).body().dump(), "application/json");
  });
  h.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    count_request(req.path, res.status);
    log_request(req, res);
  });

  h.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (shutting_down_) {
      res.status = 503;
      res.set_content(R"({"status":"shutting down"})", "application/json");
      return;
    }
    res.set_content(json{{"status", "ok"}, {"version", version_string()}}.dump(), "application/json");
  });
  h.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const json model = {{"id", options_.model_alias},
                        {"object", "model"},
                        {"created", static_cast<int64_t>(std::time(nullptr))},
                        {"owned_by", "runnel"},
                        {"meta",
                         {{"n_ctx", engine_->n_ctx()},
                          {"n_vocab", engine_->config().n_vocab},
                          {"n_embd", engine_->config().n_embd}}}};
    res.set_content(json{{"object", "list"}, {"data", json::array({model})}}.dump(), "application/json");
  });
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(), "text/plain; version=0.0.4");
  });
  h.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generation(req, res, true);
  });
  h.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generation(req, res, false);
  });
  h.Post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) {
    handle_embeddings(req, res);
  });
  if (!options_.web_root.empty()) {
    if (!std::filesystem::exists(std::filesystem::path(options_.web_root) / "index.html")) {
      throw std::invalid_argument("--web-root: no index.html in '" + options_.web_root + "'");
    }
    web_root_canonical_ = std::filesystem::canonical(options_.web_root).string();
    h.set_mount_point("/", options_.web_root);
    // Cross-origin isolation lets the page run the pthreads build (SharedArrayBuffer).
    h.set_file_request_handler([](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cross-Origin-Opener-Policy", "same-origin");
      res.set_header("Cross-Origin-Embedder-Policy", "require-corp");
    });
    if (!options_.model_file.empty()) serve_model_file(h);
  }
}

bool Server::authorized(const httplib::Request& req) const {
  if (options_.api_key.empty()) return true;
  // /health and the demo page are open; /v1 and /metrics need the key.
  if (req.path != "/metrics" && req.path.rfind("/v1/", 0) != 0) return true;
  return same_secret(req.get_header_value("Authorization"), "Bearer " + options_.api_key);
}

void Server::check_model_name(const std::string& model) const {
  if (model.empty() || model == options_.model_alias) return;
  throw ApiError(404, "model '" + model + "' does not exist; this server serves '" + options_.model_alias + "'",
                 "model", "model_not_found");
}

std::shared_ptr<Server::Lease> Server::acquire_slot(const std::vector<TokenId>& prompt) {
  std::unique_lock<std::mutex> lock(slots_mutex_);
  const auto pick = [&]() -> int {
    int best = -1;
    size_t best_len = 0;
    for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
      if (slots_[i].busy) continue;
      const size_t len = common_prefix(slots_[i].session->tokens(), prompt);
      if (best < 0 || len > best_len) {
        best = i;
        best_len = len;
      }
    }
    return best;
  };
  if (shutting_down_) throw ApiError(503, "the server is shutting down", "", "shutting_down", "server_error");
  int slot = pick();
  if (slot < 0) {
    if (waiting_ >= options_.queue) {
      throw ApiError(429, "all " + std::to_string(slots_.size()) + " slots are busy and the queue (" +
                              std::to_string(options_.queue) + ") is full; retry later",
                     "", "rate_limit_exceeded", "rate_limit_error");
    }
    ++waiting_;
    slot_freed_.wait(lock, [&] { return shutting_down_ || pick() >= 0; });
    --waiting_;
    if (shutting_down_) throw ApiError(503, "the server is shutting down", "", "shutting_down", "server_error");
    slot = pick();
  }
  slots_[slot].busy = true;
  return std::make_shared<Lease>(*this, slot);
}

void Server::release_slot(int index) {
  std::lock_guard<std::mutex> lock(slots_mutex_);
  slots_[index].busy = false;
  slot_freed_.notify_one();
}

Server::Outcome Server::generate(int slot, const std::vector<TokenId>& prompt, const RequestOptions& options,
                                 const Emit& emit) {
  RequestOptions with_draft = options;
  if (slots_[slot].draft) with_draft.drafter = std::make_shared<DraftModel>(*slots_[slot].draft, options_.n_draft);
  const std::shared_ptr<Scheduler::Job> job = scheduler_->submit(*slots_[slot].session, prompt, with_draft);
  std::string text;
  std::vector<StepLogprobs> logprobs;
  bool gone = false;
  while (job->next(text, logprobs)) {
    if (!gone && !emit(text, logprobs)) {
      gone = true;  // the client went away
      job->cancel();
    }
  }
  const Scheduler::Result& r = job->result();
  Outcome out;
  out.error = r.error;
  out.usage.prompt_tokens = r.n_prompt;
  out.usage.cached_tokens = r.n_cached;
  out.usage.completion_tokens = r.n_generated;
  out.finish_reason = r.error.empty() ? openai_finish_reason(r.finish) : "error";
  {
    std::lock_guard<std::mutex> lock(metrics_mutex_);
    prompt_tokens_ += prompt.size();
    cached_tokens_ += r.n_cached;
    generated_tokens_ += r.n_generated;
    drafted_tokens_ += r.n_drafted;
    accepted_drafts_ += r.n_draft_accepted;
    prompt_seconds_ += r.prompt_seconds;
    generation_seconds_ += r.decode_seconds;
    if (r.n_generated > 1 && r.decode_seconds > 0) last_gen_tokens_per_s_ = r.n_generated / r.decode_seconds;
  }
  note_usage(out.usage, out.finish_reason);
  return out;
}

void Server::handle_generation(const httplib::Request& req, httplib::Response& res, bool chat) {
  std::shared_ptr<Lease> lease;
  std::vector<TokenId> prompt;
  GenerationRequest request;
  RequestOptions options;
  ChatSyntax syntax;
  try {
    const json body = parse_json_body(req.body);
    if (!admit_fields(req, res, body, chat ? Endpoint::ChatCompletions : Endpoint::Completions)) return;
    request = generation_request_from_json(body, chat, engine_->config().n_vocab);
    check_request_limits(request, options_.limits);
    check_model_name(request.model);
    if (!engine_->config().generative()) {
      throw ApiError(400, embedding_model_refusal(engine_->config()), "model", "model_not_supported");
    }
    if (chat) {
      request.tools.split_reasoning = options_.split_reasoning;
      request.tools.id_seed = random_seed();
      ChatTurn turn =
          prepare_chat_turn(*engine_, prompt_format_, request.messages, request.chat_options, request.tools);
      prompt = std::move(turn.prompt);
      syntax = turn.syntax;
      options.grammar = std::move(turn.grammar);
      if (options.grammar && !request.constraint_field.empty()) {
        throw ApiError(400,
                       "'" + request.constraint_field + "' cannot be combined with tool calls that need a grammar " +
                           "(tool_choice required or a function, or a template without a native call format)",
                       request.constraint_field, "invalid_value");
      }
    } else {
      prompt = prompt_format_.tokens(PromptInput::from_text(request.prompt));
    }
    const int n_ctx = engine_->n_ctx();
    const int max_prompt = options_.limits.max_prompt_tokens;
    if (max_prompt > 0 && static_cast<int>(prompt.size()) > max_prompt) {
      throw ApiError(400,
                     "the prompt has " + std::to_string(prompt.size()) + " tokens; this server takes at most " +
                         std::to_string(max_prompt) + " (--max-prompt-tokens)",
                     chat ? "messages" : "prompt", "limit_exceeded");
    }
    options.sampler = request.sampler;
    options.stop = request.stop;
    options.max_tokens = request.max_tokens ? *request.max_tokens : -1;
    options.logprobs = request.logprobs;
    options.lookup_ngram = options_.lookup_ngram;
    if (request.grammar) {
      options.grammar = compile_grammar(*engine_, *request.grammar, request.constraint_field);
    } else if (request.json_schema) {
      options.grammar = compile_json_schema(*engine_, *request.json_schema, request.constraint_field);
    } else if (request.json_object) {
      options.grammar = compile_json_object(*engine_);
    }
    check_grammar_bias(*engine_, options.grammar, options.sampler);
    // Refused before queueing for a slot; absent max_tokens: up to a full context,
    // also where the context shifts (--keep).
    check_request_fits(static_cast<int>(prompt.size()), options, n_ctx, engine_->options().n_keep >= 0);
    if (!request.max_tokens) {
      options.max_tokens = n_ctx - static_cast<int>(prompt.size());
      if (options_.limits.max_completion_tokens > 0) {
        options.max_tokens = std::min(options.max_tokens, options_.limits.max_completion_tokens);
      }
    }
    lease = acquire_slot(prompt);
  } catch (const ApiError& e) {
    send_error(res, e);
    return;
  } catch (const RequestError& e) {
    send_error(res, api_error(e, chat));
    return;
  } catch (const std::invalid_argument& e) {
    send_error(res, ApiError(400, e.what()));
    return;
  }

  const std::string id = random_id(chat ? "chatcmpl-" : "cmpl-");
  const int64_t created = std::time(nullptr);
  const std::string model = options_.model_alias;
  const std::string object = chat ? "chat.completion.chunk" : "text_completion";
  // One streamed choice: content delta for chat, text for completions.
  const auto chunk = [=](int index, const std::string& text, const json& finish, bool first) {
    json choice = {{"index", index}, {"finish_reason", finish}, {"logprobs", nullptr}};
    if (chat) {
      json delta = json::object();
      if (first) delta["role"] = "assistant";
      if (!text.empty() || first) delta["content"] = text;
      choice["delta"] = delta;
    } else {
      choice["text"] = text;
    }
    return json{{"id", id}, {"object", object}, {"created", created}, {"model", model}, {"choices", {choice}}};
  };
  // Choice i samples with seed + i (choice 0 is the reply n = 1 gives) and numbers its
  // tool calls apart; its prompt is the slot's cache after the first.
  const auto choice_options = [options](int i) {
    RequestOptions o = options;
    o.sampler.seed += static_cast<uint64_t>(i);
    return o;
  };
  const auto choice_syntax = [syntax](int i) {
    ChatSyntax s = syntax;
    s.id_seed += static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    return s;
  };
  // The usage of all choices: the prompt once, the completions summed.
  const auto add_usage = [](Usage& total, const Outcome& out, int i) {
    if (i == 0) {
      total.prompt_tokens = out.usage.prompt_tokens;
      total.cached_tokens = out.usage.cached_tokens;
    }
    total.completion_tokens += out.usage.completion_tokens;
  };
  if (request.stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, lease, prompt, request, chunk, choice_options, choice_syntax, add_usage, id, created, model, object,
         chat](size_t, httplib::DataSink& sink) {
          const Tokenizer& tokenizer = engine_->tokenizer();
          const auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
          bool ok = true;
          Usage usage;
          std::string finish;
          for (int i = 0; ok && i < request.n; ++i) {
            ok = write(sse(chunk(i, chat ? "" : (request.echo ? request.prompt : ""), nullptr, true)));
            if (!ok) break;
            const ChatSyntax syntax = choice_syntax(i);
            ChatReplyStream stream(syntax);
            std::vector<StepLogprobs> held;  // of text not sent yet
            size_t offset = 0;
            // A chunk's logprobs: those of the tokens its text completes.
            const auto take_logprobs = [&]() -> json {
              if (request.logprobs < 0 || held.empty()) return nullptr;
              json j = chat ? chat_logprobs(tokenizer, held) : completion_logprobs(tokenizer, held, offset);
              held.clear();
              return j;
            };
            bool made_calls = false;
            const auto send = [&](const ChatReplyDelta& d) {
              if (d.empty()) return true;
              made_calls = made_calls || !d.tool_calls.empty();
              json c = chunk(i, "", nullptr, false);
              c["choices"][0]["delta"] = delta_json(d);
              c["choices"][0]["logprobs"] = take_logprobs();
              return ok = write(sse(c));
            };
            // Replies with nothing to split out stream as they come.
            const bool parse = chat && (syntax.tool_calls || syntax.reasoning);
            Outcome out = generate(lease->index(), prompt, choice_options(i),
                                   [&](const std::string& text, std::vector<StepLogprobs>& logprobs) {
                                     held.insert(held.end(), logprobs.begin(), logprobs.end());
                                     if (parse) return send(stream.feed(text));
                                     if (text.empty()) return true;
                                     json c = chunk(i, text, nullptr, false);
                                     c["choices"][0]["logprobs"] = take_logprobs();
                                     return ok = write(sse(c));
                                   });
            if (!out.error.empty()) {
              // Mid-stream errors go as an error event, as OpenAI and llama-server send them.
              write(sse(ApiError(400, out.error, "", "generation_failed").body()));
              ok = false;
              break;
            }
            if (parse && ok) {
              send(stream.finish());
              out.finish_reason = with_calls(out.finish_reason, made_calls);
            }
            json last = chunk(i, "", out.finish_reason, false);
            last["choices"][0]["logprobs"] = take_logprobs();
            ok = ok && write(sse(last));
            add_usage(usage, out, i);
            finish = out.finish_reason;
          }
          if (request.n > 1) note_usage(usage, finish);
          if (ok && request.include_usage) {
            ok = write(sse(json{{"id", id},
                                {"object", object},
                                {"created", created},
                                {"model", model},
                                {"choices", json::array()},
                                {"usage", usage_json(usage)}}));
          }
          if (ok) write("data: [DONE]\n\n");
          sink.done();
          return true;
        });
    return;
  }

  // Not streamed: the body is still sent chunked, with a space (JSON allows leading
  // whitespace) every few tokens, so that a client that went away is noticed and its
  // generation cancelled instead of running to max_tokens.
  res.set_chunked_content_provider(
      "application/json",
      [this, lease, prompt, request, choice_options, choice_syntax, add_usage, id, created, model,
       chat](size_t, httplib::DataSink& sink) {
        const Tokenizer& tokenizer = engine_->tokenizer();
        json choices = json::array();
        Usage usage;
        std::string finish;
        bool gone = false;
        int n_pieces = 0;
        for (int i = 0; !gone && i < request.n; ++i) {
          std::string text = request.echo ? request.prompt : "";
          std::vector<StepLogprobs> logprobs;
          const Outcome out = generate(lease->index(), prompt, choice_options(i),
                                       [&](const std::string& piece, std::vector<StepLogprobs>& lps) {
                                         text += piece;
                                         logprobs.insert(logprobs.end(), lps.begin(), lps.end());
                                         gone = ++n_pieces % 8 == 0 && !sink.write(" ", 1);
                                         return !gone;
                                       });
          if (!out.error.empty()) {
            // The status line went out with the first keep-alive space: the body says it.
            const std::string body = ApiError(400, out.error, "", "generation_failed").body().dump();
            sink.write(body.data(), body.size());
            sink.done();
            return true;
          }
          json choice = {{"index", i}, {"finish_reason", out.finish_reason}, {"logprobs", nullptr}};
          if (request.logprobs >= 0) {
            size_t offset = 0;
            choice["logprobs"] = chat ? chat_logprobs(tokenizer, logprobs) : completion_logprobs(tokenizer, logprobs, offset);
          }
          if (chat) {
            // Replies with nothing to split out are the text as generated.
            const ChatSyntax syntax = choice_syntax(i);
            const ChatReply reply =
                syntax.tool_calls || syntax.reasoning ? parse_chat_reply(text, syntax) : ChatReply{text, "", {}};
            choice["message"] = message_json(reply);
            choice["finish_reason"] = with_calls(out.finish_reason, !reply.tool_calls.empty());
          } else {
            choice["text"] = text;
          }
          choices.push_back(std::move(choice));
          add_usage(usage, out, i);
          finish = out.finish_reason;
        }
        if (request.n > 1) note_usage(usage, finish);
        const std::string body = json{{"id", id},
                                      {"object", chat ? "chat.completion" : "text_completion"},
                                      {"created", created},
                                      {"model", model},
                                      {"choices", choices},
                                      {"usage", usage_json(usage)}}
                                     .dump(-1, ' ', false, json::error_handler_t::replace);
        sink.write(body.data(), body.size());
        sink.done();
        return true;
      });
}

void Server::handle_embeddings(const httplib::Request& req, httplib::Response& res) {
  try {
    const json body = parse_json_body(req.body);
    if (!admit_fields(req, res, body, Endpoint::Embeddings)) return;
    const EmbeddingRequest request = embedding_request_from_json(body);
    check_model_name(request.model);
    if (shutting_down_) throw ApiError(503, "the server is shutting down", "", "shutting_down", "server_error");
    const std::vector<std::vector<TokenId>> inputs = embedding_inputs(*engine_, request.inputs);
    int n_tokens = 0;
    for (const std::vector<TokenId>& input : inputs) n_tokens += static_cast<int>(input.size());
    note_usage({n_tokens, 0, 0}, "");
    json data = json::array();
    {
      std::lock_guard<std::mutex> compute(compute_mutex_);
      if (!embed_session_) embed_session_ = engine_->new_session();
      for (size_t i = 0; i < inputs.size(); ++i) {
        const std::vector<float> e = embed_session_->embed(inputs[i]);
        data.push_back({{"object", "embedding"},
                        {"index", i},
                        {"embedding", request.base64 ? json(base64_floats(e)) : json(e)}});
      }
    }
    res.set_content(json{{"object", "list"},
                         {"data", data},
                         {"model", options_.model_alias},
                         {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}}
                        .dump(),
                    "application/json");
  } catch (const ApiError& e) {
    send_error(res, e);
  } catch (const RequestError& e) {
    send_error(res, api_error(e, false));
  } catch (const std::invalid_argument& e) {
    send_error(res, ApiError(400, e.what()));
  }
}

// Strict unless --lenient: a request for what this server does not implement (tools,
// JSON mode, logprobs) gets a 400 naming the field rather than a reply that silently
// lacks it. Returns whether the handler should go on.
bool Server::admit_fields(const httplib::Request& req, httplib::Response& res, const json& body,
                          Endpoint endpoint) {
  // A body that is not a JSON object is left to the parser, which refuses it.
  const std::vector<std::string> fields = unsupported_fields(body, endpoint);
  if (fields.empty()) return true;
  if (!options_.lenient) {
    send_error(res, unsupported_field_error(fields.front()));
    return false;
  }
  if (options_.access_log) {
    std::string names;
    for (const std::string& f : fields) names += (names.empty() ? "" : ", ") + f;
    std::fprintf(stderr, "runnel serve: warning: %s %s: ignoring unsupported %s (--lenient)\n", req.method.c_str(),
                 req.path.c_str(), names.c_str());
  }
  return true;
}

}  // namespace runnel::server
