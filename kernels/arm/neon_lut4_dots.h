// The dots of the 4-bit lookup formats (MXFP4, IQ4_NL x Q8_0; IQ4_XS x Q8_K) as templates
// over the integer dot step, instantiated twice: neon_lut4.cpp with the baseline
// WideningDot (neon_common.h), neon_dotprod.cpp with vdotq_s32. Include only from those two
// files (internal linkage, see neon_common.h).
//
// A block's 16 code bytes give two index vectors (low nibbles: elements 0..15, high:
// 16..31) and one vqtbl1q_s8 each turns them into the signed weights (|w| <= 127, the
// widening step's limit) from the 16-byte value table (ref/lut4_values.h). Integer sums
// per block are exact; IQ4_XS multiplies each sub-block's four int32 lanes by its integer
// scale and sums four sub-blocks in integers (|lane| <= 4 * 8 * 127 * 127 * 32 < 2^24,
// so the conversion to float is exact) before scaling by d_w * d_a, where ref scales every
// sub-block in float. The float order differs from ref (4 lanes): |dot - ref| <= 1e-5 S.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm/neon_common.h"
#include "kernels/arm/neon_legacy_dots.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/lut4_values.h"

namespace runnel::neon {
namespace {

// A block type's value table and its float scale.
inline int8x16_t lut4_table(const ref::BlockIq4Nl*) {
  return vld1q_s8(ref::kIq4NlValues);
}
inline int8x16_t lut4_table(const ref::BlockIq4Xs*) {
  return vld1q_s8(ref::kIq4NlValues);
}
inline int8x16_t lut4_table(const ref::BlockMxfp4*) {
  return vld1q_s8(ref::kMxfp4Values);
}
inline float lut4_scale(const ref::BlockIq4Nl& x) {
  return f16(x.d);
}
inline float lut4_scale(const ref::BlockMxfp4& x) {
  return ref::e8m0_to_fp32_half(x.e);
}

// The 32 weights of 16 code bytes: elements 0..15 in *lo, 16..31 in *hi.
inline void lut4_decode(int8x16_t table, const uint8_t* qs, int8x16_t* lo, int8x16_t* hi) {
  uint8x16_t l, h;
  unpack_nibbles(qs, &l, &h);
  *lo = vqtbl1q_s8(table, l);
  *hi = vqtbl1q_s8(table, h);
}

// MXFP4 / IQ4_NL (Block) x Q8_0.
template <typename Dot, typename Block>
float dot_lut4_blocks(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const ref::BlockQ8_0*>(a);
  const int8x16_t table = lut4_table(x);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK; ++b) {
    int8x16_t lo, hi;
    lut4_decode(table, x[b].qs, &lo, &hi);
    const int32x4_t lanes = block_dot<Dot>(lo, hi, y[b].qs);
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(lanes), lut4_scale(x[b]) * f16(y[b].d));
  }
  return vaddvq_f32(acc);
}

// IQ4_XS x Q8_K: 8 sub-blocks of 32 weighted by their 6-bit scales (minus 32).
template <typename Dot>
float dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockIq4Xs*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  const int8x16_t table = lut4_table(x);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16(x[b].d) * y[b].d;
    for (int half = 0; half < 2; ++half) {
      int32x4_t isum = vdupq_n_s32(0);
      for (int s = 4 * half; s < 4 * half + 4; ++s) {
        int8x16_t lo, hi;
        lut4_decode(table, x[b].qs + 16 * s, &lo, &hi);
        const int32x4_t lanes = block_dot<Dot>(lo, hi, y[b].qs + 32 * s);
        isum = vmlaq_n_s32(isum, lanes, ref::iq4_xs_scale(x[b], s));
      }
      acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), d);
    }
  }
  return vaddvq_f32(acc);
}

}  // namespace
}  // namespace runnel::neon
