// AVX2 dots of float rows: F32 x F32, F16 x F16 and BF16 x BF16 (the attention scores and values,
// and F16 weight matrices). Products are fused into four 8-lane float accumulators
// (32 independent chains), reduced at the end. ref sums in double, so the two agree to
// float rounding of the accumulation: |avx2 - ref| <= (n / 32 + 16) * 2^-24 * sum|w a|
// (chains of n / 32 + 3 steps, a 5-level reduction, up to 7 tail adds, ref's one rounding).
#include "kernels/fp16.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx2_common.h"

namespace runnel::avx2 {
namespace {

inline __m256 load_f32(const float* p) {
  return _mm256_loadu_ps(p);
}

inline __m256 load_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// bf16 is the top half of a float32: widen to 32 bits and shift into place.
inline __m256 load_bf16(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

inline float scalar_bf16(uint16_t v) {
  return bf16_to_fp32(v);
}

inline float scalar_f32(float v) {
  return v;
}

inline float scalar_f16(uint16_t v) {
  return f16(v);
}

// sum_i w[i] * a[i] with 8-element vector loads Load and scalar conversion Scalar.
template <typename T, __m256 (*Load)(const T*), float (*Scalar)(T)>
float dot_rows(int64_t n, const T* w, const T* a) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm256_fmadd_ps(Load(w + i + 8 * k), Load(a + i + 8 * k), acc[k]);
    }
  }
  for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(Load(w + i), Load(a + i), acc[0]);
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; i < n; ++i) sum += Scalar(w[i]) * Scalar(a[i]);
  return sum;
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  return dot_rows<float, load_f32, scalar_f32>(n, static_cast<const float*>(w),
                                               static_cast<const float*>(a));
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  return dot_rows<uint16_t, load_bf16, scalar_bf16>(n, static_cast<const uint16_t*>(w),
                                                    static_cast<const uint16_t*>(a));
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  return dot_rows<uint16_t, load_f16, scalar_f16>(n, static_cast<const uint16_t*>(w),
                                                  static_cast<const uint16_t*>(a));
}

}  // namespace runnel::avx2
