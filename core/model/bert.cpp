// The encoder-only embedding models' forward pass: bert (BGE, MiniLM, ...) and nomic-bert
// (nomic-embed-text). Against llama: the embeddings are LayerNormed (bert adds a token
// type row and learned position rows first; nomic-bert ropes q and k instead), blocks
// are post-norm (x = LayerNorm(x + block(x)), weight and bias), attention sees the whole
// input unless {arch}.attention.causal says otherwise, and the feed-forward is GELU
// without a gate (bert) or SwiGLU (nomic-bert). There is no output head: the last
// layer's output of every token goes to hidden_out, which Session::embed pools.
#include <algorithm>

#include "core/model/model.h"

namespace runnel {

void Model::forward_bert(std::span<const int32_t> tokens, std::span<const SeqRun> runs, ForwardScratch& s,
                         Parallel& par, float* hidden_out) {
  const ModelConfig& c = config_;
  const int n = static_cast<int>(tokens.size());
  const FloatOps& ops = float_ops();
  const size_t n_x = static_cast<size_t>(n) * c.n_embd;

  // x [n, n_embd] = layer_norm(token rows + type row 0 + position rows)
  embed(tokens, runs, s);
  layer_norm_rows(embd_norm_, embd_norm_b_, s.x.data(), s.x.data(), n, s);
  for (int l = 0; l < c.n_layer; ++l) {
    store_.acquire(l);
    if (l + 1 < c.n_layer) store_.prefetch(l + 1);
    const LayerTensors& w = layers_[l];
    // x = layer_norm(x + attention(x)) * attn_output_norm + bias
    std::copy(s.x.begin(), s.x.begin() + static_cast<std::ptrdiff_t>(n_x), s.xb.begin());
    attention_block(l, n, runs, s, par);
    ops.add(s.x.data(), s.proj.data(), s.x.data(), static_cast<int64_t>(n_x));
    layer_norm_rows(w.attn_out_norm, w.attn_out_norm_b, s.x.data(), s.x.data(), n, s);
    // x = layer_norm(x + ffn(x)) * layer_output_norm + bias
    std::copy(s.x.begin(), s.x.begin() + static_cast<std::ptrdiff_t>(n_x), s.xb.begin());
    ffn_block(l, n, s, par);
    ops.add(s.x.data(), s.proj.data(), s.x.data(), static_cast<int64_t>(n_x));
    layer_norm_rows(w.layer_out_norm, w.layer_out_norm_b, s.x.data(), s.x.data(), n, s);
    store_.release(l);
  }
  // [n, n_embd]: every token's hidden state (an embedding model computes no logits)
  if (hidden_out) std::copy(s.x.begin(), s.x.begin() + static_cast<std::ptrdiff_t>(n_x), hidden_out);
}

}  // namespace runnel
