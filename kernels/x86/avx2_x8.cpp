// AVX2 instantiation of the x8 products (x8_gemm_impl.h): maddubs steps. For 4-bit
// weights 8 steps add up in int16 (8 * 2 * 15 * 127 = 30480) before one madd widens them,
// for 5-bit ones 4.
#include "kernels/x86/x8.h"
#include "kernels/x86/x8_gemm_impl.h"

namespace runnel::avx2 {
namespace {

struct MaddubsDot {
  static constexpr x8::MinTerms kQ4_1Mins = x8::kAvx2Q4_1Mins;  // x8_steps.h
  // sum over k < 8 of w[k] . (the 4 bytes at a + 4k), per int32 lane; w <= 15.
  static __m256i sum8_small(const __m256i* w, const int8_t* a) {
    __m256i s = _mm256_maddubs_epi16(w[0], x8::bcast4(a));
    for (int k = 1; k < 8; ++k) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w[k], x8::bcast4(a + 4 * k)));
    return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
  }
  // The same for w <= 31 (Q5_0 / Q5_1): two int16 chains of 4 steps, <= 4 * 2 * 31 * 128.
  static __m256i sum8_q5(const __m256i* w, const int8_t* a) {
    __m256i s0 = _mm256_maddubs_epi16(w[0], x8::bcast4(a));
    __m256i s1 = _mm256_maddubs_epi16(w[4], x8::bcast4(a + 16));
    for (int k = 1; k < 4; ++k) {
      s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(w[k], x8::bcast4(a + 4 * k)));
      s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(w[4 + k], x8::bcast4(a + 16 + 4 * k)));
    }
    const __m256i ones = _mm256_set1_epi16(1);
    return _mm256_add_epi32(_mm256_madd_epi16(s0, ones), _mm256_madd_epi16(s1, ones));
  }
  // acc + u . s per int32 lane (4 byte products), exact while 2 * u * |s| <= 32767.
  static __m256i dot4(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
  // IQ4_XS: the 8 rows' sub-block scales (8 int8) as the int16 pair (s, s) in lane r, so
  // that the madd widening each step's pair sums also applies the scale.
  static __m256i lane_scales(__m128i sc8) {
    const __m256i s = _mm256_cvtepi8_epi32(sc8);
    return _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(s, 16));
  }
  // x8_gemm_impl.h's sum8_signed times the lanes' scales: pair sums <= 2 * 127 * 127 (never
  // saturated), times |s| <= 32 per madd.
  static __m256i sum8_signed_scaled(const __m256i* wabs, const __m256i* w, const int8_t* a, __m256i scale) {
    __m256i lanes = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
      const __m256i pairs = _mm256_maddubs_epi16(wabs[k], _mm256_sign_epi8(x8::bcast4(a + 4 * k), w[k]));
      lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(pairs, scale));
    }
    return lanes;
  }
};

}  // namespace
}  // namespace runnel::avx2

namespace runnel::x8 {
namespace {

inline __m256i bcast8(const void* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi64x(v);
}

inline __m128i load_128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

// Q4_K x Q8_K on 256 bits: BlockQ4_Kx8's 64-byte rows of 8 as two halves of 4 rows (row r
// in int32 lanes 2r, 2r + 1 of its half), one half at a time so that a token's sums stay
// in registers. Per sub-block 4 maddubs steps add up in int16 (<= 4 * 2 * 15 * 127) and one
// madd widens them (<= 30480 per lane); the rest follows the 512-bit version (avx512_x8.cpp)
// with madd + add for vpdpwssd.
template <class Dot, int NC>
void gemm_q4_k(int64_t n, const void* group, const void* a, size_t a_stride,
               const int32_t* /*a_sums*/, float* out, size_t out_stride) {
  const auto* g = static_cast<const BlockQ4_Kx8*>(group);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i dup_rows[2] = {_mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3),
                               _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7)};
  __m256 acc[NC][2];
  for (int c = 0; c < NC; ++c) acc[c][0] = acc[c][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    if constexpr (NC >= 2) prefetch_ahead<8>(g, b);
    const BlockQ4_Kx8& blk = g[b];
    const ref::BlockQ8_K* ab[NC];
    __m256i neg_b[NC][2];  // -B_s as int16, broadcast: s = 0 .. 3, s = 4 .. 7
    for (int c = 0; c < NC; ++c) {
      ab[c] = &token_blocks<ref::BlockQ8_K>(a, a_stride, c)[b];
      const __m256i b32 = _mm256_madd_epi16(load_256(ab[c]->bsums), _mm256_set1_epi16(-1));
      const __m128i bw =
          _mm_packs_epi32(_mm256_castsi256_si128(b32), _mm256_extracti128_si256(b32, 1));
      neg_b[c][0] = _mm256_broadcastq_epi64(bw);
      neg_b[c][1] = _mm256_broadcastq_epi64(_mm_unpackhi_epi64(bw, bw));
    }
    for (int half = 0; half < 2; ++half) {  // rows 4 half .. 4 half + 3
      const int r0 = 4 * half;
      const __m256i mins0 = _mm256_cvtepu8_epi16(load_128(blk.m[0][r0]));
      const __m256i mins1 = _mm256_cvtepu8_epi16(load_128(blk.m[1][r0]));
      __m256i isum[NC];
      __m256i msum[NC];
      for (int c = 0; c < NC; ++c) {
        msum[c] = _mm256_add_epi32(_mm256_madd_epi16(mins0, neg_b[c][0]),
                                   _mm256_madd_epi16(mins1, neg_b[c][1]));
        isum[c] = _mm256_setzero_si256();
      }
      for (int ch = 0; ch < 4; ++ch) {  // 64 elements: sub-blocks 2ch (low nibbles), 2ch + 1 (high)
        const __m256i sc =
            _mm256_permutevar8x32_epi32(_mm256_cvtepu8_epi16(load_128(blk.sc[ch])), dup_rows[half]);
        __m256i w_lo[4];
        __m256i w_hi[4];
        for (int k = 0; k < 4; ++k) {
          const __m256i packed = load_256(blk.qs[ch][k][r0]);
          w_lo[k] = _mm256_and_si256(packed, low4);
          w_hi[k] = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
        }
        for (int c = 0; c < NC; ++c) {
          const int8_t* aq = ab[c]->qs + 64 * ch;
          __m256i lo = _mm256_maddubs_epi16(w_lo[0], bcast8(aq));
          __m256i hi = _mm256_maddubs_epi16(w_hi[0], bcast8(aq + 32));
          for (int k = 1; k < 4; ++k) {
            lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(w_lo[k], bcast8(aq + 8 * k)));
            hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(w_hi[k], bcast8(aq + 32 + 8 * k)));
          }
          const __m256i pair =
              _mm256_blend_epi16(_mm256_madd_epi16(lo, ones),
                                 _mm256_slli_epi32(_mm256_madd_epi16(hi, ones), 16), 0xAA);
          isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(pair, sc));
        }
      }
      const __m256 dm = _mm256_cvtph_ps(load_128(blk.dm[r0]));
      for (int c = 0; c < NC; ++c) {
        const __m256i folded =
            _mm256_blend_epi32(_mm256_add_epi32(isum[c], _mm256_srli_epi64(isum[c], 32)),
                               _mm256_add_epi32(msum[c], _mm256_slli_epi64(msum[c], 32)), 0xAA);
        acc[c][half] = _mm256_fmadd_ps(_mm256_mul_ps(dm, _mm256_set1_ps(ab[c]->d)),
                                       _mm256_cvtepi32_ps(folded), acc[c][half]);
      }
    }
  }
  for (int c = 0; c < NC; ++c) {
    // [r0 r1 r4 r5 | r2 r3 r6 r7] -> rows in order
    const __m256 sums = _mm256_hadd_ps(acc[c][0], acc[c][1]);
    _mm256_storeu_ps(out + static_cast<size_t>(c) * out_stride,
                     _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(sums), 0xD8)));
  }
}

// Quarter i (elements 32i + 8k .. + 7 of half h) of rows r0 .. r0 + 3 of BlockQ6_Kx8 as
// q + 32 in [0, 63]: quarter 3's bits 2m, 2m + 1 sit in bits 6-7 of quarter m's bytes.
inline __m256i q6_quarter(const BlockQ6_Kx8& blk, int h, int k, int i, int r0) {
  if (i < 3) return _mm256_and_si256(load_256(blk.q[h][i][k][r0]), _mm256_set1_epi8(0x3F));
  const __m256i x0 =
      _mm256_and_si256(_mm256_srli_epi16(load_256(blk.q[h][0][k][r0]), 6), _mm256_set1_epi8(0x03));
  const __m256i x1 =
      _mm256_and_si256(_mm256_srli_epi16(load_256(blk.q[h][1][k][r0]), 4), _mm256_set1_epi8(0x0C));
  const __m256i x2 =
      _mm256_and_si256(_mm256_srli_epi16(load_256(blk.q[h][2][k][r0]), 2), _mm256_set1_epi8(0x30));
  return _mm256_or_si256(_mm256_or_si256(x0, x1), x2);
}

// Q6_K x Q8_K on 256 bits: BlockQ6_Kx8 as two halves of 4 rows, like gemm_q4_k above. The
// 2 maddubs steps of a 16-element group add up in int16 (<= 4 * 63 * 127) and one madd
// against the group's scale in both int16 halves of a lane widens and scales them; the
// rest follows the 512-bit version (avx512_x8.cpp).
template <class Dot, int NC>
void gemm_q6_k(int64_t n, const void* group, const void* a, size_t a_stride,
               const int32_t* /*a_sums*/, float* out, size_t out_stride) {
  const auto* g = static_cast<const BlockQ6_Kx8*>(group);
  const __m256i dup_group[2] = {_mm256_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6),
                                _mm256_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7)};
  __m256 acc[NC][2];
  for (int c = 0; c < NC; ++c) acc[c][0] = acc[c][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    prefetch_ahead(g, b);
    const BlockQ6_Kx8& blk = g[b];
    const ref::BlockQ8_K* ab[NC];
    __m256i bsum[NC];  // per row: sum over groups of scale * bsums
    for (int c = 0; c < NC; ++c) {
      ab[c] = &token_blocks<ref::BlockQ8_K>(a, a_stride, c)[b];
      bsum[c] = _mm256_setzero_si256();
    }
    for (int p = 0; p < kQK_K / 32; ++p) {
      const __m256i sc_pairs = _mm256_cvtepi8_epi16(load_128(blk.scales[p]));
      for (int c = 0; c < NC; ++c) {
        int32_t bs;
        std::memcpy(&bs, ab[c]->bsums + 2 * p, sizeof bs);
        bsum[c] = _mm256_add_epi32(bsum[c], _mm256_madd_epi16(sc_pairs, _mm256_set1_epi32(bs)));
      }
    }
    for (int half = 0; half < 2; ++half) {  // rows 4 half .. 4 half + 3
      const int r0 = 4 * half;
      __m256i isum[NC];
      for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {
        __m256i sc[4][2];  // quarter i: groups 8h + 2i, 8h + 2i + 1, in both int16 halves of a lane
        for (int i = 0; i < 4; ++i) {
          const __m256i pair = _mm256_cvtepi8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.scales[4 * h + i][r0])));
          for (int j = 0; j < 2; ++j) {
            const __m256i s32 = _mm256_permutevar8x32_epi32(pair, dup_group[j]);
            sc[i][j] = _mm256_blend_epi16(s32, _mm256_slli_epi32(s32, 16), 0xAA);
          }
        }
        for (int kk = 0; kk < 2; ++kk) {  // elements 16kk .. 16kk + 15 of each quarter
          for (int i = 0; i < 4; ++i) {   // one quarter at a time, as in the 512-bit version
            const __m256i v0 = q6_quarter(blk, h, 2 * kk, i, r0);
            const __m256i v1 = q6_quarter(blk, h, 2 * kk + 1, i, r0);
            for (int c = 0; c < NC; ++c) {
              const int8_t* aq = ab[c]->qs + 128 * h + 32 * i + 16 * kk;
              const __m256i part = _mm256_add_epi16(_mm256_maddubs_epi16(v0, bcast8(aq)),
                                                    _mm256_maddubs_epi16(v1, bcast8(aq + 8)));
              isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(part, sc[i][kk]));
            }
          }
        }
      }
      // lane 2r': d of row r0 + r', lane 2r' + 1: 0 (an f16 zero)
      const __m256 dw = _mm256_cvtph_ps(
          _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.d + r0))));
      for (int c = 0; c < NC; ++c) {
        const __m128i rows_bsum =
            half ? _mm256_extracti128_si256(bsum[c], 1) : _mm256_castsi256_si128(bsum[c]);
        const __m256i folded =
            _mm256_sub_epi32(_mm256_add_epi32(isum[c], _mm256_srli_epi64(isum[c], 32)),
                             _mm256_slli_epi32(_mm256_cvtepi32_epi64(rows_bsum), 5));
        acc[c][half] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab[c]->d)),
                                       _mm256_cvtepi32_ps(folded), acc[c][half]);
      }
    }
  }
  for (int c = 0; c < NC; ++c) {
    // the odd lanes are 0: [r0 r1 r4 r5 | r2 r3 r6 r7] -> rows in order
    const __m256 sums = _mm256_hadd_ps(acc[c][0], acc[c][1]);
    _mm256_storeu_ps(out + static_cast<size_t>(c) * out_stride,
                     _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(sums), 0xD8)));
  }
}

}  // namespace
}  // namespace runnel::x8

namespace runnel::avx2 {

RUNNEL_X8_DEFINE_PRODUCTS(MaddubsDot)

}  // namespace runnel::avx2
