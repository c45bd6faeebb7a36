// The drafters of speculative decoding. Prompt lookup (llama.cpp's lookup decoding): the
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

class Engine;
class Session;

// What proposes the drafts of speculative decoding.
class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to `limit` tokens likely to follow `history` (none: the step runs alone).
  virtual std::vector<TokenId> draft(std::span<const TokenId> history, int limit) = 0;
  // The last draft's outcome: n_accepted of n_drafted tokens were what the model chose.
  virtual void feedback(int n_drafted, int n_accepted) = 0;
};

class PromptLookup : public Drafter {
 public:
  // ngram: the longest suffix matched (shorter ones down to 1 are tried after it);
  // draft_max: the most tokens proposed at once.
  PromptLookup(int ngram, int draft_max);

  // Up to min(limit, the current draft length) tokens to follow `history`; empty when
  // no suffix of it occurred before, or while paused.
  std::vector<TokenId> draft(std::span<const TokenId> history, int limit) override;
  void feedback(int n_drafted, int n_accepted) override;

  int draft_length() const { return draft_len_; }

 private:
  int ngram_, draft_max_, draft_len_;
  int misses_ = 0;  // drafts in a row with nothing accepted
  int pause_ = 0;   // draft() calls left that propose nothing
};

// A smaller model of the same vocabulary (check_draft_vocabulary) drafting greedily
// (llama.cpp's --model-draft). `session`, of the draft engine, mirrors the history:
// each draft() reuses the prefix it shares with it and evaluates the rest, then runs the
// draft model a token at a time. The draft length adapts as PromptLookup's does.
class DraftModel : public Drafter {
 public:
  DraftModel(Session& session, int draft_max);
  std::vector<TokenId> draft(std::span<const TokenId> history, int limit) override;
  void feedback(int n_drafted, int n_accepted) override;

 private:
  Session& session_;
  int draft_max_, draft_len_;
};

// Throws std::invalid_argument unless `draft` has `target`'s vocabulary (the same
// size and token texts, the first difference named).
void check_draft_vocabulary(const Engine& target, const Engine& draft);

}  // namespace runnel
