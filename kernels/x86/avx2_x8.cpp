// AVX2 instantiation of the x8 products (x8_gemm_impl.h): maddubs steps. For 4-bit
// weights 8 steps add up in int16 (8 * 2 * 15 * 127 = 30480) before one madd widens them.
#include "kernels/x86/x8.h"
#include "kernels/x86/x8_gemm_impl.h"

namespace runnel::avx2 {
namespace {

struct MaddubsDot {
  // sum over k < 8 of w[k] . (the 4 bytes at a + 4k), per int32 lane; w <= 15.
  static __m256i sum8_small(const __m256i* w, const int8_t* a) {
    __m256i s = _mm256_maddubs_epi16(w[0], x8::bcast4(a));
    for (int k = 1; k < 8; ++k) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w[k], x8::bcast4(a + 4 * k)));
    return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
  }
  // acc + u . s per int32 lane (4 byte products), exact while 2 * u * |s| <= 32767.
  static __m256i dot4(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
};

}  // namespace

RUNNEL_X8_DEFINE_PRODUCTS(MaddubsDot)

}  // namespace runnel::avx2
