// The matching machinery behind GrammarMatcher, shared by a matcher and its copies.
//
// A parse state is a set of pushdown stacks (llama.cpp's "stacks"), each stack a list
// of element positions whose top is a terminal (a byte set or a token reference), or
// the empty stack (the root may end here). Stacks are interned as linked nodes
// (position, parent) so equal stacks have one id, and sets of them as sorted id
// lists, so equal states have one id too. Stepping a state by a byte is then a lazily
// filled 256-entry table per state: a byte-level DFA discovered on demand. The mask
// of allowed tokens is a walk of the vocabulary trie through that DFA (dead branches
// are skipped), cached per state.
//
// Not thread-safe: a matcher and its copies share one automaton.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/sampling/grammar.h"
#include "core/sampling/grammar_token_trie.h"

namespace runnel {

struct GrammarCacheOptions {
  size_t max_cached_masks = 256;         // per automaton; 0 turns the mask cache off
  size_t max_transition_tables = 16384;  // 1 KiB each; all are dropped when full
};

struct GrammarCacheStats {
  size_t n_stacks = 0;   // interned stack nodes
  size_t n_states = 0;   // interned states (stack sets)
  size_t n_tables = 0;   // states with a transition table
  size_t mask_hits = 0, mask_misses = 0;
};

class GrammarAutomaton {
 public:
  static constexpr uint32_t kDead = UINT32_MAX;
  // Parse stacks one state may hold (GrammarLimitError beyond): real grammars, JSON
  // schemas included, stay in the hundreds.
  static constexpr size_t kMaxStacks = 4096;

  // vocab may be null: then only byte steps work.
  GrammarAutomaton(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocab,
                   GrammarCacheOptions options);

  uint32_t initial_state() const { return initial_; }
  bool is_accepting(uint32_t state) const { return states_[state].accepting; }
  const TokenTrie* vocab() const { return vocab_.get(); }

  uint32_t step_byte(uint32_t state, uint8_t byte) {
    const uint32_t table = table_of_[state];
    if (table != kNoTable) {
      const uint32_t next = tables_[size_t{table} * 256 + byte];
      if (next != kUnknown) return next;
    }
    return step_byte_slow(state, byte);
  }
  // One whole token: through token references on top of the stacks, and through its
  // bytes if it is a text token. EOG handling is the matcher's. Needs the vocabulary.
  uint32_t step_token(uint32_t state, int32_t id);
  // Every token that step_token accepts, plus EOG tokens where the state accepts.
  void fill_mask(uint32_t state, TokenMask& mask);

  GrammarCacheStats stats() const;

 private:
  static constexpr uint32_t kNoTable = UINT32_MAX;
  static constexpr uint32_t kUnknown = UINT32_MAX - 1;
  static constexpr uint32_t kEmptyStack = 0;  // stack node 0: nothing left to match

  struct StackNode {
    uint32_t pos;     // element index: what to match next
    uint32_t parent;  // the rest of the stack
  };
  struct State {
    std::vector<uint32_t> stacks;  // sorted stack node ids
    bool accepting = false;        // holds the empty stack
    bool has_token_refs = false;   // some stack's top is a token reference
    bool has_bytes = false;        // some stack's top is a byte set
  };
  struct VectorHash {
    size_t operator()(const std::vector<uint32_t>& v) const;
  };

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> vocab_;
  GrammarCacheOptions options_;
  const GrammarElement* elements_;

  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_ids_;
  std::vector<State> states_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> state_ids_;
  std::vector<uint32_t> table_of_;  // per state: its row in tables_, or kNoTable
  std::vector<uint32_t> tables_;    // [n_tables, 256]: next state per byte
  size_t n_tables_ = 0;
  uint32_t initial_ = kDead;

  // Mask cache: slot k holds the mask of state mask_state_[k].
  std::unordered_map<uint32_t, uint32_t> mask_slot_;
  std::vector<TokenMask> masks_;
  std::vector<uint32_t> mask_state_;
  std::vector<uint64_t> mask_last_use_;
  uint64_t mask_clock_ = 0;
  size_t mask_hits_ = 0, mask_misses_ = 0;

  // Scratch.
  std::vector<uint32_t> work_, seen_stamp_, step_out_, walk_states_;
  uint32_t stamp_ = 0;

  uint32_t intern_node(uint32_t pos, uint32_t parent);
  uint32_t continuation(uint32_t pos, uint32_t parent);
  // Adds to `out` the stacks `node` expands to (rule references on top replaced by
  // their alternatives), skipping nodes already expanded since the last ++stamp_: a
  // step bumps the stamp once, so nested repetitions that reach a node along
  // exponentially many paths expand it once (`x{2,100}++++++++++++` took 2.3 s a token).
  void expand(uint32_t node, std::vector<uint32_t>& out);
  uint32_t intern_state(std::vector<uint32_t>& stacks);
  uint32_t step_byte_slow(uint32_t state, uint8_t byte);
  void compute_mask(uint32_t state, TokenMask& mask);
  const TokenTrie& need_vocab() const;
};

}  // namespace runnel
