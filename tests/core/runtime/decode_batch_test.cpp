// Continuous batching (DecodeBatch, GenerateParams::defer_prompt): several sessions
// decoded in one forward pass, and prompt chunks run in those passes, get, token for
// token and bit for bit, what each gets alone, on every kernel set, for plain and
// repacked products, sliding windows and experts.
#include <catch2/catch.hpp>

#include "core/runtime/engine.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

struct Trace {
  std::vector<TokenId> tokens;
  std::vector<std::vector<float>> logits;
};

GenerateParams greedy(Trace& t, int max_tokens) {
  GenerateParams p;
  p.max_tokens = max_tokens;
  p.sampler.temperature = 0;
  p.sampler.repeat_penalty = 3.0f;  // the tiny model would repeat one token
  p.sampler.penalty_last_n = 3;
  p.stop_on_eog = false;
  p.on_logits = [&t](int, std::span<const float> l) { t.logits.emplace_back(l.begin(), l.end()); };
  return p;
}

const std::vector<std::vector<TokenId>> kPrompts = {
    {1, 5, 6, 7}, {1, 9, 12, 30, 31, 4, 8, 22, 17, 3, 11}, {1, 20}, {1, 33, 34, 35, 36, 37, 38}};

struct Case {
  const char* arch;
  GgmlType type;
};

// An engine over a tiny model of the case: prompts of 4 to 11 tokens take one to three
// chunks of 4.
struct CaseEngine {
  explicit CaseEngine(const Case& c) : model(test::build_tiny_model(spec(c))) {
    EngineOptions o;
    o.n_ctx = 64;
    o.n_batch = 4;
    engine = Engine::load(model.store(), o);
  }
  static test::TinySpec spec(const Case& c) {
    test::TinySpec s;
    s.arch = c.arch;
    s.matrix_type = c.type;
    if (s.arch == "qwen3moe") {  // the sessions' tokens meet their experts together
      s.n_expert = 8;
      s.n_expert_used = 3;
      s.n_ff_exp = 32;
    }
    if (s.arch == "gemma3") {
      s.n_swa = 4;
      s.swa_period = 2;
    }
    if (c.type == GgmlType::Q4_K) s.n_embd = s.n_ff = 256;  // whole k-quant blocks
    return s;
  }
  test::TinyModel model;
  std::unique_ptr<Engine> engine;
};

// Each prompt's greedy generation in a session of its own.
std::vector<Trace> alone_traces(Engine& e, int n_tokens) {
  std::vector<Trace> alone(kPrompts.size());
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    auto s = e.new_session();
    s->generate(kPrompts[i], greedy(alone[i], n_tokens), nullptr);
    alone[i].tokens.assign(s->tokens().begin() + static_cast<std::ptrdiff_t>(kPrompts[i].size()), s->tokens().end());
  }
  return alone;
}

// The sessions' generated tokens and every step's logits equal the lone runs'.
void check_as_alone(const std::vector<Trace>& alone, std::vector<Trace>& together,
                    const std::vector<std::unique_ptr<Session>>& sessions) {
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    INFO("prompt " << i);
    const auto& s = sessions[i];
    together[i].tokens.assign(s->tokens().begin() + static_cast<std::ptrdiff_t>(kPrompts[i].size()), s->tokens().end());
    CHECK(together[i].tokens == alone[i].tokens);
    REQUIRE(together[i].logits.size() == alone[i].logits.size());
    for (size_t k = 0; k < alone[i].logits.size(); ++k) {
      INFO("step " << k);
      CHECK(together[i].logits[k] == alone[i].logits[k]);
    }
  }
}

// Starts prompt i's generation in a new session, its prompt deferred.
void start_deferred(Engine& e, size_t i, int n_tokens, std::vector<Trace>& traces,
                    std::vector<std::unique_ptr<Session>>& sessions, std::vector<std::unique_ptr<Generation>>& gens) {
  sessions.push_back(e.new_session());
  GenerateParams p = greedy(traces[i], n_tokens);
  p.defer_prompt = true;
  gens.push_back(sessions.back()->start(kPrompts[i], p));
}

}  // namespace

TEST_CASE("decode batch: sessions decoded together get the bits each gets alone", "[batch]") {
  for (const Case c : {Case{"llama", GgmlType::F32}, Case{"llama", GgmlType::Q4_0}, Case{"qwen2", GgmlType::Q8_0},
                       Case{"gemma3", GgmlType::Q5_0}, Case{"qwen3moe", GgmlType::Q8_0}}) {
    CaseEngine ce(c);
    Engine& e = *ce.engine;
    constexpr int kTokens = 20;
    INFO(c.arch << " " << traits(c.type).name);
    const std::vector<Trace> alone = alone_traces(e, kTokens);

    std::vector<Trace> together(kPrompts.size());
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<std::unique_ptr<Generation>> gens;
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      start_deferred(e, i, kTokens, together, sessions, gens);
      CHECK(sessions.back()->n_pending() == static_cast<int>(kPrompts[i].size()));
    }
    // Prompts a chunk at a time, round robin, as a scheduler would.
    for (bool more = true; more;) {
      more = false;
      for (auto& s : sessions) more = (s->n_pending() > 0 && s->eval_chunk() > 0) || more;
    }
    DecodeBatch batch(e, static_cast<int>(kPrompts.size()));
    std::string piece;
    for (int step = 0; step < kTokens; ++step) {
      std::vector<Session*> pending;
      for (auto& s : sessions) {
        if (s->n_pending() == 1) pending.push_back(s.get());
      }
      CHECK(static_cast<int>(pending.size()) == (step == 0 ? 0 : static_cast<int>(sessions.size())));
      batch.run(pending);
      for (auto& g : gens) g->step(piece);
    }
    check_as_alone(alone, together, sessions);
  }
}

TEST_CASE("decode batch: prompt chunks beside decoding sessions get the bits of their own passes", "[batch]") {
  // As the server's scheduler runs it: requests arrive two rounds apart, and each round
  // one chunk of one waiting prompt runs in the decoding sessions' pass.
  for (const Case c : {Case{"llama", GgmlType::F32}, Case{"llama", GgmlType::Q4_0}, Case{"qwen2", GgmlType::Q8_0},
                       Case{"gemma3", GgmlType::Q5_0}, Case{"llama", GgmlType::Q4_K}}) {
    CaseEngine ce(c);
    Engine& e = *ce.engine;
    constexpr int kTokens = 12;
    INFO(c.arch << " " << traits(c.type).name);
    const std::vector<Trace> alone = alone_traces(e, kTokens);

    DecodeBatch batch(e, static_cast<int>(kPrompts.size()));
    REQUIRE(batch.takes_prompts());
    std::vector<Trace> together(kPrompts.size());
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<std::unique_ptr<Generation>> gens;
    std::vector<int> steps(kPrompts.size(), 0);
    int mixed_passes = 0;
    std::string piece;
    for (int round = 0; round < 200; ++round) {
      if (round % 2 == 0 && sessions.size() < kPrompts.size()) start_deferred(e, sessions.size(), kTokens, together, sessions, gens);
      Session* prompt = nullptr;
      std::vector<Session*> pending;
      for (auto& s : sessions) {
        if (s->n_pending() > 1 && !prompt) prompt = s.get();
        if (s->n_pending() == 1) pending.push_back(s.get());
      }
      if (prompt && !pending.empty()) ++mixed_passes;
      if (prompt && pending.empty()) prompt->eval_chunk();
      else batch.run(pending, prompt);
      bool more = sessions.size() < kPrompts.size();
      for (size_t i = 0; i < sessions.size(); ++i) {
        if (sessions[i]->n_pending() == 0 && steps[i] < kTokens) {
          gens[i]->step(piece);
          ++steps[i];
        }
        more = more || steps[i] < kTokens;
      }
      if (!more) break;
    }
    CHECK(mixed_passes >= 4);
    check_as_alone(alone, together, sessions);
  }
}

TEST_CASE("decode batch: a mixture of experts takes no prompt chunk beside decoding sessions", "[batch]") {
  // Its products group the rows by expert across sessions, so a chunk's rows would not
  // get the bits of their own pass.
  CaseEngine ce({"qwen3moe", GgmlType::Q8_0});
  DecodeBatch batch(*ce.engine, 2);
  CHECK_FALSE(batch.takes_prompts());
  std::vector<Trace> traces(kPrompts.size());
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<Generation>> gens;
  start_deferred(*ce.engine, 1, 2, traces, sessions, gens);
  CHECK_THROWS_WITH(batch.run({}, sessions[0].get()), Catch::Contains("mixture of experts"));
  CHECK(sessions[0]->n_pending() == static_cast<int>(kPrompts[1].size()));
}

TEST_CASE("decode batch: refuses sessions without exactly one pending token", "[batch]") {
  const test::TinyModel m = test::build_tiny_model({});
  EngineOptions o;
  o.n_ctx = 32;
  auto e = Engine::load(m.store(), o);
  DecodeBatch batch(*e, 2);
  auto a = e->new_session();
  a->eval(std::vector<TokenId>{1, 5});
  Session* one[] = {a.get()};
  CHECK_THROWS_AS(batch.run(one), std::invalid_argument);  // nothing pending
  auto b = e->new_session(16);
  Session* small[] = {b.get()};
  CHECK_THROWS_AS(batch.run(small), std::invalid_argument);  // another context size
  Session* three[] = {a.get(), a.get(), a.get()};
  CHECK_THROWS_AS(batch.run(three), std::invalid_argument);  // more than its room
  // a prompt: more than one pending token, not also decoding
  a->eval(std::vector<TokenId>{7});
  CHECK_THROWS_AS(batch.run({}, a.get()), std::invalid_argument);  // none pending
  GenerateParams p;
  p.max_tokens = 2;
  p.defer_prompt = true;
  auto c = e->new_session();
  auto gen = c->start(std::vector<TokenId>{1, 9, 12}, p);
  Session* same[] = {c.get()};
  CHECK_THROWS_AS(batch.run(same, c.get()), std::invalid_argument);
}
}  // namespace runnel
