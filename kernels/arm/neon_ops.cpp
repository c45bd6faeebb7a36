// NEON float ops: the ones built on exp (silu, swiglu, softmax), four floats at a time
// with a polynomial e^x instead of the C library's scalar expf. The other ops stay ref's:
// g++ already turns their plain loops into NEON code (add, mul, scale, axpy, rms_norm's
// scaling) and they are bound by memory, not arithmetic. softmax accumulates in double
// like ref (two float64x2 lanes instead of one running sum). Contracts (shapes,
// aliasing) are in kernels/ref/ops.h; error bounds in tests/kernels/arm/neon_test.cpp.
#include <arm_neon.h>

#include <limits>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_common.h"

namespace runnel::neon {
namespace {

// e^x in every lane. x = k ln2 + r with |r| <= ln2 / 2 (Cody-Waite: k ln2_hi is exact and
// so is x - k ln2_hi), e^r from its Taylor polynomial through r^7 (truncation below 1e-8
// relative), and 2^k applied as two factors so that results from the subnormal range up
// to FLT_MAX come out right. Clamping x to [-104, 89] makes -inf give 0 and large x give
// inf; fmin / fmax keep NaN a NaN.
inline float32x4_t exp4(float32x4_t x) {
  x = vmaxq_f32(vminq_f32(x, vdupq_n_f32(89.0f)), vdupq_n_f32(-104.0f));
  const float32x4_t k = vrndnq_f32(vmulq_n_f32(x, 1.44269504f));
  float32x4_t r = vfmsq_f32(x, k, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, k, vdupq_n_f32(-2.12194440e-4f));
  // e^r = 1 + (r + r^2 q(r)): the large terms are added last.
  float32x4_t q = vdupq_n_f32(1.0f / 5040);
  q = vfmaq_f32(vdupq_n_f32(1.0f / 720), q, r);
  q = vfmaq_f32(vdupq_n_f32(1.0f / 120), q, r);
  q = vfmaq_f32(vdupq_n_f32(1.0f / 24), q, r);
  q = vfmaq_f32(vdupq_n_f32(1.0f / 6), q, r);
  q = vfmaq_f32(vdupq_n_f32(0.5f), q, r);
  const float32x4_t p = vaddq_f32(vdupq_n_f32(1.0f), vfmaq_f32(r, vmulq_f32(r, r), q));
  // k in [-150, 128]: each factor 2^(k/2) is a normal float.
  const int32x4_t ki = vcvtq_s32_f32(k);
  const int32x4_t k1 = vshrq_n_s32(ki, 1);
  const int32x4_t k2 = vsubq_s32(ki, k1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k1, bias), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k2, bias), 23));
  return vmulq_f32(vmulq_f32(p, s1), s2);
}

// x / (1 + e^-x); e^-x = inf gives -0 like ref's.
inline float32x4_t silu4(float32x4_t x) {
  return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(x))));
}

// Runs op on the last count (< 4) elements through a padded 4-lane buffer.
template <typename Op>
inline void tail4(const float* x, float* out, int64_t count, float pad, Op op) {
  float buf[4] = {pad, pad, pad, pad};
  for (int64_t i = 0; i < count; ++i) buf[i] = x[i];
  vst1q_f32(buf, op(vld1q_f32(buf)));
  for (int64_t i = 0; i < count; ++i) out[i] = buf[i];
}

}  // namespace

void silu(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, silu4(vld1q_f32(x + i)));
  tail4(x + i, out + i, n - i, 0.0f, silu4);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    vst1q_f32(out + i, vmulq_f32(silu4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
  }
  for (; i < n; ++i) {
    float g;
    tail4(gate + i, &g, 1, 0.0f, silu4);
    out[i] = g * up[i];
  }
}

void softmax(float* x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // ref's running max skips NaN (x > max is false); fmaxnm ignores a NaN operand alike.
  float32x4_t vmax = vdupq_n_f32(kNegInf);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vmax = vmaxnmq_f32(vmax, vld1q_f32(x + i));
  float max = vmaxnmvq_f32(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  if (max == kNegInf) {  // fully masked row
    for (int64_t j = 0; j < n; ++j) x[j] = 0.0f;
    return;
  }
  const float32x4_t vm = vdupq_n_f32(max);
  auto shifted_exp = [vm](float32x4_t v) { return exp4(vsubq_f32(v, vm)); };
  float64x2_t sum_lo = vdupq_n_f64(0.0);
  float64x2_t sum_hi = vdupq_n_f64(0.0);
  i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t e = shifted_exp(vld1q_f32(x + i));
    vst1q_f32(x + i, e);
    sum_lo = vaddq_f64(sum_lo, vcvt_f64_f32(vget_low_f32(e)));
    sum_hi = vaddq_f64(sum_hi, vcvt_high_f64_f32(e));
  }
  double sum = vaddvq_f64(vaddq_f64(sum_lo, sum_hi));
  tail4(x + i, x + i, n - i, kNegInf, shifted_exp);  // padding contributes exp(-inf) = 0
  for (; i < n; ++i) sum += x[i];
  const float32x4_t inv_sum = vdupq_n_f32(static_cast<float>(1.0 / sum));  // sum >= 1
  i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_f32(vld1q_f32(x + i), inv_sum));
  for (; i < n; ++i) x[i] *= vgetq_lane_f32(inv_sum, 0);
}

}  // namespace runnel::neon
