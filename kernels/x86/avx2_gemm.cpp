// AVX2 batched products for prefill (TypeKernels::gemm / gemm_pack, kernels/kernels.h):
// 4 weight rows at a time against a group of 8 activation rows (tokens).
//
// Why a different layout: vec_dot spends most of its time per block on work that does
// not depend on the token (unpacking nibbles, sign fixes, scale conversion and the
// horizontal sums of its element lanes). Here each int32 lane of a vector belongs to one
// token instead of a run of elements. The activations of 8 tokens are packed once per
// matmul so that vector k of a block holds elements 4k .. 4k + 3 of every token
// (4 bytes per token), and the weights' 4 bytes for the same elements are broadcast to
// all lanes. One maddubs then does 4 multiply-adds for each of the 8 tokens, the block's
// integer sum ends in the token's lane, and the float scaling is one vector op for all 8
// tokens. Weight bytes are unpacked once per block and reused by 8 tokens; the packed
// activations of a block stay in registers while the rows go by.
//
// Unsigned weights: maddubs wants an unsigned operand, so 2- to 6-bit quants are used as
// stored (q in [0, 3], [0, 7], [0, 15], [0, 31] or [0, 63]; Q3_K's high bit and the 5th
// bit of Q5_0 / Q5_1 / Q5_K merged in) and the offset (-8 for Q4_0, -16 for Q5_0, -4 for
// Q3_K, -32 for Q6_K, the mins of Q2_K / Q4_K / Q5_K) comes back through per-token
// activation sums computed at packing (Q8_K: sums per 16 elements).
// Q8_0 weights are signed and use vec_dot's sign trick per step instead.
//
// Integer sums per block are exact (bounds at each use); only the float accumulation
// order differs from ref, as in vec_dot, so results agree within the same bounds.
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/gemm_packed.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::avx2 {

using ref::BlockQ2_K;
using ref::BlockQ3_K;
using ref::BlockQ4_0;
using ref::BlockQ4_1;
using ref::BlockQ4_K;
using ref::BlockQ5_0;
using ref::BlockQ5_1;
using ref::BlockQ5_K;
using ref::BlockQ6_K;
using ref::BlockQ8_0;
using ref::BlockQ8_1;
using ref::BlockQ8_K;

namespace {

constexpr int kCols = kGemmCols;  // one int32 lane per token
static_assert(kCols == 8, "one 256-bit vector of int32 lanes per packed group");

using gemm::PackedQ8_0;
using gemm::PackedQ8_1;
using gemm::PackedQ8_K;

template <typename Block>
const Block* token_row(const void* a, size_t a_stride, int c) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(a) +
                                        static_cast<size_t>(c) * a_stride);
}

// The quant bytes of one token's block into column c of a packed group.
inline void scatter_quants(const int8_t* qs, int n_elements, int8_t (*dst)[kCols][4], int c) {
  for (int k = 0; k < n_elements / 4; ++k) std::memcpy(dst[k][c], qs + 4 * k, 4);
}

inline __m256i load_32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Four bytes at p, broadcast to every int32 lane (a load-port broadcast, no shuffle).
inline __m256i bcast4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// sum_k maddubs(w[4k .. 4k + 3] broadcast, a[k]) over 8 steps (32 elements) as int16
// pairs per token. Exact while 8 * 2 * w_max * 127 <= 32767, i.e. w <= 16: 4-bit quants.
inline __m256i dot32_small(const uint8_t* w, const __m256i* a) {
  __m256i s = _mm256_maddubs_epi16(bcast4(w), a[0]);
  for (int k = 1; k < 8; ++k)
    s = _mm256_add_epi16(s, _mm256_maddubs_epi16(bcast4(w + 4 * k), a[k]));
  return s;
}

// Same for 5-bit quants, as int32 lanes times `scale` (int16 in every lane): 8 steps
// would reach 8 * 2 * 31 * 127 = 62992, so two int16 chains of 4 steps each
// (<= 31496) are widened separately by the madd with the scale.
inline __m256i dot32_5bit(const uint8_t* w, const __m256i* a, __m256i scale) {
  __m256i lo = _mm256_maddubs_epi16(bcast4(w), a[0]);
  __m256i hi = _mm256_maddubs_epi16(bcast4(w + 16), a[4]);
  for (int k = 1; k < 4; ++k) {
    lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(bcast4(w + 4 * k), a[k]));
    hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(bcast4(w + 16 + 4 * k), a[4 + k]));
  }
  return _mm256_add_epi32(_mm256_madd_epi16(lo, scale), _mm256_madd_epi16(hi, scale));
}

// Weight bytes of a 16-element group against a[0 .. 3] (4 steps), as int32 lanes times
// `scale` (int16 in every lane). Exact for quants <= 7: pairs <= 4 * 2 * 7 * 127 = 7112.
inline __m256i dot16_small(const uint8_t* w, const __m256i* a, __m256i scale) {
  const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(bcast4(w), a[0]),
                                       _mm256_maddubs_epi16(bcast4(w + 4), a[1]));
  const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(bcast4(w + 8), a[2]),
                                       _mm256_maddubs_epi16(bcast4(w + 12), a[3]));
  return _mm256_madd_epi16(_mm256_add_epi16(s01, s23), scale);
}

// sum_g scale_g * bsums_g over the 16 groups of super-block b's packed sums, as int32
// lanes: one madd per pair of groups (scales as int16, |scale| <= 32 here).
inline __m256i scaled_bsums(const PackedQ8_K& p, const int (&scale)[16]) {
  __m256i s = _mm256_setzero_si256();
  for (int pg = 0; pg < 8; ++pg) {
    const int32_t pair = static_cast<int32_t>(static_cast<uint16_t>(scale[2 * pg])) |
                         static_cast<int32_t>(static_cast<uint32_t>(scale[2 * pg + 1]) << 16);
    s = _mm256_add_epi32(s, _mm256_madd_epi16(load_32(p.bsums[pg]), _mm256_set1_epi32(pair)));
  }
  return s;
}

// A legacy Q5 block's 32 quants in [0, 31], element order: nibbles plus bit j of qh as 16.
inline __m256i unpack_q5(const uint8_t* qs, const uint8_t* qh) {
  return _mm256_or_si256(unpack_nibbles_16(qs),
                         _mm256_and_si256(expand_bits_32(qh), _mm256_set1_epi8(0x10)));
}

inline void store_tile(const __m256* acc, int nr, int nc, float* out, size_t out_stride) {
  alignas(32) float lanes[kCols];
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

// ---------------------------------------------------------------- weight kernels

template <int NR>
void gemm_q4_0_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_0*>(packed);
  const BlockQ4_0* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ4_0>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[32];
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    // dot(q - 8, a) = dot(q, a) - 8 * sum(a)
    const __m256i offset =
        _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[b].sum)), 3);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q), unpack_nibbles_16(x[r][b].qs));
      const __m256i pairs = dot32_small(q, a);  // |pair sums| <= 8 * 2 * 15 * 127 = 30480
      const __m256i lanes =
          _mm256_sub_epi32(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)), offset);
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q4_1 as this table's gemm_x8 adds it (x8_steps.h): the min terms follow each block's d term.
static_assert(x8::kAvx2Q4_1Mins == x8::MinTerms::kChained);
template <int NR>
void gemm_q4_1_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_1*>(packed);
  const BlockQ4_1* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ4_1>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[32];
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    const __m256 sa = _mm256_loadu_ps(p[b].s);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q), unpack_nibbles_16(x[r][b].qs));
      const __m256i lanes = _mm256_madd_epi16(dot32_small(q, a), _mm256_set1_epi16(1));
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[r]);
      acc[r] = _mm256_fmadd_ps(sa, _mm256_set1_ps(f16(x[r][b].m)), acc[r]);  // min term m * s
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

template <int NR>
void gemm_q5_0_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_0*>(packed);
  const BlockQ5_0* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ5_0>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[32];
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    // dot(q - 16, a) = dot(q, a) - 16 * sum(a)
    const __m256i offset =
        _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[b].sum)), 4);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q), unpack_q5(x[r][b].qs, x[r][b].qh));
      const __m256i lanes = _mm256_sub_epi32(dot32_5bit(q, a, ones), offset);
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

template <int NR>
void gemm_q5_1_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_1*>(packed);
  const BlockQ5_1* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ5_1>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[32];
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    const __m256 sa = _mm256_loadu_ps(p[b].s);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q), unpack_q5(x[r][b].qs, x[r][b].qh));
      const __m256i lanes = dot32_5bit(q, a, ones);
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[r]);
      acc[r] = _mm256_fmadd_ps(sa, _mm256_set1_ps(f16(x[r][b].m)), acc[r]);  // min term m * s
    }
  }
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
  alignas(32) int8_t qw[32];
  alignas(32) uint8_t qabs[32];
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[k]);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      const __m256i wq = load_32(x[r][b].qs);
      _mm256_store_si256(reinterpret_cast<__m256i*>(qw), wq);
      _mm256_store_si256(reinterpret_cast<__m256i*>(qabs), _mm256_sign_epi8(wq, wq));
      // |w| against a with w's sign: pair sums <= 2 * 127 * 127, one step per madd.
      __m256i lanes = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) {
        const __m256i signed_a =
            _mm256_sign_epi8(a[k], bcast4(reinterpret_cast<const uint8_t*>(qw) + 4 * k));
        const __m256i pairs = _mm256_maddubs_epi16(bcast4(qabs + 4 * k), signed_a);
        lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(pairs, ones));
      }
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q2_K and Q3_K share the 2-bit layout: in 128-element half h, bits 2g .. 2g + 1 of
// qs[32h + l] are element 128h + 32g + l, i.e. vector g of the half (shifted by 2g) holds
// groups 8h + 2g and 8h + 2g + 1 in element order. Q3_K adds bit 4h + g of hmask[l] as
// the quant's value-4 bit (so q + 4 in [0, 7], as stored). Both then take 16-element
// groups with a scale each, against packed quants 32h + 8g .. 32h + 8g + 7.
template <int NR, typename Block, bool kHighBit>
void unpack_2bit_half(const Block* const (&x)[NR], int64_t b, int h, uint8_t (*q)[128]) {
  const __m256i low2 = _mm256_set1_epi8(0x03);
  for (int r = 0; r < NR; ++r) {
    const __m256i qs = load_32(x[r][b].qs + 32 * h);
    for (int g = 0; g < 4; ++g) {
      __m256i v = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * g), low2);
      if constexpr (kHighBit) {
        const __m256i sel = _mm256_set1_epi8(static_cast<char>(1 << (4 * h + g)));
        const __m256i hm = load_32(x[r][b].hmask);
        v = _mm256_or_si256(v, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, sel), sel),
                                                _mm256_set1_epi8(0x04)));
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[r] + 32 * g), v);
    }
  }
}

// isum[r] += sum over the 16 groups of scale[r][j] * (group j's quants . activations).
template <int NR, typename Block, bool kHighBit>
void add_2bit_groups(const Block* const (&x)[NR], int64_t b, const PackedQ8_K& p,
                     const int (&scale)[NR][16], __m256i (&isum)[NR]) {
  alignas(32) uint8_t q[NR][128];
  for (int h = 0; h < 2; ++h) {
    unpack_2bit_half<NR, Block, kHighBit>(x, b, h, q);
    for (int g = 0; g < 4; ++g) {
      __m256i a[8];
      for (int i = 0; i < 8; ++i) a[i] = load_32(p.q[32 * h + 8 * g + i]);
      const int j = 8 * h + 2 * g;
      for (int r = 0; r < NR; ++r) {
        // per group |lane| <= 16 * 7 * 127 * 32, over 16 groups: < 2^23
        for (int grp = 0; grp < 2; ++grp) {
          const __m256i sc = _mm256_set1_epi16(static_cast<int16_t>(scale[r][j + grp]));
          const __m256i lanes = dot16_small(q[r] + 32 * g + 16 * grp, a + 4 * grp, sc);
          isum[r] = _mm256_add_epi32(isum[r], lanes);
        }
      }
    }
  }
}

// Q2_K: x = d * (scales[j] & 15) * q - dmin * (scales[j] >> 4), q in [0, 3]. The min term
// is dmin * sum_j m_j * bsums_j.
template <int NR>
void gemm_q2_k_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const BlockQ2_K* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ2_K>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int sc[NR][16];
    int m[NR][16];
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) {
      for (int j = 0; j < 16; ++j) {
        sc[r][j] = x[r][b].scales[j] & 0x0F;
        m[r][j] = x[r][b].scales[j] >> 4;
      }
      isum[r] = _mm256_setzero_si256();
    }
    add_2bit_groups<NR, BlockQ2_K, false>(x, b, p[b], sc, isum);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      const __m256i msum = scaled_bsums(p[b], m[r]);  // |lane| <= 16 * 15 * 2048
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      const __m256 dmin = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].dmin)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum[r]), acc[r]);
      acc[r] = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(msum), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q3_K: x = d * s_j * (q - 4), q = low 2 bits + 4 * high bit in [0, 7], s_j in [-32, 31].
// The -4 comes back as -4 * sum_j s_j * bsums_j.
template <int NR>
void gemm_q3_k_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const BlockQ3_K* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ3_K>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int sc[NR][16];
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) {
      for (int j = 0; j < 16; ++j) sc[r][j] = ref::q3_k_scale(x[r][b].scales, j);
      // |lane| <= 4 * 16 * 32 * 2048 = 2^22
      const __m256i offset = _mm256_slli_epi32(scaled_bsums(p[b], sc[r]), 2);
      isum[r] = _mm256_sub_epi32(_mm256_setzero_si256(), offset);
    }
    add_2bit_groups<NR, BlockQ3_K, true>(x, b, p[b], sc, isum);
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum[r]), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q4_K: per 64-element chunk c, low nibbles are sub-block 2c and high nibbles 2c + 1;
// 6-bit scales and mins per sub-block. The min term is dmin * sum_s m_s * (token's sum
// over sub-block s), from the packed bsums.
template <int NR>
void gemm_q4_k_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const BlockQ4_K* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ4_K>(w, w_stride, r);
  __m256 acc[NR];
  __m256 acc_m[NR];  // the min parts: a sum of their own, as gemm_x8 keeps (x8_steps.h)
  for (int r = 0; r < NR; ++r) acc[r] = acc_m[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][64];
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t sc[NR][8];
    uint8_t m[NR][8];
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) {
      ref::unpack_scales_mins_k4(x[r][b].scales, sc[r], m[r]);  // faster than field by field
      isum[r] = _mm256_setzero_si256();
    }
    for (int c = 0; c < kQK_K / 64; ++c) {
      for (int r = 0; r < NR; ++r) {
        const __m256i packed_q = load_32(x[r][b].qs + 32 * c);
        _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]), _mm256_and_si256(packed_q, low4));
        _mm256_store_si256(reinterpret_cast<__m256i*>(q[r] + 32),
                           _mm256_and_si256(_mm256_srli_epi16(packed_q, 4), low4));
      }
      for (int h = 0; h < 2; ++h) {
        __m256i a[8];
        for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[16 * c + 8 * h + k]);
        for (int r = 0; r < NR; ++r) {
          // pair sums <= 30480; times a 6-bit scale, summed over 8 sub-blocks: < 2^25
          const __m256i pairs = dot32_small(q[r] + 32 * h, a);
          const __m256i scale = _mm256_set1_epi16(sc[r][2 * c + h]);
          isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(pairs, scale));
        }
      }
    }
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      __m256i msum = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {
        // both 16-element groups of sub-block s take its min
        const __m256i bs = load_32(p[b].bsums[s]);
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(bs, _mm256_set1_epi16(m[r][s])));
      }
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      const __m256 dmin = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].dmin)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum[r]), acc[r]);
      // fma(dmin, float(-M)), the operands gemm_x8 has
      const __m256i neg_msum = _mm256_sub_epi32(_mm256_setzero_si256(), msum);
      acc_m[r] = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(neg_msum), acc_m[r]);
    }
  }
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_add_ps(acc[r], acc_m[r]);
  store_tile(acc, NR, nc, out, out_stride);
}

// Q5_K: Q4_K's layout plus qh: in 64-element chunk c, element 64c + l takes bit 2c of
// qh[l] as its 5th bit and element 64c + 32 + l bit 2c + 1. Scales and mins as Q4_K.
template <int NR>
void gemm_q5_k_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                    float* out, size_t out_stride) {
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const BlockQ5_K* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<BlockQ5_K>(w, w_stride, r);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) uint8_t q[NR][64];
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t sc[NR][8];
    uint8_t m[NR][8];
    __m256i isum[NR];
    for (int r = 0; r < NR; ++r) {
      ref::unpack_scales_mins_k4(x[r][b].scales, sc[r], m[r]);  // faster than field by field
      isum[r] = _mm256_setzero_si256();
    }
    for (int c = 0; c < kQK_K / 64; ++c) {
      const __m256i sel_lo = _mm256_set1_epi8(static_cast<char>(1 << (2 * c)));
      const __m256i sel_hi = _mm256_set1_epi8(static_cast<char>(2 << (2 * c)));
      for (int r = 0; r < NR; ++r) {
        const __m256i packed_q = load_32(x[r][b].qs + 32 * c);
        const __m256i qh = load_32(x[r][b].qh);
        // 0x10 where the chunk's bit of qh[l] is set
        const __m256i hi_lo =
            _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, sel_lo), sel_lo), bit4);
        const __m256i hi_hi =
            _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, sel_hi), sel_hi), bit4);
        _mm256_store_si256(reinterpret_cast<__m256i*>(q[r]),
                           _mm256_or_si256(_mm256_and_si256(packed_q, low4), hi_lo));
        _mm256_store_si256(
            reinterpret_cast<__m256i*>(q[r] + 32),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(packed_q, 4), low4), hi_hi));
      }
      for (int h = 0; h < 2; ++h) {
        __m256i a[8];
        for (int k = 0; k < 8; ++k) a[k] = load_32(p[b].q[16 * c + 8 * h + k]);
        for (int r = 0; r < NR; ++r) {
          // |lane| <= 32 * 31 * 127 * 63 per sub-block, summed over 8: < 2^26
          const __m256i scale = _mm256_set1_epi16(sc[r][2 * c + h]);
          isum[r] = _mm256_add_epi32(isum[r], dot32_5bit(q[r] + 32 * h, a, scale));
        }
      }
    }
    const __m256 da = _mm256_loadu_ps(p[b].d);
    for (int r = 0; r < NR; ++r) {
      __m256i msum = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {
        const __m256i bs = load_32(p[b].bsums[s]);
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(bs, _mm256_set1_epi16(m[r][s])));
      }
      const __m256 d = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].d)));
      const __m256 dmin = _mm256_mul_ps(da, _mm256_set1_ps(f16(x[r][b].dmin)));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum[r]), acc[r]);
      acc[r] = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(msum), acc[r]);
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// Q6_K: 128-element halves; in each, vector k of the unpacked quants holds elements
// 32k .. 32k + 31 (see vec_dot_q6_k). Quants are stored as q + 32 in [0, 63]; the -32
// comes back as 32 * sum_g sc_g * bsums_g.
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
      // the offset first: -32 * sum over pairs of groups of (sc_2p, sc_2p+1) . bsums
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
          // two steps per int16 sum: 2 * 2 * 63 * 127 = 32004 <= 32767
          for (int grp = 0; grp < 2; ++grp) {
            const uint8_t* qg = qr + 16 * grp;
            const __m256i* ag = a + 4 * grp;
            const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(bcast4(qg), ag[0]),
                                                 _mm256_maddubs_epi16(bcast4(qg + 4), ag[1]));
            const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(bcast4(qg + 8), ag[2]),
                                                 _mm256_maddubs_epi16(bcast4(qg + 12), ag[3]));
            const __m256i scale = _mm256_set1_epi16(sc[g + grp]);
            isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(s01, scale));
            isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(s23, scale));
          }
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

// Up to 4 rows per pass (16 ymm registers hold 8 activation vectors and 4 accumulators);
// longer runs go in passes of 4 over the same packed group.
constexpr int kMaxRows = 4;

inline void dispatch_rows(const RowsFn (&fns)[kMaxRows], int64_t n, const void* w, size_t w_stride,
                          int nr, const void* packed, int nc, float* out, size_t out_stride) {
  for (int r = 0; r < nr; r += kMaxRows) {
    const int rows = nr - r < kMaxRows ? nr - r : kMaxRows;
    fns[rows - 1](n, static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * w_stride, w_stride,
                  packed, nc, out + r, out_stride);
  }
}

constexpr RowsFn kQ4_0[kMaxRows] = {gemm_q4_0_rows<1>, gemm_q4_0_rows<2>, gemm_q4_0_rows<3>,
                                    gemm_q4_0_rows<4>};
constexpr RowsFn kQ4_1[kMaxRows] = {gemm_q4_1_rows<1>, gemm_q4_1_rows<2>, gemm_q4_1_rows<3>,
                                    gemm_q4_1_rows<4>};
constexpr RowsFn kQ5_0[kMaxRows] = {gemm_q5_0_rows<1>, gemm_q5_0_rows<2>, gemm_q5_0_rows<3>,
                                    gemm_q5_0_rows<4>};
constexpr RowsFn kQ5_1[kMaxRows] = {gemm_q5_1_rows<1>, gemm_q5_1_rows<2>, gemm_q5_1_rows<3>,
                                    gemm_q5_1_rows<4>};
constexpr RowsFn kQ8_0[kMaxRows] = {gemm_q8_0_rows<1>, gemm_q8_0_rows<2>, gemm_q8_0_rows<3>,
                                    gemm_q8_0_rows<4>};
constexpr RowsFn kQ2_K[kMaxRows] = {gemm_q2_k_rows<1>, gemm_q2_k_rows<2>, gemm_q2_k_rows<3>,
                                    gemm_q2_k_rows<4>};
constexpr RowsFn kQ3_K[kMaxRows] = {gemm_q3_k_rows<1>, gemm_q3_k_rows<2>, gemm_q3_k_rows<3>,
                                    gemm_q3_k_rows<4>};
constexpr RowsFn kQ4_K[kMaxRows] = {gemm_q4_k_rows<1>, gemm_q4_k_rows<2>, gemm_q4_k_rows<3>,
                                    gemm_q4_k_rows<4>};
constexpr RowsFn kQ5_K[kMaxRows] = {gemm_q5_k_rows<1>, gemm_q5_k_rows<2>, gemm_q5_k_rows<3>,
                                    gemm_q5_k_rows<4>};
constexpr RowsFn kQ6_K[kMaxRows] = {gemm_q6_k_rows<1>, gemm_q6_k_rows<2>, gemm_q6_k_rows<3>,
                                    gemm_q6_k_rows<4>};

}  // namespace

// ---------------------------------------------------------------- packing

size_t gemm_pack_bytes_q8_0(int64_t n) {
  return static_cast<size_t>(n / kQK) * sizeof(PackedQ8_0);
}
size_t gemm_pack_bytes_q8_1(int64_t n) {
  return static_cast<size_t>(n / kQK) * sizeof(PackedQ8_1);
}
size_t gemm_pack_bytes_q8_k(int64_t n) {
  return static_cast<size_t>(n / kQK_K) * sizeof(PackedQ8_K);
}

void gemm_pack_q8_0(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  auto* p = static_cast<PackedQ8_0*>(packed);
  std::memset(p, 0, gemm_pack_bytes_q8_0(n));
  for (int c = 0; c < nc; ++c) {
    const BlockQ8_0* y = token_row<BlockQ8_0>(a, a_stride, c);
    for (int64_t b = 0; b < n / kQK; ++b) {
      p[b].d[c] = fp16_to_fp32(y[b].d);
      int32_t sum = 0;
      for (int i = 0; i < kQK; ++i) sum += y[b].qs[i];
      p[b].sum[c] = sum;
      scatter_quants(y[b].qs, kQK, p[b].q, c);
    }
  }
}

void gemm_pack_q8_1(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  auto* p = static_cast<PackedQ8_1*>(packed);
  std::memset(p, 0, gemm_pack_bytes_q8_1(n));
  for (int c = 0; c < nc; ++c) {
    const BlockQ8_1* y = token_row<BlockQ8_1>(a, a_stride, c);
    for (int64_t b = 0; b < n / kQK; ++b) {
      p[b].d[c] = fp16_to_fp32(y[b].d);
      p[b].s[c] = fp16_to_fp32(y[b].s);
      scatter_quants(y[b].qs, kQK, p[b].q, c);
    }
  }
}

void gemm_pack_q8_k(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  auto* p = static_cast<PackedQ8_K*>(packed);
  std::memset(p, 0, gemm_pack_bytes_q8_k(n));
  for (int c = 0; c < nc; ++c) {
    const BlockQ8_K* y = token_row<BlockQ8_K>(a, a_stride, c);
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      p[b].d[c] = y[b].d;
      for (int pg = 0; pg < kQK_K / 32; ++pg) {
        p[b].bsums[pg][c][0] = y[b].bsums[2 * pg];
        p[b].bsums[pg][c][1] = y[b].bsums[2 * pg + 1];
      }
      scatter_quants(y[b].qs, kQK_K, p[b].q, c);
    }
  }
}

// ---------------------------------------------------------------- entry points

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
void gemm_q2_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ2_K, n, w, w_stride, nr, packed, nc, out, out_stride);
}
void gemm_q3_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  dispatch_rows(kQ3_K, n, w, w_stride, nr, packed, nc, out, out_stride);
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

}  // namespace runnel::avx2
