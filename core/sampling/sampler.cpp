#include "core/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace runnel {
namespace {

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

[[noreturn]] void reject(const char* name, double value, const char* expected) {
  throw std::invalid_argument(std::string("SamplerParams.") + name + " = " + format_value(value) +
                              ": expected " + expected);
}

// The engine is std::mt19937 (32-bit state words); fold the 64-bit seed so its high
// half matters too. Seeds below 2^32 are used unchanged, as llama.cpp does.
uint32_t fold_seed(uint64_t seed) {
  return static_cast<uint32_t>(seed ^ (seed >> 32));
}

// Beyond this many tokens the history is grown on demand instead of reserved up front.
constexpr size_t kMaxReservedHistory = 4096;

}  // namespace

void SamplerParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    reject("temperature", temperature, "a finite value >= 0 (0 means greedy)");
  }
  // top_k: every value is meaningful (<= 0 is off).
  if (!(top_p > 0.0f && top_p <= 1.0f)) reject("top_p", top_p, "a value in (0, 1] (1 is off)");
  if (!(min_p <= 1.0f) || std::isinf(min_p)) {  // also catches NaN
    reject("min_p", min_p, "a value <= 1 (<= 0 is off)");
  }
  if (!(typical_p > 0.0f) || std::isinf(typical_p)) {
    reject("typical_p", typical_p, "a finite value > 0 (>= 1 is off)");
  }
  if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0.0f) {
    reject("repeat_penalty", repeat_penalty, "a finite value > 0 (1 is off)");
  }
  if (!std::isfinite(frequency_penalty)) {
    reject("frequency_penalty", frequency_penalty, "a finite value (0 is off)");
  }
  if (!std::isfinite(presence_penalty)) {
    reject("presence_penalty", presence_penalty, "a finite value (0 is off)");
  }
  if (penalty_last_n < 0) {
    reject("penalty_last_n", penalty_last_n, "a token count >= 0 (0 turns penalties off)");
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) reject("logit_bias token", token, "a token id >= 0");
    if (std::isnan(bias) || bias == std::numeric_limits<float>::infinity()) {
      reject("logit_bias", bias, "a number or -inf");
    }
  }
}

Sampler::Sampler(const SamplerParams& params) : params_(params) {
  params_.validate();
  const auto reserved = std::min(static_cast<size_t>(params_.penalty_last_n), kMaxReservedHistory);
  history_.reserve(reserved + 1);
  penalty_scratch_.reserve(reserved + 1);
  reset();
}

void Sampler::reset() {
  history_.clear();
  rng_.seed(fold_seed(params_.seed));
}

void Sampler::accept(int32_t token) {
  if (token < 0) {
    throw std::invalid_argument("Sampler::accept: token " + std::to_string(token) +
                                " is negative; expected a vocabulary id");
  }
  const auto limit = static_cast<size_t>(params_.penalty_last_n);
  if (limit == 0) return;
  if (history_.size() == limit) history_.erase(history_.begin());  // drop the oldest
  history_.push_back(token);
}

bool Sampler::prepare(std::span<float> logits) {
  if (logits.empty()) {
    throw std::invalid_argument(
        "Sampler::sample: logits are empty; expected one per vocabulary entry");
  }
  for (const auto& [token, bias] : params_.logit_bias) {
    if (static_cast<size_t>(token) >= logits.size()) {
      throw std::invalid_argument("logit_bias: token id " + std::to_string(token) +
                                  " is outside the vocabulary [0, " + std::to_string(logits.size()) + ")");
    }
    logits[token] += bias;
  }
  const bool penalties_on = params_.penalty_last_n > 0 &&
                            (params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                             params_.presence_penalty != 0.0f);
  if (penalties_on) apply_penalties(logits, history_, params_, penalty_scratch_);
  return params_.temperature > 0.0f;
}

CandidateList Sampler::distribution(std::span<const float> logits) {
  CandidateList list = make_candidates(logits, candidates_);
  keep_top_k(list, params_.top_k);
  keep_typical(list, params_.typical_p);
  keep_top_p(list, params_.top_p);
  keep_min_p(list, params_.min_p);
  apply_temperature(list, params_.temperature);
  compute_softmax(list);
  return list;
}

int32_t Sampler::sample(std::span<float> logits) {
  if (!prepare(logits)) return argmax_token(logits);
  const CandidateList list = distribution(logits);
  const double u = uniform_from_bits(static_cast<uint32_t>(rng_()));
  return list.items[draw_index(list, u)].id;
}

int32_t Sampler::sample_draft(std::span<float> logits, int32_t draft, bool& accepted) {
  if (!prepare(logits)) {
    const int32_t id = argmax_token(logits);
    accepted = id == draft;
    return id;
  }
  CandidateList list = distribution(logits);
  TokenCandidate* proposed = nullptr;
  for (TokenCandidate& c : list.items) {
    if (c.id == draft) proposed = &c;
  }
  const double u = uniform_from_bits(static_cast<uint32_t>(rng_()));
  accepted = proposed && u < proposed->p;
  if (accepted) return draft;
  // Rejected: the residual max(0, p - q) with q one-hot at the draft is p without it
  // (draw_index renormalizes and never picks p == 0).
  if (proposed) proposed->p = 0.0f;
  const double v = uniform_from_bits(static_cast<uint32_t>(rng_()));
  return list.items[draw_index(list, v)].id;
}

}  // namespace runnel
