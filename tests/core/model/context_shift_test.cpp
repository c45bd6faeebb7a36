// Context shift: generation goes past a full context by dropping the oldest half of
// the tokens after --keep, with the kept keys re-rotated to their new positions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/runtime/engine.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

std::unique_ptr<Engine> engine_with(const test::TinyModel& m, int n_ctx, int n_keep, GgmlType kv = GgmlType::F16) {
  EngineOptions o;
  o.n_ctx = n_ctx;
  o.n_batch = 8;
  o.n_keep = n_keep;
  o.kv_type = kv;
  return Engine::load(m.store(), o);
}

GenerateParams greedy(int n) {
  GenerateParams p;
  p.max_tokens = n;
  p.sampler.temperature = 0;
  p.stop_on_eog = false;
  return p;
}

}  // namespace

TEST_CASE("context shift: generation continues past the context", "[model]") {
  test::TinySpec spec;
  spec.n_ctx_train = 256;
  // One layer: its keys and values depend only on token and position, so after a
  // shift the re-rotated cache must equal one computed from scratch (with more layers
  // the kept tokens' deeper K/V still carry what they saw of the dropped ones, as in
  // llama.cpp's shift).
  spec.n_layer = 1;
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<TokenId> prompt = {1, 5, 9, 30, 12, 7};

  // Without shifting, 60 tokens do not fit a 24-token context: refused up front.
  {
    auto e = engine_with(m, 24, -1);
    auto s = e->new_session();
    REQUIRE_THROWS_WITH(s->generate(prompt, greedy(60), nullptr), Catch::Contains("exceeds the context"));
  }
  // With --keep 4 it runs to the end, shifting several times.
  auto e = engine_with(m, 24, 4);
  auto s = e->new_session();
  std::vector<float> last_logits;
  std::vector<TokenId> history;  // what the cache held when those logits were computed
  GenerateParams p = greedy(60);
  Session* sp = s.get();
  p.on_logits = [&](int, std::span<const float> l) {
    last_logits.assign(l.begin(), l.end());
    history = sp->tokens();
  };
  const GenerationStats st = s->generate(prompt, p, nullptr);
  CHECK(st.n_generated == 60);
  CHECK(s->n_context_shifts() >= 2);
  CHECK(s->position() <= 24);
  // The kept prefix is the prompt's first 4 tokens.
  CHECK(std::equal(prompt.begin(), prompt.begin() + 4, s->tokens().begin()));

  // Before the first shift, the tokens equal a run with room to spare.
  auto big = engine_with(m, 128, -1);
  auto sb = big->new_session();
  sb->generate(prompt, greedy(60), nullptr);
  const auto& a = sb->tokens();
  auto s2 = e->new_session();
  s2->generate(prompt, greedy(24 - 6), nullptr);  // fills the context exactly, no shift yet
  CHECK(s2->n_context_shifts() == 0);
  CHECK(std::equal(s2->tokens().begin(), s2->tokens().end(), a.begin()));

  // After shifting, the cache equals one computed from scratch for the kept tokens:
  // the last step's logits match a fresh evaluation of the history before it.
  REQUIRE(history.size() < s->tokens().size() + 24);
  auto fresh = big->new_session();
  std::span<float> expect = fresh->eval(history);
  float max_err = 0, max_abs = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    max_err = std::max(max_err, std::fabs(expect[i] - last_logits[i]));
    max_abs = std::max(max_abs, std::fabs(expect[i]));
  }
  // f16 keys re-rounded after rotation: small differences only.
  CHECK(max_err <= 1e-2f * std::max(1.0f, max_abs));
}

TEST_CASE("context shift: deterministic, and works with a q8_0 cache", "[model]") {
  test::TinySpec spec;
  spec.n_embd = 128;
  spec.n_head = 4;
  spec.n_ff = 160;
  spec.n_ctx_train = 256;
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<TokenId> prompt = {2, 4, 6, 8};
  std::vector<TokenId> first;
  for (int run = 0; run < 2; ++run) {
    auto e = engine_with(m, 20, 2, GgmlType::Q8_0);
    auto s = e->new_session();
    const GenerationStats st = s->generate(prompt, greedy(50), nullptr);
    CHECK(st.n_generated == 50);
    CHECK(s->n_context_shifts() > 0);
    if (run == 0) first = s->tokens();
    else CHECK(s->tokens() == first);
  }
}


TEST_CASE("context shift with a sliding-window layer whose cache is shorter than the context", "[model]") {
  test::TinySpec spec;
  spec.arch = "gemma2";  // layer 0 slides (every other layer)
  spec.n_layer = 1;
  spec.n_swa = 3;
  spec.n_ctx_train = 256;
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<TokenId> prompt = {1, 5, 9, 30, 12, 7};
  auto e = engine_with(m, 24, 4);  // n_batch 8: the layer keeps 2 * 3 + 7 = 13 slots
  auto s = e->new_session();
  REQUIRE(s->kv_cache().cells(0) == 13);
  std::vector<float> last_logits;
  std::vector<TokenId> history;
  GenerateParams p = greedy(60);
  Session* sp = s.get();
  p.on_logits = [&](int, std::span<const float> l) {
    last_logits.assign(l.begin(), l.end());
    history = sp->tokens();
  };
  const GenerationStats st = s->generate(prompt, p, nullptr);
  CHECK(st.n_generated == 60);
  CHECK(s->n_context_shifts() >= 2);
  // The last step equals a fresh evaluation of what the cache held (only the window's
  // keys count, re-rotated to their new positions).
  auto big = engine_with(m, 128, -1);
  auto fresh = big->new_session();
  std::span<float> expect = fresh->eval(history);
  float max_err = 0, max_abs = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    max_err = std::max(max_err, std::fabs(expect[i] - last_logits[i]));
    max_abs = std::max(max_abs, std::fabs(expect[i]));
  }
  CHECK(max_err <= 1e-2f * std::max(1.0f, max_abs));
}

}  // namespace runnel
