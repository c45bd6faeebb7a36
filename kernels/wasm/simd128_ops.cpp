// SIMD128 float ops of a forward pass, four floats at a time (scalar tails repeat the same
// float steps). add, mul, scale, axpy, rope_apply and rms_norm perform ref's float
// operations on the same operands in the same order (wasm has no fused multiply-add to
// change the rounding), so they are bit-exact. softmax accumulates in double like ref
// (two f64x2 lanes instead of one running sum); softmax, silu and swiglu use exp4 below
// instead of the C library's expf. Contracts (shapes, aliasing) are in kernels/ref/ops.h.
#include <cmath>
#include <limits>

#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"

namespace runnel::simd128 {
namespace {

inline v128_t splat(float v) {
  return wasm_f32x4_splat(v);
}

// e^x in every lane. x = k ln2 + r with |r| <= ln2 / 2 (Cody-Waite: k ln2_hi is exact and
// so is x - k ln2_hi), e^r from its Taylor polynomial through r^7 (truncation below 1e-8
// relative), and 2^k applied as two factors so that results from the subnormal range up
// to FLT_MAX come out right. Clamping x to [-104, 89] makes -inf give 0 and large x give
// inf; min / max keep NaN a NaN.
inline v128_t exp4(v128_t x) {
  x = wasm_f32x4_max(wasm_f32x4_min(x, splat(89.0f)), splat(-104.0f));
  const v128_t k = wasm_f32x4_nearest(wasm_f32x4_mul(x, splat(1.44269504f)));
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(k, splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(k, splat(-2.12194440e-4f)));
  // e^r = 1 + (r + r^2 q(r)): the large terms are added last, so the result is within
  // 1 ulp of e^x over the whole range (measured), against ~0.5 ulp for the C library.
  v128_t q = splat(1.0f / 5040);
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(1.0f / 720));
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(1.0f / 120));
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(1.0f / 24));
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(1.0f / 6));
  q = wasm_f32x4_add(wasm_f32x4_mul(q, r), splat(0.5f));
  const v128_t p =
      wasm_f32x4_add(splat(1.0f), wasm_f32x4_add(r, wasm_f32x4_mul(wasm_f32x4_mul(r, r), q)));
  // k in [-150, 128]: each factor 2^(k/2) is a normal float.
  const v128_t ki = wasm_i32x4_trunc_sat_f32x4(k);
  const v128_t k1 = wasm_i32x4_shr(ki, 1);
  const v128_t k2 = wasm_i32x4_sub(ki, k1);
  const v128_t bias = wasm_i32x4_splat(127);
  const v128_t s1 = wasm_i32x4_shl(wasm_i32x4_add(k1, bias), 23);
  const v128_t s2 = wasm_i32x4_shl(wasm_i32x4_add(k2, bias), 23);
  return wasm_f32x4_mul(wasm_f32x4_mul(p, s1), s2);
}

// x / (1 + e^-x); e^-x = inf gives -0 like ref's.
inline v128_t silu4(v128_t x) {
  return wasm_f32x4_div(x, wasm_f32x4_add(splat(1.0f), exp4(wasm_f32x4_neg(x))));
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

}  // namespace runnel::simd128
