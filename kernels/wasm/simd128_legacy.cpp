// SIMD128 kernels of the legacy 32-element blocks: Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0
// weights dotted with Q8_0 / Q8_1 activations, and the Q8_0 / Q8_1 activation quantizers.
// A block's 16 packed bytes give elements 0..15 (low nibbles) and 16..31 (high nibbles),
// so one 16-byte load of activations lines up with each half. Integer products go to
// int16 lanes (i16x8.extmul; each kernel states why its lane sums cannot overflow) and
// are widened to int32 once per block. Four blocks make one step: their integer sums are
// transposed into one vector and scaled by their four d_w * d_a, whose f16 fields are
// widened together (per-block scalar f16 decoding cost as much as the integer work), then
// added to the sum one block at a time, as the x8 products add them (the same bits).
// ref sums one float per block, so the two agree to float rounding. The quantizers
// repeat ref's float arithmetic exactly (bit-identical blocks).
#include <cmath>

#include "kernels/ref/blocks.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"

namespace runnel::simd128 {

using ref::BlockQ4_0;
using ref::BlockQ4_1;
using ref::BlockQ5_0;
using ref::BlockQ5_1;
using ref::BlockQ8_0;
using ref::BlockQ8_1;

namespace {

// Four products u[k] * v[k] of f16 fields (raw bits), widened together.
inline v128_t f16_products4(uint16_t u0, uint16_t u1, uint16_t u2, uint16_t u3, uint16_t v0,
                            uint16_t v1, uint16_t v2, uint16_t v3) {
  v128_t u, v;
  f16x8_to_f32(wasm_u16x8_make(u0, u1, u2, u3, v0, v1, v2, v3), &u, &v);
  return wasm_f32x4_mul(u, v);
}

// sum_b d_w d_a * block_sums(b) (+ m_b s_b when kMin: the Q4_1 / Q5_1 min terms) over nb
// blocks. block_sums(b) returns four int32 lanes that add up to block b's integer dot.
// The block terms are added one at a time, in block order, into one float: the x8
// products' arithmetic (simd128_x8.cpp), so a row read in the file's layout (a streamed
// layer) gives the resident, repacked row's result bit for bit.
template <bool kMin, typename W, typename A, typename BlockSums>
float dot_blocks(int64_t nb, const W* x, const A* y, BlockSums block_sums) {
  float sum = 0.0f;
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const v128_t sums =
        transpose_sum(block_sums(b), block_sums(b + 1), block_sums(b + 2), block_sums(b + 3));
    const v128_t d = f16_products4(x[b].d, x[b + 1].d, x[b + 2].d, x[b + 3].d, y[b].d, y[b + 1].d,
                                   y[b + 2].d, y[b + 3].d);
    alignas(16) float terms[4];
    wasm_v128_store(terms, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sums), d));
    if constexpr (kMin) {
      alignas(16) float mins[4];
      wasm_v128_store(mins, f16_products4(x[b].m, x[b + 1].m, x[b + 2].m, x[b + 3].m, y[b].s,
                                          y[b + 1].s, y[b + 2].s, y[b + 3].s));
      for (int k = 0; k < 4; ++k) sum = (sum + terms[k]) + mins[k];
    } else {
      for (int k = 0; k < 4; ++k) sum += terms[k];
    }
  }
  for (; b < nb; ++b) {
    sum += static_cast<float>(hsum_i32(block_sums(b))) * (f16(x[b].d) * f16(y[b].d));
    if constexpr (kMin) sum += f16(x[b].m) * f16(y[b].s);
  }
  return sum;
}

// The nibbles of a block: *lo = elements 0..15, *hi = elements 16..31, each in [0, 15].
inline void unpack_nibbles(const uint8_t* qs, v128_t* lo, v128_t* hi) {
  const v128_t packed = load(qs);
  *lo = wasm_v128_and(packed, wasm_i8x16_splat(0x0F));
  *hi = wasm_u8x16_shr(packed, 4);
}

}  // namespace

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return dot_blocks<false>(n / kQK, x, y, [x, y](int64_t b) {
    const v128_t eight = wasm_i8x16_splat(8);
    v128_t lo, hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    // q - 8 in [-8, 7]
    return widen(mul_32_to_i16(wasm_i8x16_sub(lo, eight), wasm_i8x16_sub(hi, eight), y[b].qs));
  });
}

// w = d q + m with q in [0, 15]; the m term is m * (d_a sum q_a) = m * s.
float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  return dot_blocks<true>(n / kQK, x, y, [x, y](int64_t b) {
    v128_t lo, hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    return widen(mul_32_to_i16(lo, hi, y[b].qs));
  });
}

// Q5_0: q - 16 with q = nibble | bit << 4, i.e. the nibble itself when the fifth bit is
// set and nibble - 16 (= nibble | 0xF0 as int8) when it is not; in [-16, 15].
float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return dot_blocks<false>(n / kQK, x, y, [x, y](int64_t b) {
    const v128_t high_nibble = wasm_i8x16_splat(static_cast<int8_t>(0xF0));
    v128_t lo, hi, bit_lo, bit_hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    expand_bits_32(load_u32(x[b].qh), &bit_lo, &bit_hi);
    lo = wasm_v128_or(lo, wasm_v128_andnot(high_nibble, bit_lo));
    hi = wasm_v128_or(hi, wasm_v128_andnot(high_nibble, bit_hi));
    return widen(mul_32_to_i16(lo, hi, y[b].qs));
  });
}

// Q5_1: q = nibble | bit << 4 in [0, 31], plus Q4_1's min term.
float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  return dot_blocks<true>(n / kQK, x, y, [x, y](int64_t b) {
    const v128_t fifth_bit = wasm_i8x16_splat(0x10);
    v128_t lo, hi, bit_lo, bit_hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    expand_bits_32(load_u32(x[b].qh), &bit_lo, &bit_hi);
    lo = wasm_v128_or(lo, wasm_v128_and(bit_lo, fifth_bit));
    hi = wasm_v128_or(hi, wasm_v128_and(bit_hi, fifth_bit));
    return widen(mul_32_to_i16(lo, hi, y[b].qs));
  });
}

// Q8_0 weights span all of int8 (-128 included), so products go straight to int32.
float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return dot_blocks<false>(n / kQK, x, y, [x, y](int64_t b) {
    return wasm_i32x4_add(dot_i8(load(x[b].qs), load(y[b].qs)),
                          dot_i8(load(x[b].qs + 16), load(y[b].qs + 16)));
  });
}

// ---------------------------------------------------------------- activation quantizers

namespace {

// std::round (half away from zero) of every lane, for |v| < 2^23: v - trunc(v) is exact
// there, so the comparison with 0.5 sees the true fraction.
inline v128_t round_half_away(v128_t v) {
  const v128_t t = wasm_f32x4_trunc(v);
  const v128_t round_up =
      wasm_f32x4_ge(wasm_f32x4_abs(wasm_f32x4_sub(v, t)), wasm_f32x4_splat(0.5f));
  const v128_t signed_one =
      wasm_v128_or(wasm_f32x4_splat(1.0f), wasm_v128_and(v, wasm_f32x4_splat(-0.0f)));
  return wasm_f32x4_add(t, wasm_v128_and(signed_one, round_up));
}

// ref's quantize_block_q8: d = amax / 127, q = round(x / d). Stores the 32 quants and
// returns d (unrounded); *sum gets the sum of the quants.
float quantize_block_q8(const float* x, int8_t* qs, int* sum) {
  v128_t v[8];
  v128_t vmax = wasm_f32x4_splat(0.0f);
  for (int k = 0; k < 8; ++k) {
    v[k] = wasm_v128_load(x + 4 * k);
    // pmax(m, |v|) = m < |v| ? |v| : m, ref's std::max(amax, |x|) (NaN skipped alike)
    vmax = wasm_f32x4_pmax(vmax, wasm_f32x4_abs(v[k]));
  }
  const float amax = hmax_f32(vmax);
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  // d below FLT_MAX^-1 (subnormal amax): id is inf and ref casts round(+-inf) to int8,
  // which clang's wasm code turns into 0 (an out-of-range conversion gives INT_MIN).
  const v128_t vid = wasm_f32x4_splat(std::isinf(id) ? 0.0f : id);
  v128_t q32[8];
  for (int k = 0; k < 8; ++k) {
    q32[k] = wasm_i32x4_trunc_sat_f32x4(round_half_away(wasm_f32x4_mul(v[k], vid)));
  }
  // |q| <= 127, so the saturating narrows are exact.
  const v128_t q16[4] = {
      wasm_i16x8_narrow_i32x4(q32[0], q32[1]), wasm_i16x8_narrow_i32x4(q32[2], q32[3]),
      wasm_i16x8_narrow_i32x4(q32[4], q32[5]), wasm_i16x8_narrow_i32x4(q32[6], q32[7])};
  wasm_v128_store(qs, wasm_i8x16_narrow_i16x8(q16[0], q16[1]));
  wasm_v128_store(qs + 16, wasm_i8x16_narrow_i16x8(q16[2], q16[3]));
  const v128_t s16 = wasm_i16x8_add(wasm_i16x8_add(q16[0], q16[1]), wasm_i16x8_add(q16[2], q16[3]));
  *sum = hsum_i32(widen(s16));
  return d;
}

}  // namespace

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sum;
    y[b].d = fp32_to_fp16(quantize_block_q8(src + b * kQK, y[b].qs, &sum));
  }
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sum;
    const float d = quantize_block_q8(src + b * kQK, y[b].qs, &sum);
    y[b].d = fp32_to_fp16(d);
    y[b].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

}  // namespace runnel::simd128
