// Prompt lookup, the drafter of speculative decoding (llama.cpp's lookup decoding): the
// tokens that followed the latest earlier occurrence of the context's last n tokens are
// proposed as the next ones, and the model checks them all in one pass
// (core/runtime/generate.cpp). It pays where the output repeats the input (edits,
// summaries, code); the draft length adapts to how many tokens were accepted, and after
// rounds with none accepted it pauses, so that text which does not repeat costs little.
#pragma once

#include <span>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace runnel {

class PromptLookup {
 public:
  // ngram: the longest suffix matched (shorter ones down to 1 are tried after it);
  // draft_max: the most tokens proposed at once.
  PromptLookup(int ngram, int draft_max);

  // Up to min(limit, the current draft length) tokens to follow `history`; empty when
  // no suffix of it occurred before, or while paused.
  std::vector<TokenId> draft(std::span<const TokenId> history, int limit);
  // The last draft's outcome: n_accepted of n_drafted tokens were what the model chose.
  void feedback(int n_drafted, int n_accepted);

  int draft_length() const { return draft_len_; }

 private:
  int ngram_, draft_max_, draft_len_;
  int misses_ = 0;  // drafts in a row with nothing accepted
  int pause_ = 0;   // draft() calls left that propose nothing
};

}  // namespace runnel
