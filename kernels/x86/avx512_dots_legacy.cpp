// AVX-512 VNNI dots of the legacy 32-element blocks: Q4_0, Q5_0, Q8_0 (x Q8_0) and
// Q4_1, Q5_1 (x Q8_1). The AVX2 design (avx2_legacy.cpp: one block is one 32-byte vector,
// int32 lanes converted to float and accumulated with one FMA by d_w * d_a) with
// vpdpbusd on 256-bit vectors (AVX512-VL) in place of maddubs + madd: u8 x s8 products
// summed four at a time straight into int32 lanes, with no int16 saturation limit.
// 256-bit vectors, not 512: a block is 32 bytes with its own scale, so a zmm holding two
// blocks needs cross-lane inserts / shuffles for the weights and the scales, and Zen 4
// runs 512-bit integer work as two 256-bit halves anyway (a zmm version was not tried).
//
// Zero points: the weights stay unsigned in [0, 15] / [0, 31] and the offset comes back
// as 8 (16) * sum(a), itself a vpdpbusd against a constant; Q8_0 weights are signed, so
// |w| is the unsigned side and w's sign moves onto a (a is never -128: our quantizers'
// contract). Integer sums per block are exact (|lane| <= 4 * 31 * 127, a block's sum
// <= 32 * 31 * 127 < 2^24 converts exactly); only the float summation order differs from
// ref: |avx512 - ref| <= 1e-5 * S as for AVX2.
// Q4_0, Q4_1 and Q8_0 (the x8 types) add their block terms as the x8 products do
// (x8_steps.h: one FMA per block in block order), so a row gives gemm_x8's bits; Q5_0 and
// Q5_1 fold four blocks into one vector with vphaddd and scale them with one FMA.
#include "kernels/ref/blocks.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/avx512_dots.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::avx512 {

using avx2::expand_bits_32;
using avx2::f16;
using avx2::hsum;
using avx2::unpack_nibbles_16;
using ref::BlockQ4_0;
using ref::BlockQ4_1;
using ref::BlockQ5_0;
using ref::BlockQ5_1;
using ref::BlockQ8_0;
using ref::BlockQ8_1;

// Internal linkage: these inline helpers are compiled with the AVX-512 flags and must not
// be merged with same-named helpers of the AVX2 files.
namespace {

inline __m256i load_32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// sum_i u[i] * s[i] per int32 lane (4 bytes each), u unsigned, s signed bytes; exact.
inline __m256i dot_u8_s8(__m256i u, __m256i s) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
}

// Unsigned q (< 2^7) with zero point z: sum (q - z) * a = sum q * a - z * sum a.
inline __m256i dot_offset(__m256i q, __m256i a, char z) {
  return _mm256_sub_epi32(dot_u8_s8(q, a), dot_u8_s8(_mm256_set1_epi8(z), a));
}

// Two signed byte vectors: |w| against a with w's sign (exact while a has no -128).
inline __m256i dot_s8_s8(__m256i w, __m256i a) {
  return dot_u8_s8(_mm256_abs_epi8(w), _mm256_sign_epi8(a, w));
}

// Eight f16 fields (raw bits) to floats in one conversion.
inline __m256 f16x8(uint16_t h0, uint16_t h1, uint16_t h2, uint16_t h3, uint16_t h4, uint16_t h5,
                    uint16_t h6, uint16_t h7) {
  return _mm256_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(h0), static_cast<int16_t>(h1),
                                        static_cast<int16_t>(h2), static_cast<int16_t>(h3),
                                        static_cast<int16_t>(h4), static_cast<int16_t>(h5),
                                        static_cast<int16_t>(h6), static_cast<int16_t>(h7)));
}

// Products of the first and last four floats of v.
inline __m128 mul_halves(__m256 v) {
  return _mm_mul_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
}

// sum_b d_w(b) * d_a(b) * sum(lanes(b)) over the n / 32 blocks, plus the min terms
// sum_b m_w(b) * s_a(b) when the blocks have them (Q4_1 / Q5_1). BlockLanes(x, y) gives
// one block pair's eight int32 lanes. Four blocks per step: two rounds of vphaddd fold
// their lanes into one vector (lane k of each 128-bit half: block k, exact int32 sums),
// so the eight f16 scales convert in one instruction and one FMA scales four blocks.
template <typename WBlock, typename ABlock, bool kHasMin, typename BlockLanes>
float dot_blocks(int64_t n, const void* w, const void* a, BlockLanes lanes) {
  const auto* x = static_cast<const WBlock*>(w);
  const auto* y = static_cast<const ABlock*>(a);
  const int64_t nb = n / kQK;
  __m256 acc = _mm256_setzero_ps();
  __m128 min_acc = _mm_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const WBlock* xb = x + b;
    const ABlock* yb = y + b;
    const __m256i l01 = _mm256_hadd_epi32(lanes(xb[0], yb[0]), lanes(xb[1], yb[1]));
    const __m256i l23 = _mm256_hadd_epi32(lanes(xb[2], yb[2]), lanes(xb[3], yb[3]));
    const __m128 d =
        mul_halves(f16x8(xb[0].d, xb[1].d, xb[2].d, xb[3].d, yb[0].d, yb[1].d, yb[2].d, yb[3].d));
    const __m256 sums = _mm256_cvtepi32_ps(_mm256_hadd_epi32(l01, l23));
    acc = _mm256_fmadd_ps(_mm256_set_m128(d, d), sums, acc);
    if constexpr (kHasMin) {
      const __m256 ms =
          f16x8(xb[0].m, xb[1].m, xb[2].m, xb[3].m, yb[0].s, yb[1].s, yb[2].s, yb[3].s);
      min_acc = _mm_add_ps(min_acc, mul_halves(ms));
    }
  }
  float sum = 0.0f;
  for (; b < nb; ++b) {
    sum += f16(x[b].d) * f16(y[b].d) * static_cast<float>(avx2::hsum_epi32(lanes(x[b], y[b])));
    if constexpr (kHasMin) sum += f16(x[b].m) * f16(y[b].s);
  }
  const __m128 min4 = _mm_hadd_ps(min_acc, min_acc);
  return hsum(acc) + _mm_cvtss_f32(_mm_hadd_ps(min4, min4)) + sum;
}

}  // namespace

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return x8::dot_legacy_blocks<x8::MinTerms::kNone>(n / kQK, x, y, [x, y](int64_t b) {
    return dot_offset(unpack_nibbles_16(x[b].qs), load_32(y[b].qs), 8);
  });
}

float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  return x8::dot_legacy_blocks<x8::kAvx512Q4_1Mins>(n / kQK, x, y, [x, y](int64_t b) {
    return dot_u8_s8(unpack_nibbles_16(x[b].qs), load_32(y[b].qs));
  });
}

float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  return dot_blocks<BlockQ5_0, BlockQ8_0, false>(
      n, w, a, [](const BlockQ5_0& x, const BlockQ8_0& y) {
        const __m256i high = _mm256_and_si256(expand_bits_32(x.qh), _mm256_set1_epi8(0x10));
        const __m256i q = _mm256_or_si256(unpack_nibbles_16(x.qs), high);  // [0, 31]
        return dot_offset(q, load_32(y.qs), 16);
      });
}

float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  return dot_blocks<BlockQ5_1, BlockQ8_1, true>(
      n, w, a, [](const BlockQ5_1& x, const BlockQ8_1& y) {
        const __m256i high = _mm256_and_si256(expand_bits_32(x.qh), _mm256_set1_epi8(0x10));
        return dot_u8_s8(_mm256_or_si256(unpack_nibbles_16(x.qs), high), load_32(y.qs));
      });
}

float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return x8::dot_legacy_blocks<x8::MinTerms::kNone>(
      n / kQK, x, y, [x, y](int64_t b) { return dot_s8_s8(load_32(x[b].qs), load_32(y[b].qs)); });
}

}  // namespace runnel::avx512
