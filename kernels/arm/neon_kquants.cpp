// NEON k-quant kernels: Q2_K .. Q6_K weights dotted with Q8_K activations
// (neon_kquant_dots.h with the baseline widening dot step), and the Q8_K activation
// quantizer, which follows ref's arithmetic exactly (bit-identical blocks).
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_common.h"
#include "kernels/arm/neon_kquant_dots.h"
#include "kernels/ref/blocks.h"

namespace runnel::neon {

float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  return dot_q2_k<WideningDot>(n, w, a);
}
float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  return dot_q3_k<WideningDot>(n, w, a);
}
float vec_dot_q4_k(int64_t n, const void* w, const void* a) {
  return dot_q4_k<WideningDot>(n, w, a);
}
float vec_dot_q5_k(int64_t n, const void* w, const void* a) {
  return dot_q5_k<WideningDot>(n, w, a);
}
float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  return dot_q6_k<WideningDot>(n, w, a);
}

void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<ref::BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    float32x4_t vmax = vdupq_n_f32(0.0f);
    for (int i = 0; i < kQK_K; i += 4) vmax = vmaxq_f32(vmax, vabsq_f32(vld1q_f32(x + i)));
    const float amax = vmaxvq_f32(vmax);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    // ref keeps the sign of the first element of largest magnitude.
    float max = 0.0f;
    for (int i = 0; i < kQK_K; ++i) {
      if (std::fabs(x[i]) == amax) {
        max = x[i];
        break;
      }
    }
    const float iscale = -127.0f / max;
    // |max| < 127 / FLT_MAX: iscale is inf and ref's nearest_int(+-inf or NaN) keeps the
    // low byte 0, so every quant is 0 (and d = 1 / iscale = -0 or +0, as there).
    const float scale = std::isinf(iscale) ? 0.0f : iscale;
    const int32x4_t top = vdupq_n_s32(127);
    for (int i = 0; i < kQK_K; i += 16) {
      // fcvtns rounds to nearest, ties to even, like ref's nearest_int (|v| <= 127 here);
      // the min is ref's min(127, .), the narrows keep the (now in-range) values.
      int16x8_t q16[2];
      for (int k = 0; k < 2; ++k) {
        const int32x4_t q0 =
            vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + i + 8 * k), scale)), top);
        const int32x4_t q1 =
            vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + i + 8 * k + 4), scale)), top);
        q16[k] = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1));
      }
      const int8x16_t q8 = vcombine_s8(vmovn_s16(q16[0]), vmovn_s16(q16[1]));
      vst1q_s8(y[b].qs + i, q8);
      y[b].bsums[i / 16] = vaddlvq_s8(q8);  // |sum| <= 16 * 128
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace runnel::neon
