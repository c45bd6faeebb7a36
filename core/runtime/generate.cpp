// Session::generate: the generation loop (evaluate the prompt, then sample, stream
// and evaluate one token at a time).
#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/runtime/engine.h"

namespace runnel {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int Session::check_request(const std::vector<TokenId>& prompt, const GenerateParams& params) const {
  params.sampler.validate();
  if (params.max_tokens < -1) {
    throw std::invalid_argument("max_tokens must be >= -1 (-1 = until the context is full), got " +
                                std::to_string(params.max_tokens));
  }
  if (prompt.empty() && tokens_.empty()) throw std::invalid_argument("the prompt is empty");
  check_fits(prompt.size(), "prompt");
  const int n_vocab = engine_.config().n_vocab;
  for (const TokenId t : prompt) {
    if (t < 0 || t >= n_vocab) {
      throw std::invalid_argument("token id " + std::to_string(t) +
                                  " is outside the vocabulary [0, " + std::to_string(n_vocab) +
                                  ")");
    }
  }
  const int n_ctx = kv_.n_ctx();
  const int after_prompt = position() + static_cast<int>(prompt.size());
  const int room = n_ctx - after_prompt;  // tokens that can still join the history
  if (shifts_context()) {
    // The context shifts when full: any length works (-1: until end of generation).
    if (after_prompt > n_ctx) check_fits(prompt.size(), "prompt");
    return params.max_tokens < 0 ? std::numeric_limits<int>::max() : params.max_tokens;
  }
  const int max_gen = params.max_tokens < 0 ? room : params.max_tokens;
  if (max_gen > room) {
    throw std::invalid_argument("prompt (" + std::to_string(after_prompt) + " tokens" +
                                (position() > 0 ? " with the session's history" : "") +
                                ") + max_tokens (" + std::to_string(max_gen) +
                                ") exceeds the context (" + std::to_string(n_ctx) + ")");
  }
  return max_gen;
}

GenerationStats Session::generate(const std::vector<TokenId>& prompt, const GenerateParams& params,
                                  const PieceCallback& on_piece) {
  // ---- everything that can fail does so before any work
  const int max_gen = check_request(prompt, params);

  GenerationStats stats;
  stats.load_ms = engine_.load_ms();
  stats.n_prompt = static_cast<int>(prompt.size());
  Sampler sampler(params.sampler);
  // The penalties see the recent context: the history's tail, then the prompt.
  const size_t n_recent = static_cast<size_t>(std::max(params.sampler.penalty_last_n, 0));
  for (size_t i = tokens_.size() - std::min(tokens_.size(), n_recent); i < tokens_.size(); ++i) {
    sampler.accept(tokens_[i]);
  }
  for (const TokenId t : prompt) sampler.accept(t);

  // ---- the prompt
  const Clock::time_point prompt_start = Clock::now();
  if (!prompt.empty()) append(prompt);
  // Nothing pending and no logits kept (after rewind): recompute the last position.
  if (n_evaluated_ == position() && last_logits_.empty()) --n_evaluated_;
  run_pending(false, nullptr);
  stats.prompt_ms = ms_since(prompt_start);
  if (max_gen == 0 && params.on_logits) params.on_logits(0, last_logits_);

  // ---- sample, stream, evaluate
  const Tokenizer& tok = engine_.tokenizer();
  StreamingDetokenizer detok(tok);
  const Clock::time_point gen_start = Clock::now();
  stats.stop = params.max_tokens < 0 ? StopReason::ContextFull : StopReason::MaxTokens;
  for (int step = 0; step < max_gen; ++step) {
    if (step > 0) run_pending(false, nullptr);  // the token sampled last
    if (params.on_logits) params.on_logits(step, last_logits_);
    const TokenId id = sampler.sample(last_logits_);
    if (params.stop_on_eog && tok.is_eog(id)) {
      stats.stop = StopReason::EndOfGeneration;
      break;
    }
    sampler.accept(id);
    if (position() == kv_.n_ctx() && shifts_context()) shift_context();
    tokens_.push_back(id);  // pending: evaluated when more is asked of this session
    last_logits_ = {};
    ++stats.n_generated;
    const std::string piece = detok.push(id);
    if (!piece.empty() && on_piece && !on_piece(piece)) {
      stats.stop = StopReason::Callback;
      break;
    }
  }
  const std::string rest = detok.flush();
  if (!rest.empty() && on_piece) on_piece(rest);
  stats.gen_ms = ms_since(gen_start);
  return stats;
}

bool Session::shifts_context() const { return engine_.options().n_keep >= 0; }

void Session::shift_context() {
  // Keep the first n_keep tokens (a system prompt), drop the oldest half of the rest,
  // slide the remainder down in the cache and re-rotate its keys to their new
  // positions, as llama.cpp's context shift does. Everything is evaluated here.
  const int n_ctx = kv_.n_ctx();
  const int n_keep = std::min(engine_.options().n_keep, n_ctx - 2);
  const int n_discard = std::max(1, (position() - n_keep) / 2);
  const int n_moved = n_evaluated_ - n_keep - n_discard;
  kv_.move_positions(n_keep + n_discard, n_keep, n_moved);
  engine_.model_->rerotate_keys(kv_, n_keep, n_moved, -n_discard);
  tokens_.erase(tokens_.begin() + n_keep, tokens_.begin() + n_keep + n_discard);
  n_evaluated_ -= n_discard;
  ++n_context_shifts_;
}

}  // namespace runnel
