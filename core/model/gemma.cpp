// The gemma family's forward pass: gemma (1), gemma2 and gemma3. Against llama:
// embeddings scaled by sqrt(n_embd), GELU-gated feed-forward, tied output; gemma2/3
// norm each block's output before adding it back (post norms) and slide a window over
// most layers' attention; gemma2 soft-caps attention scores and logits; gemma3 norms
// q and k per head and gives its sliding layers their own rope base. All of it is
// config (config.cpp): this function only adds the post norms.
#include "core/model/model.h"

namespace runnel {

void Model::forward_gemma(std::span<const int32_t> tokens, std::span<const SeqRun> runs, int logits_from,
                          ForwardScratch& s, Parallel& par, float* hidden_out) {
  const ModelConfig& c = config_;
  const int n = static_cast<int>(tokens.size());
  const FloatOps& ops = float_ops();
  const size_t n_x = static_cast<size_t>(n) * c.n_embd;

  embed(tokens, runs, s);  // x [n, n_embd], scaled
  for (int l = 0; l < c.n_layer; ++l) {
    store_.acquire(l);
    if (l + 1 < c.n_layer) store_.prefetch(l + 1);
    const LayerTensors& w = layers_[l];
    // x += post_norm(attention(rms_norm(x) * attn_norm))
    norm_rows(w.attn_norm, s.x.data(), s.xb.data(), n, s);
    attention_block(l, n, runs, s, par);
    if (c.has_post_norms) norm_rows(w.post_attn_norm, s.proj.data(), s.proj.data(), n, s);
    ops.add(s.x.data(), s.proj.data(), s.x.data(), n_x);
    // x += post_norm(ffn(rms_norm(x) * ffn_norm)), ffn = W_down (gelu(W_gate xb) * W_up xb)
    norm_rows(w.ffn_norm, s.x.data(), s.xb.data(), n, s);
    ffn_block(l, n, s, par);
    if (c.has_post_norms) norm_rows(w.post_ffn_norm, s.proj.data(), s.proj.data(), n, s);
    ops.add(s.x.data(), s.proj.data(), s.x.data(), n_x);
    store_.release(l);
  }
  output(n, logits_from, s, par, hidden_out);
}

}  // namespace runnel
