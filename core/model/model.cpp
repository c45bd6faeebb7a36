#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace runnel {
namespace {

// Elements of a layer's q / k norm weights: a head's, or olmoe's whole rows.
size_t qk_norm_size(const ModelConfig& c) {
  return c.has_full_qk_norm ? static_cast<size_t>(std::max(c.q_dim(), c.kv_dim())) : static_cast<size_t>(c.head_dim);
}


const GgufTensorInfo* require(const GgufModel& m, const std::string& name) {
  const GgufTensorInfo* t = m.find_tensor(name);
  if (!t) throw GgufError("missing tensor '" + name + "'");
  return t;
}

// Rotates the first n_rot dims of each of n_heads heads (head_dim apart).
void rope_heads(const FloatOps& ops, const ModelConfig& c, float* x, int n_heads,
                const float* cos_sin) {
  const RopeStyle style = c.rope_type == RopeType::Neox ? RopeStyle::kNeox : RopeStyle::kNormal;
  for (int h = 0; h < n_heads; ++h) {
    ops.rope_apply(x + static_cast<size_t>(h) * c.head_dim, c.n_rot, cos_sin, style);
  }
}

// Rows [first, first + n) of `m` as a matrix of its own: a part of a fused tensor. A
// repacked matrix is cut between its x8 groups (first a multiple of kX8Rows: the load
// repacks a fused tensor only when every part starts on a group).
Matrix row_range(const Matrix& m, int64_t first, int64_t n) {
  Matrix part = m;
  const size_t group_bytes = m.x8 ? x8_group_bytes(kernels().of(m.type), m.type, m.n_in) : 0;
  part.data += m.x8 ? static_cast<size_t>(first / kX8Rows) * group_bytes
                    : static_cast<size_t>(first) * row_bytes(m.type, m.n_in);
  part.n_out = n;
  return part;
}

}  // namespace

int ForwardScratch::logit_rows(int n_batch, bool all_logits, int draft_rows) {
  return all_logits ? n_batch : std::min(n_batch, 1 + std::max(0, draft_rows));
}

ForwardScratch::ForwardScratch(const Model& model, int n_batch_, int n_ctx, int n_tasks_,
                               bool all_logits, int draft_rows)
    : ForwardScratch(model.config(), n_batch_, n_ctx, n_tasks_, all_logits, draft_rows) {
  mm = MatmulScratch(n_batch_, model.max_activation_row_bytes(), model.max_activation_pack_bytes());
  embd_row.resize(model.embedding_row_bytes());
}

uint64_t ForwardScratch::float_bytes(const ModelConfig& c, int n_batch, bool all_logits, int draft_rows) {
  const uint64_t b = static_cast<uint64_t>(n_batch);
  const uint64_t n_rope = c.has_rope ? (c.n_swa > 0 ? 2ull : 1ull) * c.n_rot : 0;
  const uint64_t per_token = 3ull * c.n_embd + c.q_dim() + c.kv_dim() + c.v_dim() + c.attn_out_dim() +
                             2ull * c.ffn_scratch_width() + n_rope;
  // norm weights, q/k/v biases, q/k norms; embedding models: LayerNorm bias, attn_output,
  // ffn_up and ffn_down biases
  const uint64_t per_layer = static_cast<uint64_t>(c.n_embd) + c.q_dim() + c.kv_dim() + c.v_dim() +
                             2ull * qk_norm_size(c) + (c.embedding_only ? 2ull * c.n_embd + c.n_ff : 0) +
                             (c.has_attn_out_bias ? c.n_embd : 0) + (c.has_attn_sinks ? c.n_head : 0) +
                             (c.has_expert_bias ? 2ull * c.n_ff_exp + c.n_embd : 0);
  const uint64_t logits =
      c.generative() ? static_cast<uint64_t>(logit_rows(n_batch, all_logits, draft_rows)) * c.n_vocab : 0;
  // experts: router, picks (ids and weights), routed (token, pick) indices, input rows
  // and outputs per pick (ints count 4 bytes like floats)
  const uint64_t k = static_cast<uint64_t>(c.n_expert_used);
  const uint64_t moe = c.is_moe() ? b * (c.n_expert + 3 * k + 2 * k * c.n_embd) : 0;
  return 4 * (b * per_token + per_layer + logits + moe);
}

uint64_t ForwardScratch::float_bytes_allocated() const {
  size_t n = picked.size() + routed.size();
  for (const std::vector<float>* v : {&x, &xb, &q, &k, &v, &attn, &proj, &gate, &up, &norm_w, &norm_b, &bias_qkv,
                                      &bias_o, &bias_up, &bias_down, &norm_q, &norm_k, &rope, &rope_swa, &logits,
                                      &router, &pick_w, &moe_in, &moe_out, &exp_bias, &sinks}) {
    n += v->size();
  }
  return n * sizeof(float);
}

ForwardScratch::ForwardScratch(const ModelConfig& c, int n_batch_, int n_ctx, int n_tasks_,
                               bool all_logits, int draft_rows)
    : n_batch(n_batch_),
      n_ctx(n_ctx),
      x(static_cast<size_t>(n_batch_) * c.n_embd),
      xb(static_cast<size_t>(n_batch_) * c.n_embd),
      q(static_cast<size_t>(n_batch_) * c.q_dim()),
      k(static_cast<size_t>(n_batch_) * c.kv_dim()),
      v(static_cast<size_t>(n_batch_) * c.v_dim()),
      attn(static_cast<size_t>(n_batch_) * c.attn_out_dim()),
      proj(static_cast<size_t>(n_batch_) * c.n_embd),
      gate(static_cast<size_t>(n_batch_) * c.ffn_scratch_width()),
      up(static_cast<size_t>(n_batch_) * c.ffn_scratch_width()),
      router(c.is_moe() ? static_cast<size_t>(n_batch_) * c.n_expert : 0),
      picked(static_cast<size_t>(n_batch_) * c.n_expert_used),
      pick_w(static_cast<size_t>(n_batch_) * c.n_expert_used),
      routed(static_cast<size_t>(n_batch_) * c.n_expert_used),
      moe_in(static_cast<size_t>(n_batch_) * c.n_expert_used * c.n_embd),
      moe_out(static_cast<size_t>(n_batch_) * c.n_expert_used * c.n_embd),
      exp_bias(c.has_expert_bias ? 2 * static_cast<size_t>(c.n_ff_exp) + c.n_embd : 0),
      sinks(c.has_attn_sinks ? c.n_head : 0),
      norm_w(c.n_embd),
      norm_b(c.embedding_only ? c.n_embd : 0),
      bias_qkv(static_cast<size_t>(c.q_dim()) + c.kv_dim() + c.v_dim()),
      bias_o(c.has_attn_out_bias ? c.n_embd : 0),
      bias_up(c.embedding_only ? c.n_ff : 0),
      bias_down(c.embedding_only ? c.n_embd : 0),
      norm_q(qk_norm_size(c)),
      norm_k(qk_norm_size(c)),
      rope(c.has_rope ? static_cast<size_t>(n_batch_) * c.n_rot : 0),
      rope_swa(c.has_rope && c.n_swa > 0 ? static_cast<size_t>(n_batch_) * c.n_rot : 0),
      logits(c.generative() ? static_cast<size_t>(logit_rows(n_batch_, all_logits, draft_rows)) * c.n_vocab : 0),
      att(n_tasks_, n_ctx, std::max(c.head_dim, c.head_dim_v),
          c.n_head / std::max(1, c.n_head_kv)) {}

Model::Model(const ModelConfig& config, WeightStore& store, Parallel* par)
    : config_(config), store_(store) {
  const GgufModel& m = store.model();
  for (int l = 0; l < config.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    // A tensor the config says this family has (validate_tensors checked it), else null.
    auto maybe = [&](bool present, const char* name) { return present ? require(m, p + name) : nullptr; };
    const bool enc = config.embedding_only;
    const bool separate_bias = config.has_qkv_bias && !config.fused_qkv;
    LayerTensors w{};
    w.attn_norm = maybe(!enc, "attn_norm.weight");
    w.wq = maybe(!config.fused_qkv, "attn_q.weight");
    w.wk = maybe(!config.fused_qkv, "attn_k.weight");
    w.wv = maybe(!config.fused_qkv, "attn_v.weight");
    w.wqkv = maybe(config.fused_qkv, "attn_qkv.weight");
    w.bq = maybe(separate_bias, "attn_q.bias");
    w.bk = maybe(separate_bias, "attn_k.bias");
    w.bv = maybe(separate_bias, "attn_v.bias");
    w.bqkv = maybe(config.has_qkv_bias && config.fused_qkv, "attn_qkv.bias");
    w.q_norm = maybe(config.has_qk_norm || config.has_full_qk_norm, "attn_q_norm.weight");
    w.k_norm = maybe(config.has_qk_norm || config.has_full_qk_norm, "attn_k_norm.weight");
    w.wo = require(m, p + "attn_output.weight");
    w.bo = maybe(config.has_attn_out_bias, "attn_output.bias");
    w.post_attn_norm = maybe(config.has_post_norms, "post_attention_norm.weight");
    w.ffn_norm = maybe(!enc, config.ffn_norm_is_post_attention ? "post_attention_norm.weight" : "ffn_norm.weight");
    const bool moe = config.is_moe();
    w.w_gate = maybe(!moe && !config.fused_gate_up && config.ffn_gated, "ffn_gate.weight");
    w.w_up = maybe(!moe, "ffn_up.weight");
    w.w_down = maybe(!moe, "ffn_down.weight");
    w.router = maybe(moe, "ffn_gate_inp.weight");
    w.gate_exps = maybe(moe, "ffn_gate_exps.weight");
    w.up_exps = maybe(moe, "ffn_up_exps.weight");
    w.down_exps = maybe(moe, "ffn_down_exps.weight");
    const bool shexp = moe && config.has_shared_expert;
    w.shexp_gate_inp = maybe(shexp, "ffn_gate_inp_shexp.weight");
    w.shexp_gate = maybe(shexp, "ffn_gate_shexp.weight");
    w.shexp_up = maybe(shexp, "ffn_up_shexp.weight");
    w.shexp_down = maybe(shexp, "ffn_down_shexp.weight");
    const bool exp_bias = moe && config.has_expert_bias;
    w.router_b = maybe(exp_bias, "ffn_gate_inp.bias");
    w.gate_exps_b = maybe(exp_bias, "ffn_gate_exps.bias");
    w.up_exps_b = maybe(exp_bias, "ffn_up_exps.bias");
    w.down_exps_b = maybe(exp_bias, "ffn_down_exps.bias");
    w.attn_sinks = maybe(config.has_attn_sinks, "attn_sinks.weight");
    w.post_ffn_norm = maybe(config.has_post_norms, "post_ffw_norm.weight");
    w.b_up = maybe(config.has_ffn_bias, "ffn_up.bias");
    w.b_down = maybe(config.has_ffn_bias, "ffn_down.bias");
    w.attn_out_norm = maybe(enc, "attn_output_norm.weight");
    w.attn_out_norm_b = maybe(enc, "attn_output_norm.bias");
    w.layer_out_norm = maybe(enc, "layer_output_norm.weight");
    w.layer_out_norm_b = maybe(enc, "layer_output_norm.bias");
    layers_.push_back(w);
  }
  token_embd_ = require(m, "token_embd.weight");
  if (config.embedding_only) {
    output_norm_ = output_ = nullptr;
    if (config.has_token_types) token_types_ = require(m, "token_types.weight");
    if (config.has_position_embd) position_embd_ = require(m, "position_embd.weight");
    embd_norm_ = require(m, "token_embd_norm.weight");
    embd_norm_b_ = require(m, "token_embd_norm.bias");
  } else {
    output_norm_ = require(m, "output_norm.weight");
    output_ = config.tied_output ? token_embd_ : require(m, "output.weight");
  }
  store_.acquire(-1);  // tensors outside layers stay resident for the model's life
  InlineParallel inline_par;
  repack_weights(par != nullptr ? *par : inline_par);
  if (config.has_rope_freqs) {
    rope_freqs_.resize(config.n_rot / 2);
    dequantize(require(m, "rope_freqs.weight"), rope_freqs_.data());
  }
  if (config.has_longrope) {
    rope_long_.resize(config.n_rot / 2);
    rope_short_.resize(config.n_rot / 2);
    dequantize(require(m, "rope_factors_long.weight"), rope_long_.data());
    dequantize(require(m, "rope_factors_short.weight"), rope_short_.data());
  }
}

Model::~Model() {
  store_.release(-1);
}

Matrix Model::matrix(const GgufTensorInfo* t) {
  if (const auto it = x8_.find(t); it != x8_.end())
    return Matrix{it->second, t->type, t->dims[0], t->dims[1], true, t};
  // a 1-D tensor (qwen2moe's shared-expert gate) is one row
  return Matrix{store_.tensor_bytes(*t).data(), t->type, t->dims[0], t->dims.size() > 1 ? t->dims[1] : 1, false, t};
}

const float* Model::expert_bias(const GgufTensorInfo* t, int e, float* tmp) {
  if (t == nullptr) return nullptr;
  const int64_t n = t->dims[0];
  const uint8_t* row = store_.tensor_bytes(*t).data() + static_cast<size_t>(e) * row_bytes(t->type, n);
  if (t->type == GgmlType::F32) return reinterpret_cast<const float*>(row);
  kernels().of(t->type).dequantize_row(row, tmp, n);
  return tmp;
}

Matrix Model::expert_matrix(const GgufTensorInfo* t, int e) {
  if (const auto it = x8_.find(t); it != x8_.end()) {  // whole groups per expert (x8_repacks)
    const size_t group_bytes = x8_group_bytes(kernels().of(t->type), t->type, t->dims[0]);
    const size_t bytes = static_cast<size_t>(t->dims[1] / kX8Rows) * group_bytes;
    return Matrix{it->second + static_cast<size_t>(e) * bytes, t->type, t->dims[0], t->dims[1], true, t, e};
  }
  return Matrix{store_.expert_bytes(*t, e).data(), t->type, t->dims[0], t->dims[1], false, t, e};
}

std::array<Matrix, 3> Model::qkv_matrices(const LayerTensors& w) {
  if (!w.wqkv) return {matrix(w.wq), matrix(w.wk), matrix(w.wv)};
  const ModelConfig& c = config_;
  const Matrix qkv = matrix(w.wqkv);  // [q_dim + kv_dim + v_dim] rows
  return {row_range(qkv, 0, c.q_dim()), row_range(qkv, c.q_dim(), c.kv_dim()),
          row_range(qkv, c.q_dim() + c.kv_dim(), c.v_dim())};
}

std::array<Matrix, 2> Model::gate_up_matrices(const LayerTensors& w) {
  if (w.w_gate) return {matrix(w.w_gate), matrix(w.w_up)};
  const Matrix gate_up = matrix(w.w_up);  // [2 n_ff] rows: gate, then up (llama.cpp's swiglu order)
  return {row_range(gate_up, 0, config_.n_ff), row_range(gate_up, config_.n_ff, config_.n_ff)};
}

const float* Model::rope_factors(int n_ctx) const {
  if (!rope_freqs_.empty()) return rope_freqs_.data();
  if (!rope_long_.empty()) return n_ctx > config_.n_ctx_orig ? rope_long_.data() : rope_short_.data();
  return nullptr;
}

bool x8_repacks(const ModelConfig& c, const GgufTensorInfo& t) {
  const TypeKernels& k = kernels().of(t.type);
  const auto named = [&](std::string_view suffix) {
    return t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  // an expert stack [n_in, n_out, n_expert]: each expert's rows in whole groups
  const bool stack = t.dims.size() == 3 && named("_exps.weight");
  if (!k.repack_x8 || !k.gemm_x8 || (t.dims.size() != 2 && !stack) || t.dims[1] % kX8Rows != 0) return false;
  if (t.name == "token_embd.weight") return c.tied_output && k.unpack_x8_row;
  if (t.name == "position_embd.weight" || t.name == "token_types.weight") return false;  // read by row
  // gemma 1/2 files may carry an unused one; embedding models have no head
  if (t.name == "output.weight") return !c.tied_output && c.generative();
  if (named(".attn_qkv.weight")) return c.q_dim() % kX8Rows == 0 && c.kv_dim() % kX8Rows == 0;
  if (c.fused_gate_up && named(".ffn_up.weight")) return c.n_ff % kX8Rows == 0;
  return true;
}

void Model::repack_weights(Parallel& par) {
  const KernelTable& table = kernels();
  auto consider = [&](const GgufTensorInfo* t) {
    if (t == nullptr || x8_.count(t) || !x8_repacks(config_, *t)) return;
    const TypeKernels& k = table.of(t->type);
    const size_t group_bytes = x8_group_bytes(k, t->type, t->dims[0]);
    const int64_t n_groups = t->dims[1] * (t->dims.size() > 2 ? t->dims[2] : 1) / kX8Rows;
    uint8_t* dst = store_.copy_space(*t, group_bytes * static_cast<size_t>(n_groups));
    if (dst == nullptr) return;
    const int layer = layer_of_tensor(t->name);
    store_.acquire(layer);
    const uint8_t* src = store_.tensor_bytes(*t).data();
    const size_t rb = row_bytes(t->type, t->dims[0]);
    // Split over the threads: most of a load's time is the kernel zeroing the copy's
    // fresh pages, which happens on the thread that first writes them.
    const int n_tasks = n_tasks_for(par, n_groups);
    par.run(n_tasks, [&](int task) {
      for (int64_t g = split_begin(n_groups, task, n_tasks); g < split_begin(n_groups, task + 1, n_tasks); ++g) {
        k.repack_x8(t->dims[0], src + static_cast<size_t>(g) * kX8Rows * rb, rb,
                    dst + static_cast<size_t>(g) * group_bytes);
      }
    });
    store_.release(layer);
    store_.drop(*t);
    x8_.emplace(t, dst);
  };
  for (const LayerTensors& l : layers_) {
    for (const GgufTensorInfo* t : {l.wq, l.wk, l.wv, l.wqkv, l.wo, l.w_gate, l.w_up, l.w_down, l.router,
                                    l.shexp_gate, l.shexp_up, l.shexp_down, l.gate_exps, l.up_exps, l.down_exps}) {
      consider(t);
    }
  }
  consider(output_);
}

void Model::dequantize(const GgufTensorInfo* t, float* dst) {
  kernels().of(t->type).dequantize_row(store_.tensor_bytes(*t).data(), dst, t->n_elements());
}

size_t Model::embedding_row_bytes() const {
  return row_bytes(token_embd_->type, config_.n_embd);
}

size_t Model::max_activation_row_bytes() const {
  size_t max_bytes = 0;
  auto consider = [&](const GgufTensorInfo* t) {
    if (t) max_bytes = std::max(max_bytes, activation_row_bytes(t->type, t->dims[0]));
  };
  for (const LayerTensors& l : layers_) {
    for (const GgufTensorInfo* t : {l.wq, l.wk, l.wv, l.wqkv, l.wo, l.w_gate, l.w_up, l.w_down, l.router,
                                    l.gate_exps, l.up_exps, l.down_exps, l.shexp_gate_inp, l.shexp_gate,
                                    l.shexp_up, l.shexp_down}) {
      consider(t);
    }
  }
  consider(output_);
  return max_bytes;
}

size_t Model::max_activation_pack_bytes() const {
  size_t max_bytes = 0;
  auto consider = [&](const GgufTensorInfo* t) {
    if (t) max_bytes = std::max(max_bytes, activation_pack_bytes(t->type, t->dims[0]));
  };
  for (const LayerTensors& l : layers_) {
    for (const GgufTensorInfo* t : {l.wq, l.wk, l.wv, l.wqkv, l.wo, l.w_gate, l.w_up, l.w_down, l.router,
                                    l.gate_exps, l.up_exps, l.down_exps, l.shexp_gate_inp, l.shexp_gate,
                                    l.shexp_up, l.shexp_down}) {
      consider(t);
    }
  }
  consider(output_);
  return max_bytes;
}

RopeParams rope_params(const ModelConfig& c, bool sliding, const float* freq_factors) {
  RopeParams rp;
  rp.n_rot = c.n_rot;
  rp.freq_base = sliding ? c.rope_freq_base_swa : c.rope_freq_base;
  rp.freq_scale = sliding ? c.rope_freq_scale_swa : c.rope_freq_scale;
  rp.freq_factors = freq_factors;
  rp.attn_factor = c.rope_attn_factor;
  if (c.rope_scaling == RopeScaling::Yarn) {
    rp.ext_factor = 1.0f;
    rp.n_ctx_orig = c.n_ctx_orig;
    rp.beta_fast = c.yarn_beta_fast;
    rp.beta_slow = c.yarn_beta_slow;
  }
  return rp;
}

void Model::rerotate_keys(KvCache& kv, int pos, int count, int delta) const {
  const ModelConfig& c = config_;
  const FloatOps& ops = float_ops();
  const TypeKernels& k = kernels().of(kv.type());
  const float* factors = rope_factors(kv.n_ctx());  // the session's context is its cache's
  std::vector<float> cos_sin(c.n_rot);  // [n_rot] the rotation by delta
  std::vector<float> row(c.kv_dim());  // [kv_dim] one position's keys
  for (int l = 0; l < c.n_layer; ++l) {
    ops.rope_cos_sin(delta, rope_params(c, c.is_swa(l), factors), cos_sin.data());
    for (int p = std::max(pos, kv.first_pos(l)); p < pos + count; ++p) {  // what a sliding layer holds
      uint8_t* bytes = kv.k_row_mut(l, p);
      k.dequantize_row(bytes, row.data(), c.kv_dim());
      rope_heads(ops, c, row.data(), c.n_head_kv, cos_sin.data());
      k.quantize_row(row.data(), bytes, c.kv_dim());
    }
  }
}

void Model::forward(std::span<const int32_t> tokens, int pos0, bool all_logits, KvCache& kv,
                    ForwardScratch& s, Parallel& par, float* hidden_out) {
  const SeqRun run{&kv, pos0, static_cast<int>(tokens.size())};
  forward_runs(tokens, std::span<const SeqRun>(&run, 1), all_logits ? 0 : run.n - 1, s, par, hidden_out);
}

void Model::forward_runs(std::span<const int32_t> tokens, std::span<const SeqRun> runs, int logits_from,
                         ForwardScratch& s, Parallel& par, float* hidden_out) {
  // sliding layers drop what no token will see
  for (const SeqRun& r : runs) r.kv->make_room(r.pos0, r.n);
  switch (config_.arch) {
    case Arch::Llama:
    case Arch::Qwen2:
    case Arch::Qwen3:
    case Arch::Phi3:
    case Arch::Qwen2Moe:
    case Arch::Qwen3Moe:
    case Arch::Olmoe:
    case Arch::GptOss:
      return forward_llama(tokens, runs, logits_from, s, par, hidden_out);
    case Arch::Gemma:
    case Arch::Gemma2:
    case Arch::Gemma3:
      return forward_gemma(tokens, runs, logits_from, s, par, hidden_out);
    case Arch::Bert:
    case Arch::NomicBert:
      return forward_bert(tokens, runs, s, par, hidden_out);
  }
}

void Model::embed(std::span<const int32_t> tokens, std::span<const SeqRun> runs, ForwardScratch& s) {
  const ModelConfig& c = config_;
  const int n = static_cast<int>(tokens.size());
  const size_t n_embd = c.n_embd;
  const FloatOps& ops = float_ops();
  const TypeKernels& k = kernels().of(token_embd_->type);
  if (const auto it = x8_.find(token_embd_); it != x8_.end()) {  // tied output, repacked
    const size_t group_bytes = x8_group_bytes(k, token_embd_->type, c.n_embd);
    for (int i = 0; i < n; ++i) {
      const uint8_t* group = it->second + static_cast<size_t>(tokens[i] / kX8Rows) * group_bytes;
      k.unpack_x8_row(c.n_embd, group, tokens[i] % kX8Rows, s.embd_row.data());
      k.dequantize_row(s.embd_row.data(), &s.x[i * n_embd], c.n_embd);
    }
  } else {
    const uint8_t* embd = store_.tensor_bytes(*token_embd_).data();
    const size_t rb = row_bytes(token_embd_->type, c.n_embd);
    for (int i = 0; i < n; ++i) {
      k.dequantize_row(embd + static_cast<size_t>(tokens[i]) * rb, &s.x[i * n_embd], c.n_embd);
    }
  }
  if (c.embd_scale != 1.0f) ops.scale(s.x.data(), static_cast<int64_t>(n * n_embd), c.embd_scale);
  // bert: + token type 0's row (every token is "sentence A", as in llama.cpp), + the
  // position's row; s.xb holds the dequantized rows
  if (token_types_) {
    kernels().of(token_types_->type).dequantize_row(store_.tensor_bytes(*token_types_).data(), s.xb.data(), c.n_embd);
    for (int i = 0; i < n; ++i) ops.add(&s.x[i * n_embd], s.xb.data(), &s.x[i * n_embd], c.n_embd);
  }
  if (position_embd_) {
    const uint8_t* rows = store_.tensor_bytes(*position_embd_).data();
    const size_t rb = row_bytes(position_embd_->type, c.n_embd);
    const TypeKernels& pk = kernels().of(position_embd_->type);
    int i = 0;
    for (const SeqRun& r : runs) {
      for (int j = 0; j < r.n; ++j, ++i) {
        pk.dequantize_row(rows + static_cast<size_t>(r.pos0 + j) * rb, &s.xb[i * n_embd], c.n_embd);
      }
    }
    ops.add(s.x.data(), s.xb.data(), s.x.data(), static_cast<int64_t>(n * n_embd));
  }
  if (!c.has_rope) return;

  // rope [n, n_rot]: each position's rotation, shared by every head and layer (and the
  // same with the sliding layers' base)
  const float* factors = rope_factors(s.n_ctx);
  int i = 0;
  for (const SeqRun& r : runs) {
    for (int j = 0; j < r.n; ++j, ++i) {
      const int pos = r.pos0 + j;
      ops.rope_cos_sin(pos, rope_params(c, false, factors), &s.rope[static_cast<size_t>(i) * c.n_rot]);
      if (!s.rope_swa.empty()) {
        ops.rope_cos_sin(pos, rope_params(c, true, factors), &s.rope_swa[static_cast<size_t>(i) * c.n_rot]);
      }
    }
  }
}

void Model::norm_rows(const GgufTensorInfo* weight, const float* in, float* out, int n, ForwardScratch& s) {
  const size_t n_embd = config_.n_embd;
  dequantize(weight, s.norm_w.data());
  for (int i = 0; i < n; ++i) {
    float_ops().rms_norm(in + i * n_embd, s.norm_w.data(), out + i * n_embd, config_.n_embd, config_.rms_eps);
  }
}

void Model::layer_norm_rows(const GgufTensorInfo* weight, const GgufTensorInfo* bias, const float* in, float* out,
                            int n, ForwardScratch& s) {
  const int64_t n_embd = config_.n_embd;
  dequantize(weight, s.norm_w.data());
  dequantize(bias, s.norm_b.data());
  const float eps = config_.norm_eps;
  // As ggml_norm: the mean and variance accumulated in double, the centred row scaled
  // by 1 / sqrt(variance + eps) in float; then * weight + bias.
  for (int i = 0; i < n; ++i) {
    const float* x = in + i * n_embd;
    float* y = out + i * n_embd;
    double sum = 0;
    for (int64_t d = 0; d < n_embd; ++d) sum += x[d];
    const float mean = static_cast<float>(sum / n_embd);
    double sum2 = 0;
    for (int64_t d = 0; d < n_embd; ++d) {
      y[d] = x[d] - mean;
      sum2 += static_cast<double>(y[d]) * y[d];
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum2 / n_embd) + eps);
    for (int64_t d = 0; d < n_embd; ++d) y[d] = y[d] * scale * s.norm_w[d] + s.norm_b[d];
  }
}

void Model::attention_block(int l, int n, std::span<const SeqRun> runs, ForwardScratch& s, Parallel& par) {
  const ModelConfig& c = config_;
  const FloatOps& ops = float_ops();
  const LayerTensors& w = layers_[l];
  // q [n, q_dim], k [n, kv_dim], v [n, v_dim] = W xb (+ bias)
  // bias_qkv [q_dim + kv_dim + v_dim]: the q, k and v biases one after the other
  float* const bias_k_at = s.bias_qkv.data() + c.q_dim();
  float* const bias_v_at = bias_k_at + c.kv_dim();
  if (w.bqkv) {
    dequantize(w.bqkv, s.bias_qkv.data());
  } else if (c.has_qkv_bias) {
    dequantize(w.bq, s.bias_qkv.data());
    dequantize(w.bk, bias_k_at);
    dequantize(w.bv, bias_v_at);
  }
  const float* bq = c.has_qkv_bias ? s.bias_qkv.data() : nullptr;
  const float* bk = c.has_qkv_bias ? bias_k_at : nullptr;
  const float* bv = c.has_qkv_bias ? bias_v_at : nullptr;
  const std::array<Matrix, 3> wqkv = qkv_matrices(w);
  const MatmulJob qkv[] = {
      {wqkv[0], s.q.data(), bq}, {wqkv[1], s.k.data(), bk}, {wqkv[2], s.v.data(), bv}};
  matmul(par, s.xb.data(), n, qkv, s.mm);
  // q and k rms-normed: whole rows (olmoe), or each head (qwen3, gemma3)
  if (c.has_full_qk_norm) {
    dequantize(w.q_norm, s.norm_q.data());
    dequantize(w.k_norm, s.norm_k.data());
    for (int i = 0; i < n; ++i) {
      float* qi = &s.q[static_cast<size_t>(i) * c.q_dim()];
      float* ki = &s.k[static_cast<size_t>(i) * c.kv_dim()];
      ops.rms_norm(qi, s.norm_q.data(), qi, c.q_dim(), c.rms_eps);
      ops.rms_norm(ki, s.norm_k.data(), ki, c.kv_dim(), c.rms_eps);
    }
  }
  if (c.has_qk_norm) {
    dequantize(w.q_norm, s.norm_q.data());
    dequantize(w.k_norm, s.norm_k.data());
    for (int h = 0; h < n * c.n_head; ++h) {
      float* qh = &s.q[static_cast<size_t>(h) * c.head_dim];
      ops.rms_norm(qh, s.norm_q.data(), qh, c.head_dim, c.rms_eps);
    }
    for (int h = 0; h < n * c.n_head_kv; ++h) {
      float* kh = &s.k[static_cast<size_t>(h) * c.head_dim];
      ops.rms_norm(kh, s.norm_k.data(), kh, c.head_dim, c.rms_eps);
    }
  }
  // rotate q and k by position (bert has learned positions instead), then append k, v
  // to the cache
  const std::vector<float>& rope = c.is_swa(l) ? s.rope_swa : s.rope;
  for (int i = 0; i < n; ++i) {
    if (c.has_rope) {
      const float* cos_sin = &rope[static_cast<size_t>(i) * c.n_rot];
      rope_heads(ops, c, &s.q[static_cast<size_t>(i) * c.q_dim()], c.n_head, cos_sin);
      rope_heads(ops, c, &s.k[static_cast<size_t>(i) * c.kv_dim()], c.n_head_kv, cos_sin);
    }
  }
  if (w.attn_sinks) dequantize(w.attn_sinks, s.sinks.data());
  // each run: its k, v into its cache, then attn [n, attn_out_dim]: each head over its
  // positions (all before it, or its window; every position of the input where
  // attention is not causal)
  int i0 = 0;
  s.att_runs.clear();
  for (const SeqRun& r : runs) {
    for (int j = 0; j < r.n; ++j) {
      const size_t i = static_cast<size_t>(i0 + j);
      r.kv->store(l, r.pos0 + j, &s.k[i * c.kv_dim()], &s.v[i * c.v_dim()]);
    }
    s.att_runs.push_back({r.kv, s.q.data() + static_cast<size_t>(i0) * c.q_dim(),
                          s.attn.data() + static_cast<size_t>(i0) * c.attn_out_dim(), r.n, r.pos0});
    i0 += r.n;
  }
  attention(par, c, s.att_runs, l, s.att, w.attn_sinks ? s.sinks.data() : nullptr);
  // proj = W_o attn (+ bias)
  if (w.bo) dequantize(w.bo, s.bias_o.data());
  const MatmulJob wo[] = {{matrix(w.wo), s.proj.data(), w.bo ? s.bias_o.data() : nullptr}};
  matmul(par, s.attn.data(), n, wo, s.mm);
}

void Model::ffn_block(int l, int n, ForwardScratch& s, Parallel& par) {
  const ModelConfig& c = config_;
  const FloatOps& ops = float_ops();
  const LayerTensors& w = layers_[l];
  if (!c.ffn_gated) {
    // gate [n, n_ff] = gelu(W_up xb + b_up), each task on its rows; proj = W_down gate + b_down
    if (w.b_up) dequantize(w.b_up, s.bias_up.data());
    if (w.b_down) dequantize(w.b_down, s.bias_down.data());
    const auto act = c.ffn_act == FfnAct::Gelu ? ops.gelu : ops.silu;
    const auto act_rows = [&](int64_t r0, int64_t r1) {
      for (int i = 0; i < n; ++i) {
        const size_t at = static_cast<size_t>(i) * c.n_ff + static_cast<size_t>(r0);
        act(&s.gate[at], &s.gate[at], r1 - r0);
      }
    };
    const RowEpilogue epilogue = std::ref(act_rows);
    const MatmulJob up[] = {{matrix(w.w_up), s.gate.data(), w.b_up ? s.bias_up.data() : nullptr}};
    matmul(par, s.xb.data(), n, up, s.mm, &epilogue);
    const MatmulJob down[] = {{matrix(w.w_down), s.proj.data(), w.b_down ? s.bias_down.data() : nullptr}};
    matmul(par, s.gate.data(), n, down, s.mm);
    return;
  }
  // gate, up [n, n_ff] = W xb; gate = act(gate) * up, by each task on the rows it
  // computed (alone on one thread after the product, it left the other thread idle)
  const std::array<Matrix, 2> w_gate_up = gate_up_matrices(w);
  const MatmulJob gate_up[] = {{w_gate_up[0], s.gate.data(), nullptr},
                               {w_gate_up[1], s.up.data(), nullptr}};
  const auto glu = c.ffn_act == FfnAct::Gelu ? ops.geglu : ops.swiglu;
  const auto glu_rows = [&](int64_t r0, int64_t r1) {
    for (int i = 0; i < n; ++i) {
      const size_t at = static_cast<size_t>(i) * c.n_ff + static_cast<size_t>(r0);
      glu(&s.gate[at], &s.up[at], &s.gate[at], r1 - r0);
    }
  };
  const RowEpilogue epilogue = std::ref(glu_rows);  // a reference: no allocation
  matmul(par, s.xb.data(), n, gate_up, s.mm, &epilogue);
  // proj = W_down gate
  const MatmulJob down[] = {{matrix(w.w_down), s.proj.data(), nullptr}};
  matmul(par, s.gate.data(), n, down, s.mm);
}

void Model::output(int n, int logits_from, ForwardScratch& s, Parallel& par, float* hidden_out) {
  const ModelConfig& c = config_;
  const size_t n_embd = c.n_embd;
  // logits [n_out, n_vocab] = lm_head(rms_norm(x) * output_norm), for rows [first, n)
  const int first = hidden_out ? 0 : std::clamp(logits_from, 0, n - 1);
  const int n_out = n - first;
  norm_rows(output_norm_, &s.x[first * n_embd], &s.xb[first * n_embd], n_out, s);
  if (hidden_out) {
    std::copy(s.xb.begin(), s.xb.begin() + static_cast<std::ptrdiff_t>(n * n_embd), hidden_out);
    return;
  }
  const MatmulJob head[] = {{matrix(output_), s.logits.data(), nullptr}};
  // rows before `first` are not in this product: fewer of the leading rows take the gemm
  const int gemm_tokens = s.mm.gemm_tokens;
  s.mm.gemm_tokens = std::max(0, gemm_tokens - first);
  matmul(par, &s.xb[first * n_embd], n_out, head, s.mm);
  s.mm.gemm_tokens = gemm_tokens;
  if (c.final_softcap > 0.0f) {
    float_ops().softcap(s.logits.data(), static_cast<int64_t>(n_out) * c.n_vocab, c.final_softcap);
  }
}

}  // namespace runnel
