#include "core/sampling/grammar_automaton.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace runnel {

size_t GrammarAutomaton::VectorHash::operator()(const std::vector<uint32_t>& v) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
  for (uint32_t x : v) h = (h ^ x) * 0x100000001B3ull + (h >> 29);
  return static_cast<size_t>(h);
}

GrammarAutomaton::GrammarAutomaton(std::shared_ptr<const Grammar> grammar,
                                   std::shared_ptr<const TokenTrie> vocab,
                                   GrammarCacheOptions options)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocab)),
      options_(options),
      elements_(grammar_->elements().data()) {
  if (grammar_->has_token_refs() && !vocab_) {
    throw std::invalid_argument("the grammar has token references: expected a vocabulary");
  }
  nodes_.push_back({UINT32_MAX, 0});  // kEmptyStack
  seen_stamp_.push_back(0);
  std::vector<uint32_t> stacks;
  ++stamp_;
  for (uint32_t alt : grammar_->rules()[grammar_->root()].alternatives) {
    expand(continuation(alt, kEmptyStack), stacks);
  }
  initial_ = intern_state(stacks);
  if (vocab_) walk_states_.resize(vocab_->max_depth() + 1);
}

const TokenTrie& GrammarAutomaton::need_vocab() const {
  if (!vocab_) throw std::logic_error("grammar matcher: token operations need a vocabulary");
  return *vocab_;
}

uint32_t GrammarAutomaton::intern_node(uint32_t pos, uint32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | parent;
  auto [it, inserted] = node_ids_.emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (inserted) {
    nodes_.push_back({pos, parent});
    seen_stamp_.push_back(0);
  }
  return it->second;
}

// The stack that continues with element `pos` (or, at the end of an alternative, the
// parent: the rule returns).
uint32_t GrammarAutomaton::continuation(uint32_t pos, uint32_t parent) {
  return elements_[pos].op == GrammarOp::kEnd ? parent : intern_node(pos, parent);
}

// Replaces a rule reference on top of `node` by each alternative of the rule until
// every stack's top is a terminal (or the stack is empty); appends those to `out`.
// Terminates because left recursion is refused when the grammar is compiled.
void GrammarAutomaton::expand(uint32_t node, std::vector<uint32_t>& out) {
  work_.clear();
  work_.push_back(node);
  while (!work_.empty()) {
    const uint32_t n = work_.back();
    work_.pop_back();
    if (seen_stamp_[n] == stamp_) continue;
    seen_stamp_[n] = stamp_;
    if (n == kEmptyStack) {
      out.push_back(n);
      continue;
    }
    const StackNode s = nodes_[n];
    const GrammarElement e = elements_[s.pos];
    if (e.op != GrammarOp::kRuleRef) {
      out.push_back(n);
      continue;
    }
    const uint32_t after = continuation(s.pos + 1, s.parent);
    for (uint32_t alt : grammar_->rules()[e.value].alternatives) {
      work_.push_back(continuation(alt, after));
    }
  }
}

uint32_t GrammarAutomaton::intern_state(std::vector<uint32_t>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty()) return kDead;
  if (stacks.size() > kMaxStacks) {
    throw GrammarLimitError("grammar: more than " + std::to_string(kMaxStacks) +
                            " parses open at once; the grammar is too ambiguous (a repetition of a "
                            "repetition such as x{2,100}++ doubles them at every level): simplify it");
  }
  auto it = state_ids_.find(stacks);
  if (it != state_ids_.end()) return it->second;
  State s;
  s.stacks = stacks;
  s.accepting = stacks.front() == kEmptyStack;
  for (uint32_t n : stacks) {
    if (n == kEmptyStack) continue;
    const GrammarOp op = elements_[nodes_[n].pos].op;
    s.has_token_refs |= op == GrammarOp::kToken || op == GrammarOp::kTokenNot;
    s.has_bytes |= op == GrammarOp::kBytes;
  }
  const auto id = static_cast<uint32_t>(states_.size());
  states_.push_back(std::move(s));
  table_of_.push_back(kNoTable);
  state_ids_.emplace(stacks, id);
  return id;
}

uint32_t GrammarAutomaton::step_byte_slow(uint32_t state, uint8_t byte) {
  step_out_.clear();
  ++stamp_;  // one pass: a node reached from several stacks is expanded once
  const std::vector<ByteSet>& sets = grammar_->byte_sets();
  for (size_t i = 0; i < states_[state].stacks.size(); ++i) {
    const uint32_t n = states_[state].stacks[i];
    if (n == kEmptyStack) continue;
    const StackNode s = nodes_[n];
    const GrammarElement e = elements_[s.pos];
    if (e.op != GrammarOp::kBytes || !sets[e.value].test(byte)) continue;
    expand(continuation(s.pos + 1, s.parent), step_out_);
  }
  const uint32_t next = intern_state(step_out_);

  if (table_of_[state] == kNoTable) {
    if (n_tables_ >= options_.max_transition_tables) {  // drop them all; they refill
      std::fill(table_of_.begin(), table_of_.end(), kNoTable);
      n_tables_ = 0;
    }
    table_of_[state] = static_cast<uint32_t>(n_tables_++);
    if (tables_.size() < n_tables_ * 256) tables_.resize(n_tables_ * 256);
    std::fill_n(tables_.begin() + static_cast<ptrdiff_t>(size_t{table_of_[state]} * 256), 256,
                kUnknown);
  }
  tables_[size_t{table_of_[state]} * 256 + byte] = next;
  return next;
}

uint32_t GrammarAutomaton::step_token(uint32_t state, int32_t id) {
  const TokenTrie& vocab = need_vocab();
  const GrammarTokenKind kind = vocab.kind(id);
  std::vector<uint32_t> stacks;
  if (states_[state].has_token_refs) {
    const bool any_token_ok = kind != GrammarTokenKind::kEog && !vocab.bytes(id).empty();
    const std::vector<uint32_t> from = states_[state].stacks;
    ++stamp_;
    for (uint32_t n : from) {
      if (n == kEmptyStack) continue;
      const StackNode s = nodes_[n];
      const GrammarElement e = elements_[s.pos];
      const bool match = (e.op == GrammarOp::kToken && e.value == static_cast<uint32_t>(id)) ||
                         (e.op == GrammarOp::kTokenNot && e.value != static_cast<uint32_t>(id) &&
                          any_token_ok);
      if (match) expand(continuation(s.pos + 1, s.parent), stacks);
    }
  }
  if (vocab.is_matchable_text(id)) {
    uint32_t s = state;
    for (char c : vocab.bytes(id)) {
      s = step_byte(s, static_cast<uint8_t>(c));
      if (s == kDead) break;
    }
    if (s != kDead) stacks.insert(stacks.end(), states_[s].stacks.begin(), states_[s].stacks.end());
  }
  return intern_state(stacks);
}

void GrammarAutomaton::fill_mask(uint32_t state, TokenMask& mask) {
  const TokenTrie& vocab = need_vocab();
  if (mask.size() != vocab.n_vocab()) mask.reset(vocab.n_vocab());
  if (options_.max_cached_masks == 0) {
    ++mask_misses_;
    compute_mask(state, mask);
    return;
  }
  auto it = mask_slot_.find(state);
  if (it != mask_slot_.end()) {
    ++mask_hits_;
    mask_last_use_[it->second] = ++mask_clock_;
    mask = masks_[it->second];
    return;
  }
  ++mask_misses_;
  compute_mask(state, mask);
  uint32_t slot;
  if (masks_.size() < options_.max_cached_masks) {
    slot = static_cast<uint32_t>(masks_.size());
    masks_.emplace_back();
    mask_state_.push_back(state);
    mask_last_use_.push_back(0);
  } else {  // evict the least recently used
    slot = static_cast<uint32_t>(std::min_element(mask_last_use_.begin(), mask_last_use_.end()) -
                                 mask_last_use_.begin());
    mask_slot_.erase(mask_state_[slot]);
    mask_state_[slot] = state;
  }
  masks_[slot] = mask;
  mask_last_use_[slot] = ++mask_clock_;
  mask_slot_.emplace(state, slot);
}

void GrammarAutomaton::compute_mask(uint32_t state, TokenMask& mask) {
  const TokenTrie& vocab = *vocab_;
  mask.clear();
  if (states_[state].accepting) {
    for (int32_t id : vocab.eog_tokens()) mask.set(id);
  }
  if (states_[state].has_token_refs) {
    for (uint32_t n : states_[state].stacks) {
      if (n == kEmptyStack) continue;
      const GrammarElement e = elements_[nodes_[n].pos];
      if (e.op == GrammarOp::kToken) {
        mask.set(static_cast<int32_t>(e.value));
      } else if (e.op == GrammarOp::kTokenNot) {
        for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
          if (static_cast<uint32_t>(id) != e.value && vocab.kind(id) != GrammarTokenKind::kEog &&
              !vocab.bytes(id).empty()) {
            mask.set(id);
          }
        }
      }
    }
  }
  // The trie in preorder: a node's state is its parent's (walk_states_[depth - 1])
  // stepped by its byte; a dead node skips its whole subtree.
  if (!states_[state].has_bytes) return;  // no text token can match
  walk_states_[0] = state;
  const TokenTrie::Node* nodes = vocab.nodes();
  const int32_t* token_ids = vocab.token_ids();
  const size_t n_nodes = vocab.n_nodes();
  for (size_t i = 1; i < n_nodes;) {
    const TokenTrie::Node& node = nodes[i];
    const uint32_t depth = node.depth_byte >> 8;
    const uint32_t next = step_byte(walk_states_[depth - 1], static_cast<uint8_t>(node.depth_byte));
    if (next == kDead) {
      i = node.subtree_end;
      continue;
    }
    walk_states_[depth] = next;
    for (uint32_t t = node.first_token; t < nodes[i + 1].first_token; ++t) mask.set(token_ids[t]);
    ++i;
  }
}

GrammarCacheStats GrammarAutomaton::stats() const {
  GrammarCacheStats s;
  s.n_stacks = nodes_.size();
  s.n_states = states_.size();
  s.n_tables = n_tables_;
  s.mask_hits = mask_hits_;
  s.mask_misses = mask_misses_;
  return s;
}

}  // namespace runnel
