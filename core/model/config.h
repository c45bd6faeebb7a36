// ModelConfig: the hyper-parameters of a model, read from GGUF metadata
// ({arch}.* keys) and checked against its tensor table before any weight is used.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"

namespace runnel {

// The architectures runnel runs (GGUF general.architecture). Each family has one
// forward function: llama (Mixtral too: llama with experts), qwen2, qwen3, phi3, and the
// mixture-of-experts qwen2moe, qwen3moe, olmoe, gpt-oss -> Model::forward_llama (core/model/llama.cpp);
// gemma, gemma2, gemma3 -> Model::forward_gemma (core/model/gemma.cpp); the encoder-only
// embedding models bert, nomic-bert -> Model::forward_bert (core/model/bert.cpp).
enum class Arch { Llama, Qwen2, Qwen3, Gemma, Gemma2, Gemma3, Phi3, Bert, NomicBert, Qwen2Moe, Qwen3Moe, Olmoe, GptOss };

// How an embedding is made of the tokens' final hidden states: their mean, the first
// token's ([CLS]) or the last token's. {arch}.pooling_type 1, 2, 3 (llama.cpp's
// LLAMA_POOLING_TYPE_*); none (0) and rank (4) are refused by name.
enum class Pooling { Mean, Cls, Last };
std::string_view pooling_name(Pooling p);

// How rope pairs dimensions: Normal rotates (2i, 2i+1) (llama), Neox rotates
// (i, i + n_rot/2) (qwen2, qwen3, gemma).
enum class RopeType { Normal, Neox };

// How positions are stretched past the trained context ({arch}.rope.scaling.type):
// linear divides every angle by the factor; YaRN interpolates only the slow pairs
// (kernels/ref/ops.h). Phi-3's LongRoPE is not a type: its per-pair factors are tensors.
enum class RopeScaling { None, Linear, Yarn };

constexpr int kMaxExperts = 512;  // llama.cpp's LLAMA_MAX_EXPERTS

// The feed-forward gate: silu(gate) * up (llama, qwen) or gelu(gate) * up (gemma);
// gpt-oss's experts: min(gate, 7) * sigmoid(1.702 min(gate, 7)) * (clamp(up, -7, 7) + 1).
enum class FfnAct { Silu, Gelu, SwigluOai };

// How a router's logits become the picked experts' weights: the softmax of all logits,
// top-k of it (llama.cpp's SOFTMAX); or top-k of the logits, then the softmax of those
// k (SOFTMAX_WEIGHT: gpt-oss).
enum class ExpertGating { Softmax, SoftmaxWeight };

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string arch_name;  // "llama", "qwen2"

  int n_ctx_train = 0;  // context the model was trained with
  int n_embd = 0;
  int n_layer = 0;
  int n_ff = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;    // key_length: per-head size of q and k
  int head_dim_v = 0;  // value_length: per-head size of v
  int n_vocab = 0;
  float rms_eps = 1e-5f;

  RopeType rope_type = RopeType::Normal;
  int n_rot = 0;  // rotated dims per head (<= head_dim)
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor for linear scaling and YaRN
  bool has_rope_freqs = false;   // rope_freqs.weight: per-pair divisors (llama3)
  RopeScaling rope_scaling = RopeScaling::None;
  float rope_attn_factor = 1.0f;  // scales cos and sin: rope.scaling.attn_factor (LongRoPE's)
  int n_ctx_orig = 0;             // rope.scaling.original_context_length, else n_ctx_train
  float yarn_beta_fast = 32.0f;   // rope.scaling.yarn_beta_fast / _slow (YaRN's ramp ends)
  float yarn_beta_slow = 1.0f;
  // phi3 LongRoPE: rope_factors_long.weight / rope_factors_short.weight, per-pair divisors
  // for sessions longer than n_ctx_orig / the others (Model::rope_factors).
  bool has_longrope = false;

  // Fused matrices (phi3): blk.N.attn_qkv.weight holds the q, k and v rows in that order;
  // blk.N.ffn_up.weight [n_embd, 2 n_ff] the gate rows, then the up rows.
  bool fused_qkv = false;
  bool fused_gate_up = false;

  bool has_qkv_bias = false;    // qwen2; bert (fused: attn_qkv.bias)
  bool has_qk_norm = false;     // qwen3, gemma3: per-head rms norm of q and k before rope
  bool has_full_qk_norm = false;  // olmoe: rms norm of the whole q row and k row (all heads)
  // gpt-oss: a learned logit per query head (attn_sinks) that joins each softmax's max and
  // sum but gets no value: attention may go nowhere.
  bool has_attn_sinks = false;
  // gpt-oss names the feed-forward's pre-norm post_attention_norm (no ffn_norm).
  bool ffn_norm_is_post_attention = false;
  bool has_post_norms = false;  // gemma2, gemma3: norms after attention and feed-forward
  bool tied_output = false;     // the lm_head is token_embd.weight (no output.weight, or gemma 1/2)
  FfnAct ffn_act = FfnAct::Silu;
  float embd_scale = 1.0f;     // embeddings are multiplied by it (gemma: sqrt(n_embd))
  float attn_scale = 0.0f;     // scores = q.k * attn_scale (1 / sqrt(head_dim) unless the family says)
  float attn_softcap = 0.0f;   // > 0: scores = cap * tanh(scores / cap) (gemma2)
  float final_softcap = 0.0f;  // > 0: the same on the logits (gemma2)

  // Encoder-only embedding models (bert, nomic-bert): no lm_head, the output is the
  // pooled hidden states (Session::embed). Blocks are post-norm: x = LayerNorm(x +
  // block(x)) with weight and bias (attn_output_norm, layer_output_norm), after the
  // embeddings' own LayerNorm (token_embd_norm). Generation is refused.
  bool embedding_only = false;
  // {arch}.attention.causal (llama.cpp's default when absent: true). false: every token
  // attends to the whole input, which is then evaluated in one batch (batch_for).
  bool causal_attn = true;
  Pooling pooling = Pooling::Mean;  // generative models: the mean (today's embeddings)
  float norm_eps = 1e-12f;          // LayerNorm epsilon: attention.layer_norm_epsilon
  bool has_rope = true;             // false: bert (learned absolute positions instead)
  bool has_position_embd = false;   // bert: position_embd.weight [n_embd, n_ctx_train]
  // token_types.weight [n_embd, n_token_types] (tokenizer.ggml.token_type_count): row 0
  // (sentence A) is added to every token, as llama.cpp does; false when the file has none.
  bool has_token_types = false;
  int n_token_types = 0;
  bool has_attn_out_bias = false;  // attn_output.bias
  bool has_ffn_bias = false;       // ffn_up.bias and ffn_down.bias (bert)
  bool ffn_gated = true;           // false: W_down act(W_up x) with no gate (bert's GELU)
  bool generative() const { return !embedding_only; }

  // Mixture of experts ({arch}.expert_count > 0): every layer's feed-forward is
  // n_expert_used of n_expert experts picked per token by a router (ffn_gate_inp), each
  // a SwiGLU of n_ff_exp rows (ffn_{gate,up,down}_exps, 3-D: [.., .., n_expert]); the
  // router's softmax probabilities of the picked ones weight their outputs, renormalized
  // to sum 1 where expert_weights_norm (llama.cpp's norm_w: Mixtral, qwen3moe). qwen2moe
  // adds a shared expert of n_ff_shexp rows, gated by sigmoid(ffn_gate_inp_shexp . x).
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;
  bool expert_weights_norm = false;
  bool has_shared_expert = false;
  int n_ff_shexp = 0;
  ExpertGating expert_gating = ExpertGating::Softmax;
  bool has_expert_bias = false;  // gpt-oss: ffn_gate_inp.bias and each expert's biases
  bool is_moe() const { return n_expert > 0; }
  // Floats a token's gate / up rows take: the widest feed-forward, or all its experts'
  // rows side by side (Model::moe_block runs a token's experts together). Sizes the scratch.
  int ffn_scratch_width() const { return std::max({n_ff, n_ff_shexp, n_expert_used * n_ff_exp}); }

  // Sliding-window attention: a layer with swa_layers[l] attends to the last n_swa
  // positions only (query p sees keys p - n_swa < key <= p), with its own rope base.
  int n_swa = 0;  // 0: every layer attends to the whole context
  std::vector<bool> swa_layers;  // [n_layer]
  float rope_freq_base_swa = 10000.0f;
  float rope_freq_scale_swa = 1.0f;
  bool is_swa(int layer) const { return n_swa > 0 && swa_layers[layer]; }
  // Per layer: its sliding window or 0, the KV cache's layout (core/kv/kv_cache.h).
  std::vector<int> kv_windows() const {
    std::vector<int> w(n_layer, 0);
    for (int l = 0; l < n_layer; ++l) w[l] = is_swa(l) ? n_swa : 0;
    return w;
  }

  int q_dim() const { return n_head * head_dim; }           // rows of attn_q
  int kv_dim() const { return n_head_kv * head_dim; }       // rows of attn_k
  int v_dim() const { return n_head_kv * head_dim_v; }      // rows of attn_v
  int attn_out_dim() const { return n_head * head_dim_v; }  // columns of attn_output
  // The context a session gets when none is asked for: the model's, at most 4096
  // (the CLI, the server, the wasm module and the memory plan all start from it).
  int default_n_ctx() const { return std::min(n_ctx_train, 4096); }
  // Tokens per forward pass for a requested n_batch and a session context n_ctx: an
  // embedding model evaluates a whole input at once (its attention may look ahead), so
  // its batch is the context (the memory plan and Engine::load both take this).
  int batch_for(int n_batch, int n_ctx) const { return embedding_only ? n_ctx : std::min(n_batch, n_ctx); }

  // Reads the metadata of `model` and checks every tensor the forward pass uses
  // (presence, dims, type supported by the kernel table). Throws GgufError naming
  // the key or tensor and what was expected.
  static ModelConfig from_model(const GgufModel& model);
};

std::string_view arch_name(Arch arch);

// The architectures from_model accepts, for messages ("llama, qwen2, ...").
std::string supported_arch_list();

// One tensor the forward pass reads, with the dims the config implies (ne[0] first).
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> dims;
  // Multiplied with activations (a matrix, a stack of experts' matrices, or qwen2moe's
  // 1-D shared-expert gate): its type needs a dot product kernel.
  bool dotted = false;
};

// Every tensor of the model for `config`, in forward-pass order.
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// Checks presence, dims and types of expected_tensors(config) in `model`.
void validate_tensors(const ModelConfig& config, const GgufModel& model);

}  // namespace runnel
