// The request path shared by the CLI, the server and the wasm module (request.h).
#include "core/runtime/request.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/sampling/grammar.h"
#include "core/sampling/grammar_matcher.h"
#include "core/sampling/json_schema.h"

namespace runnel {
namespace {

FinishReason from_stop_reason(StopReason stop) {
  switch (stop) {
    case StopReason::EndOfGeneration: return FinishReason::Stop;
    case StopReason::MaxTokens: return FinishReason::Length;
    case StopReason::ContextFull: return FinishReason::ContextFull;
    case StopReason::Callback: return FinishReason::Aborted;
  }
  return FinishReason::Aborted;
}

}  // namespace

PromptInput PromptInput::from_text(std::string text, bool parse_special) {
  PromptInput p;
  p.text = std::move(text);
  p.parse_special = parse_special;
  return p;
}

PromptInput PromptInput::from_messages(std::vector<ChatMessage> messages) {
  PromptInput p;
  p.messages = std::move(messages);
  return p;
}

PromptInput PromptInput::from_tokens(std::vector<TokenId> tokens) {
  PromptInput p;
  p.tokens = std::move(tokens);
  return p;
}

PromptFormat::PromptFormat(const Engine& engine) : engine_(engine) {
  try {
    chat_ = std::make_unique<ChatTemplate>(ChatTemplate::from_model(engine.store().model().metadata,
                                                                    engine.tokenizer()));
  } catch (const std::exception& e) {
    chat_error_ = e.what();
  }
}

std::string PromptFormat::render(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
  if (chat_ == nullptr) {
    throw RequestError("this model has no usable chat template: " + chat_error_, "messages");
  }
  if (messages.empty()) throw RequestError("messages must not be empty", "messages");
  try {
    return chat_->apply(messages, true, options);
  } catch (const ChatTemplateError& e) {
    throw RequestError(std::string("the model's chat template refused the messages: ") + e.what(),
                       "messages");
  }
}

std::vector<TokenId> PromptFormat::tokens(const PromptInput& prompt) const {
  const int n_given = int{prompt.messages.has_value()} + int{prompt.text.has_value()} +
                      int{prompt.tokens.has_value()};
  if (n_given != 1) {
    throw RequestError("a prompt needs exactly one of messages, text or tokens (got " +
                           std::to_string(n_given) + ")",
                       "prompt");
  }
  const Tokenizer& tok = engine_.tokenizer();
  std::vector<TokenId> ids;
  std::string field = "prompt";
  if (prompt.messages) {
    field = "messages";
    ids = chat_tokens(render(*prompt.messages, prompt.chat_options));
  } else if (prompt.text) {
    ids = tok.encode(*prompt.text, prompt.add_bos, prompt.parse_special);
  } else {
    ids = *prompt.tokens;
    const int n_vocab = engine_.config().n_vocab;
    for (const TokenId t : ids) {
      if (t < 0 || t >= n_vocab) {
        throw RequestError("token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                               std::to_string(n_vocab) + ")",
                           "prompt");
      }
    }
  }
  if (ids.empty()) throw RequestError("the prompt is empty after tokenization", field);
  return ids;
}

std::vector<TokenId> PromptFormat::chat_tokens(const std::string& rendered) const {
  // The template may write BOS itself; do not add a second one.
  const std::string bos = chat_ ? chat_->bos_token() : "";
  const bool has_bos = !bos.empty() && rendered.rfind(bos, 0) == 0;
  return engine_.tokenizer().encode(rendered, !has_bos, true);
}

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::ContextFull: return "context";
    case FinishReason::Aborted: return "abort";
    case FinishReason::Cut: return "cut";
  }
  return "abort";
}

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) {
    if (s.empty()) throw RequestError("stop strings must not be empty", "stop");
  }
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return "";
  pending_ += text;
  // The earliest complete stop string ends the output.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail that is a prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > hold; --n) {
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  if (!stopped_) out.swap(pending_);
  return out;
}

std::vector<std::vector<TokenId>> embedding_inputs(const Engine& engine, const std::vector<std::string>& texts) {
  std::vector<std::vector<TokenId>> inputs;
  for (size_t i = 0; i < texts.size(); ++i) {
    inputs.push_back(engine.tokenizer().encode(texts[i], true, false));
    const int n = static_cast<int>(inputs.back().size());
    if (n > engine.n_ctx()) {
      throw RequestError("input[" + std::to_string(i) + "] is " + std::to_string(n) + " tokens but the context is " +
                             std::to_string(engine.n_ctx()),
                         "input", "context_length_exceeded");
    }
  }
  return inputs;
}

size_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

void check_request_fits(int n_prompt, const RequestOptions& options, int n_ctx, bool shifts_context) {
  if (n_prompt == 0) throw RequestError("the prompt is empty", "prompt");
  if (n_prompt >= n_ctx) {
    throw RequestError("the prompt is " + std::to_string(n_prompt) + " tokens but the context is " +
                           std::to_string(n_ctx) + " (leave room for at least one generated token)",
                       "prompt", "context_length_exceeded");
  }
  if (options.max_tokens < -1) {
    throw RequestError("max_tokens must be >= -1 (-1 = until the context is full), got " +
                           std::to_string(options.max_tokens),
                       "max_tokens");
  }
  if (options.max_tokens >= 0 && !shifts_context && n_prompt + options.max_tokens > n_ctx) {
    throw RequestError("prompt (" + std::to_string(n_prompt) + " tokens) + max_tokens (" +
                           std::to_string(options.max_tokens) + ") exceeds the context (" +
                           std::to_string(n_ctx) + ")",
                       "max_tokens", "context_length_exceeded");
  }
  options.sampler.validate();
}

std::shared_ptr<const Grammar> compile_grammar(const Engine& engine, std::string_view gbnf,
                                               const std::string& field) {
  try {
    return std::make_shared<const Grammar>(Grammar::parse(gbnf, engine.grammar_vocab().get()));
  } catch (const GrammarError& e) {
    throw RequestError(field + ": " + e.what(), field);
  }
}

std::shared_ptr<const Grammar> compile_json_schema(const Engine& engine, std::string_view schema_json,
                                                   const std::string& field) {
  const nlohmann::json schema = nlohmann::json::parse(schema_json, nullptr, false);
  if (schema.is_discarded()) throw RequestError(field + ": the schema is not valid JSON", field);
  std::string gbnf;
  try {
    gbnf = json_schema_to_grammar(schema);
  } catch (const JsonSchemaError& e) {
    // "json_schema /properties/a: ..." -> "<field> /properties/a: ..."
    std::string_view message = e.what();
    constexpr std::string_view kPrefix = "json_schema ";
    if (message.starts_with(kPrefix)) message.remove_prefix(kPrefix.size() - 1);
    throw RequestError(field + (message.starts_with(' ') ? "" : ": ") + std::string(message), field);
  }
  // The converter's grammars are valid; a GrammarError here is a converter bug, still
  // reported against the field that caused it.
  return compile_grammar(engine, gbnf, field);
}

std::shared_ptr<const Grammar> compile_json_object(const Engine& engine) {
  return compile_grammar(engine, json_object_grammar(), "response_format");
}

std::vector<std::pair<int32_t, float>> parse_logit_bias(const nlohmann::json& bias, int n_vocab,
                                                        const std::string& field) {
  if (!bias.is_object()) {
    throw RequestError("'" + field + "' must be an object of token id -> bias, got " + bias.type_name(), field,
                       "invalid_type");
  }
  std::vector<std::pair<int32_t, float>> out;
  for (const auto& [key, value] : bias.items()) {
    const std::string entry = field + "." + key;
    char* end = nullptr;
    const long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || id < 0 || id >= n_vocab) {
      throw RequestError("'" + field + "' key '" + key + "' is not a token id in [0, " + std::to_string(n_vocab) + ")",
                         entry);
    }
    if (!value.is_number()) {
      throw RequestError("'" + entry + "' must be a number, got " + value.type_name(), entry, "invalid_type");
    }
    const double b = value.get<double>();
    if (!(b >= -100 && b <= 100)) throw RequestError("'" + entry + "' must be in [-100, 100], got " + value.dump(), entry);
    out.emplace_back(static_cast<int32_t>(id), b <= -100 ? -std::numeric_limits<float>::infinity() : static_cast<float>(b));
  }
  return out;
}

void check_grammar_bias(const Engine& engine, const std::shared_ptr<const Grammar>& grammar,
                        const SamplerParams& sampler) {
  if (!grammar || sampler.logit_bias.empty()) return;
  GrammarMatcher matcher(grammar, engine.grammar_vocab());
  TokenMask mask;
  matcher.allowed_tokens(mask);
  if (!mask_survives_bias(mask, sampler.logit_bias)) {
    throw RequestError("logit_bias bans every token the output constraint allows at its start", "logit_bias");
  }
}

RequestRun::RequestRun(Session& session, const std::vector<TokenId>& prompt,
                       const RequestOptions& options)
    : drafter_(options.drafter), matcher_(options.stop), n_prompt_(static_cast<int>(prompt.size())) {
  check_request_fits(n_prompt_, options, session.n_ctx(), session.shifts_context());
  GenerateParams gp;
  gp.max_tokens = options.max_tokens;
  gp.sampler = options.sampler;
  gp.on_logits = options.on_logits;
  gp.grammar = options.grammar;
  gp.logprobs = options.logprobs;
  gp.lookup_ngram = options.lookup_ngram;
  gp.drafter = options.drafter.get();
  gp.defer_prompt = options.defer_prompt;

  // ---- reuse the cached prefix; generate() recomputes the last position if nothing is new
  const size_t keep = common_prefix(session.tokens(), prompt);
  session.rewind(static_cast<int>(keep));
  const size_t kept = static_cast<size_t>(session.position());  // less where the cache cannot resume
  n_cached_ = static_cast<int>(kept);
  const std::vector<TokenId> suffix(prompt.begin() + static_cast<std::ptrdiff_t>(kept), prompt.end());
  generation_ = session.start(suffix, gp);
  if (generation_->done()) finish();
}

RequestRun::~RequestRun() = default;

void RequestRun::finish() {
  done_ = true;
  finish_ = from_stop_reason(generation_->stats().stop);
}

bool RequestRun::next(std::string& piece) {
  piece.clear();
  if (done_) return false;
  std::string text;
  const bool more = generation_->step(text);
  note_logprobs(text.size());
  piece = matcher_.push(text);
  if (matcher_.stopped()) {
    generation_->stop();  // its pending text lies past the stop string
    done_ = true;
    finish_ = FinishReason::Stop;
    emitted_bytes_ += piece.size();
    release_logprobs(false);
    return false;
  }
  if (!more) {
    piece += matcher_.flush();
    finish();
    emitted_bytes_ += piece.size();
    release_logprobs(true);
    return false;
  }
  emitted_bytes_ += piece.size();
  release_logprobs(false);
  return true;
}

std::string RequestRun::stop(FinishReason reason) {
  if (done_) return {};
  std::string out = matcher_.push(generation_->stop());
  const bool stopped = matcher_.stopped();
  if (!stopped) out += matcher_.flush();
  done_ = true;
  finish_ = reason;
  emitted_bytes_ += out.size();
  release_logprobs(!stopped);
  return out;
}

void RequestRun::note_logprobs(size_t n_text_bytes) {
  if (const StepLogprobs* lp = generation_->step_logprobs()) {
    pending_logprobs_.push_back({*lp, generated_bytes_});
  }
  generated_bytes_ += n_text_bytes;
}

void RequestRun::release_logprobs(bool all) {
  size_t n = 0;
  while (n < pending_logprobs_.size() && (all || pending_logprobs_[n].text_start < emitted_bytes_)) {
    released_logprobs_.push_back(std::move(pending_logprobs_[n].logprobs));
    ++n;
  }
  pending_logprobs_.erase(pending_logprobs_.begin(), pending_logprobs_.begin() + static_cast<std::ptrdiff_t>(n));
  if (done_) pending_logprobs_.clear();  // the tokens of a stop string
}

std::vector<StepLogprobs> RequestRun::take_logprobs() {
  return std::exchange(released_logprobs_, {});
}

std::unique_ptr<RequestRun> run_request(Session& session, const std::vector<TokenId>& prompt,
                                        const RequestOptions& options,
                                        const std::function<bool(std::string_view)>& on_piece) {
  auto run = std::make_unique<RequestRun>(session, prompt, options);
  std::string piece;
  bool more = !run->done();
  while (more) {
    more = run->next(piece);
    if (!piece.empty() && on_piece && !on_piece(piece) && more) {
      run->stop(FinishReason::Aborted);
      break;
    }
  }
  return run;
}

}  // namespace runnel
