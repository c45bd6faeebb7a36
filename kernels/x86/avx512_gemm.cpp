// AVX-512 VNNI batched products for prefill: the AVX2 design of avx2_gemm.cpp (4 weight
// rows x 8 tokens, one int32 lane per token, weight bytes broadcast 4 at a time against
// token-interleaved activations, same packed groups from kernels/x86/gemm_packed.h), with
// vpdpbusd (AVX512-VNNI on 256-bit vectors, AVX512-VL) in place of maddubs + add + madd.
// It accumulates u8 x s8 products straight into int32 lanes, so there are no int16
// limits and a block takes one instruction per 4 elements instead of three.
//
// Q8_0 weights are signed, and vpdpbusd wants one unsigned side: the packed activations
// are flipped to a + 128 (xor 0x80, once per block for all rows), which adds 128 * sum(w)
// to every lane; that sum is taken once per weight block and subtracted.
//
// 5-bit quants (Q5_0, Q5_1, Q5_K) go in whole, [0, 31] as the unsigned side: with no
// int16 pair sums there is no need for AVX2's two chains per 32 elements, and AVX512-BW's
// byte masks merge the 5th bit straight from qh (one masked add of 16).
//
// Integer sums per block are exact; only the float accumulation order differs from ref.
#include "kernels/x86/avx512_gemm.h"

#include <cstring>
#include <type_traits>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/gemm_packed.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::avx512 {

using avx2::f16;
using avx2::unpack_nibbles_16;
using gemm::PackedQ8_0;
using gemm::PackedQ8_1;
using gemm::PackedQ8_K;
using ref::BlockQ4_0;
using ref::BlockQ4_1;
using ref::BlockQ4_K;
using ref::BlockQ5_0;
using ref::BlockQ5_1;
using ref::BlockQ5_K;
using ref::BlockQ6_K;
using ref::BlockQ8_0;

namespace {

inline __m256i load_32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

inline __m256i bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// sum over 8 steps of (w[4k .. 4k + 3] broadcast) . a[k] per int32 lane, w unsigned and
// a signed bytes (or the other way round for dpbusd_sw). Two chains halve the latency.
inline __m256i dot32_uw(const uint8_t* w, const __m256i* a) {
  __m256i s0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), bcast4(w), a[0]);
  __m256i s1 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), bcast4(w + 4), a[1]);
  for (int k = 2; k < 8; k += 2) {
    s0 = _mm256_dpbusd_epi32(s0, bcast4(w + 4 * k), a[k]);
    s1 = _mm256_dpbusd_epi32(s1, bcast4(w + 4 * k + 4), a[k + 1]);
  }
  return _mm256_add_epi32(s0, s1);
}

inline __m256i dot16_uw(const uint8_t* w, const __m256i* a) {
  const __m256i s0 = _mm256_dpbusd_epi32(
      _mm256_dpbusd_epi32(_mm256_setzero_si256(), bcast4(w), a[0]), bcast4(w + 8), a[2]);
  const __m256i s1 = _mm256_dpbusd_epi32(
      _mm256_dpbusd_epi32(_mm256_setzero_si256(), bcast4(w + 4), a[1]), bcast4(w + 12), a[3]);
  return _mm256_add_epi32(s0, s1);
}

// A legacy Q5 block's 32 quants in [0, 31], element order: the nibbles plus 16 where
// bit j of qh is set (qh's 32 bits are the byte mask as they stand).
inline __m256i unpack_q5(const uint8_t* qs, const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  const __m256i nibbles = unpack_nibbles_16(qs);
  return _mm256_mask_add_epi8(nibbles, bits, nibbles, _mm256_set1_epi8(0x10));
}

// The 8 scales and 8 mins of a Q4_K / Q5_K super-block (ref::unpack_scale_min_k4's 6-bit
// fields) as int32, all at once: scales as they are, mins as int16 pairs (m, m) for one
// madd against both packed 16-element sums of their sub-block. The kernel broadcasts them
// from memory (one load each), faster than ref's field-by-field unpacking.
inline void unpack_scales_mins_k4(const uint8_t* b, int32_t* sc, int32_t* m_pair) {
  alignas(8) uint8_t sc8[8], m8[8];
  ref::unpack_scales_mins_k4(b, sc8, m8);
  const __m256i m = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(m8)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(sc),
                      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc8))));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(m_pair),
                      _mm256_or_si256(m, _mm256_slli_epi32(m, 16)));
}

inline void store_tile(const __m256* acc, int nr, int nc, float* out, size_t out_stride) {
  alignas(32) float lanes[kGemmCols];
  for (int r = 0; r < nr; ++r) {
    _mm256_store_ps(lanes, acc[r]);
    for (int c = 0; c < nc; ++c) out[static_cast<size_t>(c) * out_stride + r] = lanes[c];
  }
}

template <typename Block>
const Block* weight_row(const void* w, size_t w_stride, int r) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) +
                                        static_cast<size_t>(r) * w_stride);
}

template <int NR>
void gemm_q4_0_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_0*>(packed);
  const BlockQ4_0* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ4_0>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][32];
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    // dot(q - 8, a) = dot(q, a) - 8 * sum(a)
    const __m256i offset = _mm256_slli_epi32(load_32(p[b].sum), 3);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]), unpack_nibbles_16(x[r][b].qs));
    }
    for (int r = 0; r < NR; ++r) {
      const __m256i lanes = _mm256_sub_epi32(dot32_uw(q[r], a), offset);
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q4_1 as this table's gemm_x8 adds it (x8_steps.h): the min terms in a sum of their own.
static_assert(x8::kAvx512Q4_1Mins == x8::MinTerms::kOwnSum);
template <int NR>
void gemm_q4_1_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_1*>(packed);
  const BlockQ4_1* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ4_1>(w, w_stride, r);
  __m256 acc[NR];
  __m256 acc_m[NR];  // the min terms: a sum of their own, as gemm_x8 keeps (x8_steps.h)
  for (int r = 0; r < NR; ++r) acc[r] = acc_m[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][32];
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    const __m256 sa = _mm256_loadu_ps(p[b].s);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]), unpack_nibbles_16(x[r][b].qs));
    }
    for (int r = 0; r < NR; ++r) {
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot32_uw(q[r], a)), acc[r]);
      acc_m[r] = _mm256_fmadd_ps(sa, _mm256_set1_ps(f16(x[r][b].m)), acc_m[r]);  // m * s
    }
  }
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_add_ps(acc[r], acc_m[r]);
  store_tile(acc, NR, nc, out, out_stride);
}

// Q5_0: Q4_0 with a 5th bit, dot(q - 16, a) = dot(q, a) - 16 * sum(a);
// |lane| <= 32 * 31 * 127 before the offset.
template <int NR>
void gemm_q5_0_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_0*>(packed);
  const BlockQ5_0* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ5_0>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][32];
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    const __m256i offset = _mm256_slli_epi32(load_32(p[b].sum), 4);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]), unpack_q5(x[r][b].qs, x[r][b].qh));
    }
    for (int r = 0; r < NR; ++r) {
      const __m256i lanes = _mm256_sub_epi32(dot32_uw(q[r], a), offset);
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q5_1: Q4_1 with a 5th bit; the min terms m * s in a sum of their own, as Q4_1 here.
template <int NR>
void gemm_q5_1_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_1*>(packed);
  const BlockQ5_1* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ5_1>(w, w_stride, r);
  __m256 acc[NR];
  __m256 acc_m[NR];
  for (int r = 0; r < NR; ++r) acc[r] = acc_m[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][32];
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    const __m256 sa = _mm256_loadu_ps(p[b].s);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]), unpack_q5(x[r][b].qs, x[r][b].qh));
    }
    for (int r = 0; r < NR; ++r) {
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot32_uw(q[r], a)), acc[r]);
      acc_m[r] = _mm256_fmadd_ps(sa, _mm256_set1_ps(f16(x[r][b].m)), acc_m[r]);
    }
  }
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_add_ps(acc[r], acc_m[r]);
  store_tile(acc, NR, nc, out, out_stride);
}

template <int NR>
void gemm_q8_0_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_0*>(packed);
  const BlockQ8_0* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ8_0>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];  // a + 128 as unsigned bytes
    for (int k = 0; k < 8; ++k) a[k] = _mm256_xor_si256(load_32(p[b].q[k]), flip);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      const int8_t* wq = x[r][b].qs;
      // 128 * sum(w), in every lane: per-lane partial sums, then a horizontal sum
      const __m256i part = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, load_32(wq));
      __m128i s = _mm_add_epi32(_mm256_castsi256_si128(part), _mm256_extracti128_si256(part, 1));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
      const __m256i corr = _mm256_slli_epi32(_mm256_broadcastd_epi32(s), 7);
      __m256i s0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), a[0], bcast4(wq));
      __m256i s1 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), a[1], bcast4(wq + 4));
      for (int k = 2; k < 8; k += 2) {
        s0 = _mm256_dpbusd_epi32(s0, a[k], bcast4(wq + 4 * k));
        s1 = _mm256_dpbusd_epi32(s1, a[k + 1], bcast4(wq + 4 * k + 4));
      }
      const __m256i lanes = _mm256_sub_epi32(_mm256_add_epi32(s0, s1), corr);
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q4_K and Q5_K (Block): nibbles, 6-bit scales and mins, and for Q5_K a 5th bit: in
// 64-element chunk c, element 64c + l takes bit 2c of qh[l] and element 64c + 32 + l bit
// 2c + 1, merged by one byte-masked add of 16.
template <typename Block, int NR>
void gemm_k4_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc, float* out,
                  size_t out_stride) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const Block* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<Block>(w, w_stride, r);
  __m256 acc[NR];
  __m256 acc_m[NR];  // the min parts: a sum of their own, as Q4_K's gemm_x8 keeps (x8_steps.h)
  for (int r = 0; r < NR; ++r) acc[r] = acc_m[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][64];
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    alignas(32) int32_t sc[NR][8];
    alignas(32) int32_t m_pair[NR][8];
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) {
      unpack_scales_mins_k4(x[r][b].scales, sc[r], m_pair[r]);
      isum[r] = _mm256_setzero_si256();
    }
    for (int c = 0; c < kQK_K / 64; ++c) {
      for (int r = 0; r < NR; ++r) {
        const __m256i packed_q = load_32(x[r][b].qs + 32 * c);
        __m256i lo = _mm256_and_si256(packed_q, low4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed_q, 4), low4);
        if constexpr (kFifthBit) {
          const __m256i qh = load_32(x[r][b].qh);
          const __m256i sel_lo = _mm256_set1_epi8(static_cast<char>(1 << (2 * c)));
          const __m256i sel_hi = _mm256_set1_epi8(static_cast<char>(2 << (2 * c)));
          lo = _mm256_mask_add_epi8(lo, _mm256_test_epi8_mask(qh, sel_lo), lo, bit4);
          hi = _mm256_mask_add_epi8(hi, _mm256_test_epi8_mask(qh, sel_hi), hi, bit4);
        }
        _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]), lo);
        _mm256_store_si256(reinterpret_cast<__m256i*>(q[r] + 32), hi);
      }
      for (int h = 0; h < 2; ++h) {
        __m256i a[8];
        for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[16 * c + 8 * h + k]);
        for (int r = 0; r < NR; ++r) {
          // |lane| <= 32 * 31 * 127; times a 6-bit scale, summed over 8 sub-blocks: < 2^26
          const __m256i scale = _mm256_set1_epi32(sc[r][2 * c + h]);
          isum[r] =
              _mm256_add_epi32(isum[r], _mm256_mullo_epi32(dot32_uw(q[r] + 32 * h, a), scale));
        }
      }
    }
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      __m256i msum = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {
        msum = _mm256_add_epi32(
            msum, _mm256_madd_epi16(load_32(p[b].bsums[s]), _mm256_set1_epi32(m_pair[r][s])));
      }
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

template <int NR>
void gemm_q4_k_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  gemm_k4_rows<BlockQ4_K, NR>(n, w, w_stride, packed, nc, out, out_stride);
}

template <int NR>
void gemm_q5_k_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  gemm_k4_rows<BlockQ5_K, NR>(n, w, w_stride, packed, nc, out, out_stride);
}

template <int NR>
void gemm_q6_k_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const BlockQ6_K* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ6_K>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][128];
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) {
      // -32 * sum_g sc_g * bsums_g (quants are stored as q + 32)
      const int8_t* sc = x[r][b].scales;
      __m256i off = _mm256_setzero_si256();
      for (int pg = 0; pg < 8; ++pg) {
        const int32_t pair = static_cast<int32_t>(static_cast<uint16_t>(sc[2 * pg])) |
                             (static_cast<int32_t>(sc[2 * pg + 1]) * 65536);
        off = _mm256_add_epi32(off,
                               _mm256_madd_epi16(load_32(p[b].bsums[pg]), _mm256_set1_epi32(pair)));
      }
      isum[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(off, 5));
    }
    for (int half = 0; half < 2; ++half) {
      for (int r = 0; r < NR; ++r) {
        const BlockQ6_K& blk = x[r][b];
        const __m256i ql_a = load_32(blk.ql + 64 * half);
        const __m256i ql_b = load_32(blk.ql + 64 * half + 32);
        const __m256i qh = load_32(blk.qh + 32 * half);
        const __m256i v[4] = {
            _mm256_or_si256(_mm256_and_si256(ql_a, low4),
                            _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4)),
            _mm256_or_si256(_mm256_and_si256(ql_b, low4),
                            _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0C)), 2)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_a, 4), low4),
                            _mm256_and_si256(qh, _mm256_set1_epi8(0x30))),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_b, 4), low4),
                            _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(-64)), 2)),
        };
        for (int k = 0; k < 4; ++k)
          _mm256_store_si256(reinterpret_cast<__m256i*>(q[r] + 32 * k), v[k]);
      }
      for (int k = 0; k < 4; ++k) {  // elements 32k .. 32k + 31 of the half: groups g, g + 1
        __m256i a[8];
        for (int i = 0; i < 8; ++i) a[i] = load_32(p[b].q[32 * half + 8 * k + i]);
        const int g = 8 * half + 2 * k;
        for (int r = 0; r < NR; ++r) {
          const uint8_t* qr = q[r] + 32 * k;
          const int8_t* sc = x[r][b].scales;
          const __m256i lo = _mm256_mullo_epi32(dot16_uw(qr, a), _mm256_set1_epi32(sc[g]));
          const __m256i hi =
              _mm256_mullo_epi32(dot16_uw(qr + 16, a + 4), _mm256_set1_epi32(sc[g + 1]));
          isum[r] = _mm256_add_epi32(isum[r], _mm256_add_epi32(lo, hi));
        }
      }
    }
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum[r]), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

using RowsFn = void (*)(int64_t, const void*, size_t, const void*, int, float*, size_t);

// All kGemmRows rows in one pass: AVX-512VL gives 32 vector registers, room for the 8
// activation vectors and 8 accumulators, so a packed group is read once per 8 rows.
#define RUNNEL_ROWS_TABLE(name, fn) \
  constexpr RowsFn name[kGemmRows] = {fn<1>, fn<2>, fn<3>, fn<4>, fn<5>, fn<6>, fn<7>, fn<8>};
static_assert(kGemmRows == 8, "one instantiation per row count");
RUNNEL_ROWS_TABLE(kQ4_0, gemm_q4_0_rows)
RUNNEL_ROWS_TABLE(kQ4_1, gemm_q4_1_rows)
RUNNEL_ROWS_TABLE(kQ5_0, gemm_q5_0_rows)
RUNNEL_ROWS_TABLE(kQ5_1, gemm_q5_1_rows)
RUNNEL_ROWS_TABLE(kQ8_0, gemm_q8_0_rows)
RUNNEL_ROWS_TABLE(kQ4_K, gemm_q4_k_rows)
RUNNEL_ROWS_TABLE(kQ5_K, gemm_q5_k_rows)
RUNNEL_ROWS_TABLE(kQ6_K, gemm_q6_k_rows)
#undef RUNNEL_ROWS_TABLE

inline void dispatch_rows(const RowsFn (&fns)[kGemmRows], int64_t n, const void* w, size_t w_stride,
                          int nr, const void* packed, int nc, float* out, size_t out_stride) {
  fns[nr - 1](n, w, w_stride, packed, nc, out, out_stride);
}

}  // namespace

void gemm_q4_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ4_0, n, w, w_stride, nr, packed, nc, out, out_stride);
}
void gemm_q4_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ4_1, n, w, w_stride, nr, packed, nc, out, out_stride);
}
void gemm_q5_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ5_0, n, w, w_stride, nr, packed, nc, out, out_stride);
}
void gemm_q5_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ5_1, n, w, w_stride, nr, packed, nc, out, out_stride);
}
void gemm_q8_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ8_0, n, w, w_stride, nr, packed, nc, out, out_stride);
}
void gemm_q4_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ4_K, n, w, w_stride, nr, packed, nc, out, out_stride);
}
void gemm_q5_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ5_K, n, w, w_stride, nr, packed, nc, out, out_stride);
}
void gemm_q6_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ6_K, n, w, w_stride, nr, packed, nc, out, out_stride);
}

}  // namespace runnel::avx512
