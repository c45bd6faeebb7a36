#include "core/runtime/speculative.h"

#include "core/runtime/engine.h"
#include "core/runtime/request.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace runnel {

PromptLookup::PromptLookup(int ngram, int draft_max)
    : ngram_(ngram), draft_max_(draft_max), draft_len_(1) {
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
  // A lone repeated token (" the") predicts little: from 2-grams up unless asked for 1.
  const int min_n = std::min(ngram_, 2);
  for (int n = std::min(ngram_, n_hist - 1); n >= min_n; --n) {
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
  // A first draft of one token costs little when it misses (a verified row costs ~0.3 of
  // a decode on SmolLM2); the length doubles while drafts are accepted whole.
  if (n_accepted == n_drafted) {
    draft_len_ = std::min(draft_max_, draft_len_ * 2);
  } else {
    draft_len_ = std::max(1, std::min(draft_len_, n_accepted + 1));
  }
  // Nothing accepted: pause for 2, 4, .. 32 tokens, so a text that does not repeat
  // spends few passes on drafts.
  misses_ = n_accepted == 0 ? misses_ + 1 : 0;
  pause_ = misses_ > 0 ? std::min(32, 1 << misses_) : 0;
}

DraftModel::DraftModel(Session& session, int draft_max)
    : session_(session), draft_max_(draft_max), draft_len_(std::min(draft_max, 4)) {
  if (draft_max < 1) throw std::invalid_argument("draft length must be >= 1, got " + std::to_string(draft_max));
}

std::vector<TokenId> DraftModel::draft(std::span<const TokenId> history, int limit) {
  const int want = std::min({limit, draft_len_, session_.n_ctx() - static_cast<int>(history.size())});
  if (want <= 0 || history.empty()) return {};
  // The draft session holds the history up to where they part (and its last drafts).
  const std::vector<TokenId> h(history.begin(), history.end());
  size_t keep = std::min(common_prefix(session_.tokens(), h), h.size() - 1);
  session_.rewind(static_cast<int>(keep));
  keep = static_cast<size_t>(session_.position());
  std::span<const float> logits = session_.eval(std::span<const TokenId>(h.data() + keep, h.size() - keep));
  std::vector<TokenId> out;
  for (;;) {
    const TokenId t = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(t);
    if (static_cast<int>(out.size()) == want) break;
    logits = session_.eval(std::span<const TokenId>(&out.back(), 1));
  }
  return out;
}

void DraftModel::feedback(int n_drafted, int n_accepted) {
  if (n_drafted <= 0) return;
  draft_len_ = n_accepted == n_drafted ? std::min(draft_max_, draft_len_ + 2)
                                       : std::max(1, std::min(draft_len_, n_accepted + 1));
}

void check_draft_vocabulary(const Engine& target, const Engine& draft) {
  const Tokenizer& a = target.tokenizer();
  const Tokenizer& b = draft.tokenizer();
  if (a.n_vocab() != b.n_vocab() || target.config().n_vocab != draft.config().n_vocab) {
    throw std::invalid_argument("the draft model's vocabulary has " + std::to_string(draft.config().n_vocab) +
                                " tokens, the model's " + std::to_string(target.config().n_vocab) +
                                ": a draft model must share the vocabulary");
  }
  for (TokenId id = 0; id < a.n_vocab(); ++id) {
    if (a.token_text(id) != b.token_text(id)) {
      throw std::invalid_argument("the draft model's token " + std::to_string(id) + " is '" + b.token_text(id) +
                                  "' but the model's is '" + a.token_text(id) +
                                  "': a draft model must share the vocabulary");
    }
  }
}

}  // namespace runnel

