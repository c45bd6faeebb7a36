// Small SIMD128 helpers shared by the simd128_*.cpp kernels.
#pragma once

#include <wasm_simd128.h>

#include <cstdint>

namespace runnel::simd128 {

// sum of a[i] * b[i] over 16 int8 pairs, as four int32 partial sums (exact: each
// int16 product pair sums to < 2^15 * 2).
inline v128_t dot16_s8(v128_t a, v128_t b) {
  const v128_t lo = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(a), wasm_i16x8_extend_low_i8x16(b));
  const v128_t hi = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(a), wasm_i16x8_extend_high_i8x16(b));
  return wasm_i32x4_add(lo, hi);
}

inline v128_t load16(const void* p) { return wasm_v128_load(p); }

inline float hsum_f32(v128_t v) {
  // (v0 + v2) + (v1 + v3)
  const v128_t s = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1);
}

inline int32_t hsum_i32(v128_t v) {
  const v128_t s = wasm_i32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  return wasm_i32x4_extract_lane(s, 0) + wasm_i32x4_extract_lane(s, 1);
}

}  // namespace runnel::simd128
