#include "core/sampling/sampling_steps.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/sampling/sampler.h"

namespace runnel {
namespace {

std::vector<int32_t> ids_of(const CandidateList& list) {
  std::vector<int32_t> ids;
  for (const TokenCandidate& c : list.items) ids.push_back(c.id);
  return ids;
}

// Logits whose softmax is exactly `probs` (up to rounding).
std::vector<float> logits_from_probs(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

using Ids = std::vector<int32_t>;

TEST_CASE("make_candidates numbers the logits and rejects NaN, +inf and all -inf", "[sampling]") {
  std::vector<TokenCandidate> storage;
  const std::vector<float> logits = {0.5f, -2.0f, 7.0f};
  CandidateList list = make_candidates(logits, storage);
  REQUIRE(list.size() == 3);
  CHECK(ids_of(list) == Ids{0, 1, 2});
  CHECK(list.items[2].logit == 7.0f);
  CHECK_FALSE(list.sorted);

  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> with_nan = {0.0f, std::nanf(""), 1.0f};
  CHECK_THROWS_WITH(make_candidates(with_nan, storage), Catch::Contains("token 1 is nan"));
  const std::vector<float> with_inf = {0.0f, 1.0f, inf};
  CHECK_THROWS_WITH(make_candidates(with_inf, storage), Catch::Contains("token 2 is +inf"));
  const std::vector<float> all_masked = {-inf, -inf};
  CHECK_THROWS_WITH(make_candidates(all_masked, storage), Catch::Contains("all 2 logits are -inf"));
  const std::vector<float> partly_masked = {-inf, 1.0f};
  CHECK(make_candidates(partly_masked, storage).size() == 2);
  CHECK_THROWS_AS(make_candidates(std::span<const float>(), storage), std::invalid_argument);
}

TEST_CASE("argmax_token picks the largest logit, lowest id on ties", "[sampling]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(argmax_token(std::vector<float>{1.0f, 5.0f, 5.0f, 2.0f}) == 1);
  CHECK(argmax_token(std::vector<float>{-inf, -3.0f, -inf, -4.0f}) == 1);
  CHECK(argmax_token(std::vector<float>{0.0f, 0.0f, 0.0f}) == 0);
  CHECK(argmax_token(std::vector<float>{-1.0f, -0.5f, 2.5f}) == 2);
  CHECK_THROWS_AS(argmax_token(std::vector<float>{-inf, -inf}), std::invalid_argument);
}

TEST_CASE("argmax_token and make_candidates scan vocabulary-sized rows", "[sampling]") {
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-30.0f, 30.0f);
  for (size_t n : {size_t{15}, size_t{16}, size_t{17}, size_t{1000}, size_t{49152}, size_t{49157}}) {
    std::vector<float> logits(n);
    for (float& v : logits) v = dist(rng);
    size_t expected = 0;
    for (size_t i = 1; i < n; ++i) {
      if (logits[i] > logits[expected]) expected = i;
    }
    CHECK(argmax_token(logits) == static_cast<int32_t>(expected));
    // ties: a later copy of the maximum, in another lane and in the tail, keeps the first
    logits[n - 1] = logits[expected];
    logits[(expected + 5) % n] = logits[expected];
    CHECK(argmax_token(logits) == static_cast<int32_t>(std::min(expected, (expected + 5) % n)));
    for (size_t bad : {size_t{0}, n / 2 + 3, n - 1}) {
      std::vector<float> with_nan = logits;
      with_nan[bad] = std::nanf("");
      CHECK_THROWS_WITH(argmax_token(with_nan), Catch::Contains("token " + std::to_string(bad) + " is nan"));
      std::vector<TokenCandidate> storage;
      CHECK_THROWS_WITH(make_candidates(with_nan, storage), Catch::Contains("is nan"));
      std::vector<float> with_inf = logits;
      with_inf[bad] = inf;
      CHECK_THROWS_WITH(argmax_token(with_inf), Catch::Contains("token " + std::to_string(bad) + " is +inf"));
    }
    std::vector<float> masked(n, -inf);
    CHECK_THROWS_WITH(argmax_token(masked), Catch::Contains("logits are -inf"));
    masked[n - 2] = -1e30f;
    CHECK(argmax_token(masked) == static_cast<int32_t>(n - 2));
  }
}

TEST_CASE("compute_softmax gives the normalised exponentials", "[sampling]") {
  std::vector<TokenCandidate> storage;
  const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f), -1000.0f};
  CandidateList list = make_candidates(logits, storage);
  compute_softmax(list);
  CHECK(list.items[0].p == Approx(1.0 / 6).epsilon(1e-6));
  CHECK(list.items[1].p == Approx(2.0 / 6).epsilon(1e-6));
  CHECK(list.items[2].p == Approx(3.0 / 6).epsilon(1e-6));
  CHECK(list.items[3].p == 0.0f);
  // Shifting every logit by a constant changes nothing.
  const std::vector<float> shifted = {100.0f, 100.0f + std::log(2.0f), 100.0f + std::log(3.0f)};
  CandidateList list2 = make_candidates(shifted, storage);
  compute_softmax(list2);
  CHECK(list2.items[2].p == Approx(0.5).epsilon(1e-5));
}

TEST_CASE("keep_top_k keeps exactly the k highest, sorted", "[sampling]") {
  std::vector<TokenCandidate> storage;
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f};

  CandidateList list = make_candidates(logits, storage);
  keep_top_k(list, 2);
  CHECK(ids_of(list) == Ids{1, 2});
  CHECK(list.sorted);

  list = make_candidates(logits, storage);
  keep_top_k(list, 1);
  CHECK(ids_of(list) == Ids{1});

  for (int32_t off : {0, -1, 3, 10}) {
    INFO("k = " << off);
    list = make_candidates(logits, storage);
    keep_top_k(list, off);
    CHECK(ids_of(list) == Ids{0, 1, 2});
  }

  // Ties go to the lower id, whatever the sort algorithm.
  const std::vector<float> tied = {5.0f, 1.0f, 5.0f, 5.0f, 0.0f, 5.0f};
  list = make_candidates(tied, storage);
  keep_top_k(list, 3);
  CHECK(ids_of(list) == Ids{0, 2, 3});
}

TEST_CASE("keep_top_k on a large vocabulary matches a full sort", "[sampling]") {
  std::vector<float> logits(5000);
  uint32_t state = 12345;
  for (float& v : logits) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 16) / 4096.0f;  // many ties: 16 bits of values
  }
  std::vector<TokenCandidate> storage;
  CandidateList list = make_candidates(logits, storage);
  keep_top_k(list, 40);
  REQUIRE(list.size() == 40);

  std::vector<int32_t> expected(logits.size());
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int32_t>(i);
  std::sort(expected.begin(), expected.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  expected.resize(40);
  CHECK(ids_of(list) == expected);
}

// Reference for the chunked selection: a full sort by `before`, then the shortest
// prefix whose mass is `reached`, using the p that compute_softmax assigned.
template <class Before, class Reached>
Ids full_sort_prefix(std::vector<TokenCandidate> items, Before before, Reached reached) {
  std::sort(items.begin(), items.end(), before);
  Ids ids;
  double mass = 0.0;
  for (const TokenCandidate& c : items) {
    ids.push_back(c.id);
    mass += c.p;
    if (reached(mass)) break;
  }
  return ids;
}

TEST_CASE("top-p and typical over a large flat vocabulary match a full sort", "[sampling]") {
  // Flat logits make the kept prefix span several doubling chunks (64, 128, ...).
  std::vector<float> logits(20000);
  uint32_t state = 99;
  for (float& v : logits) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 20) / 512.0f;  // 4096 distinct values: many ties
  }
  std::vector<TokenCandidate> storage;
  for (float top_p : {0.05f, 0.3f, 0.95f}) {
    INFO("top_p " << top_p);
    CandidateList list = make_candidates(logits, storage);
    compute_softmax(list);
    const std::vector<TokenCandidate> with_p(list.items.begin(), list.items.end());
    keep_top_p(list, top_p);
    const Ids expected = full_sort_prefix(
        with_p,
        [](const TokenCandidate& a, const TokenCandidate& b) {
          return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
        },
        [&](double mass) { return mass >= top_p; });
    CHECK(expected.size() > 64);
    CHECK(ids_of(list) == expected);
  }
  for (float typical_p : {0.2f, 0.9f}) {
    INFO("typical_p " << typical_p);
    CandidateList list = make_candidates(logits, storage);
    keep_typical(list, typical_p);  // leaves each candidate's score behind
    std::vector<TokenCandidate> scored(storage.begin(), storage.end());
    const Ids expected = full_sort_prefix(
        scored,
        [](const TokenCandidate& a, const TokenCandidate& b) {
          return a.score != b.score ? a.score < b.score : a.id < b.id;
        },
        [&](double mass) { return mass > typical_p; });
    CHECK(expected.size() > 64);
    CHECK(ids_of(list) == expected);
  }
}

TEST_CASE("keep_top_p keeps the smallest prefix reaching the mass", "[sampling]") {
  // id:     0     1     2     3
  // p:     0.10  0.60  0.05  0.25   -> by probability: 1, 3, 0, 2 (cumulative .6 .85 .95 1)
  const std::vector<float> logits = logits_from_probs({0.10, 0.60, 0.05, 0.25});
  std::vector<TokenCandidate> storage;
  auto top_p = [&](float p) {
    CandidateList list = make_candidates(logits, storage);
    keep_top_p(list, p);
    return ids_of(list);
  };
  CHECK(top_p(0.5f) == Ids{1});
  CHECK(top_p(0.01f) == Ids{1});  // at least one token
  CHECK(top_p(0.8f) == Ids{1, 3});
  CHECK(top_p(0.9f) == Ids{1, 3, 0});
  CHECK(top_p(0.99f) == Ids{1, 3, 0, 2});
  CHECK(top_p(1.0f) == Ids{0, 1, 2, 3});  // off: untouched, unsorted
}

TEST_CASE("keep_min_p keeps p >= min_p * p_max in the original order", "[sampling]") {
  // p: 0.15 0.05 0.5 0.3 -> p_max 0.5
  const std::vector<float> logits = logits_from_probs({0.15, 0.05, 0.5, 0.3});
  std::vector<TokenCandidate> storage;
  auto min_p = [&](float m) {
    CandidateList list = make_candidates(logits, storage);
    keep_min_p(list, m);
    return ids_of(list);
  };
  CHECK(min_p(0.7f) == Ids{2});            // >= 0.35
  CHECK(min_p(0.5f) == Ids{2, 3});         // >= 0.25
  CHECK(min_p(0.25f) == Ids{0, 2, 3});     // >= 0.125
  CHECK(min_p(0.05f) == Ids{0, 1, 2, 3});  // >= 0.025
  CHECK(min_p(1.0f) == Ids{2});
  CHECK(min_p(0.0f) == Ids{0, 1, 2, 3});   // off
  CHECK(min_p(-1.0f) == Ids{0, 1, 2, 3});  // off
}

TEST_CASE("keep_typical on a hand-computed example", "[sampling]") {
  // p = 1/2, 1/4, 1/8, 1/8. Surprisal -ln p = (1, 2, 3, 3) ln2; entropy H = 1.75 ln2.
  // |surprisal - H| = (0.75, 0.25, 1.25, 1.25) ln2, so the typical order is 1, 0, 2, 3
  // (ties by id) with cumulative mass 0.25, 0.75, 0.875, 1: the most likely token
  // is not the most typical one.
  const std::vector<float> logits = logits_from_probs({0.5, 0.25, 0.125, 0.125});
  std::vector<TokenCandidate> storage;
  auto typical = [&](float p) {
    CandidateList list = make_candidates(logits, storage);
    keep_typical(list, p);
    return ids_of(list);
  };
  CHECK(typical(0.1f) == Ids{1});
  CHECK(typical(0.2f) == Ids{1});
  CHECK(typical(0.5f) == Ids{1, 0});
  CHECK(typical(0.8f) == Ids{1, 0, 2});
  CHECK(typical(0.9f) == Ids{1, 0, 2, 3});
  CHECK(typical(1.0f) == Ids{0, 1, 2, 3});  // off

  CandidateList list = make_candidates(logits, storage);
  keep_typical(list, 0.8f);
  const double ln2 = std::log(2.0);
  CHECK(list.items[0].score == Approx(0.25 * ln2).epsilon(1e-5));
  CHECK(list.items[1].score == Approx(0.75 * ln2).epsilon(1e-5));
  CHECK(list.items[2].score == Approx(1.25 * ln2).epsilon(1e-5));
}

TEST_CASE("keep_typical ranks a zero-probability token last", "[sampling]") {
  const std::vector<float> logits = {0.0f, -std::numeric_limits<float>::infinity(), 0.0f};
  std::vector<TokenCandidate> storage;
  CandidateList list = make_candidates(logits, storage);
  keep_typical(list, 0.99f);
  CHECK(ids_of(list) == Ids{0, 2});
}

TEST_CASE("apply_temperature divides the logits shifted to a maximum of 0", "[sampling]") {
  const std::vector<float> logits = {1.0f, -2.0f, 4.0f};
  std::vector<TokenCandidate> storage;
  CandidateList list = make_candidates(logits, storage);
  apply_temperature(list, 0.5f);
  CHECK(list.items[0].logit == -6.0f);
  CHECK(list.items[1].logit == -12.0f);
  CHECK(list.items[2].logit == 0.0f);
  apply_temperature(list, 4.0f);
  CHECK(list.items[0].logit == -1.5f);
  CHECK(list.items[1].logit == -3.0f);
}

TEST_CASE("a denormal temperature leaves only the top logits", "[sampling]") {
  // 1 / 1e-40f overflows float: unshifted, every positive logit would become +inf.
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f};
  std::vector<TokenCandidate> storage;
  CandidateList list = make_candidates(logits, storage);
  apply_temperature(list, 1e-40f);
  compute_softmax(list);
  CHECK(list.items[0].p == 0.0f);
  CHECK(list.items[1].p == 0.5f);
  CHECK(list.items[2].p == 0.5f);
}

TEST_CASE("apply_penalties changes the logits by the exact amounts", "[sampling]") {
  SamplerParams params;
  params.repeat_penalty = 2.0f;
  params.frequency_penalty = 0.1f;
  params.presence_penalty = 0.5f;
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f};
  const std::vector<int32_t> recent = {0, 1, 0, 2, 0};  // counts: 3, 1, 1, 0
  std::vector<int32_t> scratch;
  apply_penalties(logits, recent, params, scratch);
  CHECK(logits[0] == Approx(2.0f / 2 - (3 * 0.1f + 0.5f)).margin(1e-6));   // 0.2
  CHECK(logits[1] == Approx(-1.0f * 2 - (1 * 0.1f + 0.5f)).margin(1e-6));  // -2.6
  CHECK(logits[2] == Approx(0.5f / 2 - (1 * 0.1f + 0.5f)).margin(1e-6));   // -0.35
  CHECK(logits[3] == 3.0f);
}

TEST_CASE("the repeat penalty applies once per distinct token", "[sampling]") {
  SamplerParams params;
  params.repeat_penalty = 2.0f;
  std::vector<float> logits = {8.0f, -8.0f, 1.0f};
  const std::vector<int32_t> recent = {0, 0, 0, 1, 1};
  std::vector<int32_t> scratch;
  apply_penalties(logits, recent, params, scratch);
  CHECK(logits[0] == 4.0f);
  CHECK(logits[1] == -16.0f);
  CHECK(logits[2] == 1.0f);
}

TEST_CASE("frequency and presence penalties without a repeat penalty", "[sampling]") {
  SamplerParams params;
  params.frequency_penalty = 0.25f;
  params.presence_penalty = 1.0f;
  std::vector<float> logits = {0.0f, 0.0f, 0.0f};
  const std::vector<int32_t> recent = {2, 2, 2, 2, 1};
  std::vector<int32_t> scratch;
  apply_penalties(logits, recent, params, scratch);
  CHECK(logits[0] == 0.0f);
  CHECK(logits[1] == -1.25f);
  CHECK(logits[2] == -2.0f);
}

TEST_CASE("apply_penalties rejects a token outside the vocabulary", "[sampling]") {
  SamplerParams params;
  params.repeat_penalty = 1.1f;
  std::vector<float> logits = {0.0f, 1.0f};
  std::vector<int32_t> scratch;
  CHECK_THROWS_WITH(apply_penalties(logits, std::vector<int32_t>{1, 7}, params, scratch),
                    Catch::Contains("token 7") && Catch::Contains("vocabulary of 2"));
}

TEST_CASE("uniform_from_bits uses the top 24 bits", "[sampling]") {
  CHECK(uniform_from_bits(0u) == 0.0);
  CHECK(uniform_from_bits(0xFFu) == 0.0);
  CHECK(uniform_from_bits(0x100u) == std::ldexp(1.0, -24));
  CHECK(uniform_from_bits(0x80000000u) == 0.5);
  CHECK(uniform_from_bits(0xFFFFFFFFu) == 1.0 - std::ldexp(1.0, -24));
}

TEST_CASE("draw_index walks the cumulative probabilities", "[sampling]") {
  std::vector<TokenCandidate> storage = {{10, 0.0f, 0.25f, 0.0f},
                                         {11, 0.0f, 0.0f, 0.0f},
                                         {12, 0.0f, 0.5f, 0.0f},
                                         {13, 0.0f, 0.25f, 0.0f}};
  const CandidateList list{std::span<TokenCandidate>(storage), false};
  CHECK(draw_index(list, 0.0) == 0);
  CHECK(draw_index(list, 0.2499) == 0);
  CHECK(draw_index(list, 0.25) == 2);  // the zero-probability entry is never chosen
  CHECK(draw_index(list, 0.7499) == 2);
  CHECK(draw_index(list, 0.75) == 3);
  CHECK(draw_index(list, 1.0 - std::ldexp(1.0, -24)) == 3);

  // Unnormalised p are scaled by their sum.
  std::vector<TokenCandidate> raw = {{0, 0.0f, 1.0f, 0.0f}, {1, 0.0f, 3.0f, 0.0f}};
  const CandidateList raw_list{std::span<TokenCandidate>(raw), false};
  CHECK(draw_index(raw_list, 0.24) == 0);
  CHECK(draw_index(raw_list, 0.26) == 1);
}

}  // namespace
}  // namespace runnel
