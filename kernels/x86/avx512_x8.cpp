// AVX-512 VNNI instantiation of the x8 products (x8_gemm_impl.h): vpdpbusd steps (no
// int16 limits, one instruction per 4 byte products), and Q4_K's 512-bit product.
#include "kernels/x86/x8.h"

// g++ 12 warns inside its own 512-bit intrinsics that their _mm512_undefined_* placeholder
// is read uninitialized (GCC PR 105593, fixed in 13); the values are never used.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/x86/x8_gemm_impl.h"

namespace runnel::avx512 {
namespace {

struct VnniDot {
  static constexpr x8::MinTerms kQ4_1Mins = x8::kAvx512Q4_1Mins;  // x8_steps.h
  static __m256i sum8_small(const __m256i* w, const int8_t* a) {
    __m256i s0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w[0], x8::bcast4(a));
    __m256i s1 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w[1], x8::bcast4(a + 4));
    for (int k = 2; k < 8; k += 2) {
      s0 = _mm256_dpbusd_epi32(s0, w[k], x8::bcast4(a + 4 * k));
      s1 = _mm256_dpbusd_epi32(s1, w[k + 1], x8::bcast4(a + 4 * k + 4));
    }
    return _mm256_add_epi32(s0, s1);
  }
  // No int16 stage: 5-bit quants take the same steps.
  static __m256i sum8_q5(const __m256i* w, const int8_t* a) { return sum8_small(w, a); }
  static __m256i dot4(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
  }
  // IQ4_XS: the 8 rows' sub-block scales as int32 lanes, applied once per sub-block.
  static __m256i lane_scales(__m128i sc8) { return _mm256_cvtepi8_epi32(sc8); }
  static __m256i sum8_signed_scaled(const __m256i* wabs, const __m256i* w, const int8_t* a, __m256i scale) {
    __m256i s0 = _mm256_setzero_si256();
    __m256i s1 = _mm256_setzero_si256();
    for (int k = 0; k < 8; k += 2) {
      s0 = _mm256_dpbusd_epi32(s0, wabs[k], _mm256_sign_epi8(x8::bcast4(a + 4 * k), w[k]));
      s1 = _mm256_dpbusd_epi32(s1, wabs[k + 1], _mm256_sign_epi8(x8::bcast4(a + 4 * k + 4), w[k + 1]));
    }
    return _mm256_mullo_epi32(_mm256_add_epi32(s0, s1), scale);
  }
};

}  // namespace
}  // namespace runnel::avx512

namespace runnel::x8 {
namespace {

inline __m512i bcast8(const void* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm512_set1_epi64(v);
}

// Q4_K x Q8_K on 512 bits (BlockQ4_Kx8: row r in int32 lanes 2r, 2r + 1). Per sub-block,
// 4 vpdpbusd steps of nibbles against broadcast 8-byte activation pieces leave at most
// 16 * 15 * 127 = 30480 per lane, so the lanes of sub-blocks 2c and 2c + 1 merge into
// int16 pairs and one vpdpwssd applies both scales (pair sums of a block < 2^25). High
// nibbles stay in place (16 x their value, one AND instead of a shift and an AND a vector)
// and their sums shift left by 12, not 16, into the pairs' upper halves. The
// mins: vpdpwssd of the widened min pairs against -(the Q8_K sums per 32), |B| <= 4064,
// which prepare_q4_k makes once a product (a_sums: 8 int16 a block).
// Per block a row's scale part folds into lane 2r and its min part into lane 2r + 1, so
// the one vcvtph2ps of the (d, dmin) pairs scales both; the two lanes add up at the end.
template <class Dot, int NC>
void gemm_q4_k(int64_t n, const void* group, const void* a, size_t a_stride,
               const int32_t* a_sums, float* out, size_t out_stride) {
  const auto* g = static_cast<const BlockQ4_Kx8*>(group);
  const int64_t n_blocks = n / kQK_K;
  const auto* neg_sums = reinterpret_cast<const int16_t*>(a_sums);  // [NC][n_blocks][8]
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  // lanes 2r, 2r + 1 <- int32 r (chunks 0, 2 of a scale pair) or 8 + r (chunks 1, 3)
  const __m512i dup_rows[2] = {
      _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0),
      _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8)};
  __m512 acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    if constexpr (NC >= 2) prefetch_ahead<8>(g, b);
    const BlockQ4_Kx8& blk = g[b];
    const ref::BlockQ8_K* ab[NC];
    __m512i isum[NC];
    __m512i msum[NC];
    const __m512i mins0 = _mm512_cvtepu8_epi16(load_256(blk.m[0]));
    const __m512i mins1 = _mm512_cvtepu8_epi16(load_256(blk.m[1]));
    for (int c = 0; c < NC; ++c) {
      ab[c] = &token_blocks<ref::BlockQ8_K>(a, a_stride, c)[b];
      const int16_t* sums = neg_sums + (c * n_blocks + b) * 8;
      msum[c] = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mins0, bcast8(sums));
      msum[c] = _mm512_dpwssd_epi32(msum[c], mins1, bcast8(sums + 4));
      isum[c] = _mm512_setzero_si512();
    }
    const __m512i scales[2] = {_mm512_cvtepu8_epi16(load_256(blk.sc[0])),
                               _mm512_cvtepu8_epi16(load_256(blk.sc[2]))};
    for (int ch = 0; ch < 4; ++ch) {  // 64 elements: sub-blocks 2ch (low nibbles), 2ch + 1 (high)
      const __m512i sc = _mm512_permutexvar_epi32(dup_rows[ch % 2], scales[ch / 2]);
      __m512i w_lo[4];
      __m512i w_hi[4];
      for (int k = 0; k < 4; ++k) {
        const __m512i packed = _mm512_loadu_si512(blk.qs[ch][k]);
        w_lo[k] = _mm512_and_si512(packed, low4);
        w_hi[k] = _mm512_andnot_si512(low4, packed);  // 16 x the high nibbles
      }
      for (int c = 0; c < NC; ++c) {
        const int8_t* aq = ab[c]->qs + 64 * ch;
        __m512i lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w_lo[0], bcast8(aq));
        __m512i hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w_hi[0], bcast8(aq + 32));
        for (int k = 1; k < 4; ++k) {
          lo = _mm512_dpbusd_epi32(lo, w_lo[k], bcast8(aq + 8 * k));
          hi = _mm512_dpbusd_epi32(hi, w_hi[k], bcast8(aq + 32 + 8 * k));
        }
        const __m512i pair = _mm512_mask_blend_epi16(0xAAAAAAAA, lo, _mm512_slli_epi32(hi, 12));
        isum[c] = _mm512_dpwssd_epi32(isum[c], pair, sc);
      }
    }
    const __m512 dm = _mm512_cvtph_ps(load_256(blk.dm));
    for (int c = 0; c < NC; ++c) {
      const __m512i folded =
          _mm512_mask_blend_epi32(0xAAAA, _mm512_add_epi32(isum[c], _mm512_srli_epi64(isum[c], 32)),
                                  _mm512_add_epi32(msum[c], _mm512_slli_epi64(msum[c], 32)));
      acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(dm, _mm512_set1_ps(ab[c]->d)),
                               _mm512_cvtepi32_ps(folded), acc[c]);
    }
  }
  const __m512i evens = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
  for (int c = 0; c < NC; ++c) {
    const __m512 rows =
        _mm512_add_ps(_mm512_permutexvar_ps(evens, acc[c]), _mm512_permutexvar_ps(odds, acc[c]));
    _mm256_storeu_ps(out + static_cast<size_t>(c) * out_stride, _mm512_castps512_ps256(rows));
  }
}

// c ? a : b, bit by bit
inline __m512i select_bits(__m512i c, __m512i a, __m512i b) {
  return _mm512_ternarylogic_epi32(c, a, b, 0xCA);
}

// The 8 bytes at k of quarter i of half h of BlockQ6_Kx8, each row's, as q + 32 in [0, 63]:
// quarter 3's bits 2m, 2m + 1 sit in bits 6-7 of quarter m's bytes, and two selects, an AND
// and a 16-bit shift (no byte shift on x86) bring them down.
inline __m512i q6_quarter(const BlockQ6_Kx8& blk, int h, int k, int i) {
  if (i < 3) return _mm512_and_si512(_mm512_loadu_si512(blk.q[h][i][k]), _mm512_set1_epi8(0x3F));
  const __m512i t =
      select_bits(_mm512_set1_epi8(static_cast<char>(0xC0)), _mm512_loadu_si512(blk.q[h][2][k]),
                  _mm512_srli_epi16(_mm512_loadu_si512(blk.q[h][1][k]), 2));
  const __m512i u = select_bits(_mm512_set1_epi8(static_cast<char>(0xF0)), t,
                                _mm512_srli_epi16(_mm512_loadu_si512(blk.q[h][0][k]), 4));
  return _mm512_srli_epi16(_mm512_and_si512(u, _mm512_set1_epi8(static_cast<char>(0xFC))), 2);
}

// Q6_K x Q8_K on 512 bits over pair-order groups (x8_layout.h: lane 2r holds 4 elements of
// row r's group 2p, lane 2r + 1 the same 4 of group 2p + 1), quants as q + 32 in [0, 63],
// the activations as prepare_q6_k leaves them (a_sums). Per pair p a column's lanes start at
// -32 x the group sums and take 4 vpdpbusd, which leaves each lane the exact sum of its
// group's 16 products with q (|.| <= 16 * 32 * 128), and one vpmulld by the lanes' int8
// scales (from the 16 scale bytes as they lie) weighs both groups. A row's lanes fold into
// lane 2r per block, where the zero-extended f16 d lands.
template <class Dot, int NC>
void gemm_q6_k(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,
               float* out, size_t out_stride) {
  const auto* g = static_cast<const BlockQ6_Kx8*>(group);
  const int64_t n_blocks = n / kQK_K;
  const auto* prepared = reinterpret_cast<const int8_t*>(a_sums);
  const size_t prepared_block = avx512::kQ6KPreparedBlockInts * sizeof(int32_t);  // bytes
  const size_t prepared_row = static_cast<size_t>(n_blocks) * prepared_block;
  __m512 acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    prefetch_ahead(g, b);
    const BlockQ6_Kx8& blk = g[b];
    const int8_t* ap[NC];  // the block's prepared quants; its -32 x sums 256 bytes on
    __m512i isum[NC];
    for (int c = 0; c < NC; ++c) {
      ap[c] = prepared + c * prepared_row + b * prepared_block;
      isum[c] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 4; ++i) {
        const int p = 4 * h + i;
        const __m512i sc =
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales[p])));
        __m512i w[4];
        for (int k = 0; k < 4; ++k) w[k] = q6_quarter(blk, h, k, i);
        for (int c = 0; c < NC; ++c) {
          __m512i t = bcast8(ap[c] + kQK_K + 8 * p);
          for (int k = 0; k < 4; ++k) t = _mm512_dpbusd_epi32(t, w[k], bcast8(ap[c] + 32 * p + 8 * k));
          isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(t, sc));
        }
      }
    }
    // lane 2r: d of row r, lane 2r + 1: 0 (an f16 zero), so the odd lanes' sums drop out
    const __m512 dw = _mm512_cvtph_ps(
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d))));
    for (int c = 0; c < NC; ++c) {
      const float d = token_blocks<ref::BlockQ8_K>(a, a_stride, c)[b].d;
      const __m512i folded = _mm512_add_epi32(isum[c], _mm512_srli_epi64(isum[c], 32));
      acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(d)), _mm512_cvtepi32_ps(folded), acc[c]);
    }
  }
  const __m512i evens = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 12, 10, 8, 6, 4, 2, 0);
  for (int c = 0; c < NC; ++c) {
    _mm256_storeu_ps(out + static_cast<size_t>(c) * out_stride,
                     _mm512_castps512_ps256(_mm512_permutexvar_ps(evens, acc[c])));
  }
}

}  // namespace
}  // namespace runnel::x8

namespace runnel::avx512 {

RUNNEL_X8_DEFINE_PRODUCTS(VnniDot)

void prepare_q4_k(int64_t n, const void* a, int32_t* out) {
  const auto* blocks = static_cast<const ref::BlockQ8_K*>(a);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    // -B_s (s < 8) as int16: the negated sums of sub-blocks of 32
    const __m256i b32 = _mm256_madd_epi16(x8::load_256(blocks[b].bsums), _mm256_set1_epi16(-1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + b * kQ4KPreparedBlockInts),
                     _mm_packs_epi32(_mm256_castsi256_si128(b32), _mm256_extracti128_si256(b32, 1)));
  }
}

void prepare_q6_k(int64_t n, const void* a, int32_t* out) {
  // dwords of each 32 quants in the order 0, 4, 1, 5, 2, 6, 3, 7: groups 2p and 2p + 1 interleaved
  const __m512i pair_order = _mm512_set_epi32(15, 11, 14, 10, 13, 9, 12, 8, 7, 3, 6, 2, 5, 1, 4, 0);
  const auto* blocks = static_cast<const ref::BlockQ8_K*>(a);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t* dst = out + b * kQ6KPreparedBlockInts;
    for (int q = 0; q < 4; ++q) {
      _mm512_storeu_si512(dst + 16 * q,
                          _mm512_permutexvar_epi32(pair_order, _mm512_loadu_si512(blocks[b].qs + 64 * q)));
    }
    const __m512i sums = _mm512_cvtepi16_epi32(x8::load_256(blocks[b].bsums));
    _mm512_storeu_si512(dst + 64, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 5)));
  }
}

}  // namespace runnel::avx512
