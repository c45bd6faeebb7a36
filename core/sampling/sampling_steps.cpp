#include "core/sampling/sampling_steps.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/sampling/portable_math.h"
#include "core/sampling/sampler.h"

namespace runnel {
namespace {

// Total orders, so the result of a sort does not depend on the library's algorithm.
bool higher_logit(const TokenCandidate& a, const TokenCandidate& b) {
  if (a.logit != b.logit) return a.logit > b.logit;
  return a.id < b.id;
}

bool more_typical(const TokenCandidate& a, const TokenCandidate& b) {
  if (a.score != b.score) return a.score < b.score;
  return a.id < b.id;
}

// The largest logit and whether any is NaN, in one branch-free pass the compiler
// vectorises (a decode step scans the whole vocabulary once per sequence).
struct LogitScan {
  float max;
  bool nan;
};

LogitScan scan_logits(std::span<const float> logits) {
  constexpr size_t kLanes = 16;
  constexpr uint32_t kInfBits = 0x7f800000u;  // |x| above it: NaN
  float top[kLanes];
  uint32_t mag[kLanes] = {};
  std::fill(top, top + kLanes, -std::numeric_limits<float>::infinity());
  const auto step = [](float v, float& t, uint32_t& m) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    bits &= 0x7fffffffu;
    m = bits > m ? bits : m;
    t = v > t ? v : t;  // a NaN never wins
  };
  const size_t n = logits.size();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) step(logits[i + j], top[j], mag[j]);
  }
  for (; i < n; ++i) step(logits[i], top[0], mag[0]);
  LogitScan s{top[0], mag[0] > kInfBits};
  for (size_t j = 1; j < kLanes; ++j) {
    s.max = top[j] > s.max ? top[j] : s.max;
    s.nan = s.nan || mag[j] > kInfBits;
  }
  return s;
}

bool acceptable(const LogitScan& s) {
  return !s.nan && std::isfinite(s.max);
}

// NaN and +inf cannot be ordered or normalised; -inf is a legitimate mask. Throws
// naming the first offending logit.
[[noreturn]] void throw_bad_logits(std::span<const float> logits) {
  if (logits.empty()) {
    throw std::invalid_argument("sampler: logits are empty; expected one per vocabulary entry");
  }
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
      throw std::invalid_argument("sampler: logit of token " + std::to_string(i) + " is " +
                                  (std::isnan(v) ? "nan" : "+inf") +
                                  "; expected a finite value or -inf");
    }
  }
  throw std::invalid_argument("sampler: all " + std::to_string(logits.size()) +
                              " logits are -inf; expected at least one finite logit");
}

void check_logits(std::span<const float> logits) {
  if (logits.empty() || !acceptable(scan_logits(logits))) throw_bad_logits(logits);
}

// Shrinks the list to its first n items.
void truncate(CandidateList& list, size_t n) {
  list.items = list.items.first(n);
}

// Orders `items` by `before` only as far as needed to find the shortest prefix whose
// mass of p is `reached`, and returns its length (items.size() if never reached).
// Selects the top kFirstChunk with nth_element, sorts just those, and doubles the
// chunk until the mass is reached: O(n_vocab) per chunk instead of a full sort, and
// one chunk is usually enough since real next-token distributions are peaked.
// `already_sorted`: items are in `before` order; just scan.
template <class Before, class Reached>
size_t shortest_prefix_by_mass(std::span<TokenCandidate> items, bool already_sorted, Before before,
                               Reached reached) {
  constexpr size_t kFirstChunk = 64;
  double mass = 0.0;
  size_t done = 0;  // items[0, done) hold the top `done`, in order
  size_t chunk_end = already_sorted ? items.size() : std::min(items.size(), kFirstChunk);
  while (done < items.size()) {
    if (!already_sorted) {
      if (chunk_end < items.size()) {
        std::nth_element(items.begin() + done, items.begin() + chunk_end, items.end(), before);
      }
      std::sort(items.begin() + done, items.begin() + chunk_end, before);
    }
    for (size_t i = done; i < chunk_end; ++i) {
      mass += items[i].p;
      if (reached(mass)) return i + 1;
    }
    done = chunk_end;
    chunk_end = std::min(items.size(), 2 * chunk_end);
  }
  return items.size();
}

}  // namespace

CandidateList make_candidates(std::span<const float> logits, std::vector<TokenCandidate>& out) {
  check_logits(logits);
  out.resize(logits.size());  // allocates only when the vocabulary grows
  for (size_t i = 0; i < logits.size(); ++i) {
    out[i] = TokenCandidate{static_cast<int32_t>(i), logits[i], 0.0f, 0.0f};
  }
  return CandidateList{std::span<TokenCandidate>(out), false};
}

void apply_penalties(std::span<float> logits, std::span<const int32_t> recent,
                     const SamplerParams& params, std::vector<int32_t>& scratch) {
  scratch.assign(recent.begin(), recent.end());
  std::sort(scratch.begin(), scratch.end());
  for (size_t i = 0; i < scratch.size();) {
    const int32_t token = scratch[i];
    size_t j = i;
    while (j < scratch.size() && scratch[j] == token) ++j;
    const auto count = static_cast<float>(j - i);
    i = j;

    if (token < 0 || static_cast<size_t>(token) >= logits.size()) {
      throw std::invalid_argument("sampler: accepted token " + std::to_string(token) +
                                  " is outside the vocabulary of " + std::to_string(logits.size()) +
                                  " logits");
    }
    float& logit = logits[static_cast<size_t>(token)];
    // Dividing a negative logit would raise it, so negatives are multiplied instead.
    logit = logit > 0.0f ? logit / params.repeat_penalty : logit * params.repeat_penalty;
    logit -= count * params.frequency_penalty + params.presence_penalty;
  }
}

int32_t argmax_token(std::span<const float> logits) {
  if (logits.empty()) throw_bad_logits(logits);
  const LogitScan s = scan_logits(logits);
  if (!acceptable(s)) throw_bad_logits(logits);
  size_t best = 0;
  while (logits[best] != s.max) ++best;  // the lowest id keeps ties
  return static_cast<int32_t>(best);
}

void compute_softmax(CandidateList& list) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const TokenCandidate& c : list.items) max_logit = std::max(max_logit, c.logit);

  // Stored as float first and summed from the stored values, so sum(p) is 1 to
  // float precision and every platform sums the same numbers in the same order.
  double sum = 0.0;
  for (TokenCandidate& c : list.items) {
    c.p = static_cast<float>(portable_exp(static_cast<double>(c.logit) - max_logit));
    sum += c.p;
  }
  for (TokenCandidate& c : list.items) c.p = static_cast<float>(c.p / sum);
}

void keep_top_k(CandidateList& list, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= list.size()) return;
  const auto n = static_cast<size_t>(k);
  if (!list.sorted) {
    // One pass keeping the best n so far in a heap with the worst of them on top
    // (higher_logit as the heap's "less"): most candidates cost one comparison, so
    // this is O(n_vocab) with a small constant, and only n items are ever sorted.
    const auto first = list.items.begin();
    const auto heap_end = first + static_cast<std::ptrdiff_t>(n);
    std::make_heap(first, heap_end, higher_logit);
    for (auto it = heap_end; it != list.items.end(); ++it) {
      if (!higher_logit(*it, *first)) continue;
      std::pop_heap(first, heap_end, higher_logit);  // the worst moves to heap_end - 1
      *(heap_end - 1) = *it;                         // and is replaced (the tail is dropped)
      std::push_heap(first, heap_end, higher_logit);
    }
    std::sort_heap(first, heap_end, higher_logit);  // best first
  }
  truncate(list, n);
  list.sorted = true;
}

void keep_typical(CandidateList& list, float typical_p) {
  if (typical_p >= 1.0f) return;
  compute_softmax(list);

  // score = surprisal -log p first, then |surprisal - entropy|. A token of
  // probability 0 is infinitely surprising: the least typical.
  double entropy = 0.0;  // nats; p == 0 contributes nothing (the limit of p log p)
  for (TokenCandidate& c : list.items) {
    const double surprisal = -portable_log(c.p);
    c.score = static_cast<float>(surprisal);
    if (c.p > 0.0f) entropy += c.p * surprisal;
  }
  for (TokenCandidate& c : list.items) {
    if (c.p > 0.0f) c.score = static_cast<float>(std::fabs(c.score - entropy));
  }
  const size_t kept = shortest_prefix_by_mass(list.items, false, more_typical,
                                              [&](double mass) { return mass > typical_p; });
  truncate(list, kept);
  list.sorted = false;
}

void keep_top_p(CandidateList& list, float top_p) {
  if (top_p >= 1.0f) return;
  compute_softmax(list);
  const size_t kept = shortest_prefix_by_mass(list.items, list.sorted, higher_logit,
                                              [&](double mass) { return mass >= top_p; });
  truncate(list, kept);
  list.sorted = true;
}

void keep_min_p(CandidateList& list, float min_p) {
  if (min_p <= 0.0f || list.size() == 0) return;
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const TokenCandidate& c : list.items) max_logit = std::max(max_logit, c.logit);
  // p_i >= min_p * p_max  <=>  logit_i - max_logit >= log(min_p).
  const double threshold = static_cast<double>(max_logit) + portable_log(min_p);

  size_t kept = 0;
  for (const TokenCandidate& c : list.items) {
    if (c.logit >= threshold) list.items[kept++] = c;
  }
  truncate(list, kept);  // kept >= 1: the max itself always passes
}

void apply_temperature(CandidateList& list, float temperature) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const TokenCandidate& c : list.items) max_logit = std::max(max_logit, c.logit);
  for (TokenCandidate& c : list.items) c.logit = (c.logit - max_logit) / temperature;
  // Rounding may create new ties whose ids are not ascending.
  list.sorted = false;
}

size_t draw_index(const CandidateList& list, double u) {
  double total = 0.0;
  for (const TokenCandidate& c : list.items) total += c.p;
  const double target = u * total;  // < total because u < 1

  double running = 0.0;
  size_t last_positive = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list.items[i].p <= 0.0f) continue;
    running += list.items[i].p;
    last_positive = i;
    if (target < running) return i;
  }
  return last_positive;  // unreachable unless rounding left target == total
}

}  // namespace runnel
