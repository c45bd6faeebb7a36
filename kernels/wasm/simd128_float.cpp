// SIMD128 float kernels: F32 / F16 / BF16 dots (16 float lanes, FMA-free: wasm SIMD has
// no fused multiply-add without relaxed SIMD), f16 decoding, and the element-wise ops of
// a forward pass. exp is a degree-6 polynomial after range reduction (relative error
// below 3 ulp on [-87, 88]; see the bounds in tests/kernels/wasm/simd128_test.cpp).
#include <cmath>
#include <limits>

#include "kernels/fp16.h"
#include "kernels/ref/ops.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"

namespace runnel::simd128 {
namespace {

// 8 halfs -> 2 x 4 floats, exact for every f16 (normals, subnormals, inf, NaN):
// (h & 0x7fff) << 13 read as a float is the value times 2^-112 (also for subnormals),
// so one multiply by 2^112 rescales it; exponent 31 (inf / NaN) is patched to 255.
inline void f16x8_to_f32(v128_t h, v128_t* lo, v128_t* hi) {
  const v128_t h_lo = wasm_u32x4_extend_low_u16x8(h);
  const v128_t h_hi = wasm_u32x4_extend_high_u16x8(h);
  const v128_t scale = wasm_f32x4_splat(0x1p112f);
  auto one = [&](v128_t x) {
    const v128_t mag = wasm_i32x4_shl(wasm_v128_and(x, wasm_i32x4_splat(0x7fff)), 13);
    v128_t f = wasm_f32x4_mul(mag, scale);
    const v128_t is_special = wasm_i32x4_eq(wasm_v128_and(x, wasm_i32x4_splat(0x7c00)), wasm_i32x4_splat(0x7c00));
    const v128_t special = wasm_v128_or(mag, wasm_i32x4_splat(0x7f800000));
    f = wasm_v128_bitselect(special, f, is_special);
    const v128_t sign = wasm_i32x4_shl(wasm_v128_and(x, wasm_i32x4_splat(0x8000)), 16);
    return wasm_v128_or(f, sign);
  };
  *lo = one(h_lo);
  *hi = one(h_hi);
}

inline void bf16x8_to_f32(v128_t h, v128_t* lo, v128_t* hi) {
  *lo = wasm_i32x4_shl(wasm_u32x4_extend_low_u16x8(h), 16);
  *hi = wasm_i32x4_shl(wasm_u32x4_extend_high_u16x8(h), 16);
}

// e^x for x in f32x4: x = k ln2 + r, |r| <= ln2 / 2, e^r by its Taylor polynomial
// (degree 6, Horner), times 2^k built in the exponent bits. Inputs below -87.3 give 0,
// above 88.7 give inf, NaN stays NaN.
inline v128_t exp_f32x4(v128_t x) {
  const v128_t lo = wasm_f32x4_splat(-87.33654f);
  const v128_t hi = wasm_f32x4_splat(88.72283f);
  const v128_t too_small = wasm_f32x4_lt(x, lo);
  const v128_t too_big = wasm_f32x4_gt(x, hi);
  const v128_t xc = wasm_f32x4_max(wasm_f32x4_min(x, hi), lo);
  const v128_t k = wasm_f32x4_nearest(wasm_f32x4_mul(xc, wasm_f32x4_splat(1.44269504088896341f)));
  // r = x - k ln2 with ln2 split in two for precision
  v128_t r = wasm_f32x4_sub(xc, wasm_f32x4_mul(k, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(k, wasm_f32x4_splat(-2.12194440e-4f)));
  v128_t p = wasm_f32x4_splat(1.0f / 720);
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 120));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 24));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f / 6));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(0.5f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f));
  // 2^k: k in [-126, 128]; split in two steps so that k = 128 and k = -126 both work.
  const v128_t ki = wasm_i32x4_trunc_sat_f32x4(k);
  const v128_t k1 = wasm_i32x4_shr(ki, 1);
  const v128_t k2 = wasm_i32x4_sub(ki, k1);
  const v128_t bias = wasm_i32x4_splat(127);
  p = wasm_f32x4_mul(p, wasm_i32x4_shl(wasm_i32x4_add(k1, bias), 23));
  p = wasm_f32x4_mul(p, wasm_i32x4_shl(wasm_i32x4_add(k2, bias), 23));
  p = wasm_v128_andnot(p, too_small);
  p = wasm_v128_bitselect(wasm_f32x4_splat(std::numeric_limits<float>::infinity()), p, too_big);
  // NaN in, NaN out
  const v128_t is_nan = wasm_f32x4_ne(x, x);
  return wasm_v128_bitselect(x, p, is_nan);
}

template <typename Load8>
float dot16_lanes(int64_t n, Load8 load8) {
  // load8(i, &lo, &hi): elements i .. i + 7 of w * a as two f32x4 products.
  v128_t acc[4] = {wasm_f32x4_splat(0), wasm_f32x4_splat(0), wasm_f32x4_splat(0), wasm_f32x4_splat(0)};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    v128_t p0, p1, p2, p3;
    load8(i, &p0, &p1);
    load8(i + 8, &p2, &p3);
    acc[0] = wasm_f32x4_add(acc[0], p0);
    acc[1] = wasm_f32x4_add(acc[1], p1);
    acc[2] = wasm_f32x4_add(acc[2], p2);
    acc[3] = wasm_f32x4_add(acc[3], p3);
  }
  for (; i + 8 <= n; i += 8) {
    v128_t p0, p1;
    load8(i, &p0, &p1);
    acc[0] = wasm_f32x4_add(acc[0], p0);
    acc[1] = wasm_f32x4_add(acc[1], p1);
  }
  const v128_t s = wasm_f32x4_add(wasm_f32x4_add(acc[0], acc[1]), wasm_f32x4_add(acc[2], acc[3]));
  return hsum_f32(s);
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const float*>(w);
  const auto* y = static_cast<const float*>(a);
  const int64_t n8 = n / 8 * 8;
  float sum = dot16_lanes(n8, [&](int64_t i, v128_t* p0, v128_t* p1) {
    *p0 = wasm_f32x4_mul(wasm_v128_load(x + i), wasm_v128_load(y + i));
    *p1 = wasm_f32x4_mul(wasm_v128_load(x + i + 4), wasm_v128_load(y + i + 4));
  });
  for (int64_t i = n8; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  const int64_t n8 = n / 8 * 8;
  float sum = dot16_lanes(n8, [&](int64_t i, v128_t* p0, v128_t* p1) {
    v128_t xl, xh, yl, yh;
    f16x8_to_f32(wasm_v128_load(x + i), &xl, &xh);
    f16x8_to_f32(wasm_v128_load(y + i), &yl, &yh);
    *p0 = wasm_f32x4_mul(xl, yl);
    *p1 = wasm_f32x4_mul(xh, yh);
  });
  for (int64_t i = n8; i < n; ++i) sum += fp16_to_fp32(x[i]) * fp16_to_fp32(y[i]);
  return sum;
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  const int64_t n8 = n / 8 * 8;
  float sum = dot16_lanes(n8, [&](int64_t i, v128_t* p0, v128_t* p1) {
    v128_t xl, xh, yl, yh;
    bf16x8_to_f32(wasm_v128_load(x + i), &xl, &xh);
    bf16x8_to_f32(wasm_v128_load(y + i), &yl, &yh);
    *p0 = wasm_f32x4_mul(xl, yl);
    *p1 = wasm_f32x4_mul(xh, yh);
  });
  for (int64_t i = n8; i < n; ++i) sum += bf16_to_fp32(x[i]) * bf16_to_fp32(y[i]);
  return sum;
}

void dequantize_row_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v128_t lo, hi;
    f16x8_to_f32(wasm_v128_load(h + i), &lo, &hi);
    wasm_v128_store(dst + i, lo);
    wasm_v128_store(dst + i + 4, hi);
  }
  for (; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
}

void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps) {
  // Sum of squares in double like ref (two double lanes per f32x4 half).
  v128_t acc0 = wasm_f64x2_splat(0.0);
  v128_t acc1 = wasm_f64x2_splat(0.0);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const v128_t v = wasm_v128_load(x + i);
    const v128_t lo = wasm_f64x2_promote_low_f32x4(v);
    const v128_t hi = wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    acc0 = wasm_f64x2_add(acc0, wasm_f64x2_mul(lo, lo));
    acc1 = wasm_f64x2_add(acc1, wasm_f64x2_mul(hi, hi));
  }
  const v128_t acc = wasm_f64x2_add(acc0, acc1);
  double sum = wasm_f64x2_extract_lane(acc, 0) + wasm_f64x2_extract_lane(acc, 1);
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float inv_rms = 1.0f / std::sqrt(mean + eps);
  const v128_t s = wasm_f32x4_splat(inv_rms);
  i = 0;
  if (w != nullptr) {
    for (; i + 4 <= n; i += 4) {
      wasm_v128_store(out + i, wasm_f32x4_mul(wasm_f32x4_mul(wasm_v128_load(x + i), s), wasm_v128_load(w + i)));
    }
    for (; i < n; ++i) out[i] = x[i] * inv_rms * w[i];
  } else {
    for (; i + 4 <= n; i += 4) wasm_v128_store(out + i, wasm_f32x4_mul(wasm_v128_load(x + i), s));
    for (; i < n; ++i) out[i] = x[i] * inv_rms;
  }
}

void softmax(float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  if (max == -std::numeric_limits<float>::infinity()) {  // fully masked row
    for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  const v128_t vmax = wasm_f32x4_splat(max);
  v128_t acc0 = wasm_f64x2_splat(0.0);
  v128_t acc1 = wasm_f64x2_splat(0.0);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const v128_t e = exp_f32x4(wasm_f32x4_sub(wasm_v128_load(x + i), vmax));
    wasm_v128_store(x + i, e);
    acc0 = wasm_f64x2_add(acc0, wasm_f64x2_promote_low_f32x4(e));
    acc1 = wasm_f64x2_add(acc1, wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(e, e, 2, 3, 0, 1)));
  }
  const v128_t acc = wasm_f64x2_add(acc0, acc1);
  double sum = wasm_f64x2_extract_lane(acc, 0) + wasm_f64x2_extract_lane(acc, 1);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  scale(x, n, static_cast<float>(1.0 / sum));
}

void silu(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  const v128_t one = wasm_f32x4_splat(1.0f);
  for (; i + 4 <= n; i += 4) {
    const v128_t v = wasm_v128_load(x + i);
    wasm_v128_store(out + i, wasm_f32x4_div(v, wasm_f32x4_add(one, exp_f32x4(wasm_f32x4_neg(v)))));
  }
  for (; i < n; ++i) out[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  const v128_t one = wasm_f32x4_splat(1.0f);
  for (; i + 4 <= n; i += 4) {
    const v128_t g = wasm_v128_load(gate + i);
    const v128_t s = wasm_f32x4_div(g, wasm_f32x4_add(one, exp_f32x4(wasm_f32x4_neg(g))));
    wasm_v128_store(out + i, wasm_f32x4_mul(s, wasm_v128_load(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(out + i, wasm_f32x4_add(wasm_v128_load(a + i), wasm_v128_load(b + i)));
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(out + i, wasm_f32x4_mul(wasm_v128_load(a + i), wasm_v128_load(b + i)));
  for (; i < n; ++i) out[i] = a[i] * b[i];
}

void scale(float* x, int64_t n, float s) {
  const v128_t vs = wasm_f32x4_splat(s);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(x + i, wasm_f32x4_mul(wasm_v128_load(x + i), vs));
  for (; i < n; ++i) x[i] *= s;
}

void axpy(const float* x, float* y, int64_t n, float s) {
  const v128_t vs = wasm_f32x4_splat(s);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    wasm_v128_store(y + i, wasm_f32x4_add(wasm_v128_load(y + i), wasm_f32x4_mul(vs, wasm_v128_load(x + i))));
  }
  for (; i < n; ++i) y[i] += s * x[i];
}

}  // namespace runnel::simd128
