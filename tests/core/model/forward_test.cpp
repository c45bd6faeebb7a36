// The llama-family forward pass against the float reference in tiny_model.cpp.
#include <catch2/catch.hpp>

#include "core/runtime/engine.h"
#include "kernels/kernels.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

using test::TinySpec;

const std::vector<int32_t> kTokens = {1, 7, 22, 3, 39, 15, 15, 8, 30};

std::unique_ptr<Engine> load_tiny(const test::TinyModel& m, int n_batch = 64,
                                  std::shared_ptr<Parallel> par = nullptr) {
  EngineOptions o;
  o.n_ctx = 32;
  o.n_batch = n_batch;
  o.all_logits = true;
  o.parallel = std::move(par);
  return Engine::load(m.store(), o);
}

// Prefill of all tokens at once, every position's logits.
std::vector<float> prefill_logits(const test::TinyModel& m, int n_batch = 64,
                                  std::shared_ptr<Parallel> par = nullptr) {
  std::unique_ptr<Engine> e = load_tiny(m, n_batch, std::move(par));
  return e->new_session()->eval_all(kTokens);
}

// One token per eval (the decode path), each position's logits.
std::vector<float> decode_logits(const test::TinyModel& m) {
  std::unique_ptr<Engine> e = load_tiny(m);
  std::unique_ptr<Session> s = e->new_session();
  std::vector<float> all;
  for (int32_t t : kTokens) {
    const std::span<float> logits = s->eval(std::span<const int32_t>(&t, 1));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

// Runs tasks in reverse order and claims several threads: exposes any dependence of
// the results on how work is split or scheduled.
class ReverseParallel : public Parallel {
 public:
  explicit ReverseParallel(int n) : n_(n) {}
  int n_threads() const override { return n_; }
  void run(int n_tasks, const std::function<void(int)>& fn) override {
    max_tasks = std::max(max_tasks, n_tasks);
    for (int t = n_tasks - 1; t >= 0; --t) fn(t);
  }
  int max_tasks = 0;

 private:
  int n_;
};

// The reference mirrors the f16 cache, so only float summation order separates the two
// (measured ~1e-7); 1e-4 leaves room for SIMD kernels and still catches any real slip.
void check_against_reference(const TinySpec& spec, double tolerance = 1e-4) {
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<float> ref = test::reference_logits(m, kTokens);
  const std::vector<float> prefill = prefill_logits(m);
  REQUIRE(prefill.size() == kTokens.size() * spec.n_vocab);
  CHECK(test::max_relative_error(prefill, ref) < tolerance);
  const std::vector<float> decode = decode_logits(m);
  // On ref, the same operations in the same order for each token: prefill and decode
  // agree closely. A SIMD table (RUNNEL_ISA) takes its f32 prompt tiles for prefill,
  // which sum in another order (measured 1.3e-5 on avx2).
  const bool on_ref = &kernels() == &ref_kernels();
  CHECK(test::max_relative_error(decode, prefill) < (on_ref ? 1e-5 : 1e-4));
}

}  // namespace

TEST_CASE("llama forward matches the float reference (GQA, tied output)", "[model]") {
  TinySpec spec;  // 4 query heads over 2 kv heads
  check_against_reference(spec);
}

TEST_CASE("llama forward with one kv head and with full multi-head attention", "[model]") {
  TinySpec spec;
  SECTION("n_head_kv 1") {
    spec.n_head_kv = 1;
  }
  SECTION("n_head_kv = n_head") {
    spec.n_head_kv = spec.n_head;
  }
  check_against_reference(spec);
}

TEST_CASE("llama forward with an untied output matrix", "[model]") {
  TinySpec spec;
  spec.tied = false;
  spec.seed = 7;
  check_against_reference(spec);
}

TEST_CASE("qwen2 forward: q/k/v biases and neox rope", "[model]") {
  TinySpec spec;
  spec.arch = "qwen2";
  spec.seed = 3;
  check_against_reference(spec);
}

TEST_CASE("llama3-style rope_freqs and partial rotary dims", "[model]") {
  TinySpec spec;
  spec.rope_freqs = true;
  spec.n_rot = 8;  // of a head size of 16
  spec.seed = 11;
  check_against_reference(spec);
}

TEST_CASE("qwen3 forward: q/k norms per head, neox rope, no biases", "[model]") {
  TinySpec spec;
  spec.arch = "qwen3";
  spec.seed = 5;
  check_against_reference(spec);
}

TEST_CASE("gemma forward: scaled embeddings, GELU feed-forward, tied output", "[model]") {
  TinySpec spec;
  spec.arch = "gemma";
  spec.tied = false;  // gemma reads the embedding as the lm_head even when output.weight exists
  spec.seed = 9;
  check_against_reference(spec);
}

TEST_CASE("gemma2 forward: post norms, soft-capped scores and logits, sliding layers", "[model]") {
  TinySpec spec;
  spec.arch = "gemma2";
  spec.n_swa = 4;  // of 9 tokens: later positions lose their first keys on even layers
  spec.attn_softcap = 2.0f;
  spec.final_softcap = 3.0f;
  spec.seed = 13;
  check_against_reference(spec);
}

TEST_CASE("gemma3 forward: q/k norms, post norms, local layers with their own rope base", "[model]") {
  TinySpec spec;
  spec.arch = "gemma3";
  spec.n_layer = 3;
  spec.n_embd = 128;  // heads of 32: whole Q8_0 blocks for the q8_0 cache below
  spec.n_swa = 3;
  spec.swa_period = 3;  // layers 0, 1 slide; layer 2 is global
  spec.rope_base = 1e6f;
  spec.seed = 17;
  check_against_reference(spec);
  SECTION("and with a q8_0 cache") {
    const test::TinyModel m = test::build_tiny_model(spec);
    EngineOptions o;
    o.n_ctx = 32;
    o.all_logits = true;
    o.kv_type = GgmlType::Q8_0;
    const std::vector<float> q8 = Engine::load(m.store(), o)->new_session()->eval_all(kTokens);
    // Keys and values rounded to Q8_0 blocks instead of f16.
    CHECK(test::max_relative_error(q8, test::reference_logits(m, kTokens)) < 2e-2);
  }
}

TEST_CASE("llama with a sliding window (Mistral v0.1 style): every layer slides", "[model]") {
  TinySpec spec;
  spec.n_swa = 3;
  spec.seed = 19;
  check_against_reference(spec);
}

TEST_CASE("the reference would notice a missing window, norm or soft-cap", "[model]") {
  // Guards the guard: the features above change the logits by far more than the
  // tolerance, so leaving one out in the engine fails the checks.
  TinySpec spec;
  spec.arch = "gemma2";
  spec.n_swa = 4;
  spec.attn_softcap = 2.0f;
  spec.final_softcap = 3.0f;
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<float> engine = prefill_logits(m);
  for (int variant = 0; variant < 3; ++variant) {
    test::TinyModel other = m;
    if (variant == 0) other.spec.n_swa = 100;
    if (variant == 1) other.spec.attn_softcap = 0.0f;
    if (variant == 2) other.spec.arch = "gemma";  // no post norms, no window
    CHECK(test::max_relative_error(engine, test::reference_logits(other, kTokens)) > 1e-3);
  }
}

TEST_CASE("the reference would notice a wrong rope style or missing bias", "[model]") {
  // Guards the guard: a qwen2 model's logits differ from a llama reading of its
  // weights by far more than the tolerance, so the checks above can fail.
  TinySpec spec;
  spec.arch = "qwen2";
  const test::TinyModel qwen = test::build_tiny_model(spec);
  test::TinyModel as_llama = qwen;
  as_llama.spec.arch = "llama";
  const std::vector<float> engine = prefill_logits(qwen);
  CHECK(test::max_relative_error(engine, test::reference_logits(as_llama, kTokens)) > 1e-2);
}

TEST_CASE("quantized weights: Q8_0 matrices and a Q4_1 embedding", "[model]") {
  TinySpec spec;
  spec.matrix_type = GgmlType::Q8_0;
  spec.embd_type = GgmlType::Q4_1;
  spec.n_ff = 128;  // rows of ffn_down must be whole Q8_0 blocks
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<float> ref = test::reference_logits(m, kTokens);
  // Activations are quantized to Q8_0 (about 0.4% per element), so the bound is looser.
  CHECK(test::max_relative_error(prefill_logits(m), ref) < 2e-2);
}

TEST_CASE("batches split into chunks and tasks in any order give the same logits", "[model]") {
  TinySpec spec;
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<float> whole = prefill_logits(m);
  SECTION("batch of 4 (three chunks)") {
    CHECK(test::max_relative_error(prefill_logits(m, 4), whole) < 1e-6);
  }
  SECTION("three tasks run in reverse") {
    auto par = std::make_shared<ReverseParallel>(3);
    CHECK(test::max_relative_error(prefill_logits(m, 64, par), whole) < 1e-6);
    CHECK(par->max_tasks == 3 * kTasksPerThread);
  }
}

}  // namespace runnel
