// NEON dots of float rows: F32 x F32, F16 x F16 and BF16 x BF16 (attention scores and
// values, F16 / BF16 weight matrices). Products are fused into eight 4-lane float
// accumulators (32 independent chains), reduced at the end. ref sums in double, so the
// two agree to float rounding of the accumulation: |neon - ref| <= (n / 32 + 16) * 2^-24 *
// sum|w a| (chains of n / 32 + 3 steps, a 5-level reduction, up to 7 tail adds, ref's one
// rounding). f16 -> f32 (fcvtl) and bf16 -> f32 (a shift) are exact.
#include <arm_neon.h>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_common.h"
#include "kernels/fp16.h"

namespace runnel::neon {
namespace {

inline float scalar_f32(float v) {
  return v;
}

inline float scalar_bf16(uint16_t v) {
  return bf16_to_fp32(v);
}

// sum_i w[i] * a[i] with 8-element vector loads Load8 and scalar conversion Scalar.
template <typename T, void (*Load8)(const T*, float32x4_t*, float32x4_t*), float (*Scalar)(T)>
float dot_rows(int64_t n, const T* w, const T* a) {
  float32x4_t acc[8];
  for (auto& v : acc) v = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      float32x4_t w0, w1, a0, a1;
      Load8(w + i + 8 * k, &w0, &w1);
      Load8(a + i + 8 * k, &a0, &a1);
      acc[2 * k] = vfmaq_f32(acc[2 * k], w0, a0);
      acc[2 * k + 1] = vfmaq_f32(acc[2 * k + 1], w1, a1);
    }
  }
  for (; i + 8 <= n; i += 8) {
    float32x4_t w0, w1, a0, a1;
    Load8(w + i, &w0, &w1);
    Load8(a + i, &a0, &a1);
    acc[0] = vfmaq_f32(acc[0], w0, a0);
    acc[1] = vfmaq_f32(acc[1], w1, a1);
  }
  for (int k = 0; k < 4; ++k) acc[k] = vaddq_f32(acc[k], acc[k + 4]);
  acc[0] = vaddq_f32(acc[0], acc[2]);
  acc[1] = vaddq_f32(acc[1], acc[3]);
  float sum = vaddvq_f32(vaddq_f32(acc[0], acc[1]));
  for (; i < n; ++i) sum += Scalar(w[i]) * Scalar(a[i]);
  return sum;
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  return dot_rows<float, load8_f32, scalar_f32>(n, static_cast<const float*>(w),
                                                static_cast<const float*>(a));
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  return dot_rows<uint16_t, load8_f16, f16>(n, static_cast<const uint16_t*>(w),
                                            static_cast<const uint16_t*>(a));
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  return dot_rows<uint16_t, load8_bf16, scalar_bf16>(n, static_cast<const uint16_t*>(w),
                                                     static_cast<const uint16_t*>(a));
}

}  // namespace runnel::neon
