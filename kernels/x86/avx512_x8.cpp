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

template <int NC>
struct Q4_0 {
  static void run(int64_t n, const void* g, const void* a, size_t as, const int32_t* sums, float* o, size_t os) {
    x8::gemm_q4_0<VnniDot, NC>(n, g, a, as, sums, o, os);
  }
};
template <int NC>
struct Q8_0 {
  static void run(int64_t n, const void* g, const void* a, size_t as, const int32_t* sums, float* o, size_t os) {
    x8::gemm_q8_0<VnniDot, NC>(n, g, a, as, sums, o, os);
  }
};
template <int NC>
struct Q6_K {
  static void run(int64_t n, const void* g, const void* a, size_t as, const int32_t* sums, float* o, size_t os) {
    x8::gemm_q6_k<VnniDot, NC>(n, g, a, as, sums, o, os);
  }
};

template <int NC>
struct Q4_K {
  static void run(int64_t n, const void* g, const void* a, size_t as, const int32_t* sums, float* o, size_t os) {
    x8::gemm_q4_k<VnniDot, NC>(n, g, a, as, sums, o, os);
  }
};

template <int NC>
struct Q4_1 {
  static void run(int64_t n, const void* g, const void* a, size_t as, const int32_t* sums, float* o, size_t os) {
    x8::gemm_q4_1<VnniDot, NC>(n, g, a, as, sums, o, os);
  }
};

}  // namespace

void gemm_x8_q4_1(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums, int nc,
                  float* out, size_t out_stride) {
  x8::ByTokens<Q4_1>::call(n, group, a, a_stride, a_sums, nc, out, out_stride);
}
void gemm_x8_q4_k(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums, int nc,
                  float* out, size_t out_stride) {
  x8::ByTokens<Q4_K>::call(n, group, a, a_stride, a_sums, nc, out, out_stride);
}
void gemm_x8_q4_0(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums, int nc,
                  float* out, size_t out_stride) {
  x8::ByTokens<Q4_0>::call(n, group, a, a_stride, a_sums, nc, out, out_stride);
}
void gemm_x8_q8_0(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums, int nc,
                  float* out, size_t out_stride) {
  x8::ByTokens<Q8_0>::call(n, group, a, a_stride, a_sums, nc, out, out_stride);
}
void gemm_x8_q6_k(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums, int nc,
                  float* out, size_t out_stride) {
  x8::ByTokens<Q6_K>::call(n, group, a, a_stride, a_sums, nc, out, out_stride);
}

}  // namespace runnel::avx512
