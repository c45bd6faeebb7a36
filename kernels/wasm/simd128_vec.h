// SIMD128 helpers with no C++ library dependency, shared by the simd128_*.cpp kernels
// (through simd128_common.h) and the relaxed-SIMD kernel module (relaxed/, built
// freestanding by clang++-16).
#pragma once

#include <stdint.h>
#include <wasm_simd128.h>

namespace runnel::simd128 {

// [sum(s0), sum(s1), sum(s2), sum(s3)] of four int32x4 vectors.
inline v128_t transpose_sum(v128_t s0, v128_t s1, v128_t s2, v128_t s3) {
  const v128_t s01 = wasm_i32x4_add(wasm_i32x4_shuffle(s0, s1, 0, 4, 1, 5),
                                    wasm_i32x4_shuffle(s0, s1, 2, 6, 3, 7));
  const v128_t s23 = wasm_i32x4_add(wasm_i32x4_shuffle(s2, s3, 0, 4, 1, 5),
                                    wasm_i32x4_shuffle(s2, s3, 2, 6, 3, 7));
  return wasm_i32x4_add(wasm_i32x4_shuffle(s01, s23, 0, 1, 4, 5),
                        wasm_i32x4_shuffle(s01, s23, 2, 3, 6, 7));
}

// Eight halves (raw bits) -> two float vectors, exact for every input (subnormal halves
// land on float subnormals, which wasm keeps; inf / NaN patched by a select).
inline void f16x8_to_f32(v128_t h, v128_t* lo, v128_t* hi) {
  const v128_t magnitude_mask = wasm_i32x4_splat(0x7FFF);
  const v128_t special = wasm_i32x4_splat(0x7C00 << 13);
  const v128_t halves[2] = {wasm_u32x4_extend_low_u16x8(h), wasm_u32x4_extend_high_u16x8(h)};
  v128_t out[2];
  for (int k = 0; k < 2; ++k) {
    const v128_t magnitude = wasm_i32x4_shl(wasm_v128_and(halves[k], magnitude_mask), 13);
    const v128_t sign = wasm_i32x4_shl(wasm_v128_andnot(halves[k], magnitude_mask), 16);
    const v128_t finite = wasm_f32x4_mul(magnitude, wasm_f32x4_splat(0x1p112f));
    const v128_t inf_nan = wasm_v128_or(magnitude, wasm_i32x4_splat(0x7F800000));
    const v128_t is_special = wasm_u32x4_ge(magnitude, special);
    out[k] = wasm_v128_or(sign, wasm_v128_bitselect(inf_nan, finite, is_special));
  }
  *lo = out[0];
  *hi = out[1];
}

}  // namespace runnel::simd128
