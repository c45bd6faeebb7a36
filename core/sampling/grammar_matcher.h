// Constrained decoding with a GBNF grammar:
//
//   auto grammar = std::make_shared<const Grammar>(Grammar::parse(text, vocab.get()));
//   GrammarMatcher m(grammar, vocab);           // vocab: std::shared_ptr<const TokenTrie>
//   m.allowed_tokens(mask);                      // before sampling: mask of allowed ids
//   m.accept_token(id);                          // after sampling
//
// A matcher is cheap to copy (the copy shares the caches; see grammar_automaton.h).
// Not thread-safe: a matcher and its copies belong to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "core/sampling/grammar.h"
#include "core/sampling/grammar_automaton.h"
#include "core/sampling/grammar_token_trie.h"

namespace runnel {

// Whether some id `mask` allows is not banned (bias -inf) by `logit_bias`
// (SamplerParams::logit_bias): false when the bias leaves the grammar no token.
bool mask_survives_bias(const TokenMask& mask, std::span<const std::pair<int32_t, float>> logit_bias);

class GrammarMatcher {
 public:
  // Without a vocabulary only the byte operations work (and the grammar must not
  // refer to token ids: std::invalid_argument).
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar,
                          std::shared_ptr<const TokenTrie> vocab = nullptr,
                          GrammarCacheOptions options = {});

  // Each accept either advances the state and returns true, or returns false and
  // leaves it unchanged. Bytes are matched as UTF-8: the grammar's characters are
  // byte sequences, so a character may arrive split across calls.
  bool accept_byte(uint8_t byte);
  bool accept_bytes(std::string_view bytes);
  // A text token through its bytes (or a token reference), a control token only
  // through a token reference, an EOG token where the grammar may end (then the
  // matcher is finished and allows nothing more). Throws std::out_of_range for an
  // id outside the vocabulary.
  bool accept_token(int32_t id);

  // The root rule may end here (EOG tokens are allowed).
  bool is_accepting() const { return !finished_ && automaton_->is_accepting(state_); }
  bool is_finished() const { return finished_; }

  // Sets exactly the ids accept_token would take now (resizes mask to the vocabulary).
  void allowed_tokens(TokenMask& mask);

  // Successful accept calls so far; rollback(n) undoes the last n of them.
  size_t n_steps() const { return history_.size(); }
  void rollback(size_t n_steps);
  void reset();

  GrammarCacheStats cache_stats() const { return automaton_->stats(); }

 private:
  struct Step {
    uint32_t state;
    bool finished;
  };
  std::shared_ptr<GrammarAutomaton> automaton_;
  uint32_t state_;
  bool finished_ = false;
  std::vector<Step> history_;  // the state before each accepted step

  bool advance_to(uint32_t next);
};

}  // namespace runnel
