// A model: its weights (resolved, repacked), the buffers of a forward pass, and the
// building blocks every family's forward function is made of (embedding lookup, norms,
// the attention and feed-forward blocks, the output head). Each family has one forward
// function, read top to bottom: llama.cpp (llama, qwen2, qwen3, phi3), gemma.cpp (gemma,
// gemma2, gemma3) and bert.cpp (the encoder-only embedding models bert, nomic-bert). A
// new family is a config (config.cpp) plus one forward function.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/kv/kv_cache.h"
#include "core/model/attention.h"
#include "core/model/config.h"
#include "core/model/matmul.h"
#include "core/host/parallel.h"
#include "core/host/weight_store.h"
#include "kernels/ops.h"

namespace runnel {

// Whether the load repacks tensor `t` of a model with config `c` into x8 groups with the
// kernels chosen now (Model::repack_weights; the CLI's load progress counts the same):
// an x8 product, rows a multiple of kX8Rows; an embedding is looked up by row, so only
// when it is also the output projection and the kernels can give a row back; a fused
// tensor (phi3's attn_qkv, ffn_up) only when each of its parts starts on a group.
bool x8_repacks(const ModelConfig& c, const GgufTensorInfo& t);

// Every buffer a forward pass writes, allocated once per session for batches of up
// to n_batch tokens. Nothing is allocated per token.
class Model;
struct ForwardScratch {
  // n_tasks: the most tasks attention is cut into (n_tasks_for(par, INT_MAX)).
  // Logits are kept for every token of a batch when all_logits, else for the last
  // 1 + draft_rows (speculative verification: a pending token and its drafts).
  ForwardScratch(const Model& model, int n_batch, int n_ctx, int n_tasks, bool all_logits, int draft_rows = 0);
  // The bytes of the float buffers below (x .. logits) for a model of config `c`, for
  // the memory plan; float_bytes_allocated() is what this one holds.
  static uint64_t float_bytes(const ModelConfig& c, int n_batch, bool all_logits, int draft_rows = 0);
  // Rows of logits a forward pass may write (Model::forward's all_logits needs n <= this).
  static int logit_rows(int n_batch, bool all_logits, int draft_rows);
  uint64_t float_bytes_allocated() const;

  int n_batch;
  // The session's context: picks phi3's long or short LongRoPE factors (Model::rope_factors).
  int n_ctx;
  std::vector<float> x;       // [n_batch, n_embd]  the residual stream
  std::vector<float> xb;      // [n_batch, n_embd]  normed input of a block
  std::vector<float> q;       // [n_batch, q_dim]
  std::vector<float> k;       // [n_batch, kv_dim]
  std::vector<float> v;       // [n_batch, v_dim]
  std::vector<float> attn;    // [n_batch, attn_out_dim]  heads' attention outputs
  std::vector<float> proj;    // [n_batch, n_embd]  attn_output / ffn_down result
  std::vector<float> gate;    // [n_batch, ffn_scratch_width]  then silu(gate) * up
  std::vector<float> up;      // [n_batch, ffn_scratch_width]
  // Mixture of experts (empty without): the router's logits then probabilities, each
  // token's picked experts and weights, the rows routed to one expert, and each
  // (token, pick)'s expert output.
  std::vector<float> router;     // [n_batch, n_expert]
  std::vector<int32_t> picked;   // [n_batch, n_expert_used]
  std::vector<float> pick_w;     // [n_batch, n_expert_used]
  std::vector<int32_t> routed;   // [n_batch * n_expert_used]: (token, pick) indices by expert
  std::vector<float> moe_in;     // [n_batch * n_expert_used, n_embd]
  std::vector<float> moe_out;    // [n_batch * n_expert_used, n_embd]
  std::vector<float> exp_bias;   // [2 n_ff_exp + n_embd]  one expert's gate, up, down biases (gpt-oss)
  std::vector<float> sinks;      // [n_head]  this layer's attention sinks (gpt-oss), or empty
  std::vector<float> norm_w;  // [n_embd]  this layer's norm weights, dequantized
  std::vector<float> norm_b;  // [n_embd]  a LayerNorm's bias (embedding models), or empty
  std::vector<float> bias_qkv;  // [q_dim + kv_dim + v_dim]  q, k, v biases (qwen2, bert), per layer
  std::vector<float> bias_o;    // [n_embd]  attn_output bias, or empty
  std::vector<float> bias_up;   // [n_ff]    ffn_up bias (bert), or empty
  std::vector<float> bias_down; // [n_embd]  ffn_down bias (bert), or empty
  std::vector<float> norm_q;  // [head_dim]  q / k norm weights (qwen3, gemma3), per layer
  std::vector<float> norm_k;  // [head_dim]
  std::vector<float> rope;    // [n_batch, n_rot]  (cos, sin) per pair, per position (empty: no rope)
  std::vector<float> rope_swa;  // [n_batch, n_rot]  the same with the sliding layers' base, or empty
  std::vector<float> logits;  // [logit_rows, n_vocab]; empty for embedding models
  std::vector<uint8_t> embd_row;  // one embedding row in its GGUF blocks (repacked embeddings)
  MatmulScratch mm;           // quantized activations
  AttentionScratch att;       // per-task scores and f16 rows
  std::vector<AttentionRun> att_runs;  // a layer's runs, for one attention dispatch

 private:
  ForwardScratch(const ModelConfig& c, int n_batch, int n_ctx, int n_tasks, bool all_logits, int draft_rows);
};

// A run of a forward pass's rows: n consecutive tokens of one sequence at positions
// pos0 .., its keys and values in `kv`. One run is a prompt chunk or a decode step;
// several runs decode several sequences in one pass (continuous batching).
struct SeqRun {
  KvCache* kv = nullptr;
  int pos0 = 0;
  int n = 0;
};

class Model {
 public:
  // Resolves every tensor (the config has validated them), dequantizes the tensors
  // outside layers that are small (rope_freqs) and repacks the matrices the kernels have
  // an x8 layout for, on `par`'s threads when given. `store` must outlive this.
  Model(const ModelConfig& config, WeightStore& store, Parallel* par = nullptr);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }

  // Largest activation row (bytes) any matrix of the model takes; sizes MatmulScratch.
  size_t max_activation_row_bytes() const;
  size_t embedding_row_bytes() const;
  // Largest packed activation group (bytes) of the batched products; sizes MatmulScratch.
  size_t max_activation_pack_bytes() const;

  // Runs tokens[0..n) (n <= s.n_batch, ids < n_vocab) at positions pos0 .. pos0+n-1
  // (pos0 + n <= kv.n_ctx()), storing their k, v in `kv`. Writes s.logits: the last
  // token's [n_vocab], or [n, n_vocab] for all tokens when all_logits (n at most the
  // scratch's logit rows). The caller validates; this does not throw.
  // Rotates the cached keys of positions [pos, pos + count) by `delta` positions (RoPE
  // angles add up), after a context shift moved them. Allocation: one row buffer.
  void rerotate_keys(KvCache& kv, int pos, int count, int delta) const;

  // With hidden_out [n, n_embd] (embeddings): writes every token's final-norm hidden
  // state there instead of computing logits (an embedding model's: its last layer's
  // output; it computes no logits, so it needs hidden_out). Runs the family's forward
  // function.
  void forward(std::span<const int32_t> tokens, int pos0, bool all_logits, KvCache& kv,
               ForwardScratch& s, Parallel& par,
               float* hidden_out = nullptr);
  // The same over several runs: tokens holds each run's tokens in order (the runs' n
  // add up to its size, at most s.n_batch); each run reads and writes its own cache.
  // s.logits gets the rows [logits_from, n) (at most the scratch's logit rows).
  // Every row's computation depends only on its own run's cache, so with
  // s.mm.per_token a row gets the bits it would get in a pass of its own (and a first
  // run of s.mm.gemm_tokens rows the bits of its own pass without per_token). Embedding
  // models take one run.
  void forward_runs(std::span<const int32_t> tokens, std::span<const SeqRun> runs, int logits_from,
                    ForwardScratch& s, Parallel& par, float* hidden_out = nullptr);
  // Whether forward_runs keeps those bits for runs of several rows beside others: not
  // for a mixture of experts, whose products group rows by expert across runs.
  static bool mixes_runs(const ModelConfig& c) { return c.generative() && !c.is_moe(); }

 private:
  struct LayerTensors {
    const GgufTensorInfo* attn_norm;  // null in embedding models (post-norm)
    const GgufTensorInfo* wq;
    const GgufTensorInfo* wk;
    const GgufTensorInfo* wv;
    const GgufTensorInfo* wqkv;  // phi3: q, k, v rows fused (wq, wk, wv null then)
    const GgufTensorInfo* bq;  // qwen2, bert (separate q, k, v)
    const GgufTensorInfo* bk;
    const GgufTensorInfo* bv;
    const GgufTensorInfo* bqkv;  // bert with a fused attn_qkv: attn_qkv.bias
    const GgufTensorInfo* q_norm;  // qwen3, gemma3 only
    const GgufTensorInfo* k_norm;
    const GgufTensorInfo* wo;
    const GgufTensorInfo* bo;  // attn_output.bias (embedding models that have it)
    const GgufTensorInfo* post_attn_norm;  // gemma2, gemma3 only
    const GgufTensorInfo* ffn_norm;        // null in embedding models
    const GgufTensorInfo* w_gate;  // null when fused into w_up (phi3) or absent (bert)
    const GgufTensorInfo* w_up;    // phi3: [n_embd, 2 n_ff], the gate rows then the up rows
    const GgufTensorInfo* w_down;
    const GgufTensorInfo* post_ffn_norm;  // gemma2, gemma3 only
    // mixture of experts (w_gate, w_up, w_down null): the router [n_embd, n_expert], the
    // experts' stacks [n_in, n_out, n_expert]; qwen2moe's shared expert and its gate
    const GgufTensorInfo* router;
    const GgufTensorInfo* gate_exps;
    const GgufTensorInfo* up_exps;
    const GgufTensorInfo* down_exps;
    const GgufTensorInfo* shexp_gate_inp;
    const GgufTensorInfo* shexp_gate;
    const GgufTensorInfo* shexp_up;
    const GgufTensorInfo* shexp_down;
    // gpt-oss: the router's and the experts' biases ([n_expert], [n_out, n_expert]) and
    // the attention sinks [n_head]
    const GgufTensorInfo* router_b;
    const GgufTensorInfo* gate_exps_b;
    const GgufTensorInfo* up_exps_b;
    const GgufTensorInfo* down_exps_b;
    const GgufTensorInfo* attn_sinks;
    const GgufTensorInfo* b_up;    // bert's ffn_up.bias / ffn_down.bias
    const GgufTensorInfo* b_down;
    // embedding models: LayerNorm after the attention / feed-forward residual
    const GgufTensorInfo* attn_out_norm;
    const GgufTensorInfo* attn_out_norm_b;
    const GgufTensorInfo* layer_out_norm;
    const GgufTensorInfo* layer_out_norm_b;
  };

  // The families' forward functions (forward's contract).
  void forward_llama(std::span<const int32_t> tokens, std::span<const SeqRun> runs, int logits_from,
                     ForwardScratch& s, Parallel& par, float* hidden_out);
  void forward_gemma(std::span<const int32_t> tokens, std::span<const SeqRun> runs, int logits_from,
                     ForwardScratch& s, Parallel& par, float* hidden_out);
  void forward_bert(std::span<const int32_t> tokens, std::span<const SeqRun> runs, ForwardScratch& s,
                    Parallel& par, float* hidden_out);

  // ---- building blocks of the forward functions (n tokens at positions pos0 ..)
  // s.x [n, n_embd] = the tokens' embedding rows * config.embd_scale (+ token type row 0,
  // + position rows: bert); s.rope (and s.rope_swa) = each position's rotation.
  void embed(std::span<const int32_t> tokens, std::span<const SeqRun> runs, ForwardScratch& s);
  // out [n, n_embd] = rms_norm(in) * weight, row by row (in may be out).
  void norm_rows(const GgufTensorInfo* weight, const float* in, float* out, int n, ForwardScratch& s);
  // out [n, n_embd] = layer_norm(in) * weight + bias, row by row (in may be out).
  void layer_norm_rows(const GgufTensorInfo* weight, const GgufTensorInfo* bias, const float* in, float* out,
                       int n, ForwardScratch& s);
  // s.proj [n, n_embd] = W_o attention(s.xb) (+ bias) for layer l: q, k, v (+ biases,
  // q/k norms, rope), k and v stored in the cache, then the heads' attention over it.
  void attention_block(int l, int n, std::span<const SeqRun> runs, ForwardScratch& s, Parallel& par);
  // s.proj [n, n_embd] = W_down act(W_gate s.xb) * (W_up s.xb) for layer l, or
  // W_down act(W_up s.xb + b_up) + b_down without a gate (bert).
  void ffn_block(int l, int n, ForwardScratch& s, Parallel& par);
  // The same for a mixture-of-experts layer (core/model/moe.cpp): each token's
  // n_expert_used experts by the router, each expert's product once over the tokens
  // routed to it, the outputs weighted and summed in each token's pick order (+ the
  // shared expert, qwen2moe).
  void moe_block(int l, int n, ForwardScratch& s, Parallel& par);
  // s.logits = lm_head(rms_norm(x) * output_norm) (soft-capped where the family says),
  // for rows [logits_from, n); or every row's normed hidden state into hidden_out.
  void output(int n, int logits_from, ForwardScratch& s, Parallel& par, float* hidden_out);

  Matrix matrix(const GgufTensorInfo* t);
  // Expert e's matrix of a stack [n_in, n_out, n_expert] (no copy).
  Matrix expert_matrix(const GgufTensorInfo* t, int e);
  // Row e of a bias stack [n_out, n_expert] as floats: the mapped row itself when F32,
  // else decoded into `tmp` (n_out floats); nullptr when t is.
  const float* expert_bias(const GgufTensorInfo* t, int e, float* tmp);
  // A layer's q, k, v matrices and its gate, up matrices: the tensors, or row ranges of
  // the fused ones (no copy: the products write straight into s.q / s.k / s.v, s.gate / s.up).
  std::array<Matrix, 3> qkv_matrices(const LayerTensors& w);
  std::array<Matrix, 2> gate_up_matrices(const LayerTensors& w);
  // The per-pair frequency divisors for a session of n_ctx positions: rope_freqs (llama
  // 3); phi3's LongRoPE long factors when n_ctx exceeds config.n_ctx_orig, else its short
  // ones (llama.cpp's get_rope_factors); or nullptr.
  const float* rope_factors(int n_ctx) const;
  void dequantize(const GgufTensorInfo* t, float* dst);
  // Rewrites the matrices the kernels have a row-interleaved layout for into copies the
  // store keeps (WeightStore::copy_space), where the store offers that.
  void repack_weights(Parallel& par);

  ModelConfig config_;
  WeightStore& store_;
  std::unordered_map<const GgufTensorInfo*, const uint8_t*> x8_;  // repacked matrices
  std::vector<LayerTensors> layers_;
  const GgufTensorInfo* token_embd_;
  const GgufTensorInfo* output_norm_;  // null in embedding models
  const GgufTensorInfo* output_;   // token_embd_ when tied; null in embedding models
  const GgufTensorInfo* token_types_ = nullptr;    // embedding models, when present
  const GgufTensorInfo* position_embd_ = nullptr;  // bert
  const GgufTensorInfo* embd_norm_ = nullptr;      // token_embd_norm (embedding models)
  const GgufTensorInfo* embd_norm_b_ = nullptr;
  std::vector<float> rope_freqs_;  // [n_rot/2] or empty
  std::vector<float> rope_long_;   // [n_rot/2] phi3 LongRoPE factors, or empty
  std::vector<float> rope_short_;  // [n_rot/2]
};

// The rope parameters of a layer's keys and queries (sliding layers may have their own
// base; YaRN and the cos/sin scale from the config); freq_factors: Model::rope_factors.
RopeParams rope_params(const ModelConfig& c, bool sliding, const float* freq_factors);

}  // namespace runnel
