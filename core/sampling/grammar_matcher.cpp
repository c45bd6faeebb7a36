#include "core/sampling/grammar_matcher.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace runnel {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar,
                               std::shared_ptr<const TokenTrie> vocab,
                               GrammarCacheOptions options)
    : automaton_(std::make_shared<GrammarAutomaton>(std::move(grammar), std::move(vocab), options)),
      state_(automaton_->initial_state()) {}

bool GrammarMatcher::advance_to(uint32_t next) {
  if (next == GrammarAutomaton::kDead) return false;
  history_.push_back({state_, finished_});
  state_ = next;
  return true;
}

bool GrammarMatcher::accept_byte(uint8_t byte) {
  if (finished_) return false;
  return advance_to(automaton_->step_byte(state_, byte));
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (finished_) return false;
  uint32_t s = state_;
  for (char c : bytes) {
    s = automaton_->step_byte(s, static_cast<uint8_t>(c));
    if (s == GrammarAutomaton::kDead) return false;
  }
  return advance_to(s);
}

bool GrammarMatcher::accept_token(int32_t id) {
  const TokenTrie* vocab = automaton_->vocab();
  if (vocab == nullptr) throw std::logic_error("GrammarMatcher::accept_token: no vocabulary");
  if (id < 0 || id >= vocab->n_vocab()) {
    throw std::out_of_range("GrammarMatcher::accept_token: token id " + std::to_string(id) +
                            " outside the vocabulary of " + std::to_string(vocab->n_vocab()));
  }
  if (finished_) return false;
  if (vocab->kind(id) == GrammarTokenKind::kEog && automaton_->is_accepting(state_)) {
    history_.push_back({state_, finished_});
    finished_ = true;
    return true;
  }
  return advance_to(automaton_->step_token(state_, id));
}

void GrammarMatcher::allowed_tokens(TokenMask& mask) {
  const TokenTrie* vocab = automaton_->vocab();
  if (vocab == nullptr) throw std::logic_error("GrammarMatcher::allowed_tokens: no vocabulary");
  if (finished_) {
    mask.reset(vocab->n_vocab());
    return;
  }
  automaton_->fill_mask(state_, mask);
}

void GrammarMatcher::rollback(size_t n_steps) {
  if (n_steps > history_.size()) {
    throw std::out_of_range("GrammarMatcher::rollback: " + std::to_string(n_steps) +
                            " steps requested, " + std::to_string(history_.size()) + " taken");
  }
  if (n_steps == 0) return;
  const Step back = history_[history_.size() - n_steps];
  history_.resize(history_.size() - n_steps);
  state_ = back.state;
  finished_ = back.finished;
}

void GrammarMatcher::reset() {
  history_.clear();
  state_ = automaton_->initial_state();
  finished_ = false;
}

bool mask_survives_bias(const TokenMask& mask, std::span<const std::pair<int32_t, float>> logit_bias) {
  std::vector<int32_t> banned;
  for (const auto& [id, bias] : logit_bias) {
    if (bias == -std::numeric_limits<float>::infinity() && id >= 0 && id < mask.size() && mask.test(id)) {
      banned.push_back(id);
    }
  }
  std::sort(banned.begin(), banned.end());
  banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
  return mask.count() > static_cast<int32_t>(banned.size());
}

}  // namespace runnel
