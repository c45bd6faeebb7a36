// Small AVX2 helpers shared by the avx2_*.cpp kernels. Include only from files whose
// name contains "avx2" (they alone are compiled with -mavx2 -mfma -mf16c).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace runnel::avx2 {
// Internal linkage: the avx512_*.cpp files include these too, compiled with the AVX-512
// flags; with external linkage the linker could keep that copy for the AVX2 kernels.
namespace {

// One f16 (raw bits) to float; equal to fp16_to_fp32 for every non-NaN input.
inline float f16(uint16_t h) {
  return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

inline int32_t hsum_epi32(__m256i v) {
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  const __m128i s1 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1));
  return _mm_cvtsi128_si32(s1);
}

inline float hmax(__m256 v) {
  const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  const __m128 m1 = _mm_max_ss(m2, _mm_movehdup_ps(m2));
  return _mm_cvtss_f32(m1);
}

inline __m256 abs_ps(__m256 v) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// 16 bytes of packed nibbles -> 32 bytes in [0, 15]: low nibbles first (elements 0..15),
// then high nibbles (elements 16..31), the legacy-block element order.
inline __m256i unpack_nibbles_16(const uint8_t* qs) {
  // the 16 bytes in both halves (a load, no shuffle), the high half shifted by 4
  const __m256i both =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm256_and_si256(_mm256_srlv_epi64(both, _mm256_setr_epi64x(0, 0, 4, 4)),
                          _mm256_set1_epi8(0x0F));
}

// Half h of a Q6_K block (128 elements) as 4 vectors of 32 quants in [0, 63] (q + 32, as
// stored): vector k holds elements 32k .. 32k + 31 of the half. ql: the half's 64 bytes of
// low 4 bits (ql[l]: elements l and l + 64, ql[32 + l]: l + 32 and l + 96), qh: its 32
// bytes of high 2 bits (bits 2k, 2k + 1 of qh[l] belong to element 32k + l).
inline void unpack_q6_k_half(const uint8_t* ql, const uint8_t* qh, __m256i (&q)[4]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i ql_a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
  const __m256i ql_b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
  q[0] = _mm256_or_si256(_mm256_and_si256(ql_a, low4),
                         _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(0x03)), 4));
  q[1] = _mm256_or_si256(_mm256_and_si256(ql_b, low4),
                         _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(0x0C)), 2));
  q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_a, 4), low4),
                         _mm256_and_si256(h, _mm256_set1_epi8(0x30)));
  q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_b, 4), low4),
                         _mm256_srli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(-64)), 2));
}

// 32 bits (little-endian bytes) -> 32 bytes, 0xFF where bit j is set, else 0.
inline __m256i expand_bits_32(const uint8_t* bits) {
  uint32_t v;
  __builtin_memcpy(&v, bits, sizeof v);
  // byte j of the result reads byte j / 8 of v, then tests bit j % 8 of it.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(v)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// Eight int32 lanes of sum u[i] * s[i] (u unsigned bytes, s signed bytes); each lane
// covers four adjacent bytes. Exact while no int16 pair sum saturates:
// 2 * u_max * |s|_max <= 32767, true for every caller (u <= 128 against |s| <= 127,
// or u <= 63 against |s| <= 128).
inline __m256i dot_u8_s8(__m256i u, __m256i s) {
  const __m256i pairs = _mm256_maddubs_epi16(u, s);
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// Same for two signed byte vectors: |w| becomes the unsigned side, w's sign moves onto a.
// Exact while a has no -128 (our activation quantizers never produce it).
inline __m256i dot_s8_s8(__m256i w, __m256i a) {
  return dot_u8_s8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
}

// 32 int32 values in four vectors (elements 0-7, 8-15, ...) -> 32 int8 in order.
// The packs work per 128-bit half, so the result's dwords come out as
// a0-3 b0-3 c0-3 d0-3 a4-7 b4-7 c4-7 d4-7; the permute restores a b c d order.
inline __m256i pack_32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i abcd = _mm256_packs_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace
}  // namespace runnel::avx2
