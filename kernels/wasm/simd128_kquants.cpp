// SIMD128 k-quant kernels: Q2_K .. Q6_K weights dotted with Q8_K activations, and the Q8_K
// activation quantizer. Per super-block the weight quants are unpacked into 16-byte
// vectors (signed where the format has an offset: Q3_K in [-4, 3], Q6_K in [-32, 31]),
// multiplied with the activation bytes into int16 lanes (i16x8.extmul; bounds per kernel),
// and widened to int32 by i32x4.dot_i16x8 against the integer sub-block scale. The int32
// lanes become float once per super-block and are scaled by d_w * d_a; min terms come
// from the Q8_K bsums, in integers. Q2_K then repeats ref's float steps (equal results);
// Q4_K and Q6_K repeat their x8 products' float steps, one super-block at a time (equal
// results, so streamed and resident layers agree); Q3_K and Q5_K accumulate in four
// float lanes (equal to float rounding).
// The quantizer follows ref's arithmetic exactly (bit-identical blocks).
#include <cmath>
#include <cstring>

#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"

namespace runnel::simd128 {

using ref::BlockQ2_K;
using ref::BlockQ3_K;
using ref::BlockQ4_K;
using ref::BlockQ5_K;
using ref::BlockQ6_K;
using ref::BlockQ8_K;

namespace {

// Q4_K / Q5_K: the 6-bit scales and mins of the 8 sub-blocks of 32, from 12 packed bytes.
inline void unpack_scales_mins(const uint8_t* packed, uint8_t* sc, uint8_t* m) {
  for (int j = 0; j < 8; ++j) ref::unpack_scale_min_k4(j, packed, &sc[j], &m[j]);
}

// sum_g bsums[g] * m[g / 2] over the 16 bsums (mins of 32-element sub-blocks, each
// covering two bsums). |bsum| <= 2048 and m <= 63, so the int32 pair sums are exact.
inline int32_t mins_dot_bsums(const uint8_t* m, const int16_t* bsums) {
  const v128_t m8 = wasm_v128_load64_zero(m);
  const v128_t zero = wasm_i32x4_splat(0);
  // zero-extend m[0..3] and m[4..7] to int16, each twice
  const v128_t m_lo =
      wasm_i8x16_shuffle(m8, zero, 0, 16, 0, 16, 1, 16, 1, 16, 2, 16, 2, 16, 3, 16, 3, 16);
  const v128_t m_hi =
      wasm_i8x16_shuffle(m8, zero, 4, 16, 4, 16, 5, 16, 5, 16, 6, 16, 6, 16, 7, 16, 7, 16);
  return hsum_i32(wasm_i32x4_add(wasm_i32x4_dot_i16x8(load(bsums), m_lo),
                                 wasm_i32x4_dot_i16x8(load(bsums + 8), m_hi)));
}

// acc += (float) sumi * d, lane by lane.
inline v128_t add_scaled(v128_t acc, v128_t sumi, float d) {
  return wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sumi), wasm_f32x4_splat(d)));
}

// 0x10 in every byte of h that has bit `bit` set, else 0.
inline v128_t bit_to_16(v128_t h, int bit) {
  const v128_t b = wasm_i8x16_splat(static_cast<int8_t>(1 << bit));
  return wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(h, b), b), wasm_i8x16_splat(0x10));
}

}  // namespace

// Q4_K: in each 64-element chunk c, byte l of its 32 bytes holds element 64c + l (low
// nibble, sub-block 2c) and 64c + 32 + l (high nibble, sub-block 2c + 1). q <= 15, so the
// int16 lanes of mul_32_to_i16 stay exact.
float vec_dot_q4_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const v128_t low4 = wasm_i8x16_splat(0x0F);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t sc[8];
    uint8_t m[8];
    unpack_scales_mins(x[b].scales, sc, m);
    v128_t sumi = wasm_i32x4_splat(0);
    for (int c = 0; c < kQK_K / 64; ++c) {
      const v128_t p0 = load(x[b].qs + 32 * c);
      const v128_t p1 = load(x[b].qs + 32 * c + 16);
      const int8_t* ya = y[b].qs + 64 * c;
      const v128_t lo = mul_32_to_i16(wasm_v128_and(p0, low4), wasm_v128_and(p1, low4), ya);
      const v128_t hi = mul_32_to_i16(wasm_u8x16_shr(p0, 4), wasm_u8x16_shr(p1, 4), ya + 32);
      sumi = wasm_i32x4_add(
          sumi, wasm_i32x4_add(widen_scaled(lo, sc[2 * c]), widen_scaled(hi, sc[2 * c + 1])));
    }
    // The x8 product's arithmetic (simd128_x8.cpp), so streamed and resident rows agree
    // bit for bit: (isum d - msum dmin) d_a per block, added in block order.
    const float isum = static_cast<float>(hsum_i32(sumi));
    const float msum = static_cast<float>(mins_dot_bsums(m, y[b].bsums));
    sum += (isum * f16(x[b].d) - msum * f16(x[b].dmin)) * y[b].d;
  }
  return sum;
}

// Q5_K: Q4_K plus a fifth bit per element, qh[l] bit 2c (element 64c + l) and 2c + 1
// (64c + 32 + l). q <= 31: still exact in mul_32_to_i16.
float vec_dot_q5_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const v128_t low4 = wasm_i8x16_splat(0x0F);
  v128_t acc = wasm_f32x4_splat(0.0f);
  float min_terms = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t sc[8];
    uint8_t m[8];
    unpack_scales_mins(x[b].scales, sc, m);
    const v128_t h0 = load(x[b].qh);
    const v128_t h1 = load(x[b].qh + 16);
    v128_t sumi = wasm_i32x4_splat(0);
    for (int c = 0; c < kQK_K / 64; ++c) {
      const v128_t p0 = load(x[b].qs + 32 * c);
      const v128_t p1 = load(x[b].qs + 32 * c + 16);
      const int8_t* ya = y[b].qs + 64 * c;
      const v128_t lo0 = wasm_v128_or(wasm_v128_and(p0, low4), bit_to_16(h0, 2 * c));
      const v128_t lo1 = wasm_v128_or(wasm_v128_and(p1, low4), bit_to_16(h1, 2 * c));
      const v128_t hi0 = wasm_v128_or(wasm_u8x16_shr(p0, 4), bit_to_16(h0, 2 * c + 1));
      const v128_t hi1 = wasm_v128_or(wasm_u8x16_shr(p1, 4), bit_to_16(h1, 2 * c + 1));
      sumi = wasm_i32x4_add(
          sumi, wasm_i32x4_add(widen_scaled(mul_32_to_i16(lo0, lo1, ya), sc[2 * c]),
                               widen_scaled(mul_32_to_i16(hi0, hi1, ya + 32), sc[2 * c + 1])));
    }
    acc = add_scaled(acc, sumi, f16(x[b].d) * y[b].d);
    min_terms += (f16(x[b].dmin) * y[b].d) * static_cast<float>(mins_dot_bsums(m, y[b].bsums));
  }
  return hsum_f32(acc) - min_terms;
}

// Q6_K: in each 128-element half, ql[l] holds the low nibbles of elements l (bits 0-3)
// and l + 64 (bits 4-7), ql[l + 32] those of l + 32 and l + 96, and qh[l] the top two bits
// of l, l + 32, l + 64, l + 96. Each 16-byte vector below is one sub-block of 16.
// q - 32 in [-32, 31]: two products per int16 lane stay below 8193.
float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const v128_t low4 = wasm_i8x16_splat(0x0F);
  const v128_t offset = wasm_i8x16_splat(32);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const int8_t* sc = x[b].scales;
    v128_t sumi = wasm_i32x4_splat(0);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const v128_t ql0 = load(ql);       // elements 0..15 (low) and 64..79 (high nibbles)
      const v128_t ql1 = load(ql + 16);  // 16..31 and 80..95
      const v128_t ql2 = load(ql + 32);  // 32..47 and 96..111
      const v128_t ql3 = load(ql + 48);  // 48..63 and 112..127
      const v128_t qh0 = load(x[b].qh + 32 * half);
      const v128_t qh1 = load(x[b].qh + 32 * half + 16);
      const v128_t q[8] = {
          wasm_v128_or(wasm_v128_and(ql0, low4),
                       wasm_i8x16_shl(wasm_v128_and(qh0, wasm_i8x16_splat(0x03)), 4)),
          wasm_v128_or(wasm_v128_and(ql1, low4),
                       wasm_i8x16_shl(wasm_v128_and(qh1, wasm_i8x16_splat(0x03)), 4)),
          wasm_v128_or(wasm_v128_and(ql2, low4),
                       wasm_i8x16_shl(wasm_v128_and(qh0, wasm_i8x16_splat(0x0C)), 2)),
          wasm_v128_or(wasm_v128_and(ql3, low4),
                       wasm_i8x16_shl(wasm_v128_and(qh1, wasm_i8x16_splat(0x0C)), 2)),
          wasm_v128_or(wasm_u8x16_shr(ql0, 4), wasm_v128_and(qh0, wasm_i8x16_splat(0x30))),
          wasm_v128_or(wasm_u8x16_shr(ql1, 4), wasm_v128_and(qh1, wasm_i8x16_splat(0x30))),
          wasm_v128_or(wasm_u8x16_shr(ql2, 4),
                       wasm_u8x16_shr(wasm_v128_and(qh0, wasm_i8x16_splat(-64)), 2)),
          wasm_v128_or(wasm_u8x16_shr(ql3, 4),
                       wasm_u8x16_shr(wasm_v128_and(qh1, wasm_i8x16_splat(-64)), 2)),
      };
      const int8_t* ya = y[b].qs + 128 * half;
      for (int j = 0; j < 8; ++j) {
        const v128_t prod = mul_i8_to_i16(wasm_i8x16_sub(q[j], offset), load(ya + 16 * j));
        sumi = wasm_i32x4_add(sumi, widen_scaled(prod, sc[8 * half + j]));
      }
    }
    // the x8 product's arithmetic, block by block (streamed and resident rows agree)
    sum += static_cast<float>(hsum_i32(sumi)) * (f16(x[b].d) * y[b].d);
  }
  return sum;
}

// Q3_K: in each 128-element half, byte l of its 32 quant bytes holds two bits of elements
// l, l + 32, l + 64, l + 96 (lowest first); hmask[l] bit g is the high bit of element
// 32g + l, and a missing high bit means -4. q in [-4, 3]: exact in two-product lanes.
float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const v128_t two_bits = wasm_i8x16_splat(0x03);
  const v128_t one = wasm_i8x16_splat(1);
  const v128_t zero = wasm_i8x16_splat(0);
  const v128_t minus_four = wasm_i8x16_splat(static_cast<int8_t>(0xFC));
  v128_t acc = wasm_f32x4_splat(0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int sc[16];
    for (int j = 0; j < 16; ++j) sc[j] = ref::q3_k_scale(x[b].scales, j);
    // Constant shifts only: the high bits and two-bit fields are shifted down as the
    // groups advance (bit 0 of hm = high bit of the current group).
    v128_t hm[2] = {load(x[b].hmask), load(x[b].hmask + 16)};
    v128_t sumi = wasm_i32x4_splat(0);
    for (int half = 0; half < 2; ++half) {
      v128_t packed[2] = {load(x[b].qs + 32 * half), load(x[b].qs + 32 * half + 16)};
      for (int g = 0; g < 4; ++g) {
        const int group = 4 * half + g;  // elements 32 group .. + 31: sub-blocks 2 group, + 1
        for (int k = 0; k < 2; ++k) {
          const v128_t low = wasm_v128_and(packed[k], two_bits);
          // low | 0xFC = low - 4 as int8, where the high bit is missing
          const v128_t missing = wasm_i8x16_eq(wasm_v128_and(hm[k], one), zero);
          const v128_t q = wasm_v128_or(low, wasm_v128_and(missing, minus_four));
          const v128_t prod = mul_i8_to_i16(q, load(y[b].qs + 32 * group + 16 * k));
          sumi = wasm_i32x4_add(sumi, widen_scaled(prod, sc[2 * group + k]));
          packed[k] = wasm_u8x16_shr(packed[k], 2);
          hm[k] = wasm_u8x16_shr(hm[k], 1);
        }
      }
    }
    acc = add_scaled(acc, sumi, f16(x[b].d) * y[b].d);
  }
  return hsum_f32(acc);
}

// Q2_K: Q3_K's two-bit layout without the high bit; sub-block j has a 4-bit scale (low
// nibble of scales[j]) and min (high nibble). q in [0, 3]. The integer sums are exact and
// the float steps are ref's, so the result equals ref's.
float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const v128_t two_bits = wasm_i8x16_splat(0x03);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    // Min term: sum_j (scales[j] >> 4) * bsums[j]; |bsum| <= 2048, min <= 15.
    const v128_t mins = wasm_u8x16_shr(load(x[b].scales), 4);
    const int32_t summs = hsum_i32(wasm_i32x4_add(
        wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(mins), load(y[b].bsums)),
        wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(mins), load(y[b].bsums + 8))));
    v128_t sumi = wasm_i32x4_splat(0);
    for (int half = 0; half < 2; ++half) {
      v128_t packed[2] = {load(x[b].qs + 32 * half), load(x[b].qs + 32 * half + 16)};
      for (int g = 0; g < 4; ++g) {
        for (int k = 0; k < 2; ++k) {
          const int j = 8 * half + 2 * g + k;  // sub-block of 16
          const v128_t q = wasm_v128_and(packed[k], two_bits);
          const v128_t prod = mul_i8_to_i16(q, load(y[b].qs + 16 * j));
          sumi = wasm_i32x4_add(sumi, widen_scaled(prod, x[b].scales[j] & 0x0F));
          packed[k] = wasm_u8x16_shr(packed[k], 2);  // the next group's two bits
        }
      }
    }
    const float dall = y[b].d * f16(x[b].d);
    const float dmin = y[b].d * f16(x[b].dmin);
    sum += dall * static_cast<float>(hsum_i32(sumi)) - dmin * static_cast<float>(summs);
  }
  return sum;
}

// ---------------------------------------------------------------- Q8_K quantizer

void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    v128_t vmax = wasm_f32x4_splat(0.0f);
    for (int i = 0; i < kQK_K; i += 4) vmax = wasm_f32x4_pmax(vmax, wasm_f32x4_abs(load(x + i)));
    const float amax = hmax_f32(vmax);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    // ref keeps the sign of the first element of largest magnitude.
    float max = 0.0f;
    const v128_t vamax = wasm_f32x4_splat(amax);
    for (int i = 0; i < kQK_K; i += 4) {
      const uint32_t hits = wasm_i32x4_bitmask(wasm_f32x4_eq(wasm_f32x4_abs(load(x + i)), vamax));
      if (hits != 0) {
        max = x[i + __builtin_ctz(hits)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    // |max| < 127 / FLT_MAX: iscale is inf and ref's nearest_int(+-inf or NaN) keeps the
    // low byte 0, so every quant is 0 (and d = 1 / iscale = -0 or +0, as there).
    const v128_t vscale = wasm_f32x4_splat(std::isinf(iscale) ? 0.0f : iscale);
    for (int i = 0; i < kQK_K; i += 16) {
      v128_t q32[4];
      for (int k = 0; k < 4; ++k) {
        // ties to even like ref's nearest_int; the narrows saturate at 127 like its min(127, .)
        const v128_t v = wasm_f32x4_mul(vscale, load(x + i + 4 * k));
        q32[k] = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(v));
      }
      const v128_t q8 = wasm_i8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(q32[0], q32[1]),
                                                wasm_i16x8_narrow_i32x4(q32[2], q32[3]));
      wasm_v128_store(y[b].qs + i, q8);
      y[b].bsums[i / 16] =
          static_cast<int16_t>(hsum_i32(widen(wasm_i16x8_extadd_pairwise_i8x16(q8))));
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace runnel::simd128
