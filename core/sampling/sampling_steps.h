// The steps of the sampler chain as free functions over a candidate list, so each
// one can be tested on hand-made logits. Sampler (sampler.h) runs them in order:
// penalties -> top-k -> typical -> top-p -> min-p -> temperature -> softmax -> draw.
//
// Determinism: every sort uses a total order (logit descending, then id ascending;
// typical: score ascending, then id ascending), so libstdc++ and libc++ produce the
// same list even though their sort algorithms differ; exp/log come from
// portable_math.h; the draw uses raw mt19937 bits. Same seed, same tokens, native
// or wasm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace runnel {

struct SamplerParams;

struct TokenCandidate {
  int32_t id;
  float logit;
  float p;      // probability after the latest softmax over the live candidates
  float score;  // scratch for keep_typical (|-log p - entropy|)
};

// The live candidates: steps shrink `items` from the back, keeping survivors at the
// front. `sorted` says items are in logit-descending (id-ascending on ties) order.
struct CandidateList {
  std::span<TokenCandidate> items;
  bool sorted = false;

  size_t size() const { return items.size(); }
};

// Fills `out` with one candidate per logit (id = index), reusing its storage, and
// returns the list over it. Throws std::invalid_argument on empty logits, a NaN or
// +inf logit, or all logits -inf.
CandidateList make_candidates(std::span<const float> logits, std::vector<TokenCandidate>& out);

// llama.cpp-style penalties over the recent tokens, applied to `logits` in place
// ([n_vocab], indexed by id). For each distinct token t seen c > 0 times:
//   logit[t] = logit[t] > 0 ? logit[t] / repeat_penalty : logit[t] * repeat_penalty
//   logit[t] -= c * frequency_penalty + presence_penalty
// `scratch` holds a sorted copy of `recent` (reused, so no allocation once it has
// grown). Throws std::invalid_argument for a token outside [0, logits.size()).
void apply_penalties(std::span<float> logits, std::span<const int32_t> recent,
                     const SamplerParams& params, std::vector<int32_t>& scratch);

// Index of the largest logit; the lowest id wins ties. Logits must be non-empty.
int32_t argmax_token(std::span<const float> logits);

// Sets p = softmax(logit) over the live candidates (order unchanged). Computed in
// double with portable_exp and stored as float.
void compute_softmax(CandidateList& list);

// Keeps the k highest logits (sorted afterwards). k <= 0 or k >= size: no change.
void keep_top_k(CandidateList& list, int32_t k);

// Locally typical sampling (Meister et al. 2022): orders candidates by
// |-log p - H| (H = entropy of the softmax) and keeps the shortest prefix whose
// probability mass exceeds typical_p (at least one). typical_p >= 1: no change.
void keep_typical(CandidateList& list, float typical_p);

// Nucleus: keeps the highest-probability prefix whose mass reaches top_p (at least
// one token). top_p >= 1: no change.
void keep_top_p(CandidateList& list, float top_p);

// Keeps tokens with p >= min_p * p_max, tested in logit space as
// logit >= max_logit + log(min_p) (the softmax normaliser cancels). Order is kept.
// min_p <= 0: no change.
void keep_min_p(CandidateList& list, float min_p);

// Divides every live logit by temperature (> 0) after shifting them so the largest
// is 0: the softmax is unchanged by the shift, and a tiny temperature then sends
// the others to -inf instead of sending the top ones to +inf (which has no softmax).
void apply_temperature(CandidateList& list, float temperature);

// Uniform in [0, 1) from the top 24 bits of one 32-bit generator output: exact in
// float and double, identical on every platform (unlike uniform_real_distribution).
inline double uniform_from_bits(uint32_t bits) {
  return (bits >> 8) * (1.0 / 16777216.0);
}

// Picks the candidate at which the running sum of p first exceeds u * sum(p), with
// u in [0, 1); candidates with p == 0 are never picked. Needs compute_softmax first.
// Returns the index into list.items.
size_t draw_index(const CandidateList& list, double u);

}  // namespace runnel
