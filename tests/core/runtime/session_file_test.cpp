// Session files: save/restore continues exactly like an uninterrupted run; files from
// another model, another KV type, truncated or altered ones are refused by name.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <set>

#include "core/runtime/session_file.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

std::unique_ptr<Engine> engine_of(const test::TinyModel& m, GgmlType kv = GgmlType::F16) {
  EngineOptions o;
  o.n_ctx = 64;
  o.n_batch = 8;
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

// Sampled (the tiny model's greedy text repeats one token): same seed, same tokens.
GenerateParams sampled(int n) {
  GenerateParams p = greedy(n);
  p.sampler.temperature = 1.5f;
  p.sampler.top_k = 0;
  p.sampler.top_p = 1;
  p.sampler.min_p = 0;
  p.sampler.seed = 3;
  return p;
}

std::string error_of(Session& s, const std::vector<uint8_t>& bytes, uint64_t fp) {
  try {
    restore_session(s, bytes, fp, "t.session");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("session file: restore continues like an uninterrupted run", "[session]") {
  test::TinySpec spec;
  spec.n_embd = 128;
  spec.n_head = 4;
  spec.n_ff = 160;
  const test::TinyModel m = test::build_tiny_model(spec);
  for (GgmlType kv : {GgmlType::F16, GgmlType::Q8_0}) {
    INFO(kv_type_name(kv));
    auto engine = engine_of(m, kv);
    const uint64_t fp = model_fingerprint(engine->store().model());
    const std::vector<TokenId> prompt = {1, 5, 9, 30, 12};
    // Uninterrupted: prompt, 10 tokens, then 10 more.
    auto whole = engine->new_session();
    whole->generate(prompt, sampled(10), nullptr);
    std::vector<float> whole_logits, restored_logits;
    GenerateParams cont = sampled(10);
    cont.on_logits = [&](int step, std::span<const float> l) {
      if (step == 0) whole_logits.assign(l.begin(), l.end());
    };
    whole->generate({}, cont, nullptr);
    // Interrupted: save after the first 10 (to a file), restore into a new session.
    auto first = engine->new_session();
    first->generate(prompt, sampled(10), nullptr);
    const std::string path = "session_file_test.session";
    save_session_file(path, *first, fp);
    auto second = engine->new_session();
    REQUIRE(load_session_file(path, *second, fp));
    CHECK(second->n_evaluated() == first->n_evaluated());
    CHECK(second->tokens() == first->tokens());
    cont.on_logits = [&](int step, std::span<const float> l) {
      if (step == 0) restored_logits.assign(l.begin(), l.end());
    };
    second->generate({}, cont, nullptr);
    CHECK(second->tokens() == whole->tokens());
    // The restored cache is the very cache: the next logits are bit-identical.
    REQUIRE(!whole_logits.empty());
    CHECK(restored_logits == whole_logits);
    // Control: the same tokens over an empty cache give other logits.
    // every layer from position 0 (a u32 0 each), then zero rows
    std::vector<uint8_t> zeros(static_cast<size_t>(first->n_evaluated()) * first->kv_cache().position_bytes() +
                               first->kv_cache().n_layer() * sizeof(uint32_t));
    auto blank = engine->new_session();
    blank->restore(first->tokens(), first->n_evaluated(), zeros.data(), zeros.size());
    std::vector<float> blank_logits;
    cont.on_logits = [&](int step, std::span<const float> l) {
      if (step == 0) blank_logits.assign(l.begin(), l.end());
    };
    blank->generate({}, cont, nullptr);
    CHECK(blank_logits != whole_logits);
    std::remove(path.c_str());
    CHECK(!load_session_file(path, *second, fp));  // absent: nothing restored
  }
}

TEST_CASE("session file: damaged and foreign files are refused", "[session]") {
  const test::TinyModel m = test::build_tiny_model({});
  auto engine = engine_of(m);
  const uint64_t fp = model_fingerprint(engine->store().model());
  auto s = engine->new_session();
  s->generate({1, 2, 3, 4}, greedy(4), nullptr);
  const std::vector<uint8_t> good = serialize_session(*s, fp);
  auto target = engine->new_session();
  CHECK(error_of(*target, good, fp) == "(no error)");
  CHECK(target->tokens() == s->tokens());
  CHECK(target->n_evaluated() == s->n_evaluated());

  std::vector<uint8_t> flipped = good;
  flipped[flipped.size() / 2] ^= 0x40;
  CHECK_THAT(error_of(*target, flipped, fp), Catch::Contains("checksum"));
  const std::vector<uint8_t> truncated(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() - 9));
  CHECK_THAT(error_of(*target, truncated, fp), Catch::Contains("damaged or truncated"));
  CHECK_THAT(error_of(*target, {'n', 'o', 'p', 'e'}, fp), Catch::Contains("bad magic"));
  CHECK_THAT(error_of(*target, good, fp + 1), Catch::Contains("another model"));

  // Another model's tiny GGUF has another fingerprint.
  test::TinySpec other_spec;
  other_spec.seed = 7;
  other_spec.n_vocab = 41;
  const test::TinyModel other = test::build_tiny_model(other_spec);
  auto other_engine = engine_of(other);
  CHECK(model_fingerprint(other_engine->store().model()) != fp);

  // Another KV type: the layouts differ, refused by name.
  test::TinySpec q_spec;
  q_spec.n_embd = 128;
  q_spec.n_head = 4;
  q_spec.n_ff = 160;
  const test::TinyModel qm = test::build_tiny_model(q_spec);
  auto f16_engine = engine_of(qm, GgmlType::F16);
  auto q8_engine = engine_of(qm, GgmlType::Q8_0);
  const uint64_t qfp = model_fingerprint(qm.store()->model());
  auto fs = f16_engine->new_session();
  fs->generate({1, 2}, greedy(2), nullptr);
  auto qs = q8_engine->new_session();
  CHECK_THAT(error_of(*qs, serialize_session(*fs, qfp), qfp), Catch::Contains("--kv-type q8_0"));
}

}  // namespace runnel
