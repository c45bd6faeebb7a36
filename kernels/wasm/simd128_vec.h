// SIMD128 helpers with no C++ library dependency, shared by the simd128_*.cpp kernels
// (through simd128_common.h) and the relaxed-SIMD kernel module (relaxed/, built
// freestanding by clang++-16).
#pragma once

#include <stdint.h>
#include <wasm_simd128.h>

namespace runnel::simd128 {

inline v128_t load(const void* p) {
  return wasm_v128_load(p);
}

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

// Field `field` (an f16 scale: Q8_0 / Q8_1 d, Q8_1 s) of `count` activation blocks as
// floats into out[0, count rounded up to 8): one conversion per 8 blocks, where per-block
// scalar f16 decoding would cost as much as a row's integer work.
template <typename Block>
inline void widen_fields(const Block* y, int count, uint16_t Block::*field, float* out) {
  for (int b = 0; b < count; b += 8) {
    const auto f = [&](int k) -> uint16_t { return b + k < count ? y[b + k].*field : 0; };
    v128_t lo, hi;
    f16x8_to_f32(wasm_u16x8_make(f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7)), &lo, &hi);
    wasm_v128_store(out + b, lo);
    wasm_v128_store(out + b + 4, hi);
  }
}

// The 8 sums of 32 activation quants of a Q8_K block, from its 16 sums of 16, as int16
// lanes (|sum| <= 32 * 128 fits).
inline v128_t q8_k_sums32(const int16_t* bsums) {
  const v128_t lo = wasm_i32x4_extadd_pairwise_i16x8(load(bsums));
  const v128_t hi = wasm_i32x4_extadd_pairwise_i16x8(load(bsums + 8));
  return wasm_i16x8_narrow_i32x4(lo, hi);
}

// The float steps that end a block of 4 rows in every x8 product (SIMD128 and relaxed
// alike, so the two agree bit for bit): acc + isum (d_rows d_a), and for Q4_K
// acc + (isum d_rows - msum dmin_rows) d_a. d_rows / dmin_rows: the 4 rows' float scales.
inline v128_t add_scaled(v128_t acc, v128_t isum, const float* d_rows, v128_t d_a) {
  return wasm_f32x4_add(acc,
                        wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_mul(load(d_rows), d_a)));
}
inline v128_t add_scaled_min(v128_t acc, v128_t isum, v128_t msum, const float* d_rows,
                             const float* dmin_rows, v128_t d_a) {
  const v128_t term =
      wasm_f32x4_sub(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), load(d_rows)),
                     wasm_f32x4_mul(wasm_f32x4_convert_i32x4(msum), load(dmin_rows)));
  return wasm_f32x4_add(acc, wasm_f32x4_mul(term, d_a));
}

}  // namespace runnel::simd128
