// ModelConfig: hyper-parameters from metadata, and refusals that name the problem.
#include "core/model/config.h"

#include <catch2/catch.hpp>

#include "core/gguf/gguf_writer.h"
#include "core/runtime/engine.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

ModelConfig config_of(const test::TinySpec& spec) {
  const test::TinyModel m = test::build_tiny_model(spec);
  return ModelConfig::from_model(m.store()->model());
}

std::string load_error(const test::TinySpec& spec) {
  const test::TinyModel m = test::build_tiny_model(spec);
  try {
    Engine::load(m.store());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(loaded)";
}

}  // namespace

TEST_CASE("config reads the llama hyper-parameters", "[model]") {
  test::TinySpec spec;
  spec.n_head_kv = 1;
  spec.rope_base = 500000.0f;
  spec.tied = false;
  const ModelConfig c = config_of(spec);
  CHECK(c.arch == Arch::Llama);
  CHECK(c.arch_name == "llama");
  CHECK(c.n_layer == 2);
  CHECK(c.n_embd == 64);
  CHECK(c.n_ff == 96);
  CHECK(c.n_head == 4);
  CHECK(c.n_head_kv == 1);
  CHECK(c.head_dim == 16);
  CHECK(c.head_dim_v == 16);
  CHECK(c.n_rot == 16);
  CHECK(c.n_vocab == 40);
  CHECK(c.n_ctx_train == 64);
  CHECK(c.rope_freq_base == 500000.0f);
  CHECK(c.rms_eps == 1e-5f);
  CHECK(c.rope_type == RopeType::Normal);
  CHECK_FALSE(c.has_qkv_bias);
  CHECK_FALSE(c.tied_output);
  CHECK_FALSE(c.has_rope_freqs);
  CHECK(c.q_dim() == 64);
  CHECK(c.kv_dim() == 16);
}

TEST_CASE("config: qwen2 has biases and neox rope; rope_freqs and tied output are seen",
          "[model]") {
  test::TinySpec spec;
  spec.arch = "qwen2";
  spec.rope_freqs = true;
  const ModelConfig c = config_of(spec);
  CHECK(c.arch == Arch::Qwen2);
  CHECK(c.rope_type == RopeType::Neox);
  CHECK(c.has_qkv_bias);
  CHECK(c.has_rope_freqs);
  CHECK(c.tied_output);
}

TEST_CASE("gemma3 config: sliding layers, their rope base, scales and norms", "[model]") {
  test::TinySpec spec;
  spec.arch = "gemma3";
  spec.n_layer = 7;
  spec.n_swa = 16;
  spec.rope_base = 1e6f;
  const ModelConfig c = config_of(spec);
  CHECK(c.arch == Arch::Gemma3);
  CHECK(c.rope_type == RopeType::Neox);
  CHECK(c.has_qk_norm);
  CHECK(c.has_post_norms);
  CHECK(c.ffn_act == FfnAct::Gelu);
  CHECK(c.embd_scale == Approx(8.0f));  // sqrt(64)
  CHECK(c.attn_scale == Approx(0.25f));  // 1 / sqrt(head size 16)
  CHECK(c.n_swa == 16);
  // Gemma 3's period of 6: layer 5 is global, the others slide.
  for (int l = 0; l < 7; ++l) CHECK(c.is_swa(l) == (l != 5));
  CHECK(c.rope_freq_base == 1e6f);
  CHECK(c.rope_freq_base_swa == 10000.0f);
}

TEST_CASE("gemma2 config: soft-caps, the default window and an every-other-layer pattern", "[model]") {
  test::TinySpec spec;
  spec.arch = "gemma2";
  spec.n_layer = 4;
  spec.attn_softcap = 50.0f;
  spec.final_softcap = 30.0f;
  spec.tied = false;
  const ModelConfig c = config_of(spec);
  CHECK(c.attn_softcap == 50.0f);
  CHECK(c.final_softcap == 30.0f);
  CHECK(c.n_swa == 4096);  // Gemma 2's window when the file does not say
  CHECK(c.is_swa(0));
  CHECK_FALSE(c.is_swa(1));
  CHECK(c.tied_output);  // gemma 2 reads the embedding as the lm_head
  CHECK(c.rope_freq_base_swa == c.rope_freq_base);
}

TEST_CASE("gemma2 without soft-cap keys gets Gemma 2's 50 and 30", "[model]") {
  test::TinySpec spec;
  spec.arch = "gemma2";
  const ModelConfig c = config_of(spec);
  CHECK(c.attn_softcap == 50.0f);
  CHECK(c.final_softcap == 30.0f);
}

TEST_CASE("a negative soft-cap is refused", "[model]") {
  test::TinySpec spec;
  spec.arch = "gemma2";
  spec.attn_softcap = -1.0f;
  CHECK(load_error(spec).find("expected a non-negative cap") != std::string::npos);
}

TEST_CASE("an unknown architecture is refused by name", "[model]") {
  test::TinySpec spec;
  spec.arch = "foo";
  CHECK(load_error(spec) == "unsupported architecture 'foo' (supported: " + supported_arch_list() + ")");
  CHECK(supported_arch_list() ==
        "llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, bert, nomic-bert, qwen2moe, qwen3moe, olmoe, gpt-oss");
}

TEST_CASE("config: mixture-of-experts hyper-parameters and their refusals", "[model]") {
  test::TinySpec spec;
  spec.arch = "qwen3moe";
  spec.n_expert = 8;
  spec.n_expert_used = 3;
  spec.n_ff_exp = 32;
  ModelConfig c = config_of(spec);
  CHECK(c.arch == Arch::Qwen3Moe);
  CHECK(c.is_moe());
  CHECK(c.n_expert == 8);
  CHECK(c.n_expert_used == 3);
  CHECK(c.n_ff_exp == 32);
  CHECK(c.expert_weights_norm);
  CHECK(c.has_qk_norm);
  CHECK(c.rope_type == RopeType::Neox);
  CHECK(c.ffn_scratch_width() == 96);  // the dense feed_forward_length is wider than 3 x 32
  // qwen2moe: unnormalized, a shared expert, biases; Mixtral: n_ff wide experts, renormalized
  spec.arch = "qwen2moe";
  spec.n_ff_shexp = 48;
  c = config_of(spec);
  CHECK_FALSE(c.expert_weights_norm);
  CHECK(c.has_shared_expert);
  CHECK(c.n_ff_shexp == 48);
  CHECK(c.has_qkv_bias);
  spec = test::TinySpec{};
  spec.n_expert = 4;
  spec.n_expert_used = 2;
  c = config_of(spec);
  CHECK(c.arch == Arch::Llama);
  CHECK(c.n_ff_exp == c.n_ff);
  CHECK(c.expert_weights_norm);
  spec.arch = "olmoe";
  c = config_of(spec);
  CHECK(c.has_full_qk_norm);
  CHECK_FALSE(c.expert_weights_norm);
  // gpt-oss: sinks, biases, logit gating, alternating windows, its own expert width
  spec.arch = "gpt-oss";
  spec.n_swa = 8;
  spec.n_ff_exp = 32;
  c = config_of(spec);
  CHECK(c.has_attn_sinks);
  CHECK(c.has_expert_bias);
  CHECK(c.has_attn_out_bias);
  CHECK(c.expert_gating == ExpertGating::SoftmaxWeight);
  CHECK(c.ffn_act == FfnAct::SwigluOai);
  CHECK(c.n_ff_exp == 32);
  CHECK(c.n_swa == 8);
  CHECK(c.is_swa(0));
  CHECK_FALSE(c.is_swa(1));
  spec.n_swa = 0;
  CHECK(load_error(spec) == "missing metadata key 'gpt-oss.attention.sliding_window'");
  spec.n_swa = 8;
  spec.n_ff_exp = 0;
  CHECK(load_error(spec) == "missing metadata key 'gpt-oss.expert_feed_forward_length'");
  spec.n_ff_exp = 0;
  spec.arch = "olmoe";
  spec.n_swa = 0;
  // Refusals name the key or the tensor.
  spec.n_expert_used = 5;
  CHECK(load_error(spec) == "metadata olmoe.expert_used_count = 5: more than the 4 experts");
  spec.n_expert_used = 2;
  spec.omit_tensor = "blk.1.ffn_down_exps.weight";
  CHECK(load_error(spec) == "missing tensor 'blk.1.ffn_down_exps.weight' (a olmoe model needs it)");
  spec.omit_tensor = "";
  spec.reshape_tensor = "blk.0.ffn_up_exps.weight";
  spec.reshape_dims = {64, 96, 3};
  CHECK(load_error(spec) == "tensor blk.0.ffn_up_exps.weight: expected dims [64, 96, 4], got [64, 96, 3]");
  spec.reshape_tensor = "";
  spec.arch = "gemma";
  CHECK(load_error(spec) == "mixture-of-experts gemma models are not supported (gemma.expert_count = 4; experts "
                            "run in llama, qwen2moe, qwen3moe, olmoe, gpt-oss)");
  spec.arch = "qwen3moe";
  spec.n_expert = 0;
  CHECK(load_error(spec) == "missing metadata key 'qwen3moe.expert_count' (a qwen3moe model has experts)");
}

TEST_CASE("a tensor with the wrong dims is refused with expected and actual dims", "[model]") {
  test::TinySpec spec;
  spec.reshape_tensor = "blk.1.attn_k.weight";
  spec.reshape_dims = {64, 48};
  CHECK(load_error(spec) == "tensor blk.1.attn_k.weight: expected dims [64, 32], got [64, 48]");
}

TEST_CASE("a missing tensor is refused by name", "[model]") {
  test::TinySpec spec;
  spec.omit_tensor = "blk.0.ffn_up.weight";
  CHECK(load_error(spec) == "missing tensor 'blk.0.ffn_up.weight' (a llama model needs it)");
  spec.omit_tensor = "";
  spec.arch = "qwen2";
  spec.omit_tensor = "blk.1.attn_v.bias";
  CHECK(load_error(spec) == "missing tensor 'blk.1.attn_v.bias' (a qwen2 model needs it)");
}

TEST_CASE("a vocabulary-only file is refused as such", "[model]") {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  const std::vector<uint8_t> bytes = w.bytes();
  std::vector<GgufFile> files;
  files.push_back(GgufFile::parse(bytes, "vocab.gguf"));
  const GgufModel model = GgufModel::join(std::move(files));
  CHECK_THROWS_WITH(ModelConfig::from_model(model),
                    "the file has no tensors (a vocabulary-only GGUF?): running needs the "
                    "model's weights");
}

TEST_CASE("a wrong-length rope_freqs is refused", "[model]") {
  test::TinySpec spec;
  spec.rope_freqs = true;
  spec.reshape_tensor = "rope_freqs.weight";
  spec.reshape_dims = {16};
  CHECK(load_error(spec) == "tensor rope_freqs.weight: expected dims [8], got [16]");
}

TEST_CASE("phi3 config: fused matrices, LongRoPE factors and scale, no sliding window", "[model]") {
  test::TinySpec spec;
  spec.arch = "phi3";
  spec.n_ctx_train = 64;
  spec.n_ctx_orig = 16;
  spec.longrope = true;
  spec.rope_attn_factor = 1.25f;
  spec.n_swa = 8;
  const ModelConfig c = config_of(spec);
  CHECK(c.arch == Arch::Phi3);
  CHECK(c.rope_type == RopeType::Neox);
  CHECK(c.ffn_act == FfnAct::Silu);
  CHECK(c.fused_qkv);
  CHECK(c.fused_gate_up);
  CHECK(c.has_longrope);
  CHECK_FALSE(c.has_rope_freqs);
  CHECK(c.n_ctx_orig == 16);
  CHECK(c.rope_attn_factor == 1.25f);
  CHECK(c.rope_scaling == RopeScaling::None);
  CHECK(c.n_swa == 0);  // llama.cpp disables Phi's sliding window
  CHECK_FALSE(c.is_swa(0));
  CHECK(c.attn_scale == Approx(0.25f));  // 1 / sqrt(head size 16)
  spec.longrope = false;
  spec.fused_qkv = false;
  spec.rope_attn_factor = 0.0f;
  spec.n_ctx_orig = 0;
  const ModelConfig plain = config_of(spec);
  CHECK_FALSE(plain.fused_qkv);
  CHECK_FALSE(plain.has_longrope);
  CHECK(plain.n_ctx_orig == 64);  // context_length when the key is absent
  CHECK(plain.rope_attn_factor == 1.0f);
}

TEST_CASE("phi3: malformed fused matrices and LongRoPE factors are refused by name", "[model]") {
  test::TinySpec spec;
  spec.arch = "phi3";
  spec.longrope = true;
  SECTION("attn_qkv without room for k and v") {
    spec.reshape_tensor = "blk.0.attn_qkv.weight";
    spec.reshape_dims = {64, 64};
    CHECK(load_error(spec) == "tensor blk.0.attn_qkv.weight: expected dims [64, 128], got [64, 64]");
  }
  SECTION("ffn_up with the up rows only") {
    spec.reshape_tensor = "blk.1.ffn_up.weight";
    spec.reshape_dims = {64, 96};
    CHECK(load_error(spec) == "tensor blk.1.ffn_up.weight: expected dims [64, 192], got [64, 96]");
  }
  SECTION("long factors without short ones") {
    spec.omit_tensor = "rope_factors_short.weight";
    CHECK(load_error(spec) == "missing tensor 'rope_factors_short.weight' (a phi3 model needs it)");
  }
  SECTION("factors of the wrong length") {
    spec.reshape_tensor = "rope_factors_long.weight";
    spec.reshape_dims = {16};
    CHECK(load_error(spec) == "tensor rope_factors_long.weight: expected dims [8], got [16]");
  }
}

TEST_CASE("yarn rope scaling: factor, original context and betas are read", "[model]") {
  test::TinySpec spec;
  spec.arch = "qwen2";
  spec.rope_scaling = "yarn";
  spec.rope_factor = 4.0f;
  spec.n_ctx_orig = 32;
  spec.yarn_beta_fast = 16.0f;
  const ModelConfig c = config_of(spec);
  CHECK(c.rope_scaling == RopeScaling::Yarn);
  CHECK(c.rope_freq_scale == 0.25f);
  CHECK(c.n_ctx_orig == 32);
  CHECK(c.yarn_beta_fast == 16.0f);
  CHECK(c.yarn_beta_slow == 1.0f);  // the default
  spec.rope_scaling = "linear";
  CHECK(config_of(spec).rope_scaling == RopeScaling::Linear);
}

TEST_CASE("bad rope scaling metadata is refused naming the key or type", "[model]") {
  test::TinySpec spec;
  spec.rope_scaling = "yarn";
  SECTION("yarn without a factor") {
    CHECK(load_error(spec) ==
          "metadata llama.rope.scaling.factor = 0.000000: yarn rope scaling needs a factor >= 1");
  }
  SECTION("yarn shrinking the context") {
    spec.rope_factor = 0.5f;
    CHECK(load_error(spec) ==
          "metadata llama.rope.scaling.factor = 0.500000: yarn rope scaling needs a factor >= 1");
  }
  SECTION("yarn on a family that does not carry it") {
    spec.arch = "gemma3";
    spec.rope_factor = 4.0f;
    CHECK(load_error(spec) ==
          "rope scaling type 'yarn' is not supported for gemma3 (supported there: none, linear)");
  }
  SECTION("an unknown type") {
    spec.rope_scaling = "longrope";
    CHECK(load_error(spec) ==
          "rope scaling type 'longrope' is not supported (supported: none, linear, yarn)");
  }
  SECTION("a negative beta") {
    spec.rope_factor = 4.0f;
    spec.yarn_beta_slow = -1.0f;
    CHECK(load_error(spec) ==
          "metadata llama.rope.scaling.yarn_beta_slow = -1.000000: expected a positive finite number");
  }
  SECTION("a negative attn_factor") {
    spec.rope_scaling = "";
    spec.rope_attn_factor = -2.0f;
    CHECK(load_error(spec) ==
          "metadata llama.rope.scaling.attn_factor = -2.000000: expected a positive finite number");
  }
}

}  // namespace runnel
