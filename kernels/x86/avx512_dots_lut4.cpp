// AVX-512 VNNI dots of the 4-bit lookup formats (MXFP4, IQ4_NL x Q8_0; IQ4_XS x Q8_K):
// lut4_dots_impl.h's templates over vpdpbusd on 256-bit vectors, |w| as the unsigned side
// against a with w's sign. A lane of four products reaches 4 * 127 * 127 > 2^15, so
// IQ4_XS's sub-block scale is a vpmulld (not avx512_dots_kquants.cpp's int16 vpmaddwd).
#include "kernels/x86/avx512_dots.h"
#include "kernels/x86/lut4_dots_impl.h"

namespace runnel::avx512 {
namespace {

struct VnniLut4Steps {
  static __m256i dot(__m256i w, __m256i a) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(w), _mm256_sign_epi8(a, w));
  }
  static __m256i dot_scaled(__m256i w, __m256i a, int scale) {
    return _mm256_mullo_epi32(dot(w, a), _mm256_set1_epi32(scale));
  }
};

}  // namespace

RUNNEL_LUT4_DEFINE_DOTS(VnniLut4Steps)

}  // namespace runnel::avx512
