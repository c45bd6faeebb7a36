// AVX-512 VNNI dots of the k-quants (Q2_K .. Q6_K x Q8_K): kquant_dots_impl.h's templates
// over vpdpbusd on 256-bit vectors (u8 x s8 products summed four at a time into int32
// lanes), weighted by the integer sub-block scales with one vpmaddwd. That needs no
// vpmulld: every lane fits in int16 (|lane| <= 4 * 63 * 127 = 32004 for Q6_K's 6-bit
// quants, less for the others), so a multiplier of (scale, 0) per int32 lane gives
// lane * scale exactly.
#include "kernels/x86/avx512_dots.h"
#include "kernels/x86/kquant_dots_impl.h"

namespace runnel::avx512 {
namespace {

// The integer steps of kquant_dots_impl.h (contract there): the 16 int16 scales stay in a
// vector, and each step picks its multipliers with one permute.
struct VnniKSteps {
  using Scales = __m256i;
  static Scales scales(__m256i sc16) { return sc16; }
  // Multipliers of sub-blocks j (lanes 0-3) and j + 1 (lanes 4-7) of 16, picked out of the
  // 16 int16 scales with one masked vpermw.
  static __m256i dot_pair(__m256i q, __m256i a, Scales sc16, int j) {
    const __m256i halves = _mm256_setr_epi16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m256i idx = _mm256_add_epi16(halves, _mm256_set1_epi16(static_cast<int16_t>(j)));
    const __m256i lanes = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q, a);
    return _mm256_madd_epi16(lanes, _mm256_maskz_permutexvar_epi16(0x5555, idx, sc16));
  }
  // |lane| <= 4 * 31 * 128 fits int16: the two sub-blocks' lanes as an int16 pair, against
  // their two scales (int32 c of sc16) in one madd.
  static __m256i dot_chunk(__m256i lo, __m256i hi, __m256i a_lo, __m256i a_hi, Scales sc16, int c) {
    const __m256i l_lo = _mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, a_lo);
    const __m256i l_hi = _mm256_dpbusd_epi32(_mm256_setzero_si256(), hi, a_hi);
    const __m256i pair = _mm256_mask_blend_epi16(0xAAAA, l_lo, _mm256_slli_epi32(l_hi, 16));
    return _mm256_madd_epi16(pair, _mm256_permutexvar_epi32(_mm256_set1_epi32(c), sc16));
  }
};

}  // namespace

RUNNEL_KQUANT_DEFINE_DOTS(VnniKSteps)

}  // namespace runnel::avx512
