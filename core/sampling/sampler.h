// The sampler chain: penalties -> top-k -> typical -> top-p -> min-p -> temperature
// -> draw (llama.cpp's default order). temperature <= 0 means greedy (argmax).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "core/sampling/sampling_steps.h"

namespace runnel {

struct SamplerParams {
  float temperature = 0.8f;  // <= 0: greedy
  int32_t top_k = 40;        // <= 0: off
  float top_p = 0.95f;       // >= 1: off
  float min_p = 0.05f;       // <= 0: off
  float typical_p = 1.0f;    // >= 1: off
  float repeat_penalty = 1.0f;     // 1: off
  float frequency_penalty = 0.0f;  // 0: off
  float presence_penalty = 0.0f;   // 0: off
  int32_t penalty_last_n = 64;     // how many recent tokens penalties look at
  uint64_t seed = 0xFFFFFFFFu;     // same seed, same output
  // Added to the named tokens' logits before anything else (OpenAI's logit_bias);
  // -inf bans a token. Ids must be inside the vocabulary (checked by sample()).
  std::vector<std::pair<int32_t, float>> logit_bias;

  // Throws std::invalid_argument naming the parameter for impossible values
  // (negative temperature, top_p outside (0,1], NaN, ...).
  void validate() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);

  // Picks the next token from `logits` (one per vocab entry; modified in place).
  // Does not accept() the token. Throws std::invalid_argument for empty logits, a
  // NaN or +inf logit, all logits -inf, or an accepted token outside the vocabulary.
  int32_t sample(std::span<float> logits);
  // Speculative decoding: this step's token when a drafter proposed `draft` (a fixed
  // proposal: prompt lookup, a greedy draft model). Greedy: the argmax, as sample().
  // Otherwise `draft` is kept with its probability under the chain's distribution, and
  // else a token is drawn from the others renormalized: the output follows sample()'s
  // distribution (the standard acceptance rule with a one-hot proposal), though the
  // random draws differ. `accepted` says whether the result is `draft`.
  int32_t sample_draft(std::span<float> logits, int32_t draft, bool& accepted);
  // Records a token of the context (prompt or generated) for the penalties.
  void accept(int32_t token);
  void reset();  // forget history, re-seed

  const SamplerParams& params() const { return params_; }

 private:
  // logit_bias and penalties, in place; false when greedy (the chain stops there).
  bool prepare(std::span<float> logits);
  // The chain from top-k to the softmax over the prepared logits.
  CandidateList distribution(std::span<const float> logits);

  SamplerParams params_;
  std::mt19937 rng_;
  std::vector<int32_t> history_;          // most recent last, at most penalty_last_n
  using Candidate = TokenCandidate;       // id, logit, p (+ a scratch score)
  std::vector<Candidate> candidates_;     // scratch, reused across calls
  std::vector<int32_t> penalty_scratch_;  // sorted copy of history_, reused
};

}  // namespace runnel
