// AVX-512 VNNI prompt tiles: gemm_impl.h's templates over vpdpbusd steps (AVX512-VNNI on
// 256-bit vectors, AVX512-VL) in place of maddubs + add + madd, all 8 rows of a run in one
// pass (32 vector registers hold the 8 activation vectors and 8 accumulators). vpdpbusd
// accumulates u8 x s8 products straight into int32 lanes, so there are no int16 limits and
// a block takes one instruction per 4 elements instead of three.
//
// Q8_0 weights are signed, and vpdpbusd wants one unsigned side: the packed activations
// are flipped to a + 128 (xor 0x80, once per block for all rows), which adds 128 * sum(w)
// to every lane; that sum is taken once per weight block and subtracted.
//
// 5-bit quants (Q5_0, Q5_1, Q5_K) go in whole, [0, 31] as the unsigned side: with no
// int16 pair sums there is no need for AVX2's two chains per 32 elements, and AVX512-BW's
// byte masks merge the 5th bit straight from qh (one masked add of 16).
#include "kernels/x86/avx512_gemm.h"

#include "kernels/x86/gemm_impl.h"

namespace runnel::avx512 {
namespace {

using gemm::bcast4;

// sum over 8 steps of (w[4k .. 4k + 3] broadcast) . a[k] per int32 lane, w unsigned and
// a signed bytes. Two chains halve the latency.
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

// The integer steps of gemm_impl.h (contract there) with vpdpbusd; scales by vpmulld.
struct VnniSteps {
  static constexpr int kMaxRows = kGemmRows;
  static constexpr x8::MinTerms kQ4_1Mins = x8::kAvx512Q4_1Mins;

  // |lane| <= 32 * 31 * 127 before a scale
  static __m256i dot32_q4(const uint8_t* w, const __m256i* a) { return dot32_uw(w, a); }
  static __m256i dot32_q4_scaled(const uint8_t* w, const __m256i* a, int scale) {
    return _mm256_mullo_epi32(dot32_uw(w, a), _mm256_set1_epi32(scale));
  }
  static __m256i dot32_q5(const uint8_t* w, const __m256i* a) { return dot32_uw(w, a); }
  static __m256i dot32_q5_scaled(const uint8_t* w, const __m256i* a, int scale) {
    return dot32_q4_scaled(w, a, scale);
  }
  static __m256i dot32_q6(const uint8_t* w, const __m256i* a, int scale0, int scale1) {
    const __m256i lo = _mm256_mullo_epi32(dot16_uw(w, a), _mm256_set1_epi32(scale0));
    const __m256i hi = _mm256_mullo_epi32(dot16_uw(w + 16, a + 4), _mm256_set1_epi32(scale1));
    return _mm256_add_epi32(lo, hi);
  }

  // The nibbles plus 16 where bit j of qh is set (qh's 32 bits are the byte mask as they
  // stand).
  static __m256i unpack_q5(const uint8_t* qs, const uint8_t* qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, sizeof bits);
    const __m256i nibbles = avx2::unpack_nibbles_16(qs);
    return _mm256_mask_add_epi8(nibbles, bits, nibbles, _mm256_set1_epi8(0x10));
  }
  static __m256i add_fifth_bit(__m256i v, __m256i qh, int bit) {
    const __m256i sel = _mm256_set1_epi8(static_cast<char>(1 << bit));
    return _mm256_mask_add_epi8(v, _mm256_test_epi8_mask(qh, sel), v, _mm256_set1_epi8(0x10));
  }

  // The 8 scales and 8 mins (ref::unpack_scale_min_k4's 6-bit fields) as int32, all at
  // once: scales as they are (one vpbroadcastd from memory each), mins as int16 pairs
  // (m, m) for one madd against both packed 16-element sums of their sub-block.
  using K4Scale = int32_t;
  using K4Min = int32_t;
  static void unpack_k4(const uint8_t* packed, int32_t* sc, int32_t* m_pair) {
    alignas(8) uint8_t sc8[8], m8[8];
    ref::unpack_scales_mins_k4(packed, sc8, m8);
    const __m256i m = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(m8)));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(sc),
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc8))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(m_pair),
                        _mm256_or_si256(m, _mm256_slli_epi32(m, 16)));
  }
  static __m256i k4_min(int32_t m_pair) { return _mm256_set1_epi32(m_pair); }

  // Q8_0: a + 128 as unsigned bytes against w; the 128 * sum(w) this adds is subtracted.
  static void signed_acts(const int8_t (*q)[kGemmCols][4], __m256i* a) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int k = 0; k < 8; ++k) a[k] = _mm256_xor_si256(gemm::load_32(q[k]), flip);
  }
  static void q8_0_acts(const gemm::PackedQ8_0& p, __m256i* a) { signed_acts(p.q, a); }
  static __m256i dot32_q8_0(const int8_t* w, const __m256i* a) {
    // 128 * sum(w), in every lane: per-lane partial sums, then a horizontal sum
    const __m256i part =
        _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), gemm::load_32(w));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(part), _mm256_extracti128_si256(part, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    const __m256i corr = _mm256_slli_epi32(_mm256_broadcastd_epi32(s), 7);
    __m256i s0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), a[0], bcast4(w));
    __m256i s1 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), a[1], bcast4(w + 4));
    for (int k = 2; k < 8; k += 2) {
      s0 = _mm256_dpbusd_epi32(s0, a[k], bcast4(w + 4 * k));
      s1 = _mm256_dpbusd_epi32(s1, a[k + 1], bcast4(w + 4 * k + 4));
    }
    return _mm256_sub_epi32(_mm256_add_epi32(s0, s1), corr);
  }
};

}  // namespace

RUNNEL_GEMM_DEFINE_TILES(VnniSteps)

}  // namespace runnel::avx512
