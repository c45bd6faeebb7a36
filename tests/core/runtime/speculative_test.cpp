// Speculative decoding with prompt lookup (core/runtime/speculative.h, GenerateParams::
// lookup_ngram): drafts found in the context, greedy output and every step's logits the
// same bits as without speculation on every kernel set, sampled output with the same
// distribution (the acceptance rule), and Sampler::sample_draft on its own.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "core/runtime/engine.h"
#include "core/runtime/speculative.h"
#include "core/sampling/sampler.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

std::unique_ptr<Engine> engine_of(const test::TinyModel& m, int n_draft) {
  EngineOptions o;
  o.n_ctx = 96;
  o.n_batch = 8;
  o.n_draft = n_draft;
  return Engine::load(m.store(), o);
}

struct Run {
  std::vector<TokenId> tokens;
  std::vector<std::vector<float>> logits;  // on_logits, every step
  GenerationStats stats;
};

Run generate(Engine& e, const std::vector<TokenId>& prompt, GenerateParams p) {
  Run r;
  p.on_logits = [&](int, std::span<const float> l) { r.logits.emplace_back(l.begin(), l.end()); };
  std::unique_ptr<Session> s = e.new_session();
  r.stats = s->generate(prompt, p, nullptr);
  r.tokens.assign(s->tokens().begin() + static_cast<std::ptrdiff_t>(prompt.size()), s->tokens().end());
  return r;
}

// A prompt that repeats itself, so lookup finds drafts from the start.
const std::vector<TokenId> kPrompt = {1, 5, 6, 7, 8, 9, 10, 5, 6, 7, 8, 9, 10, 5, 6, 7};

}  // namespace

TEST_CASE("prompt lookup drafts what followed the latest match of the longest suffix", "[speculative]") {
  PromptLookup lookup(3, 8);
  const std::vector<TokenId> h = {1, 2, 3, 9, 1, 2, 3, 4, 5, 7, 2, 3};
  // "2 3" (n = 3 "7 2 3" never occurred): the latest match is at 5, followed by 4 5 7.
  CHECK(lookup.draft(h, 8) == std::vector<TokenId>{4});  // the first draft is one token
  CHECK(lookup.draft(std::vector<TokenId>{1, 2, 3}, 8).empty());
  // A lone token is not matched unless the n-gram size is 1.
  CHECK(lookup.draft(std::vector<TokenId>{4, 4}, 8).empty());
  CHECK(PromptLookup(1, 8).draft(std::vector<TokenId>{4, 4}, 8) == std::vector<TokenId>{4});
  // The length adapts: doubled after a full acceptance, shorter after a partial one.
  lookup.feedback(1, 1);
  lookup.feedback(2, 2);
  CHECK(lookup.draft_length() == 4);
  CHECK(lookup.draft(h, 8) == std::vector<TokenId>{4, 5, 7, 2});
  CHECK(lookup.draft(h, 2) == std::vector<TokenId>{4, 5});
  lookup.feedback(4, 4);
  CHECK(lookup.draft_length() == 8);
  lookup.feedback(8, 2);
  CHECK(lookup.draft_length() == 3);
  // Nothing accepted: drafting pauses 2, then 4 calls (and the length drops to 1).
  lookup.feedback(3, 0);
  CHECK(lookup.draft(h, 8).empty());
  CHECK(lookup.draft(h, 8).empty());
  CHECK(lookup.draft(h, 8).size() == 1);
  lookup.feedback(1, 0);
  for (int i = 0; i < 4; ++i) CHECK(lookup.draft(h, 8).empty());
  CHECK_FALSE(lookup.draft(h, 8).empty());
  CHECK_THROWS_AS(PromptLookup(0, 4), std::invalid_argument);
}

TEST_CASE("speculation: greedy tokens and every step's logits are the same bits as without",
          "[speculative]") {
  struct Case {
    const char* arch;
    GgmlType type;
  };
  // Plain and repacked (x8) quantized products, a sliding-window family.
  int n_rejected = 0;
  for (const Case c : {Case{"llama", GgmlType::F32}, Case{"llama", GgmlType::Q8_0}, Case{"llama", GgmlType::Q4_0},
                       Case{"qwen2", GgmlType::Q5_0}, Case{"gemma3", GgmlType::Q4_1}}) {
    test::TinySpec spec;
    spec.arch = c.arch;
    spec.matrix_type = c.type;
    if (spec.arch == "gemma3") {
      spec.n_swa = 4;
      spec.swa_period = 2;
    }
    const test::TinyModel m = test::build_tiny_model(spec);
    const auto e = engine_of(m, 4);
    GenerateParams p;
    p.max_tokens = 48;
    p.sampler.temperature = 0;
    // The tiny model repeats its last token; a repeat penalty makes it wander, so lookup
    // guesses right and wrong (rejected drafts' cache entries are overwritten), and the
    // penalties see the accepted drafts as they would the tokens one by one.
    p.sampler.repeat_penalty = 3.0f;
    p.sampler.penalty_last_n = 3;
    p.stop_on_eog = false;
    const std::vector<TokenId> prompt = {1, 7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 8};
    const Run plain = generate(*e, prompt, p);
    p.lookup_ngram = 2;
    const Run spec_run = generate(*e, prompt, p);
    INFO(c.arch << " " << traits(c.type).name << ": drafted " << spec_run.stats.n_drafted << ", accepted "
                << spec_run.stats.n_draft_accepted);
    CHECK(spec_run.tokens == plain.tokens);
    REQUIRE(spec_run.logits.size() == plain.logits.size());
    for (size_t i = 0; i < plain.logits.size(); ++i) {
      INFO("step " << i);
      CHECK(spec_run.logits[i] == plain.logits[i]);
    }
    CHECK(spec_run.stats.n_drafted > 0);
    CHECK(spec_run.stats.n_draft_accepted > 0);
    CHECK(spec_run.stats.n_generated == 48);
    n_rejected += spec_run.stats.n_drafted - spec_run.stats.n_draft_accepted;
  }
  CHECK(n_rejected > 0);
}

// [many-runs]: 8000 generations, 129 s under qemu; the neon stage leaves it out (it tests
// the sampler's logic, not a kernel set, and runs on every other build).
TEST_CASE("speculation: sampled output keeps the distribution of sampling without it", "[speculative][many-runs]") {
  const test::TinyModel m = test::build_tiny_model({});
  const auto e = engine_of(m, 4);
  // Token frequencies at each of the first generated positions, over many seeds.
  const auto frequencies = [&](int lookup, int n_runs, GenerationStats& total) {
    std::vector<std::map<TokenId, int>> at(4);
    for (int seed = 0; seed < n_runs; ++seed) {
      GenerateParams p;
      p.max_tokens = 4;
      p.stop_on_eog = false;
      // The tiny model's logits are steep: at 8 about half the drafts are accepted.
      p.sampler.temperature = 8.0f;
      p.sampler.top_k = 0;
      p.sampler.top_p = 1;
      p.sampler.min_p = 0;
      p.sampler.seed = static_cast<uint64_t>(seed);
      p.lookup_ngram = lookup;
      const Run r = generate(*e, kPrompt, p);
      for (size_t i = 0; i < r.tokens.size(); ++i) ++at[i][r.tokens[i]];
      total.n_drafted += r.stats.n_drafted;
      total.n_draft_accepted += r.stats.n_draft_accepted;
    }
    return at;
  };
  constexpr int kRuns = 4000;
  GenerationStats plain_stats, spec_stats;
  const auto plain = frequencies(0, kRuns, plain_stats);
  const auto spec = frequencies(2, kRuns, spec_stats);
  INFO("drafted " << spec_stats.n_drafted << ", accepted " << spec_stats.n_draft_accepted);
  CHECK(spec_stats.n_drafted > kRuns / 4);  // drafts start at one token
  CHECK(spec_stats.n_draft_accepted > kRuns / 10);
  CHECK(spec_stats.n_draft_accepted < spec_stats.n_drafted);  // rejections happen too
  for (size_t i = 1; i < 4; ++i) {
    // Total variation distance between the two empirical distributions: sampling noise
    // at 3000 runs measured 0.037-0.046; a rule that kept every draft would move about
    // half the runs (the rejected drafts' share) onto the drafted tokens.
    std::map<TokenId, int> ids = plain[i];
    for (const auto& [id, n] : spec[i]) ids[id] += 0;
    double tv = 0;
    for (const auto& entry : ids) {
      const TokenId id = entry.first;  // (clang 14 lambdas cannot capture a structured binding)
      const auto count = [&](const std::map<TokenId, int>& f) {
        const auto it = f.find(id);
        return it == f.end() ? 0.0 : it->second / static_cast<double>(kRuns);
      };
      tv += std::abs(count(plain[i]) - count(spec[i])) / 2;
    }
    INFO("position " << i << ": total variation " << tv);
    CHECK(tv < 0.09);
  }
}

TEST_CASE("sample_draft: greedy is the argmax; sampled keeps the draft with its probability", "[speculative]") {
  SamplerParams greedy;
  greedy.temperature = 0;
  Sampler g(greedy);
  std::vector<float> logits = {0.1f, 2.0f, 1.0f};
  bool accepted = false;
  CHECK(g.sample_draft(logits, 1, accepted) == 1);
  CHECK(accepted);
  logits = {0.1f, 2.0f, 1.0f};
  CHECK(g.sample_draft(logits, 2, accepted) == 1);
  CHECK_FALSE(accepted);

  // p = softmax(0, log 3) = (1/4, 3/4): the draft 0 is kept a quarter of the time, and a
  // rejection never gives it.
  SamplerParams sp;
  sp.temperature = 1;
  sp.top_k = 0;
  sp.top_p = 1;
  sp.min_p = 0;
  int kept = 0;
  constexpr int kN = 20000;
  for (int seed = 0; seed < kN; ++seed) {
    sp.seed = static_cast<uint64_t>(seed);
    Sampler s(sp);
    std::vector<float> l = {0.0f, std::log(3.0f)};
    const int32_t id = s.sample_draft(l, 0, accepted);
    CHECK((id == 0) == accepted);
    kept += accepted;
  }
  CHECK(kept / static_cast<double>(kN) == Approx(0.25).margin(0.01));

  // Over four tokens, what sample_draft gives (draft or not) is distributed as sample().
  std::vector<float> base = {1.0f, 0.2f, -0.5f, 0.7f};
  std::vector<int> from_sample(4), from_draft(4);
  for (int seed = 0; seed < kN; ++seed) {
    sp.seed = static_cast<uint64_t>(seed);
    Sampler a(sp), b(sp);
    std::vector<float> l1 = base, l2 = base;
    ++from_sample[a.sample(l1)];
    ++from_draft[b.sample_draft(l2, 3, accepted)];
  }
  double z = 0;
  for (const float l : base) z += std::exp(l);
  for (int t = 0; t < 4; ++t) {
    INFO("token " << t);
    const double p = std::exp(base[t]) / z;
    CHECK(from_sample[t] / static_cast<double>(kN) == Approx(p).margin(0.012));
    CHECK(from_draft[t] / static_cast<double>(kN) == Approx(p).margin(0.012));
  }
}

TEST_CASE("speculation needs an engine with draft rows; the draft length fits the batch", "[speculative]") {
  const test::TinyModel m = test::build_tiny_model({});
  const auto e = engine_of(m, 0);
  GenerateParams p;
  p.max_tokens = 8;
  p.lookup_ngram = 2;
  std::unique_ptr<Session> s = e->new_session();
  CHECK_THROWS_WITH(s->generate(kPrompt, p, nullptr),
                    "prompt lookup needs an engine with a draft length (EngineOptions::n_draft > 0)");
  EngineOptions o;
  o.n_batch = 4;
  o.n_draft = 4;
  CHECK_THROWS_WITH(Engine::load(m.store(), o), "draft length must be in [0, batch size 4), got 4");
}

TEST_CASE("draft model: greedy output unchanged; an identical draft is always accepted", "[speculative]") {
  test::TinySpec spec;
  spec.matrix_type = GgmlType::Q8_0;
  const test::TinyModel m = test::build_tiny_model(spec);
  const auto e = engine_of(m, 4);
  const std::vector<TokenId> prompt = {1, 7, 8, 9, 7, 8, 9, 7, 8};
  GenerateParams p;
  p.max_tokens = 40;
  p.sampler.temperature = 0;
  p.sampler.repeat_penalty = 3.0f;
  p.sampler.penalty_last_n = 3;
  p.stop_on_eog = false;
  const Run plain = generate(*e, prompt, p);

  // The same weights as the draft: every draft stands. Other weights: some do not.
  test::TinySpec other_spec = spec;
  other_spec.seed = 9;
  const test::TinyModel other = test::build_tiny_model(other_spec);
  for (const test::TinyModel* dm : {&m, &other}) {
    const auto draft_engine = engine_of(*dm, 0);
    check_draft_vocabulary(*e, *draft_engine);
    std::unique_ptr<Session> draft_session = draft_engine->new_session();
    DraftModel drafter(*draft_session, 4);
    GenerateParams with = p;
    with.drafter = &drafter;
    const Run r = generate(*e, prompt, with);
    INFO((dm == &m ? "same" : "other") << " weights: drafted " << r.stats.n_drafted << ", accepted "
                                        << r.stats.n_draft_accepted);
    CHECK(r.tokens == plain.tokens);
    REQUIRE(r.logits.size() == plain.logits.size());
    for (size_t i = 0; i < plain.logits.size(); ++i) CHECK(r.logits[i] == plain.logits[i]);
    CHECK(r.stats.n_drafted > 10);
    // The drafts are the draft model's argmax; the penalties move some of the model's choices.
    CHECK(r.stats.n_draft_accepted < r.stats.n_drafted);
    if (dm == &m) {
      // Without penalties the same weights choose what they drafted: all stand.
      GenerateParams bare = with;
      bare.sampler.repeat_penalty = 1.0f;
      GenerateParams bare_plain = bare;
      bare_plain.drafter = nullptr;
      const Run all = generate(*e, prompt, bare);
      CHECK(all.tokens == generate(*e, prompt, bare_plain).tokens);
      CHECK(all.stats.n_drafted > 10);
      CHECK(all.stats.n_draft_accepted == all.stats.n_drafted);
    }
  }
}

TEST_CASE("draft model: another vocabulary is refused naming the difference", "[speculative]") {
  const test::TinyModel m = test::build_tiny_model({});
  test::TinySpec bigger;
  bigger.n_vocab = 48;
  const test::TinyModel b = test::build_tiny_model(bigger);
  const auto e = engine_of(m, 4);
  const auto d = engine_of(b, 0);
  CHECK_THROWS_WITH(check_draft_vocabulary(*e, *d),
                    "the draft model's vocabulary has 48 tokens, the model's 40: a draft model must share the vocabulary");
}

}  // namespace runnel

