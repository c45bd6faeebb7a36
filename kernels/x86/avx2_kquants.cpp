// AVX2 k-quant kernels: the Q2_K .. Q6_K dots (x Q8_K) are kquant_dots_impl.h's templates
// over maddubs steps (unsigned weight x signed activation bytes -> int16 pairs, exact for
// q <= 63, |a| <= 127, widened by madd against the integer sub-block scales); and the Q8_K
// activation quantizer, which follows ref's arithmetic exactly (bit-identical blocks).
#include <cmath>
#include <cstring>

#include "kernels/x86/avx2.h"
#include "kernels/x86/kquant_dots_impl.h"

namespace runnel::avx2 {
namespace {

// The integer steps of kquant_dots_impl.h (contract there): the scales as int16 in memory,
// broadcast from there per step.
struct MaddubsKSteps {
  struct Scales {
    alignas(32) int16_t s[16];
  };
  static Scales scales(__m256i sc16) {
    Scales r;
    _mm256_store_si256(reinterpret_cast<__m256i*>(r.s), sc16);
    return r;
  }
  // pair sums <= 2 * 63 * 127 = 16002
  static __m256i dot_pair(__m256i q, __m256i a, const Scales& s, int j) {
    const __m256i scale = _mm256_set_m128i(_mm_set1_epi16(s.s[j + 1]), _mm_set1_epi16(s.s[j]));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, a), scale);
  }
  static __m256i dot_chunk(__m256i lo, __m256i hi, __m256i a_lo, __m256i a_hi, const Scales& s,
                           int c) {
    const __m256i p_lo =
        _mm256_madd_epi16(_mm256_maddubs_epi16(lo, a_lo), _mm256_set1_epi16(s.s[2 * c]));
    const __m256i p_hi =
        _mm256_madd_epi16(_mm256_maddubs_epi16(hi, a_hi), _mm256_set1_epi16(s.s[2 * c + 1]));
    return _mm256_add_epi32(p_lo, p_hi);
  }
};

}  // namespace

RUNNEL_KQUANT_DEFINE_DOTS(MaddubsKSteps)

void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<ref::BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    __m256 vmax = _mm256_setzero_ps();
    for (int i = 0; i < kQK_K; i += 8) vmax = _mm256_max_ps(vmax, abs_ps(_mm256_loadu_ps(x + i)));
    const float amax = hmax(vmax);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    // ref keeps the sign of the first element of largest magnitude.
    float max = 0.0f;
    const __m256 vamax = _mm256_set1_ps(amax);
    for (int i = 0; i < kQK_K; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      const int hits = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(v), vamax, _CMP_EQ_OQ));
      if (hits != 0) {
        max = x[i + __builtin_ctz(static_cast<unsigned>(hits))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    // |max| < 127 / FLT_MAX: iscale is inf and ref's nearest_int(+-inf or NaN) keeps the
    // low byte 0, so every quant is 0 (and d = 1 / iscale = -0 or +0, as there).
    const __m256 vscale = _mm256_set1_ps(std::isinf(iscale) ? 0.0f : iscale);
    for (int i = 0; i < kQK_K; i += 32) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        // ties to even, like ref's nearest_int; packs saturate at 127 like its min(127, .)
        const __m256 v = _mm256_mul_ps(vscale, _mm256_loadu_ps(x + i + 8 * k));
        q[k] =
            _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      }
      const __m256i q8 = pack_32_to_i8(q[0], q[1], q[2], q[3]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs + i), q8);
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * g + i];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace runnel::avx2
