#include "core/model/attention.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace runnel {
namespace {

struct DotKernels {
  float (*dot)(int64_t, const void*, const void*);  // f16 cache row . activation
  void (*to_act)(const float*, void*, int64_t);     // float -> the dot's activation format
  // Where offered: the same dot against the activation widened back to floats once
  // (the same products, bit for bit), and the widening.
  float (*dot_f32)(int64_t, const uint16_t*, const float*);
  void (*widen)(const void*, float*, int64_t);
};

DotKernels f16_dot() {
  const TypeKernels& f16 = kernels().of(GgmlType::F16);
  return DotKernels{f16.vec_dot, kernels().of(f16.vec_dot_type).quantize_row,
                    float_ops().dot_f16_f32, f16.dequantize_row};
}

// The same for a quantized cache (layouts in core/kv/kv_cache.h).
void attend_one_quantized(const ModelConfig& c, const KvCache& kv, int layer, const float* q, int kv_head,
                          int n_past, float scale, float* scores, uint8_t* act, float* v_tmp, float* out) {
  const TypeKernels& t = kernels().of(kv.type());
  const int n = n_past + 1;
  kernels().of(t.vec_dot_type).quantize_row(q, act, c.head_dim);
  const size_t k_off = row_bytes(kv.type(), static_cast<int64_t>(kv_head) * c.head_dim);
  for (int p = 0; p < n; ++p) scores[p] = t.vec_dot(c.head_dim, kv.k_row(layer, p) + k_off, act) * scale;
  float_ops().softmax(scores, n);
  const size_t v_off = row_bytes(kv.type(), static_cast<int64_t>(kv_head) * c.head_dim_v);
  std::fill(out, out + c.head_dim_v, 0.0f);
  for (int p = 0; p < n; ++p) {
    t.dequantize_row(kv.v_pos(layer, p) + v_off, v_tmp, c.head_dim_v);
    float_ops().axpy(v_tmp, out, c.head_dim_v, scores[p]);
  }
}

// One query head of one token against positions [0, n_past].
void attend_one(const ModelConfig& c, const KvCache& kv, int layer, const float* q, int kv_head,
                int n_past, float scale, const DotKernels& k, float* scores, uint8_t* act,
                float* act_f32, float* out) {
  const int n = n_past + 1;
  // The query / probabilities are rounded to the dot's format (f16) either way; dot_f32
  // only saves widening them again for every row.
  auto dot = [&](int64_t len, const uint16_t* row) {
    return k.dot_f32 ? k.dot_f32(len, row, act_f32) : k.dot(len, row, act);
  };
  auto prepare = [&](const float* x, int64_t len) {
    k.to_act(x, act, len);
    if (k.dot_f32) k.widen(act, act_f32, len);
  };
  // scores[0..n): q . k_t / sqrt(head_dim), then probabilities
  prepare(q, c.head_dim);
  const int k_off = kv_head * c.head_dim;
  for (int t = 0; t < n; ++t) scores[t] = dot(c.head_dim, kv.k(layer, t) + k_off) * scale;
  float_ops().softmax(scores, n);
  // out[d] = probabilities . V^T[d][0..n)
  prepare(scores, n);
  const int v_off = kv_head * c.head_dim_v;
  for (int d = 0; d < c.head_dim_v; ++d) out[d] = dot(n, kv.v_row(layer, v_off + d));
}

}  // namespace

AttentionScratch::AttentionScratch(int n_tasks, int n_ctx, int head_dim)
    : n_tasks_(n_tasks), n_ctx_(n_ctx), head_dim_(head_dim) {
  const GgmlType fmt = kernels().of(GgmlType::F16).vec_dot_type;
  if (traits(fmt).block_size != 1) {
    throw std::logic_error("attention needs an unblocked F16 dot format, the kernels use " +
                           std::string(traits(fmt).name));
  }
  act_stride_ = row_bytes(fmt, std::max(n_ctx, head_dim));
  act_stride_ = (act_stride_ + 63) / 64 * 64;  // tasks' rows on separate cache lines
  scores_.resize(static_cast<size_t>(n_tasks) * n_ctx);
  act_.resize(static_cast<size_t>(n_tasks) * act_stride_);
  v_tmp_.resize(static_cast<size_t>(n_tasks) * head_dim);
  act_f32_stride_ =
      float_ops().dot_f16_f32 ? (static_cast<size_t>(std::max(n_ctx, head_dim)) + 15) / 16 * 16 : 0;
  act_f32_.resize(static_cast<size_t>(n_tasks) * act_f32_stride_);
}

void attention(Parallel& par, const ModelConfig& c, const KvCache& kv, int layer, const float* q,
               int n_tokens, int pos0, AttentionScratch& scratch, float* out) {
  const int n_pairs = n_tokens * c.n_head;
  const int n_tasks = std::min(scratch.n_tasks(), n_tasks_for(par, n_pairs));
  const int group = c.n_head / c.n_head_kv;  // query heads per kv head
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  DotKernels k = f16_dot();
  if (scratch.act_f32(0) == nullptr) k.dot_f32 = nullptr;  // scratch made for other kernels
  const auto task_fn = [&](int task) {
    const int end = static_cast<int>(split_begin(n_pairs, task + 1, n_tasks));
    for (int pair = static_cast<int>(split_begin(n_pairs, task, n_tasks)); pair < end; ++pair) {
      const int i = pair / c.n_head;
      const int h = pair % c.n_head;
      const float* qh = q + static_cast<size_t>(i) * c.q_dim() + h * c.head_dim;
      float* oh = out + static_cast<size_t>(i) * c.attn_out_dim() + h * c.head_dim_v;
      if (kv.v_transposed()) {
        attend_one(c, kv, layer, qh, h / group, pos0 + i, scale, k, scratch.scores(task),
                   scratch.act(task), scratch.act_f32(task), oh);
      } else {
        attend_one_quantized(c, kv, layer, qh, h / group, pos0 + i, scale, scratch.scores(task), scratch.act(task),
                             scratch.v_tmp(task), oh);
      }
    }
  };
  par.run(n_tasks, std::ref(task_fn));  // a reference fits std::function without allocating
}

}  // namespace runnel
