// NEON float ops of a forward pass, four floats at a time (rope_cos_sin stays ref's: double
// cos / sin, once per position). Contracts (shapes, aliasing) are in kernels/ref/ops.h;
// error bounds in tests/kernels/arm/neon_test.cpp and neon_ops_test.cpp:
//  - add, mul, scale, axpy, rope_apply and rms_norm do ref's float operations on the same
//    operands in the same order (the aarch64 build has -ffp-contract=off, so neither side
//    fuses a multiply into an add; rms_norm's sum of squares in ref's eight double lanes),
//    so they are bit-exact. Scalar tails repeat the same float steps.
//  - silu, swiglu, softmax, gelu and geglu use exp4 below instead of the C library's expf;
//    softmax accumulates in double like ref (two float64x2 lanes instead of one running
//    sum). softcap computes tanh from expm1_4 below instead of tanhf.
#include <arm_neon.h>

#include <cmath>
#include <limits>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_common.h"

namespace runnel::neon {
namespace {

// e^x = 2^k (1 + m): x = k ln2 + r with |r| <= ln2 / 2 (Cody-Waite: k ln2_hi is exact and
// so is x - k ln2_hi) and m = e^r - 1 from its Taylor polynomial through r^7 (truncation
// below 1e-8 relative). exp4 and expm1_4 share it.
struct ExpParts {
  float32x4_t k;  // an integer
  float32x4_t m;  // in [-0.3, 0.42]
};
inline ExpParts exp_parts(float32x4_t x) {
  const float32x4_t k = vrndnq_f32(vmulq_n_f32(x, 1.44269504f));
  float32x4_t r = vfmsq_f32(x, k, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, k, vdupq_n_f32(-2.12194440e-4f));
  // m = r + r^2 q(r): the large term is added last.
  float32x4_t q = vdupq_n_f32(1.0f / 5040);
  q = vfmaq_f32(vdupq_n_f32(1.0f / 720), q, r);
  q = vfmaq_f32(vdupq_n_f32(1.0f / 120), q, r);
  q = vfmaq_f32(vdupq_n_f32(1.0f / 24), q, r);
  q = vfmaq_f32(vdupq_n_f32(1.0f / 6), q, r);
  q = vfmaq_f32(vdupq_n_f32(0.5f), q, r);
  return {k, vfmaq_f32(r, vmulq_f32(r, r), q)};
}

// 2^k for integer k in [-126, 127] (a normal float).
inline float32x4_t pow2(int32x4_t k) {
  return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k, vdupq_n_s32(127)), 23));
}

// e^x in every lane, within ~1 ulp: 2^k applied as two factors so that results from the
// subnormal range up to FLT_MAX come out right. Clamping x to [-104, 89] makes -inf give
// 0 and large x give inf; fmin / fmax keep NaN a NaN.
inline float32x4_t exp4(float32x4_t x) {
  x = vmaxq_f32(vminq_f32(x, vdupq_n_f32(89.0f)), vdupq_n_f32(-104.0f));
  const ExpParts e = exp_parts(x);
  const float32x4_t p = vaddq_f32(vdupq_n_f32(1.0f), e.m);
  // k in [-150, 128]: each factor 2^(k/2) is a normal float.
  const int32x4_t ki = vcvtq_s32_f32(e.k);
  const int32x4_t k1 = vshrq_n_s32(ki, 1);
  return vmulq_f32(vmulq_f32(p, pow2(k1)), pow2(vsubq_s32(ki, k1)));
}

// e^x - 1 for x <= 0 (NaN passes through): 2^k m + (2^k - 1) with one rounding, so it
// keeps m's few-ulp relative accuracy where k = 0 (|x| < 0.35, no cancellation) and is
// within ~1 ulp of the result elsewhere. Below -30 the result is -1 in float anyway.
inline float32x4_t expm1_4(float32x4_t x) {
  const ExpParts e = exp_parts(vmaxq_f32(x, vdupq_n_f32(-30.0f)));
  const float32x4_t s = pow2(vcvtq_s32_f32(e.k));  // k in [-44, 0]
  return vfmaq_f32(vsubq_f32(s, vdupq_n_f32(1.0f)), s, e.m);
}

// x / (1 + e^-x); e^-x = inf gives -0 like ref's.
inline float32x4_t silu4(float32x4_t x) {
  return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(x))));
}

// ref's gelu: x / (1 + e^-u2) with -u2 = (-2 sqrt(2/pi) x) (1 + 0.044715 x x), the tanh
// form 0.5 x (1 + tanh(u)) rewritten. The exponent is ref's float operations in ref's
// order (bit-identical: the build has -ffp-contract=off, so no multiply is fused into the
// add; a difference would be amplified by up to |u2| ~ 88 in e^-u2); only e^ differs.
// x = -inf gives NaN like ref's (-inf / inf).
inline float32x4_t gelu4(float32x4_t x) {
  const float32x4_t cubic = vmulq_f32(vmulq_n_f32(x, 0.044715f), x);
  const float32x4_t neg_u2 =
      vmulq_f32(vmulq_n_f32(x, -1.5957691216057308f), vaddq_f32(vdupq_n_f32(1.0f), cubic));
  return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), exp4(neg_u2)));
}

// tanh(t) = sign(t) |y| / (2 + y), y = e^(-2|t|) - 1 in (-1, 0]: no cancellation for small
// |t| (expm1), exactly 1 where tanh saturates (y = -1), +-0 for +-0, NaN for NaN.
inline float32x4_t tanh4(float32x4_t t) {
  const float32x4_t y = expm1_4(vmulq_n_f32(vabsq_f32(t), -2.0f));
  const float32x4_t th = vdivq_f32(vabsq_f32(y), vaddq_f32(vdupq_n_f32(2.0f), y));
  const uint32x4_t sign = vdupq_n_u32(0x80000000u);
  return vbslq_f32(sign, t, th);  // t's sign bit, th's other bits
}

// Runs op on the last count (< 4) elements through a padded 4-lane buffer.
template <typename Op>
inline void tail4(const float* x, float* out, int64_t count, float pad, Op op) {
  float buf[4] = {pad, pad, pad, pad};
  for (int64_t i = 0; i < count; ++i) buf[i] = x[i];
  vst1q_f32(buf, op(vld1q_f32(buf)));
  for (int64_t i = 0; i < count; ++i) out[i] = buf[i];
}

// v64[0..1] += the squares of the four lanes of v as doubles (exact products).
inline void add_squares_f64(float32x4_t v, float64x2_t* lo, float64x2_t* hi) {
  const float64x2_t d_lo = vcvt_f64_f32(vget_low_f32(v));
  const float64x2_t d_hi = vcvt_high_f64_f32(v);
  *lo = vaddq_f64(*lo, vmulq_f64(d_lo, d_lo));
  *hi = vaddq_f64(*hi, vmulq_f64(d_hi, d_hi));
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

void gelu(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, gelu4(vld1q_f32(x + i)));
  tail4(x + i, out + i, n - i, 0.0f, gelu4);
}

void geglu(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    vst1q_f32(out + i, vmulq_f32(gelu4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
  }
  float g[4];
  tail4(gate + i, g, n - i, 0.0f, gelu4);
  for (int64_t j = 0; i + j < n; ++j) out[i + j] = g[j] * up[i + j];
}

void softcap(float* x, int64_t n, float cap) {
  const float inv_cap = 1.0f / cap;  // ref's cap * tanh(x * (1 / cap))
  auto op = [cap, inv_cap](float32x4_t v) {
    return vmulq_n_f32(tanh4(vmulq_n_f32(v, inv_cap)), cap);
  };
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, op(vld1q_f32(x + i)));
  tail4(x + i, x + i, n - i, 0.0f, op);
}

void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps) {
  // ref's eight double lanes: l = 0..7 are lanes[0..1] of acc[0..3], reduced in ref's
  // order; the squares of floats are exact in double, so the mean is bit-identical.
  float64x2_t acc[4] = {vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0)};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    add_squares_f64(vld1q_f32(x + i), &acc[0], &acc[1]);
    add_squares_f64(vld1q_f32(x + i + 4), &acc[2], &acc[3]);
  }
  double sum = 0.0;
  for (const float64x2_t& a : acc) {
    sum += vgetq_lane_f64(a, 0);
    sum += vgetq_lane_f64(a, 1);
  }
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float inv_rms = 1.0f / std::sqrt(mean + eps);
  int64_t j = 0;
  if (w != nullptr) {
    for (; j + 4 <= n; j += 4) {  // (x * inv_rms) * w, as ref
      vst1q_f32(out + j, vmulq_f32(vmulq_n_f32(vld1q_f32(x + j), inv_rms), vld1q_f32(w + j)));
    }
    for (; j < n; ++j) out[j] = x[j] * inv_rms * w[j];
  } else {
    for (; j + 4 <= n; j += 4) vst1q_f32(out + j, vmulq_n_f32(vld1q_f32(x + j), inv_rms));
    for (; j < n; ++j) out[j] = x[j] * inv_rms;
  }
}

void add(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
  for (; i < n; ++i) out[i] = a[i] * b[i];
}

void scale(float* x, int64_t n, float s) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), s));
  for (; i < n; ++i) x[i] *= s;
}

void axpy(const float* x, float* y, int64_t n, float s) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {  // y + (s x), the product rounded first like ref's
    vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vmulq_n_f32(vld1q_f32(x + i), s)));
  }
  for (; i < n; ++i) y[i] += s * x[i];
}

// Pair i is rotated by (c, s) = cos_sin[2i], cos_sin[2i + 1]:
//   a' = a c - b s,  b' = a s + b c  (ref's expressions, each product rounded).
void rope_apply(float* x, int64_t n_rot, const float* cos_sin, ref::RopeStyle style) {
  const int64_t n_pairs = n_rot / 2;
  const bool normal = style == ref::RopeStyle::kNormal;
  // kNormal: pair i is (x[2i], x[2i + 1]); kNeox: (x[i], x[i + n_pairs]).
  float* second = normal ? x + 1 : x + n_pairs;
  int64_t i = 0;  // pairs done
  for (; i + 4 <= n_pairs; i += 4) {
    const float32x4x2_t cs = vld2q_f32(cos_sin + 2 * i);  // [c0 c1 c2 c3], [s0 s1 s2 s3]
    float32x4x2_t ab;
    if (normal) {
      ab = vld2q_f32(x + 2 * i);  // [a0 a1 a2 a3], [b0 b1 b2 b3]
    } else {
      ab.val[0] = vld1q_f32(x + i);
      ab.val[1] = vld1q_f32(second + i);
    }
    const float32x4_t a = ab.val[0], b = ab.val[1];
    ab.val[0] = vsubq_f32(vmulq_f32(a, cs.val[0]), vmulq_f32(b, cs.val[1]));
    ab.val[1] = vaddq_f32(vmulq_f32(a, cs.val[1]), vmulq_f32(b, cs.val[0]));
    if (normal) {
      vst2q_f32(x + 2 * i, ab);
    } else {
      vst1q_f32(x + i, ab.val[0]);
      vst1q_f32(second + i, ab.val[1]);
    }
  }
  const int64_t step = normal ? 2 : 1;
  for (; i < n_pairs; ++i) {
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float a = x[i * step], b = second[i * step];
    x[i * step] = a * c - b * s;
    second[i * step] = a * s + b * c;
  }
}

}  // namespace runnel::neon
