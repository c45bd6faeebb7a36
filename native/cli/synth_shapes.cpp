#include "native/cli/synth_shapes.h"

#include <cmath>

#include "native/cli/args.h"

namespace runnel::cli {
namespace {

// Real shapes from the models' config.json; tiny ones are small enough for a parity
// test to write and run in a second (head_dim 64 or 128, GQA where the family has it,
// sliding windows of 12-16 tokens so 30-60-token prompts cross them).
// clang-format off
constexpr SynthShape kShapes[] = {
    // name, arch, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, tied, parity, n_ctx_train, sliding_window
    {"llama-1b",       SynthArch::Llama,  2048, 16, 32, 8, 64,  8192,  128256, true,  false, 131072, 0},
    {"llama-8b",       SynthArch::Llama,  4096, 32, 32, 8, 128, 14336, 128256, false, false, 131072, 0},
    {"gemma3-1b",      SynthArch::Gemma3, 1152, 26, 4,  1, 256, 6912,  262144, true,  false, 32768,  512},
    {"qwen3-4b",       SynthArch::Qwen3,  2560, 36, 32, 8, 128, 9728,  151936, true,  false, 40960,  0},
    {"tiny",           SynthArch::Llama,  256,  2,  4,  2, 64,  512,   0,      false, false, 131072, 0},  // CLI/wasm tests
    // Llama 2 style multi-head attention.
    {"tiny-llama",     SynthArch::Llama,  256,  2,  4,  4, 64,  512,   0,      false, true,  4096,   0},
    // Mistral v0.1 style: llama with llama.attention.sliding_window.
    {"tiny-llama-swa", SynthArch::Llama,  256,  3,  4,  2, 64,  512,   0,      false, true,  32768,  16},
    // q/k norms; n_head * head_dim (512) != n_embd, as in every Qwen3.
    {"tiny-qwen3",     SynthArch::Qwen3,  256,  3,  8,  2, 64,  512,   0,      true,  true,  40960,  0},
    // Gemma 2B style multi-query attention; q width 512 != n_embd, as in Gemma 7B.
    {"tiny-gemma",     SynthArch::Gemma,  256,  3,  8,  1, 64,  512,   0,      true,  true,  8192,   0},
    // Local (even) and global (odd) layers alternate; soft-capped attention and logits.
    {"tiny-gemma2",    SynthArch::Gemma2, 256,  4,  4,  2, 64,  512,   0,      true,  true,  8192,   12},
    // Five local layers, then a global one (layer 5), then a local one again.
    {"tiny-gemma3",    SynthArch::Gemma3, 256,  7,  4,  1, 128, 512,   0,      true,  true,  32768,  16},
    // Fused qkv and gate-up, LongRoPE factors: original context 256, trained to 1024.
    {"tiny-phi3",      SynthArch::Phi3,   256,  3,  4,  2, 64,  512,   0,      false, true,  1024,   2047},
    // Embedding models (BGE / MiniLM style bert: separate q, k, v and every bias, learned
    // positions; nomic-embed-text style nomic-bert: fused attn_qkv, SwiGLU, rope, no biases).
    // Tokenizer: a real WordPiece vocabulary (ggml-vocab-bert-bge.gguf).
    {"tiny-bert",       SynthArch::Bert,      256, 3, 4, 4, 64, 512, 0,    false, true,  512,    0},
    {"tiny-nomic-bert", SynthArch::NomicBert, 256, 3, 4, 4, 64, 512, 0,    false, true,  2048,   0},
    // Mixture of experts, ..., n_expert, n_expert_used, n_ff_exp, n_ff_shexp.
    // Qwen3-30B-A3B: 128 experts of 768 rows, 8 a token (~3.3B parameters read per token).
    {"qwen3-30b-a3b",  SynthArch::Qwen3Moe, 2048, 48, 32, 4, 128, 6144, 151936, false, false, 40960, 0, 128, 8, 768, 0},
    // A small MoE for fast tests and benchmarks: 32 experts of 512 rows, 4 a token.
    {"moe-small",      SynthArch::Qwen3Moe, 1024, 8,  16, 4, 64,  3072, 0,      true,  false, 40960, 0, 32,  4, 512, 0},
    // Mixtral style: llama with 4 experts, 2 a token, renormalized weights.
    {"tiny-mixtral",   SynthArch::Llama,    256,  2,  4,  2, 64,  256,  0,      false, true,  32768, 0, 4,   2, 0,   0},
    // Qwen1.5-MoE style: q/k/v biases, 8 experts of 128 rows, 2 a token, a shared expert.
    {"tiny-qwen2moe",  SynthArch::Qwen2Moe, 256,  2,  4,  2, 64,  512,  0,      false, true,  32768, 0, 8,   2, 128, 256},
    // Qwen3-MoE style: per-head q/k norms, 16 experts of 128 rows, 4 a token, renormalized.
    {"tiny-qwen3moe",  SynthArch::Qwen3Moe, 256,  2,  8,  2, 64,  512,  0,      true,  true,  40960, 0, 16,  4, 128, 0},
    // OLMoE style: whole-row q/k norms, multi-head attention, 8 experts, 2 a token.
    {"tiny-olmoe",     SynthArch::Olmoe,    256,  2,  4,  4, 64,  128,  0,      false, true,  4096,  0, 8,   2, 0,   0},
    // gpt-oss style: sliding (even) and global layers alternate, attention sinks, q/k/v/o
    // biases, biased experts picked by their logits, YaRN (factor 4 over 256 positions).
    {"tiny-gpt-oss",   SynthArch::GptOss,   256,  3,  8,  2, 64,  128,  0,      false, true,  1024,  16, 8,  2, 128, 0},
    // gpt-oss-20b: 32 experts of 2880 rows in MXFP4, 4 a token (~3.6B parameters read per token).
    {"gpt-oss-20b",    SynthArch::GptOss,   2880, 24, 64, 8, 64,  2880, 201088, false, false, 131072, 128, 32, 4, 2880, 0},
};
// clang-format on

// tiny-phi3's rope.scaling.original_context_length: a multiple of 256, because
// llama.cpp rounds every context up to one, and it picks the long factors when the
// context is above this.
constexpr int kPhi3TinyOriginalContext = 256;

// Parity shapes' scales. Tied embeddings are also the output matrix: kTiedGain /
// sqrt(n_embd) gives logits of standard deviation ~2 (Gemma's input embeddings, scaled
// by sqrt(n_embd), then have that too). Attention and FFN outputs (kOutGain, Gemma 2/3's
// post-norms at kPostNormCenter) are large enough that the residual stream is not just
// the token's own embedding, which would make each position predict its own token.
constexpr float kTiedGain = 2.0f;
constexpr float kOutGain = 3.0f;
constexpr float kPostNormCenter = 3.0f;

const char* arch_name(SynthArch arch) {
  switch (arch) {
    case SynthArch::Llama:
      return "llama";
    case SynthArch::Qwen3:
      return "qwen3";
    case SynthArch::Gemma:
      return "gemma";
    case SynthArch::Gemma2:
      return "gemma2";
    case SynthArch::Gemma3:
      return "gemma3";
    case SynthArch::Phi3:
      return "phi3";
    case SynthArch::Bert:
      return "bert";
    case SynthArch::NomicBert:
      return "nomic-bert";
    case SynthArch::Qwen2Moe:
      return "qwen2moe";
    case SynthArch::Qwen3Moe:
      return "qwen3moe";
    case SynthArch::Olmoe:
      return "olmoe";
    case SynthArch::GptOss:
      return "gpt-oss";
  }
  return "?";
}

// llama.cpp's Q4_K_M gives attn_v and ffn_down more bits in the first and last
// eighth of the layers and every third layer between.
bool more_bits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

// llama.cpp's replacement for a k-quant whose rows are not whole super-blocks (Gemma
// 3's 640 and 1152 columns): the real Gemma 3 270M Q4_K_M has Q5_0 and Q8_0 there.
GgmlType fit_type(GgmlType type, int64_t n_in, const std::string& name) {
  if (n_in % traits(type).block_size != 0) {
    switch (type) {
      case GgmlType::Q2_K:
      case GgmlType::Q3_K:
      case GgmlType::Q4_K:
        type = GgmlType::Q5_0;
        break;
      case GgmlType::Q5_K:
        type = GgmlType::Q5_1;
        break;
      case GgmlType::Q6_K:
        type = GgmlType::Q8_0;
        break;
      default:
        break;
    }
  }
  if (n_in % traits(type).block_size != 0) {
    throw UsageError("--type: " + name + " has rows of " + std::to_string(n_in) +
                     ", not a multiple of " + std::to_string(traits(type).block_size) + " (" +
                     std::string(traits(type).name) + ")");
  }
  return type;
}

float rope_attn_factor(int n_ctx, int n_ctx_orig) {
  // Phi-3's LongRoPE scaling of cos/sin (llama.cpp's convert_hf_to_gguf writes it).
  const double scale = static_cast<double>(n_ctx) / n_ctx_orig;
  return scale > 1.0 ? static_cast<float>(std::sqrt(1.0 + std::log(scale) / std::log(n_ctx_orig)))
                     : 1.0f;
}

int phi3_original_context(const SynthShape& s) {
  return s.parity ? kPhi3TinyOriginalContext : 4096;
}

// bert / nomic-bert, with llama.cpp's tensor names: embeddings (+ token types, +
// positions for bert) and their LayerNorm, then post-norm layers; no output head.
// Every weight, bias and LayerNorm random, so that a missing term shows.
std::vector<TensorPlan> embedding_tensor_plan(const SynthShape& s, const SynthMix& mix, int n_vocab) {
  const int64_t e = s.n_embd, ff = s.n_ff, q = static_cast<int64_t>(s.n_head) * s.head_dim,
                kv = static_cast<int64_t>(s.n_head_kv) * s.head_dim;
  const bool bert = s.arch == SynthArch::Bert;
  const auto matrix = [&](const std::string& name, GgmlType type, int64_t n_in, int64_t n_out,
                          float gain = 1.0f) {
    return TensorPlan{name, fit_type(type, n_in, name), {n_in, n_out}, Fill::Matrix,
                      gain / std::sqrt(static_cast<float>(n_in))};
  };
  const auto vec = [](const std::string& name, int64_t n, Fill fill, float std) {
    TensorPlan t{name, GgmlType::F32, {n}, fill, std};
    return t;
  };
  const auto layer_norm = [&](const std::string& name, std::vector<TensorPlan>& plan) {
    plan.push_back(vec(name + ".weight", e, Fill::Norm, 0.0f));
    plan.push_back(vec(name + ".bias", e, Fill::Bias, 0.2f));
  };
  std::vector<TensorPlan> plan;
  TensorPlan embd = matrix("token_embd.weight", mix.embd, e, n_vocab);
  embd.std = 1.0f;
  plan.push_back(embd);
  // Row 0 is added to every token; position rows (F16, as converters often store them).
  TensorPlan types{"token_types.weight", GgmlType::F32, {e, 2}, Fill::Matrix, 0.5f};
  plan.push_back(types);
  if (bert) {
    TensorPlan pos{"position_embd.weight", GgmlType::F16, {e, s.n_ctx_train}, Fill::Matrix, 0.5f};
    plan.push_back(pos);
  }
  layer_norm("token_embd_norm", plan);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    if (bert) {
      plan.push_back(matrix(b + "attn_q.weight", mix.attn_qkv, e, q, 1.5f));
      plan.push_back(vec(b + "attn_q.bias", q, Fill::Bias, 0.5f));
      plan.push_back(matrix(b + "attn_k.weight", mix.attn_qkv, e, kv, 1.5f));
      plan.push_back(vec(b + "attn_k.bias", kv, Fill::Bias, 0.5f));
      plan.push_back(matrix(b + "attn_v.weight", mix.attn_v, e, kv));
      plan.push_back(vec(b + "attn_v.bias", kv, Fill::Bias, 0.5f));
    } else {
      plan.push_back(matrix(b + "attn_qkv.weight", mix.attn_qkv, e, q + 2 * kv, 1.5f));
    }
    plan.push_back(matrix(b + "attn_output.weight", mix.attn_out, q, e));
    if (bert) plan.push_back(vec(b + "attn_output.bias", e, Fill::Bias, 0.5f));
    layer_norm(b + "attn_output_norm", plan);
    if (!bert) plan.push_back(matrix(b + "ffn_gate.weight", mix.ffn_gate_up, e, ff));
    plan.push_back(matrix(b + "ffn_up.weight", mix.ffn_gate_up, e, ff));
    if (bert) plan.push_back(vec(b + "ffn_up.bias", ff, Fill::Bias, 0.5f));
    plan.push_back(matrix(b + "ffn_down.weight", mix.ffn_down, ff, e));
    if (bert) plan.push_back(vec(b + "ffn_down.bias", e, Fill::Bias, 0.5f));
    layer_norm(b + "layer_output_norm", plan);
  }
  return plan;
}

// A mixture-of-experts layer's feed-forward: the router (F32, as converters keep it;
// kRouterGain spreads its logits so the picks are not near-ties that rounding could
// flip), the experts' stacks [n_in, n_out, n_expert] in the feed-forward's types, and
// qwen2moe's shared expert with its 1-D gate.
constexpr float kRouterGain = 4.0f;

void push_expert_plan(const SynthShape& s, const SynthMix& mix, const std::string& b, GgmlType down_type,
                      std::vector<TensorPlan>& plan) {
  const int64_t e = s.n_embd, ff = s.n_ff_exp > 0 ? s.n_ff_exp : s.n_ff, n_exp = s.n_expert;
  const auto stack = [&](const std::string& name, GgmlType type, int64_t n_in, int64_t n_out, float gain) {
    return TensorPlan{name, fit_type(type, n_in, name), {n_in, n_out, n_exp}, Fill::Matrix,
                      gain / std::sqrt(static_cast<float>(n_in))};
  };
  TensorPlan router{b + "ffn_gate_inp.weight", GgmlType::F32, {e, n_exp}, Fill::Matrix,
                    kRouterGain / std::sqrt(static_cast<float>(e))};
  router.pooled = false;
  plan.push_back(router);
  // gpt-oss ships its experts in MXFP4 whatever the rest is (and so do llama.cpp's
  // quantizations of it). The tiny parity shape keeps the mix: with MXFP4 experts its
  // picks flip under llama.cpp's own flash-vs-plain differences (spread up to 2.4),
  // which would loosen the test's bounds to match.
  const bool mxfp4 = s.arch == SynthArch::GptOss && !s.parity;
  plan.push_back(stack(b + "ffn_gate_exps.weight", mxfp4 ? GgmlType::MXFP4 : mix.ffn_gate_up, e, ff, 1.0f));
  plan.push_back(stack(b + "ffn_up_exps.weight", mxfp4 ? GgmlType::MXFP4 : mix.ffn_gate_up, e, ff, 1.0f));
  plan.push_back(stack(b + "ffn_down_exps.weight", mxfp4 ? GgmlType::MXFP4 : down_type, ff, e, kOutGain));
  if (s.arch == SynthArch::GptOss) {  // the router's and each expert's biases
    plan.push_back({b + "ffn_gate_inp.bias", GgmlType::F32, {n_exp}, Fill::Bias, 0.5f});
    plan.push_back({b + "ffn_gate_exps.bias", GgmlType::F32, {ff, n_exp}, Fill::Bias, 0.5f});
    plan.push_back({b + "ffn_up_exps.bias", GgmlType::F32, {ff, n_exp}, Fill::Bias, 0.5f});
    plan.push_back({b + "ffn_down_exps.bias", GgmlType::F32, {e, n_exp}, Fill::Bias, 0.5f});
  }
  if (s.n_ff_shexp > 0) {
    const int64_t sh = s.n_ff_shexp;
    plan.push_back({b + "ffn_gate_inp_shexp.weight", GgmlType::F32, {e}, Fill::Bias, 1.0f / std::sqrt(static_cast<float>(e))});
    const auto matrix = [&](const std::string& name, GgmlType type, int64_t n_in, int64_t n_out, float gain) {
      return TensorPlan{name, fit_type(type, n_in, name), {n_in, n_out}, Fill::Matrix,
                        gain / std::sqrt(static_cast<float>(n_in))};
    };
    plan.push_back(matrix(b + "ffn_gate_shexp.weight", mix.ffn_gate_up, e, sh, 1.0f));
    plan.push_back(matrix(b + "ffn_up_shexp.weight", mix.ffn_gate_up, e, sh, 1.0f));
    plan.push_back(matrix(b + "ffn_down_shexp.weight", down_type, sh, e, kOutGain));
  }
}

}  // namespace

const SynthShape* find_synth_shape(const std::string& name) {
  for (const SynthShape& s : kShapes) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string synth_shape_names() {
  std::string out;
  for (const SynthShape& s : kShapes) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

bool is_embedding_shape(const SynthShape& shape) {
  return shape.arch == SynthArch::Bert || shape.arch == SynthArch::NomicBert;
}

int default_pooling_type(const SynthShape& shape) {
  return shape.arch == SynthArch::Bert ? 2 : 1;
}

int parse_pooling_type(const std::string& name) {
  if (name == "mean") return 1;
  if (name == "cls") return 2;
  if (name == "last") return 3;
  throw UsageError("--pooling: expected mean, cls or last, got '" + name + "'");
}

const char* default_synth_type(const SynthShape& shape) {
  return shape.parity ? "mix" : "";
}

SynthMix synth_mix(const std::string& type) {
  using T = GgmlType;
  // attn_qkv, attn_v, attn_out, ffn_gate_up, ffn_down, embd, output, more, file_type
  if (type == "q8_0")
    return {T::Q8_0, T::Q8_0, T::Q8_0, T::Q8_0, T::Q8_0, T::Q8_0, T::Q8_0, T::Q8_0, 7};
  if (type == "q4_0")
    return {T::Q4_0, T::Q4_0, T::Q4_0, T::Q4_0, T::Q4_0, T::Q4_0, T::Q6_K, T::Q4_0, 2};
  if (type == "q4_k_m")
    return {T::Q4_K, T::Q4_K, T::Q4_K, T::Q4_K, T::Q4_K, T::Q4_K, T::Q6_K, T::Q6_K, 15};
  if (type == "f32") return {T::F32, T::F32, T::F32, T::F32, T::F32, T::F32, T::F32, T::F32, 0};
  if (type == "f16") return {T::F16, T::F16, T::F16, T::F16, T::F16, T::F16, T::F16, T::F16, 1};
  if (type == "mix") return {T::F16, T::F16, T::F32, T::F16, T::F32, T::Q8_0, T::Q8_0, T::F32, 7};
  throw UsageError("--type: expected q8_0, q4_0, q4_k_m, f32, f16 or mix, got '" + type + "'");
}

void add_arch_metadata(GgufWriter& w, const SynthShape& s, int n_vocab, int pooling_type) {
  const std::string a = arch_name(s.arch);
  const auto u32 = [&](const std::string& key, int v) {
    w.set_u32(a + "." + key, static_cast<uint32_t>(v));
  };
  const auto f32 = [&](const std::string& key, float v) { w.set_f32(a + "." + key, v); };
  w.set_string("general.architecture", a);
  u32("context_length", s.n_ctx_train);
  if (s.arch == SynthArch::Phi3)
    u32("rope.scaling.original_context_length", phi3_original_context(s));
  u32("embedding_length", s.n_embd);
  u32("block_count", s.n_layer);
  u32("feed_forward_length", s.n_ff);
  u32("attention.head_count", s.n_head);
  u32("attention.head_count_kv", s.n_head_kv);
  if (is_embedding_shape(s)) {
    // What llama.cpp's converter writes for BERT / nomic-bert: LayerNorm epsilon,
    // non-causal attention, the pooling (tokenizer.ggml.token_type_count comes with the
    // copied tokenizer).
    f32("attention.layer_norm_epsilon", 1e-12f);
    w.set_bool(a + ".attention.causal", false);
    u32("pooling_type", pooling_type >= 0 ? pooling_type : default_pooling_type(s));
    if (s.arch == SynthArch::NomicBert) f32("rope.freq_base", 1000.0f);
    return;
  }
  switch (s.arch) {
    case SynthArch::Llama:
      u32("rope.dimension_count", s.head_dim);
      // Llama 3's base for the benchmark shapes, Llama 2's and Mistral's for the tiny ones.
      f32("rope.freq_base", s.parity ? 10000.0f : 500000.0f);
      f32("attention.layer_norm_rms_epsilon", 1e-5f);
      u32("vocab_size", n_vocab);
      break;
    case SynthArch::Qwen3:
    case SynthArch::Qwen3Moe:
    case SynthArch::Qwen2Moe:
      f32("rope.freq_base", 1000000.0f);
      f32("attention.layer_norm_rms_epsilon", 1e-6f);
      u32("attention.key_length", s.head_dim);
      u32("attention.value_length", s.head_dim);
      break;
    case SynthArch::Olmoe:
      f32("rope.freq_base", 10000.0f);
      f32("attention.layer_norm_rms_epsilon", 1e-5f);
      break;
    case SynthArch::GptOss:
      f32("rope.freq_base", 150000.0f);
      f32("attention.layer_norm_rms_epsilon", 1e-5f);
      u32("attention.key_length", s.head_dim);
      u32("attention.value_length", s.head_dim);
      // YaRN as gpt-oss ships it (factor 32 over 4096 positions; the tiny shape 4 over 256)
      w.set_string(a + ".rope.scaling.type", "yarn");
      f32("rope.scaling.factor", s.parity ? 4.0f : 32.0f);
      u32("rope.scaling.original_context_length", s.parity ? 256 : 4096);
      break;
    case SynthArch::Gemma:  // rope base: llama.cpp's default, 10000
    case SynthArch::Gemma2:
    case SynthArch::Gemma3:
      f32("attention.layer_norm_rms_epsilon", 1e-6f);
      u32("attention.key_length", s.head_dim);
      u32("attention.value_length", s.head_dim);
      if (s.arch == SynthArch::Gemma2) {
        // Gemma 2's real caps are 50 and 30; random tiny weights rarely reach those,
        // so the tiny model caps lower, where a missing tanh shows.
        f32("attn_logit_softcapping", s.parity ? 10.0f : 50.0f);
        f32("final_logit_softcapping", s.parity ? 8.0f : 30.0f);
      }
      // Gemma 3: the global layers' base; local layers use 10000 (llama.cpp's default
      // for the absent rope.freq_base_swa).
      if (s.arch == SynthArch::Gemma3) f32("rope.freq_base", 1000000.0f);
      break;
    case SynthArch::Bert:
    case SynthArch::NomicBert:
      break;
    case SynthArch::Phi3:
      f32("attention.layer_norm_rms_epsilon", 1e-5f);
      u32("rope.dimension_count", s.head_dim);
      f32("rope.freq_base", 10000.0f);
      f32("rope.scaling.attn_factor", rope_attn_factor(s.n_ctx_train, phi3_original_context(s)));
      break;
  }
  if (s.sliding_window > 0) u32("attention.sliding_window", s.sliding_window);
  if (s.n_expert > 0) {
    u32("expert_count", s.n_expert);
    u32("expert_used_count", s.n_expert_used);
    if (s.n_ff_exp > 0) u32("expert_feed_forward_length", s.n_ff_exp);
    if (s.n_ff_shexp > 0) u32("expert_shared_feed_forward_length", s.n_ff_shexp);
  }
}

std::vector<TensorPlan> tensor_plan(const SynthShape& s, const SynthMix& mix, int n_vocab) {
  const int64_t e = s.n_embd, ff = s.n_ff, hd = s.head_dim;
  const int64_t q = s.n_head * hd, kv = s.n_head_kv * hd;
  // Parity shapes: N(0, gain / sqrt(n_in)) keeps every activation near unit scale;
  // q and k a little larger so attention is far from uniform.
  const auto matrix = [&](const std::string& name, GgmlType type, int64_t n_in, int64_t n_out,
                          float gain = 1.0f) {
    return TensorPlan{name,
                      fit_type(type, n_in, name),
                      {n_in, n_out},
                      Fill::Matrix,
                      gain / std::sqrt(static_cast<float>(n_in))};
  };
  const auto norm = [](const std::string& name, int64_t n, float center = 1.0f) {
    TensorPlan t{name, GgmlType::F32, {n}, Fill::Norm};
    t.center = center;
    return t;
  };
  if (is_embedding_shape(s)) return embedding_tensor_plan(s, mix, n_vocab);
  std::vector<TensorPlan> plan;
  // Tied: the embeddings are also the output matrix (logits ~ N(0, GAIN)). Gemma scales
  // its input embeddings by sqrt(n_embd), which makes them ~N(0, GAIN) as well.
  TensorPlan embd = matrix("token_embd.weight", s.tied ? mix.output : mix.embd, e, n_vocab);
  embd.std = s.tied ? kTiedGain / std::sqrt(static_cast<float>(e)) : 1.0f;
  embd.is_output = s.tied;
  plan.push_back(embd);
  if (s.arch == SynthArch::Phi3) {
    // One pair for all layers, [head_dim / 2] (rope.dimension_count / 2).
    plan.push_back({"rope_factors_long.weight", GgmlType::F32, {hd / 2}, Fill::RopeLong});
    plan.push_back({"rope_factors_short.weight", GgmlType::F32, {hd / 2}, Fill::RopeShort});
  }
  const bool qk_norm = s.arch == SynthArch::Qwen3 || s.arch == SynthArch::Gemma3 || s.arch == SynthArch::Qwen3Moe;
  const bool qkv_bias = s.arch == SynthArch::Qwen2Moe || s.arch == SynthArch::GptOss;
  const bool gpt_oss = s.arch == SynthArch::GptOss;
  const bool post_norms = s.arch == SynthArch::Gemma2 || s.arch == SynthArch::Gemma3;
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const bool more = more_bits(l, s.n_layer);
    const GgmlType v_type = more ? mix.attn_v_ffn_down_more : mix.attn_v;
    const GgmlType down_type = more ? mix.attn_v_ffn_down_more : mix.ffn_down;
    plan.push_back(norm(b + "attn_norm.weight", e));
    if (s.arch == SynthArch::Phi3) {
      plan.push_back(matrix(b + "attn_qkv.weight", mix.attn_qkv, e, q + 2 * kv, 1.5f));
    } else {
      plan.push_back(matrix(b + "attn_q.weight", mix.attn_qkv, e, q, 1.5f));
      plan.push_back(matrix(b + "attn_k.weight", mix.attn_qkv, e, kv, 1.5f));
      plan.push_back(matrix(b + "attn_v.weight", v_type, e, kv));
    }
    if (qkv_bias) {
      for (const auto& [name, rows] : {std::pair{"attn_q.bias", q}, {"attn_k.bias", kv}, {"attn_v.bias", kv}}) {
        plan.push_back({b + name, GgmlType::F32, {rows}, Fill::Bias, 0.5f});
      }
    }
    if (qk_norm) {
      plan.push_back(norm(b + "attn_q_norm.weight", hd));
      plan.push_back(norm(b + "attn_k_norm.weight", hd));
    }
    if (s.arch == SynthArch::Olmoe) {  // over whole rows
      plan.push_back(norm(b + "attn_q_norm.weight", q));
      plan.push_back(norm(b + "attn_k_norm.weight", kv));
    }
    plan.push_back(matrix(b + "attn_output.weight", mix.attn_out, q, e, kOutGain));
    if (gpt_oss) {
      plan.push_back({b + "attn_output.bias", GgmlType::F32, {e}, Fill::Bias, 0.5f});
      plan.push_back({b + "attn_sinks.weight", GgmlType::F32, {s.n_head}, Fill::Bias, 1.0f});
    }
    if (post_norms) plan.push_back(norm(b + "post_attention_norm.weight", e, kPostNormCenter));
    // gpt-oss's feed-forward pre-norm is named post_attention_norm
    plan.push_back(norm(b + (gpt_oss ? "post_attention_norm.weight" : "ffn_norm.weight"), e));
    if (s.n_expert > 0) {
      push_expert_plan(s, mix, b, down_type, plan);
      continue;
    }
    if (s.arch == SynthArch::Phi3) {
      plan.push_back(matrix(b + "ffn_up.weight", mix.ffn_gate_up, e, 2 * ff));  // [gate; up]
    } else {
      plan.push_back(matrix(b + "ffn_gate.weight", mix.ffn_gate_up, e, ff));
      plan.push_back(matrix(b + "ffn_up.weight", mix.ffn_gate_up, e, ff));
    }
    plan.push_back(matrix(b + "ffn_down.weight", down_type, ff, e, kOutGain));
    if (post_norms) plan.push_back(norm(b + "post_ffw_norm.weight", e, kPostNormCenter));
  }
  plan.push_back(norm("output_norm.weight", e));
  if (!s.tied) {
    TensorPlan out = matrix("output.weight", mix.output, e, n_vocab, 2.0f);
    out.is_output = true;
    plan.push_back(out);
  }
  return plan;
}

}  // namespace runnel::cli
