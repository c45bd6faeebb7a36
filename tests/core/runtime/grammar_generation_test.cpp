// Grammar-constrained generation through the request path (GenerateParams::grammar,
// compile_grammar) on the tiny synthetic model, whose vocabulary is <unk> <s> </s>,
// " a".." z" (ids 3..28) and "a".."k" (ids 29..39).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <regex>

#include "core/runtime/request.h"
#include "core/sampling/grammar_matcher.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

constexpr TokenId kEos = 2;
constexpr float kInf = std::numeric_limits<float>::infinity();

std::unique_ptr<Engine> engine_of(const test::TinyModel& m) {
  EngineOptions o;
  o.n_ctx = 64;
  o.n_batch = 8;
  return Engine::load(m.store(), o);
}

RequestOptions greedy(int max_tokens) {
  RequestOptions r;
  r.max_tokens = max_tokens;
  r.sampler.temperature = 0;
  return r;
}

RequestOptions sampled(int max_tokens, uint64_t seed) {
  RequestOptions r;
  r.max_tokens = max_tokens;
  r.sampler.temperature = 1.5f;
  r.sampler.top_k = 0;
  r.sampler.top_p = 1;
  r.sampler.min_p = 0;
  r.sampler.seed = seed;
  return r;
}

struct Output {
  std::string text;
  std::vector<TokenId> tokens;  // generated (an end token is not among them)
  FinishReason finish;
  GenerationStats stats;
};

Output run(Engine& engine, const RequestOptions& options, const std::string& prompt = " a b") {
  auto session = engine.new_session();
  const std::vector<TokenId> ids = PromptFormat(engine).tokens(PromptInput::from_text(prompt));
  std::string text;
  auto r = run_request(*session, ids, options, [&](std::string_view p) {
    text += p;
    return true;
  });
  const std::vector<TokenId>& all = session->tokens();
  return {text, std::vector<TokenId>(all.begin() + static_cast<std::ptrdiff_t>(ids.size()), all.end()),
          r->finish_reason(), r->stats()};
}

}  // namespace

TEST_CASE("grammar: constrained output always matches the grammar and stops when complete",
          "[request][grammar]") {
  // A finite language: after " z" nothing more can follow.
  const std::string gbnf = "root ::= \" \" [a-e] [f-h]{1,4} \" z\"";
  const std::regex language("^ [a-e][f-h]{1,4} z$");
  for (uint32_t model_seed = 1; model_seed <= 4; ++model_seed) {
    test::TinySpec spec;
    spec.seed = model_seed;
    const test::TinyModel m = test::build_tiny_model(spec);
    const auto engine = engine_of(m);
    RequestOptions options = greedy(20);
    options.grammar = compile_grammar(*engine, gbnf);
    const Output greedy_out = run(*engine, options);
    INFO("model seed " << model_seed << ", greedy: '" << greedy_out.text << "'");
    CHECK(std::regex_match(greedy_out.text, language));
    CHECK(greedy_out.finish == FinishReason::Stop);
    CHECK(greedy_out.stats.stop == StopReason::EndOfGeneration);
    CHECK(greedy_out.stats.n_generated == static_cast<int>(greedy_out.tokens.size()));
    CHECK(greedy_out.tokens.back() == 28);  // " z": the last token, never evaluated past

    for (uint64_t seed = 1; seed <= 12; ++seed) {
      RequestOptions s = sampled(20, seed);
      s.grammar = options.grammar;  // one compiled grammar serves many requests
      const Output out = run(*engine, s);
      INFO("sampled, seed " << seed << ": '" << out.text << "'");
      CHECK(std::regex_match(out.text, language));
      CHECK(out.finish == FinishReason::Stop);
    }
  }
}

TEST_CASE("grammar: greedy picks the best allowed token of the raw logits at every step",
          "[request][grammar]") {
  const test::TinyModel m = test::build_tiny_model({});
  const auto engine = engine_of(m);
  // An open-ended language: the run ends at max_tokens (the end token is banned).
  const std::string gbnf = "root ::= ([a-d] | \" \" [e-k])+";
  RequestOptions options = greedy(12);
  options.sampler.logit_bias = {{kEos, -kInf}};
  options.grammar = compile_grammar(*engine, gbnf);
  std::vector<std::vector<float>> raw;
  options.on_logits = [&](int, std::span<const float> logits) { raw.emplace_back(logits.begin(), logits.end()); };
  const Output out = run(*engine, options);
  REQUIRE(out.tokens.size() == 12);
  REQUIRE(raw.size() == 12);
  CHECK(out.finish == FinishReason::Length);

  GrammarMatcher replay(options.grammar, engine->grammar_vocab());
  TokenMask mask;
  bool saw_disallowed_finite = false;
  for (size_t step = 0; step < out.tokens.size(); ++step) {
    replay.allowed_tokens(mask);
    TokenId best = -1;
    for (TokenId id = 0; id < mask.size(); ++id) {
      if (id == kEos) continue;  // logit_bias -inf
      if (!mask.test(id)) {
        // on_logits saw the logits before the mask: nothing there is -inf.
        saw_disallowed_finite = saw_disallowed_finite || std::isfinite(raw[step][id]);
        continue;
      }
      if (best < 0 || raw[step][id] > raw[step][best]) best = id;
    }
    INFO("step " << step);
    CHECK(out.tokens[step] == best);
    REQUIRE(replay.accept_token(out.tokens[step]));
  }
  CHECK(saw_disallowed_finite);
  CHECK(std::regex_match(out.text, std::regex("^([a-d]| [e-k])+$")));
}

TEST_CASE("grammar: the end token is allowed only where the grammar may end", "[request][grammar]") {
  const test::TinyModel m = test::build_tiny_model({});
  const auto engine = engine_of(m);
  // The model is pushed hard towards </s>: unconstrained it ends at once.
  RequestOptions eager = greedy(10);
  eager.sampler.logit_bias = {{kEos, 100.0f}};
  CHECK(run(*engine, eager).stats.n_generated == 0);

  RequestOptions options = eager;
  options.grammar = compile_grammar(*engine, "root ::= [a-c]{3} [d-f]*");
  const Output out = run(*engine, options);
  INFO("'" << out.text << "'");
  CHECK(out.stats.n_generated == 3);  // the first accepting state, then </s>
  CHECK(std::regex_match(out.text, std::regex("^[a-c]{3}$")));
  CHECK(out.finish == FinishReason::Stop);

  // Random sampling too: never ends before three characters.
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    RequestOptions s = sampled(10, seed);
    s.sampler.logit_bias = {{kEos, 8.0f}};
    s.grammar = options.grammar;
    const Output o = run(*engine, s);
    INFO("seed " << seed << ": '" << o.text << "'");
    CHECK(std::regex_match(o.text, std::regex("^[a-c]{3}[d-f]*$")));
  }
}

TEST_CASE("grammar: a complete grammar ends the run even with the end token banned", "[request][grammar]") {
  const test::TinyModel m = test::build_tiny_model({});
  const auto engine = engine_of(m);
  RequestOptions options = sampled(10, 3);
  options.sampler.logit_bias = {{kEos, -kInf}};
  options.grammar = compile_grammar(*engine, "root ::= \"abc\" | \" hi\"");
  const Output out = run(*engine, options);
  CHECK((out.text == "abc" || out.text == " hi"));
  CHECK(out.finish == FinishReason::Stop);
  CHECK(out.stats.n_generated == static_cast<int>(out.tokens.size()));
  CHECK(out.stats.grammar_ms >= 0);

  // Streaming step by step gives the same and then nothing more.
  auto session = engine->new_session();
  const std::vector<TokenId> prompt = PromptFormat(*engine).tokens(PromptInput::from_text(" a b"));
  RequestRun r(*session, prompt, options);
  std::string text, piece;
  while (r.next(piece)) text += piece;
  text += piece;
  CHECK(text == out.text);
  CHECK(!r.next(piece));
}

TEST_CASE("grammar: a logit_bias that bans every allowed token is an error, never a crash",
          "[request][grammar]") {
  const test::TinyModel m = test::build_tiny_model({});
  const auto engine = engine_of(m);
  // " a" is id 3, "a" id 29: the grammar " a" "b" is spelled " a" then "b" (id 30) only.
  const std::shared_ptr<const Grammar> grammar = compile_grammar(*engine, "root ::= \" a\" \"b\"");
  SamplerParams bias;
  bias.logit_bias = {{3, -kInf}};
  CHECK_THROWS_WITH(check_grammar_bias(*engine, grammar, bias),
                    "logit_bias bans every token the output constraint allows at its start");
  bias.logit_bias = {{30, -kInf}, {30, -kInf}, {5, -kInf}};  // a later step; repeats count once
  check_grammar_bias(*engine, grammar, bias);
  RequestOptions options = greedy(8);
  options.grammar = grammar;
  options.sampler.logit_bias = bias.logit_bias;
  CHECK_THROWS_WITH(run(*engine, options), "logit_bias bans every token the grammar allows after 1 generated token");
  // A finite bias only discourages: the run completes.
  options.sampler.logit_bias = {{30, -50.0f}};
  CHECK(run(*engine, options).text == " ab");
}

TEST_CASE("grammar: token references resolve against the engine's vocabulary", "[request][grammar]") {
  const test::TinyModel m = test::build_tiny_model({});
  const auto engine = engine_of(m);
  // </s> through a reference is matched as a token; the run ends at the grammar's end.
  RequestOptions options = greedy(10);
  options.grammar = compile_grammar(*engine, "root ::= \"ab\" <[5]> \"c\"");
  const Output out = run(*engine, options);
  CHECK(out.text == "ab cc");  // token 5 is " c"
  CHECK(out.finish == FinishReason::Stop);
}

TEST_CASE("grammar: a malformed grammar is a RequestError with line and column", "[request][grammar]") {
  const test::TinyModel m = test::build_tiny_model({});
  const auto engine = engine_of(m);
  try {
    compile_grammar(*engine, "root ::= [a-z\nother ::= \"x\"");
    FAIL("no error");
  } catch (const RequestError& e) {
    CHECK(e.field() == "grammar");
    CHECK(e.code() == "invalid_value");
    CHECK_THAT(e.what(), Catch::Matchers::StartsWith("grammar: line 2, column 14: expected ']'") &&
                             Catch::Matchers::EndsWith("starts at line 1, column 10"));
  }
  try {
    compile_grammar(*engine, "start ::= \"x\"", "response_format");
    FAIL("no error");
  } catch (const RequestError& e) {
    CHECK(e.field() == "response_format");
    CHECK_THAT(e.what(), Catch::Matchers::Contains("root"));
  }
}

TEST_CASE("grammar: the engine's grammar vocabulary follows the tokenizer", "[request][grammar]") {
  const test::TinyModel m = test::build_tiny_model({});
  const auto engine = engine_of(m);
  const auto vocab = engine->grammar_vocab();
  CHECK(vocab == engine->grammar_vocab());  // built once
  REQUIRE(vocab->n_vocab() == 40);
  CHECK(vocab->kind(kEos) == GrammarTokenKind::kEog);
  CHECK(vocab->kind(1) == GrammarTokenKind::kControl);  // <s>
  CHECK(vocab->kind(0) == GrammarTokenKind::kControl);  // <unk>
  CHECK(vocab->bytes(3) == " a");                       // SPM's U+2581 as a space
  CHECK(vocab->bytes(29) == "a");
}

}  // namespace runnel
