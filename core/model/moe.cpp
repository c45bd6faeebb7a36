// The mixture-of-experts feed-forward (Mixtral, qwen2moe, qwen3moe, olmoe), as
// llama.cpp's build_moe_ffn computes it with softmax gating: a router picks each token's
// n_expert_used experts by probability; each expert's SwiGLU runs once over all the
// tokens routed to it (a prompt's rows meet an expert's weights together, as the dense
// products do); each token's experts' outputs are weighted and summed in its pick order.
#include <algorithm>
#include <cmath>
#include <functional>

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

}  // namespace

void Model::moe_block(int l, int n, ForwardScratch& s, Parallel& par) {
  const ModelConfig& c = config_;
  const FloatOps& ops = float_ops();
  const LayerTensors& w = layers_[l];
  const int k = c.n_expert_used;
  const int n_pairs = n * k;
  const size_t n_embd = c.n_embd;
  const int64_t ff = c.n_ff_exp;

  // router [n, n_expert] = softmax(W_router xb) per token; each token's k most probable
  // experts, weighted by their probabilities (renormalized to sum 1 where the family
  // says, the sum kept above f16's smallest normal as llama.cpp does)
  const MatmulJob route[] = {{matrix(w.router), s.router.data(), nullptr}};
  matmul(par, s.xb.data(), n, route, s.mm);
  for (int i = 0; i < n; ++i) {
    float* probs = &s.router[static_cast<size_t>(i) * c.n_expert];
    ops.softmax(probs, c.n_expert);
    int32_t* ids = &s.picked[static_cast<size_t>(i) * k];
    float* weights = &s.pick_w[static_cast<size_t>(i) * k];
    pick_top_k(probs, c.n_expert, k, ids);
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) sum += weights[j] = probs[ids[j]];
    if (c.expert_weights_norm) {
      sum = std::max(sum, 6.103515625e-5f);
      for (int j = 0; j < k; ++j) weights[j] /= sum;
    }
  }

  // Each expert over its (token, pick) pairs, in token order: routed[row] = pair, and
  // the expert's outputs go to moe_out rows [first, first + count).
  int row = 0;
  for (int e = 0; e < c.n_expert; ++e) {
    const int first = row;
    for (int pair = 0; pair < n_pairs; ++pair) {
      if (s.picked[pair] == e) s.routed[row++] = pair;
    }
    const int count = row - first;
    if (count == 0) continue;
    for (int r = 0; r < count; ++r) {
      const float* x = &s.xb[static_cast<size_t>(s.routed[first + r] / k) * n_embd];
      std::copy(x, x + n_embd, &s.moe_in[static_cast<size_t>(r) * n_embd]);
    }
    const auto glu = [&](int64_t r0, int64_t r1) {
      for (int i = 0; i < count; ++i) {
        const size_t at = static_cast<size_t>(i) * ff + static_cast<size_t>(r0);
        ops.swiglu(&s.gate[at], &s.up[at], &s.gate[at], r1 - r0);
      }
    };
    const RowEpilogue epilogue = std::cref(glu);
    const MatmulJob gate_up[] = {{expert_matrix(w.gate_exps, e), s.gate.data(), nullptr},
                                 {expert_matrix(w.up_exps, e), s.up.data(), nullptr}};
    matmul(par, s.moe_in.data(), count, gate_up, s.mm, &epilogue);
    const MatmulJob down[] = {{expert_matrix(w.down_exps, e), &s.moe_out[static_cast<size_t>(first) * n_embd], nullptr}};
    matmul(par, s.gate.data(), count, down, s.mm);
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
