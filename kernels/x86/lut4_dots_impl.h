// The per-token dots of the 4-bit lookup formats (kernels/kernels.h TypeKernels::vec_dot of
// MXFP4 and IQ4_NL x Q8_0, IQ4_XS x Q8_K) as templates over an ISA's signed byte dot,
// instantiated by avx2_lut4.cpp (maddubs + madd) and avx512_dots_lut4.cpp (vpdpbusd).
// Include only from files compiled with at least the AVX2 flags.
//
// A block's 16 code bytes become 32 signed weight bytes in element order with one
// pshufb: the nibbles, unpacked as for Q4_0, index the 16-byte value table
// (ref/lut4_values.h) held in both 128-bit halves of a register. The weights (|w| <= 127)
// then meet the activations as Q8_0 weights would: |w| as the unsigned side, w's sign moved
// onto a (a is never -128, our quantizers' contract). Integer sums per (sub-)block are
// exact; IQ4_XS weights each sub-block's int32 lanes by its integer scale (ls - 32) and
// sums the super-block in integers (|lane| <= 8 * 32 * 4 * 127 * 127 < 2^24) before one
// float scale, where ref scales every sub-block in float. The float steps are the x8
// products' (x8_steps.h): per block, acc = fma(d_w * d_a, float(I_b), acc) in one sum, so
// a streamed row gives the repacked row's bits; |dot - ref| <= 1e-5 * S, S = sum |w_i a_i|.
//
// A Step (one struct per ISA, all members static) provides:
//   dot(w, a)              int32 lanes of w . a (32 signed weight bytes, |w| <= 127, and 32
//                          activation bytes), four adjacent products per lane
//   dot_scaled(w, a, s)    the same times the integer scale s (|s| <= 32)
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/ref/blocks.h"
#include "kernels/ref/lut4_values.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::lut4 {
// Internal linkage: the AVX2 and AVX-512 files compile these with different flags (see
// avx2_common.h).
namespace {

// A block type's value table (both 128-bit halves) and its float scale.
inline __m256i table_of(const ref::BlockIq4Nl*) {
  return _mm256_broadcastsi128_si256(
      _mm_load_si128(reinterpret_cast<const __m128i*>(ref::kIq4NlValues)));
}
inline __m256i table_of(const ref::BlockIq4Xs*) {
  return table_of(static_cast<const ref::BlockIq4Nl*>(nullptr));
}
inline __m256i table_of(const ref::BlockMxfp4*) {
  return _mm256_broadcastsi128_si256(
      _mm_load_si128(reinterpret_cast<const __m128i*>(ref::kMxfp4Values)));
}
inline float scale_of(const ref::BlockIq4Nl& x) {
  return avx2::f16(x.d);
}
inline float scale_of(const ref::BlockMxfp4& x) {
  return ref::e8m0_to_fp32_half(x.e);
}

// 16 code bytes at qs -> the 32 weights of their elements (low nibbles first), from `table`.
inline __m256i decode32(__m256i table, const uint8_t* qs) {
  return _mm256_shuffle_epi8(table, avx2::unpack_nibbles_16(qs));
}

inline __m256i load_32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// MXFP4 / IQ4_NL (Block) x Q8_0, block terms added as x8_steps.h's legacy blocks.
template <class Step, typename Block>
float dot_blocks(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const ref::BlockQ8_0*>(a);
  const __m256i table = table_of(x);
  return x8::dot_legacy_blocks<x8::MinTerms::kNone>(n / kQK, x, y, [&](int64_t b) {
    return Step::dot(decode32(table, x[b].qs), load_32(y[b].qs));
  });
}

// IQ4_XS x Q8_K: 8 sub-blocks of 32, each weighted by its 6-bit scale in integers.
template <class Step>
float dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockIq4Xs*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  const __m256i table = table_of(x);
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m256i isum0 = _mm256_setzero_si256();
    __m256i isum1 = _mm256_setzero_si256();
    for (int s = 0; s < 8; s += 2) {
      isum0 = _mm256_add_epi32(
          isum0, Step::dot_scaled(decode32(table, x[b].qs + 16 * s), load_32(y[b].qs + 32 * s),
                                  ref::iq4_xs_scale(x[b], s)));
      isum1 = _mm256_add_epi32(
          isum1, Step::dot_scaled(decode32(table, x[b].qs + 16 * s + 16),
                                  load_32(y[b].qs + 32 * s + 32), ref::iq4_xs_scale(x[b], s + 1)));
    }
    acc = x8::add_block_term(acc, avx2::f16(x[b].d), y[b].d, _mm256_add_epi32(isum0, isum1));
  }
  return _mm_cvtss_f32(acc);
}

}  // namespace
}  // namespace runnel::lut4

// Defines vec_dot_mxfp4, vec_dot_iq4_nl and vec_dot_iq4_xs (kernels.h VecDotFn) in the
// namespace of the ISA file that expands it, over that file's `Step`.
#define RUNNEL_LUT4_DEFINE_DOTS(Step)                             \
  float vec_dot_mxfp4(int64_t n, const void* w, const void* a) {  \
    return lut4::dot_blocks<Step, ref::BlockMxfp4>(n, w, a);      \
  }                                                               \
  float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) { \
    return lut4::dot_blocks<Step, ref::BlockIq4Nl>(n, w, a);      \
  }                                                               \
  float vec_dot_iq4_xs(int64_t n, const void* w, const void* a) { \
    return lut4::dot_iq4_xs<Step>(n, w, a);                       \
  }
