// Multi-head attention over the KV cache, causal (or over the whole input for embedding
// models), with grouped-query heads (GQA): query head h reads kv head h / (n_head / n_head_kv).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/kv/kv_cache.h"
#include "core/model/config.h"
#include "core/host/parallel.h"

namespace runnel {

// Per-task buffers, allocated once per session.
class AttentionScratch {
 public:
  // Buffers for n_tasks tasks (make it n_tasks_for(par, large)) that take up to `group`
  // query heads at once (n_head / n_head_kv). Throws std::logic_error if the kernel
  // table's F16 dot takes a blocked format.
  AttentionScratch(int n_tasks, int n_ctx, int head_dim, int group = 1);

  // What the constructor allocates, for the memory plan: act_row_bytes is a row of
  // max(n_ctx, head_dim) elements in the F16 dot's format; widened: the kernels offer
  // FloatOps::dot_f16_f32 (wasm).
  static uint64_t bytes(int n_tasks, int n_ctx, int head_dim, int group, size_t act_row_bytes,
                        bool widened);
  uint64_t allocated_bytes() const;

  int n_tasks() const { return n_tasks_; }
  int group() const { return group_; }
  // [n_ctx] floats: scores, then probabilities, of the task's j-th head.
  float* scores(int task, int j = 0) {
    return scores_.data() + (static_cast<size_t>(task) * group_ + j) * n_ctx_;
  }
  // Room for one query head or one row of probabilities in the F16 dot's format (or
  // a query head in a quantized cache's activation format).
  uint8_t* act(int task) { return act_.data() + static_cast<size_t>(task) * act_stride_; }
  // [head_dim] floats: a dequantized V row slice (quantized caches).
  float* v_tmp(int task) { return v_tmp_.data() + static_cast<size_t>(task) * head_dim_; }
  // [max(n_ctx, head_dim)] floats: the j-th head's query / probabilities rounded to the
  // F16 dot's format and widened back to floats (FloatOps::dot_f16_f32). nullptr when
  // the kernels chosen at construction did not offer it.
  float* act_f32(int task, int j = 0) {
    return act_f32_stride_
               ? act_f32_.data() + (static_cast<size_t>(task) * group_ + j) * act_f32_stride_
               : nullptr;
  }
  // Floats between two heads' scores() / act_f32() rows.
  size_t scores_stride() const { return static_cast<size_t>(n_ctx_); }
  size_t act_f32_stride() const { return act_f32_stride_; }

 private:
  int n_tasks_, n_ctx_, head_dim_, group_;
  size_t act_stride_;
  size_t act_f32_stride_;
  std::vector<float> v_tmp_;    // [n_tasks][head_dim]
  std::vector<float> scores_;   // [n_tasks][group][n_ctx]
  std::vector<uint8_t> act_;    // [n_tasks][max(n_ctx, head_dim) in the dot's format]
  std::vector<float> act_f32_;  // [n_tasks][group][max(n_ctx, head_dim)], with dot_f16_f32
};

// For each token i of the batch (position p = pos0 + i) and query head h:
//   out[i][h] = softmax(cap(q[i][h] . K[first..p] * attn_scale)) . V[first..p]
// where first = 0, or p - n_swa + 1 (at least 0) on a sliding-window layer, and cap is
// the soft-cap c.attn_softcap where set (gemma2). Without causal attention
// (!c.causal_attn: bert, nomic-bert) every token sees K, V[0 .. pos0 + n_tokens): the
// whole input, evaluated in one batch.
// The batch's own k, v must already be in `kv` (layer `layer`). Queries and
// probabilities are rounded to the F16 dot's partner format (f16), like llama.cpp;
// with a q8_0/q4_0 cache, queries are quantized to the type's partner format (Q8_0)
// and values are accumulated from dequantized rows in float.
//   q     [n_tokens, n_head * head_dim]
//   out   [n_tokens, n_head * head_dim_v]
// (token, head) pairs are split statically over n_tasks_for(par, pairs) tasks (at most
// the scratch's). Where the kernels offer FloatOps::dot_f16_f32_multi (SIMD128, which
// has no f16 conversion) and the scratch takes whole groups, a task takes a (token, kv
// head) pair instead, and each K slice and V row is widened once for the group's query
// heads; the results are the per-head ones bit for bit.
// sinks [n_head] (gpt-oss; nullptr: none): a logit per query head that joins its
// softmax's max and sum (llama.cpp's soft_max with sinks) but contributes no value.
void attention(Parallel& par, const ModelConfig& c, const KvCache& kv, int layer, const float* q,
               int n_tokens, int pos0, AttentionScratch& scratch, float* out, const float* sinks = nullptr);

// One sequence of a batch that holds several (continuous batching): its cache, its
// tokens' queries and outputs (rows as for attention()) and its first position.
struct AttentionRun {
  const KvCache* kv;
  const float* q;
  float* out;
  int n_tokens;
  int pos0;
};
// attention() for every run, their units split over the tasks of one dispatch (one
// barrier for the batch, not one per sequence); each run's rows are what attention()
// alone gives them, to the bit. The runs' caches share one element type.
void attention(Parallel& par, const ModelConfig& c, std::span<const AttentionRun> runs, int layer,
               AttentionScratch& scratch, const float* sinks = nullptr);

}  // namespace runnel
