// NEON kernels for the legacy 32-element blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights
// dotted with Q8_0 / Q8_1 activations (neon_legacy_dots.h with the baseline widening
// dot step), and the Q8_0 / Q8_1 activation quantizers.
// Quantizers: same arithmetic as ref step by step, so the bytes are identical.
#include <arm_neon.h>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_common.h"
#include "kernels/arm/neon_legacy_dots.h"
#include "kernels/fp16.h"
#include "kernels/ref/blocks.h"

namespace runnel::neon {

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  return dot_q4_0<WideningDot>(n, w, a);
}
float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  return dot_q4_1<WideningDot>(n, w, a);
}
float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  return dot_q5_0<WideningDot>(n, w, a);
}
float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  return dot_q5_1<WideningDot>(n, w, a);
}
float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  return dot_q8_0<WideningDot>(n, w, a);
}

namespace {

// ref's quantize_block_q8: d = amax / 127, q = round(x * id) half away from zero with
// id = 1 / d (vrndaq_f32 is that rounding, exactly). Stores the 32 quants and returns d
// (unrounded). When amax is so small that id overflows, x * id is +-inf or NaN and ref's
// float -> int8 conversion is, on aarch64, the saturating fcvtzs to 32 bits (0 for NaN)
// followed by taking the low byte; the saturating vcvtq_s32_f32 plus the truncating
// narrows below are the same operations, so even those bytes match.
float quantize_block_q8(const float* x, int8_t* qs) {
  float32x4_t v[8];
  float32x4_t amax = vdupq_n_f32(0.0f);
  for (int i = 0; i < 8; ++i) {
    v[i] = vld1q_f32(x + 4 * i);
    amax = vmaxq_f32(amax, vabsq_f32(v[i]));
  }
  const float d = vmaxvq_f32(amax) / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int16x8_t q16[4];
  for (int i = 0; i < 4; ++i) {
    const int32x4_t q0 = vcvtq_s32_f32(vrndaq_f32(vmulq_n_f32(v[2 * i], id)));
    const int32x4_t q1 = vcvtq_s32_f32(vrndaq_f32(vmulq_n_f32(v[2 * i + 1], id)));
    q16[i] = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1));
  }
  vst1q_s8(qs, vcombine_s8(vmovn_s16(q16[0]), vmovn_s16(q16[1])));
  vst1q_s8(qs + 16, vcombine_s8(vmovn_s16(q16[2]), vmovn_s16(q16[3])));
  return d;
}

}  // namespace

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<ref::BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    y[b].d = fp32_to_fp16(quantize_block_q8(src + b * kQK, y[b].qs));
  }
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<ref::BlockQ8_1*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = quantize_block_q8(src + b * kQK, y[b].qs);
    // |sum| <= 32 * 128 fits the int16 of the widening add across lanes
    const int sum = vaddlvq_s8(load_s8(y[b].qs)) + vaddlvq_s8(load_s8(y[b].qs + 16));
    y[b].d = fp32_to_fp16(d);
    y[b].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

}  // namespace runnel::neon
