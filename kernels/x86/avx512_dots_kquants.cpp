// AVX-512 VNNI dots of the k-quants: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K weights x Q8_K
// activations. The AVX2 design (avx2_kquants.cpp) with vpdpbusd on 256-bit vectors in
// place of maddubs: weight quants unpacked to unsigned bytes, u8 x s8 products summed four
// at a time into int32 lanes, then weighted by the integer sub-block scales with one
// vpmaddwd. That needs no vpmulld: every lane fits in int16 (|lane| <= 4 * 63 * 127 =
// 32004 for Q6_K's 6-bit quants, less for the others), so a multiplier of
// (scale, 0) per int32 lane gives lane * scale exactly. The min / offset terms come from
// the Q8_K bsums with one vpmaddwd too instead of a scalar loop.
// Q2_K, Q3_K and Q6_K sum each block's int32 lanes (offset included) to one exact integer
// before scaling it, like ref: their offsets (-4, -32) sit in other lanes than the
// products they correct, and scaling lanes first would leave rounding residue where the
// true sum cancels to 0 (a zero-magnitude dot must come out 0). Q5_K keeps float lanes
// for d * sum and dmin * min (one FMA each per block). Q4_K and Q6_K (x8 types) add their
// block terms as the x8 products do (x8_steps.h), so a row gives gemm_x8's bits.
// Integer sums per block are exact; only the float accumulation order differs from ref:
// |avx512 - ref| <= 1e-5 * S as for AVX2.
#include <cstddef>

#include "kernels/ref/blocks.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/avx512_dots.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::avx512 {

using avx2::f16;
using avx2::hsum;
using avx2::hsum_epi32;
using ref::BlockQ2_K;
using ref::BlockQ3_K;
using ref::BlockQ4_K;
using ref::BlockQ5_K;
using ref::BlockQ6_K;
using ref::BlockQ8_K;

// Internal linkage: compiled with the AVX-512 flags (see avx2_common.h).
namespace {

inline __m256i load_32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

inline __m256i dot_u8_s8(__m256i u, __m256i s) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
}

// Lanes (each in int16 range) are scaled with vpmaddwd by int32 multipliers whose high
// int16 is 0: low16(lane) * scale, exact. pick_scales gives the multipliers of a vector
// holding sub-blocks j (lanes 0-3) and j + 1 (lanes 4-7) of 16, picked out of the 16
// int16 scales with one masked vpermw.
inline __m256i pick_scales(__m256i sc16, int j) {
  const __m256i halves = _mm256_setr_epi16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m256i idx = _mm256_add_epi16(halves, _mm256_set1_epi16(static_cast<int16_t>(j)));
  return _mm256_maskz_permutexvar_epi16(0x5555, idx, sc16);
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

// sum_g bsums[g] * s16[g] over the 16 groups of 16, in eight int32 lanes (exact:
// |bsums| <= 2032, |s| <= 128).
inline __m256i bsums_dot(const BlockQ8_K& y, __m256i s16) {
  return _mm256_madd_epi16(load_32(y.bsums), s16);
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

// The int32 multipliers giving every lane scale j (see pick_scales).
inline __m256i pick_scale(__m256i sc16, int j) {
  return _mm256_maskz_permutexvar_epi16(0x5555, _mm256_set1_epi16(static_cast<int16_t>(j)), sc16);
}

// Bit k of every byte moved to bit 4 (0x10 or 0): an epi16 shift by at most 4 keeps
// each byte's bit 4 sourced from the same byte.
inline __m256i bit_to_16(__m256i v, int k) {
  const __m256i moved = k <= 4 ? _mm256_sll_epi16(v, _mm_cvtsi32_si128(4 - k))
                               : _mm256_srl_epi16(v, _mm_cvtsi32_si128(k - 4));
  return _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
}

}  // namespace

float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), low4));
    const __m256i scales = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, low4));
    __m256i sumi = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const __m256i packed = load_32(x[b].qs + 32 * half);
      for (int g = 0; g < 4; ++g) {
        const __m256i q =
            _mm256_and_si256(_mm256_srl_epi16(packed, _mm_cvtsi32_si128(2 * g)), two_bits);
        const __m256i lanes = dot_u8_s8(q, load_32(y[b].qs + 128 * half + 32 * g));
        const int j = 8 * half + 2 * g;  // sub-blocks j (low 128 bits) and j + 1
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(lanes, pick_scales(scales, j)));
      }
    }
    const float dall = y[b].d * f16(x[b].d);
    const float dmin = y[b].d * f16(x[b].dmin);
    sum += dall * static_cast<float>(hsum_epi32(sumi)) -
           dmin * static_cast<float>(hsum_epi32(bsums_dot(y[b], mins)));
  }
  return sum;
}

float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  const __m256i one = _mm256_set1_epi8(1);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const __m256i sc = q3_k_scales(x[b].scales);
    // q = low | high << 2 in [0, 7] stands for q - 4: the -4 is -4 * sum_j sc_j * bsums_j.
    const __m256i offset = bsums_dot(y[b], sc);
    __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 2));
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
        const __m256i lanes = dot_u8_s8(q, load_32(y[b].qs + 32 * group));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(lanes, pick_scales(sc, 2 * group)));
      }
    }
    sum += (f16(x[b].d) * y[b].d) * static_cast<float>(hsum_epi32(sumi));
  }
  return sum;
}

static_assert(offsetof(BlockQ4_K, d) == 0 && offsetof(BlockQ4_K, dmin) == 2);  // add_q4_k_terms

float vec_dot_q4_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m128 acc = _mm_setzero_ps();    // lane 0: the d parts (x8_steps.h)
  __m128 acc_m = _mm_setzero_ps();  // lane 0: the min parts
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m256i sc;
    __m256i mins;
    q4_k_scales_mins(x[b].scales, &sc, &mins);
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < kQK_K / 64; ++c) {  // 64-element chunk: sub-blocks 2c, 2c + 1
      const __m256i packed = load_32(x[b].qs + 32 * c);
      const __m256i lo = _mm256_and_si256(packed, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
      const __m256i l_lo = dot_u8_s8(lo, load_32(y[b].qs + 64 * c));
      const __m256i l_hi = dot_u8_s8(hi, load_32(y[b].qs + 64 * c + 32));
      // |lane| <= 4 * 15 * 128 fits int16: the two sub-blocks' lanes as an int16 pair,
      // against their two scales (int32 c of sc) in one madd
      const __m256i pair = _mm256_mask_blend_epi16(0xAAAA, l_lo, _mm256_slli_epi32(l_hi, 16));
      const __m256i sc_pair = _mm256_permutexvar_epi32(_mm256_set1_epi32(c), sc);
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(pair, sc_pair));
    }
    x8::add_q4_k_terms(acc, acc_m, &x[b], y[b].d, sumi, bsums_dot(y[b], mins));
  }
  return _mm_cvtss_f32(_mm_add_ss(acc, acc_m));
}

float vec_dot_q5_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m256i sc;
    __m256i mins;
    q4_k_scales_mins(x[b].scales, &sc, &mins);
    const __m256i qh = load_32(x[b].qh);
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < kQK_K / 64; ++c) {
      const __m256i packed = load_32(x[b].qs + 32 * c);
      // qh bit 2c (low nibbles) / 2c + 1 (high nibbles) of each byte, moved to bit 4
      const __m256i h_lo = bit_to_16(qh, 2 * c);
      const __m256i h_hi = bit_to_16(qh, 2 * c + 1);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(packed, low4), h_lo);
      const __m256i hi =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(packed, 4), low4), h_hi);
      const __m256i l_lo = dot_u8_s8(lo, load_32(y[b].qs + 64 * c));
      const __m256i l_hi = dot_u8_s8(hi, load_32(y[b].qs + 64 * c + 32));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(l_lo, pick_scale(sc, 2 * c)));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(l_hi, pick_scale(sc, 2 * c + 1)));
    }
    const float d = f16(x[b].d) * y[b].d;
    const float dmin = f16(x[b].dmin) * y[b].d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(bsums_dot(y[b], mins)), acc);
  }
  return hsum(acc);
}

float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m128 acc = _mm_setzero_ps();  // lane 0
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const int8_t* sc = x[b].scales;
    // Quants are stored as q + 32: the -32 is -32 * sum_j sc_j * bsums_j.
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    __m256i sumi =
        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bsums_dot(y[b], sc16), 5));
    for (int half = 0; half < 2; ++half) {
      const __m256i ql_a = load_32(x[b].ql + 64 * half);       // elements l, l + 64
      const __m256i ql_b = load_32(x[b].ql + 64 * half + 32);  // elements l + 32, l + 96
      const __m256i qh = load_32(x[b].qh + 32 * half);         // 2 bits each of l + 32 k
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(ql_a, low4),
                          _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4)),
          _mm256_or_si256(_mm256_and_si256(ql_b, low4),
                          _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0C)), 2)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_a, 4), low4),
                          _mm256_and_si256(qh, _mm256_set1_epi8(0x30))),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_b, 4), low4),
                          _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(-64)), 2)),
      };
      const int8_t* yq = y[b].qs + 128 * half;
      for (int k = 0; k < 4; ++k) {  // elements 32k .. 32k + 31 of this half
        const __m256i lanes = dot_u8_s8(q[k], load_32(yq + 32 * k));
        const int j = 8 * half + 2 * k;  // first sub-block of 16 in this vector
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(lanes, pick_scales(sc16, j)));
      }
    }
    acc = x8::add_q6_k_term(acc, f16(x[b].d), y[b].d, sumi);  // as gemm_x8 (x8_steps.h)
  }
  return _mm_cvtss_f32(acc);
}

}  // namespace runnel::avx512
