// The vocabulary as the grammar engine sees it: every token's bytes, what kind of
// token it is, and a byte trie over the text tokens (built once per vocabulary) that
// the allowed-token mask walks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace runnel {

enum class GrammarTokenKind : uint8_t {
  kText,     // matched by the grammar's characters through its bytes
  kControl,  // never matched by characters; only by a token reference <[id]> / <text>
  kEog,      // end of generation: allowed where the grammar may end (and by <[id]>)
};

class TokenTrie {
 public:
  // token_bytes[id]: the bytes the token stands for (byte tokens decoded, SPM's U+2581
  // as a space); kinds[id]: its kind. Sizes must match (std::invalid_argument).
  TokenTrie(std::vector<std::string> token_bytes, std::vector<GrammarTokenKind> kinds);

  int32_t n_vocab() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  GrammarTokenKind kind(int32_t id) const { return kinds_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& eog_tokens() const { return eog_; }
  // Text tokens with at least one byte: the ones the trie holds.
  bool is_matchable_text(int32_t id) const {
    return kind(id) == GrammarTokenKind::kText && !bytes(id).empty();
  }
  // The token whose bytes are exactly `text` (a control token first), or -1.
  int32_t find_exact(std::string_view text) const;

  // The trie in preorder. Node 0 is the root (the empty prefix); node i > 0 is reached
  // from its parent (the nearest earlier node of depth depth(i) - 1) by byte(i); its
  // subtree is [i, subtree_end(i)). The text tokens whose bytes end at node i are
  // node_tokens(i).
  struct Node {
    uint32_t subtree_end;
    uint32_t first_token;  // its tokens: token_ids_[first_token, next node's first_token)
    uint32_t depth_byte;   // depth << 8 | byte
  };
  size_t n_nodes() const { return nodes_.size() - 1; }
  const Node* nodes() const { return nodes_.data(); }  // [n_nodes + 1]; the last is a sentinel
  uint8_t node_byte(size_t i) const { return static_cast<uint8_t>(nodes_[i].depth_byte); }
  uint32_t node_depth(size_t i) const { return nodes_[i].depth_byte >> 8; }
  uint32_t subtree_end(size_t i) const { return nodes_[i].subtree_end; }
  const int32_t* node_tokens_begin(size_t i) const {
    return token_ids_.data() + nodes_[i].first_token;
  }
  const int32_t* node_tokens_end(size_t i) const {
    return token_ids_.data() + nodes_[i + 1].first_token;
  }
  const int32_t* token_ids() const { return token_ids_.data(); }
  uint32_t max_depth() const { return max_depth_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<GrammarTokenKind> kinds_;
  std::vector<int32_t> eog_;
  std::vector<Node> nodes_;         // preorder, plus a sentinel
  std::vector<int32_t> token_ids_;  // grouped by node, in node order
  uint32_t max_depth_ = 0;
};

}  // namespace runnel

namespace runnel {

// One bit per token id: the allowed-token mask.
class TokenMask {
 public:
  void reset(int32_t n_vocab) {
    n_ = n_vocab;
    words_.assign((static_cast<size_t>(n_vocab) + 63) / 64, 0);
  }
  void clear() { std::fill(words_.begin(), words_.end(), 0); }
  int32_t size() const { return n_; }
  bool test(int32_t id) const {
    return (words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
  }
  void set(int32_t id) { words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  int32_t count() const;
  const std::vector<uint64_t>& words() const { return words_; }
  bool operator==(const TokenMask&) const = default;

 private:
  int32_t n_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace runnel
