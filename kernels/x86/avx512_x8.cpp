// AVX-512 VNNI instantiation of the x8 products (x8_gemm_impl.h): vpdpbusd steps (no
// int16 limits, one instruction per 4 byte products).
#include "kernels/x86/x8.h"
#include "kernels/x86/x8_gemm_impl.h"

namespace runnel::avx512 {
namespace {

struct VnniDot {
  static __m256i sum8_small(const __m256i* w, const int8_t* a) {
    __m256i s0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w[0], x8::bcast4(a));
    __m256i s1 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w[1], x8::bcast4(a + 4));
    for (int k = 2; k < 8; k += 2) {
      s0 = _mm256_dpbusd_epi32(s0, w[k], x8::bcast4(a + 4 * k));
      s1 = _mm256_dpbusd_epi32(s1, w[k + 1], x8::bcast4(a + 4 * k + 4));
    }
    return _mm256_add_epi32(s0, s1);
  }
  static __m256i dot4(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
  }
};

}  // namespace

RUNNEL_X8_DEFINE_PRODUCTS(VnniDot)

}  // namespace runnel::avx512
