#include "core/model/config.h"

#include <cmath>
#include <limits>
#include <string>

#include "kernels/kernels.h"

namespace runnel {
namespace {

std::string key_of(const std::string& arch, std::string_view suffix) {
  return arch + "." + std::string(suffix);
}

// An integer hyper-parameter in [min, max]; `fallback` < 0 means the key is required.
int read_int(const GgufMetadata& md, const std::string& key, int64_t min, int64_t fallback) {
  const std::optional<int64_t> v = md.find_i64(key);
  if (!v) {
    if (fallback < 0) throw GgufError("missing metadata key '" + key + "'");
    return static_cast<int>(fallback);
  }
  constexpr int64_t kMax = 1 << 24;  // far above any real dimension; keeps int math safe
  if (*v < min || *v > kMax) {
    throw GgufError("metadata " + key + " = " + std::to_string(*v) + ": expected a value in [" +
                    std::to_string(min) + ", " + std::to_string(kMax) + "]");
  }
  return static_cast<int>(*v);
}

float read_float(const GgufMetadata& md, const std::string& key, float fallback, bool positive) {
  const std::optional<double> v = md.find_f64(key);
  if (!v) return fallback;
  if (!(*v == *v) || (positive && !(*v > 0.0)) || *v > 1e30 || *v < -1e30) {
    throw GgufError("metadata " + key + " = " + std::to_string(*v) + ": expected a " +
                    (positive ? "positive " : "") + "finite number");
  }
  return static_cast<float>(*v);
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string layer_name(int layer, std::string_view suffix) {
  return "blk." + std::to_string(layer) + "." + std::string(suffix);
}

bool is_llama_family(Arch a) {
  return a == Arch::Llama || a == Arch::Qwen2 || a == Arch::Qwen3 || a == Arch::Qwen2Moe || a == Arch::Qwen3Moe ||
         a == Arch::GptOss;
}

// rope.scaling.*: the type and factor, the original context (YaRN's, and where Phi-3's
// LongRoPE switches to its long factors) and the cos/sin scale, which llama.cpp applies
// to every family (Phi-3 converters write LongRoPE's sqrt(1 + ln(s) / ln(n_ctx_orig)),
// s = context_length / n_ctx_orig, there; without the key it is 1, as in llama.cpp).
void read_rope_scaling(const GgufMetadata& md, const std::string& arch, ModelConfig& c) {
  c.n_ctx_orig = read_int(md, key_of(arch, "rope.scaling.original_context_length"), 1, c.n_ctx_train);
  c.rope_attn_factor = read_float(md, key_of(arch, "rope.scaling.attn_factor"), 1.0f, true);
  const std::optional<std::string> type = md.find_string(key_of(arch, "rope.scaling.type"));
  const float factor = read_float(md, key_of(arch, "rope.scaling.factor"), 0.0f, false);
  if (!type || *type == "none") {
    // Older files state linear scaling as rope.scale_linear.
    const float linear = read_float(md, key_of(arch, "rope.scale_linear"), 1.0f, true);
    c.rope_freq_scale = 1.0f / linear;
    return;
  }
  if (*type == "linear") {
    if (!(factor > 0.0f)) {
      throw GgufError("metadata " + key_of(arch, "rope.scaling.factor") + " = " +
                      std::to_string(factor) + ": linear rope scaling needs a positive factor");
    }
    c.rope_scaling = RopeScaling::Linear;
    c.rope_freq_scale = 1.0f / factor;
    return;
  }
  if (*type == "yarn") {
    if (!is_llama_family(c.arch)) {
      throw GgufError("rope scaling type 'yarn' is not supported for " + arch +
                      " (supported there: none, linear)");
    }
    // A factor below 1 would shrink the context; llama.cpp's magnitude correction
    // assumes one above it.
    if (!(factor >= 1.0f)) {
      throw GgufError("metadata " + key_of(arch, "rope.scaling.factor") + " = " +
                      std::to_string(factor) + ": yarn rope scaling needs a factor >= 1");
    }
    c.rope_scaling = RopeScaling::Yarn;
    c.rope_freq_scale = 1.0f / factor;
    // llama.cpp reads the betas for a few other families only and uses these defaults
    // for llama and qwen; converters write them from config.json, where they are the
    // same defaults. rope.scaling.yarn_ext_factor / yarn_attn_factor are ignored like
    // llama.cpp does for these families.
    c.yarn_beta_fast = read_float(md, key_of(arch, "rope.scaling.yarn_beta_fast"), 32.0f, true);
    c.yarn_beta_slow = read_float(md, key_of(arch, "rope.scaling.yarn_beta_slow"), 1.0f, true);
    return;
  }
  throw GgufError("rope scaling type '" + *type +
                  "' is not supported (supported: none, linear, yarn)");
}

struct ArchInfo {
  Arch arch;
  std::string_view name;
};

constexpr ArchInfo kArchs[] = {
    {Arch::Llama, "llama"},   {Arch::Qwen2, "qwen2"},   {Arch::Qwen3, "qwen3"},
    {Arch::Gemma, "gemma"},   {Arch::Gemma2, "gemma2"}, {Arch::Gemma3, "gemma3"},
    {Arch::Phi3, "phi3"},     {Arch::Bert, "bert"},     {Arch::NomicBert, "nomic-bert"},
    {Arch::Qwen2Moe, "qwen2moe"}, {Arch::Qwen3Moe, "qwen3moe"}, {Arch::Olmoe, "olmoe"},
    {Arch::GptOss, "gpt-oss"},
};

bool is_gemma(Arch a) { return a == Arch::Gemma || a == Arch::Gemma2 || a == Arch::Gemma3; }
bool is_bert_family(Arch a) { return a == Arch::Bert || a == Arch::NomicBert; }

// The family's fixed traits (what its GGUF metadata does not state).
void set_family_traits(ModelConfig& c) {
  c.rope_type = c.arch == Arch::Llama ? RopeType::Normal : RopeType::Neox;
  c.has_qkv_bias = c.arch == Arch::Qwen2;
  c.has_qk_norm = c.arch == Arch::Qwen3 || c.arch == Arch::Gemma3 || c.arch == Arch::Qwen3Moe;
  c.has_full_qk_norm = c.arch == Arch::Olmoe;
  // llama.cpp's norm_w: Mixtral (llama) and qwen3moe renormalize the picked experts'
  // probabilities; qwen2moe and olmoe keep the softmax's.
  c.expert_weights_norm = c.arch == Arch::Llama || c.arch == Arch::Qwen3Moe;
  c.has_shared_expert = c.arch == Arch::Qwen2Moe;
  if (c.arch == Arch::GptOss) {
    // q/k/v and output biases, attention sinks, biased experts picked by their logits
    c.has_qkv_bias = c.has_attn_out_bias = c.has_attn_sinks = c.has_expert_bias = true;
    c.ffn_norm_is_post_attention = true;
    c.expert_gating = ExpertGating::SoftmaxWeight;
    c.ffn_act = FfnAct::SwigluOai;
  }
  c.has_post_norms = c.arch == Arch::Gemma2 || c.arch == Arch::Gemma3;
  if (is_gemma(c.arch)) c.ffn_act = FfnAct::Gelu;
  c.fused_gate_up = c.arch == Arch::Phi3;
  if (is_bert_family(c.arch)) {
    // bert: learned positions, GELU feed-forward W_down gelu(W_up x); nomic-bert: neox
    // rope, SwiGLU W_down (silu(W_gate x) * W_up x). Both post-norm LayerNorm encoders.
    c.embedding_only = true;
    c.has_rope = c.arch == Arch::NomicBert;
    c.has_position_embd = c.arch == Arch::Bert;
    c.ffn_gated = c.arch == Arch::NomicBert;
    c.ffn_act = c.arch == Arch::Bert ? FfnAct::Gelu : FfnAct::Silu;
  }
}

// Which layers use the sliding window: the key's per-layer flags, or a period n where
// every n-th layer (the last of each period) attends globally, as llama.cpp reads it.
void read_swa_layers(const GgufMetadata& md, const std::string& arch, int default_period, ModelConfig& c) {
  c.swa_layers.assign(c.n_layer, true);
  const std::string key = key_of(arch, "attention.sliding_window_pattern");
  if (const GgufValue* v = md.find(key); v && v->type == GgufType::ARRAY) {
    if (static_cast<int>(v->array_size()) != c.n_layer) {
      throw GgufError("metadata " + key + ": " + std::to_string(v->array_size()) + " flags for " +
                      std::to_string(c.n_layer) + " layers");
    }
    if (v->elem_type == GgufType::BOOL) {
      c.swa_layers = std::get<std::vector<bool>>(v->value);
    } else {
      const std::optional<std::vector<int64_t>> flags = md.find_i64_array(key);
      for (int l = 0; l < c.n_layer; ++l) c.swa_layers[l] = (*flags)[l] != 0;
    }
    return;
  }
  const int period = read_int(md, key, 0, default_period);
  for (int l = 0; l < c.n_layer; ++l) c.swa_layers[l] = period == 0 || l % period < period - 1;
}

// Sliding windows, soft-capping, the embedding scale and the attention scale.
void read_family_hparams(const GgufMetadata& md, const std::string& a, ModelConfig& c) {
  c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (is_gemma(c.arch)) c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  // Gemma 2 / 3 27B scale queries by the model width per head, not the head size.
  if ((c.arch == Arch::Gemma2 && c.n_layer == 46) || (c.arch == Arch::Gemma3 && c.n_layer == 62)) {
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head));
  }
  if (c.arch == Arch::Gemma2) {
    // Gemma 2's caps when the file omits them, as llama.cpp assumes
    c.attn_softcap = read_float(md, key_of(a, "attn_logit_softcapping"), 50.0f, false);
    c.final_softcap = read_float(md, key_of(a, "final_logit_softcapping"), 30.0f, false);
  }
  if (c.arch == Arch::Gemma3) c.final_softcap = read_float(md, key_of(a, "final_logit_softcapping"), 0.0f, false);
  if (c.attn_softcap < 0.0f || c.final_softcap < 0.0f) {
    throw GgufError("metadata " + key_of(a, "*_logit_softcapping") + ": expected a non-negative cap");
  }

  const std::string swa_key = key_of(a, "attention.sliding_window");
  c.rope_freq_base_swa = c.rope_freq_base;
  c.rope_freq_scale_swa = c.rope_freq_scale;
  if (c.arch == Arch::Gemma2) {
    c.n_swa = read_int(md, swa_key, 0, 4096);  // Gemma 2's window when the file omits it
    read_swa_layers(md, a, 2, c);
  } else if (c.arch == Arch::Gemma3) {
    c.n_swa = read_int(md, swa_key, 0, 0);
    read_swa_layers(md, a, 6, c);
    c.rope_freq_base_swa = 10000.0f;  // Gemma 3's local layers keep the original base
    c.rope_freq_scale_swa = 1.0f;
  } else if (c.arch == Arch::GptOss) {
    // every other layer slides (layer 0 first), as llama.cpp reads it
    c.n_swa = read_int(md, swa_key, 1, -1);
    read_swa_layers(md, a, 2, c);
  } else if (c.arch == Arch::Llama) {
    // Mistral v0.1 style: every layer slides (unless the pattern key says otherwise).
    // llama.cpp ignores this key; the model was trained with it.
    c.n_swa = read_int(md, swa_key, 0, 0);
    if (c.n_swa > 0) read_swa_layers(md, a, 0, c);
  }
  // phi3: attention.sliding_window is ignored. llama.cpp disables Phi's sliding window
  // (its converters do not say which layers slide; llama.cpp PR 13676), so for parity
  // every layer attends to the whole context here too.
  c.rope_freq_base_swa = read_float(md, key_of(a, "rope.freq_base_swa"), c.rope_freq_base_swa, true);
  if (c.swa_layers.empty()) c.swa_layers.assign(c.n_layer, false);
}

// The embedding models' metadata and optional tensors: pooling, causal attention,
// LayerNorm epsilon, token types, and which biases / fused matrices the file has
// (llama.cpp reads each as optional; validate_tensors then wants it in every layer).
void read_embedding_hparams(const GgufModel& model, const std::string& a, ModelConfig& c) {
  const GgufMetadata& md = model.metadata;
  const std::string pooling_key = key_of(a, "pooling_type");
  const std::optional<int64_t> pooling = md.find_i64(pooling_key);
  if (!pooling) {
    throw GgufError("missing metadata key '" + pooling_key +
                    "' (an embedding model needs its pooling: 1 mean, 2 cls or 3 last)");
  }
  switch (*pooling) {
    case 1: c.pooling = Pooling::Mean; break;
    case 2: c.pooling = Pooling::Cls; break;
    case 3: c.pooling = Pooling::Last; break;
    default: {
      const std::string name = *pooling == 0   ? " (none: per-token embeddings)"
                               : *pooling == 4 ? " (rank: a reranker's classification head)"
                                               : " (unknown)";
      throw GgufError("metadata " + pooling_key + " = " + std::to_string(*pooling) + name +
                      " is not supported (supported: 1 mean, 2 cls, 3 last)");
    }
  }
  if (const GgufValue* causal = md.find(key_of(a, "attention.causal"))) {
    if (causal->type != GgufType::BOOL) {
      throw GgufError("metadata " + key_of(a, "attention.causal") + ": expected a bool");
    }
    c.causal_attn = std::get<bool>(causal->value);
  }
  const std::string eps_key = key_of(a, "attention.layer_norm_epsilon");
  if (!md.has(eps_key)) throw GgufError("missing metadata key '" + eps_key + "'");
  c.norm_eps = read_float(md, eps_key, 1e-12f, true);
  // llama.cpp refuses these models without a token type count, even with no token_types.
  c.n_token_types = read_int(md, "tokenizer.ggml.token_type_count", 1, 0);
  if (c.n_token_types == 0) {
    throw GgufError("missing metadata key 'tokenizer.ggml.token_type_count' (a " + a +
                    " model needs its token type count)");
  }
  c.has_token_types = model.find_tensor("token_types.weight") != nullptr;
  c.fused_qkv = model.find_tensor("blk.0.attn_qkv.weight") != nullptr;
  c.has_qkv_bias = model.find_tensor(c.fused_qkv ? "blk.0.attn_qkv.bias" : "blk.0.attn_q.bias") != nullptr;
  c.has_attn_out_bias = model.find_tensor("blk.0.attn_output.bias") != nullptr;
  // nomic-bert's feed-forward has no biases (llama.cpp applies none there).
  c.has_ffn_bias = c.arch == Arch::Bert && model.find_tensor("blk.0.ffn_up.bias") != nullptr;
  c.tied_output = false;  // no output head at all
}

// Mixture of experts: {arch}.expert_count and the keys that go with it. The MoE
// families need experts; llama has them when the key says so (Mixtral); any other
// family with experts is refused by name.
void read_expert_hparams(const GgufModel& model, const std::string& a, ModelConfig& c) {
  const GgufMetadata& md = model.metadata;
  const bool moe_family =
      c.arch == Arch::Qwen2Moe || c.arch == Arch::Qwen3Moe || c.arch == Arch::Olmoe || c.arch == Arch::GptOss;
  c.n_expert = read_int(md, key_of(a, "expert_count"), 0, 0);
  if (c.n_expert == 0) {
    if (moe_family) throw GgufError("missing metadata key '" + key_of(a, "expert_count") + "' (a " + a + " model has experts)");
    c.expert_weights_norm = c.has_shared_expert = false;
    return;
  }
  if (!moe_family && c.arch != Arch::Llama) {
    throw GgufError("mixture-of-experts " + a + " models are not supported (" + key_of(a, "expert_count") + " = " +
                    std::to_string(c.n_expert) + "; experts run in llama, qwen2moe, qwen3moe, olmoe, gpt-oss)");
  }
  if (c.n_expert > kMaxExperts) {
    throw GgufError("metadata " + key_of(a, "expert_count") + " = " + std::to_string(c.n_expert) +
                    ": at most " + std::to_string(kMaxExperts) + " experts");
  }
  c.n_expert_used = read_int(md, key_of(a, "expert_used_count"), 1, -1);
  if (c.n_expert_used > c.n_expert) {
    throw GgufError("metadata " + key_of(a, "expert_used_count") + " = " + std::to_string(c.n_expert_used) +
                    ": more than the " + std::to_string(c.n_expert) + " experts");
  }
  // qwen2moe / qwen3moe state the experts' width (else n_ff / n_expert_used, as llama.cpp
  // assumes); Mixtral's and olmoe's experts are feed_forward_length wide.
  const bool own_width = c.arch == Arch::Qwen2Moe || c.arch == Arch::Qwen3Moe || c.arch == Arch::GptOss;
  const int64_t fallback = c.arch == Arch::GptOss ? -1 : c.n_ff / c.n_expert_used;  // gpt-oss must say
  c.n_ff_exp = own_width ? read_int(md, key_of(a, "expert_feed_forward_length"), 1, fallback) : c.n_ff;
  if (c.n_ff_exp < 1) throw GgufError("metadata " + key_of(a, "expert_feed_forward_length") + ": expected a positive width");
  if (c.has_shared_expert) c.n_ff_shexp = read_int(md, key_of(a, "expert_shared_feed_forward_length"), 1, c.n_ff);
  // Qwen1.5-MoE has q, k, v biases; llama.cpp reads them where the file has them.
  if (c.arch == Arch::Qwen2Moe) c.has_qkv_bias = model.find_tensor("blk.0.attn_q.bias") != nullptr;
}

}  // namespace

std::string_view arch_name(Arch arch) {
  for (const ArchInfo& info : kArchs) {
    if (info.arch == arch) return info.name;
  }
  return "?";
}

std::string_view pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
  }
  return "?";
}

std::string supported_arch_list() {
  std::string list;
  for (const ArchInfo& info : kArchs) list += (list.empty() ? "" : ", ") + std::string(info.name);
  return list;
}

ModelConfig ModelConfig::from_model(const GgufModel& model) {
  const GgufMetadata& md = model.metadata;
  ModelConfig c;
  const std::optional<std::string> arch = md.find_string("general.architecture");
  if (!arch) throw GgufError("missing metadata key 'general.architecture'");
  const ArchInfo* info = nullptr;
  for (const ArchInfo& i : kArchs) {
    if (i.name == *arch) info = &i;
  }
  if (!info) throw GgufError("unsupported architecture '" + *arch + "' (supported: " + supported_arch_list() + ")");
  c.arch = info->arch;
  set_family_traits(c);
  c.arch_name = *arch;
  const std::string& a = *arch;
  if (model.tensors.empty()) {
    throw GgufError(
        "the file has no tensors (a vocabulary-only GGUF?): running needs the "
        "model's weights");
  }

  c.n_ctx_train = read_int(md, key_of(a, "context_length"), 1, -1);
  c.n_embd = read_int(md, key_of(a, "embedding_length"), 1, -1);
  c.n_layer = read_int(md, key_of(a, "block_count"), 1, -1);
  c.n_ff = read_int(md, key_of(a, "feed_forward_length"), 1, -1);
  c.n_head = read_int(md, key_of(a, "attention.head_count"), 1, -1);
  c.n_head_kv = read_int(md, key_of(a, "attention.head_count_kv"), 1, c.n_head);
  if (c.n_head % c.n_head_kv != 0) {
    throw GgufError("attention.head_count " + std::to_string(c.n_head) +
                    " is not a multiple of attention.head_count_kv " + std::to_string(c.n_head_kv));
  }
  if (c.n_embd % c.n_head != 0 && !md.has(key_of(a, "attention.key_length"))) {
    throw GgufError("embedding_length " + std::to_string(c.n_embd) +
                    " is not a multiple of attention.head_count " + std::to_string(c.n_head));
  }
  c.head_dim = read_int(md, key_of(a, "attention.key_length"), 1, c.n_embd / c.n_head);
  c.head_dim_v = read_int(md, key_of(a, "attention.value_length"), 1, c.head_dim);
  c.rms_eps = read_float(md, key_of(a, "attention.layer_norm_rms_epsilon"), 1e-5f, true);

  c.n_rot = read_int(md, key_of(a, "rope.dimension_count"), 2, c.head_dim);
  if (c.n_rot % 2 != 0 || c.n_rot > c.head_dim) {
    throw GgufError("metadata " + key_of(a, "rope.dimension_count") + " = " +
                    std::to_string(c.n_rot) + ": expected an even number <= head size " +
                    std::to_string(c.head_dim));
  }
  c.rope_freq_base = read_float(md, key_of(a, "rope.freq_base"), 10000.0f, true);
  read_rope_scaling(md, a, c);

  // The vocabulary: the tokenizer's list when present, else the embedding's rows.
  if (const std::vector<std::string>* tokens = md.find_string_array("tokenizer.ggml.tokens")) {
    c.n_vocab = static_cast<int>(tokens->size());
  } else if (const GgufTensorInfo* embd = model.find_tensor("token_embd.weight");
             embd && embd->dims.size() == 2) {
    c.n_vocab = static_cast<int>(embd->dims[1]);
  }
  if (c.n_vocab <= 0) {
    throw GgufError(
        "cannot tell the vocabulary size: no tokenizer.ggml.tokens and no 2-d "
        "token_embd.weight");
  }

  read_family_hparams(md, a, c);
  read_expert_hparams(model, a, c);
  // Gemma 1 and 2 always read the embedding as the lm_head, like llama.cpp.
  c.tied_output = model.find_tensor("output.weight") == nullptr || c.arch == Arch::Gemma ||
                  c.arch == Arch::Gemma2;
  // phi3 reads LongRoPE's factors instead of rope_freqs (llama.cpp's get_rope_factors),
  // and either one fused attn_qkv or separate q, k, v matrices.
  if (c.embedding_only) {
    read_embedding_hparams(model, a, c);
  } else if (c.arch == Arch::Phi3) {
    c.has_longrope = model.find_tensor("rope_factors_long.weight") != nullptr ||
                     model.find_tensor("rope_factors_short.weight") != nullptr;
    c.fused_qkv = model.find_tensor("blk.0.attn_qkv.weight") != nullptr;
  } else {
    c.has_rope_freqs = model.find_tensor("rope_freqs.weight") != nullptr;
  }
  validate_tensors(c, model);
  return c;
}

namespace {

// q, k, v: one fused matrix or three, and their biases where the config has them.
void push_qkv(const ModelConfig& c, int l, std::vector<ExpectedTensor>& t) {
  if (c.fused_qkv) {
    const int rows = c.q_dim() + c.kv_dim() + c.v_dim();
    t.push_back({layer_name(l, "attn_qkv.weight"), {c.n_embd, rows}});
    if (c.has_qkv_bias) t.push_back({layer_name(l, "attn_qkv.bias"), {rows}});
    return;
  }
  t.push_back({layer_name(l, "attn_q.weight"), {c.n_embd, c.q_dim()}});
  t.push_back({layer_name(l, "attn_k.weight"), {c.n_embd, c.kv_dim()}});
  t.push_back({layer_name(l, "attn_v.weight"), {c.n_embd, c.v_dim()}});
  if (c.has_qkv_bias) {
    t.push_back({layer_name(l, "attn_q.bias"), {c.q_dim()}});
    t.push_back({layer_name(l, "attn_k.bias"), {c.kv_dim()}});
    t.push_back({layer_name(l, "attn_v.bias"), {c.v_dim()}});
  }
}

// A mixture-of-experts feed-forward: the router, the experts' stacked matrices and
// qwen2moe's shared expert with its gate.
void push_experts(const ModelConfig& c, int l, std::vector<ExpectedTensor>& t) {
  t.push_back({layer_name(l, "ffn_gate_inp.weight"), {c.n_embd, c.n_expert}});
  t.push_back({layer_name(l, "ffn_gate_exps.weight"), {c.n_embd, c.n_ff_exp, c.n_expert}});
  t.push_back({layer_name(l, "ffn_up_exps.weight"), {c.n_embd, c.n_ff_exp, c.n_expert}});
  t.push_back({layer_name(l, "ffn_down_exps.weight"), {c.n_ff_exp, c.n_embd, c.n_expert}});
  if (c.has_expert_bias) {
    t.push_back({layer_name(l, "ffn_gate_inp.bias"), {c.n_expert}});
    t.push_back({layer_name(l, "ffn_gate_exps.bias"), {c.n_ff_exp, c.n_expert}});
    t.push_back({layer_name(l, "ffn_up_exps.bias"), {c.n_ff_exp, c.n_expert}});
    t.push_back({layer_name(l, "ffn_down_exps.bias"), {c.n_embd, c.n_expert}});
  }
  if (c.has_shared_expert) {
    t.push_back({layer_name(l, "ffn_gate_inp_shexp.weight"), {c.n_embd}, true});
    t.push_back({layer_name(l, "ffn_gate_shexp.weight"), {c.n_embd, c.n_ff_shexp}});
    t.push_back({layer_name(l, "ffn_up_shexp.weight"), {c.n_embd, c.n_ff_shexp}});
    t.push_back({layer_name(l, "ffn_down_shexp.weight"), {c.n_ff_shexp, c.n_embd}});
  }
}

// bert, nomic-bert: embeddings (+ token type row, + positions) and their LayerNorm, then
// post-norm layers; no output norm or head.
std::vector<ExpectedTensor> embedding_model_tensors(const ModelConfig& c) {
  std::vector<ExpectedTensor> t;
  t.push_back({"token_embd.weight", {c.n_embd, c.n_vocab}});
  if (c.has_token_types) t.push_back({"token_types.weight", {c.n_embd, c.n_token_types}});
  if (c.has_position_embd) t.push_back({"position_embd.weight", {c.n_embd, c.n_ctx_train}});
  t.push_back({"token_embd_norm.weight", {c.n_embd}});
  t.push_back({"token_embd_norm.bias", {c.n_embd}});
  for (int l = 0; l < c.n_layer; ++l) {
    push_qkv(c, l, t);
    t.push_back({layer_name(l, "attn_output.weight"), {c.attn_out_dim(), c.n_embd}});
    if (c.has_attn_out_bias) t.push_back({layer_name(l, "attn_output.bias"), {c.n_embd}});
    t.push_back({layer_name(l, "attn_output_norm.weight"), {c.n_embd}});
    t.push_back({layer_name(l, "attn_output_norm.bias"), {c.n_embd}});
    if (c.ffn_gated) t.push_back({layer_name(l, "ffn_gate.weight"), {c.n_embd, c.n_ff}});
    t.push_back({layer_name(l, "ffn_up.weight"), {c.n_embd, c.n_ff}});
    if (c.has_ffn_bias) t.push_back({layer_name(l, "ffn_up.bias"), {c.n_ff}});
    t.push_back({layer_name(l, "ffn_down.weight"), {c.n_ff, c.n_embd}});
    if (c.has_ffn_bias) t.push_back({layer_name(l, "ffn_down.bias"), {c.n_embd}});
    t.push_back({layer_name(l, "layer_output_norm.weight"), {c.n_embd}});
    t.push_back({layer_name(l, "layer_output_norm.bias"), {c.n_embd}});
  }
  return t;
}

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
  if (c.embedding_only) return embedding_model_tensors(c);
  std::vector<ExpectedTensor> t;
  t.push_back({"token_embd.weight", {c.n_embd, c.n_vocab}});
  if (c.has_rope_freqs) t.push_back({"rope_freqs.weight", {c.n_rot / 2}});
  if (c.has_longrope) {
    t.push_back({"rope_factors_long.weight", {c.n_rot / 2}});
    t.push_back({"rope_factors_short.weight", {c.n_rot / 2}});
  }
  for (int l = 0; l < c.n_layer; ++l) {
    t.push_back({layer_name(l, "attn_norm.weight"), {c.n_embd}});
    push_qkv(c, l, t);
    if (c.has_qk_norm) {
      t.push_back({layer_name(l, "attn_q_norm.weight"), {c.head_dim}});
      t.push_back({layer_name(l, "attn_k_norm.weight"), {c.head_dim}});
    }
    if (c.has_full_qk_norm) {
      t.push_back({layer_name(l, "attn_q_norm.weight"), {c.q_dim()}});
      t.push_back({layer_name(l, "attn_k_norm.weight"), {c.kv_dim()}});
    }
    t.push_back({layer_name(l, "attn_output.weight"), {c.attn_out_dim(), c.n_embd}});
    if (c.has_attn_out_bias) t.push_back({layer_name(l, "attn_output.bias"), {c.n_embd}});
    if (c.has_attn_sinks) t.push_back({layer_name(l, "attn_sinks.weight"), {c.n_head}});
    if (c.has_post_norms) t.push_back({layer_name(l, "post_attention_norm.weight"), {c.n_embd}});
    t.push_back({layer_name(l, c.ffn_norm_is_post_attention ? "post_attention_norm.weight" : "ffn_norm.weight"),
                 {c.n_embd}});
    if (c.is_moe()) {
      push_experts(c, l, t);
    } else if (c.fused_gate_up) {
      t.push_back({layer_name(l, "ffn_up.weight"), {c.n_embd, 2 * c.n_ff}});
    } else {
      t.push_back({layer_name(l, "ffn_gate.weight"), {c.n_embd, c.n_ff}});
      t.push_back({layer_name(l, "ffn_up.weight"), {c.n_embd, c.n_ff}});
    }
    if (!c.is_moe()) t.push_back({layer_name(l, "ffn_down.weight"), {c.n_ff, c.n_embd}});
    if (c.has_post_norms) t.push_back({layer_name(l, "post_ffw_norm.weight"), {c.n_embd}});
  }
  t.push_back({"output_norm.weight", {c.n_embd}});
  if (!c.tied_output) t.push_back({"output.weight", {c.n_embd, c.n_vocab}});
  return t;
}

void validate_tensors(const ModelConfig& config, const GgufModel& model) {
  const KernelTable& table = kernels();
  for (const ExpectedTensor& e : expected_tensors(config)) {
    const GgufTensorInfo* t = model.find_tensor(e.name);
    if (!t) {
      throw GgufError("missing tensor '" + e.name + "' (a " + config.arch_name +
                      " model needs it)");
    }
    if (t->dims != e.dims) {
      throw GgufError("tensor " + e.name + ": expected dims " + dims_text(e.dims) + ", got " +
                      dims_text(t->dims));
    }
    const std::optional<TypeTraits> traits = type_traits(static_cast<uint32_t>(t->type));
    const TypeKernels& k = table.of(t->type);
    if (!traits || !k.supported || !k.dequantize_row) {
      throw GgufError("tensor " + e.name + ": type " + std::string(traits ? traits->name : "?") +
                      " (" + std::to_string(static_cast<uint32_t>(t->type)) + ") is not supported");
    }
    if (e.dims[0] % traits->block_size != 0) {
      throw GgufError("tensor " + e.name + ": row length " + std::to_string(e.dims[0]) +
                      " is not a multiple of the " + std::string(traits->name) + " block size " +
                      std::to_string(traits->block_size));
    }
    if (e.dims.size() >= 2 || e.dotted) {
      // A matrix the forward pass multiplies: activations go to its partner format.
      const std::optional<TypeTraits> act = type_traits(static_cast<uint32_t>(k.vec_dot_type));
      const TypeKernels& ak = table.of(k.vec_dot_type);
      if (!k.vec_dot || !act || !ak.supported ||
          (k.vec_dot_type != GgmlType::F32 && !ak.quantize_row)) {
        throw GgufError("tensor " + e.name + ": no dot product kernel for type " +
                        std::string(traits->name));
      }
      if (e.dims[0] % act->block_size != 0) {
        throw GgufError("tensor " + e.name + ": row length " + std::to_string(e.dims[0]) +
                        " is not a multiple of the activation block size " +
                        std::to_string(act->block_size) + " (" + std::string(act->name) + ")");
      }
    }
  }
}

}  // namespace runnel
