// The prompt tiles on the GGUF layout (kernels/kernels.h TypeKernels::gemm) as templates
// over an ISA's integer steps, instantiated by avx2_gemm.cpp (maddubs + madd) and
// avx512_gemm.cpp (vpdpbusd). Include only from files compiled with at least the AVX2 flags.
//
// Why a tile: vec_dot spends most of its time per block on work that does not depend on
// the token (unpacking nibbles, sign fixes, scale conversion and the horizontal sums of its
// element lanes). Here each int32 lane of a vector belongs to one token instead of a run of
// elements. gemm_pack (avx2_gemm.cpp) packs the activations of 8 tokens once per matmul so
// that vector k of a block holds elements 4k .. 4k + 3 of every token (4 bytes per token,
// gemm_packed.h), and a weight row's 4 bytes for the same elements are broadcast to all
// lanes. One integer step then does 4 multiply-adds for each of the 8 tokens, the block's
// integer sum ends in the token's lane, and the float scaling is one vector op for all 8
// tokens. Weight bytes are unpacked once per block and reused by 8 tokens; the activation
// vectors of a block stay in registers while the rows go by.
//
// Unsigned weights: the steps multiply unsigned weight bytes by signed activation bytes, so
// 2- to 6-bit quants are used as stored (q in [0, 3], [0, 7], [0, 15], [0, 31] or [0, 63];
// Q3_K's high bit and the 5th bit of Q5_0 / Q5_1 / Q5_K merged in) and the offset (-8 for
// Q4_0, -16 for Q5_0, -4 for Q3_K, -32 for Q6_K, the mins of Q2_K / Q4_K / Q5_K) comes back
// through per-token activation sums computed at packing (Q8_K: sums per 16 elements).
// Q8_0 weights are signed: the Step has its own way with them. MXFP4 and IQ4_NL weights are
// looked up from their 4-bit codes into signed bytes and go the Q8_0 way.
//
// Integer sums per block are exact (bounds at each use and in the Steps); only the float
// accumulation order differs from ref, as in vec_dot, so results agree within its bounds.
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K and Q6_K add their block terms as the table's gemm_x8
// does
// (x8_steps.h), so a row and token give the resident product's bits.
//
// A Step (one struct per ISA, all members static) provides:
//   kMaxRows           rows per pass: 8 activation vectors and kMaxRows accumulators (two for
//                      types with min sums) must fit the vector registers
//   kQ4_1Mins          where Q4_1's and Q5_1's min terms go (x8_steps.h MinTerms)
//   dot32_q4(w, a), dot32_q5(w, a)
//                      int32 lanes (one per token) of the 32 unsigned weight bytes at w
//                      (q <= 15, q <= 31) against a[0 .. 7], w[4k .. 4k + 3] broadcast to a[k]
//   dot32_q4_scaled(w, a, s), dot32_q5_scaled(w, a, s)
//                      the same times the integer scale s
//   dot32_q6(w, a, s0, s1)
//                      32 weight bytes (q <= 63): elements 0-15 times s0 plus 16-31 times s1
//   dot16_q3_scaled(w, a, s)  (Q2_K / Q3_K tiles only)
//                      16 weight bytes (q <= 7) against a[0 .. 3], times s
//   unpack_q5(qs, qh)  a legacy Q5 block's 32 quants in [0, 31], element order
//   add_fifth_bit(v, qh, bit)
//                      v + 16 in the bytes whose bit `bit` of qh is set (v <= 15)
//   K4Scale, K4Min, unpack_k4(packed, sc, m), k4_min(m_j)
//                      a Q4_K / Q5_K super-block's 8 scales sc[j] and mins m[j] (of the types
//                      K4Scale, K4Min) as the steps read them fastest; k4_min: min m_j as the
//                      int16 pair (m, m) in every lane
//   q8_0_acts(p, a), signed_acts(q, a), dot32_q8_0(w, a)
//                      Q8_0: the activation vectors of packed block p (or of the 8 k-steps
//                      at q, IQ4_XS's sub-blocks in a Q8_K block) as dot32_q8_0 takes them,
//                      and the int32 lanes of signed weights w (|w| <= 127, or Q8_0's
//                      -128) against them
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/gemm_packed.h"
#include "kernels/x86/lut4_dots_impl.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::gemm {
// Internal linkage: the AVX2 and AVX-512 files compile these with different flags (see
// avx2_common.h).
namespace {

using avx2::f16;

inline __m256i load_32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Four bytes at p, broadcast to every int32 lane (a load-port broadcast, no shuffle).
inline __m256i bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// The NR weight rows of a tile (w_stride bytes apart): x[r][b] is block b of row r.
template <typename Block, int NR>
struct WeightRows {
  const Block* rows[NR];
  WeightRows(const void* w, size_t w_stride) {
    for (int r = 0; r < NR; ++r) {
      rows[r] = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) +
                                               static_cast<size_t>(r) * w_stride);
    }
  }
  const Block* operator[](int r) const { return rows[r]; }
};

// acc[r] lane c is row r, token c: out[c * out_stride + r] for r < nr, c < nc.
inline void store_tile(const __m256* acc, int nr, int nc, float* out, size_t out_stride) {
  alignas(32) float lanes[kGemmCols];
  for (int r = 0; r < nr; ++r) {
    _mm256_store_ps(lanes, acc[r]);
    for (int c = 0; c < nc; ++c) out[static_cast<size_t>(c) * out_stride + r] = lanes[c];
  }
}

// sum_g scale_g * bsums_g over the 16 groups of 16 of super-block p, as int32 lanes: one
// madd per pair of groups (exact: |scale| <= 128, |bsums| <= 2032).
template <typename Scale>
inline __m256i scaled_bsums(const PackedQ8_K& p, const Scale* scale) {
  __m256i s = _mm256_setzero_si256();
  for (int pg = 0; pg < 8; ++pg) {
    const int32_t pair = static_cast<int32_t>(static_cast<uint16_t>(scale[2 * pg])) |
                         static_cast<int32_t>(static_cast<uint32_t>(scale[2 * pg + 1]) << 16);
    s = _mm256_add_epi32(s, _mm256_madd_epi16(load_32(p.bsums[pg]), _mm256_set1_epi32(pair)));
  }
  return s;
}

// The float step of one block for rows x against the packed d: acc + (d_a * d_w) * lanes.
template <typename Block>
inline __m256 add_block(__m256 acc, __m256 da, const Block& x, __m256i lanes) {
  const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x.d)));
  return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc);
}

// Q4_0, Q4_1, Q5_0, Q5_1 (Block) over Step's dot32_q4 / dot32_q5 / unpack_q5 and its
// kQ4_1Mins: 32 unsigned quants a block; Q4_0's -8 and Q5_0's -16 as 8 (16) * sum(a) from
// the packed sums, Q4_1's and Q5_1's min terms m * s from the packed s (Q8_1).
template <class Step, typename Block, int NR>
void legacy_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc, float* out,
                 size_t out_stride) {
  constexpr bool kQ5 =
      std::is_same_v<Block, ref::BlockQ5_0> || std::is_same_v<Block, ref::BlockQ5_1>;
  constexpr bool kMins =
      std::is_same_v<Block, ref::BlockQ4_1> || std::is_same_v<Block, ref::BlockQ5_1>;
  constexpr bool kOwnSum = kMins && Step::kQ4_1Mins == x8::MinTerms::kOwnSum;
  using Packed = std::conditional_t<kMins, PackedQ8_1, PackedQ8_0>;
  const auto* p = static_cast<const Packed*>(packed);
  const WeightRows<Block, NR> x(w, w_stride);
  __m256 acc[NR];
  [[maybe_unused]] __m256 acc_m[NR];  // kOwnSum: the min terms, as gemm_x8 keeps them
  for (int r = 0; r < NR; ++r) acc[r] = acc_m[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][32];
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      __m256i v;
      if constexpr (kQ5) {
        v = Step::unpack_q5(x[r][b].qs, x[r][b].qh);
      } else {
        v = avx2::unpack_nibbles_16(x[r][b].qs);
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]), v);
    }
    for (int r = 0; r < NR; ++r) {
      const __m256i lanes = kQ5 ? Step::dot32_q5(q[r], a) : Step::dot32_q4(q[r], a);
      if constexpr (kMins) {
        acc[r] = add_block(acc[r], da, x[r][b], lanes);
        const __m256 min_term = _mm256_set1_ps(f16(x[r][b].m));
        __m256& sum = kOwnSum ? acc_m[r] : acc[r];
        sum = _mm256_fmadd_ps(_mm256_loadu_ps(p[b].s), min_term, sum);  // m * s
      } else {
        // dot(q - 8, a) = dot(q, a) - 8 * sum(a) (16 for Q5_0)
        const __m256i offset = _mm256_slli_epi32(load_32(p[b].sum), kQ5 ? 4 : 3);
        acc[r] = add_block(acc[r], da, x[r][b], _mm256_sub_epi32(lanes, offset));
      }
    }
  }
  if constexpr (kOwnSum) {
    for (int r = 0; r < NR; ++r) acc[r] = _mm256_add_ps(acc[r], acc_m[r]);
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q8_0 (Block = ref::BlockQ8_0) over Step's q8_0_acts / dot32_q8_0: signed weights.
template <class Step, typename Block, int NR>
void q8_0_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc, float* out,
               size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_0*>(packed);
  const WeightRows<Block, NR> x(w, w_stride);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    Step::q8_0_acts(p[b], a);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r)
      acc[r] = add_block(acc[r], da, x[r][b], Step::dot32_q8_0(x[r][b].qs, a));
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// MXFP4 and IQ4_NL (Block) over Step's q8_0_acts / dot32_q8_0: each row's block is looked
// up into 32 signed weights once (lut4::decode32, |w| <= 127) and then dotted as Q8_0
// weights; the scale is the block's own (E8M0's half or f16), times the token's d.
template <class Step, typename Block, int NR>
void lut4_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc, float* out,
               size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_0*>(packed);
  const WeightRows<Block, NR> x(w, w_stride);
  const __m256i table = lut4::table_of(x[0]);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) int8_t q[NR][32];
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    Step::q8_0_acts(p[b], a);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]), lut4::decode32(table, x[r][b].qs));
    }
    for (int r = 0; r < NR; ++r) {
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(lut4::scale_of(x[r][b])));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(Step::dot32_q8_0(q[r], a)), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// IQ4_XS (Block = ref::BlockIq4Xs) over Step's signed_acts / dot32_q8_0: per sub-block of
// 32, each row's codes looked up into signed bytes and dotted as Q8_0 weights against the
// packed quants, times the sub-block's 6-bit scale (minus 32) in integers (|lane| <=
// 8 * 32 * 32 * 127 * 127 < 2^28); one float scale per super-block.
template <class Step, typename Block, int NR>
void iq4_xs_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc, float* out,
                 size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const WeightRows<Block, NR> x(w, w_stride);
  const __m256i table = lut4::table_of(x[0]);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) int8_t q[NR][32];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) isum[r] = _mm256_setzero_si256();
    for (int s = 0; s < kQK_K / 32; ++s) {
      __m256i a[8];
      Step::signed_acts(p[b].q + 8 * s, a);
      for (int r = 0; r < NR; ++r) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]),
                           lut4::decode32(table, x[r][b].qs + 16 * s));
      }
      for (int r = 0; r < NR; ++r) {
        const __m256i scale = _mm256_set1_epi32(ref::iq4_xs_scale(x[r][b], s));
        isum[r] = _mm256_add_epi32(isum[r], _mm256_mullo_epi32(Step::dot32_q8_0(q[r], a), scale));
      }
    }
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) acc[r] = add_block(acc[r], da, x[r][b], isum[r]);
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q2_K and Q3_K (Block) over Step's dot16_q3_scaled. Both share the 2-bit layout: in
// 128-element half h, bits 2g .. 2g + 1 of qs[32h + l] are element 128h + 32g + l, i.e.
// vector g of the half (shifted by 2g) holds groups 8h + 2g and 8h + 2g + 1 in element
// order. Q3_K adds bit 4h + g of hmask[l] as the quant's value-4 bit (so q + 4 in [0, 7], as
// stored). Both then take 16-element groups with a scale each, against packed quants
// 32h + 8g .. 32h + 8g + 7.
//   Q2_K: x = d * (scales[j] & 15) * q - dmin * (scales[j] >> 4), q in [0, 3]; the min term
//   is dmin * sum_j m_j * bsums_j.
//   Q3_K: x = d * s_j * (q - 4), s_j in [-32, 31]; the -4 comes back as
//   -4 * sum_j s_j * bsums_j.
template <class Step, typename Block, int NR>
void k2_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc, float* out,
             size_t out_stride) {
  constexpr bool kQ3 = std::is_same_v<Block, ref::BlockQ3_K>;
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const WeightRows<Block, NR> x(w, w_stride);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][128];
  const __m256i low2 = _mm256_set1_epi8(0x03);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int sc[NR][16];
    [[maybe_unused]] int m[NR][16];
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) {
      if constexpr (kQ3) {
        for (int j = 0; j < 16; ++j) sc[r][j] = ref::q3_k_scale(x[r][b].scales, j);
        // |lane| <= 4 * 16 * 32 * 2048 = 2^22
        isum[r] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                   _mm256_slli_epi32(scaled_bsums(p[b], sc[r]), 2));
      } else {
        for (int j = 0; j < 16; ++j) {
          sc[r][j] = x[r][b].scales[j] & 0x0F;
          m[r][j] = x[r][b].scales[j] >> 4;
        }
        isum[r] = _mm256_setzero_si256();
      }
    }
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < NR; ++r) {
        const __m256i qs = load_32(x[r][b].qs + 32 * h);
        for (int g = 0; g < 4; ++g) {
          __m256i v = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * g), low2);
          if constexpr (kQ3) {
            const __m256i sel = _mm256_set1_epi8(static_cast<char>(1 << (4 * h + g)));
            const __m256i hm = load_32(x[r][b].hmask);
            v = _mm256_or_si256(v,
                                _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, sel), sel),
                                                 _mm256_set1_epi8(0x04)));
          }
          _mm256_store_si256(reinterpret_cast<__m256i*>(q[r] + 32 * g), v);
        }
      }
      for (int g = 0; g < 4; ++g) {
        __m256i a[8];
        for (int i = 0; i < 8; ++i) a[i] = load_32(p[b].q[32 * h + 8 * g + i]);
        const int j = 8 * h + 2 * g;
        for (int r = 0; r < NR; ++r) {
          // per group |lane| <= 16 * 7 * 127 * 32, over 16 groups: < 2^23
          for (int grp = 0; grp < 2; ++grp) {
            const uint8_t* qg = q[r] + 32 * g + 16 * grp;
            isum[r] =
                _mm256_add_epi32(isum[r], Step::dot16_q3_scaled(qg, a + 4 * grp, sc[r][j + grp]));
          }
        }
      }
    }
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      acc[r] = add_block(acc[r], da, x[r][b], isum[r]);
      if constexpr (!kQ3) {
        const __m256i msum = scaled_bsums(p[b], m[r]);  // |lane| <= 16 * 15 * 2048
        const __m256 dmin = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].dmin)));
        acc[r] = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(msum), acc[r]);
      }
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q4_K and Q5_K (Block) over Step's dot32_q4_scaled / dot32_q5_scaled, K4Scale / K4Min
// and add_fifth_bit: per 64-element chunk c, low nibbles are sub-block 2c and high nibbles
// 2c + 1, with 6-bit scales and mins per sub-block; Q5_K's element 64c + l takes bit 2c of
// qh[l] as its 5th bit and element 64c + 32 + l bit 2c + 1. The min term is
// dmin * sum_s m_s * (the token's sum over sub-block s), from the packed bsums, in a sum of
// its own (as Q4_K's gemm_x8 keeps it, x8_steps.h).
template <class Step, typename Block, int NR>
void k4_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc, float* out,
             size_t out_stride) {
  constexpr bool kFifthBit = std::is_same_v<Block, ref::BlockQ5_K>;
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const WeightRows<Block, NR> x(w, w_stride);
  __m256 acc[NR];
  __m256 acc_m[NR];  // the min parts
  for (int r = 0; r < NR; ++r) acc[r] = acc_m[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][64];
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    alignas(32) typename Step::K4Scale sc[NR][8];
    alignas(32) typename Step::K4Min m[NR][8];
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) {
      Step::unpack_k4(x[r][b].scales, sc[r], m[r]);
      isum[r] = _mm256_setzero_si256();
    }
    for (int c = 0; c < kQK_K / 64; ++c) {
      for (int r = 0; r < NR; ++r) {
        const __m256i packed_q = load_32(x[r][b].qs + 32 * c);
        __m256i lo = _mm256_and_si256(packed_q, low4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed_q, 4), low4);
        if constexpr (kFifthBit) {
          const __m256i qh = load_32(x[r][b].qh);
          lo = Step::add_fifth_bit(lo, qh, 2 * c);
          hi = Step::add_fifth_bit(hi, qh, 2 * c + 1);
        }
        _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]), lo);
        _mm256_store_si256(reinterpret_cast<__m256i*>(q[r] + 32), hi);
      }
      for (int h = 0; h < 2; ++h) {
        __m256i a[8];
        for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[16 * c + 8 * h + k]);
        for (int r = 0; r < NR; ++r) {
          // |lane| <= 32 * 31 * 127 per sub-block; times a 6-bit scale, over 8: < 2^26
          const int scale = sc[r][2 * c + h];
          const __m256i lanes = kFifthBit ? Step::dot32_q5_scaled(q[r] + 32 * h, a, scale)
                                          : Step::dot32_q4_scaled(q[r] + 32 * h, a, scale);
          isum[r] = _mm256_add_epi32(isum[r], lanes);
        }
      }
    }
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      __m256i msum = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        // both 16-element groups of sub-block j take its min
        msum = _mm256_add_epi32(msum,
                                _mm256_madd_epi16(load_32(p[b].bsums[j]), Step::k4_min(m[r][j])));
      }
      // d and dmin together: converting dmin after the first FMA made the AVX2 tile 4% slower
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      const __m256 dmin = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].dmin)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum[r]), acc[r]);
      // fma(dmin, float(-M)), the operands Q4_K's gemm_x8 has
      const __m256i neg_msum = _mm256_sub_epi32(_mm256_setzero_si256(), msum);
      acc_m[r] = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(neg_msum), acc_m[r]);
    }
  }
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_add_ps(acc[r], acc_m[r]);
  store_tile(acc, NR, nc, out, out_stride);
}

// Q6_K (Block = ref::BlockQ6_K) over Step's dot32_q6: 128-element halves unpacked by
// avx2::unpack_q6_k_half; quants are stored as q + 32 in [0, 63], and the -32 comes back as
// 32 * sum_g sc_g * bsums_g.
template <class Step, typename Block, int NR>
void q6_k_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc, float* out,
               size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const WeightRows<Block, NR> x(w, w_stride);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][128];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) {
      isum[r] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                 _mm256_slli_epi32(scaled_bsums(p[b], x[r][b].scales), 5));
    }
    for (int half = 0; half < 2; ++half) {
      for (int r = 0; r < NR; ++r) {
        __m256i v[4];
        avx2::unpack_q6_k_half(x[r][b].ql + 64 * half, x[r][b].qh + 32 * half, v);
        for (int k = 0; k < 4; ++k)
          _mm256_store_si256(reinterpret_cast<__m256i*>(q[r] + 32 * k), v[k]);
      }
      for (int k = 0; k < 4; ++k) {  // elements 32k .. 32k + 31 of the half: groups g, g + 1
        __m256i a[8];
        for (int i = 0; i < 8; ++i) a[i] = load_32(p[b].q[32 * half + 8 * k + i]);
        const int g = 8 * half + 2 * k;
        for (int r = 0; r < NR; ++r) {
          const int8_t* sc = x[r][b].scales;
          isum[r] = _mm256_add_epi32(isum[r], Step::dot32_q6(q[r] + 32 * k, a, sc[g], sc[g + 1]));
        }
      }
    }
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) acc[r] = add_block(acc[r], da, x[r][b], isum[r]);
  }
  store_tile(acc, NR, nc, out, out_stride);
}

using RowsFn = void (*)(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                        float* out, size_t out_stride);

// The row count of table entry nr: capped at kMaxRows (run_passes never asks for more).
constexpr int capped(int nr, int max_rows) {
  return std::min(nr, max_rows);
}

// nr rows in passes of up to kMaxRows over the same packed group, each pass by the tile
// instantiated for its row count (by_rows[rows - 1]) so that its accumulators stay in
// registers.
template <int kMaxRows>
inline void run_passes(const RowsFn (&by_rows)[kGemmRows], int64_t n, const void* w,
                       size_t w_stride, int nr, const void* packed, int nc, float* out,
                       size_t out_stride) {
  for (int r = 0; r < nr; r += kMaxRows) {
    by_rows[std::min(nr - r, kMaxRows) - 1](
        n, static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * w_stride, w_stride, packed, nc,
        out + r, out_stride);
  }
}

}  // namespace
}  // namespace runnel::gemm

// Defines the entry point gemm_<type> (kernels.h GemmFn) in the namespace of the ISA file
// that expands it: tile template `tile` for weight block `Block` over that file's `Step`.
#define RUNNEL_GEMM_DEFINE_TILE(type, tile, Block, Step)                                          \
  void gemm_##type(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc, \
                   float* out, size_t out_stride) {                                               \
    constexpr int kMax = Step::kMaxRows;                                                          \
    static constexpr gemm::RowsFn kByRows[kGemmRows] = {                                          \
        gemm::tile<Step, Block, 1>,                                                               \
        gemm::tile<Step, Block, gemm::capped(2, kMax)>,                                           \
        gemm::tile<Step, Block, gemm::capped(3, kMax)>,                                           \
        gemm::tile<Step, Block, gemm::capped(4, kMax)>,                                           \
        gemm::tile<Step, Block, gemm::capped(5, kMax)>,                                           \
        gemm::tile<Step, Block, gemm::capped(6, kMax)>,                                           \
        gemm::tile<Step, Block, gemm::capped(7, kMax)>,                                           \
        gemm::tile<Step, Block, gemm::capped(8, kMax)>};                                          \
    gemm::run_passes<kMax>(kByRows, n, w, w_stride, nr, packed, nc, out, out_stride);             \
  }
// The tiles both x86 tables have (Q2_K and Q3_K: AVX2's only, see avx2_gemm.cpp).
#define RUNNEL_GEMM_DEFINE_TILES(Step)                              \
  RUNNEL_GEMM_DEFINE_TILE(q4_0, legacy_rows, ref::BlockQ4_0, Step)  \
  RUNNEL_GEMM_DEFINE_TILE(q4_1, legacy_rows, ref::BlockQ4_1, Step)  \
  RUNNEL_GEMM_DEFINE_TILE(q5_0, legacy_rows, ref::BlockQ5_0, Step)  \
  RUNNEL_GEMM_DEFINE_TILE(q5_1, legacy_rows, ref::BlockQ5_1, Step)  \
  RUNNEL_GEMM_DEFINE_TILE(q8_0, q8_0_rows, ref::BlockQ8_0, Step)    \
  RUNNEL_GEMM_DEFINE_TILE(q4_k, k4_rows, ref::BlockQ4_K, Step)      \
  RUNNEL_GEMM_DEFINE_TILE(q5_k, k4_rows, ref::BlockQ5_K, Step)      \
  RUNNEL_GEMM_DEFINE_TILE(q6_k, q6_k_rows, ref::BlockQ6_K, Step)    \
  RUNNEL_GEMM_DEFINE_TILE(mxfp4, lut4_rows, ref::BlockMxfp4, Step)  \
  RUNNEL_GEMM_DEFINE_TILE(iq4_nl, lut4_rows, ref::BlockIq4Nl, Step) \
  RUNNEL_GEMM_DEFINE_TILE(iq4_xs, iq4_xs_rows, ref::BlockIq4Xs, Step)
