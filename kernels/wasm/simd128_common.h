// Small SIMD128 helpers shared by the simd128_*.cpp kernels (internal to kernels/wasm).
// Integer products: int8 x int8 widened to int16 (i16x8.extmul) or int32
// (i32x4.dot_i16x8); each helper states when its sums are exact.
#pragma once

#include <wasm_simd128.h>

#include <cstdint>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/ref/quant_math.h"
#include "kernels/wasm/simd128_vec.h"

namespace runnel::simd128 {

// One f16 (raw bits) to float, without branches (block scales; equal to fp16_to_fp32).
inline float f16(uint16_t h) {
  return ref::fp16_to_fp32_branchless(h);
}

// Four int32 lanes of sum a[i] * b[i] over 16 int8 pairs; exact for every int8 input.
inline v128_t dot_i8(v128_t a, v128_t b) {
  const v128_t lo =
      wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(a), wasm_i16x8_extend_low_i8x16(b));
  const v128_t hi =
      wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(a), wasm_i16x8_extend_high_i8x16(b));
  return wasm_i32x4_add(lo, hi);
}

// Eight int16 lanes of a[k] b[k] + a[k + 8] b[k + 8]: exact while 2 |a| |b| <= 32767,
// and the caller may add a few of these before widening (it states its bound).
inline v128_t mul_i8_to_i16(v128_t a, v128_t b) {
  return wasm_i16x8_add(wasm_i16x8_extmul_low_i8x16(a, b), wasm_i16x8_extmul_high_i8x16(a, b));
}

// Eight int16 lanes of sum q[j] a[j] over 32 elements, q_lo * a[0..16) + q_hi * a[16..32)
// (four products per lane): exact while 4 * max|q| * 128 <= 32767, i.e. |q| <= 63.
inline v128_t mul_32_to_i16(v128_t q_lo, v128_t q_hi, const int8_t* a) {
  return wasm_i16x8_add(mul_i8_to_i16(q_lo, load(a)), mul_i8_to_i16(q_hi, load(a + 16)));
}

// int16 lanes -> four int32 lanes (adjacent pairs summed), times an int16 scale.
inline v128_t widen_scaled(v128_t sum16, int scale) {
  return wasm_i32x4_dot_i16x8(sum16, wasm_i16x8_splat(static_cast<int16_t>(scale)));
}

inline v128_t widen(v128_t sum16) {
  return wasm_i32x4_extadd_pairwise_i16x8(sum16);
}

inline int32_t hsum_i32(v128_t v) {
  const v128_t s = wasm_i32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  return wasm_i32x4_extract_lane(s, 0) + wasm_i32x4_extract_lane(s, 1);
}

inline float hsum_f32(v128_t v) {
  const v128_t s = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1);
}

inline float hmax_f32(v128_t v) {
  const v128_t m = wasm_f32x4_pmax(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  const float a = wasm_f32x4_extract_lane(m, 0);
  const float b = wasm_f32x4_extract_lane(m, 1);
  return a < b ? b : a;
}

// The 32 bits of `bits` as 32 bytes: byte k of *lo (k < 16) is 0xFF when bit k is set,
// byte k of *hi when bit 16 + k is, else 0 (the legacy Q5 element order).
inline void expand_bits_32(uint32_t bits, v128_t* lo, v128_t* hi) {
  const v128_t v = wasm_i32x4_splat(static_cast<int32_t>(bits));
  const v128_t select = wasm_u8x16_make(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
  const v128_t bytes_lo = wasm_i8x16_shuffle(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const v128_t bytes_hi = wasm_i8x16_shuffle(v, v, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  *lo = wasm_i8x16_eq(wasm_v128_and(bytes_lo, select), select);
  *hi = wasm_i8x16_eq(wasm_v128_and(bytes_hi, select), select);
}

// The 32 signed weights of a 4-bit lookup block's 16 code bytes (MXFP4, IQ4_NL, IQ4_XS;
// low nibbles: elements 0..15 in *lo, high: 16..31 in *hi) from the 16-byte value table.
inline void decode_lut4(v128_t table, const uint8_t* qs, v128_t* lo, v128_t* hi) {
  const v128_t packed = load(qs);
  *lo = wasm_i8x16_swizzle(table, wasm_v128_and(packed, wasm_i8x16_splat(0x0F)));
  *hi = wasm_i8x16_swizzle(table, wasm_u8x16_shr(packed, 4));
}

// Eight bf16 (the top halves of floats) -> two float vectors.
inline void bf16x8_to_f32(v128_t h, v128_t* lo, v128_t* hi) {
  const v128_t zero = wasm_i32x4_splat(0);
  *lo = wasm_i16x8_shuffle(zero, h, 0, 8, 1, 9, 2, 10, 3, 11);
  *hi = wasm_i16x8_shuffle(zero, h, 4, 12, 5, 13, 6, 14, 7, 15);
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace runnel::simd128
