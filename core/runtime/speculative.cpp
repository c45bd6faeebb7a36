#include "core/runtime/speculative.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace runnel {

PromptLookup::PromptLookup(int ngram, int draft_max)
    : ngram_(ngram), draft_max_(draft_max), draft_len_(std::min(draft_max, 4)) {
  if (ngram < 1) throw std::invalid_argument("lookup n-gram size must be >= 1, got " + std::to_string(ngram));
  if (draft_max < 1) throw std::invalid_argument("draft length must be >= 1, got " + std::to_string(draft_max));
}

std::vector<TokenId> PromptLookup::draft(std::span<const TokenId> history, int limit) {
  if (pause_ > 0) {
    --pause_;
    return {};
  }
  const int n_hist = static_cast<int>(history.size());
  const int want = std::min(limit, draft_len_);
  if (want <= 0) return {};
  for (int n = std::min(ngram_, n_hist - 1); n >= 1; --n) {
    const TokenId* suffix = history.data() + n_hist - n;
    // The latest earlier occurrence that has a token after it.
    for (int start = n_hist - n - 1; start >= 0; --start) {
      if (!std::equal(suffix, suffix + n, history.data() + start)) continue;
      const int from = start + n;
      const int count = std::min(want, n_hist - from);
      return std::vector<TokenId>(history.begin() + from, history.begin() + from + count);
    }
  }
  return {};
}

void PromptLookup::feedback(int n_drafted, int n_accepted) {
  if (n_drafted <= 0) return;
  if (n_accepted == n_drafted) {
    draft_len_ = std::min(draft_max_, draft_len_ + 2);
  } else {
    draft_len_ = std::max(1, std::min(draft_len_, n_accepted + 1));
  }
  // Nothing accepted: pause for 1, 2, 4, .. 16 tokens, so a text that does not repeat
  // spends few passes on drafts.
  misses_ = n_accepted == 0 ? misses_ + 1 : 0;
  pause_ = misses_ > 0 ? std::min(16, 1 << (misses_ - 1)) : 0;
}

}  // namespace runnel
