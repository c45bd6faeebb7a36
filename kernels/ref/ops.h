// Scalar reference float ops of a forward pass (the oracle for per-ISA versions). The
// model code calls them through float_ops() (kernels/ops.h), not directly. All arrays
// are float[n] unless noted; `out` may alias the input (every op is element-wise or
// reads its input fully before writing). Nothing allocates or throws.
#pragma once

#include <cstdint>

namespace runnel::ref {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]  (w == nullptr: no weight).
// The mean of squares is accumulated in double (like ggml).
void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps);

// In place: x[i] = exp(x[i] - max) / sum_j exp(x[j] - max). -inf entries become 0; a row
// that is all -inf becomes all 0 (rather than NaN).
void softmax(float* x, int64_t n);

// out[i] = x[i] / (1 + exp(-x[i])).
void silu(const float* x, float* out, int64_t n);

// out[i] = silu(gate[i]) * up[i]  (the llama FFN gate).
void swiglu(const float* gate, const float* up, float* out, int64_t n);

// out[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (gemma's GELU, tanh form).
void gelu(const float* x, float* out, int64_t n);

// out[i] = gelu(gate[i]) * up[i]  (gemma's FFN gate).
void geglu(const float* gate, const float* up, float* out, int64_t n);

// In place: x[i] = cap * tanh(x[i] / cap)  (gemma-2 logit soft-capping).
void softcap(float* x, int64_t n, float cap);

// out[i] = a[i] + b[i];  out[i] = a[i] * b[i];  x[i] *= s;  y[i] += s * x[i].
void add(const float* a, const float* b, float* out, int64_t n);
void mul(const float* a, const float* b, float* out, int64_t n);
void scale(float* x, int64_t n, float s);
void axpy(const float* x, float* y, int64_t n, float s);

// ---- rotary position embedding (rope)
//
// Rotates pairs of the first n_rot elements of one head vector by pos * freq_i, with
//   freq_i = freq_scale * freq_base^(-2i / n_rot) / freq_factors[i],  i in [0, n_rot / 2)
// (freq_factors == nullptr means all 1; llama-3 style scaling ships them as the
// rope_freqs tensor). Elements past n_rot are left alone (partial rotary, e.g. phi).
// Pair i is (x[2i], x[2i+1]) in kNormal (llama) style and (x[i], x[i + n_rot/2]) in
// kNeox style (gpt-neox, qwen2, phi3, gemma ...). attn_factor scales cos and sin (1 for
// plain rope).
//
// YaRN (ext_factor != 0; ext_factor 0 is plain or linear rope, bit for bit as without
// these fields): pair i turns by a mix of the interpolated angle (freq_scale applied) and
// the extrapolated one (not applied), as llama.cpp's ggml_rope_yarn does:
//   theta_i = theta_interp (1 - m_i) + theta_extrap m_i,  m_i = ext_factor ramp(i),
//   ramp(i) = 1 - clamp((i - low) / max(0.001, high - low), 0, 1),
//   low  = max(0, floor(d(beta_fast))),  high = min(n_rot - 1, ceil(d(beta_slow))),
//   d(b) = n_rot ln(n_ctx_orig / (2 pi b)) / (2 ln freq_base)
// (d(b): the pair that turns b times over the original context; pairs that turn faster
// keep their angle, slower ones are interpolated), and cos and sin are further scaled by
// 1 + 0.1 ln(1 / freq_scale) (YaRN's attention magnitude correction).

enum class RopeStyle { kNormal, kNeox };

struct RopeParams {
  int64_t n_rot = 0;                    // rotated dimensions (even, <= head_dim)
  float freq_base = 10000;              // theta base (rope.freq_base)
  float freq_scale = 1;                 // linear position scaling (1 / rope.scale_linear)
  float attn_factor = 1;                // magnitude scale applied to cos and sin
  const float* freq_factors = nullptr;  // [n_rot / 2] divisors of each frequency, or null
  float ext_factor = 0;                 // YaRN: weight of the extrapolated angle (1), 0: off
  int64_t n_ctx_orig = 0;               // YaRN: the context before scaling (> 0 when on)
  float beta_fast = 32;                 // YaRN: pairs turning more often keep their angle
  float beta_slow = 1;                  // YaRN: pairs turning less often are interpolated
};

// cos_sin[2i] = cos(theta_i) * attn_factor, cos_sin[2i + 1] = sin(theta_i) * attn_factor,
// theta_i = pos * freq_i, for i in [0, n_rot / 2). Computed in double then rounded, so a
// cache of one position serves every head and layer of that position.
void rope_cos_sin(int64_t pos, const RopeParams& p, float* cos_sin);

// Rotates x[0, n_rot) in place with a table from rope_cos_sin.
void rope_apply(float* x, int64_t n_rot, const float* cos_sin, RopeStyle style);

}  // namespace runnel::ref
