// The llama-family forward pass against the float reference in tiny_model.cpp.
#include <catch2/catch.hpp>
#include <map>

#include "core/runtime/engine.h"
#include "kernels/kernels.h"
#include "tests/core/model/repacked_check.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

using test::TinySpec;

const std::vector<int32_t> kTokens = {1, 7, 22, 3, 39, 15, 15, 8, 30};

std::unique_ptr<Engine> load_tiny(const test::TinyModel& m, int n_batch = 64,
                                  std::shared_ptr<Parallel> par = nullptr, int n_ctx = 32) {
  EngineOptions o;
  o.n_ctx = n_ctx;
  o.n_batch = n_batch;
  o.all_logits = true;
  o.parallel = std::move(par);
  return Engine::load(m.store(), o);
}

// Prefill of all tokens at once, every position's logits.
std::vector<float> prefill_logits(const test::TinyModel& m, int n_batch = 64,
                                  std::shared_ptr<Parallel> par = nullptr, int n_ctx = 32) {
  std::unique_ptr<Engine> e = load_tiny(m, n_batch, std::move(par), n_ctx);
  return e->new_session()->eval_all(kTokens);
}

// One token per eval (the decode path), each position's logits.
std::vector<float> decode_logits(const test::TinyModel& m, int n_ctx = 32) {
  std::unique_ptr<Engine> e = load_tiny(m, 64, nullptr, n_ctx);
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
// n_ctx: the session's context (phi3's LongRoPE picks its factors by it).
void check_against_reference(const TinySpec& spec, double tolerance = 1e-4, int n_ctx = 32) {
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<float> ref = test::reference_logits(m, kTokens, n_ctx);
  const std::vector<float> prefill = prefill_logits(m, 64, nullptr, n_ctx);
  REQUIRE(prefill.size() == kTokens.size() * spec.n_vocab);
  CHECK(test::max_relative_error(prefill, ref) < tolerance);
  const std::vector<float> decode = decode_logits(m, n_ctx);
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

TEST_CASE("a sliding layer's cache keeps only its window: slides back, resumes, matches", "[model]") {
  TinySpec spec;
  spec.arch = "gemma3";
  spec.n_layer = 3;
  spec.n_swa = 3;
  spec.swa_period = 3;
  spec.seed = 23;
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<int32_t> tokens = {1, 7, 22, 3, 39, 15, 15, 8, 30, 4, 11, 26, 9, 18, 33, 5, 21};
  const std::vector<float> ref = test::reference_logits(m, tokens);
  EngineOptions o;
  o.n_ctx = 32;
  o.n_batch = 2;  // sliding layers keep 2 * 3 + 1 = 7 slots of the 32
  o.all_logits = true;
  std::unique_ptr<Engine> e = Engine::load(m.store(), o);
  std::unique_ptr<Session> s = e->new_session();
  CHECK(s->kv_cache().cells(0) == 7);
  CHECK(s->kv_cache().cells(2) == 32);  // the global layer keeps everything
  CHECK(test::max_relative_error(s->eval_all(tokens), ref) < 1e-4);
  CHECK(s->kv_cache().first_pos(0) > 0);  // it slid back
  // Resuming at 15 needs positions 13, 14: still held; the next logits are the reference's.
  s->rewind(15);
  CHECK(s->position() == 15);
  std::vector<float> at15 = s->eval_all(std::span<const int32_t>(&tokens[15], 1));
  CHECK(test::max_relative_error(at15, std::vector<float>(ref.begin() + 15 * spec.n_vocab,
                                                          ref.begin() + 16 * spec.n_vocab)) < 1e-4);
  // Resuming at 4 needs positions 2, 3, long dropped: the session starts over.
  s->rewind(4);
  CHECK(s->position() == 0);
  CHECK(test::max_relative_error(s->eval_all(tokens), ref) < 1e-4);
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

// Phi-3.5 style: fused qkv and gate-up, LongRoPE factors with their cos/sin scale, and a
// sliding_window key that llama.cpp (and so runnel) ignores for phi3.
TinySpec phi3_spec() {
  TinySpec spec;
  spec.arch = "phi3";
  spec.n_ctx_train = 64;
  spec.n_ctx_orig = 16;
  spec.longrope = true;
  spec.rope_attn_factor = 1.2247449f;  // sqrt(1 + ln(64 / 16) / ln(16)), as converters write it
  spec.n_swa = 4;                      // of 9 tokens: would drop keys if it were honoured
  spec.tied = false;
  spec.seed = 23;
  return spec;
}

TEST_CASE("phi3 forward: fused qkv and gate-up, LongRoPE short and long factors", "[model]") {
  const TinySpec spec = phi3_spec();
  SECTION("a session within the original context: short factors") {
    check_against_reference(spec, 1e-4, 16);
  }
  SECTION("a session beyond it: long factors") {
    check_against_reference(spec, 1e-4, 32);
  }
}

TEST_CASE("phi3 forward: separate q, k, v, no LongRoPE factors, tied output", "[model]") {
  TinySpec spec;
  spec.arch = "phi3";
  spec.fused_qkv = false;
  spec.n_rot = 8;  // partial rotary, as Phi-4-mini
  spec.seed = 29;
  check_against_reference(spec);
}

TEST_CASE("the reference would notice swapped LongRoPE factors, fused parts or the rope scale",
          "[model]") {
  // Guards the guard: each mistake moves the logits by far more than the tolerance.
  const test::TinyModel m = test::build_tiny_model(phi3_spec());
  const std::vector<float> engine_short = prefill_logits(m, 64, nullptr, 16);
  CHECK(test::max_relative_error(engine_short, test::reference_logits(m, kTokens, 32)) > 1e-3);
  test::TinyModel unscaled = m;
  unscaled.spec.rope_attn_factor = 0.0f;
  CHECK(test::max_relative_error(engine_short, test::reference_logits(unscaled, kTokens, 16)) > 1e-3);
  // The gate rows first: the same weights read up-then-gate give other logits.
  test::TinyModel swapped = m;
  for (int l = 0; l < m.spec.n_layer; ++l) {
    std::vector<float>& up = swapped.weights.at("blk." + std::to_string(l) + ".ffn_up.weight");
    std::rotate(up.begin(), up.begin() + static_cast<std::ptrdiff_t>(up.size() / 2), up.end());
  }
  CHECK(test::max_relative_error(engine_short, test::reference_logits(swapped, kTokens, 16)) > 1e-3);
}

// A SpanStore that offers copy_space, so the load repacks resident matrices (x8).
class CopyStore : public SpanStore {
 public:
  using SpanStore::SpanStore;
  uint8_t* copy_space(const GgufTensorInfo& t, size_t n_bytes) override {
    std::vector<uint8_t>& v = copies[t.name];
    v.assign(n_bytes, 0xCD);
    return v.data();
  }
  std::map<std::string, std::vector<uint8_t>> copies;
};

TEST_CASE("phi3's fused matrices repacked (x8): row ranges of whole groups, kept when a part is cut",
          "[model][x8]") {
  int n_checked = 0;
  for (const char* isa : {"avx2", "avx512", "neon", "simd128"}) {
    const test::SelectIsa selected(isa);
    if (!selected.ok || !kernels().of(GgmlType::Q8_0).repack_x8) continue;
    for (bool aligned : {true, false}) {
      INFO("kernels " << isa << (aligned ? ", parts on whole groups" : ", k and v of 4 rows"));
      TinySpec spec = phi3_spec();
      spec.matrix_type = GgmlType::Q8_0;
      spec.n_ff = 128;  // rows of ffn_down: whole Q8_0 blocks
      if (!aligned) {
        spec.n_head = 16;  // head size 4: k and v parts of 4 rows, attn_qkv 72 rows
        spec.n_head_kv = 1;
      }
      const test::TinyModel m = test::build_tiny_model(spec);
      std::vector<GgufFile> files;
      files.push_back(GgufFile::parse(m.bytes, "tiny.gguf"));
      auto store = std::make_unique<CopyStore>(GgufModel::join(std::move(files)),
                                               std::vector<std::span<const uint8_t>>{m.bytes});
      const CopyStore* copies = store.get();
      EngineOptions o;
      o.n_ctx = 32;
      o.all_logits = true;
      std::unique_ptr<Engine> e = Engine::load(std::move(store), o);
      // attn_qkv (when its parts start on whole groups), attn_output, ffn_up, ffn_down; output
      CHECK(copies->copies.size() == (aligned ? 4u : 3u) * spec.n_layer + 1);
      CHECK(copies->copies.count("blk.0.attn_qkv.weight") == (aligned ? 1u : 0u));
      const std::vector<float> repacked = e->new_session()->eval_all(kTokens);
      // Activations are quantized to Q8_0, as in the Q8_0 test below.
      CHECK(test::max_relative_error(repacked, test::reference_logits(m, kTokens, 32)) < 2e-2);
      CHECK(test::max_relative_error(repacked, prefill_logits(m)) < 2e-2);
      ++n_checked;
    }
  }
#if defined(__x86_64__)
  CHECK(n_checked >= 2);
#endif
}

// YaRN on a 4096-token original context stretched 4x: with n_rot 16 and base 10000 pairs
// 0-1 keep their angles, 2-5 ramp, 6-7 are scaled, and cos/sin grow by 1 + 0.1 ln 4.
TinySpec yarn_spec(const std::string& arch) {
  TinySpec spec;
  spec.arch = arch;
  spec.n_ctx_train = 16384;
  spec.rope_scaling = "yarn";
  spec.rope_factor = 4.0f;
  spec.n_ctx_orig = 4096;
  spec.seed = 31;
  return spec;
}

TEST_CASE("yarn rope scaling on llama and qwen3", "[model]") {
  SECTION("llama") {
    check_against_reference(yarn_spec("llama"));
  }
  SECTION("qwen3, with rope.scaling.attn_factor") {
    TinySpec spec = yarn_spec("qwen3");
    spec.rope_attn_factor = 0.9f;
    check_against_reference(spec);
  }
  SECTION("the reference would notice plain linear scaling instead") {
    const test::TinyModel m = test::build_tiny_model(yarn_spec("llama"));
    test::TinyModel linear = m;
    linear.spec.rope_scaling = "linear";
    CHECK(test::max_relative_error(prefill_logits(m), test::reference_logits(linear, kTokens)) > 1e-3);
  }
}

TEST_CASE("mixture of experts: Mixtral, qwen2moe, qwen3moe, olmoe and gpt-oss match the float reference",
          "[model]") {
  TinySpec spec;
  spec.n_expert = 8;
  spec.n_expert_used = 2;
  SECTION("llama with experts (Mixtral): renormalized weights") {
    spec.n_expert = 4;
    spec.seed = 21;
  }
  SECTION("qwen2moe: biases, unnormalized weights, a gated shared expert") {
    spec.arch = "qwen2moe";
    spec.n_ff_exp = 32;
    spec.n_ff_shexp = 48;
    spec.seed = 22;
  }
  SECTION("qwen3moe: q/k norms per head, 3 of 8 experts, renormalized") {
    spec.arch = "qwen3moe";
    spec.n_expert_used = 3;
    spec.n_ff_exp = 32;
    spec.seed = 23;
  }
  SECTION("gpt-oss: sinks, biases, alternating sliding layers, top-k logits then softmax, clamped SwiGLU") {
    spec.arch = "gpt-oss";
    spec.n_layer = 3;
    spec.n_swa = 4;  // the 9 tokens cross it
    spec.n_ff_exp = 32;
    spec.n_expert_used = 3;
    spec.seed = 25;
  }
  SECTION("olmoe: q/k norms over whole rows, multi-head attention") {
    spec.arch = "olmoe";
    spec.n_head_kv = spec.n_head;
    spec.n_ff = 48;
    spec.seed = 24;
  }
  check_against_reference(spec);
}

TEST_CASE("mixture of experts with k-quant experts: repacked stacks, routed decode, batched prompt", "[model]") {
  TinySpec spec;
  spec.arch = "qwen3moe";
  spec.n_embd = 256;  // whole k-quant super-blocks
  spec.n_head = 4;
  spec.n_ff = 256;
  spec.n_expert = 8;
  spec.n_expert_used = 2;
  spec.n_ff_exp = 256;
  spec.matrix_type = GgmlType::Q4_K;
  spec.seed = 26;
  const test::TinyModel m = test::build_tiny_model(spec);
  const std::vector<float> ref = test::reference_logits(m, kTokens);
  // Q8_K activations (about 0.4% an element), as the quantized test above
  CHECK(test::max_relative_error(prefill_logits(m), ref) < 2e-2);
  CHECK(test::max_relative_error(decode_logits(m), ref) < 2e-2);
}

TEST_CASE("the reference would notice missing attention sinks", "[model]") {
  TinySpec spec;
  spec.arch = "gpt-oss";
  spec.n_expert = 8;
  spec.n_expert_used = 2;
  spec.n_ff_exp = 32;
  spec.n_swa = 4;
  spec.seed = 25;
  const test::TinyModel m = test::build_tiny_model(spec);
  test::TinyModel no_sinks = m;
  for (int l = 0; l < spec.n_layer; ++l) {
    for (float& v : no_sinks.weights["blk." + std::to_string(l) + ".attn_sinks.weight"]) v = -1e30f;
  }
  CHECK(test::max_relative_error(test::reference_logits(no_sinks, kTokens), test::reference_logits(m, kTokens)) >
        1e-2);
}

TEST_CASE("the reference would notice a wrong number of experts a token", "[model]") {
  TinySpec spec;
  spec.arch = "qwen3moe";
  spec.n_expert = 8;
  spec.n_expert_used = 3;
  spec.n_ff_exp = 32;
  spec.seed = 23;
  const test::TinyModel m = test::build_tiny_model(spec);
  test::TinyModel fewer = m;
  fewer.spec.n_expert_used = 2;
  CHECK(test::max_relative_error(test::reference_logits(fewer, kTokens), test::reference_logits(m, kTokens)) > 1e-2);
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
