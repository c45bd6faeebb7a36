// SIMD128 dots of quantized weight rows with quantized activation rows. Each block's
// integer products are exact (int8 widened to int16, i32x4.dot_i16x8); the int32 lanes
// are converted to float (exact below 2^24) and accumulated in four float lanes across
// blocks, so results agree with ref to float rounding, not bit for bit.
// Legacy 32-element blocks: the 16 nibble bytes give elements 0..15 (low nibbles) and
// 16..31 (high nibbles). k-quants: the weight quants of a super-block are unpacked into
// int8 vectors and dotted per sub-block, scaled by the integer sub-block scales.
#include "kernels/fp16.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"

namespace runnel::simd128 {

using ref::BlockQ2_K;
using ref::BlockQ3_K;
using ref::BlockQ4_0;
using ref::BlockQ4_1;
using ref::BlockQ4_K;
using ref::BlockQ5_0;
using ref::BlockQ5_1;
using ref::BlockQ5_K;
using ref::BlockQ6_K;
using ref::BlockQ8_0;
using ref::BlockQ8_1;
using ref::BlockQ8_K;

namespace {

inline float f16(uint16_t h) { return fp16_to_fp32(h); }

// The 32 quants of a nibble block: low nibbles (elements 0..15), high (16..31).
inline void unpack_nibbles(const uint8_t* qs, v128_t* lo, v128_t* hi) {
  const v128_t bytes = load16(qs);
  *lo = wasm_v128_and(bytes, wasm_i8x16_splat(0x0F));
  *hi = wasm_u8x16_shr(bytes, 4);
}

// The 5th bits of a Q5 block as 0x10 bytes: elements 0..15 and 16..31.
inline void unpack_high_bits(const uint8_t* qh, v128_t* lo, v128_t* hi) {
  uint32_t bits;
  __builtin_memcpy(&bits, qh, 4);
  // Byte i of each half selects bit i (of the low or the high 16 bits).
  const v128_t sel = wasm_i8x16_make(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  const v128_t lo_bytes = wasm_i8x16_make(
      static_cast<int8_t>(bits), static_cast<int8_t>(bits), static_cast<int8_t>(bits), static_cast<int8_t>(bits),
      static_cast<int8_t>(bits), static_cast<int8_t>(bits), static_cast<int8_t>(bits), static_cast<int8_t>(bits),
      static_cast<int8_t>(bits >> 8), static_cast<int8_t>(bits >> 8), static_cast<int8_t>(bits >> 8),
      static_cast<int8_t>(bits >> 8), static_cast<int8_t>(bits >> 8), static_cast<int8_t>(bits >> 8),
      static_cast<int8_t>(bits >> 8), static_cast<int8_t>(bits >> 8));
  const v128_t hi_bytes = wasm_i8x16_make(
      static_cast<int8_t>(bits >> 16), static_cast<int8_t>(bits >> 16), static_cast<int8_t>(bits >> 16),
      static_cast<int8_t>(bits >> 16), static_cast<int8_t>(bits >> 16), static_cast<int8_t>(bits >> 16),
      static_cast<int8_t>(bits >> 16), static_cast<int8_t>(bits >> 16), static_cast<int8_t>(bits >> 24),
      static_cast<int8_t>(bits >> 24), static_cast<int8_t>(bits >> 24), static_cast<int8_t>(bits >> 24),
      static_cast<int8_t>(bits >> 24), static_cast<int8_t>(bits >> 24), static_cast<int8_t>(bits >> 24),
      static_cast<int8_t>(bits >> 24));
  const v128_t ten = wasm_i8x16_splat(0x10);
  *lo = wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(lo_bytes, sel), sel), ten);
  *hi = wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(hi_bytes, sel), sel), ten);
}

// One legacy block: sum q_w * q_a as float lanes (exact).
inline v128_t block_dot(v128_t w_lo, v128_t w_hi, const int8_t* a) {
  const v128_t s = wasm_i32x4_add(dot16_s8(w_lo, load16(a)), dot16_s8(w_hi, load16(a + 16)));
  return wasm_f32x4_convert_i32x4(s);
}

}  // namespace

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  v128_t acc = wasm_f32x4_splat(0.0f);
  const v128_t eight = wasm_i8x16_splat(8);
  for (int64_t b = 0; b < n / 32; ++b) {
    v128_t lo, hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    const v128_t s = block_dot(wasm_i8x16_sub(lo, eight), wasm_i8x16_sub(hi, eight), y[b].qs);
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(s, wasm_f32x4_splat(f16(x[b].d) * f16(y[b].d))));
  }
  return hsum_f32(acc);
}

float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  v128_t acc = wasm_f32x4_splat(0.0f);
  float min_terms = 0.0f;  // sum over blocks of m_w * s_a (s_a = d_a * sum q_a)
  for (int64_t b = 0; b < n / 32; ++b) {
    v128_t lo, hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    const v128_t s = block_dot(lo, hi, y[b].qs);
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(s, wasm_f32x4_splat(f16(x[b].d) * f16(y[b].d))));
    min_terms += f16(x[b].m) * f16(y[b].s);
  }
  return hsum_f32(acc) + min_terms;
}

float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  v128_t acc = wasm_f32x4_splat(0.0f);
  const v128_t sixteen = wasm_i8x16_splat(16);
  for (int64_t b = 0; b < n / 32; ++b) {
    v128_t lo, hi, hb_lo, hb_hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    unpack_high_bits(x[b].qh, &hb_lo, &hb_hi);
    const v128_t q_lo = wasm_i8x16_sub(wasm_v128_or(lo, hb_lo), sixteen);
    const v128_t q_hi = wasm_i8x16_sub(wasm_v128_or(hi, hb_hi), sixteen);
    const v128_t s = block_dot(q_lo, q_hi, y[b].qs);
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(s, wasm_f32x4_splat(f16(x[b].d) * f16(y[b].d))));
  }
  return hsum_f32(acc);
}

float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  v128_t acc = wasm_f32x4_splat(0.0f);
  float min_terms = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    v128_t lo, hi, hb_lo, hb_hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    unpack_high_bits(x[b].qh, &hb_lo, &hb_hi);
    const v128_t s = block_dot(wasm_v128_or(lo, hb_lo), wasm_v128_or(hi, hb_hi), y[b].qs);
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(s, wasm_f32x4_splat(f16(x[b].d) * f16(y[b].d))));
    min_terms += f16(x[b].m) * f16(y[b].s);
  }
  return hsum_f32(acc) + min_terms;
}

float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  v128_t acc = wasm_f32x4_splat(0.0f);
  for (int64_t b = 0; b < n / 32; ++b) {
    const v128_t s = block_dot(load16(x[b].qs), load16(x[b].qs + 16), y[b].qs);
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(s, wasm_f32x4_splat(f16(x[b].d) * f16(y[b].d))));
  }
  return hsum_f32(acc);
}

// ---------------------------------------------------------------- k-quants

namespace {

// sum over the 16 bsums of a Q8_K block times per-pair mins m[g / 2] (Q4_K / Q5_K).
inline int32_t bsum_min_term(const BlockQ8_K& y, const uint8_t* m) {
  int32_t s = 0;
  for (int g = 0; g < 16; ++g) s += y.bsums[g] * m[g / 2];
  return s;
}

// Sub-block of 32 weight quants (two vectors) with 32 activation quants.
inline v128_t dot32(v128_t q0, v128_t q1, const int8_t* a) {
  return wasm_i32x4_add(dot16_s8(q0, load16(a)), dot16_s8(q1, load16(a + 16)));
}

}  // namespace

float vec_dot_q4_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  v128_t acc = wasm_f32x4_splat(0.0f);
  float mins = 0.0f;
  const v128_t low4 = wasm_i8x16_splat(0x0F);
  for (int64_t b = 0; b < n / 256; ++b) {
    uint8_t sc[8];
    uint8_t m[8];
    for (int j = 0; j < 8; ++j) ref::unpack_scale_min_k4(j, x[b].scales, &sc[j], &m[j]);
    v128_t isum = wasm_i32x4_splat(0);
    for (int c = 0; c < 4; ++c) {  // 64 elements: sub-blocks 2c (low nibbles), 2c + 1 (high)
      const v128_t b0 = load16(x[b].qs + 32 * c);
      const v128_t b1 = load16(x[b].qs + 32 * c + 16);
      const int8_t* ya = y[b].qs + 64 * c;
      const v128_t lo = dot32(wasm_v128_and(b0, low4), wasm_v128_and(b1, low4), ya);
      const v128_t hi = dot32(wasm_u8x16_shr(b0, 4), wasm_u8x16_shr(b1, 4), ya + 32);
      isum = wasm_i32x4_add(isum, wasm_i32x4_mul(lo, wasm_i32x4_splat(sc[2 * c])));
      isum = wasm_i32x4_add(isum, wasm_i32x4_mul(hi, wasm_i32x4_splat(sc[2 * c + 1])));
    }
    const float d = f16(x[b].d) * y[b].d;
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_splat(d)));
    mins += f16(x[b].dmin) * y[b].d * static_cast<float>(bsum_min_term(y[b], m));
  }
  return hsum_f32(acc) - mins;
}

float vec_dot_q5_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  v128_t acc = wasm_f32x4_splat(0.0f);
  float mins = 0.0f;
  const v128_t low4 = wasm_i8x16_splat(0x0F);
  const v128_t ten = wasm_i8x16_splat(0x10);
  for (int64_t b = 0; b < n / 256; ++b) {
    uint8_t sc[8];
    uint8_t m[8];
    for (int j = 0; j < 8; ++j) ref::unpack_scale_min_k4(j, x[b].scales, &sc[j], &m[j]);
    const v128_t qh0 = load16(x[b].qh);
    const v128_t qh1 = load16(x[b].qh + 16);
    v128_t isum = wasm_i32x4_splat(0);
    for (int c = 0; c < 4; ++c) {
      const v128_t b0 = load16(x[b].qs + 32 * c);
      const v128_t b1 = load16(x[b].qs + 32 * c + 16);
      // qh[l] bit 2c is element 64c + l's fifth bit, bit 2c + 1 is 64c + 32 + l's.
      const v128_t bit_lo = wasm_i8x16_splat(static_cast<int8_t>(1 << (2 * c)));
      const v128_t bit_hi = wasm_i8x16_splat(static_cast<int8_t>(1 << (2 * c + 1)));
      auto fifth = [&](v128_t qh, v128_t bit) {
        return wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(qh, bit), bit), ten);
      };
      const int8_t* ya = y[b].qs + 64 * c;
      const v128_t lo = dot32(wasm_v128_or(wasm_v128_and(b0, low4), fifth(qh0, bit_lo)),
                              wasm_v128_or(wasm_v128_and(b1, low4), fifth(qh1, bit_lo)), ya);
      const v128_t hi = dot32(wasm_v128_or(wasm_u8x16_shr(b0, 4), fifth(qh0, bit_hi)),
                              wasm_v128_or(wasm_u8x16_shr(b1, 4), fifth(qh1, bit_hi)), ya + 32);
      isum = wasm_i32x4_add(isum, wasm_i32x4_mul(lo, wasm_i32x4_splat(sc[2 * c])));
      isum = wasm_i32x4_add(isum, wasm_i32x4_mul(hi, wasm_i32x4_splat(sc[2 * c + 1])));
    }
    const float d = f16(x[b].d) * y[b].d;
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_splat(d)));
    mins += f16(x[b].dmin) * y[b].d * static_cast<float>(bsum_min_term(y[b], m));
  }
  return hsum_f32(acc) - mins;
}

float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  v128_t acc = wasm_f32x4_splat(0.0f);
  const v128_t low4 = wasm_i8x16_splat(0x0F);
  const v128_t three = wasm_i8x16_splat(3);
  const v128_t bias = wasm_i8x16_splat(32);
  for (int64_t b = 0; b < n / 256; ++b) {
    v128_t isum = wasm_i32x4_splat(0);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const uint8_t* qh = x[b].qh + 32 * half;
      const int8_t* ya = y[b].qs + 128 * half;
      const int8_t* sc = x[b].scales + 8 * half;
      for (int k = 0; k < 2; ++k) {  // elements l = 16k .. 16k + 15 of each quarter
        const v128_t l0 = load16(ql + 16 * k);       // elements l (low), l + 64 (high)
        const v128_t l1 = load16(ql + 32 + 16 * k);  // elements l + 32 (low), l + 96 (high)
        const v128_t h = load16(qh + 16 * k);
        const v128_t q0 = wasm_i8x16_sub(
            wasm_v128_or(wasm_v128_and(l0, low4), wasm_i8x16_shl(wasm_v128_and(h, three), 4)), bias);
        const v128_t q1 = wasm_i8x16_sub(
            wasm_v128_or(wasm_v128_and(l1, low4), wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(h, 2), three), 4)), bias);
        const v128_t q2 = wasm_i8x16_sub(
            wasm_v128_or(wasm_u8x16_shr(l0, 4), wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(h, 4), three), 4)), bias);
        const v128_t q3 = wasm_i8x16_sub(
            wasm_v128_or(wasm_u8x16_shr(l1, 4), wasm_i8x16_shl(wasm_u8x16_shr(h, 6), 4)), bias);
        // Element e = 32 g + 16 k + i is in sub-block e / 16 = 2 g + k.
        isum = wasm_i32x4_add(isum, wasm_i32x4_mul(dot16_s8(q0, load16(ya + 16 * k)), wasm_i32x4_splat(sc[k])));
        isum = wasm_i32x4_add(isum, wasm_i32x4_mul(dot16_s8(q1, load16(ya + 32 + 16 * k)), wasm_i32x4_splat(sc[2 + k])));
        isum = wasm_i32x4_add(isum, wasm_i32x4_mul(dot16_s8(q2, load16(ya + 64 + 16 * k)), wasm_i32x4_splat(sc[4 + k])));
        isum = wasm_i32x4_add(isum, wasm_i32x4_mul(dot16_s8(q3, load16(ya + 96 + 16 * k)), wasm_i32x4_splat(sc[6 + k])));
      }
    }
    const float d = f16(x[b].d) * y[b].d;
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_splat(d)));
  }
  return hsum_f32(acc);
}

float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  const v128_t three = wasm_i8x16_splat(3);
  for (int64_t b = 0; b < n / 256; ++b) {
    int32_t summs = 0;
    for (int j = 0; j < 16; ++j) summs += y[b].bsums[j] * (x[b].scales[j] >> 4);
    v128_t isum = wasm_i32x4_splat(0);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* qs = x[b].qs + 32 * half;
      for (int k = 0; k < 2; ++k) {
        const v128_t bytes = load16(qs + 16 * k);
        for (int g = 0; g < 4; ++g) {
          // Element 128 half + 32 g + 16 k + i: sub-block 8 half + 2 g + k.
          const v128_t q = wasm_v128_and(wasm_u8x16_shr(bytes, 2 * g), three);
          const int j = 8 * half + 2 * g + k;
          const v128_t d = dot16_s8(q, load16(y[b].qs + 16 * j));
          isum = wasm_i32x4_add(isum, wasm_i32x4_mul(d, wasm_i32x4_splat(x[b].scales[j] & 0x0F)));
        }
      }
    }
    const float dall = y[b].d * fp16_to_fp32(x[b].d);
    const float dmin = y[b].d * fp16_to_fp32(x[b].dmin);
    sum += dall * static_cast<float>(hsum_i32(isum)) - dmin * static_cast<float>(summs);
  }
  return sum;
}

float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  v128_t acc = wasm_f32x4_splat(0.0f);
  const v128_t three = wasm_i8x16_splat(3);
  const v128_t four = wasm_i8x16_splat(4);
  for (int64_t b = 0; b < n / 256; ++b) {
    const v128_t hm0 = load16(x[b].hmask);
    const v128_t hm1 = load16(x[b].hmask + 16);
    v128_t isum = wasm_i32x4_splat(0);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* qs = x[b].qs + 32 * half;
      for (int k = 0; k < 2; ++k) {
        const v128_t bytes = load16(qs + 16 * k);
        const v128_t hm = k == 0 ? hm0 : hm1;  // hmask[l] for l = 16 k + i
        for (int g = 0; g < 4; ++g) {
          const int gg = 4 * half + g;  // element 32 gg + 16 k + i; high bit: hmask[l] bit gg
          const v128_t bit = wasm_i8x16_splat(static_cast<int8_t>(1 << gg));
          const v128_t missing = wasm_v128_andnot(four, wasm_i8x16_eq(wasm_v128_and(hm, bit), bit));
          const v128_t q = wasm_i8x16_sub(wasm_v128_and(wasm_u8x16_shr(bytes, 2 * g), three), missing);
          const int j = 2 * gg + k;
          const v128_t d = dot16_s8(q, load16(y[b].qs + 16 * j));
          isum = wasm_i32x4_add(isum, wasm_i32x4_mul(d, wasm_i32x4_splat(ref::q3_k_scale(x[b].scales, j))));
        }
      }
    }
    const float d = fp16_to_fp32(x[b].d) * y[b].d;
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_splat(d)));
  }
  return hsum_f32(acc);
}

}  // namespace runnel::simd128
