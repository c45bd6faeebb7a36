// The llama family's forward pass: llama 2/3, Mistral, SmolLM; qwen2 (q/k/v biases,
// neox rope), qwen3 (q/k norms, neox rope) and phi3 (Phi-3, Phi-3.5, Phi-4-mini: fused
// qkv and gate-up matrices read as row ranges, neox rope, LongRoPE factors) differ only
// in their config and weights; so do the mixture-of-experts models (Mixtral, qwen2moe,
// qwen3moe, olmoe: whole-row q/k norms), whose feed-forward is Model::moe_block.
#include "core/model/model.h"

namespace runnel {

void Model::forward_llama(std::span<const int32_t> tokens, std::span<const SeqRun> runs, int logits_from,
                          ForwardScratch& s, Parallel& par, float* hidden_out) {
  const ModelConfig& c = config_;
  const int n = static_cast<int>(tokens.size());
  const FloatOps& ops = float_ops();
  const size_t n_x = static_cast<size_t>(n) * c.n_embd;

  embed(tokens, runs, s);  // x [n, n_embd]
  for (int l = 0; l < c.n_layer; ++l) {
    store_.acquire(l);
    if (l + 1 < c.n_layer) store_.prefetch(l + 1);
    const LayerTensors& w = layers_[l];
    // x += attention(rms_norm(x) * attn_norm)
    norm_rows(w.attn_norm, s.x.data(), s.xb.data(), n, s);
    attention_block(l, n, runs, s, par);
    ops.add(s.x.data(), s.proj.data(), s.x.data(), n_x);
    // x += ffn(rms_norm(x) * ffn_norm), ffn = W_down (silu(W_gate xb) * W_up xb), or
    // the routed experts' weighted sum of such products
    norm_rows(w.ffn_norm, s.x.data(), s.xb.data(), n, s);
    if (c.is_moe()) moe_block(l, n, s, par);
    else ffn_block(l, n, s, par);
    ops.add(s.x.data(), s.proj.data(), s.x.data(), n_x);
    store_.release(l);
  }
  output(n, logits_from, s, par, hidden_out);
}

}  // namespace runnel
