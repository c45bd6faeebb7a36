// The mixture-of-experts feed-forward (Mixtral, qwen2moe, qwen3moe, olmoe, gpt-oss), as
// llama.cpp's build_moe_ffn computes it: a router picks each token's
// n_expert_used experts by probability; each expert's SwiGLU runs once over all the
// tokens routed to it (a prompt's rows meet an expert's weights together, as the dense
// products do); each token's experts' outputs are weighted and summed in its pick order.
#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "core/model/model.h"

namespace runnel {
namespace {

// The k largest of p[0..n) in descending order (ties: the lower index first).
void pick_top_k(const float* p, int n, int k, int32_t* ids) {
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (int e = 0; e < n; ++e) {
      if (std::find(ids, ids + j, e) != ids + j) continue;
      if (best < 0 || p[e] > p[best]) best = e;
    }
    ids[j] = best;
  }
}

// gpt-oss's expert activation (ggml's swiglu_oai, alpha 1.702, limit 7), into gate:
// x = min(gate, 7), y = clamp(up, -7, 7), x * sigmoid(1.702 x) * (y + 1).
void swiglu_oai(float* gate, const float* up, int64_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = std::min(gate[i], kLimit);
    const float y = std::clamp(up[i], -kLimit, kLimit);
    gate[i] = x / (1.0f + std::exp(kAlpha * -x)) * (y + 1.0f);
  }
}

}  // namespace

void Model::moe_block(int l, int n, ForwardScratch& s, Parallel& par) {
  const ModelConfig& c = config_;
  const FloatOps& ops = float_ops();
  const LayerTensors& w = layers_[l];
  const int k = c.n_expert_used;
  const int n_pairs = n * k;
  const size_t n_embd = c.n_embd;
  const int64_t ff = c.n_ff_exp;

  // router [n, n_expert] = W_router xb (+ bias); per token, softmax gating: the k most
  // probable experts weighted by their probabilities (renormalized to sum 1 where the
  // family says, the sum kept above f16's smallest normal as llama.cpp does); or
  // gpt-oss's: the k largest logits, weighted by the softmax of those k
  float* tmp = s.exp_bias.data();
  const MatmulJob route[] = {{matrix(w.router), s.router.data(), expert_bias(w.router_b, 0, tmp)}};
  matmul(par, s.xb.data(), n, route, s.mm);
  for (int i = 0; i < n; ++i) {
    float* logits = &s.router[static_cast<size_t>(i) * c.n_expert];
    int32_t* ids = &s.picked[static_cast<size_t>(i) * k];
    float* weights = &s.pick_w[static_cast<size_t>(i) * k];
    if (c.expert_gating == ExpertGating::SoftmaxWeight) {
      pick_top_k(logits, c.n_expert, k, ids);
      for (int j = 0; j < k; ++j) weights[j] = logits[ids[j]];
      ops.softmax(weights, k);
      continue;
    }
    ops.softmax(logits, c.n_expert);
    pick_top_k(logits, c.n_expert, k, ids);
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) sum += weights[j] = logits[ids[j]];
    if (c.expert_weights_norm) {
      sum = std::max(sum, 6.103515625e-5f);
      for (int j = 0; j < k; ++j) weights[j] /= sum;
    }
  }

  // The (token, pick) pairs grouped by expert, in token order: routed[row] = pair, each
  // pair's input row gathered into moe_in[row]; expert e takes rows [first[e], first[e] +
  // count[e]), and its gate / up rows, activated, and its outputs (moe_out) the same rows.
  int first[kMaxExperts], count[kMaxExperts];
  int row = 0;
  for (int e = 0; e < c.n_expert; ++e) {
    first[e] = row;
    for (int pair = 0; pair < n_pairs; ++pair) {
      if (s.picked[pair] == e) s.routed[row++] = pair;
    }
    count[e] = row - first[e];
  }
  for (int r = 0; r < n_pairs; ++r) {
    const float* x = &s.xb[static_cast<size_t>(s.routed[r] / k) * n_embd];
    std::copy(x, x + n_embd, &s.moe_in[static_cast<size_t>(r) * n_embd]);
  }
  const auto activate = [&](int64_t row0, int64_t n_rows, int64_t r0, int64_t r1) {
    for (int64_t i = row0; i < row0 + n_rows; ++i) {
      const size_t at = static_cast<size_t>(i) * ff + static_cast<size_t>(r0);
      if (c.ffn_act == FfnAct::SwigluOai) {
        swiglu_oai(&s.gate[at], &s.up[at], r1 - r0);
      } else {
        ops.swiglu(&s.gate[at], &s.up[at], &s.gate[at], r1 - r0);
      }
    }
  };
  const auto in_at = [&](int e) { return &s.moe_in[static_cast<size_t>(first[e]) * n_embd]; };
  const auto gate_at = [&](int e) { return &s.gate[static_cast<size_t>(first[e]) * ff]; };
  const auto up_at = [&](int e) { return &s.up[static_cast<size_t>(first[e]) * ff]; };
  const auto out_at = [&](int e) { return &s.moe_out[static_cast<size_t>(first[e]) * n_embd]; };

  const bool f32_biases = !w.gate_exps_b || (w.gate_exps_b->type == GgmlType::F32 &&
                                             w.up_exps_b->type == GgmlType::F32 && w.down_exps_b->type == GgmlType::F32);
  // experts[0..n_group): the experts computed together (all that are picked, unless the
  // store streams experts and holds fewer at once)
  const auto run_experts = [&](const int* experts, int n_group) {
    int group_max = 0;
    for (int i = 0; i < n_group; ++i) group_max = std::max(group_max, count[experts[i]]);
    // Decoding (each expert gets a token or two): every expert's gate and up in one
    // dispatch, then every down in another, when the biases need no decoding.
    if ((group_max < kMinGemmTokens || s.mm.per_token) && f32_biases &&
        2 * static_cast<size_t>(n_group) <= kMaxRoutedJobs) {
      RoutedJob jobs[kMaxRoutedJobs];
      size_t n_jobs = 0;
      for (int i = 0; i < n_group; ++i) {
        const int e = experts[i];
        jobs[n_jobs++] = {expert_matrix(w.gate_exps, e), in_at(e), count[e], gate_at(e), expert_bias(w.gate_exps_b, e, tmp)};
        jobs[n_jobs++] = {expert_matrix(w.up_exps, e), in_at(e), count[e], up_at(e), expert_bias(w.up_exps_b, e, tmp)};
      }
      // the group's rows only: activate() must not touch rows of experts not yet computed
      const auto glu = [&](int64_t r0, int64_t r1) {
        for (int i = 0; i < n_group; ++i) activate(first[experts[i]], count[experts[i]], r0, r1);
      };
      const RowEpilogue epilogue = std::cref(glu);
      if (matmul_routed(par, std::span<const RoutedJob>(jobs, n_jobs), s.mm, &epilogue)) {
        n_jobs = 0;
        for (int i = 0; i < n_group; ++i) {
          const int e = experts[i];
          jobs[n_jobs++] = {expert_matrix(w.down_exps, e), gate_at(e), count[e], out_at(e),
                            expert_bias(w.down_exps_b, e, tmp)};
        }
        if (!matmul_routed(par, std::span<const RoutedJob>(jobs, n_jobs), s.mm)) {
          throw std::logic_error("moe: the down products did not fit where gate and up did");
        }
        return;
      }
    }
    // Prompts: each expert's rows meet its weights in the batched products.
    for (int i = 0; i < n_group; ++i) {
      const int e = experts[i];
      const auto glu = [&](int64_t r0, int64_t r1) { activate(first[e], count[e], r0, r1); };
      const RowEpilogue epilogue = std::cref(glu);
      const MatmulJob gate_up[] = {{expert_matrix(w.gate_exps, e), gate_at(e), expert_bias(w.gate_exps_b, e, tmp)},
                                   {expert_matrix(w.up_exps, e), up_at(e), expert_bias(w.up_exps_b, e, tmp + ff)}};
      matmul(par, in_at(e), count[e], gate_up, s.mm, &epilogue);
      const MatmulJob down[] = {{expert_matrix(w.down_exps, e), out_at(e), expert_bias(w.down_exps_b, e, tmp + 2 * ff)}};
      matmul(par, gate_at(e), count[e], down, s.mm);
    }
  };
  int active[kMaxExperts];
  int n_active_ids = 0;
  for (int e = 0; e < c.n_expert; ++e) {
    if (count[e] > 0) active[n_active_ids++] = e;
  }
  if (!store_.experts_streamed(l)) {
    run_experts(active, n_active_ids);
  } else {
    // Streamed experts: read the picked ones into the store's cache, as many at a time as
    // it pins, computing those already cached while the others are read (each expert has
    // its own output rows, summed below in pick order: the order computed changes no bit).
    const int cap = std::max(1, store_.expert_pin_capacity());
    for (int g = 0; g < n_active_ids; g += cap) {
      const int n_group = std::min(cap, n_active_ids - g);
      const int n_ready = store_.fetch_experts_begin(l, std::span<int>(active + g, n_group));
      try {
        if (n_ready > 0) run_experts(active + g, n_ready);
      } catch (...) {
        try {
          store_.fetch_experts_wait(l);  // the reads write into the slots: let them end first
        } catch (...) {  // the first error is the one to report
        }
        store_.unpin_experts(l);
        throw;
      }
      store_.fetch_experts_wait(l);
      if (n_ready < n_group) run_experts(active + g + n_ready, n_group - n_ready);
      store_.unpin_experts(l);
    }
  }
  // picked[pair] now becomes the pair's row of moe_out (the expert ids are done with)
  for (int r = 0; r < n_pairs; ++r) s.picked[s.routed[r]] = r;

  // proj[i] = sum_j weight_j * out_j, in pick order (llama.cpp's chain of adds)
  for (int i = 0; i < n; ++i) {
    float* y = &s.proj[static_cast<size_t>(i) * n_embd];
    for (int j = 0; j < k; ++j) {
      const float wj = s.pick_w[static_cast<size_t>(i) * k + j];
      const float* out = &s.moe_out[static_cast<size_t>(s.picked[static_cast<size_t>(i) * k + j]) * n_embd];
      if (j == 0) {
        for (size_t d = 0; d < n_embd; ++d) y[d] = wj * out[d];
      } else {
        for (size_t d = 0; d < n_embd; ++d) y[d] += wj * out[d];
      }
    }
  }
  if (!c.has_shared_expert) return;

  // qwen2moe: proj += sigmoid(g . xb) * W_down_sh (silu(W_gate_sh xb) * W_up_sh xb); the
  // router's buffer holds the gate's logits, moe_in the shared expert's output
  const int64_t ff_sh = c.n_ff_shexp;
  const MatmulJob gate_logit[] = {{matrix(w.shexp_gate_inp), s.router.data(), nullptr}};
  matmul(par, s.xb.data(), n, gate_logit, s.mm);
  const auto glu_sh = [&](int64_t r0, int64_t r1) {
    for (int i = 0; i < n; ++i) {
      const size_t at = static_cast<size_t>(i) * ff_sh + static_cast<size_t>(r0);
      ops.swiglu(&s.gate[at], &s.up[at], &s.gate[at], r1 - r0);
    }
  };
  const RowEpilogue epilogue = std::cref(glu_sh);
  const MatmulJob gate_up[] = {{matrix(w.shexp_gate), s.gate.data(), nullptr},
                               {matrix(w.shexp_up), s.up.data(), nullptr}};
  matmul(par, s.xb.data(), n, gate_up, s.mm, &epilogue);
  const MatmulJob down[] = {{matrix(w.shexp_down), s.moe_in.data(), nullptr}};
  matmul(par, s.gate.data(), n, down, s.mm);
  for (int i = 0; i < n; ++i) {
    const float g = s.router[i];
    // llama.cpp's sigmoid here is silu(g) / g
    const float gate = (g / (1.0f + std::exp(-g))) / g;
    float* y = &s.proj[static_cast<size_t>(i) * n_embd];
    const float* sh = &s.moe_in[static_cast<size_t>(i) * n_embd];
    for (size_t d = 0; d < n_embd; ++d) y[d] += sh[d] * gate;
  }
}

}  // namespace runnel
