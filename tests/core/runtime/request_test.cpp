// The request path every front end shares (core/runtime/request.h): prompts to tokens,
// prefix reuse, the fit check with field names, stop strings and finish reasons.
#include "core/runtime/request.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

std::unique_ptr<Engine> engine_of(const test::TinyModel& m, int n_keep = -1) {
  EngineOptions o;
  o.n_ctx = 32;
  o.n_batch = 8;
  o.n_keep = n_keep;
  return Engine::load(m.store(), o);
}

// Sampled with a fixed seed and no end token, so runs are long and repeatable.
RequestOptions sampled(int max_tokens) {
  RequestOptions r;
  r.max_tokens = max_tokens;
  r.sampler.temperature = 1.5f;
  r.sampler.top_k = 0;
  r.sampler.top_p = 1;
  r.sampler.min_p = 0;
  r.sampler.seed = 7;
  r.sampler.logit_bias = {{2, -std::numeric_limits<float>::infinity()}};  // </s>
  return r;
}

std::string all_text(RequestRun& run) {
  std::string text, piece;
  while (run.next(piece)) text += piece;
  return text + piece;
}

// The RequestError a call throws, as "field/code: message".
template <typename Fn>
std::string refusal(Fn&& fn) {
  try {
    fn();
  } catch (const RequestError& e) {
    return e.field() + "/" + e.code() + ": " + e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("request: stop strings are never emitted, even split across pieces", "[request]") {
  SECTION("split over three pieces") {
    StopMatcher m({"</end>"});
    std::string out = m.push("Hello </");
    CHECK(out == "Hello ");
    out += m.push("en");
    CHECK(!m.stopped());
    out += m.push("d> more");
    CHECK(m.stopped());
    CHECK(out == "Hello ");
    CHECK(m.push("after") == "");
    CHECK(m.flush() == "");
  }
  SECTION("a false start is released") {
    StopMatcher m({"STOP"});
    std::string out = m.push("ST");
    CHECK(out.empty());
    out += m.push("AR");
    CHECK(out == "STAR");
    out += m.push("T");
    CHECK(out == "START");
    CHECK(m.flush() == "");
  }
  SECTION("held-back text comes out at the end") {
    StopMatcher m({"abc"});
    CHECK(m.push("xab") == "x");
    CHECK(m.flush() == "ab");
  }
  SECTION("the earliest of several stops wins") {
    StopMatcher m({"bb", "a"});
    CHECK(m.push("xbbya") == "x");
    CHECK(m.stopped());
  }
  SECTION("no stops: everything passes") {
    StopMatcher m({});
    CHECK(m.push("abc") == "abc");
    CHECK(m.flush() == "");
  }
  SECTION("an empty stop string is refused by name") {
    CHECK(refusal([] { StopMatcher m({"x", ""}); }) == "stop/invalid_value: stop strings must not be empty");
  }
}

TEST_CASE("request: prompts become tokens with the template and BOS policy", "[request]") {
  const test::TinyModel m = test::build_tiny_model({});
  const std::unique_ptr<Engine> e = engine_of(m);
  const PromptFormat format(*e);
  const Tokenizer& tok = e->tokenizer();

  CHECK(format.tokens(PromptInput::from_text("a b")) == tok.encode("a b", true, true));
  PromptInput no_bos = PromptInput::from_text("a b");
  no_bos.add_bos = false;
  CHECK(format.tokens(no_bos) == tok.encode("a b", false, true));
  CHECK(format.tokens(PromptInput::from_tokens({5, 6})) == std::vector<TokenId>{5, 6});

  // No template in the tiny model: ChatML, BOS added since ChatML does not write it.
  REQUIRE(format.has_chat_template());
  const std::vector<ChatMessage> chat = {{"user", "hi"}};
  const std::string rendered = format.render(chat);
  CHECK(rendered == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  CHECK(format.tokens(PromptInput::from_messages(chat)) == tok.encode(rendered, true, true));

  CHECK(refusal([&] { format.tokens(PromptInput::from_tokens({5, 40})); }) ==
        "prompt/invalid_value: token id 40 is outside the vocabulary [0, 40)");
  CHECK(refusal([&] { format.tokens(PromptInput::from_tokens({})); }) ==
        "prompt/invalid_value: the prompt is empty after tokenization");
  CHECK(refusal([&] { format.tokens(PromptInput::from_messages({})); }) ==
        "messages/invalid_value: messages must not be empty");
  PromptInput two = PromptInput::from_text("a");
  two.tokens = std::vector<TokenId>{5};
  CHECK(refusal([&] { format.tokens(two); }) ==
        "prompt/invalid_value: a prompt needs exactly one of messages, text or tokens (got 2)");
}

TEST_CASE("request: embedding inputs are the texts' tokens, each within the context", "[request]") {
  const test::TinyModel m = test::build_tiny_model({});
  const std::unique_ptr<Engine> e = engine_of(m);  // n_ctx 32
  const std::vector<std::vector<TokenId>> ids = embedding_inputs(*e, {"a b", "c"});
  REQUIRE(ids.size() == 2);
  CHECK(ids[0] == e->tokenizer().encode("a b", true, false));
  CHECK(ids[1] == e->tokenizer().encode("c", true, false));
  const std::string long_text(40, 'a');  // a token a letter, + BOS
  CHECK(refusal([&] { embedding_inputs(*e, {"a", long_text}); }) ==
        "input/context_length_exceeded: input[1] is 41 tokens but the context is 32");
}

TEST_CASE("request: a request that does not fit is refused before any work, naming the field", "[request]") {
  const test::TinyModel m = test::build_tiny_model({});
  const std::unique_ptr<Engine> e = engine_of(m);
  std::unique_ptr<Session> s = e->new_session();
  const std::vector<TokenId> prompt(10, 5);

  CHECK(refusal([&] { RequestRun run(*s, std::vector<TokenId>(32, 5), sampled(1)); }) ==
        "prompt/context_length_exceeded: the prompt is 32 tokens but the context is 32 (leave room for at "
        "least one generated token)");
  CHECK(refusal([&] { RequestRun run(*s, prompt, sampled(23)); }) ==
        "max_tokens/context_length_exceeded: prompt (10 tokens) + max_tokens (23) exceeds the context (32)");
  CHECK(refusal([&] { RequestRun run(*s, prompt, sampled(-2)); }) ==
        "max_tokens/invalid_value: max_tokens must be >= -1 (-1 = until the context is full), got -2");
  CHECK(refusal([&] { RequestRun run(*s, {}, sampled(1)); }) == "prompt/invalid_value: the prompt is empty");
  RequestOptions bad_temp = sampled(1);
  bad_temp.sampler.temperature = std::nanf("");
  CHECK_THROWS_AS(RequestRun(*s, prompt, bad_temp), std::invalid_argument);
  CHECK(s->position() == 0);  // nothing evaluated

  // Where the context shifts (n_keep >= 0), max_tokens may exceed it.
  const std::unique_ptr<Engine> shifting = engine_of(m, 4);
  std::unique_ptr<Session> s2 = shifting->new_session();
  RequestRun run(*s2, prompt, sampled(40));
  all_text(run);
  CHECK(run.stats().n_generated == 40);
  CHECK(run.finish_reason() == FinishReason::Length);
  CHECK(s2->n_context_shifts() > 0);
}

TEST_CASE("request: logit_bias is parsed once for every front end, naming the entry at fault", "[request]") {
  using nlohmann::json;
  const auto parsed = parse_logit_bias(json::parse(R"({"3": 2.5, "0": -100, "7": -1})"), 8, "logit_bias");
  REQUIRE(parsed.size() == 3);
  CHECK(parsed[0] == std::pair<int32_t, float>{0, -std::numeric_limits<float>::infinity()});  // -100 bans
  CHECK(parsed[1] == std::pair<int32_t, float>{3, 2.5f});
  CHECK(parsed[2] == std::pair<int32_t, float>{7, -1.0f});
  CHECK(parse_logit_bias(json::object(), 8, "logitBias").empty());
  const auto refused = [](const char* bias, const char* field = "logit_bias") {
    return refusal([&] { parse_logit_bias(json::parse(bias), 8, field); });
  };
  CHECK(refused("[1]", "logitBias") ==
        "logitBias/invalid_type: 'logitBias' must be an object of token id -> bias, got array");
  CHECK(refused(R"({"8": 1})") == "logit_bias.8/invalid_value: 'logit_bias' key '8' is not a token id in [0, 8)");
  CHECK(refused(R"({"-1": 1})") == "logit_bias.-1/invalid_value: 'logit_bias' key '-1' is not a token id in [0, 8)");
  CHECK(refused(R"({"2x": 1})") == "logit_bias.2x/invalid_value: 'logit_bias' key '2x' is not a token id in [0, 8)");
  CHECK(refused(R"({"": 1})") == "logit_bias./invalid_value: 'logit_bias' key '' is not a token id in [0, 8)");
  CHECK(refused(R"({"2": "up"})") == "logit_bias.2/invalid_type: 'logit_bias.2' must be a number, got string");
  CHECK(refused(R"({"2": 100.5})") == "logit_bias.2/invalid_value: 'logit_bias.2' must be in [-100, 100], got 100.5");
  CHECK(refused(R"({"2": -101})") == "logit_bias.2/invalid_value: 'logit_bias.2' must be in [-100, 100], got -101");
}

TEST_CASE("request: the cached prefix is reused and gives the same reply as a fresh session", "[request]") {
  const test::TinyModel m = test::build_tiny_model({});
  const std::unique_ptr<Engine> e = engine_of(m);
  const std::vector<TokenId> first = {1, 5, 6, 7, 8};
  std::vector<TokenId> second = first;
  second.insert(second.end(), {9, 10, 11});

  std::unique_ptr<Session> warm = e->new_session();
  RequestRun a(*warm, first, sampled(6));
  all_text(a);
  CHECK(a.n_cached() == 0);
  // The follow-up starts with `first`: only the rest is evaluated (the history also
  // holds a's reply, which `second` does not continue, so that part is dropped).
  RequestRun b(*warm, second, sampled(6));
  const std::string warm_text = all_text(b);
  CHECK(b.n_cached() == 5);
  CHECK(b.n_prompt() == 8);
  CHECK(b.stats().n_prompt == 3);

  std::unique_ptr<Session> cold = e->new_session();
  RequestRun c(*cold, second, sampled(6));
  CHECK(all_text(c) == warm_text);
  CHECK(c.n_cached() == 0);

  // The same prompt again: everything cached, the last position recomputed.
  RequestRun d(*warm, second, sampled(6));
  CHECK(all_text(d) == warm_text);
  CHECK(d.n_cached() == 8);
}

TEST_CASE("request: finish reasons: length, context, stop string, abort, cut", "[request]") {
  const test::TinyModel m = test::build_tiny_model({});
  const std::unique_ptr<Engine> e = engine_of(m);
  const std::vector<TokenId> prompt = {1, 5, 6};

  std::unique_ptr<Session> s = e->new_session();
  RequestRun length(*s, prompt, sampled(5));
  const std::string text = all_text(length);
  CHECK(length.finish_reason() == FinishReason::Length);
  CHECK(length.stats().n_generated == 5);
  REQUIRE(text.size() >= 2);

  RequestRun context(*s, prompt, sampled(-1));
  all_text(context);
  CHECK(context.finish_reason() == FinishReason::ContextFull);
  CHECK(s->position() == 32);

  // A stop string from the middle of the known reply ends it there, not emitted.
  RequestOptions with_stop = sampled(5);
  const std::string stop = text.substr(text.size() / 2, 2);
  with_stop.stop = {stop};
  RequestRun stopped(*s, prompt, with_stop);
  CHECK(all_text(stopped) == text.substr(0, text.find(stop)));
  CHECK(stopped.finish_reason() == FinishReason::Stop);

  const std::unique_ptr<RequestRun> aborted =
      run_request(*s, prompt, sampled(5), [](std::string_view) { return false; });
  CHECK(aborted->finish_reason() == FinishReason::Aborted);
  CHECK(aborted->stats().n_generated < 5);

  RequestRun cut(*s, prompt, sampled(5));
  std::string piece;
  cut.next(piece);
  cut.stop(FinishReason::Cut);
  CHECK(cut.done());
  CHECK(cut.finish_reason() == FinishReason::Cut);
  CHECK(std::string(finish_reason_name(FinishReason::Cut)) == "cut");
  CHECK(std::string(finish_reason_name(FinishReason::ContextFull)) == "context");
}

TEST_CASE("logprobs: log-softmax of the logits, the n best first, ties by id", "[request][logprobs]") {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  double z = 0;
  for (const float l : logits) z += std::exp(static_cast<double>(l));
  const StepLogprobs lp = token_logprobs(logits, 4, 3);
  CHECK(lp.chosen.id == 4);
  CHECK(lp.chosen.logprob == Approx(0.5 - std::log(z)).margin(1e-6));
  REQUIRE(lp.top.size() == 3);
  CHECK(lp.top[0].id == 1);  // tied with 3: the lower id first
  CHECK(lp.top[1].id == 3);
  CHECK(lp.top[2].id == 0);
  CHECK(lp.top[0].logprob == Approx(3.0 - std::log(z)).margin(1e-6));
  CHECK(token_logprobs(logits, 2, 0).top.empty());
  CHECK(token_logprobs(logits, 2, 99).top.size() == logits.size());
  CHECK_THROWS_AS(token_logprobs(logits, 5, 1), std::invalid_argument);
}

TEST_CASE("request: logprobs follow the handed-out text, raw logits, stop strings dropped", "[request][logprobs]") {
  const test::TinyModel m = test::build_tiny_model({});
  const std::unique_ptr<Engine> e = engine_of(m);
  const Tokenizer& tok = e->tokenizer();
  const std::vector<TokenId> prompt = {1, 5, 6};
  std::unique_ptr<Session> s = e->new_session();

  // Sampled at temperature 1.5 with a bias: the figures are still the raw logits'.
  RequestOptions options = sampled(8);
  options.logprobs = 4;
  std::vector<std::vector<float>> raw;
  options.on_logits = [&](int, std::span<const float> l) { raw.emplace_back(l.begin(), l.end()); };
  RequestRun run(*s, prompt, options);
  std::string text, piece;
  std::vector<StepLogprobs> lps;
  bool more = true;
  while (more) {
    more = run.next(piece);
    text += piece;
    for (StepLogprobs& lp : run.take_logprobs()) lps.push_back(std::move(lp));
  }
  REQUIRE(lps.size() == 8);
  std::string joined;
  for (size_t i = 0; i < lps.size(); ++i) {
    const StepLogprobs expect = token_logprobs(raw[i], lps[i].chosen.id, 4);
    CHECK(lps[i].chosen.logprob == expect.chosen.logprob);
    REQUIRE(lps[i].top.size() == 4);
    CHECK(lps[i].top[0].id == expect.top[0].id);
    CHECK(lps[i].chosen.logprob <= lps[i].top[0].logprob);
    joined += token_bytes(tok, lps[i].chosen.id);
  }
  CHECK(joined == text);

  // Greedy: the chosen token is the most likely one.
  RequestOptions greedy = options;
  greedy.sampler.temperature = 0;
  greedy.on_logits = nullptr;
  RequestRun g(*s, prompt, greedy);
  all_text(g);
  for (const StepLogprobs& lp : g.take_logprobs()) CHECK(lp.chosen.id == lp.top[0].id);

  // A stop string: its tokens are not reported, the ones before it are.
  RequestOptions with_stop = options;
  with_stop.on_logits = nullptr;
  const std::string stop = text.substr(text.size() / 2, 2);
  with_stop.stop = {stop};
  RequestRun stopped(*s, prompt, with_stop);
  const std::string kept = all_text(stopped);
  const std::vector<StepLogprobs> kept_lps = stopped.take_logprobs();
  std::string covered;
  for (const StepLogprobs& lp : kept_lps) covered += token_bytes(tok, lp.chosen.id);
  CHECK(covered.starts_with(kept));
  CHECK(kept_lps.size() < lps.size());
  if (!kept_lps.empty()) {  // without its last token the text would not be covered
    CHECK(covered.size() - token_bytes(tok, kept_lps.back().chosen.id).size() < kept.size() + (kept.empty() ? 1 : 0));
  }

  // Off: nothing collected.
  RequestRun off(*s, prompt, sampled(3));
  all_text(off);
  CHECK(off.take_logprobs().empty());
}

}  // namespace runnel
