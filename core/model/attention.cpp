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
  // Where offered: one f16 row against several float rows (FloatOps::dot_f16_f32_multi).
  void (*dot_multi)(int64_t, const uint16_t*, const float*, int64_t, int, float*, int64_t);
  // Where offered: dot_f32 over several rows in one call (FloatOps::dot_f16_f32_rows).
  void (*dot_rows)(int64_t, const uint16_t*, int64_t, int, const float*, float*);
};

DotKernels f16_dot() {
  const TypeKernels& f16 = kernels().of(GgmlType::F16);
  return DotKernels{f16.vec_dot, kernels().of(f16.vec_dot_type).quantize_row,
                    float_ops().dot_f16_f32, f16.dequantize_row, float_ops().dot_f16_f32_multi,
                    float_ops().dot_f16_f32_rows};
}

// Where the kernels offer it (wasm), a unit's K slices and V rows are touched first so
// their cache misses overlap (FloatOps::touch_rows).
void touch_rows(const void* first, int n, size_t stride, size_t bytes) {
  if (const auto touch = float_ops().touch_rows) touch(first, n, stride, bytes);
}

// The cache positions one query attends to: [first, first + n).
struct Keys {
  int first;
  int n;
};

// Scaled scores -> probabilities, soft-capped first where the family says (gemma2). A
// sink (gpt-oss; NaN: none) joins the max and the sum as llama.cpp's soft_max does.
void to_probabilities(const ModelConfig& c, float* scores, int n, float sink) {
  if (c.attn_softcap > 0.0f) float_ops().softcap(scores, n, c.attn_softcap);
  if (std::isnan(sink)) {
    float_ops().softmax(scores, n);
    return;
  }
  float max = sink;
  for (int i = 0; i < n; ++i) max = std::max(max, scores[i]);
  double sum = std::exp(static_cast<double>(sink - max));
  for (int i = 0; i < n; ++i) sum += scores[i] = std::exp(scores[i] - max);
  const float inv = static_cast<float>(1.0 / sum);
  for (int i = 0; i < n; ++i) scores[i] *= inv;
}

// The same for a quantized cache (layouts in core/kv/kv_cache.h).
void attend_one_quantized(const ModelConfig& c, const KvCache& kv, int layer, const float* q, int kv_head,
                          Keys keys, float scale, float sink, float* scores, uint8_t* act, float* v_tmp, float* out) {
  const TypeKernels& t = kernels().of(kv.type());
  const int n = keys.n;
  kernels().of(t.vec_dot_type).quantize_row(q, act, c.head_dim);
  const size_t k_off = row_bytes(kv.type(), static_cast<int64_t>(kv_head) * c.head_dim);
  const size_t v_off = row_bytes(kv.type(), static_cast<int64_t>(kv_head) * c.head_dim_v);
  touch_rows(kv.k_row(layer, keys.first) + k_off, n, kv.k_row_bytes(), row_bytes(kv.type(), c.head_dim));
  touch_rows(kv.v_pos(layer, keys.first) + v_off, n, kv.v_row_bytes(), row_bytes(kv.type(), c.head_dim_v));
  for (int p = 0; p < n; ++p) scores[p] = t.vec_dot(c.head_dim, kv.k_row(layer, keys.first + p) + k_off, act) * scale;
  to_probabilities(c, scores, n, sink);
  std::fill(out, out + c.head_dim_v, 0.0f);
  for (int p = 0; p < n; ++p) {
    t.dequantize_row(kv.v_pos(layer, keys.first + p) + v_off, v_tmp, c.head_dim_v);
    float_ops().axpy(v_tmp, out, c.head_dim_v, scores[p]);
  }
}

// x rounded to the dot's format (f16) in act, and where the kernels take widened
// activations (dot_f32), widened back into act_f32: once, not again for every row.
void prepare(const DotKernels& k, const float* x, int64_t len, uint8_t* act, float* act_f32) {
  k.to_act(x, act, len);
  if (k.dot_f32) k.widen(act, act_f32, len);
}

// out[r] = the dot of row first + r * stride with the prepared activation, for r < n_rows.
void dots(const DotKernels& k, int64_t len, const uint16_t* first, size_t stride, int n_rows, uint8_t* act,
          const float* act_f32, float* out) {
  if (k.dot_f32 && k.dot_rows) {
    k.dot_rows(len, first, static_cast<int64_t>(stride), n_rows, act_f32, out);
    return;
  }
  for (int r = 0; r < n_rows; ++r) {
    const uint16_t* row = first + r * stride;
    out[r] = k.dot_f32 ? k.dot_f32(len, row, act_f32) : k.dot(len, row, act);
  }
}

// One query head's second half: its dots with the K slices in scores[0..keys.n) scaled,
// turned into probabilities and weighed against V^T[d][keys.first ..) into out[d].
void weigh_values(const ModelConfig& c, const KvCache& kv, int layer, int kv_head, Keys keys, float scale,
                  float sink, const DotKernels& k, float* scores, uint8_t* act, float* act_f32, float* out) {
  const int n = keys.n;
  for (int t = 0; t < n; ++t) scores[t] *= scale;
  to_probabilities(c, scores, n, sink);
  prepare(k, scores, n, act, act_f32);
  dots(k, n, kv.v_row(layer, kv_head * c.head_dim_v) + kv.cell(layer, keys.first), kv.cells(layer), c.head_dim_v,
       act, act_f32, out);
}

// One query head of one token against cache positions keys.first .. keys.first + keys.n - 1.
void attend_one(const ModelConfig& c, const KvCache& kv, int layer, const float* q, int kv_head,
                Keys keys, float scale, float sink, const DotKernels& k, float* scores, uint8_t* act,
                float* act_f32, float* out) {
  const int n = keys.n;
  const int k_off = kv_head * c.head_dim;
  const int v_off = kv_head * c.head_dim_v;
  touch_rows(kv.k(layer, keys.first) + k_off, n, kv.k_row_bytes(), c.head_dim * sizeof(uint16_t));
  touch_rows(kv.v_row(layer, v_off) + kv.cell(layer, keys.first), c.head_dim_v, kv.cells(layer) * sizeof(uint16_t),
             n * sizeof(uint16_t));
  // scores[0..n): q . k_t, then (weigh_values) / sqrt(head_dim), probabilities, outputs
  prepare(k, q, c.head_dim, act, act_f32);
  dots(k, c.head_dim, kv.k(layer, keys.first) + k_off, kv.k_row_bytes() / sizeof(uint16_t), n, act, act_f32, scores);
  weigh_values(c, kv, layer, kv_head, keys, scale, sink, k, scores, act, act_f32, out);
}

// Query heads kv_head * group .. + group - 1 of one token (q, out: the first of them),
// which all read kv head kv_head: attend_one's steps, with each K slice and V row
// widened once and dotted with the group's queries / probabilities in one call.
void attend_group(const ModelConfig& c, const KvCache& kv, int layer, const float* q, int kv_head,
                  int group, Keys keys, float scale, const float* sinks, const DotKernels& k, AttentionScratch& s,
                  int task, float* out) {
  const int n = keys.n;
  uint8_t* act = s.act(task);
  const int64_t a_stride = static_cast<int64_t>(s.act_f32_stride());
  const int64_t s_stride = static_cast<int64_t>(s.scores_stride());
  float* scores = s.scores(task);
  // each head's query rounded to the dot's format (f16), widened back
  for (int j = 0; j < group; ++j) {
    prepare(k, q + static_cast<size_t>(j) * c.head_dim, c.head_dim, act, s.act_f32(task, j));
  }
  // scores[j][0..n): q_j . k_t / sqrt(head_dim), then probabilities, rounded and widened
  const int k_off = kv_head * c.head_dim;
  const int v_off = kv_head * c.head_dim_v;
  touch_rows(kv.k(layer, keys.first) + k_off, n, kv.k_row_bytes(), c.head_dim * sizeof(uint16_t));
  const int v_cell = kv.cell(layer, keys.first);
  touch_rows(kv.v_row(layer, v_off) + v_cell, c.head_dim_v, kv.cells(layer) * sizeof(uint16_t),
             n * sizeof(uint16_t));
  for (int t = 0; t < n; ++t) {
    k.dot_multi(c.head_dim, kv.k(layer, keys.first + t) + k_off, s.act_f32(task), a_stride, group, scores + t,
                s_stride);
    for (int j = 0; j < group; ++j) scores[j * s_stride + t] *= scale;
  }
  for (int j = 0; j < group; ++j) {
    to_probabilities(c, scores + j * s_stride, n, sinks ? sinks[j] : NAN);
    prepare(k, scores + j * s_stride, n, act, s.act_f32(task, j));
  }
  // out[j][d] = probabilities_j . V^T[d][first .. first + n)
  for (int d = 0; d < c.head_dim_v; ++d) {
    k.dot_multi(n, kv.v_row(layer, v_off + d) + v_cell, s.act_f32(task), a_stride, group, out + d,
                c.head_dim_v);
  }
}

// Decode steps deep in the context (every run one token, at least kPositionMajorKeys
// keys): K positions split among tasks for every head, so each task reads whole K rows in
// order (a kv head's slices are 1 KiB apart, too few cache sets to keep them for its other
// query heads), then each (run, head) takes its softmax and V rows. The same dots as
// attend_one, so the same bits. Returns false, doing nothing, where it does not apply or
// the scratch's rows (n_tasks x group of them) cannot hold every head's scores.
constexpr int kPositionMajorKeys = 512;
constexpr int kKeyBlock = 64;

bool attend_position_major(Parallel& par, const ModelConfig& c, std::span<const AttentionRun> runs, int layer,
                           AttentionScratch& s, const float* sinks, const DotKernels& k, float scale) {
  const int group = c.n_head / c.n_head_kv;
  const size_t rows = runs.size() * static_cast<size_t>(c.n_head);
  if (!k.dot_f32 || !k.dot_rows || !c.causal_attn || c.is_swa(layer) ||
      rows > static_cast<size_t>(s.n_tasks()) * s.group() || s.act_f32_stride() < static_cast<size_t>(c.head_dim))
    return false;
  for (const AttentionRun& r : runs) {
    if (r.n_tokens != 1 || r.pos0 + 1 < kPositionMajorKeys || !r.kv->v_transposed()) return false;
  }
  // (run, head) row idx of the scratch: its scores, and (until the softmax) its query
  const auto scores = [&](size_t idx) { return s.scores(0) + idx * s.scores_stride(); };
  const auto query = [&](size_t idx) {
    return s.act_f32(static_cast<int>(idx / s.group()), static_cast<int>(idx % s.group()));
  };
  for (size_t idx = 0; idx < rows; ++idx) {
    const AttentionRun& r = runs[idx / c.n_head];
    prepare(k, r.q + (idx % c.n_head) * c.head_dim, c.head_dim, s.act(0), query(idx));
  }
  // scores: (run, block of kKeyBlock positions) items
  std::vector<int> first_item(runs.size() + 1, 0);
  for (size_t r = 0; r < runs.size(); ++r) first_item[r + 1] = first_item[r] + (runs[r].pos0 + kKeyBlock) / kKeyBlock;
  const int n_items = first_item.back();
  const int n_tasks1 = n_tasks_for(par, n_items);
  const auto score_task = [&](int task) {
    size_t r = 0;
    for (int item = static_cast<int>(split_begin(n_items, task, n_tasks1));
         item < split_begin(n_items, task + 1, n_tasks1); ++item) {
      while (item >= first_item[r + 1]) ++r;
      const KvCache& kv = *runs[r].kv;
      const int t0 = (item - first_item[r]) * kKeyBlock;
      const int n_rows = std::min(kKeyBlock, runs[r].pos0 + 1 - t0);
      const int64_t k_stride = static_cast<int64_t>(kv.k_row_bytes() / sizeof(uint16_t));
      for (int h = 0; h < c.n_head; ++h) {
        const size_t idx = r * c.n_head + h;
        k.dot_rows(c.head_dim, kv.k(layer, t0) + (h / group) * c.head_dim, k_stride, n_rows, query(idx),
                   scores(idx) + t0);
      }
    }
  };
  par.run(n_tasks1, std::ref(score_task));
  // probabilities and outputs: (run, head) items; the queries' rows are free again
  const int n_tasks2 = std::min(s.n_tasks(), n_tasks_for(par, static_cast<int64_t>(rows)));
  const auto output_task = [&](int task) {
    for (size_t idx = split_begin(static_cast<int64_t>(rows), task, n_tasks2);
         idx < static_cast<size_t>(split_begin(static_cast<int64_t>(rows), task + 1, n_tasks2)); ++idx) {
      const AttentionRun& r = runs[idx / c.n_head];
      const int h = static_cast<int>(idx % c.n_head);
      weigh_values(c, *r.kv, layer, h / group, Keys{0, r.pos0 + 1}, scale, sinks ? sinks[h] : NAN, k, scores(idx),
                   s.act(task), s.act_f32(task), r.out + h * c.head_dim_v);
    }
  };
  par.run(n_tasks2, std::ref(output_task));
  return true;
}

}  // namespace

namespace {

// Tasks' rows on separate cache lines.
size_t act_stride_for(size_t act_row_bytes) { return (act_row_bytes + 63) / 64 * 64; }
// A widened row of max(n_ctx, head_dim) floats, in whole SIMD groups.
size_t act_f32_stride_for(int n_ctx, int head_dim) {
  return (static_cast<size_t>(std::max(n_ctx, head_dim)) + 15) / 16 * 16;
}

}  // namespace

uint64_t AttentionScratch::bytes(int n_tasks, int n_ctx, int head_dim, int group, size_t act_row_bytes,
                                 bool widened) {
  const uint64_t g = static_cast<uint64_t>(std::max(1, group));
  const uint64_t per_task = 4 * g * n_ctx + act_stride_for(act_row_bytes) + 4ull * head_dim +
                            (widened ? 4 * g * act_f32_stride_for(n_ctx, head_dim) : 0);
  return static_cast<uint64_t>(n_tasks) * per_task;
}

uint64_t AttentionScratch::allocated_bytes() const {
  return scores_.size() * sizeof(float) + act_.size() + v_tmp_.size() * sizeof(float) +
         act_f32_.size() * sizeof(float);
}

AttentionScratch::AttentionScratch(int n_tasks, int n_ctx, int head_dim, int group)
    : n_tasks_(n_tasks), n_ctx_(n_ctx), head_dim_(head_dim), group_(std::max(1, group)) {
  const GgmlType fmt = kernels().of(GgmlType::F16).vec_dot_type;
  if (traits(fmt).block_size != 1) {
    throw std::logic_error("attention needs an unblocked F16 dot format, the kernels use " +
                           std::string(traits(fmt).name));
  }
  act_stride_ = act_stride_for(row_bytes(fmt, std::max(n_ctx, head_dim)));
  scores_.resize(static_cast<size_t>(n_tasks) * group_ * n_ctx);
  act_.resize(static_cast<size_t>(n_tasks) * act_stride_);
  v_tmp_.resize(static_cast<size_t>(n_tasks) * head_dim);
  act_f32_stride_ = float_ops().dot_f16_f32 ? act_f32_stride_for(n_ctx, head_dim) : 0;
  act_f32_.resize(static_cast<size_t>(n_tasks) * group_ * act_f32_stride_);
}

void attention(Parallel& par, const ModelConfig& c, const KvCache& kv, int layer, const float* q,
               int n_tokens, int pos0, AttentionScratch& scratch, float* out, const float* sinks) {
  const AttentionRun run{&kv, q, out, n_tokens, pos0};
  attention(par, c, std::span<const AttentionRun>(&run, 1), layer, scratch, sinks);
}

void attention(Parallel& par, const ModelConfig& c, std::span<const AttentionRun> runs, int layer,
               AttentionScratch& scratch, const float* sinks) {
  if (runs.empty()) return;
  const int group = c.n_head / c.n_head_kv;  // query heads per kv head
  const float scale = c.attn_scale > 0.0f ? c.attn_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const bool sliding = c.is_swa(layer);
  DotKernels k = f16_dot();
  if (scratch.act_f32(0) == nullptr) k.dot_f32 = nullptr;  // scratch made for other kernels
  // A task's unit of work: a (token, kv head) pair and its query heads where widening is
  // worth sharing, else a (token, query head) pair.
  const bool transposed = runs[0].kv->v_transposed();
  const bool grouped = k.dot_f32 != nullptr && k.dot_multi != nullptr && transposed && group > 1 &&
                       scratch.group() >= group;
  if (!grouped && transposed && attend_position_major(par, c, runs, layer, scratch, sinks, k, scale)) return;
  const int per_token = grouped ? c.n_head_kv : c.n_head;
  int n_units = 0;
  for (const AttentionRun& r : runs) n_units += r.n_tokens * per_token;
  const int n_tasks = std::min(scratch.n_tasks(), n_tasks_for(par, n_units));
  const auto task_fn = [&](int task) {
    const int begin = static_cast<int>(split_begin(n_units, task, n_tasks));
    const int end = static_cast<int>(split_begin(n_units, task + 1, n_tasks));
    size_t run = 0;
    int run_first = 0;  // the first unit of runs[run]
    for (int unit = begin; unit < end; ++unit) {
      while (unit >= run_first + runs[run].n_tokens * per_token) run_first += runs[run++].n_tokens * per_token;
      const AttentionRun& r = runs[run];
      const int i = (unit - run_first) / per_token;
      const int h = grouped ? (unit - run_first) % per_token * group : (unit - run_first) % per_token;  // (first) query head
      // token i at position p sees keys [0, p], or its window (p - n_swa, p]; without
      // causal attention (embedding models), every key of the batch and before it
      const int p = r.pos0 + i;
      const int first = sliding ? std::max(0, p - c.n_swa + 1) : 0;
      const Keys keys = c.causal_attn ? Keys{first, p + 1 - first} : Keys{0, r.pos0 + r.n_tokens};
      const float* qh = r.q + static_cast<size_t>(i) * c.q_dim() + h * c.head_dim;
      float* oh = r.out + static_cast<size_t>(i) * c.attn_out_dim() + h * c.head_dim_v;
      const float sink = sinks ? sinks[h] : NAN;
      if (grouped) {
        attend_group(c, *r.kv, layer, qh, h / group, group, keys, scale, sinks ? sinks + h : nullptr, k, scratch,
                     task, oh);
      } else if (transposed) {
        attend_one(c, *r.kv, layer, qh, h / group, keys, scale, sink, k, scratch.scores(task), scratch.act(task),
                   scratch.act_f32(task), oh);
      } else {
        attend_one_quantized(c, *r.kv, layer, qh, h / group, keys, scale, sink, scratch.scores(task),
                             scratch.act(task), scratch.v_tmp(task), oh);
      }
    }
  };
  par.run(n_tasks, std::ref(task_fn));  // a reference fits std::function without allocating
}

}  // namespace runnel
