#include "core/runtime/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/sampling/grammar_token_trie.h"

namespace runnel {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

// ---------------------------------------------------------------- Engine

std::unique_ptr<Engine> Engine::load(std::unique_ptr<WeightStore> store,
                                     const EngineOptions& options) {
  const Clock::time_point start = Clock::now();
  if (!store) throw std::invalid_argument("Engine::load: no weight store");
  if (options.n_ctx < 0) {
    throw std::invalid_argument("context size must be >= 0 (0 = model default), got " +
                                std::to_string(options.n_ctx));
  }
  if (options.n_batch < 1) {
    throw std::invalid_argument("batch size must be >= 1, got " + std::to_string(options.n_batch));
  }
  if (options.n_draft < 0 || options.n_draft >= options.n_batch) {
    throw std::invalid_argument("draft length must be in [0, batch size " + std::to_string(options.n_batch) +
                                "), got " + std::to_string(options.n_draft));
  }
  std::unique_ptr<Engine> e(new Engine());
  const ModelConfig config = ModelConfig::from_model(store->model());
  e->tokenizer_ = Tokenizer::from_metadata(store->model().metadata);
  if (e->tokenizer_->n_vocab() != config.n_vocab) {
    throw GgufError("tokenizer has " + std::to_string(e->tokenizer_->n_vocab()) +
                    " tokens but the model's vocabulary is " + std::to_string(config.n_vocab));
  }
  if (options.kv_type != GgmlType::F16) {
    const int block = static_cast<int>(traits(options.kv_type).block_size);
    if (options.kv_type != GgmlType::Q8_0 && options.kv_type != GgmlType::Q4_0) {
      throw std::invalid_argument("KV cache type " + std::string(traits(options.kv_type).name) +
                                  " is not supported (f16, q8_0, q4_0)");
    }
    if (config.head_dim % block != 0 || config.head_dim_v % block != 0) {
      throw std::invalid_argument("--kv-type " + std::string(kv_type_name(options.kv_type)) +
                                  " needs a head size that is a multiple of " + std::to_string(block) +
                                  "; this model's is " + std::to_string(config.head_dim));
    }
  }
  e->store_ = std::move(store);
  e->options_ = options;
  if (e->options_.n_ctx == 0) e->options_.n_ctx = config.default_n_ctx();
  if (config.has_position_embd && e->options_.n_ctx > config.n_ctx_train) {
    throw std::invalid_argument("context size " + std::to_string(e->options_.n_ctx) + " exceeds the " +
                                std::to_string(config.n_ctx_train) + " positions this " + config.arch_name +
                                " model has embeddings for");
  }
  e->options_.n_batch = config.batch_for(e->options_.n_batch, e->options_.n_ctx);
  if (!e->options_.parallel) e->options_.parallel = std::make_shared<InlineParallel>();
  e->model_ = std::make_unique<Model>(config, *e->store_, e->options_.parallel.get());
  e->load_ms_ = ms_since(start);
  return e;
}

Engine::~Engine() = default;

std::unique_ptr<Session> Engine::new_session(int n_ctx) {
  return std::make_unique<Session>(*this, n_ctx);
}

std::string embedding_model_refusal(const ModelConfig& config) {
  return "this is a " + config.arch_name +
         " embedding model: it computes embeddings (runnel embed, POST /v1/embeddings), it does not generate text";
}

void Engine::check_generative() const {
  if (!config().generative()) throw std::invalid_argument(embedding_model_refusal(config()));
}

std::shared_ptr<const TokenTrie> Engine::grammar_vocab() const {
  std::call_once(grammar_vocab_once_, [this] {
    const Tokenizer& tok = *tokenizer_;
    const int32_t n = tok.n_vocab();
    std::vector<std::string> bytes(static_cast<size_t>(n));
    std::vector<GrammarTokenKind> kinds(static_cast<size_t>(n), GrammarTokenKind::kText);
    for (TokenId id = 0; id < n; ++id) {
      const TokenAttr attr = tok.attr(id);
      if (tok.is_eog(id)) {
        kinds[id] = GrammarTokenKind::kEog;
      } else if (attr == TokenAttr::Control || attr == TokenAttr::Unknown) {
        kinds[id] = GrammarTokenKind::kControl;
      } else {
        bytes[id] = tok.token_to_piece(id, false);  // what the detokenizer emits
      }
    }
    grammar_vocab_ = std::make_shared<const TokenTrie>(std::move(bytes), std::move(kinds));
  });
  return grammar_vocab_;
}

// ---------------------------------------------------------------- Session

namespace {

int session_ctx(const Engine& engine, int n_ctx) {
  if (n_ctx == 0) return engine.n_ctx();
  if (n_ctx < 1 || n_ctx > engine.n_ctx()) {
    throw std::invalid_argument("context size " + std::to_string(n_ctx) +
                                " is outside [1, " + std::to_string(engine.n_ctx()) +
                                "] (the model was loaded with context " +
                                std::to_string(engine.n_ctx()) + ")");
  }
  return n_ctx;
}

}  // namespace

Session::Session(Engine& engine, int n_ctx)
    : engine_(engine),
      kv_(engine.config().n_layer, session_ctx(engine, n_ctx), engine.config().kv_dim(),
          engine.config().v_dim(), engine.options().kv_type, engine.config().kv_windows(),
          engine.options().n_batch),
      scratch_(*engine.model_, engine.options().n_batch, kv_.n_ctx(),
               n_tasks_for(*engine.options().parallel, std::numeric_limits<int>::max()),
               engine.options().all_logits, engine.options().n_draft) {
  tokens_.reserve(kv_.n_ctx());
}

void Session::check_fits(size_t n_new, std::string_view what) const {
  const size_t n_ctx = static_cast<size_t>(kv_.n_ctx());
  if (tokens_.size() + n_new <= n_ctx) return;
  std::string msg = std::string(what) + " is " + std::to_string(n_new) + " tokens";
  if (!tokens_.empty()) msg += " after " + std::to_string(tokens_.size()) + " in the session";
  throw std::invalid_argument(msg + " but the context is " + std::to_string(n_ctx));
}

void Session::run_pending(bool all_logits, std::vector<float>* all_out) {
  Model& model = *engine_.model_;
  Parallel& par = *engine_.options().parallel;
  const int n_vocab = model.config().n_vocab;
  const int n_total = static_cast<int>(tokens_.size());
  while (n_evaluated_ < n_total) {
    const int n = std::min(scratch_.n_batch, n_total - n_evaluated_);
    const std::span<const int32_t> chunk(tokens_.data() + n_evaluated_, n);
    model.forward(chunk, n_evaluated_, all_logits, kv_, scratch_, par);
    n_evaluated_ += n;
    const size_t last_row = all_logits ? static_cast<size_t>(n - 1) : 0;
    last_logits_ = std::span<float>(scratch_.logits.data() + last_row * n_vocab, n_vocab);
    if (all_out) {
      all_out->insert(all_out->end(), scratch_.logits.begin(),
                      scratch_.logits.begin() + static_cast<size_t>(n) * n_vocab);
    }
  }
}

std::span<float> Session::verify(std::span<const TokenId> drafts) {
  Model& model = *engine_.model_;
  const int n_vocab = model.config().n_vocab;
  const int start = n_evaluated_;  // the pending token
  const int n = 1 + static_cast<int>(drafts.size());
  tokens_.insert(tokens_.end(), drafts.begin(), drafts.end());
  scratch_.mm.per_token = true;
  model.forward(std::span<const int32_t>(tokens_.data() + start, n), start, true, kv_, scratch_,
                *engine_.options().parallel);
  scratch_.mm.per_token = false;
  tokens_.resize(static_cast<size_t>(start) + 1);
  n_evaluated_ = start + 1;
  last_logits_ = std::span<float>(scratch_.logits.data(), n_vocab);
  return std::span<float>(scratch_.logits.data(), static_cast<size_t>(n) * n_vocab);
}

int Session::eval_chunk() {
  Model& model = *engine_.model_;
  const int n = std::min(scratch_.n_batch, n_pending());
  if (n > 0) {
    model.forward(std::span<const int32_t>(tokens_.data() + n_evaluated_, n), n_evaluated_, false, kv_, scratch_,
                  *engine_.options().parallel);
    n_evaluated_ += n;
    last_logits_ = std::span<float>(scratch_.logits.data(), model.config().n_vocab);
  }
  return n_pending();
}

DecodeBatch::DecodeBatch(Engine& engine, int max_sessions)
    : engine_(engine),
      max_sessions_(std::max(1, max_sessions)),
      takes_prompts_(Model::mixes_runs(engine.config())),
      // a prompt chunk and the sessions' rows; logits for the sessions and the chunk's last
      scratch_(*engine.model_, max_sessions_ + (takes_prompts_ ? engine.options().n_batch : 0), engine.n_ctx(),
               n_tasks_for(*engine.options().parallel, std::numeric_limits<int>::max()), !takes_prompts_,
               max_sessions_) {
  scratch_.mm.per_token = true;
}

void DecodeBatch::run(std::span<Session* const> sessions, Session* prompt) {
  if (static_cast<int>(sessions.size()) > max_sessions_) {
    throw std::invalid_argument("DecodeBatch: " + std::to_string(sessions.size()) + " sessions, room for " +
                                std::to_string(max_sessions_));
  }
  const auto usable = [&](const Session& s) { return &s.engine_ == &engine_ && s.n_ctx() == engine_.n_ctx(); };
  for (const Session* s : sessions) {
    if (!usable(*s) || s->n_pending() != 1) {
      throw std::invalid_argument(
          "DecodeBatch: each session must be of this engine, at its context size, with one pending token");
    }
  }
  if (prompt && (!takes_prompts_ || !usable(*prompt) || prompt->n_pending() < 2)) {
    throw std::invalid_argument(
        takes_prompts_ ? "DecodeBatch: the prompt's session must be of this engine, at its context size, with "
                         "more than one pending token"
                       : "DecodeBatch: this model's batches take no prompt chunks (a mixture of experts)");
  }
  if (sessions.empty() && !prompt) return;
  engine_.check_generative();
  tokens_.clear();
  runs_.clear();
  // the chunk eval_chunk would run: its rows first, for the batched products
  const int n_chunk = prompt ? std::min(prompt->scratch_.n_batch, prompt->n_pending()) : 0;
  if (prompt) {
    const auto first = prompt->tokens_.begin() + prompt->n_evaluated_;
    tokens_.insert(tokens_.end(), first, first + n_chunk);
    runs_.push_back({&prompt->kv_, prompt->n_evaluated_, n_chunk});
  }
  for (Session* s : sessions) {
    tokens_.push_back(s->tokens_[static_cast<size_t>(s->n_evaluated_)]);
    runs_.push_back({&s->kv_, s->n_evaluated_, 1});
  }
  scratch_.mm.gemm_tokens = n_chunk;
  const int logits_from = prompt ? n_chunk - 1 : 0;
  engine_.model_->forward_runs(tokens_, runs_, logits_from, scratch_, *engine_.options().parallel);
  const size_t n_vocab = static_cast<size_t>(engine_.config().n_vocab);
  // Into each session's own buffer: its logits outlive the next batch.
  const auto take = [&](Session& s, size_t row) {
    std::copy_n(scratch_.logits.begin() + static_cast<std::ptrdiff_t>(row * n_vocab), n_vocab,
                s.scratch_.logits.begin());
    s.last_logits_ = std::span<float>(s.scratch_.logits.data(), n_vocab);
  };
  if (prompt) {
    take(*prompt, 0);
    prompt->n_evaluated_ += n_chunk;
  }
  for (size_t i = 0; i < sessions.size(); ++i) {
    take(*sessions[i], i + (prompt ? 1 : 0));
    ++sessions[i]->n_evaluated_;
  }
}

void Session::append(std::span<const TokenId> tokens) {
  if (tokens.empty()) throw std::invalid_argument("eval: no tokens");
  const int n_vocab = engine_.config().n_vocab;
  for (const TokenId t : tokens) {
    if (t < 0 || t >= n_vocab) {
      throw std::invalid_argument("token id " + std::to_string(t) +
                                  " is outside the vocabulary [0, " + std::to_string(n_vocab) +
                                  ")");
    }
  }
  check_fits(tokens.size(), "input");
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
}

std::span<float> Session::eval(std::span<const TokenId> tokens) {
  engine_.check_generative();
  append(tokens);
  run_pending(false, nullptr);
  return last_logits_;
}

std::vector<float> Session::eval_all(std::span<const TokenId> tokens) {
  engine_.check_generative();
  if (!engine_.options().all_logits) {
    throw std::logic_error("eval_all needs an engine loaded with all_logits");
  }
  append(tokens);
  std::vector<float> all;
  run_pending(true, &all);
  // Rows of tokens pending from before this call come first; drop them.
  const size_t n_vocab = engine_.config().n_vocab;
  all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(tokens.size() * n_vocab));
  return all;
}

std::vector<float> Session::embed(std::span<const TokenId> tokens, bool normalize) {
  reset();
  append(tokens);
  Model& model = *engine_.model_;
  const ModelConfig& c = model.config();
  Parallel& par = *engine_.options().parallel;
  const size_t n_embd = c.n_embd;
  const int n_total = static_cast<int>(tokens_.size());
  // An embedding model's batch is its context (ModelConfig::batch_for): one forward
  // pass, which its attention over the whole input needs.
  std::vector<double> pooled(n_embd, 0.0);  // [n_embd]
  std::vector<float> hidden(static_cast<size_t>(scratch_.n_batch) * n_embd);  // [n_batch, n_embd]
  for (int pos = 0; pos < n_total;) {
    const int n = std::min(scratch_.n_batch, n_total - pos);
    model.forward(std::span<const int32_t>(tokens_.data() + pos, n), pos, false, kv_, scratch_, par,
                  hidden.data());
    for (int i = 0; i < n; ++i) {
      const int p = pos + i;
      const bool take = c.pooling == Pooling::Mean || (c.pooling == Pooling::Cls && p == 0) ||
                        (c.pooling == Pooling::Last && p == n_total - 1);
      if (!take) continue;
      for (size_t d = 0; d < n_embd; ++d) pooled[d] += hidden[i * n_embd + d];
    }
    pos += n;
  }
  reset();
  if (c.pooling == Pooling::Mean) {
    for (double& v : pooled) v /= n_total;
  }
  double norm = 0;
  for (const double v : pooled) norm += v * v;
  norm = std::sqrt(norm);
  std::vector<float> out(n_embd);
  for (size_t d = 0; d < n_embd; ++d) {
    out[d] = !normalize ? static_cast<float>(pooled[d]) : norm > 0 ? static_cast<float>(pooled[d] / norm) : 0.0f;
  }
  return out;
}

void Session::restore(std::vector<TokenId> tokens, int n_cached, const uint8_t* kv_bytes, size_t n_bytes) {
  const int n = n_cached;
  if (n < 0 || n > static_cast<int>(tokens.size())) {
    throw std::invalid_argument("the saved cache holds " + std::to_string(n_cached) + " positions for " +
                                std::to_string(tokens.size()) + " tokens");
  }
  if (static_cast<int>(tokens.size()) > kv_.n_ctx()) {
    throw std::invalid_argument("the saved session holds " + std::to_string(tokens.size()) + " tokens but the context is " +
                                std::to_string(kv_.n_ctx()));
  }
  const int n_vocab = engine_.config().n_vocab;
  for (const TokenId t : tokens) {
    if (t < 0 || t >= n_vocab) throw std::invalid_argument("saved token id " + std::to_string(t) + " is outside the vocabulary");
  }
  reset();
  if (!kv_.load_positions(n, kv_bytes, n_bytes)) {
    throw std::invalid_argument("the saved cache (" + std::to_string(n_bytes) + " bytes) is not one of " +
                                std::to_string(n) + " positions for this model's cache layout");
  }
  tokens_ = std::move(tokens);
  n_evaluated_ = n;
}

void Session::rewind(int n_keep) {
  size_t keep = static_cast<size_t>(std::clamp(n_keep, 0, position()));
  // a sliding layer may have dropped the window that resuming there needs
  if (!kv_.resume_at(std::min(static_cast<int>(keep), n_evaluated_))) keep = 0;
  tokens_.resize(keep);
  n_evaluated_ = std::min(n_evaluated_, static_cast<int>(keep));
  last_logits_ = {};
}

}  // namespace runnel
