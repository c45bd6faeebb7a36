// The embedding models (bert, nomic-bert): Session::embed against the float reference
// in tiny_bert.h for each pooling, non-causal attention, normalization, and the
// refusals (unsupported pooling, missing or mis-shaped tensors, generation).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/runtime/engine.h"
#include "core/runtime/memory_plan.h"
#include "tests/core/model/tiny_bert.h"

namespace runnel {
namespace {

using test::TinyBertSpec;

const std::vector<int32_t> kTokens = {1, 7, 22, 3, 39, 15, 15, 8, 30, 2};

std::unique_ptr<Engine> load_bert(const test::TinyModel& m, int n_ctx = 0) {
  EngineOptions o;
  o.n_ctx = n_ctx;
  o.n_batch = 4;  // an embedding model's batch is its context whatever is asked
  return Engine::load(m.store(), o);
}

std::string load_error(const TinyBertSpec& spec) {
  const test::TinyModel m = test::build_tiny_bert(spec);
  try {
    load_bert(m);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(loaded)";
}

// max |a - b| / max |b|
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  return test::max_relative_error(a, b);
}

// The reference mirrors the f16 cache and the f16-rounded queries and probabilities,
// so only float summation order (and float LayerNorm / GELU) separates the two:
// measured <= 2e-7 (ref, avx2, avx512 kernels); 1e-4 catches any real slip (a missing
// bias or position row, causal attention, a wrong pooling all move it by > 1e-2).
void check_against_reference(const TinyBertSpec& spec) {
  const test::TinyModel m = test::build_tiny_bert(spec);
  std::unique_ptr<Engine> e = load_bert(m);
  const std::vector<float> ref = test::reference_embedding(m, spec, kTokens);
  std::unique_ptr<Session> s = e->new_session();
  const std::vector<float> raw = s->embed(kTokens, false);
  REQUIRE(raw.size() == static_cast<size_t>(spec.n_embd));
  CHECK(relative_error(raw, ref) < 1e-4);
  // normalized: the same vector at unit length
  const std::vector<float> unit = s->embed(kTokens);
  double norm = 0;
  for (const float v : ref) norm += static_cast<double>(v) * v;
  norm = std::sqrt(norm);
  std::vector<float> ref_unit(ref.size());
  for (size_t d = 0; d < ref.size(); ++d) ref_unit[d] = static_cast<float>(ref[d] / norm);
  CHECK(relative_error(unit, ref_unit) < 1e-4);
  CHECK(s->position() == 0);  // the session's history is left empty
}

}  // namespace

TEST_CASE("bert embeddings match the float reference for mean, cls and last pooling", "[model]") {
  TinyBertSpec spec;
  SECTION("mean") { spec.pooling_type = 1; }
  SECTION("cls") { spec.pooling_type = 2; }
  SECTION("last") { spec.pooling_type = 3; }
  SECTION("no token types") { spec.token_types = false; }
  check_against_reference(spec);
}

TEST_CASE("nomic-bert embeddings: fused qkv, rope, SwiGLU, no biases", "[model]") {
  TinyBertSpec spec;
  spec.arch = "nomic-bert";
  spec.seed = 5;
  SECTION("mean") { spec.pooling_type = 1; }
  SECTION("cls") { spec.pooling_type = 2; }
  check_against_reference(spec);
}

TEST_CASE("embedding models attend to the whole input unless attention.causal is true", "[model]") {
  TinyBertSpec spec;
  spec.pooling_type = 2;  // [CLS]: the first token, which sees later ones only without a mask
  std::vector<int32_t> other = kTokens;
  other.back() = 17;
  SECTION("non-causal (the converters' attention.causal = false)") {
    const test::TinyModel m = test::build_tiny_bert(spec);
    const std::unique_ptr<Engine> e = load_bert(m);
    std::unique_ptr<Session> s = e->new_session();
    CHECK(relative_error(s->embed(other, false), s->embed(kTokens, false)) > 1e-3);
  }
  SECTION("attention.causal true, or absent (llama.cpp's default)") {
    spec.causal = GENERATE(1, -1);
    const test::TinyModel m = test::build_tiny_bert(spec);
    const std::unique_ptr<Engine> e = load_bert(m);
    std::unique_ptr<Session> s = e->new_session();
    CHECK(s->embed(other, false) == s->embed(kTokens, false));
    spec.causal = 1;  // the reference's mask
    CHECK(relative_error(s->embed(kTokens, false), test::reference_embedding(m, spec, kTokens)) < 1e-4);
  }
}

TEST_CASE("embedding model config: traits, batch and generation refused", "[model]") {
  TinyBertSpec spec;
  spec.pooling_type = 3;
  const test::TinyModel m = test::build_tiny_bert(spec);
  std::unique_ptr<Engine> e = load_bert(m);
  const ModelConfig& c = e->config();
  CHECK(c.embedding_only);
  CHECK_FALSE(c.causal_attn);
  CHECK(c.pooling == Pooling::Last);
  CHECK(c.norm_eps == 1e-12f);
  CHECK(c.has_position_embd);
  CHECK_FALSE(c.has_rope);
  CHECK(c.has_qkv_bias);
  CHECK(c.has_ffn_bias);
  CHECK(e->n_ctx() == spec.n_ctx_train);
  CHECK(e->options().n_batch == spec.n_ctx_train);  // the whole input in one pass
  std::unique_ptr<Session> s = e->new_session();
  const std::string refusal = "this is a bert embedding model: it computes embeddings (runnel embed, POST "
                              "/v1/embeddings), it does not generate text";
  CHECK_THROWS_WITH(s->eval(kTokens), refusal);
  CHECK_THROWS_WITH(s->check_request(kTokens, GenerateParams{}), refusal);
  CHECK_THROWS_WITH(s->generate(kTokens, GenerateParams{}, nullptr), refusal);
  CHECK(s->position() == 0);
  // A context past the learned positions is refused, not read out of bounds.
  EngineOptions o;
  o.n_ctx = spec.n_ctx_train + 1;
  CHECK_THROWS_WITH(Engine::load(m.store(), o),
                    "context size 33 exceeds the 32 positions this bert model has embeddings for");
  // The memory plan's scratch is what a session allocates: a whole-context batch,
  // biases and LayerNorm biases, no logits, no rope table for bert.
  const std::unique_ptr<WeightStore> store = m.store();
  const Model model(c, *store);
  const int batch = c.batch_for(4, e->n_ctx());
  CHECK(batch == e->n_ctx());
  const ForwardScratch scratch(model, batch, e->n_ctx(), 2, false);
  CHECK(scratch.logits.empty());
  CHECK(scratch.float_bytes_allocated() == ForwardScratch::float_bytes(c, batch, false));
  MemoryPlanOptions po;
  po.n_ctx = e->n_ctx();
  po.n_batch = 4;
  MemoryPlanOptions whole = po;
  whole.n_batch = e->n_ctx();
  CHECK(plan_scratch_bytes(c, po) == plan_scratch_bytes(c, whole));  // the asked batch does not shrink it
  CHECK(plan_scratch_bytes(c, po) > ForwardScratch::float_bytes(c, batch, false));
}

TEST_CASE("embedding model metadata: unsupported values refused by name", "[model]") {
  TinyBertSpec spec;
  SECTION("pooling none") {
    spec.pooling_type = 0;
    CHECK(load_error(spec) == "metadata bert.pooling_type = 0 (none: per-token embeddings) is not supported "
                              "(supported: 1 mean, 2 cls, 3 last)");
  }
  SECTION("pooling rank") {
    spec.pooling_type = 4;
    CHECK(load_error(spec) == "metadata bert.pooling_type = 4 (rank: a reranker's classification head) is not "
                              "supported (supported: 1 mean, 2 cls, 3 last)");
  }
  SECTION("pooling unknown") {
    spec.pooling_type = 9;
    CHECK(load_error(spec) == "metadata bert.pooling_type = 9 (unknown) is not supported (supported: 1 mean, "
                              "2 cls, 3 last)");
  }
  SECTION("pooling absent") {
    spec.pooling_type = -1;
    CHECK(load_error(spec) == "missing metadata key 'bert.pooling_type' (an embedding model needs its pooling: "
                              "1 mean, 2 cls or 3 last)");
  }
  SECTION("no layer norm epsilon") {
    spec.layer_norm_eps = false;
    CHECK(load_error(spec) == "missing metadata key 'bert.attention.layer_norm_epsilon'");
  }
  SECTION("no token type count") {
    spec.token_type_count = false;
    CHECK(load_error(spec) == "missing metadata key 'tokenizer.ggml.token_type_count' (a bert model needs its "
                              "token type count)");
  }
}

TEST_CASE("embedding model tensors: missing or mis-shaped ones named", "[model]") {
  TinyBertSpec spec;
  SECTION("missing LayerNorm bias") {
    spec.omit_tensor = "blk.1.attn_output_norm.bias";
    CHECK(load_error(spec) == "missing tensor 'blk.1.attn_output_norm.bias' (a bert model needs it)");
  }
  SECTION("missing position embeddings") {
    spec.omit_tensor = "position_embd.weight";
    CHECK(load_error(spec) == "missing tensor 'position_embd.weight' (a bert model needs it)");
  }
  SECTION("a bias missing in a later layer") {
    spec.omit_tensor = "blk.1.ffn_down.bias";
    CHECK(load_error(spec) == "missing tensor 'blk.1.ffn_down.bias' (a bert model needs it)");
  }
  SECTION("position embeddings shorter than the context") {
    spec.reshape_tensor = "position_embd.weight";
    spec.reshape_dims = {64, 16};
    CHECK(load_error(spec) == "tensor position_embd.weight: expected dims [64, 32], got [64, 16]");
  }
  SECTION("nomic-bert without its gate") {
    spec.arch = "nomic-bert";
    spec.omit_tensor = "blk.0.ffn_gate.weight";
    CHECK(load_error(spec) == "missing tensor 'blk.0.ffn_gate.weight' (a nomic-bert model needs it)");
  }
  SECTION("token types of the wrong count") {
    spec.reshape_tensor = "token_types.weight";
    spec.reshape_dims = {64, 3};
    CHECK(load_error(spec) == "tensor token_types.weight: expected dims [64, 2], got [64, 3]");
  }
}

}  // namespace runnel
