// SIMD128 float ops of a forward pass, four floats at a time (scalar tails repeat the same
// float steps). add, mul, scale, axpy, rope_apply and rms_norm perform ref's float
// operations on the same operands in the same order (wasm has no fused multiply-add to
// change the rounding), so they are bit-exact. softmax accumulates in double like ref
// (two f64x2 lanes instead of one running sum); softmax, silu and swiglu use exp4 below
// instead of the C library's expf, and so do gelu and geglu; softcap computes tanh from
// expm1_4 below instead of tanhf. rope_cos_sin stays ref's (double cos / sin, once per
// position). Contracts (shapes, aliasing) are in kernels/ref/ops.h; bounds in
// tests/kernels/wasm/simd128_ops_test.cpp.
#include <cmath>
#include <limits>

#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"

namespace runnel::simd128 {
namespace {

inline v128_t splat(float v) {
  return wasm_f32x4_splat(v);
}

// e^x = 2^k (1 + m): x = k ln2 + r with |r| <= ln2 / 2 (Cody-Waite: k ln2_hi is exact and
// so is x - k ln2_hi) and m = e^r - 1 from its Taylor polynomial through r^7 (truncation
// below 1e-8 relative). exp4 and expm1_4 share it.
struct ExpParts {
  v128_t k;  // an integer
  v128_t m;  // in [-0.3, 0.42]
};
inline ExpParts exp_parts(v128_t x) {
  const v128_t k = wasm_f32x4_nearest(wasm_f32x4_mul(x, splat(1.44269504f)));
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(k, splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(k, splat(-2.12194440e-4f)));
  // m = r + r^2 q(r): the large term is added last.
  v128_t q = splat(1.0f / 5040);
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(1.0f / 720));
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(1.0f / 120));
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(1.0f / 24));
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(1.0f / 6));
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(0.5f));
  return {k, wasm_f32x4_add(r, wasm_f32x4_mul(wasm_f32x4_mul(r, r), q))};
}

// 2^k for integer k in [-126, 127] (a normal float).
inline v128_t pow2(v128_t k) {
  return wasm_i32x4_shl(wasm_i32x4_add(k, wasm_i32x4_splat(127)), 23);
}

// e^x in every lane: 1 + m is within 1 ulp of e^x over the whole range (measured), against
// ~0.5 ulp for the C library; 2^k is applied as two factors so that results from the
// subnormal range up to FLT_MAX come out right. Clamping x to [-104, 89] makes -inf give 0
// and large x give inf; min / max keep NaN a NaN.
inline v128_t exp4(v128_t x) {
  x = wasm_f32x4_max(wasm_f32x4_min(x, splat(89.0f)), splat(-104.0f));
  const ExpParts e = exp_parts(x);
  const v128_t p = wasm_f32x4_add(splat(1.0f), e.m);
  // k in [-150, 128]: each factor 2^(k/2) is a normal float.
  const v128_t ki = wasm_i32x4_trunc_sat_f32x4(e.k);
  const v128_t k1 = wasm_i32x4_shr(ki, 1);
  return wasm_f32x4_mul(wasm_f32x4_mul(p, pow2(k1)), pow2(wasm_i32x4_sub(ki, k1)));
}

// e^x - 1 for x <= 0 (NaN passes through): 2^k m + (2^k - 1), the product exact (a power
// of two), so it keeps m's few-ulp relative accuracy where k = 0 (|x| < 0.35, no
// cancellation) and is within ~1 ulp of the result elsewhere. Below -30 the result is -1
// in float anyway.
inline v128_t expm1_4(v128_t x) {
  const ExpParts e = exp_parts(wasm_f32x4_max(x, splat(-30.0f)));
  const v128_t s = pow2(wasm_i32x4_trunc_sat_f32x4(e.k));  // k in [-44, 0]
  return wasm_f32x4_add(wasm_f32x4_mul(s, e.m), wasm_f32x4_sub(s, splat(1.0f)));
}

// x / (1 + e^-x); e^-x = inf gives -0 like ref's.
inline v128_t silu4(v128_t x) {
  return wasm_f32x4_div(x, wasm_f32x4_add(splat(1.0f), exp4(wasm_f32x4_neg(x))));
}

// ref's gelu: x / (1 + e^-u2) with -u2 = (-2 sqrt(2/pi) x) (1 + 0.044715 x x), the tanh
// form 0.5 x (1 + tanh(u)) rewritten. The exponent is ref's float operations in ref's
// order (bit-identical; a difference would be amplified by up to |u2| ~ 88 in e^-u2); only
// e^ differs. x = -inf gives NaN like ref's (-inf / inf).
inline v128_t gelu4(v128_t x) {
  const v128_t cubic = wasm_f32x4_mul(wasm_f32x4_mul(splat(0.044715f), x), x);
  const v128_t neg_u2 = wasm_f32x4_mul(wasm_f32x4_mul(splat(-1.5957691216057308f), x),
                                       wasm_f32x4_add(splat(1.0f), cubic));
  return wasm_f32x4_div(x, wasm_f32x4_add(splat(1.0f), exp4(neg_u2)));
}

// tanh(t) = sign(t) |y| / (2 + y), y = e^(-2|t|) - 1 in (-1, 0]: no cancellation for small
// |t| (expm1), exactly 1 where tanh saturates (y = -1), +-0 for +-0, NaN for NaN.
inline v128_t tanh4(v128_t t) {
  const v128_t y = expm1_4(wasm_f32x4_mul(splat(-2.0f), wasm_f32x4_abs(t)));
  const v128_t th = wasm_f32x4_div(wasm_f32x4_abs(y), wasm_f32x4_add(splat(2.0f), y));
  return wasm_v128_bitselect(t, th, wasm_i32x4_splat(static_cast<int32_t>(0x80000000u)));
}

// Runs op on the last n % 4 elements through a padded 4-lane buffer (pad value: `pad`).
template <typename Op>
inline void tail4(const float* x, float* out, int64_t count, float pad, Op op) {
  alignas(16) float buf[4] = {pad, pad, pad, pad};
  for (int64_t i = 0; i < count; ++i) buf[i] = x[i];
  wasm_v128_store(buf, op(wasm_v128_load(buf)));
  for (int64_t i = 0; i < count; ++i) out[i] = buf[i];
}

// f64x2 lanes += the four lanes of v (as doubles).
inline void add_f64(v128_t v, v128_t* lo, v128_t* hi) {
  *lo = wasm_f64x2_add(*lo, wasm_f64x2_promote_low_f32x4(v));
  *hi = wasm_f64x2_add(*hi, wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v, v, 2, 3, 0, 1)));
}

inline double hsum_f64(v128_t lo, v128_t hi) {
  const v128_t s = wasm_f64x2_add(lo, hi);
  return wasm_f64x2_extract_lane(s, 0) + wasm_f64x2_extract_lane(s, 1);
}

}  // namespace

void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps) {
  // The sum of squares is ref's loop (eight double lanes, in the same order): clang
  // already turns it into f64x2 code, explicit f64x2 code measured no faster under V8,
  // and this way the mean, hence the whole output, is bit-identical to ref's.
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(x[i + l]) * x[i + l];
  }
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float inv_rms = 1.0f / std::sqrt(mean + eps);
  const v128_t vinv = splat(inv_rms);
  int64_t j = 0;
  if (w != nullptr) {
    for (; j + 8 <= n; j += 8) {
      const v128_t v0 = wasm_f32x4_mul(wasm_v128_load(x + j), vinv);
      const v128_t v1 = wasm_f32x4_mul(wasm_v128_load(x + j + 4), vinv);
      const v128_t o0 = wasm_f32x4_mul(v0, wasm_v128_load(w + j));
      const v128_t o1 = wasm_f32x4_mul(v1, wasm_v128_load(w + j + 4));
      wasm_v128_store(out + j, o0);
      wasm_v128_store(out + j + 4, o1);
    }
    for (; j < n; ++j) out[j] = x[j] * inv_rms * w[j];
  } else {
    for (; j + 4 <= n; j += 4)
      wasm_v128_store(out + j, wasm_f32x4_mul(wasm_v128_load(x + j), vinv));
    for (; j < n; ++j) out[j] = x[j] * inv_rms;
  }
}

void softmax(float* x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // pmax(m, v) = m < v ? v : m: ref's running max (NaN skipped alike).
  v128_t vmax = splat(kNegInf);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vmax = wasm_f32x4_pmax(vmax, wasm_v128_load(x + i));
  float max = hmax_f32(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  if (max == kNegInf) {  // fully masked row
    for (int64_t j = 0; j < n; ++j) x[j] = 0.0f;
    return;
  }
  const v128_t vm = splat(max);
  v128_t sum_lo = wasm_f64x2_splat(0.0);
  v128_t sum_hi = wasm_f64x2_splat(0.0);
  auto shifted_exp = [vm](v128_t v) { return exp4(wasm_f32x4_sub(v, vm)); };
  i = 0;
  for (; i + 4 <= n; i += 4) {
    const v128_t e = shifted_exp(wasm_v128_load(x + i));
    wasm_v128_store(x + i, e);
    add_f64(e, &sum_lo, &sum_hi);
  }
  double sum = hsum_f64(sum_lo, sum_hi);
  tail4(x + i, x + i, n - i, kNegInf, shifted_exp);  // padding contributes exp(-inf) = 0
  for (; i < n; ++i) sum += x[i];
  const float inv_sum = static_cast<float>(1.0 / sum);  // sum >= 1: the max term is exp(0)
  scale(x, n, inv_sum);
}

void silu(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(out + i, silu4(wasm_v128_load(x + i)));
  tail4(x + i, out + i, n - i, 0.0f, silu4);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    wasm_v128_store(out + i,
                    wasm_f32x4_mul(silu4(wasm_v128_load(gate + i)), wasm_v128_load(up + i)));
  }
  for (; i < n; ++i) {
    float g;
    tail4(gate + i, &g, 1, 0.0f, silu4);
    out[i] = g * up[i];
  }
}

void gelu(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(out + i, gelu4(wasm_v128_load(x + i)));
  tail4(x + i, out + i, n - i, 0.0f, gelu4);
}

void geglu(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    wasm_v128_store(out + i,
                    wasm_f32x4_mul(gelu4(wasm_v128_load(gate + i)), wasm_v128_load(up + i)));
  }
  float g[4];
  tail4(gate + i, g, n - i, 0.0f, gelu4);
  for (int64_t j = 0; i + j < n; ++j) out[i + j] = g[j] * up[i + j];
}

void softcap(float* x, int64_t n, float cap) {
  const v128_t vcap = splat(cap);
  const v128_t inv_cap = splat(1.0f / cap);  // ref's cap * tanh(x * (1 / cap))
  auto op = [vcap, inv_cap](v128_t v) {
    return wasm_f32x4_mul(vcap, tanh4(wasm_f32x4_mul(v, inv_cap)));
  };
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(x + i, op(wasm_v128_load(x + i)));
  tail4(x + i, x + i, n - i, 0.0f, op);
}

void add(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    wasm_v128_store(out + i, wasm_f32x4_add(wasm_v128_load(a + i), wasm_v128_load(b + i)));
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    wasm_v128_store(out + i, wasm_f32x4_mul(wasm_v128_load(a + i), wasm_v128_load(b + i)));
  }
  for (; i < n; ++i) out[i] = a[i] * b[i];
}

void scale(float* x, int64_t n, float s) {
  const v128_t vs = splat(s);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(x + i, wasm_f32x4_mul(wasm_v128_load(x + i), vs));
  for (; i < n; ++i) x[i] *= s;
}

void axpy(const float* x, float* y, int64_t n, float s) {
  const v128_t vs = splat(s);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const v128_t sx = wasm_f32x4_mul(vs, wasm_v128_load(x + i));
    wasm_v128_store(y + i, wasm_f32x4_add(wasm_v128_load(y + i), sx));
  }
  for (; i < n; ++i) y[i] += s * x[i];
}

// Pair i is rotated by (c, s) = cos_sin[2i], cos_sin[2i + 1]:
//   a' = a c - b s,  b' = a s + b c  (ref's expressions; + commutes exactly).
void rope_apply(float* x, int64_t n_rot, const float* cos_sin, ref::RopeStyle style) {
  const int64_t n_pairs = n_rot / 2;
  int64_t i = 0;  // pairs done
  if (style == ref::RopeStyle::kNormal) {
    // Two adjacent pairs per vector: x = [a0 b0 a1 b1], cos_sin = [c0 s0 c1 s1].
    const v128_t negate_even = wasm_f32x4_make(-0.0f, 0.0f, -0.0f, 0.0f);
    for (; i + 2 <= n_pairs; i += 2) {
      const v128_t v = wasm_v128_load(x + 2 * i);
      const v128_t cs = wasm_v128_load(cos_sin + 2 * i);
      const v128_t c = wasm_i32x4_shuffle(cs, cs, 0, 0, 2, 2);
      const v128_t s = wasm_i32x4_shuffle(cs, cs, 1, 1, 3, 3);
      const v128_t swapped = wasm_i32x4_shuffle(v, v, 1, 0, 3, 2);  // [b0 a0 b1 a1]
      // lane 0: a c + -(b s); lane 1: b c + a s
      const v128_t turn = wasm_v128_xor(wasm_f32x4_mul(swapped, s), negate_even);
      wasm_v128_store(x + 2 * i, wasm_f32x4_add(wasm_f32x4_mul(v, c), turn));
    }
    for (; i < n_pairs; ++i) {
      const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
      const float a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = a * c - b * s;
      x[2 * i + 1] = a * s + b * c;
    }
    return;
  }
  // kNeox: pair i is (x[i], x[i + n_pairs]); four pairs per step.
  float* second = x + n_pairs;
  for (; i + 4 <= n_pairs; i += 4) {
    const v128_t cs0 = wasm_v128_load(cos_sin + 2 * i);
    const v128_t cs1 = wasm_v128_load(cos_sin + 2 * i + 4);
    const v128_t c = wasm_i32x4_shuffle(cs0, cs1, 0, 2, 4, 6);
    const v128_t s = wasm_i32x4_shuffle(cs0, cs1, 1, 3, 5, 7);
    const v128_t a = wasm_v128_load(x + i);
    const v128_t b = wasm_v128_load(second + i);
    wasm_v128_store(x + i, wasm_f32x4_sub(wasm_f32x4_mul(a, c), wasm_f32x4_mul(b, s)));
    wasm_v128_store(second + i, wasm_f32x4_add(wasm_f32x4_mul(a, s), wasm_f32x4_mul(b, c)));
  }
  for (; i < n_pairs; ++i) {
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float a = x[i], b = second[i];
    x[i] = a * c - b * s;
    second[i] = a * s + b * c;
  }
}

void touch_rows(const void* first, int n, size_t stride, size_t bytes) {
  constexpr uintptr_t kLine = 64;
  uint8_t x = 0;
  for (int r = 0; r < n; ++r) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(first) + static_cast<size_t>(r) * stride;
    for (uintptr_t a = begin & ~(kLine - 1); a < begin + bytes; a += kLine) {
      x ^= *reinterpret_cast<const uint8_t*>(a < begin ? begin : a);
    }
  }
  volatile uint8_t sink = x;  // keeps the loads
  (void)sink;
}

}  // namespace runnel::simd128
