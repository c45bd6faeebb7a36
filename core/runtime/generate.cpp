// Session::generate: the generation loop (evaluate the prompt, then sample, stream
// and evaluate one token at a time).
#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/runtime/engine.h"
#include "core/sampling/grammar_matcher.h"

namespace runnel {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

struct Generation::GrammarState {
  std::shared_ptr<const TokenTrie> vocab;
  GrammarMatcher matcher;
  TokenMask mask;
  bool mask_ready = false;  // mask is the current state's (computed after the last accept)
};

int Session::check_request(const std::vector<TokenId>& prompt, const GenerateParams& params) const {
  engine_.check_generative();
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

std::unique_ptr<Generation> Session::start(const std::vector<TokenId>& prompt,
                                           const GenerateParams& params) {
  return std::make_unique<Generation>(*this, prompt, params);
}

GenerationStats Session::generate(const std::vector<TokenId>& prompt, const GenerateParams& params,
                                  const PieceCallback& on_piece) {
  Generation gen(*this, prompt, params);
  std::string piece;
  while (gen.step(piece)) {
    if (!piece.empty() && on_piece && !on_piece(piece)) {
      piece = gen.stop();
      break;
    }
  }
  if (!piece.empty() && on_piece) on_piece(piece);
  return gen.stats();
}

Generation::Generation(Session& session, const std::vector<TokenId>& prompt,
                       const GenerateParams& params)
    : session_(session),
      params_(params),
      sampler_(params.sampler),
      detok_(session.engine_.tokenizer()) {
  // ---- everything that can fail does so before any work
  max_gen_ = session_.check_request(prompt, params_);
  Session& s = session_;

  stats_.load_ms = s.engine_.load_ms();
  stats_.n_prompt = static_cast<int>(prompt.size());
  // The penalties see the recent context: the history's tail, then the prompt.
  const size_t n_recent = static_cast<size_t>(std::max(params_.sampler.penalty_last_n, 0));
  for (size_t i = s.tokens_.size() - std::min(s.tokens_.size(), n_recent); i < s.tokens_.size();
       ++i) {
    sampler_.accept(s.tokens_[i]);
  }
  for (const TokenId t : prompt) sampler_.accept(t);
  if (params_.lookup_ngram < 0) {
    throw std::invalid_argument("lookup_ngram must be >= 0 (0 = off), got " + std::to_string(params_.lookup_ngram));
  }
  if (params_.lookup_ngram > 0 || params_.drafter) {
    if (s.engine_.options().n_draft < 1) {
      throw std::invalid_argument(std::string(params_.drafter ? "a draft model" : "prompt lookup") +
                                  " needs an engine with a draft length (EngineOptions::n_draft > 0)");
    }
    if (params_.drafter) {
      drafter_ = params_.drafter;
    } else {
      lookup_ = std::make_unique<PromptLookup>(params_.lookup_ngram, s.engine_.options().n_draft);
      drafter_ = lookup_.get();
    }
  }
  if (params_.grammar) {
    std::shared_ptr<const TokenTrie> vocab = s.engine_.grammar_vocab();
    grammar_ = std::make_unique<GrammarState>(
        GrammarState{vocab, GrammarMatcher(params_.grammar, vocab), TokenMask{}});
  }

  // ---- the prompt
  const Clock::time_point prompt_start = Clock::now();
  if (!prompt.empty()) s.append(prompt);
  // Nothing pending and no logits kept (after rewind): recompute the last position.
  if (s.n_evaluated_ == s.position() && s.last_logits_.empty()) --s.n_evaluated_;
  if (!params_.defer_prompt || max_gen_ == 0) s.run_pending(false, nullptr);
  stats_.prompt_ms = ms_since(prompt_start);
  if (max_gen_ == 0 && params_.on_logits) params_.on_logits(0, s.last_logits_);
  stats_.stop = params_.max_tokens < 0 ? StopReason::ContextFull : StopReason::MaxTokens;
  done_ = max_gen_ == 0;
}

Generation::~Generation() = default;

bool Generation::step(std::string& piece) {
  piece.clear();
  has_logprobs_ = false;
  if (done_) return false;
  Session& s = session_;
  const Clock::time_point step_start = Clock::now();
  if (planned_.empty() && !speculate()) {
    s.run_pending(false, nullptr);  // the token sampled last, or a deferred prompt's rest
    choose(s.last_logits_, step_, -1);
  }
  emit(piece);
  stats_.gen_ms += ms_since(step_start);
  return !done_;
}

bool Generation::choose(std::span<float> logits, int step, TokenId draft) {
  Session& s = session_;
  if (params_.on_logits) params_.on_logits(step, logits);
  // Masks and the sampler change the logits in place.
  if (params_.logprobs >= 0) raw_logits_.assign(logits.begin(), logits.end());
  if (grammar_ && !constrain(logits)) {
    planned_.push_back({});  // the grammar allows no token of this vocabulary here: the end
    return false;
  }
  if (grammar_ && !params_.sampler.logit_bias.empty() && !mask_survives_bias(grammar_->mask, params_.sampler.logit_bias)) {
    const int n = stats_.n_generated + static_cast<int>(planned_.size());
    throw std::invalid_argument("logit_bias bans every token the grammar allows after " + std::to_string(n) +
                                (n == 1 ? " generated token" : " generated tokens"));
  }
  bool accepted = false;
  const TokenId id = draft >= 0 ? sampler_.sample_draft(logits, draft, accepted) : sampler_.sample(logits);
  if (grammar_) {
    const Clock::time_point accept_start = Clock::now();
    if (!grammar_->matcher.accept_token(id)) {
      throw std::logic_error("the sampler picked token " + std::to_string(id) +
                             ", which the grammar's mask did not allow");
    }
    stats_.grammar_ms += ms_since(accept_start);
  }
  Planned p;
  p.id = id;
  const bool ends = (params_.stop_on_eog || grammar_) && s.engine_.tokenizer().is_eog(id);
  if (!ends) {
    sampler_.accept(id);
    if (params_.logprobs >= 0) {
      p.logprobs = token_logprobs(raw_logits_, id, params_.logprobs);
      p.has_logprobs = true;
    }
    // The grammar is complete: the run ends after this token, as if end-of-generation
    // were sampled, without evaluating it.
    p.grammar_complete = grammar_ && !grammar_can_continue();
  }
  planned_.push_back(std::move(p));
  return accepted;
}

bool Generation::speculate() {
  Session& s = session_;
  if (!drafter_ || step_ == 0 || s.n_evaluated_ != s.position() - 1) return false;
  // Room for the drafts and the token after them, without a context shift, within the
  // batch, the session's draft rows and the request's max_tokens.
  const int room = std::min({s.kv_.n_ctx() - s.position() - 1, s.engine_.options().n_draft,
                             max_gen_ - step_ - 1});
  if (room <= 0) return false;
  const std::vector<TokenId> drafts = drafter_->draft(s.tokens_, room);
  if (drafts.empty()) return false;
  const int k = static_cast<int>(drafts.size());
  const std::span<float> rows = s.verify(drafts);
  const size_t n_vocab = static_cast<size_t>(s.engine_.config().n_vocab);
  int n_accepted = 0;
  for (int i = 0; i <= k; ++i) {
    const std::span<float> logits = rows.subspan(static_cast<size_t>(i) * n_vocab, n_vocab);
    const bool accepted = choose(logits, step_ + i, i < k ? drafts[i] : -1);
    const Planned& last = planned_.back();
    if (!accepted || last.id < 0 || last.grammar_complete || s.engine_.tokenizer().is_eog(last.id)) break;
    planned_.back().evaluated = true;
    ++n_accepted;
  }
  drafter_->feedback(k, n_accepted);
  stats_.n_drafted += k;
  stats_.n_draft_accepted += n_accepted;
  return true;
}

void Generation::emit(std::string& piece) {
  Session& s = session_;
  const Planned p = std::move(planned_.front());
  planned_.pop_front();
  if (p.id < 0 || ((params_.stop_on_eog || grammar_) && s.engine_.tokenizer().is_eog(p.id))) {
    stats_.stop = StopReason::EndOfGeneration;
    piece = detok_.flush();
    done_ = true;
    planned_.clear();
    return;
  }
  if (s.position() == s.kv_.n_ctx() && s.shifts_context()) s.shift_context();
  s.tokens_.push_back(p.id);  // pending unless the verification pass evaluated it
  if (p.evaluated) ++s.n_evaluated_;
  s.last_logits_ = {};
  logprobs_ = p.logprobs;
  has_logprobs_ = p.has_logprobs;
  ++stats_.n_generated;
  ++step_;
  piece = detok_.push(p.id);
  if (step_ == max_gen_ || p.grammar_complete) {
    piece += detok_.flush();
    if (p.grammar_complete && step_ != max_gen_) stats_.stop = StopReason::EndOfGeneration;
    done_ = true;
    planned_.clear();
  }
}

bool Generation::constrain(std::span<float> logits) {
  const Clock::time_point start = Clock::now();
  GrammarState& g = *grammar_;
  if (!g.mask_ready) g.matcher.allowed_tokens(g.mask);
  g.mask_ready = false;
  // Ids past the tokenizer's vocabulary (padded output rows) are never allowed.
  const size_t n_mask = std::min(logits.size(), static_cast<size_t>(g.mask.size()));
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  const std::vector<uint64_t>& words = g.mask.words();
  bool any = false;
  for (size_t w = 0; w * 64 < n_mask; ++w) {
    const uint64_t bits = words[w];
    any = any || bits != 0;
    if (bits == ~uint64_t{0}) continue;
    const size_t end = std::min(n_mask, w * 64 + 64);
    for (size_t i = w * 64; i < end; ++i) {
      if (!((bits >> (i - w * 64)) & 1)) logits[i] = kBanned;
    }
  }
  for (size_t i = n_mask; i < logits.size(); ++i) logits[i] = kBanned;
  stats_.grammar_ms += ms_since(start);
  return any;
}

bool Generation::grammar_can_continue() {
  const Clock::time_point start = Clock::now();
  GrammarState& g = *grammar_;
  g.matcher.allowed_tokens(g.mask);
  g.mask_ready = true;
  int32_t n_eog = 0;
  for (const int32_t id : g.vocab->eog_tokens()) n_eog += g.mask.test(id) ? 1 : 0;
  stats_.grammar_ms += ms_since(start);
  return g.mask.count() > n_eog;
}

std::string Generation::stop() {
  if (done_) return {};
  done_ = true;
  planned_.clear();
  stats_.stop = StopReason::Callback;
  return detok_.flush();
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
