// The one request path of every front end (the CLI, `runnel serve`, the wasm module):
// a prompt (chat messages, text or token ids) becomes tokens with the model's chat
// template and BOS policy; the longest prefix already in a session's cache is reused;
// the request is checked against the context before any work; generation streams
// pieces with stop strings held back, and ends with a finish reason.
// Front ends only translate their wire format (flags, OpenAI JSON, JS objects) into a
// Request and pieces back out.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/runtime/engine.h"

namespace runnel {

// A request the engine refuses, naming the request field at fault ("messages",
// "prompt", "max_tokens", ...) and a code ("invalid_value", "context_length_exceeded")
// that front ends pass on (the server as OpenAI's error param and code).
class RequestError : public std::invalid_argument {
 public:
  RequestError(const std::string& message, std::string field, std::string code = "invalid_value")
      : std::invalid_argument(message), field_(std::move(field)), code_(std::move(code)) {}
  const std::string& field() const { return field_; }
  const std::string& code() const { return code_; }

 private:
  std::string field_, code_;
};

// What a request asks the model to continue: exactly one of messages, text, tokens.
struct PromptInput {
  std::optional<std::vector<ChatMessage>> messages;  // rendered with the chat template
  ChatOptions chat_options;  // messages only: template variables (enable_thinking)
  std::optional<std::string> text;
  std::optional<std::vector<TokenId>> tokens;  // used as given
  // Text only: special-token text ("<|im_start|>") becomes control tokens, as
  // llama-cli's prompt parsing does. Rendered chat is always parsed.
  bool parse_special = true;
  // Text only: prepend BOS when the model asks for it (tokenizer.ggml.add_bos_token).
  bool add_bos = true;

  static PromptInput from_text(std::string text, bool parse_special = true);
  static PromptInput from_messages(std::vector<ChatMessage> messages);
  static PromptInput from_tokens(std::vector<TokenId> tokens);
};

// The model's chat template and BOS policy: prompts to tokens. A model whose template
// cannot be parsed still serves text prompts; a chat request then fails naming why.
class PromptFormat {
 public:
  explicit PromptFormat(const Engine& engine);

  bool has_chat_template() const { return chat_ != nullptr; }
  const std::string& chat_template_error() const { return chat_error_; }
  // Chat messages rendered with the opening of the assistant's turn. Throws
  // RequestError (field "messages") when there is no usable template or it refuses.
  std::string render(const std::vector<ChatMessage>& messages, const ChatOptions& options = {}) const;
  // The prompt's token ids. A rendered chat gets BOS unless the template wrote it.
  // Throws RequestError for an empty prompt, ids outside the vocabulary, or more than
  // one kind of prompt given.
  std::vector<TokenId> tokens(const PromptInput& prompt) const;
  // The token ids of a rendered chat (render()'s text): BOS unless the template wrote it.
  std::vector<TokenId> chat_tokens(const std::string& rendered) const;
  // The template chats are rendered with; null when there is none usable.
  const ChatTemplate* chat_template() const { return chat_.get(); }

 private:
  const Engine& engine_;
  std::unique_ptr<ChatTemplate> chat_;
  std::string chat_error_;
};

// Why a request's generation ended.
enum class FinishReason {
  Stop,         // an end-of-generation token or a stop string
  Length,       // max_tokens
  ContextFull,  // no room left in the context (max_tokens -1, or nothing to shift)
  Aborted,      // the caller stopped it (a client went away, a stop button)
  Cut,          // the server cut it (its shutdown timeout)
};
// "stop", "length", "context", "abort", "cut" (OpenAI's finish_reason says "length"
// for a full context too).
const char* finish_reason_name(FinishReason reason);

// Holds back generated text that might be the start of a stop string, so a stop
// string is never emitted, even when it arrives split across tokens.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds generated text; returns what is safe to emit now. After a stop string is
  // found, stopped() is true and the text before it is the last returned.
  std::string push(std::string_view text);
  // The held-back text at the end of generation (nothing once stopped).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

struct RequestOptions {
  int max_tokens = -1;  // -1: until end of generation or a full context
  SamplerParams sampler;
  std::vector<std::string> stop;  // empty strings are refused
  // Sees the logits of each predicted position (GenerateParams::on_logits).
  std::function<void(int step, std::span<const float> logits)> on_logits;
  // Constrains the output (GenerateParams::grammar): compile_grammar,
  // compile_json_schema or compile_json_object. Null: unconstrained.
  std::shared_ptr<const Grammar> grammar;
  // Speculative decoding by prompt lookup (GenerateParams::lookup_ngram); 0: off.
  int lookup_ngram = 0;
  // Or by a draft model (GenerateParams::drafter); shared so a request can hold it.
  std::shared_ptr<Drafter> drafter;
  // The prompt is left for the caller to evaluate (GenerateParams::defer_prompt: a
  // scheduler interleaving sessions).
  bool defer_prompt = false;
  // >= 0: log probabilities of each generated token with this many alternatives
  // (GenerateParams::logprobs), collected by RequestRun::take_logprobs(). -1: off.
  int logprobs = -1;
};

// A request's GBNF grammar (core/sampling/README.md), compiled once against the
// engine's vocabulary (Engine::grammar_vocab, so <token> references resolve). Throws
// RequestError naming `field` with the parser's position: "grammar: line 2, column 7:
// expected ...".
std::shared_ptr<const Grammar> compile_grammar(const Engine& engine, std::string_view gbnf,
                                               const std::string& field = "grammar");
// A JSON schema given as JSON text, as the grammar of the documents it accepts
// (core/sampling/json_schema.h). Throws RequestError naming `field` for text that is
// not JSON or a schema the converter refuses (naming the keyword and its pointer).
std::shared_ptr<const Grammar> compile_json_schema(const Engine& engine, std::string_view schema_json,
                                                   const std::string& field = "json_schema");
// Any JSON object (OpenAI's response_format {"type": "json_object"}).
std::shared_ptr<const Grammar> compile_json_object(const Engine& engine);
// OpenAI's logit_bias (`runnel serve`'s logit_bias, runnel-llm's logitBias, named by
// `field`): an object of token id -> bias in [-100, 100], where -100 bans the token.
// Throws RequestError naming `field` (not an object, code invalid_type) or the entry,
// field.key (a key that is not a token id in [0, n_vocab), a bias outside the range;
// invalid_type for a bias that is not a number).
std::vector<std::pair<int32_t, float>> parse_logit_bias(const nlohmann::json& bias, int n_vocab,
                                                        const std::string& field);
// Throws RequestError naming "logit_bias" when the bias bans every token the grammar
// allows at its start (front ends check before queueing; later in a generation the same
// conflict ends it with std::invalid_argument).
void check_grammar_bias(const Engine& engine, const std::shared_ptr<const Grammar>& grammar,
                        const SamplerParams& sampler);

// Texts to embed (the server's /v1/embeddings, runnel-llm's embed()) as token ids, each
// with the tokenizer's special tokens and no special-token parsing. Throws RequestError
// (field "input", code context_length_exceeded) for a text longer than the context:
// "input[i] is N tokens but the context is M".
std::vector<std::vector<TokenId>> embedding_inputs(const Engine& engine, const std::vector<std::string>& texts);

// How many leading tokens `a` and `b` share: what a session holding `a` reuses of a
// prompt `b` (RequestRun; the server picks the slot that shares the most).
size_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b);

// The fit check RequestRun starts with, for front ends that answer before a session is
// free (the server, before queueing): throws RequestError with the numbers.
void check_request_fits(int n_prompt, const RequestOptions& options, int n_ctx, bool shifts_context);

// One request on one session, a piece of text per step. The constructor reuses the
// cached prefix the prompt shares with the session's history, checks the request
// (throwing RequestError with the numbers before any work) and evaluates the rest of
// the prompt. The session must not be used otherwise until the run is done.
class RequestRun {
 public:
  RequestRun(Session& session, const std::vector<TokenId>& prompt, const RequestOptions& options);
  ~RequestRun();
  RequestRun(const RequestRun&) = delete;
  RequestRun& operator=(const RequestRun&) = delete;

  // Produces the next token; `piece` receives the text that is safe to emit (possibly
  // "", never part of a UTF-8 sequence or of a stop string). Returns false once the
  // run has ended, then `piece` holds any text still pending and finish_reason() says
  // why.
  bool next(std::string& piece);
  // Ends the run early with `reason` (Aborted or Cut); returns text still pending.
  std::string stop(FinishReason reason);

  bool done() const { return done_; }
  FinishReason finish_reason() const { return finish_; }
  int n_prompt() const { return n_prompt_; }  // the whole prompt's tokens
  int n_cached() const { return n_cached_; }  // of them, reused from the session's cache
  const GenerationStats& stats() const { return generation_->stats(); }
  // With RequestOptions::logprobs >= 0: the log probabilities of the tokens whose text
  // has been handed out since the last call, in order (call after next() or stop()). A
  // token whose text is held back (a possible stop string) waits; once the run is done,
  // the tokens that made up a stop string are dropped and the rest are released.
  std::vector<StepLogprobs> take_logprobs();

 private:
  void finish();
  void note_logprobs(size_t n_text_bytes);  // after each Generation::step
  void release_logprobs(bool all);

  struct PendingLogprobs {
    StepLogprobs logprobs;
    size_t text_start;  // where the token's text begins in the generated text
  };
  std::vector<PendingLogprobs> pending_logprobs_;
  std::vector<StepLogprobs> released_logprobs_;
  size_t generated_bytes_ = 0;  // text out of the generation so far
  size_t emitted_bytes_ = 0;    // of it, handed out (the rest is held or was a stop string)

  std::shared_ptr<Drafter> drafter_;  // RequestOptions::drafter, kept for the generation
  std::unique_ptr<Generation> generation_;
  StopMatcher matcher_;
  int n_prompt_ = 0;
  int n_cached_ = 0;
  bool done_ = false;
  FinishReason finish_ = FinishReason::Length;
};

// A whole request at once: `on_piece` sees each piece (false stops the run as
// Aborted). The run is returned done, for its figures and finish reason.
std::unique_ptr<RequestRun> run_request(Session& session, const std::vector<TokenId>& prompt,
                                        const RequestOptions& options,
                                        const std::function<bool(std::string_view)>& on_piece);

}  // namespace runnel
