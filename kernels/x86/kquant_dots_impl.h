// The per-token k-quant dots (kernels/kernels.h TypeKernels::vec_dot of Q2_K .. Q6_K, x
// Q8_K) as templates over an ISA's integer steps, instantiated by avx2_kquants.cpp
// (maddubs + madd) and avx512_dots_kquants.cpp (vpdpbusd + vpmaddwd). Include only from
// files compiled with at least the AVX2 flags.
//
// Per super-block the weight quants are unpacked into 32-byte vectors of unsigned bytes
// (element order, as the activations), multiplied with the activation bytes, weighted by
// the integer sub-block scales and summed in int32 lanes (exact), and only then converted
// to float and scaled by d_w * d_a. Min / offset terms come from the Q8_K bsums, in
// integers. The scales are unpacked in vectors (16 int16 lanes) and handed to the Step,
// which keeps them in the form its scaled dots read.
//
// Float steps: Q2_K's are ref's, so the result equals ref's. Q3_K and Q6_K sum each
// block's int32 lanes (offset included) to one exact integer before scaling it, like ref:
// their offsets (-4, -32) sit in other lanes than the products they correct, and scaling
// lanes first would leave rounding residue where the true sum cancels to 0 (a
// zero-magnitude dot must come out 0). Q5_K keeps float lanes for d * sum and dmin * min
// (one FMA each per block). Q4_K and Q6_K (x8 types) add their block terms as the x8
// products do (x8_steps.h), so a row gives gemm_x8's bits. The integer sums are exact and
// the float steps the same on every Step, so the AVX2 and AVX-512 dots give the same bits;
// against ref only the float order differs: |dot - ref| <= 1e-5 * S.
//
// A Step (one struct per ISA, all members static) provides:
//   Scales, scales(sc16)   the 16 int16 scales of sub-blocks of 16 (or Q4_K / Q5_K's 8
//                          scales of sub-blocks of 32 in lanes 0-7), in the form below reads
//   dot_pair(q, a, s, j)   int32 lanes of q . a (32 unsigned weight bytes q <= 63, 32
//                          activation bytes): elements 0-15 times scale j, 16-31 times
//                          scale j + 1
//   dot_chunk(lo, hi, a_lo, a_hi, s, c)
//                          Q4_K / Q5_K chunk c (64 elements, q <= 31): lo . a_lo times
//                          scale 2c plus hi . a_hi times scale 2c + 1, as int32 lanes
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/ref/blocks.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::kdots {
// Internal linkage: the AVX2 and AVX-512 files compile these with different flags (see
// avx2_common.h).
namespace {

using avx2::f16;
using avx2::hsum_epi32;

inline __m256i load_32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// sum_g bsums[g] * s16[g] over the 16 groups of 16, in eight int32 lanes (exact:
// |bsums| <= 2032, |s| <= 128).
inline __m256i bsums_dot(const ref::BlockQ8_K& y, __m256i s16) {
  return _mm256_madd_epi16(load_32(y.bsums), s16);
}

// Q3_K: the 16 signed 6-bit scales (minus 32) as int16. Low nibbles: bytes 0-7 (j < 8),
// then their high nibbles; high 2 bits: bits 2 (j / 4) .. of byte 8 + j % 4.
inline __m256i q3_k_scales(const uint8_t* b) {
  const __m128i l8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b));
  const __m128i low4 = _mm_set1_epi8(0x0F);
  const __m128i low =
      _mm_unpacklo_epi64(_mm_and_si128(l8, low4), _mm_and_si128(_mm_srli_epi16(l8, 4), low4));
  int32_t h;
  __builtin_memcpy(&h, b + 8, sizeof h);
  // dword k holds bytes 8-11 shifted right by 2k; bits from the next byte land above bit 1
  const __m128i h4 = _mm_srlv_epi32(_mm_set1_epi32(h), _mm_setr_epi32(0, 2, 4, 6));
  const __m128i high = _mm_slli_epi16(_mm_and_si128(h4, _mm_set1_epi8(3)), 4);
  const __m128i sc = _mm_sub_epi8(_mm_or_si128(low, high), _mm_set1_epi8(32));
  return _mm256_cvtepi8_epi16(sc);
}

// Q4_K / Q5_K: the 6-bit scales and mins of the 8 sub-blocks of 32 from the 12 packed
// bytes (ref::unpack_scale_min_k4 for all j at once, four bytes per 32-bit step): as 16
// int16 scales (0-7, then 8 zeros) and the mins as 16 int16, each twice (one per group of
// 16, the bsums layout).
inline void q4_k_scales_mins(const uint8_t* b, __m256i* sc16, __m256i* mins16) {
  uint32_t u[3];
  __builtin_memcpy(u, b, sizeof u);
  const uint32_t six = 0x3F3F3F3F;
  const uint32_t four = 0x0F0F0F0F;
  const uint32_t top2 = 0x03030303;
  const uint32_t sc_hi = (u[2] & four) | (((u[0] >> 6) & top2) << 4);  // scales 4-7
  const uint32_t m_hi = ((u[2] >> 4) & four) | (((u[1] >> 6) & top2) << 4);
  const uint64_t sc = (u[0] & six) | uint64_t{sc_hi} << 32;
  const uint64_t m = (u[1] & six) | uint64_t{m_hi} << 32;
  *sc16 = _mm256_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sc)));
  const __m128i m8 = _mm_cvtsi64_si128(static_cast<int64_t>(m));
  *mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
}

// Bit k of every byte moved to bit 4 (0x10 or 0): an epi16 shift by at most 4 keeps
// each byte's bit 4 sourced from the same byte.
inline __m256i bit_to_16(__m256i v, int k) {
  const __m256i moved = k <= 4 ? _mm256_sll_epi16(v, _mm_cvtsi32_si128(4 - k))
                               : _mm256_srl_epi16(v, _mm_cvtsi32_si128(k - 4));
  return _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
}

// Q2_K: in each 128-element half, byte l of its 32 quant bytes holds elements l, l + 32,
// l + 64, l + 96 (two bits each, lowest first); sub-block j of 16 has a 4-bit scale (low
// nibble) and min (high nibble). Uses Step::scales / dot_pair.
template <class Step>
float dot_q2_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ2_K*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), low4));
    const typename Step::Scales scales =
        Step::scales(_mm256_cvtepu8_epi16(_mm_and_si128(sc8, low4)));
    __m256i sumi = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const __m256i packed = load_32(x[b].qs + 32 * half);
      for (int g = 0; g < 4; ++g) {
        const __m256i q =
            _mm256_and_si256(_mm256_srl_epi16(packed, _mm_cvtsi32_si128(2 * g)), two_bits);
        const int j = 8 * half + 2 * g;  // sub-blocks j (elements 0-15) and j + 1
        sumi = _mm256_add_epi32(
            sumi, Step::dot_pair(q, load_32(y[b].qs + 128 * half + 32 * g), scales, j));
      }
    }
    const float dall = y[b].d * f16(x[b].d);
    const float dmin = y[b].d * f16(x[b].dmin);
    sum += dall * static_cast<float>(hsum_epi32(sumi)) -
           dmin * static_cast<float>(hsum_epi32(bsums_dot(y[b], mins)));
  }
  return sum;
}

// Q3_K: Q2_K's two low bits plus a high bit (hmask[l] bit g for element 32g + l); the
// quant is (low | high << 2) - 4 with signed 6-bit scales per sub-block of 16: q in [0, 7]
// stands for q - 4, and the -4 comes back as -4 * sum_j sc_j * bsums_j. Uses Step::scales
// / dot_pair.
template <class Step>
float dot_q3_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ3_K*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  const __m256i one = _mm256_set1_epi8(1);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const __m256i sc16 = q3_k_scales(x[b].scales);
    const typename Step::Scales scales = Step::scales(sc16);
    __m256i sumi =
        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bsums_dot(y[b], sc16), 2));
    const __m256i hmask = load_32(x[b].hmask);
    for (int half = 0; half < 2; ++half) {
      const __m256i packed = load_32(x[b].qs + 32 * half);
      for (int g = 0; g < 4; ++g) {
        const int group = 4 * half + g;  // elements 32 group .. + 31
        const __m256i low =
            _mm256_and_si256(_mm256_srl_epi16(packed, _mm_cvtsi32_si128(2 * g)), two_bits);
        const __m256i high =
            _mm256_and_si256(_mm256_srl_epi16(hmask, _mm_cvtsi32_si128(group)), one);
        const __m256i q = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
        sumi = _mm256_add_epi32(
            sumi, Step::dot_pair(q, load_32(y[b].qs + 32 * group), scales, 2 * group));
      }
    }
    sum += (f16(x[b].d) * y[b].d) * static_cast<float>(hsum_epi32(sumi));
  }
  return sum;
}

// Q4_K and Q5_K (Block): per 64-element chunk c the low nibbles are sub-block 2c and the
// high nibbles 2c + 1; Q5_K's qh bit 2c (low nibbles) / 2c + 1 (high nibbles) of byte l is
// the 5th bit of element l of that run. Uses Step::scales / dot_chunk.
template <class Step, typename Block>
inline __m256i k4_block_sum(const Block& x, const ref::BlockQ8_K& y, __m256i sc16) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const typename Step::Scales scales = Step::scales(sc16);
  __m256i sumi = _mm256_setzero_si256();
  for (int c = 0; c < kQK_K / 64; ++c) {
    const __m256i packed = load_32(x.qs + 32 * c);
    __m256i lo = _mm256_and_si256(packed, low4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
    if constexpr (std::is_same_v<Block, ref::BlockQ5_K>) {
      const __m256i qh = load_32(x.qh);
      lo = _mm256_or_si256(lo, bit_to_16(qh, 2 * c));
      hi = _mm256_or_si256(hi, bit_to_16(qh, 2 * c + 1));
    }
    sumi = _mm256_add_epi32(sumi, Step::dot_chunk(lo, hi, load_32(y.qs + 64 * c),
                                                  load_32(y.qs + 64 * c + 32), scales, c));
  }
  return sumi;
}

static_assert(offsetof(ref::BlockQ4_K, d) == 0 &&
              offsetof(ref::BlockQ4_K, dmin) == 2);  // add_q4_k_terms

// Q4_K: the d part and the min part of each block go to two float sums (x8_steps.h),
// added at the end.
template <class Step>
float dot_q4_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ4_K*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  __m128 acc = _mm_setzero_ps();    // lane 0: the d parts
  __m128 acc_m = _mm_setzero_ps();  // lane 0: the min parts
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m256i sc16;
    __m256i mins;
    q4_k_scales_mins(x[b].scales, &sc16, &mins);
    const __m256i sumi = k4_block_sum<Step>(x[b], y[b], sc16);
    x8::add_q4_k_terms(acc, acc_m, &x[b], y[b].d, sumi, bsums_dot(y[b], mins));
  }
  return _mm_cvtss_f32(_mm_add_ss(acc, acc_m));
}

template <class Step>
float dot_q5_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ5_K*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m256i sc16;
    __m256i mins;
    q4_k_scales_mins(x[b].scales, &sc16, &mins);
    const __m256i sumi = k4_block_sum<Step>(x[b], y[b], sc16);
    const float d = f16(x[b].d) * y[b].d;
    const float dmin = f16(x[b].dmin) * y[b].d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(bsums_dot(y[b], mins)), acc);
  }
  return avx2::hsum(acc);
}

// Q6_K: halves unpacked by avx2::unpack_q6_k_half; quants are stored as q + 32, and the
// -32 is -32 * sum_j sc_j * bsums_j. Uses Step::scales / dot_pair.
template <class Step>
float dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockQ6_K*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  __m128 acc = _mm_setzero_ps();  // lane 0
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales)));
    const typename Step::Scales scales = Step::scales(sc16);
    __m256i sumi =
        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bsums_dot(y[b], sc16), 5));
    for (int half = 0; half < 2; ++half) {
      __m256i q[4];
      avx2::unpack_q6_k_half(x[b].ql + 64 * half, x[b].qh + 32 * half, q);
      const int8_t* yq = y[b].qs + 128 * half;
      for (int k = 0; k < 4; ++k) {  // elements 32k .. 32k + 31 of this half: sub-blocks j, j + 1
        sumi = _mm256_add_epi32(
            sumi, Step::dot_pair(q[k], load_32(yq + 32 * k), scales, 8 * half + 2 * k));
      }
    }
    acc = x8::add_block_term(acc, f16(x[b].d), y[b].d, sumi);  // the block's exact sum, as gemm_x8
  }
  return _mm_cvtss_f32(acc);
}

}  // namespace
}  // namespace runnel::kdots

// Defines vec_dot_<type> (kernels.h VecDotFn) in the namespace of the ISA file that expands
// it, over that file's `Step`; RUNNEL_KQUANT_DEFINE_DOTS all five.
#define RUNNEL_KQUANT_DEFINE_DOT(type, Step)                      \
  float vec_dot_##type(int64_t n, const void* w, const void* a) { \
    return kdots::dot_##type<Step>(n, w, a);                      \
  }
#define RUNNEL_KQUANT_DEFINE_DOTS(Step) \
  RUNNEL_KQUANT_DEFINE_DOT(q2_k, Step)  \
  RUNNEL_KQUANT_DEFINE_DOT(q3_k, Step)  \
  RUNNEL_KQUANT_DEFINE_DOT(q4_k, Step)  \
  RUNNEL_KQUANT_DEFINE_DOT(q5_k, Step)  \
  RUNNEL_KQUANT_DEFINE_DOT(q6_k, Step)
