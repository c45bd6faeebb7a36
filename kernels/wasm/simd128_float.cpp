// SIMD128 dots of float rows: F32 x F32, F16 x F16 and BF16 x BF16 (attention scores and
// values, F16 / BF16 weight matrices). Halves are widened exactly; each product is
// rounded to float as in ref, then summed in four 4-lane accumulators (16 independent
// chains; eight accumulators measured 1.6x slower under V8) and reduced at the end, where
// ref sums in double. |simd128 - ref| <= (n / 16 + 16) * 2^-24 * sum|w a|: chains of
// n / 16 + 1 steps, a 4-level reduction, up to 7 tail adds, ref's one rounding.
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"

namespace runnel::simd128 {
namespace {

constexpr int kAccumulators = 4;

// Each row kind gives the products of 8 element pairs as two float vectors.
struct F32Row {
  using Elem = float;
  void mul8(const float* w, const float* a, v128_t* lo, v128_t* hi) {
    *lo = wasm_f32x4_mul(wasm_v128_load(w), wasm_v128_load(a));
    *hi = wasm_f32x4_mul(wasm_v128_load(w + 4), wasm_v128_load(a + 4));
  }
  static float scalar(float v) { return v; }
};

struct BF16Row {
  using Elem = uint16_t;
  void mul8(const uint16_t* w, const uint16_t* a, v128_t* lo, v128_t* hi) {
    v128_t w_lo, w_hi, a_lo, a_hi;
    bf16x8_to_f32(load(w), &w_lo, &w_hi);
    bf16x8_to_f32(load(a), &a_lo, &a_hi);
    *lo = wasm_f32x4_mul(w_lo, a_lo);
    *hi = wasm_f32x4_mul(w_hi, a_hi);
  }
  static float scalar(uint16_t v) { return bf16_to_fp32(v); }
};

// Every f16 value, inf and NaN included (f16x8_to_f32).
struct F16Row {
  using Elem = uint16_t;
  void mul8(const uint16_t* w, const uint16_t* a, v128_t* lo, v128_t* hi) {
    v128_t w_lo, w_hi, a_lo, a_hi;
    f16x8_to_f32(load(w), &w_lo, &w_hi);
    f16x8_to_f32(load(a), &a_lo, &a_hi);
    *lo = wasm_f32x4_mul(w_lo, a_lo);
    *hi = wasm_f32x4_mul(w_hi, a_hi);
  }
  static float scalar(uint16_t v) { return f16(v); }
};

// Finite f16 only, about twice as fast: magnitudes are widened (bits moved to float
// positions, one multiply rebiases, subnormals included) and multiplied, then the xor of
// the two signs is put on the product (rounding is symmetric, so the bits equal ref's
// signed product). largest collects the magnitudes so the caller can redo a row that
// holds an inf or NaN with F16Row.
struct FiniteF16Row {
  using Elem = uint16_t;
  v128_t largest = wasm_i16x8_splat(0);
  static void widen_magnitudes(v128_t m, v128_t* lo, v128_t* hi) {
    const v128_t rebias = wasm_f32x4_splat(0x1p112f);
    *lo = wasm_f32x4_mul(wasm_i32x4_shl(wasm_u32x4_extend_low_u16x8(m), 13), rebias);
    *hi = wasm_f32x4_mul(wasm_i32x4_shl(wasm_u32x4_extend_high_u16x8(m), 13), rebias);
  }
  void mul8(const uint16_t* w, const uint16_t* a, v128_t* lo, v128_t* hi) {
    const v128_t hw = load(w);
    const v128_t ha = load(a);
    const v128_t magnitude = wasm_i16x8_splat(0x7FFF);
    const v128_t mw = wasm_v128_and(hw, magnitude);
    const v128_t ma = wasm_v128_and(ha, magnitude);
    largest = wasm_u16x8_max(largest, wasm_u16x8_max(mw, ma));
    const v128_t sign = wasm_v128_andnot(wasm_v128_xor(hw, ha), magnitude);
    const v128_t zero = wasm_i16x8_splat(0);
    v128_t w_lo, w_hi, a_lo, a_hi;
    widen_magnitudes(mw, &w_lo, &w_hi);
    widen_magnitudes(ma, &a_lo, &a_hi);
    *lo = wasm_v128_xor(wasm_f32x4_mul(w_lo, a_lo),
                        wasm_i16x8_shuffle(zero, sign, 0, 8, 1, 9, 2, 10, 3, 11));
    *hi = wasm_v128_xor(wasm_f32x4_mul(w_hi, a_hi),
                        wasm_i16x8_shuffle(zero, sign, 4, 12, 5, 13, 6, 14, 7, 15));
  }
  bool saw_inf_or_nan() const {
    return wasm_v128_any_true(wasm_u16x8_ge(largest, wasm_i16x8_splat(0x7C00)));
  }
  static float scalar(uint16_t v) { return f16(v); }
};

// F16 weights against floats that hold f16 values (dot_f16_f32): FiniteF16Row's products
// bit for bit, with the activation side's widening already done. Only the weights'
// magnitudes are widened, then their sign put back (the same product bits).
struct FiniteF16F32Row {
  using Elem = uint16_t;
  using AElem = float;
  v128_t largest = wasm_i16x8_splat(0);
  // 8 finite halves as floats (largest collects their magnitudes for saw_inf_or_nan);
  // dot_f16_f32_multi widens a row once for several activation rows with it.
  void widen8(const uint16_t* w, v128_t* lo, v128_t* hi) {
    const v128_t hw = load(w);
    const v128_t magnitude = wasm_i16x8_splat(0x7FFF);
    const v128_t mw = wasm_v128_and(hw, magnitude);
    largest = wasm_u16x8_max(largest, mw);
    const v128_t sign = wasm_v128_andnot(hw, magnitude);
    const v128_t zero = wasm_i16x8_splat(0);
    FiniteF16Row::widen_magnitudes(mw, lo, hi);
    *lo = wasm_v128_xor(*lo, wasm_i16x8_shuffle(zero, sign, 0, 8, 1, 9, 2, 10, 3, 11));
    *hi = wasm_v128_xor(*hi, wasm_i16x8_shuffle(zero, sign, 4, 12, 5, 13, 6, 14, 7, 15));
  }
  void mul8(const uint16_t* w, const float* a, v128_t* lo, v128_t* hi) {
    v128_t w_lo, w_hi;
    widen8(w, &w_lo, &w_hi);
    *lo = wasm_f32x4_mul(w_lo, wasm_v128_load(a));
    *hi = wasm_f32x4_mul(w_hi, wasm_v128_load(a + 4));
  }
  bool saw_inf_or_nan() const {
    return wasm_v128_any_true(wasm_u16x8_ge(largest, wasm_i16x8_splat(0x7C00)));
  }
  static float scalar_w(uint16_t v) { return f16(v); }
  static float scalar_a(float v) { return v; }
};

// Any f16 weights (inf, NaN) against floats: F16Row's products.
struct F16F32Row {
  using Elem = uint16_t;
  using AElem = float;
  void mul8(const uint16_t* w, const float* a, v128_t* lo, v128_t* hi) {
    v128_t w_lo, w_hi;
    f16x8_to_f32(load(w), &w_lo, &w_hi);
    *lo = wasm_f32x4_mul(w_lo, wasm_v128_load(a));
    *hi = wasm_f32x4_mul(w_hi, wasm_v128_load(a + 4));
  }
  static float scalar_w(uint16_t v) { return f16(v); }
  static float scalar_a(float v) { return v; }
};

// Rows whose weight and activation elements have the same type.
template <typename Row>
struct SameTypes : Row {
  using AElem = typename Row::Elem;
  static float scalar_w(typename Row::Elem v) { return Row::scalar(v); }
  static float scalar_a(typename Row::Elem v) { return Row::scalar(v); }
};

template <typename Row>
float dot_rows(int64_t n, const void* w_row, const void* a_row, Row& row) {
  using T = typename Row::Elem;
  using A = typename Row::AElem;
  const T* w = static_cast<const T*>(w_row);
  const A* a = static_cast<const A*>(a_row);
  v128_t acc[kAccumulators];
  for (auto& v : acc) v = wasm_f32x4_splat(0.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < kAccumulators; k += 2) {
      v128_t lo, hi;
      row.mul8(w + i + 4 * k, a + i + 4 * k, &lo, &hi);
      acc[k] = wasm_f32x4_add(acc[k], lo);
      acc[k + 1] = wasm_f32x4_add(acc[k + 1], hi);
    }
  }
  if (i + 8 <= n) {  // fixed indices: a variable one would put acc in memory
    v128_t lo, hi;
    row.mul8(w + i, a + i, &lo, &hi);
    acc[0] = wasm_f32x4_add(acc[0], lo);
    acc[1] = wasm_f32x4_add(acc[1], hi);
    i += 8;
  }
  for (int width = kAccumulators / 2; width > 0; width /= 2) {
    for (int k = 0; k < width; ++k) acc[k] = wasm_f32x4_add(acc[k], acc[k + width]);
  }
  float sum = hsum_f32(acc[0]);
  for (; i < n; ++i) sum += Row::scalar_w(w[i]) * Row::scalar_a(a[i]);
  return sum;
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  SameTypes<F32Row> row;
  return dot_rows(n, w, a, row);
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  SameTypes<FiniteF16Row> finite;
  const float sum = dot_rows(n, w, a, finite);
  if (!finite.saw_inf_or_nan()) return sum;
  SameTypes<F16Row> any;
  return dot_rows(n, w, a, any);
}

float dot_f16_f32(int64_t n, const uint16_t* w, const float* a) {
  FiniteF16F32Row finite;
  const float sum = dot_rows(n, w, a, finite);
  if (!finite.saw_inf_or_nan()) return sum;
  F16F32Row any;
  return dot_rows(n, w, a, any);
}

namespace {

// kA float rows (a_stride apart) against one f16 row, each summed exactly as dot_rows
// sums dot_f16_f32 (the same products into the same kAccumulators chains, reduced in the
// same order), so each result equals dot_f16_f32's bit for bit. kFinite: the row is
// widened by FiniteF16F32Row; returns false, leaving out unwritten, if it holds an inf
// or NaN.
template <int kA, bool kFinite>
bool dot_f16_f32_rows(int64_t n, const uint16_t* w, const float* a, int64_t a_stride, float* out,
                      int64_t out_stride) {
  v128_t acc[kA][kAccumulators];
  for (auto& row : acc)
    for (v128_t& v : row) v = wasm_f32x4_splat(0.0f);
  FiniteF16F32Row finite;
  const auto widen8 = [&](const uint16_t* h8, v128_t* lo, v128_t* hi) {
    if constexpr (kFinite) {
      finite.widen8(h8, lo, hi);
    } else {
      f16x8_to_f32(load(h8), lo, hi);
    }
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < kAccumulators; k += 2) {
      v128_t lo, hi;
      widen8(w + i + 4 * k, &lo, &hi);
      for (int j = 0; j < kA; ++j) {
        const float* aj = a + j * a_stride + i + 4 * k;
        acc[j][k] = wasm_f32x4_add(acc[j][k], wasm_f32x4_mul(lo, wasm_v128_load(aj)));
        acc[j][k + 1] = wasm_f32x4_add(acc[j][k + 1], wasm_f32x4_mul(hi, wasm_v128_load(aj + 4)));
      }
    }
  }
  if (i + 8 <= n) {
    v128_t lo, hi;
    widen8(w + i, &lo, &hi);
    for (int j = 0; j < kA; ++j) {
      const float* aj = a + j * a_stride + i;
      acc[j][0] = wasm_f32x4_add(acc[j][0], wasm_f32x4_mul(lo, wasm_v128_load(aj)));
      acc[j][1] = wasm_f32x4_add(acc[j][1], wasm_f32x4_mul(hi, wasm_v128_load(aj + 4)));
    }
    i += 8;
  }
  if constexpr (kFinite) {
    if (finite.saw_inf_or_nan()) return false;
  }
  for (int j = 0; j < kA; ++j) {
    for (int width = kAccumulators / 2; width > 0; width /= 2) {
      for (int k = 0; k < width; ++k) acc[j][k] = wasm_f32x4_add(acc[j][k], acc[j][k + width]);
    }
    float sum = hsum_f32(acc[j][0]);
    for (int64_t t = i; t < n; ++t) sum += f16(w[t]) * a[j * a_stride + t];
    out[j * out_stride] = sum;
  }
  return true;
}

template <int kA>
void dot_f16_f32_rows(int64_t n, const uint16_t* w, const float* a, int64_t a_stride, float* out,
                      int64_t out_stride) {
  if (!dot_f16_f32_rows<kA, true>(n, w, a, a_stride, out, out_stride)) {
    dot_f16_f32_rows<kA, false>(n, w, a, a_stride, out, out_stride);
  }
}

}  // namespace

void dot_f16_f32_multi(int64_t n, const uint16_t* w, const float* a, int64_t a_stride, int n_a,
                       float* out, int64_t out_stride) {
  // Two rows a pass: 2 x kAccumulators chains stay in registers.
  int j = 0;
  for (; j + 2 <= n_a; j += 2)
    dot_f16_f32_rows<2>(n, w, a + j * a_stride, a_stride, out + j * out_stride, out_stride);
  if (j < n_a)
    dot_f16_f32_rows<1>(n, w, a + j * a_stride, a_stride, out + j * out_stride, out_stride);
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  SameTypes<BF16Row> row;
  return dot_rows(n, w, a, row);
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
  for (; i < n; ++i) dst[i] = f16(h[i]);
}

}  // namespace runnel::simd128
