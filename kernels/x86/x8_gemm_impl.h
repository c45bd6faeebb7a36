// The x8 products (kernels/kernels.h TypeKernels::gemm_x8) as templates over the integer
// dot step, instantiated by avx2_x8.cpp (maddubs) and avx512_x8.cpp (vpdpbusd). Include
// only from files compiled with at least the AVX2 flags.
//
// Lanes are rows: one 256-bit load of a repacked block gives 4 weight bytes of each of
// the 8 rows, the token's 4 activation bytes are broadcast, and the 8 rows' block scales
// are one vcvtph2ps. The weights of a block are unpacked once for every token of the call
// (1 in decode, up to 8 in prefill), and nothing needs a horizontal sum. Integer sums per
// block are exact (bounds at each use); float accumulation runs block by block per row.
// The per-token dots and prompt tiles of these types repeat the float steps exactly
// (x8_steps.h has the recipe): change them there too, or streamed and resident runs part.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/lut4_values.h"
#include "kernels/x86/x8_layout.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::x8 {
// Internal linkage: avx2_x8.cpp and avx512_x8.cpp compile these with different ISA flags,
// and with external linkage the linker could keep the AVX-512 copy of a helper for the
// AVX2 entries, which must run on CPUs without AVX-512.
namespace {

inline __m256i load_256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

inline __m256i bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

inline float f16_to_f32(uint16_t h) {
  return _cvtsh_ss(h);
}

// Asks for the cache lines of the block kAhead blocks on (past a group's end: the next
// group, which a task reads next) into L2. One thread's decode waits on memory latency
// more than on bandwidth, and the hardware prefetcher alone leaves the core idle on a
// group's interleaved streams. Into L2, not L1: an L1 prefetch holds a fill buffer the
// loads need. Q4_K's product reads its groups front to back and streams faster without
// it for one token; for several (batched decode) it computes long enough per block that
// the loads fall behind unless asked for 8 blocks on. Q6_K's, reading a block in three
// streams, needs it always.
constexpr int kAhead = 4;
template <int Ahead = kAhead, typename Block>
inline void prefetch_ahead(const Block* blocks, int64_t b) {
  const char* p = reinterpret_cast<const char*>(blocks + b + Ahead);
  for (size_t i = 0; i < sizeof(Block); i += 64) _mm_prefetch(p + i, _MM_HINT_T1);
}

// The 8 rows' f16 block scales (or mins) as floats.
inline __m256 f16x8(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

// Q4_0 / Q4_1 groups: w[k] = elements 4k .. 4k + 3 of the 8 rows as unsigned nibbles
// (low nibbles of q[j] are elements 4j .., high nibbles 16 + 4j ..).
inline void unpack_nibbles(const uint8_t (&q)[4][kRows][4], __m256i* w) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int j = 0; j < 4; ++j) {
    const __m256i packed = load_256(q[j]);
    w[j] = _mm256_and_si256(packed, low4);
    w[4 + j] = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
  }
}

// Q5_0 / Q5_1 groups: w[j] = elements 4j .. 4j + 3 of the 8 rows as unsigned 5-bit quants:
// the nibbles as above, and the fifth bit of byte i of w[j] from bit j of the plane's byte
// (BlockQ5_0x8::h) moved to bit 4 by one 16-bit shift (what crosses into the next byte
// lands below bit 4 (left shifts) or above it (right shifts), and the AND drops it).
template <int j>
inline __m256i fifth_bits(__m256i h) {
  __m256i at4 = h;
  if constexpr (j < 4) at4 = _mm256_slli_epi16(h, 4 - j);
  if constexpr (j > 4) at4 = _mm256_srli_epi16(h, j - 4);
  return _mm256_and_si256(at4, _mm256_set1_epi8(0x10));
}
inline void unpack_q5(const uint8_t (&q)[4][kRows][4], const uint8_t (&h)[kRows][4], __m256i* w) {
  unpack_nibbles(q, w);
  const __m256i plane = load_256(h);
  w[0] = _mm256_or_si256(w[0], fifth_bits<0>(plane));
  w[1] = _mm256_or_si256(w[1], fifth_bits<1>(plane));
  w[2] = _mm256_or_si256(w[2], fifth_bits<2>(plane));
  w[3] = _mm256_or_si256(w[3], fifth_bits<3>(plane));
  w[4] = _mm256_or_si256(w[4], fifth_bits<4>(plane));
  w[5] = _mm256_or_si256(w[5], fifth_bits<5>(plane));
  w[6] = _mm256_or_si256(w[6], fifth_bits<6>(plane));
  w[7] = _mm256_or_si256(w[7], fifth_bits<7>(plane));
}

template <typename Block>
const Block* token_blocks(const void* a, size_t a_stride, int c) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(a) + static_cast<size_t>(c) * a_stride);
}

// Q4_0 x Q8_0 and Q5_0 x Q8_0 (Block BlockQ4_0x8 / BlockQ5_0x8): the quants are q + 8 / q + 16.
template <class Dot, int NC, typename Block>
void gemm_zero_point(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,
                     float* out, size_t out_stride) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0x8>;
  const auto* g = static_cast<const Block*>(group);
  const int64_t nb = n / kQK;
  __m256 acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(g, b);
    __m256i w[8];
    if constexpr (kQ5) {
      unpack_q5(g[b].q, g[b].h, w);
    } else {
      unpack_nibbles(g[b].q, w);
    }
    const __m256 dw = f16x8(g[b].d);
    for (int c = 0; c < NC; ++c) {
      const ref::BlockQ8_0& ab = token_blocks<ref::BlockQ8_0>(a, a_stride, c)[b];
      // dot(q - 8, a) = dot(q, a) - 8 * sum(a) (16 for Q5_0); q <= 15 (31), |a| <= 127
      const __m256i dot = kQ5 ? Dot::sum8_q5(w, ab.qs) : Dot::sum8_small(w, ab.qs);
      const __m256i lanes = _mm256_sub_epi32(
          dot, _mm256_set1_epi32((kQ5 ? 16 : 8) * a_sums[static_cast<int64_t>(c) * nb + b]));
      acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(f16_to_f32(ab.d))), _mm256_cvtepi32_ps(lanes), acc[c]);
    }
  }
  for (int c = 0; c < NC; ++c) _mm256_storeu_ps(out + static_cast<size_t>(c) * out_stride, acc[c]);
}
template <class Dot, int NC>
void gemm_q4_0(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums, float* out,
               size_t out_stride) {
  gemm_zero_point<Dot, NC, BlockQ4_0x8>(n, group, a, a_stride, a_sums, out, out_stride);
}
template <class Dot, int NC>
void gemm_q5_0(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums, float* out,
               size_t out_stride) {
  gemm_zero_point<Dot, NC, BlockQ5_0x8>(n, group, a, a_stride, a_sums, out, out_stride);
}

// Q4_1 x Q8_1 and Q5_1 x Q8_1 (Block BlockQ4_1x8 / BlockQ5_1x8): dot(d q + m, a) =
// d da dot(q, a) + m (da sum(a)), the Q8_1 block's s. The
// min terms m s follow each block's d term in the one sum, or (Dot::kQ4_1Mins, see
// x8_steps.h) go to a sum of their own, added at the end: that sum's chain of FMAs runs
// beside the d terms', and the per-token dot repeating these steps runs on one FMA per
// block instead of two.
template <class Dot, int NC, typename Block>
void gemm_with_mins(int64_t n, const void* group, const void* a, size_t a_stride, float* out,
                    size_t out_stride) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_1x8>;
  constexpr bool kOwnSum = Dot::kQ4_1Mins == MinTerms::kOwnSum;
  const auto* g = static_cast<const Block*>(group);
  const int64_t nb = n / kQK;
  __m256 acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
  [[maybe_unused]] __m256 acc_m[NC];
  if constexpr (kOwnSum) {
    for (int c = 0; c < NC; ++c) acc_m[c] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(g, b);
    __m256i w[8];
    if constexpr (kQ5) {
      unpack_q5(g[b].q, g[b].h, w);
    } else {
      unpack_nibbles(g[b].q, w);
    }
    const __m256 dw = f16x8(g[b].d);
    const __m256 mw = f16x8(g[b].m);
    for (int c = 0; c < NC; ++c) {
      const ref::BlockQ8_1& ab = token_blocks<ref::BlockQ8_1>(a, a_stride, c)[b];
      // q <= 15 (31), |a| <= 128
      const __m256i lanes = kQ5 ? Dot::sum8_q5(w, ab.qs) : Dot::sum8_small(w, ab.qs);
      acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(f16_to_f32(ab.d))), _mm256_cvtepi32_ps(lanes), acc[c]);
      if constexpr (kOwnSum) {
        acc_m[c] = _mm256_fmadd_ps(mw, _mm256_set1_ps(f16_to_f32(ab.s)), acc_m[c]);
      } else {
        acc[c] = _mm256_fmadd_ps(mw, _mm256_set1_ps(f16_to_f32(ab.s)), acc[c]);
      }
    }
  }
  if constexpr (kOwnSum) {
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_add_ps(acc[c], acc_m[c]);
  }
  for (int c = 0; c < NC; ++c) _mm256_storeu_ps(out + static_cast<size_t>(c) * out_stride, acc[c]);
}
template <class Dot, int NC>
void gemm_q4_1(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
               float* out, size_t out_stride) {
  gemm_with_mins<Dot, NC, BlockQ4_1x8>(n, group, a, a_stride, out, out_stride);
}
template <class Dot, int NC>
void gemm_q5_1(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
               float* out, size_t out_stride) {
  gemm_with_mins<Dot, NC, BlockQ5_1x8>(n, group, a, a_stride, out, out_stride);
}

// sum over k < 8 of w[k] . (the 4 bytes at a + 4k) per int32 lane, for signed weights:
// |w| (wabs) against a with w's sign (a is never -128); pair sums <= 2 * 128 * 127, one
// step per widening.
template <class Dot>
inline __m256i sum8_signed(const __m256i* wabs, const __m256i* w, const int8_t* a) {
  __m256i lanes = _mm256_setzero_si256();
  for (int k = 0; k < 8; ++k) lanes = Dot::dot4(lanes, wabs[k], _mm256_sign_epi8(bcast4(a + 4 * k), w[k]));
  return lanes;
}

// The signed-weight groups: Q8_0's stored bytes and the 4-bit lookup types' codes
// (Q4_0's arrangement: BlockMxfp4x8, and BlockQ4_0x8 holding IQ4_NL rows) looked up in
// `table` (both 128-bit halves; Q8_0 ignores it). w[k] = elements 4k .. 4k + 3 of the 8
// rows as signed bytes, wabs[k] = |w[k]| (Q8_0's -128 becomes 128 as an unsigned byte).
inline void decode_signed(const BlockQ8_0x8& blk, __m256i /*table*/, __m256i* w, __m256i* wabs) {
  for (int k = 0; k < 8; ++k) {
    w[k] = load_256(blk.q[k]);
    wabs[k] = _mm256_sign_epi8(w[k], w[k]);
  }
}
inline void decode_lut4(const uint8_t (&q)[4][kRows][4], __m256i table, __m256i* w, __m256i* wabs) {
  unpack_nibbles(q, w);
  for (int k = 0; k < 8; ++k) {
    w[k] = _mm256_shuffle_epi8(table, w[k]);
    wabs[k] = _mm256_sign_epi8(w[k], w[k]);
  }
}
template <typename Block>
inline void decode_signed(const Block& blk, __m256i table, __m256i* w, __m256i* wabs) {
  decode_lut4(blk.q, table, w, wabs);
}

inline __m256i lut4_table(const int8_t* values) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
}

// The 8 rows' weight scales: the f16 d (Q8_0, IQ4_NL in BlockQ4_0x8), MXFP4's exponent halves.
template <typename Block>
inline __m256 signed_scales(const Block& blk) {
  return f16x8(blk.d);
}
inline __m256 signed_scales(const BlockMxfp4x8& blk) {
  return e8m0_halves8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.e)));
}

// Q8_0, MXFP4 and IQ4_NL x Q8_0: signed weights, |w| against a with w's sign (a is never
// -128); no activation sums needed.
template <class Dot, int NC, typename Block>
void gemm_signed(int64_t n, const void* group, const void* a, size_t a_stride, __m256i table, float* out,
                 size_t out_stride) {
  const auto* g = static_cast<const Block*>(group);
  const int64_t nb = n / kQK;
  __m256 acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_ahead(g, b);
    __m256i w[8];
    __m256i wabs[8];
    decode_signed(g[b], table, w, wabs);
    const __m256 dw = signed_scales(g[b]);
    for (int c = 0; c < NC; ++c) {
      const ref::BlockQ8_0& ab = token_blocks<ref::BlockQ8_0>(a, a_stride, c)[b];
      const __m256i lanes = sum8_signed<Dot>(wabs, w, ab.qs);
      acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(f16_to_f32(ab.d))), _mm256_cvtepi32_ps(lanes), acc[c]);
    }
  }
  for (int c = 0; c < NC; ++c) _mm256_storeu_ps(out + static_cast<size_t>(c) * out_stride, acc[c]);
}
template <class Dot, int NC>
void gemm_q8_0(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
               float* out, size_t out_stride) {
  gemm_signed<Dot, NC, BlockQ8_0x8>(n, group, a, a_stride, _mm256_setzero_si256(), out, out_stride);
}
template <class Dot, int NC>
void gemm_mxfp4(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                float* out, size_t out_stride) {
  gemm_signed<Dot, NC, BlockMxfp4x8>(n, group, a, a_stride, lut4_table(ref::kMxfp4Values), out, out_stride);
}
template <class Dot, int NC>
void gemm_iq4_nl(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                 float* out, size_t out_stride) {
  gemm_signed<Dot, NC, BlockQ4_0x8>(n, group, a, a_stride, lut4_table(ref::kIq4NlValues), out, out_stride);
}

// IQ4_XS x Q8_K (BlockIq4Xsx8): per sub-block, the looked-up weights' signed product times
// the 8 rows' integer scales (Dot::sum8_signed_scaled), summed over the super-block in
// int32 (|lane| <= 8 * 32 * 32 * 127 * 127 < 2^28), then one float step per block.
template <class Dot, int NC>
void gemm_iq4_xs(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                 float* out, size_t out_stride) {
  const auto* g = static_cast<const BlockIq4Xsx8*>(group);
  const __m256i table = lut4_table(ref::kIq4NlValues);
  __m256 acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockIq4Xsx8& blk = g[b];
    const ref::BlockQ8_K* ab[NC];
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) {
      ab[c] = &token_blocks<ref::BlockQ8_K>(a, a_stride, c)[b];
      isum[c] = _mm256_setzero_si256();
    }
    for (int s = 0; s < kQK_K / 32; ++s) {
      __m256i w[8];
      __m256i wabs[8];
      decode_lut4(blk.q[s], table, w, wabs);
      const __m256i scale = Dot::lane_scales(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.sc[s])));
      for (int c = 0; c < NC; ++c) {
        isum[c] = _mm256_add_epi32(isum[c], Dot::sum8_signed_scaled(wabs, w, ab[c]->qs + 32 * s, scale));
      }
    }
    const __m256 dw = f16x8(blk.d);
    for (int c = 0; c < NC; ++c) {
      acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab[c]->d)), _mm256_cvtepi32_ps(isum[c]), acc[c]);
    }
  }
  for (int c = 0; c < NC; ++c) _mm256_storeu_ps(out + static_cast<size_t>(c) * out_stride, acc[c]);
}

// One instantiation of a product for a token count (kernels.h GemmX8Fn less nc).
using ByTokensFn = void (*)(int64_t, const void*, const void*, size_t, const int32_t*, float*, size_t);

}  // namespace
}  // namespace runnel::x8

// Defines the gemm_x8 entries x8.h declares, in the namespace of the ISA file that
// expands it, over that file's integer step `Dot`: one instantiation per token count,
// so the accumulators stay in registers. The K-quant products are written per ISA (their
// layouts pair two int32 lanes per row, and the 256- and 512-bit versions differ in more
// than the step): each ISA file defines x8::gemm_q4_k / gemm_q6_k<Dot, NC> before
// expanding this.
#define RUNNEL_X8_DEFINE_PRODUCT(type, Dot)                                                                 \
  void gemm_x8_##type(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums, \
                      int nc, float* out, size_t out_stride) {                                              \
    static constexpr x8::ByTokensFn kByTokens[kGemmCols] = {                                                \
        x8::gemm_##type<Dot, 1>, x8::gemm_##type<Dot, 2>, x8::gemm_##type<Dot, 3>, x8::gemm_##type<Dot, 4>,   \
        x8::gemm_##type<Dot, 5>, x8::gemm_##type<Dot, 6>, x8::gemm_##type<Dot, 7>, x8::gemm_##type<Dot, 8>};  \
    kByTokens[nc - 1](n, group, a, a_stride, a_sums, out, out_stride);                                      \
  }
#define RUNNEL_X8_DEFINE_PRODUCTS(Dot)  \
  RUNNEL_X8_DEFINE_PRODUCT(q4_0, Dot)   \
  RUNNEL_X8_DEFINE_PRODUCT(q4_1, Dot)   \
  RUNNEL_X8_DEFINE_PRODUCT(q5_0, Dot)   \
  RUNNEL_X8_DEFINE_PRODUCT(q5_1, Dot)   \
  RUNNEL_X8_DEFINE_PRODUCT(q8_0, Dot)   \
  RUNNEL_X8_DEFINE_PRODUCT(q4_k, Dot)   \
  RUNNEL_X8_DEFINE_PRODUCT(q6_k, Dot)   \
  RUNNEL_X8_DEFINE_PRODUCT(mxfp4, Dot)  \
  RUNNEL_X8_DEFINE_PRODUCT(iq4_nl, Dot) \
  RUNNEL_X8_DEFINE_PRODUCT(iq4_xs, Dot)
