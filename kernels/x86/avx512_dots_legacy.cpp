// AVX-512 VNNI dots of the legacy 32-element blocks: Q4_0, Q5_0, Q8_0 (x Q8_0) and
// Q4_1, Q5_1 (x Q8_1). The AVX2 design (avx2_legacy.cpp: one block is one 32-byte vector
// of exact int32 lanes, block terms added as the x8 products add them) with
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
// All five are x8 types: they add their block terms as the x8 products do (x8_steps.h:
// one FMA per block in block order), so a row gives gemm_x8's bits.
#include "kernels/ref/blocks.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/avx512_dots.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::avx512 {

using avx2::expand_bits_32;
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
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return x8::dot_legacy_blocks<x8::MinTerms::kNone>(n / kQK, x, y, [x, y](int64_t b) {
    const __m256i high = _mm256_and_si256(expand_bits_32(x[b].qh), _mm256_set1_epi8(0x10));
    const __m256i q = _mm256_or_si256(unpack_nibbles_16(x[b].qs), high);  // [0, 31]
    return dot_offset(q, load_32(y[b].qs), 16);
  });
}

float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  return x8::dot_legacy_blocks<x8::kAvx512Q4_1Mins>(n / kQK, x, y, [x, y](int64_t b) {
    const __m256i high = _mm256_and_si256(expand_bits_32(x[b].qh), _mm256_set1_epi8(0x10));
    return dot_u8_s8(_mm256_or_si256(unpack_nibbles_16(x[b].qs), high), load_32(y[b].qs));
  });
}

float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return x8::dot_legacy_blocks<x8::MinTerms::kNone>(
      n / kQK, x, y, [x, y](int64_t b) { return dot_s8_s8(load_32(x[b].qs), load_32(y[b].qs)); });
}

}  // namespace runnel::avx512
