// The legacy-block dots (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights x Q8_0 / Q8_1 activations)
// as templates over the integer dot step, instantiated twice: neon_legacy.cpp with the
// baseline WideningDot (neon_common.h), neon_dotprod.cpp with vdotq_s32. Include only
// from those two files (internal linkage, see neon_common.h).
//
// One block is two 16-byte vectors (elements 0..15 and 16..31); its integer products land
// in four int32 lanes (exact), which are converted to float (exact: |lane| < 2^17) and
// accumulated across blocks with one FMA by d_w * d_a. The float summation order differs
// from ref (4 lanes instead of one running sum), so results agree with ref to float
// rounding, not bit for bit.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm/neon_common.h"
#include "kernels/ref/blocks.h"

namespace runnel::neon {
namespace {

// sum over the block of w[i] * a[i]: w in two int8 vectors, a the block's 32 quants.
template <typename Dot>
inline int32x4_t block_dot(int8x16_t w_lo, int8x16_t w_hi, const int8_t* a) {
  const int32x4_t lanes = Dot::dot(vdupq_n_s32(0), w_lo, load_s8(a));
  return Dot::dot(lanes, w_hi, load_s8(a + 16));
}

template <typename Dot>
float dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ4_0*>(w);
  const auto* y = static_cast<const ref::BlockQ8_0*>(a);
  const int8x16_t eight = vdupq_n_s8(8);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK; ++b) {
    uint8x16_t lo, hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    // q - 8 in [-8, 7]
    const int32x4_t lanes =
        block_dot<Dot>(vsubq_s8(as_s8(lo), eight), vsubq_s8(as_s8(hi), eight), y[b].qs);
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(lanes), f16(x[b].d) * f16(y[b].d));
  }
  return vaddvq_f32(acc);
}

template <typename Dot>
float dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ4_1*>(w);
  const auto* y = static_cast<const ref::BlockQ8_1*>(a);
  float32x4_t acc = vdupq_n_f32(0.0f);
  float min_terms = 0.0f;  // sum over blocks of m_w * s_a (s_a = d_a * sum q_a)
  for (int64_t b = 0; b < n / kQK; ++b) {
    uint8x16_t lo, hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    const int32x4_t lanes = block_dot<Dot>(as_s8(lo), as_s8(hi), y[b].qs);
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(lanes), f16(x[b].d) * f16(y[b].d));
    min_terms += f16(x[b].m) * f16(y[b].s);
  }
  return vaddvq_f32(acc) + min_terms;
}

template <typename Dot>
float dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ5_0*>(w);
  const auto* y = static_cast<const ref::BlockQ8_0*>(a);
  const uint8x16_t high_nibble = vdupq_n_u8(0xF0);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK; ++b) {
    uint8x16_t lo, hi, bit_lo, bit_hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    expand_bits_32(x[b].qh, &bit_lo, &bit_hi);
    // q - 16 = nibble - 16 + 16 * bit: as a byte, nibble | 0xF0 where the bit is clear.
    const int8x16_t q_lo = as_s8(vorrq_u8(lo, vbicq_u8(high_nibble, bit_lo)));
    const int8x16_t q_hi = as_s8(vorrq_u8(hi, vbicq_u8(high_nibble, bit_hi)));
    const int32x4_t lanes = block_dot<Dot>(q_lo, q_hi, y[b].qs);
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(lanes), f16(x[b].d) * f16(y[b].d));
  }
  return vaddvq_f32(acc);
}

template <typename Dot>
float dot_q5_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ5_1*>(w);
  const auto* y = static_cast<const ref::BlockQ8_1*>(a);
  const uint8x16_t fifth_bit = vdupq_n_u8(0x10);
  float32x4_t acc = vdupq_n_f32(0.0f);
  float min_terms = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    uint8x16_t lo, hi, bit_lo, bit_hi;
    unpack_nibbles(x[b].qs, &lo, &hi);
    expand_bits_32(x[b].qh, &bit_lo, &bit_hi);
    const int8x16_t q_lo = as_s8(vorrq_u8(lo, vandq_u8(bit_lo, fifth_bit)));  // [0, 31]
    const int8x16_t q_hi = as_s8(vorrq_u8(hi, vandq_u8(bit_hi, fifth_bit)));
    const int32x4_t lanes = block_dot<Dot>(q_lo, q_hi, y[b].qs);
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(lanes), f16(x[b].d) * f16(y[b].d));
    min_terms += f16(x[b].m) * f16(y[b].s);
  }
  return vaddvq_f32(acc) + min_terms;
}

template <typename Dot>
float dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ8_0*>(w);
  const auto* y = static_cast<const ref::BlockQ8_0*>(a);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const int32x4_t lanes = block_dot<Dot>(load_s8(x[b].qs), load_s8(x[b].qs + 16), y[b].qs);
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(lanes), f16(x[b].d) * f16(y[b].d));
  }
  return vaddvq_f32(acc);
}

}  // namespace
}  // namespace runnel::neon
