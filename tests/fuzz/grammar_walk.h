// Runs a compiled grammar for a few steps, as sampling would: the grammar and JSON
// schema targets use it so that the pushdown automaton the compiler's output builds is
// exercised too (left recursion, empty repetitions, token references).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "core/sampling/grammar.h"
#include "core/sampling/grammar_matcher.h"

namespace runnel::fuzz {

// Up to `n_steps` tokens, each the lowest id the mask allows after skipping `pick` % count
// of them (pick comes from the input, so different inputs walk different paths), then
// `text` byte by byte. Every allowed token must be accepted: a mask and accept_token
// that disagree is a matcher bug.
// A grammar too ambiguous to match (GrammarLimitError) ends the walk: the refusal is
// the expected answer.
inline void walk_grammar_steps(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocab,
                               uint32_t pick, std::string_view text, int n_steps);
inline void walk_grammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocab,
                         uint32_t pick, std::string_view text, int n_steps = 16) {
  try {
    walk_grammar_steps(std::move(grammar), std::move(vocab), pick, text, n_steps);
  } catch (const GrammarLimitError&) {
  }
}

inline void walk_grammar_steps(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocab,
                               uint32_t pick, std::string_view text, int n_steps) {
  GrammarMatcher m(std::move(grammar), std::move(vocab));
  TokenMask mask;
  for (int step = 0; step < n_steps && !m.is_finished(); ++step) {
    m.allowed_tokens(mask);
    const int32_t n_allowed = mask.count();
    if (n_allowed == 0) break;
    int32_t skip = static_cast<int32_t>(pick % static_cast<uint32_t>(n_allowed));
    pick = pick * 1103515245u + 12345u;
    for (int32_t id = 0; id < mask.size(); ++id) {
      if (!mask.test(id) || skip-- > 0) continue;
      if (!m.accept_token(id)) {
        std::fprintf(stderr, "grammar: token %d is in the mask but accept_token refuses it\n", id);
        std::abort();
      }
      break;
    }
  }
  m.reset();
  for (const char c : text) {
    if (!m.accept_byte(static_cast<uint8_t>(c))) break;
  }
  (void)m.is_accepting();
  if (m.n_steps() > 0) m.rollback(m.n_steps());
}

}  // namespace runnel::fuzz
