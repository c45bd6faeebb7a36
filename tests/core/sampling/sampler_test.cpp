#include "core/sampling/sampler.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <vector>

namespace runnel {
namespace {

// All filters off: sampling from the plain softmax at temperature 1.
SamplerParams plain_params(uint64_t seed = 42) {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.typical_p = 1.0f;
  p.seed = seed;
  return p;
}

std::vector<float> logits_from_probs(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

// Token counts over n draws; the logits are copied each time as an engine would.
std::vector<int> draw_counts(Sampler& sampler, const std::vector<float>& logits, int n) {
  std::vector<int> counts(logits.size(), 0);
  std::vector<float> scratch;
  for (int i = 0; i < n; ++i) {
    scratch = logits;
    ++counts.at(static_cast<size_t>(sampler.sample(scratch)));
  }
  return counts;
}

std::set<int32_t> drawn_set(const std::vector<int>& counts) {
  std::set<int32_t> ids;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) ids.insert(static_cast<int32_t>(i));
  }
  return ids;
}

void check_rejected(SamplerParams p, const char* name, const char* value) {
  INFO(name << " = " << value);
  CHECK_THROWS_AS(p.validate(), std::invalid_argument);
  CHECK_THROWS_WITH(p.validate(), Catch::Contains(std::string("SamplerParams.") + name) &&
                                      Catch::Contains(value));
  CHECK_THROWS_AS(Sampler(p), std::invalid_argument);
}

TEST_CASE("validate rejects impossible values, naming parameter and value", "[sampling]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  SamplerParams p;
  // clang-format off
  p = {}; p.temperature = -0.5f;         check_rejected(p, "temperature", "-0.5");
  p = {}; p.temperature = nan;           check_rejected(p, "temperature", "nan");
  p = {}; p.temperature = inf;           check_rejected(p, "temperature", "inf");
  p = {}; p.top_p = 0.0f;                check_rejected(p, "top_p", "= 0");
  p = {}; p.top_p = 1.5f;                check_rejected(p, "top_p", "1.5");
  p = {}; p.top_p = -0.25f;              check_rejected(p, "top_p", "-0.25");
  p = {}; p.top_p = nan;                 check_rejected(p, "top_p", "nan");
  p = {}; p.min_p = 1.25f;               check_rejected(p, "min_p", "1.25");
  p = {}; p.min_p = nan;                 check_rejected(p, "min_p", "nan");
  p = {}; p.min_p = -inf;                check_rejected(p, "min_p", "-inf");
  p = {}; p.typical_p = 0.0f;            check_rejected(p, "typical_p", "= 0");
  p = {}; p.typical_p = nan;             check_rejected(p, "typical_p", "nan");
  p = {}; p.repeat_penalty = 0.0f;       check_rejected(p, "repeat_penalty", "= 0");
  p = {}; p.repeat_penalty = -1.1f;      check_rejected(p, "repeat_penalty", "-1.1");
  p = {}; p.repeat_penalty = nan;        check_rejected(p, "repeat_penalty", "nan");
  p = {}; p.frequency_penalty = nan;     check_rejected(p, "frequency_penalty", "nan");
  p = {}; p.presence_penalty = inf;      check_rejected(p, "presence_penalty", "inf");
  p = {}; p.penalty_last_n = -1;         check_rejected(p, "penalty_last_n", "-1");
  // clang-format on
}

TEST_CASE("validate accepts the defaults and the documented off values", "[sampling]") {
  SamplerParams p;
  CHECK_NOTHROW(p.validate());
  p.temperature = 0.0f;  // greedy
  p.top_k = -5;          // off
  p.top_p = 1.0f;        // off
  p.min_p = -1.0f;       // off
  p.typical_p = 3.0f;    // off
  p.repeat_penalty = 1.0f;
  p.frequency_penalty = -0.5f;  // negative penalties encourage repetition
  p.presence_penalty = -0.5f;
  p.penalty_last_n = 0;
  CHECK_NOTHROW(p.validate());
  p.top_k = 0;
  p.min_p = 1.0f;
  CHECK_NOTHROW(Sampler(p));
}

TEST_CASE("greedy picks the argmax, lowest id on ties", "[sampling]") {
  SamplerParams p = plain_params();
  p.temperature = 0.0f;
  Sampler sampler(p);
  std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.9f};
  CHECK(sampler.sample(logits) == 1);
  logits = {4.0f, 1.0f, 7.5f, 7.5f, 7.5f};
  CHECK(sampler.sample(logits) == 2);
  logits = {-std::numeric_limits<float>::infinity(), -5.0f, -6.0f};
  CHECK(sampler.sample(logits) == 1);
}

TEST_CASE("greedy ignores the filters but applies penalties first", "[sampling]") {
  SamplerParams p = plain_params();
  p.temperature = 0.0f;
  p.typical_p = 0.2f;  // would keep only token 1 if it ran
  Sampler typical(p);
  std::vector<float> logits = logits_from_probs({0.5, 0.25, 0.125, 0.125});
  CHECK(typical.sample(logits) == 0);

  p = plain_params();
  p.temperature = 0.0f;
  p.repeat_penalty = 1.5f;
  Sampler sampler(p);
  sampler.accept(0);
  logits = {3.0f, 2.9f, 1.0f};
  CHECK(sampler.sample(logits) == 1);
  CHECK(logits[0] == 2.0f);  // penalised in place
  CHECK(logits[1] == 2.9f);
}

TEST_CASE("sample applies the penalties to the logits exactly", "[sampling]") {
  SamplerParams p = plain_params();
  p.repeat_penalty = 1.25f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  Sampler sampler(p);
  for (int32_t t : {3, 0, 3, 3}) sampler.accept(t);
  std::vector<float> logits = {2.5f, 1.0f, -3.0f, -2.0f, 0.75f};
  sampler.sample(logits);
  CHECK(logits[0] == Approx(2.5f / 1.25f - (1 * 0.5f + 0.25f)).margin(1e-6));  // 1.25
  CHECK(logits[1] == 1.0f);
  CHECK(logits[2] == -3.0f);
  CHECK(logits[3] == Approx(-2.0f * 1.25f - (3 * 0.5f + 0.25f)).margin(1e-6));  // -4.25
  CHECK(logits[4] == 0.75f);
}

TEST_CASE("penalties look only at the last penalty_last_n accepted tokens", "[sampling]") {
  SamplerParams p = plain_params();
  p.temperature = 0.0f;
  p.frequency_penalty = 1.0f;
  p.penalty_last_n = 2;
  Sampler sampler(p);
  for (int32_t t : {0, 1, 2, 2}) sampler.accept(t);  // window: 2, 2
  std::vector<float> logits = {0.0f, 0.0f, 0.0f};
  sampler.sample(logits);
  CHECK(logits[0] == 0.0f);
  CHECK(logits[1] == 0.0f);
  CHECK(logits[2] == -2.0f);

  sampler.reset();  // forgets the history
  logits = {0.0f, 0.0f, 0.0f};
  sampler.sample(logits);
  CHECK(logits[2] == 0.0f);

  p.penalty_last_n = 0;  // off
  Sampler off(p);
  off.accept(1);
  logits = {0.0f, 0.0f, 0.0f};
  CHECK(off.sample(logits) == 0);
  CHECK(logits[1] == 0.0f);
}

TEST_CASE("sample and accept reject bad input", "[sampling]") {
  SamplerParams p = plain_params();
  p.repeat_penalty = 1.1f;
  Sampler sampler(p);
  std::vector<float> empty;
  CHECK_THROWS_WITH(sampler.sample(empty), Catch::Contains("empty"));
  CHECK_THROWS_WITH(sampler.accept(-3), Catch::Contains("-3"));
  std::vector<float> logits = {0.0f, std::nanf(""), 1.0f};
  CHECK_THROWS_WITH(sampler.sample(logits), Catch::Contains("token 1 is nan"));
  sampler.accept(9);
  logits = {0.0f, 1.0f};
  CHECK_THROWS_WITH(sampler.sample(logits), Catch::Contains("token 9"));
}

TEST_CASE("the same seed gives the same 1000 tokens; another seed differs", "[sampling]") {
  const std::vector<float> logits = {0.3f, 1.0f, -0.5f, 0.9f, 0.0f, 1.2f, -2.0f, 0.7f};
  auto run = [&](uint64_t seed) {
    Sampler sampler(plain_params(seed));
    std::vector<int32_t> tokens;
    std::vector<float> scratch;
    for (int i = 0; i < 1000; ++i) {
      scratch = logits;
      tokens.push_back(sampler.sample(scratch));
    }
    return tokens;
  };
  const std::vector<int32_t> a = run(1234);
  CHECK(run(1234) == a);
  auto differences = [&](const std::vector<int32_t>& b) {
    int n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
    return n;
  };
  CHECK(differences(run(1235)) > 500);
  // The high half of a 64-bit seed matters too.
  CHECK(differences(run(1234 + (uint64_t{1} << 40))) > 500);

  // reset() re-seeds: the sequence starts over.
  Sampler sampler(plain_params(1234));
  std::vector<float> scratch = logits;
  const int32_t first = sampler.sample(scratch);
  for (int i = 0; i < 10; ++i) {
    scratch = logits;
    sampler.sample(scratch);
  }
  sampler.reset();
  scratch = logits;
  CHECK(sampler.sample(scratch) == first);
  CHECK(first == a[0]);
}

TEST_CASE("the draw is defined by raw mt19937 outputs alone", "[sampling]") {
  // What makes native (libstdc++) and wasm (libc++) agree: token i is chosen when
  // u = (mt19937() >> 8) / 2^24 falls in [cum_{i-1}, cum_i). Recomputed here from
  // the standard generator, which the C++ standard pins down exactly.
  std::mt19937 reference_check;
  reference_check.discard(9999);
  REQUIRE(reference_check() == 4123659995u);

  const std::vector<float> logits = logits_from_probs({0.125, 0.25, 0.5, 0.125});
  double total = 0.0;
  std::vector<double> cumulative;
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  for (float l : logits) cumulative.push_back(total += std::exp(double(l) - max_logit));

  const uint32_t seed = 987654321u;
  Sampler sampler(plain_params(seed));
  std::mt19937 rng(seed);
  std::vector<float> scratch;
  int mismatches = 0;
  for (int i = 0; i < 1000; ++i) {
    const double target = ((rng() >> 8) * (1.0 / 16777216.0)) * total;
    int32_t expected = 0;
    while (target >= cumulative[static_cast<size_t>(expected)]) ++expected;
    scratch = logits;
    mismatches += sampler.sample(scratch) != expected;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("frequencies over 20000 draws match the softmax within 2%", "[sampling]") {
  const std::vector<float> logits = {0.5f, -1.0f, 2.0f, 1.2f, 0.0f, -0.3f};
  for (float temperature : {1.0f, 0.5f, 2.0f}) {
    INFO("temperature " << temperature);
    SamplerParams p = plain_params(7);
    p.temperature = temperature;
    Sampler sampler(p);
    const int n = 20000;
    const std::vector<int> counts = draw_counts(sampler, logits, n);

    double sum = 0.0;
    for (float l : logits) sum += std::exp(l / temperature);
    for (size_t i = 0; i < logits.size(); ++i) {
      const double expected = std::exp(logits[i] / temperature) / sum;
      INFO("token " << i << " expected " << expected << " got " << double(counts[i]) / n);
      CHECK(std::fabs(double(counts[i]) / n - expected) < 0.02);
    }
  }
}

TEST_CASE("top-k in the chain draws only the k best, in softmax proportion", "[sampling]") {
  SamplerParams p = plain_params();
  p.top_k = 2;
  Sampler sampler(p);
  const std::vector<int> counts = draw_counts(sampler, {1.0f, 3.0f, 2.0f}, 4000);
  CHECK(drawn_set(counts) == std::set<int32_t>{1, 2});
  const double e = std::exp(1.0);
  CHECK(std::fabs(counts[1] / 4000.0 - e / (e + 1)) < 0.03);
}

TEST_CASE("top-p in the chain sees the probabilities renormalised after top-k", "[sampling]") {
  // After top-k 3: 0.444 0.333 0.222; the first two reach 0.75. Over the full
  // vocabulary they would only reach 0.7 and token 2 would be kept as well.
  SamplerParams p = plain_params();
  p.top_k = 3;
  p.top_p = 0.75f;
  Sampler sampler(p);
  const std::vector<int> counts =
      draw_counts(sampler, logits_from_probs({0.4, 0.3, 0.2, 0.1}), 2000);
  CHECK(drawn_set(counts) == std::set<int32_t>{0, 1});
}

TEST_CASE("min-p in the chain acts before the temperature", "[sampling]") {
  // min_p 0.5 of p_max 0.5 removes token 2 (0.2). A temperature of 3 applied first
  // would flatten the distribution (p2 / p0 = 0.74) and keep it.
  SamplerParams p = plain_params();
  p.min_p = 0.5f;
  p.temperature = 3.0f;
  Sampler sampler(p);
  const std::vector<int> counts = draw_counts(sampler, logits_from_probs({0.5, 0.3, 0.2}), 2000);
  CHECK(drawn_set(counts) == std::set<int32_t>{0, 1});
  CHECK(counts[1] > 800);  // flattened: 0.3^(1/3) / (0.5^(1/3) + 0.3^(1/3)) = 0.457
}

TEST_CASE("typical in the chain keeps the typical set", "[sampling]") {
  SamplerParams p = plain_params();
  p.typical_p = 0.5f;
  Sampler sampler(p);
  const std::vector<int> counts =
      draw_counts(sampler, logits_from_probs({0.5, 0.25, 0.125, 0.125}), 3000);
  CHECK(drawn_set(counts) == std::set<int32_t>{0, 1});
  CHECK(std::fabs(counts[0] / 3000.0 - 2.0 / 3) < 0.03);
}

TEST_CASE("the default chain only draws tokens that pass every filter", "[sampling]") {
  std::vector<float> logits(1000);
  std::mt19937 gen(5);
  for (float& v : logits) v = static_cast<float>((gen() >> 8) * (8.0 / 16777216.0));
  std::vector<float> sorted = logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  const float kth = sorted[39];
  const float max_logit = sorted[0];

  Sampler sampler(SamplerParams{});  // top_k 40, top_p 0.95, min_p 0.05, temperature 0.8
  std::vector<float> scratch;
  for (int i = 0; i < 500; ++i) {
    scratch = logits;
    const int32_t t = sampler.sample(scratch);
    REQUIRE(logits[static_cast<size_t>(t)] >= kth);
    REQUIRE(std::exp(logits[static_cast<size_t>(t)] - max_logit) >= 0.05f * 0.9999f);
  }
}

}  // namespace
}  // namespace runnel

namespace runnel {

TEST_CASE("logit_bias shifts and bans tokens before sampling", "[sampling]") {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.5f};
  const auto sample = [&](const SamplerParams& params) {
    std::vector<float> copy = logits;
    return Sampler(params).sample(copy);
  };
  SamplerParams p;
  p.temperature = 0;  // greedy: the bias alone decides
  p.logit_bias = {{1, -10.0f}};
  CHECK(sample(p) == 2);
  p.logit_bias = {{1, -std::numeric_limits<float>::infinity()}, {3, 5.0f}};
  CHECK(sample(p) == 3);
  p.logit_bias = {{7, 1.0f}};
  REQUIRE_THROWS_WITH(sample(p), Catch::Contains("token id 7 is outside"));
  p.logit_bias = {{1, std::numeric_limits<float>::quiet_NaN()}};
  REQUIRE_THROWS_AS(Sampler{p}, std::invalid_argument);
  p.logit_bias = {{-1, 1.0f}};
  REQUIRE_THROWS_AS(Sampler{p}, std::invalid_argument);
}

}  // namespace runnel
