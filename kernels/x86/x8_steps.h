// The float steps of the x8 products (x8_gemm_impl.h, avx2_x8.cpp, avx512_x8.cpp), which
// the per-token dots (vec_dot) and prompt tiles (gemm) of the seven x8 types repeat: a
// resident model's rows are repacked and multiplied by gemm_x8, a streamed model's stay
// in the file's layout, and only the same products rounded and added in the same order
// give a streamed run the resident run's tokens. Per row and token, with I_b the exact
// integer sum of block b (offsets included) and every sum starting at +0:
//   Q4_0, Q5_0, Q8_0, MXFP4, IQ4_NL, Q6_K, IQ4_XS: acc = fma(d_w * d_a, float(I_b), acc), block
//   after block (MXFP4's d_w: its exponent's half, ref::e8m0_to_fp32_half; IQ4_XS's I_b: the
//   sum of its sub-blocks' integer dots times their integer scales);
//   Q4_1, Q5_1: acc = fma(d_w * d_a, float(I_b), acc), then the min term m_w * s_a: on AVX2
//   acc = fma(m_w, s_a, acc) right after it, on AVX-512 acc_m = fma(m_w, s_a, acc_m) in a
//   sum of its own, and acc + acc_m at the end (MinTerms below);
//   Q4_K: acc = fma(d * d_a, float(I_b), acc) and acc_m = fma(dmin * d_a, float(-M_b),
//   acc_m) (M_b = sum_s m_s * (the activations' sum over sub-block s)), then acc + acc_m.
// (d_w * d_a is one rounded float product; fma rounds once.) Helpers here let the dots
// compute eight blocks' integer sums and scales as vectors and still add the terms one
// block at a time. Include only from files compiled with at least the AVX2 flags.
//
// The same recipe holds for every 32-element block type the per-token dots take through
// dot_legacy_blocks (weight_scales8 / weight_scale give d_w per block type).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/ref/blocks.h"
#include "kernels/ref/lut4_values.h"

namespace runnel::x8 {

// Where Q4_1's min terms m_w * s_a go (see above): after each block's d term in the one
// sum, or in a sum of their own added at the end.
enum class MinTerms { kNone, kChained, kOwnSum };
// AVX2's gemm_x8 has no registers for a second sum at 8 tokens (16 ymm; with one, prompts
// ran slower). AVX-512's has (32 ymm): there the own sum keeps one FMA per block on a
// row's chain, which makes the per-token dot and gemm_x8 faster.
constexpr MinTerms kAvx2Q4_1Mins = MinTerms::kChained;
constexpr MinTerms kAvx512Q4_1Mins = MinTerms::kOwnSum;

// Internal linkage: the AVX2 and AVX-512 files compile these with different flags (see
// avx2_common.h).
namespace {

// Lane k of v in lane 0 (the other lanes: whatever one shuffle leaves there).
template <int k>
inline __m128 lane_to_0(__m128 v) {
  if constexpr (k == 0) return v;
  if constexpr (k == 1) return _mm_movehdup_ps(v);
  if constexpr (k == 2) return _mm_movehl_ps(v, v);
  if constexpr (k == 3) return _mm_permute_ps(v, 3);
}

// Lane 0 of acc = fma(d[k], s[k], lane 0 of acc) for k = 0 .. 3 (the other lanes hold
// garbage). The sum stays in a vector register: a float would be re-zeroed above lane 0
// at every step, a cycle more per block on the chain of FMAs.
inline __m128 add_block_terms4(__m128 acc, __m128 d, __m128 s) {
  acc = _mm_fmadd_ss(d, s, acc);
  acc = _mm_fmadd_ss(lane_to_0<1>(d), lane_to_0<1>(s), acc);
  acc = _mm_fmadd_ss(lane_to_0<2>(d), lane_to_0<2>(s), acc);
  return _mm_fmadd_ss(lane_to_0<3>(d), lane_to_0<3>(s), acc);
}
// The same with each step followed by acc = fma(m[k], ms[k], acc) (Q4_1's chained mins).
inline __m128 add_block_terms4(__m128 acc, __m128 d, __m128 s, __m128 m, __m128 ms) {
  acc = _mm_fmadd_ss(m, ms, _mm_fmadd_ss(d, s, acc));
  acc = _mm_fmadd_ss(lane_to_0<1>(m), lane_to_0<1>(ms),
                     _mm_fmadd_ss(lane_to_0<1>(d), lane_to_0<1>(s), acc));
  acc = _mm_fmadd_ss(lane_to_0<2>(m), lane_to_0<2>(ms),
                     _mm_fmadd_ss(lane_to_0<2>(d), lane_to_0<2>(s), acc));
  return _mm_fmadd_ss(lane_to_0<3>(m), lane_to_0<3>(ms),
                      _mm_fmadd_ss(lane_to_0<3>(d), lane_to_0<3>(s), acc));
}
inline __m128 low4(__m256 v) {
  return _mm256_castps256_ps128(v);
}
inline __m128 high4(__m256 v) {
  return _mm256_extractf128_ps(v, 1);
}

// Eight blocks' int32 lane vectors -> their eight sums, block k in lane k (exact).
inline __m256i block_sums8(const __m256i (&lanes)[8]) {
  const __m256i q0 = _mm256_hadd_epi32(_mm256_hadd_epi32(lanes[0], lanes[1]),
                                       _mm256_hadd_epi32(lanes[2], lanes[3]));
  const __m256i q1 = _mm256_hadd_epi32(_mm256_hadd_epi32(lanes[4], lanes[5]),
                                       _mm256_hadd_epi32(lanes[6], lanes[7]));
  // q0: blocks 0-3 summed over the low 128 bits | the same over the high 128 bits
  return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20),
                          _mm256_permute2x128_si256(q0, q1, 0x31));
}

// The f16 field `field` of blocks p[0 .. 7] as floats, in one conversion. The halves go
// together four at a time in general registers (vpinsrw per half was a load and a shuffle
// each, and shuffles are what the dots run short of).
template <typename Block>
inline __m256 f16_fields8(const Block* p, uint16_t Block::*field) {
  auto four = [p, field](int k) {
    uint64_t v = uint64_t{p[k].*field} | uint64_t{p[k + 1].*field} << 16 |
                 uint64_t{p[k + 2].*field} << 32 | uint64_t{p[k + 3].*field} << 48;
    __asm__("" : "+r"(v));
    return static_cast<int64_t>(v);
  };
  return _mm256_cvtph_ps(_mm_set_epi64x(four(4), four(0)));
}

// Eight E8M0 exponent bytes (byte k = block or row k) as the floats 2^(e - 128), as
// ref::e8m0_to_fp32_half makes them: (e - 1) << 23 for e >= 2, the subnormals 2^-128 and
// 2^-127 for e = 0 and 1.
inline __m256 e8m0_halves8(__m128i eight_bytes) {
  const __m256i e = _mm256_cvtepu8_epi32(eight_bytes);
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i is_tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, is_tiny));
}

// d_w of blocks p[0 .. 7] (weight_scales8) and of one block (weight_scale): the f16 d, or
// MXFP4's exponent half.
template <typename Block>
inline __m256 weight_scales8(const Block* p) {
  return f16_fields8(p, &Block::d);
}
inline __m256 weight_scales8(const ref::BlockMxfp4* p) {
  uint64_t e = 0;
  for (int k = 0; k < 8; ++k) e |= uint64_t{p[k].e} << (8 * k);
  return e8m0_halves8(_mm_cvtsi64_si128(static_cast<int64_t>(e)));
}
template <typename Block>
inline float weight_scale(const Block& x) {
  return _cvtsh_ss(x.d);
}
inline float weight_scale(const ref::BlockMxfp4& x) {
  return ref::e8m0_to_fp32_half(x.e);
}

// The K-quant steps. Q6_K and IQ4_XS: lane 0 of acc = fma(d * d_a, float(sum of the block's
// lanes), lane 0 of acc).
inline __m128 add_block_term(__m128 acc, float d, float d_a, __m256i lanes) {
  const __m128i s4 =
      _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  const __m128i s1 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1));
  return _mm_fmadd_ss(_mm_set_ss(d * d_a), _mm_cvtepi32_ps(s1), acc);
}

// Q4_K: lane 0 of acc = fma(d * d_a, float(I), acc) and of acc_m = fma(dmin * d_a,
// float(-M), acc_m), I and M the sums of the lanes of isum and msum, (d, dmin) the
// block's first 4 bytes (two f16).
inline void add_q4_k_terms(__m128& acc, __m128& acc_m, const void* d_dmin, float d_a, __m256i isum,
                           __m256i msum) {
  const __m256i pairs = _mm256_hadd_epi32(isum, msum);
  const __m128i quads =
      _mm_add_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
  // [I, -M, I, -M]: the integer negated, as gemm_x8 has it (float(-M) is -float(M), but
  // only the same operands give the same sign of a zero)
  const __m128 sums =
      _mm_cvtepi32_ps(_mm_sign_epi32(_mm_hadd_epi32(quads, quads), _mm_setr_epi32(1, -1, 1, -1)));
  int32_t h;
  std::memcpy(&h, d_dmin, sizeof h);
  const __m128 scales =
      _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(h)), _mm_set1_ps(d_a));  // d, dmin times d_a
  acc = _mm_fmadd_ss(scales, sums, acc);
  acc_m = _mm_fmadd_ss(_mm_movehdup_ps(scales), _mm_movehdup_ps(sums), acc_m);
}

inline int32_t sum_epi32(__m256i v) {
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
}

// sum_b of the legacy blocks' terms (Q4_0, Q5_0, Q8_0: kMins kNone; Q4_1, Q5_1: the table's
// MinTerms)
// in block order, as gemm_x8 adds them. lanes(b) gives block b's integer dot in eight
// int32 lanes; eight blocks at a time their sums and scale products are formed as vectors.
template <MinTerms kMins, typename WBlock, typename ABlock, typename Lanes>
float dot_legacy_blocks(int64_t nb, const WBlock* x, const ABlock* y, Lanes lanes) {
  __m128 acc = _mm_setzero_ps();
  __m128 acc_m = _mm_setzero_ps();  // kOwnSum: the min terms
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    const __m256i l[8] = {lanes(b),     lanes(b + 1), lanes(b + 2), lanes(b + 3),
                          lanes(b + 4), lanes(b + 5), lanes(b + 6), lanes(b + 7)};
    const __m256 d = _mm256_mul_ps(weight_scales8(x + b), f16_fields8(y + b, &ABlock::d));
    const __m256 s = _mm256_cvtepi32_ps(block_sums8(l));
    if constexpr (kMins == MinTerms::kNone) {
      acc = add_block_terms4(add_block_terms4(acc, low4(d), low4(s)), high4(d), high4(s));
    } else {
      const __m256 m = f16_fields8(x + b, &WBlock::m);
      const __m256 ms = f16_fields8(y + b, &ABlock::s);
      if constexpr (kMins == MinTerms::kChained) {
        acc = add_block_terms4(acc, low4(d), low4(s), low4(m), low4(ms));
        acc = add_block_terms4(acc, high4(d), high4(s), high4(m), high4(ms));
      } else {
        acc = add_block_terms4(add_block_terms4(acc, low4(d), low4(s)), high4(d), high4(s));
        acc_m = add_block_terms4(add_block_terms4(acc_m, low4(m), low4(ms)), high4(m), high4(ms));
      }
    }
  }
  for (; b < nb; ++b) {
    const float d = weight_scale(x[b]) * _cvtsh_ss(y[b].d);
    acc = _mm_fmadd_ss(_mm_set_ss(d), _mm_set_ss(static_cast<float>(sum_epi32(lanes(b)))), acc);
    if constexpr (kMins != MinTerms::kNone) {
      __m128& sum = kMins == MinTerms::kChained ? acc : acc_m;
      sum = _mm_fmadd_ss(_mm_set_ss(_cvtsh_ss(x[b].m)), _mm_set_ss(_cvtsh_ss(y[b].s)), sum);
    }
  }
  if constexpr (kMins == MinTerms::kOwnSum) return _mm_cvtss_f32(_mm_add_ss(acc, acc_m));
  return _mm_cvtss_f32(acc);
}

}  // namespace
}  // namespace runnel::x8
