// SIMD128 dots of float rows: F32 x F32, F16 x F16 and BF16 x BF16 (attention scores and
// values, F16 / BF16 weight matrices). Halves are widened exactly; each product is
// rounded to float as in ref, then summed in four 4-lane accumulators (16 independent
// chains; eight accumulators were slower under V8) and reduced at the end, where
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

// An f16 row against floats that hold f16 values (dot_f16_f32 / _multi, attention):
// finite halves widened exactly with one multiply, subnormals included; largest collects
// the magnitudes so the caller can redo a row that holds an inf or NaN exactly.
struct FiniteF16Widen {
  v128_t largest = wasm_i16x8_splat(0);  // magnitudes doubled (the sign shifted out)
  void widen8(const uint16_t* w, v128_t* lo, v128_t* hi) {
    const v128_t h = load(w);
    largest = wasm_u16x8_max(largest, wasm_i16x8_shl(h, 1));
    // A float's top 16 bits: the sign, three zero bits, the half's exponent and top 7
    // mantissa bits (an arithmetic shift keeps the sign in place); its low 16: the last 3
    // mantissa bits. That is the half's magnitude moved up 13 bits, whose exponent the
    // multiply by 2^112 rebiases (subnormal halves land on subnormal floats, still exact).
    const v128_t top = wasm_v128_and(wasm_i16x8_shr(h, 3), wasm_i16x8_splat(0x8FFF));
    const v128_t bottom = wasm_i16x8_shl(h, 13);
    const v128_t rebias = wasm_f32x4_splat(0x1p112f);
    *lo = wasm_f32x4_mul(wasm_i16x8_shuffle(bottom, top, 0, 8, 1, 9, 2, 10, 3, 11), rebias);
    *hi = wasm_f32x4_mul(wasm_i16x8_shuffle(bottom, top, 4, 12, 5, 13, 6, 14, 7, 15), rebias);
  }
  bool saw_inf_or_nan() const {
    return wasm_v128_any_true(
        wasm_u16x8_ge(largest, wasm_i16x8_splat(static_cast<int16_t>(0xF800))));
  }
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

namespace {

// dot_f16_f32 and dot_f16_f32_multi: one f16 row (a K slice or a V row of attention)
// against kA float rows holding f16 values. Per 8 halves the row is widened once, and
// each float row adds its two products into its own two chains (lanes 0-3 and 4-7); a
// tail of n % 8 halves is one more such step over the last 8 elements, the products of
// the lanes already counted masked to +0 (a row shorter than 8: zero-padded copies).
// Then each row's chains are added and the 4 lanes summed. A result thus depends on its own row
// only, so dot_f16_f32_multi's equal dot_f16_f32's bit for bit for any number of rows (grouped and
// per-head attention agree). kFinite: widened by FiniteF16Widen; returns false, leaving out
// unwritten, if the row holds an inf or NaN.
template <int kA, bool kFinite>
bool dot_f16_f32_rows(int64_t n, const uint16_t* w, const float* a, int64_t a_stride, float* out,
                      int64_t out_stride) {
  v128_t acc_lo[kA], acc_hi[kA];
  for (int j = 0; j < kA; ++j) acc_lo[j] = acc_hi[j] = wasm_f32x4_splat(0.0f);
  FiniteF16Widen finite;
  const auto step = [&](const uint16_t* h8, const float* a8, int64_t a8_stride) {
    v128_t lo, hi;
    if constexpr (kFinite) {
      finite.widen8(h8, &lo, &hi);
    } else {
      f16x8_to_f32(load(h8), &lo, &hi);
    }
    for (int j = 0; j < kA; ++j) {
      const float* aj = a8 + j * a8_stride;
      acc_lo[j] = wasm_f32x4_add(acc_lo[j], wasm_f32x4_mul(lo, wasm_v128_load(aj)));
      acc_hi[j] = wasm_f32x4_add(acc_hi[j], wasm_f32x4_mul(hi, wasm_v128_load(aj + 4)));
    }
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) step(w + i, a + i, a_stride);
  if (i < n && n >= 8) {
    // Lane k of the last 8 elements is new when k >= 8 - tail (the masked lanes' products,
    // inf or NaN included, become +0; cheaper than the zero-padded copies below).
    const v128_t first_new = wasm_i32x4_splat(static_cast<int32_t>(8 - (n - i)));
    const v128_t keep_lo = wasm_i32x4_ge(wasm_i32x4_make(0, 1, 2, 3), first_new);
    const v128_t keep_hi = wasm_i32x4_ge(wasm_i32x4_make(4, 5, 6, 7), first_new);
    v128_t lo, hi;
    if constexpr (kFinite) {
      finite.widen8(w + n - 8, &lo, &hi);
    } else {
      f16x8_to_f32(load(w + n - 8), &lo, &hi);
    }
    for (int j = 0; j < kA; ++j) {
      const float* aj = a + j * a_stride + n - 8;
      acc_lo[j] =
          wasm_f32x4_add(acc_lo[j], wasm_v128_and(wasm_f32x4_mul(lo, wasm_v128_load(aj)), keep_lo));
      acc_hi[j] = wasm_f32x4_add(
          acc_hi[j], wasm_v128_and(wasm_f32x4_mul(hi, wasm_v128_load(aj + 4)), keep_hi));
    }
  } else if (i < n) {
    const size_t tail = static_cast<size_t>(n - i);
    uint16_t w8[8] = {};
    float a8[kA][8] = {};
    std::memcpy(w8, w + i, tail * sizeof(uint16_t));
    for (int j = 0; j < kA; ++j) std::memcpy(a8[j], a + j * a_stride + i, tail * sizeof(float));
    step(w8, a8[0], 8);
  }
  if constexpr (kFinite) {
    if (finite.saw_inf_or_nan()) return false;
  }
  for (int j = 0; j < kA; ++j) out[j * out_stride] = hsum_f32(wasm_f32x4_add(acc_lo[j], acc_hi[j]));
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

float dot_f16_f32(int64_t n, const uint16_t* w, const float* a) {
  float out;
  dot_f16_f32_rows<1>(n, w, a, 0, &out, 0);
  return out;
}

void dot_f16_f32_multi(int64_t n, const uint16_t* w, const float* a, int64_t a_stride, int n_a,
                       float* out, int64_t out_stride) {
  // Up to four rows a pass (4 x 2 chains, the widened halves and a load stay in
  // registers); 3 is SmolLM2's group.
  int j = 0;
  for (; j + 4 <= n_a; j += 4)
    dot_f16_f32_rows<4>(n, w, a + j * a_stride, a_stride, out + j * out_stride, out_stride);
  const float* aj = a + j * a_stride;
  float* oj = out + j * out_stride;
  switch (n_a - j) {
    case 3:
      dot_f16_f32_rows<3>(n, w, aj, a_stride, oj, out_stride);
      break;
    case 2:
      dot_f16_f32_rows<2>(n, w, aj, a_stride, oj, out_stride);
      break;
    case 1:
      dot_f16_f32_rows<1>(n, w, aj, a_stride, oj, out_stride);
      break;
    default:
      break;
  }
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

namespace {

// 4 floats -> the halves fp32_to_fp16 gives, in the low 16 bits of each lane.
v128_t f32x4_to_f16(v128_t x) {
  const v128_t abs = wasm_v128_and(x, wasm_i32x4_splat(0x7FFFFFFF));
  const v128_t sign = wasm_v128_and(wasm_u32x4_shr(x, 16), wasm_i32x4_splat(0x8000));
  // Normal halves: exponent rebiased, the 13 dropped mantissa bits rounded to nearest
  // even by adding 0xFFF plus the kept last bit. A carry moves into the exponent, and
  // anything from 65520 up (inf too) lands on 0x7C00 or above: clamped to inf.
  const v128_t odd = wasm_v128_and(wasm_u32x4_shr(abs, 13), wasm_i32x4_splat(1));
  v128_t normal = wasm_i32x4_add(abs, wasm_i32x4_splat(0xFFF - 0x38000000));
  normal =
      wasm_u32x4_min(wasm_u32x4_shr(wasm_i32x4_add(normal, odd), 13), wasm_i32x4_splat(0x7C00));
  // Below 2^-14 the half is a multiple of 2^-24: adding 0.5f rounds to one (nearest even),
  // and the float's low bits are then that multiple.
  const v128_t subnormal =
      wasm_i32x4_sub(wasm_f32x4_add(abs, wasm_f32x4_splat(0.5f)), wasm_i32x4_splat(0x3F000000));
  v128_t h =
      wasm_v128_bitselect(subnormal, normal, wasm_i32x4_lt(abs, wasm_i32x4_splat(0x38800000)));
  h = wasm_v128_bitselect(wasm_i32x4_splat(0x7E00), h,
                          wasm_i32x4_gt(abs, wasm_i32x4_splat(0x7F800000)));  // NaN, quiet
  return wasm_v128_or(h, sign);
}

}  // namespace

void quantize_row_f16(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const v128_t lo = f32x4_to_f16(wasm_v128_load(src + i));
    const v128_t hi = f32x4_to_f16(wasm_v128_load(src + i + 4));
    wasm_v128_store(h + i, wasm_u16x8_narrow_i32x4(lo, hi));  // every lane fits 16 bits
  }
  for (; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
}

}  // namespace runnel::simd128
