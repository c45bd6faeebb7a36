// AVX2 dots of the 4-bit lookup formats (MXFP4, IQ4_NL x Q8_0; IQ4_XS x Q8_K):
// lut4_dots_impl.h's templates over maddubs + madd. Pair sums of |w| * a are at most
// 2 * 127 * 127 = 32258, so maddubs never saturates, and the madd that widens them to
// int32 also applies IQ4_XS's sub-block scale (|pair * s| * 2 <= 2^21).
#include "kernels/x86/avx2.h"
#include "kernels/x86/lut4_dots_impl.h"

namespace runnel::avx2 {
namespace {

struct MaddubsLut4Steps {
  static __m256i pairs(__m256i w, __m256i a) {
    return _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
  }
  static __m256i dot(__m256i w, __m256i a) {
    return _mm256_madd_epi16(pairs(w, a), _mm256_set1_epi16(1));
  }
  static __m256i dot_scaled(__m256i w, __m256i a, int scale) {
    return _mm256_madd_epi16(pairs(w, a), _mm256_set1_epi16(static_cast<int16_t>(scale)));
  }
};

}  // namespace

RUNNEL_LUT4_DEFINE_DOTS(MaddubsLut4Steps)

}  // namespace runnel::avx2
