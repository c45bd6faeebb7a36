// AVX2 prompt tiles (TypeKernels::gemm, kernels/kernels.h): gemm_impl.h's templates over
// maddubs steps, 4 weight rows x 8 tokens per pass; and the activation packing
// (TypeKernels::gemm_pack) that both x86 tables' tiles read (gemm_packed.h).
//
// maddubs multiplies unsigned weight bytes by signed activation bytes into saturating int16
// pair sums, so steps add up in int16 only while they cannot reach 32767, and a madd
// (against 1 or the integer scale) widens them to int32.
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/gemm_impl.h"

namespace runnel::avx2 {
namespace {

using gemm::bcast4;

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

// Two maddubs steps (8 elements) as int16 pairs.
inline __m256i dot8_pairs(const uint8_t* w, const __m256i* a) {
  return _mm256_add_epi16(_mm256_maddubs_epi16(bcast4(w), a[0]),
                          _mm256_maddubs_epi16(bcast4(w + 4), a[1]));
}

// The integer steps of gemm_impl.h (contract there) on AVX2's 16 ymm registers.
struct MaddubsSteps {
  // 8 activation vectors and 4 accumulators in the 16 ymm registers.
  static constexpr int kMaxRows = 4;
  static constexpr x8::MinTerms kQ4_1Mins = x8::kAvx2Q4_1Mins;

  static __m256i dot32_q4(const uint8_t* w, const __m256i* a) {  // pair sums <= 30480
    return _mm256_madd_epi16(dot32_small(w, a), _mm256_set1_epi16(1));
  }
  static __m256i dot32_q4_scaled(const uint8_t* w, const __m256i* a, int scale) {
    return _mm256_madd_epi16(dot32_small(w, a), _mm256_set1_epi16(static_cast<int16_t>(scale)));
  }
  static __m256i dot32_q5(const uint8_t* w, const __m256i* a) {
    return dot32_5bit(w, a, _mm256_set1_epi16(1));
  }
  static __m256i dot32_q5_scaled(const uint8_t* w, const __m256i* a, int scale) {
    return dot32_5bit(w, a, _mm256_set1_epi16(static_cast<int16_t>(scale)));
  }
  // Two steps per int16 sum: 2 * 2 * 63 * 127 = 32004 <= 32767.
  static __m256i dot32_q6(const uint8_t* w, const __m256i* a, int scale0, int scale1) {
    const __m256i s0 = _mm256_set1_epi16(static_cast<int16_t>(scale0));
    const __m256i s1 = _mm256_set1_epi16(static_cast<int16_t>(scale1));
    const __m256i lo = _mm256_add_epi32(_mm256_madd_epi16(dot8_pairs(w, a), s0),
                                        _mm256_madd_epi16(dot8_pairs(w + 8, a + 2), s0));
    const __m256i hi = _mm256_add_epi32(_mm256_madd_epi16(dot8_pairs(w + 16, a + 4), s1),
                                        _mm256_madd_epi16(dot8_pairs(w + 24, a + 6), s1));
    return _mm256_add_epi32(lo, hi);
  }
  // Four steps in one int16 sum: 4 * 2 * 7 * 127 = 7112.
  static __m256i dot16_q3_scaled(const uint8_t* w, const __m256i* a, int scale) {
    const __m256i pairs = _mm256_add_epi16(dot8_pairs(w, a), dot8_pairs(w + 8, a + 2));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(static_cast<int16_t>(scale)));
  }

  // Nibbles plus bit j of qh as 16.
  static __m256i unpack_q5(const uint8_t* qs, const uint8_t* qh) {
    return _mm256_or_si256(unpack_nibbles_16(qs),
                           _mm256_and_si256(expand_bits_32(qh), _mm256_set1_epi8(0x10)));
  }
  static __m256i add_fifth_bit(__m256i v, __m256i qh, int bit) {
    const __m256i sel = _mm256_set1_epi8(static_cast<char>(1 << bit));
    return _mm256_or_si256(v, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, sel), sel),
                                               _mm256_set1_epi8(0x10)));
  }

  // Bytes, unpacked by word arithmetic (AVX-512's int32 unpacking measured 0.92x here).
  using K4Scale = uint8_t;
  using K4Min = uint8_t;
  static void unpack_k4(const uint8_t* packed, uint8_t* sc, uint8_t* m) {
    ref::unpack_scales_mins_k4(packed, sc, m);
  }
  static __m256i k4_min(uint8_t m) { return _mm256_set1_epi16(m); }

  // Q8_0: |w| against a with w's sign, pair sums <= 2 * 127 * 127: one step per madd.
  static void signed_acts(const int8_t (*q)[kGemmCols][4], __m256i* a) {
    for (int k = 0; k < 8; ++k) a[k] = gemm::load_32(q[k]);
  }
  static void q8_0_acts(const gemm::PackedQ8_0& p, __m256i* a) { signed_acts(p.q, a); }
  static __m256i dot32_q8_0(const int8_t* w, const __m256i* a) {
    alignas(32) int8_t qw[32];
    alignas(32) uint8_t qabs[32];
    const __m256i wq = gemm::load_32(w);
    _mm256_store_si256(reinterpret_cast<__m256i*>(qw), wq);
    _mm256_store_si256(reinterpret_cast<__m256i*>(qabs), _mm256_sign_epi8(wq, wq));
    __m256i lanes = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
      const __m256i signed_a = _mm256_sign_epi8(a[k], bcast4(qw + 4 * k));
      const __m256i pairs = _mm256_maddubs_epi16(bcast4(qabs + 4 * k), signed_a);
      lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
    return lanes;
  }
};

}  // namespace

// ---------------------------------------------------------------- packing

namespace {

// Up to kGemmCols activation rows (Block: Q8_0, Q8_1 or Q8_K, a_stride apart) into one
// packed group (Packed, gemm_packed.h); missing tokens stay zero.
template <typename Block, typename Packed>
void pack_group(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  constexpr int kElements = sizeof(Block::qs);
  auto* p = static_cast<Packed*>(packed);
  std::memset(p, 0, static_cast<size_t>(n / kElements) * sizeof(Packed));
  for (int c = 0; c < nc; ++c) {
    const auto* y = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(a) +
                                                   static_cast<size_t>(c) * a_stride);
    for (int64_t b = 0; b < n / kElements; ++b) {
      if constexpr (std::is_same_v<Block, ref::BlockQ8_K>) {
        p[b].d[c] = y[b].d;
        for (int pg = 0; pg < kQK_K / 32; ++pg) {
          p[b].bsums[pg][c][0] = y[b].bsums[2 * pg];
          p[b].bsums[pg][c][1] = y[b].bsums[2 * pg + 1];
        }
      } else if constexpr (std::is_same_v<Block, ref::BlockQ8_1>) {
        p[b].d[c] = fp16_to_fp32(y[b].d);
        p[b].s[c] = fp16_to_fp32(y[b].s);
      } else {
        p[b].d[c] = fp16_to_fp32(y[b].d);
        int32_t sum = 0;
        for (int i = 0; i < kQK; ++i) sum += y[b].qs[i];
        p[b].sum[c] = sum;
      }
      // the token's quants into column c: q[k][c] = elements 4k .. 4k + 3
      for (int k = 0; k < kElements / 4; ++k) std::memcpy(p[b].q[k][c], y[b].qs + 4 * k, 4);
    }
  }
}

}  // namespace

size_t gemm_pack_bytes_q8_0(int64_t n) {
  return static_cast<size_t>(n / kQK) * sizeof(gemm::PackedQ8_0);
}
size_t gemm_pack_bytes_q8_1(int64_t n) {
  return static_cast<size_t>(n / kQK) * sizeof(gemm::PackedQ8_1);
}
size_t gemm_pack_bytes_q8_k(int64_t n) {
  return static_cast<size_t>(n / kQK_K) * sizeof(gemm::PackedQ8_K);
}
void gemm_pack_q8_0(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  pack_group<ref::BlockQ8_0, gemm::PackedQ8_0>(n, a, a_stride, nc, packed);
}
void gemm_pack_q8_1(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  pack_group<ref::BlockQ8_1, gemm::PackedQ8_1>(n, a, a_stride, nc, packed);
}
void gemm_pack_q8_k(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  pack_group<ref::BlockQ8_K, gemm::PackedQ8_K>(n, a, a_stride, nc, packed);
}

// ---------------------------------------------------------------- tiles

RUNNEL_GEMM_DEFINE_TILES(MaddubsSteps)
// Not yet on VNNI: the avx512 table keeps these two.
RUNNEL_GEMM_DEFINE_TILE(q2_k, k2_rows, ref::BlockQ2_K, MaddubsSteps)
RUNNEL_GEMM_DEFINE_TILE(q3_k, k2_rows, ref::BlockQ3_K, MaddubsSteps)

}  // namespace runnel::avx2
