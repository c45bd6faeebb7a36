// Sampler::sample must allocate only on its first call (it reuses its buffers).
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "core/sampling/sampler.h"
#include "tests/core/sampling/alloc_counter.h"

namespace runnel {
namespace {

TEST_CASE("Sampler::sample allocates nothing after its first call", "[sampling]") {
  SamplerParams p;  // every filter on
  p.typical_p = 0.9f;
  p.repeat_penalty = 1.1f;
  p.frequency_penalty = 0.2f;
  p.presence_penalty = 0.1f;
  p.penalty_last_n = 16;

  std::vector<float> logits(5000);
  std::mt19937 gen(3);
  for (float& v : logits) v = static_cast<float>((gen() >> 8) * (10.0 / 16777216.0));
  std::vector<float> scratch = logits;

  for (bool top_k_on : {true, false}) {  // top_k off: the full-vocabulary sorts run
    INFO("top_k " << (top_k_on ? "on" : "off"));
    p.top_k = top_k_on ? 40 : 0;
    Sampler sampler(p);
    for (int32_t t = 0; t < 20; ++t) sampler.accept(t);  // fill the penalty window
    scratch = logits;
    const long before_first = testing::allocation_count();
    sampler.accept(sampler.sample(scratch));  // the first call sizes the scratch buffers
    // Shows the counter sees the sampler's allocations (compilers may elide a
    // new/delete pair written in a test, but not one inside the library).
    CHECK(testing::allocation_count() - before_first >= 1);

    const long before = testing::allocation_count();
    for (int i = 0; i < 50; ++i) {
      std::copy(logits.begin(), logits.end(), scratch.begin());
      sampler.accept(sampler.sample(scratch));
    }
    const long during = testing::allocation_count() - before;
    CHECK(during == 0);
  }
}

}  // namespace
}  // namespace runnel
