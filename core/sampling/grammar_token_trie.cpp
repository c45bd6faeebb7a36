#include "core/sampling/grammar_token_trie.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <stdexcept>

namespace runnel {

TokenTrie::TokenTrie(std::vector<std::string> token_bytes, std::vector<GrammarTokenKind> kinds)
    : bytes_(std::move(token_bytes)), kinds_(std::move(kinds)) {
  if (bytes_.size() != kinds_.size()) {
    throw std::invalid_argument("TokenTrie: " + std::to_string(bytes_.size()) +
                                " token byte strings but " + std::to_string(kinds_.size()) +
                                " token kinds; expected one kind per token");
  }
  for (int32_t id = 0; id < n_vocab(); ++id) {
    if (kind(id) == GrammarTokenKind::kEog) eog_.push_back(id);
  }
  // Sorting the text tokens by bytes lays the trie out in preorder: a node is the
  // longest common prefix shared with the previous token plus one more byte.
  std::vector<int32_t> order;
  for (int32_t id = 0; id < n_vocab(); ++id) {
    if (is_matchable_text(id)) order.push_back(id);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return bytes(a) < bytes(b); });

  std::vector<uint8_t> byte = {0};
  std::vector<uint32_t> depth = {0};
  std::vector<uint32_t> node_of_token(order.size());
  std::vector<uint32_t> path = {0};  // path[d]: the node of depth d on the current path
  std::string_view prev;
  for (size_t k = 0; k < order.size(); ++k) {
    const std::string& s = bytes(order[k]);
    if (s.size() >= (1u << 24)) throw std::invalid_argument("TokenTrie: a token of 16 MiB or more");
    size_t common = 0;
    while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
    path.resize(common + 1);
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<uint32_t>(byte.size()));
      byte.push_back(static_cast<uint8_t>(s[d]));
      depth.push_back(static_cast<uint32_t>(d + 1));
    }
    node_of_token[k] = path[s.size()];
    max_depth_ = std::max(max_depth_, static_cast<uint32_t>(s.size()));
    prev = s;
  }

  // subtree_end: the next node whose depth is <= this node's depth.
  const size_t n = byte.size();
  nodes_.resize(n + 1);
  for (size_t i = 0; i < n; ++i) {
    nodes_[i].subtree_end = static_cast<uint32_t>(n);
    nodes_[i].depth_byte = depth[i] << 8 | byte[i];
  }
  std::vector<uint32_t> open;  // nodes whose subtree is still open, by depth
  for (size_t i = 0; i < n; ++i) {
    while (!open.empty() && depth[open.back()] >= depth[i]) {
      nodes_[open.back()].subtree_end = static_cast<uint32_t>(i);
      open.pop_back();
    }
    open.push_back(static_cast<uint32_t>(i));
  }

  std::vector<uint32_t> tokens_at(n + 1, 0);
  for (uint32_t node : node_of_token) ++tokens_at[node + 1];
  std::partial_sum(tokens_at.begin(), tokens_at.end(), tokens_at.begin());
  for (size_t i = 0; i <= n; ++i) nodes_[i].first_token = tokens_at[i];
  nodes_[n].subtree_end = static_cast<uint32_t>(n);
  token_ids_.resize(order.size());
  std::vector<uint32_t> fill(tokens_at.begin(), tokens_at.end() - 1);
  for (size_t k = 0; k < order.size(); ++k) token_ids_[fill[node_of_token[k]]++] = order[k];
}

int32_t TokenMask::count() const {
  int32_t n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

int32_t TokenTrie::find_exact(std::string_view text) const {
  int32_t found = -1;
  for (int32_t id = 0; id < n_vocab(); ++id) {
    if (bytes(id) != text) continue;
    if (kind(id) != GrammarTokenKind::kText) return id;
    if (found < 0) found = id;
  }
  return found;
}

}  // namespace runnel
