// The k-quant dots (Q2_K .. Q6_K weights x Q8_K activations) as templates over the
// integer dot step, instantiated twice: neon_kquants.cpp with the baseline WideningDot
// (neon_common.h), neon_dotprod.cpp with vdotq_s32. Include only from those two files
// (internal linkage, see neon_common.h).
//
// Per super-block the weight quants are unpacked into 16-byte vectors, each within one
// sub-block, so a vector's four int32 lanes of products are weighted by that sub-block's
// integer scale (vmlaq_n_s32; all exact), and only the block's integer sum is converted
// to float and scaled by d_w * d_a. Min terms come from the Q8_K bsums, in integers.
// Float order differs from ref's eight scalar lanes, so dots agree to float rounding
// (Q2_K uses ref's float steps and equals it).
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm/neon_common.h"
#include "kernels/ref/blocks.h"

namespace runnel::neon {
namespace {

// lanes += scale * (products of the 16 bytes of w and a); a sub-block of 16.
template <typename Dot>
inline int32x4_t scaled_dot16(int32x4_t lanes, int8x16_t w, const int8_t* a, int scale) {
  return vmlaq_n_s32(lanes, Dot::dot(vdupq_n_s32(0), w, load_s8(a)), scale);
}

// The same for a sub-block of 32 in two vectors.
template <typename Dot>
inline int32x4_t scaled_dot32(int32x4_t lanes, int8x16_t w0, int8x16_t w1, const int8_t* a,
                              int scale) {
  const int32x4_t dot = Dot::dot(Dot::dot(vdupq_n_s32(0), w0, load_s8(a)), w1, load_s8(a + 16));
  return vmlaq_n_s32(lanes, dot, scale);
}

// sum_k bsums[k] * mins[k] over 16 sub-blocks of 16 (bsums: the Q8_K block's).
inline int32_t bsums_dot16(const int16_t* bsums, int16x8_t mins_lo, int16x8_t mins_hi) {
  const int16x8_t b0 = vld1q_s16(bsums);
  const int16x8_t b1 = vld1q_s16(bsums + 8);
  int32x4_t sum = vmull_s16(vget_low_s16(b0), vget_low_s16(mins_lo));
  sum = vmlal_high_s16(sum, b0, mins_lo);
  sum = vmlal_s16(sum, vget_low_s16(b1), vget_low_s16(mins_hi));
  sum = vmlal_high_s16(sum, b1, mins_hi);
  return vaddvq_s32(sum);
}

// sum_j (bsums[2j] + bsums[2j + 1]) * mins[j] over the 8 sub-blocks of 32 of Q4_K / Q5_K.
// A pair of bsums is at most 32 * 127 in magnitude: the int16 pairwise add is exact.
inline int32_t bsums_dot8(const int16_t* bsums, const uint8_t* mins) {
  const int16x8_t pairs = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8));
  const int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mins)));
  int32x4_t sum = vmull_s16(vget_low_s16(pairs), vget_low_s16(m));
  sum = vmlal_high_s16(sum, pairs, m);
  return vaddvq_s32(sum);
}

// Q4_K / Q5_K 6-bit scales and mins of the 8 sub-blocks, from the 12 packed bytes.
inline void unpack_scales_mins(const uint8_t* b, uint8_t* sc, uint8_t* m) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = b[j] & 63;
    m[j] = b[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>((b[j + 4] & 0x0F) | ((b[j - 4] >> 6) << 4));
    m[j] = static_cast<uint8_t>((b[j + 4] >> 4) | ((b[j] >> 6) << 4));
  }
}

// Q2_K: in each 128-element half, byte l of its 32 quant bytes holds elements l, l + 32,
// l + 64, l + 96 (two bits each, lowest first); sub-block j of 16 has a 4-bit scale (low
// nibble) and min (high nibble). The integer sums per block are exact and the float steps
// are ref's, so the result equals ref's.
template <typename Dot>
float dot_q2_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ2_K*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  const uint8x16_t two_bits = vdupq_n_u8(0x03);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const uint8x16_t packed_scales = vld1q_u8(x[b].scales);
    const uint8x16_t mins = vshrq_n_u8(packed_scales, 4);
    const int32_t summs =
        bsums_dot16(y[b].bsums, vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mins))),
                    vreinterpretq_s16_u16(vmovl_high_u8(mins)));
    uint8_t sc[16];
    vst1q_u8(sc, vandq_u8(packed_scales, vdupq_n_u8(0x0F)));
    int32x4_t even = vdupq_n_s32(0), odd = vdupq_n_s32(0);  // two chains of sub-blocks
    for (int half = 0; half < 2; ++half) {
      const uint8x16_t q0 = vld1q_u8(x[b].qs + 32 * half);       // bytes l < 16
      const uint8x16_t q1 = vld1q_u8(x[b].qs + 32 * half + 16);  // bytes l >= 16
      const int8_t* ya = y[b].qs + 128 * half;
      for (int g = 0; g < 4; ++g) {
        const int j = 8 * half + 2 * g;  // elements 32g + [0, 16) are sub-block j, the rest j + 1
        const int8x16_t w0 = as_s8(vandq_u8(shift_right(q0, 2 * g), two_bits));
        const int8x16_t w1 = as_s8(vandq_u8(shift_right(q1, 2 * g), two_bits));
        even = scaled_dot16<Dot>(even, w0, ya + 32 * g, sc[j]);
        odd = scaled_dot16<Dot>(odd, w1, ya + 32 * g + 16, sc[j + 1]);
      }
    }
    const float dall = y[b].d * f16(x[b].d);
    const float dmin = y[b].d * f16(x[b].dmin);
    const int32_t isum = vaddvq_s32(vaddq_s32(even, odd));
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

// Q3_K: Q2_K's two low bits plus a high bit (hmask[l] bit g for element 32g + l); the
// quant is (low | high << 2) - 4, with signed 6-bit scales per sub-block of 16.
template <typename Dot>
float dot_q3_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ3_K*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  const uint8x16_t two_bits = vdupq_n_u8(0x03);
  const uint8x16_t four = vdupq_n_u8(0x04);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const uint8_t* s = x[b].scales;
    int sc[16];
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? (s[j] & 0x0F) : (s[j - 8] >> 4);
      const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
      sc[j] = (low | (high << 4)) - 32;
    }
    const uint8x16_t hmask0 = vld1q_u8(x[b].hmask);
    const uint8x16_t hmask1 = vld1q_u8(x[b].hmask + 16);
    int32x4_t even = vdupq_n_s32(0), odd = vdupq_n_s32(0);
    for (int half = 0; half < 2; ++half) {
      const uint8x16_t q0 = vld1q_u8(x[b].qs + 32 * half);
      const uint8x16_t q1 = vld1q_u8(x[b].qs + 32 * half + 16);
      for (int g = 0; g < 4; ++g) {
        const int group = 4 * half + g;  // elements 32 group .. + 31: sub-blocks 2 group, + 1
        // low - 4 where the high bit is clear, else low: q in [-4, 3]
        const int8x16_t w0 = vsubq_s8(as_s8(vandq_u8(shift_right(q0, 2 * g), two_bits)),
                                      as_s8(vbicq_u8(four, test_bit(hmask0, group))));
        const int8x16_t w1 = vsubq_s8(as_s8(vandq_u8(shift_right(q1, 2 * g), two_bits)),
                                      as_s8(vbicq_u8(four, test_bit(hmask1, group))));
        even = scaled_dot16<Dot>(even, w0, y[b].qs + 32 * group, sc[2 * group]);
        odd = scaled_dot16<Dot>(odd, w1, y[b].qs + 32 * group + 16, sc[2 * group + 1]);
      }
    }
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(vaddq_s32(even, odd)), f16(x[b].d) * y[b].d);
  }
  return vaddvq_f32(acc);
}

// Q4_K: in each 64-element chunk c, byte l of its 32 quant bytes holds element l (low
// nibble, sub-block 2c) and l + 32 (high nibble, sub-block 2c + 1). Q5_K adds a fifth
// bit: qh[l] bit 2c (low nibbles) and 2c + 1 (high nibbles). `Q5` selects the latter.
template <typename Dot, bool Q5, typename Block>
float dot_scale_min_k4(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  const uint8x16_t fifth_bit = vdupq_n_u8(0x10);
  float32x4_t acc = vdupq_n_f32(0.0f);
  float min_terms = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t sc[8];
    uint8_t m[8];
    unpack_scales_mins(x[b].scales, sc, m);
    const int32_t summ = bsums_dot8(y[b].bsums, m);
    uint8x16_t qh0 = vdupq_n_u8(0), qh1 = vdupq_n_u8(0);
    if constexpr (Q5) {
      qh0 = vld1q_u8(x[b].qh);
      qh1 = vld1q_u8(x[b].qh + 16);
    }
    int32x4_t even = vdupq_n_s32(0), odd = vdupq_n_s32(0);
    for (int c = 0; c < kQK_K / 64; ++c) {
      const uint8x16_t p0 = vld1q_u8(x[b].qs + 32 * c);
      const uint8x16_t p1 = vld1q_u8(x[b].qs + 32 * c + 16);
      uint8x16_t lo0 = vandq_u8(p0, low4), lo1 = vandq_u8(p1, low4);
      uint8x16_t hi0 = vshrq_n_u8(p0, 4), hi1 = vshrq_n_u8(p1, 4);
      if constexpr (Q5) {
        lo0 = vorrq_u8(lo0, vandq_u8(test_bit(qh0, 2 * c), fifth_bit));
        lo1 = vorrq_u8(lo1, vandq_u8(test_bit(qh1, 2 * c), fifth_bit));
        hi0 = vorrq_u8(hi0, vandq_u8(test_bit(qh0, 2 * c + 1), fifth_bit));
        hi1 = vorrq_u8(hi1, vandq_u8(test_bit(qh1, 2 * c + 1), fifth_bit));
      }
      const int8_t* ya = y[b].qs + 64 * c;
      even = scaled_dot32<Dot>(even, as_s8(lo0), as_s8(lo1), ya, sc[2 * c]);
      odd = scaled_dot32<Dot>(odd, as_s8(hi0), as_s8(hi1), ya + 32, sc[2 * c + 1]);
    }
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(vaddq_s32(even, odd)), f16(x[b].d) * y[b].d);
    min_terms += (f16(x[b].dmin) * y[b].d) * static_cast<float>(summ);
  }
  return vaddvq_f32(acc) - min_terms;
}

template <typename Dot>
float dot_q4_k(int64_t n, const void* w, const void* a) {
  return dot_scale_min_k4<Dot, false, ref::BlockQ4_K>(n, w, a);
}

template <typename Dot>
float dot_q5_k(int64_t n, const void* w, const void* a) {
  return dot_scale_min_k4<Dot, true, ref::BlockQ5_K>(n, w, a);
}

// Q6_K: per 128-element half, ql bytes l and l + 32 hold the low nibbles of elements
// l, l + 64 and l + 32, l + 96; qh byte l their top two bits (at 0, 2, 4, 6 for l, l + 32,
// l + 64, l + 96). Quants are stored as q + 32; int8 scales per sub-block of 16.
template <typename Dot>
float dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ6_K*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  const uint8x16_t top2 = vdupq_n_u8(0x30);
  const int8x16_t offset = vdupq_n_s8(32);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const int8_t* sc = x[b].scales;
    // sub-blocks of bytes l < 16 (v = 0) and l >= 16 (v = 1): two independent chains
    int32x4_t lanes[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const uint8_t* qh = x[b].qh + 32 * half;
      for (int v = 0; v < 2; ++v) {                          // bytes l in [16v, 16v + 16)
        const uint8x16_t ql_a = vld1q_u8(ql + 16 * v);       // elements l, l + 64
        const uint8x16_t ql_b = vld1q_u8(ql + 32 + 16 * v);  // elements l + 32, l + 96
        const uint8x16_t h = vld1q_u8(qh + 16 * v);
        const uint8x16_t q[4] = {
            vorrq_u8(vandq_u8(ql_a, low4), vandq_u8(vshlq_n_u8(h, 4), top2)),
            vorrq_u8(vandq_u8(ql_b, low4), vandq_u8(vshlq_n_u8(h, 2), top2)),
            vorrq_u8(vshrq_n_u8(ql_a, 4), vandq_u8(h, top2)),
            vorrq_u8(vshrq_n_u8(ql_b, 4), vandq_u8(vshrq_n_u8(h, 2), top2)),
        };
        const int8_t* ya = y[b].qs + 128 * half + 16 * v;
        for (int k = 0; k < 4; ++k) {  // elements 32k + 16v + [0, 16): sub-block 8 half + 2k + v
          lanes[v] = scaled_dot16<Dot>(lanes[v], vsubq_s8(as_s8(q[k]), offset), ya + 32 * k,
                                       sc[8 * half + 2 * k + v]);
        }
      }
    }
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(vaddq_s32(lanes[0], lanes[1])), f16(x[b].d) * y[b].d);
  }
  return vaddvq_f32(acc);
}

}  // namespace
}  // namespace runnel::neon
