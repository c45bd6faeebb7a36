// Session: eval bookkeeping, the generation loop, and refusals before any work.
#include <algorithm>
#include <cmath>
#include <catch2/catch.hpp>

#include "core/runtime/engine.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

std::unique_ptr<Engine> tiny_engine(const test::TinyModel& m, int n_ctx = 32) {
  EngineOptions o;
  o.n_ctx = n_ctx;
  o.n_batch = 8;
  return Engine::load(m.store(), o);
}

TokenId argmax(std::span<const float> v) {
  return static_cast<TokenId>(std::max_element(v.begin(), v.end()) - v.begin());
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

GenerateParams greedy(int max_tokens) {
  GenerateParams p;
  p.max_tokens = max_tokens;
  p.sampler.temperature = 0;
  p.stop_on_eog = false;
  return p;
}

const std::vector<TokenId> kPrompt = {1, 5, 9, 30, 12};

}  // namespace

TEST_CASE("greedy generation follows the argmax of each step's logits", "[model]") {
  const test::TinyModel m = test::build_tiny_model({});
  std::unique_ptr<Engine> e = tiny_engine(m);

  // Expected: feed the argmax back one token at a time with plain eval.
  std::vector<TokenId> expected;
  {
    std::unique_ptr<Session> s = e->new_session();
    std::span<float> logits = s->eval(kPrompt);
    for (int i = 0; i < 10; ++i) {
      const TokenId t = argmax(logits);
      expected.push_back(t);
      logits = s->eval(std::span<const TokenId>(&t, 1));
    }
  }

  std::unique_ptr<Session> s = e->new_session();
  std::string text;
  std::vector<float> first_logits;
  GenerateParams p = greedy(10);
  p.on_logits = [&](int step, std::span<const float> logits) {
    if (step == 0) first_logits.assign(logits.begin(), logits.end());
  };
  const GenerationStats st = s->generate(kPrompt, p, [&](std::string_view piece) {
    text += piece;
    return true;
  });
  CHECK(st.n_prompt == 5);
  CHECK(st.n_generated == 10);
  CHECK(st.stop == StopReason::MaxTokens);
  const std::vector<TokenId> generated(s->tokens().begin() + 5, s->tokens().end());
  CHECK(generated == expected);
  std::string expected_text;  // a continuation keeps its leading space, unlike decode()
  for (TokenId t : expected) expected_text += e->tokenizer().token_to_piece(t, false);
  CHECK(text == expected_text);
  CHECK(!text.empty());
  CHECK(argmax(first_logits) == expected[0]);
  CHECK(s->position() == 15);
}

TEST_CASE("generation continues a session, and rewind repeats it", "[model]") {
  const test::TinyModel m = test::build_tiny_model({});
  std::unique_ptr<Engine> e = tiny_engine(m);
  std::unique_ptr<Session> s = e->new_session();
  s->generate(kPrompt, greedy(4), nullptr);
  const std::vector<TokenId> first = s->tokens();
  // An empty prompt continues from the pending last token.
  s->generate({}, greedy(3), nullptr);
  CHECK(s->position() == 12);
  CHECK(std::equal(first.begin(), first.end(), s->tokens().begin()));
  const std::vector<TokenId> all = s->tokens();
  s->rewind(5);
  s->generate({}, greedy(7), nullptr);
  CHECK(s->tokens() == all);
}

TEST_CASE("the callback stops generation; -1 runs to the full context", "[model]") {
  const test::TinyModel m = test::build_tiny_model({});
  std::unique_ptr<Engine> e = tiny_engine(m, 16);
  std::unique_ptr<Session> s = e->new_session();
  int calls = 0;
  GenerationStats st = s->generate(kPrompt, greedy(8), [&](std::string_view) {
    ++calls;
    return false;
  });
  CHECK(st.stop == StopReason::Callback);
  CHECK(calls == 1);
  CHECK(st.n_generated >= 1);

  s->reset();
  st = s->generate(kPrompt, greedy(-1), nullptr);
  CHECK(st.stop == StopReason::ContextFull);
  CHECK(st.n_generated == 11);
  CHECK(s->position() == 16);
}

TEST_CASE("requests that do not fit fail before work, with the numbers", "[model]") {
  const test::TinyModel m = test::build_tiny_model({});
  std::unique_ptr<Engine> e = tiny_engine(m, 16);
  std::unique_ptr<Session> s = e->new_session();
  const std::vector<TokenId> long_prompt(20, 5);
  CHECK(error_of([&] { s->generate(long_prompt, greedy(1), nullptr); }) ==
        "prompt is 20 tokens but the context is 16");
  CHECK(error_of([&] { s->generate(kPrompt, greedy(12), nullptr); }) ==
        "prompt (5 tokens) + max_tokens (12) exceeds the context (16)");
  CHECK(error_of([&] { s->generate({}, greedy(1), nullptr); }) == "the prompt is empty");
  CHECK(error_of([&] { s->generate(kPrompt, greedy(-2), nullptr); }) ==
        "max_tokens must be >= -1 (-1 = until the context is full), got -2");
  const std::vector<TokenId> bad = {1, 40};
  CHECK(error_of([&] { s->eval(bad); }) == "token id 40 is outside the vocabulary [0, 40)");
  CHECK(s->position() == 0);  // nothing was added by the failed calls

  s->eval(kPrompt);
  CHECK(error_of([&] { s->eval(long_prompt); }) ==
        "input is 20 tokens after 5 in the session but the context is 16");
}

TEST_CASE("engine options are validated and defaulted", "[model]") {
  test::TinySpec spec;
  spec.n_ctx_train = 48;
  const test::TinyModel m = test::build_tiny_model(spec);
  CHECK(Engine::load(m.store())->n_ctx() == 48);  // min(model's 48, 4096)
  EngineOptions o;
  o.n_batch = 0;
  CHECK(error_of([&] { Engine::load(m.store(), o); }) == "batch size must be >= 1, got 0");
}

}  // namespace runnel

namespace runnel {

TEST_CASE("embed: mean-pooled final hidden states, unit length, history untouched by design", "[model]") {
  const test::TinyModel m = test::build_tiny_model({});
  auto engine = tiny_engine(m);
  auto session = engine->new_session();
  // More tokens than n_batch (8): pooling spans batches.
  const std::vector<TokenId> a = {1, 5, 9, 30, 12, 7, 3, 2, 8, 11};
  const std::vector<TokenId> b = {4, 4, 4, 4};
  const std::vector<float> ea = session->embed(a);
  REQUIRE(ea.size() == static_cast<size_t>(engine->config().n_embd));
  double norm = 0;
  for (float x : ea) norm += double{x} * x;
  CHECK(std::sqrt(norm) == Approx(1.0).epsilon(1e-5));
  CHECK(session->position() == 0);  // the history is cleared after
  CHECK(session->embed(a) == ea);   // deterministic, whatever ran before
  const std::vector<float> eb = session->embed(b);
  double cos = 0;
  for (size_t i = 0; i < ea.size(); ++i) cos += double{ea[i]} * eb[i];
  CHECK(cos < 0.999);  // different text, different vector
  // Generation afterwards starts from an empty history.
  const GenerationStats s = session->generate(kPrompt, greedy(2), nullptr);
  CHECK(s.n_generated == 2);
  REQUIRE_THROWS_AS(session->embed({}), std::invalid_argument);
}

}  // namespace runnel

namespace runnel {

TEST_CASE("Generation steps give generate()'s text and stats; stop() ends early", "[model]") {
  const test::TinyModel m = test::build_tiny_model({});
  std::unique_ptr<Engine> e = tiny_engine(m);
  std::string whole;
  GenerationStats ws;
  {
    std::unique_ptr<Session> s = e->new_session();
    ws = s->generate(kPrompt, greedy(12), [&](std::string_view p) {
      whole += p;
      return true;
    });
  }
  std::unique_ptr<Session> s = e->new_session();
  std::unique_ptr<Generation> g = s->start(kPrompt, greedy(12));
  std::string stepped, piece;
  int steps = 0;
  while (g->step(piece)) {
    stepped += piece;
    ++steps;
  }
  stepped += piece;
  CHECK(stepped == whole);
  CHECK(steps == 11);  // the 12th step returns false with the last text
  CHECK(g->stats().n_generated == ws.n_generated);
  CHECK(g->stats().stop == StopReason::MaxTokens);
  CHECK_FALSE(g->step(piece));
  CHECK(piece.empty());

  std::unique_ptr<Session> s2 = e->new_session();
  std::unique_ptr<Generation> g2 = s2->start(kPrompt, greedy(12));
  REQUIRE(g2->step(piece));
  g2->stop();
  CHECK(g2->done());
  CHECK(g2->stats().stop == StopReason::Callback);
  CHECK(g2->stats().n_generated == 1);
  CHECK(s2->position() == static_cast<int>(kPrompt.size()) + 1);
}

TEST_CASE("a session may take a smaller context than the engine's", "[model]") {
  const test::TinyModel m = test::build_tiny_model({});
  std::unique_ptr<Engine> e = tiny_engine(m, 32);
  CHECK(e->new_session(8)->n_ctx() == 8);
  CHECK(e->new_session()->n_ctx() == 32);
  CHECK(error_of([&] { e->new_session(33); }).find("outside [1, 32]") != std::string::npos);
  CHECK(error_of([&] { e->new_session(-1); }).find("outside [1, 32]") != std::string::npos);
}

}  // namespace runnel
