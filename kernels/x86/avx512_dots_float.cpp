// AVX-512 dots of float rows: F32 x F32, F16 x F16, BF16 x BF16. Products are fused into
// four 16-lane float accumulators (64 independent chains) and reduced at the end; the last
// n % 16 (BF16: n % 32) elements come in through a masked load (zeros elsewhere), so there
// is no scalar tail. ref sums float products in double; the two agree to float rounding of
// the accumulation: chains of at most n / 64 + 2 steps and a 6-level reduction, so
// |avx512 - ref| <= (n / 32 + 16) * 2^-24 * S (S = sum |w_i a_i|), the AVX2 bound.
//
// BF16 has two versions. vec_dot_bf16 widens exactly (a bf16 is the top half of an f32:
// even elements shifted up, odd ones masked in place) and uses FMA; it runs on any AVX-512
// CPU. vec_dot_bf16_dpbf16 uses vdpbf16ps (AVX512-BF16; this one function is compiled for
// it): per f32 lane, two bf16 x bf16 products (exact in f32: 8-bit x 8-bit significands)
// added in turn, so chains are n / 64 + 2 roundings as above. Unlike ref the instruction
// treats bf16 subnormal inputs (|x| < 2^-126) as zero and flushes subnormal results, so
// |dpbf16 - ref| <= (n / 32 + 16) * 2^-24 * S + S_sub + n * 2^-125, S_sub = sum |w_i a_i|
// over the i where w_i or a_i is subnormal. Activations here are BF16 already (ref's
// vec_dot_type), so no hi + lo split of f32 activations is needed.
#include "kernels/x86/avx512_dots.h"

// g++ 12 warns inside its own 512-bit intrinsics (_mm512_cvtph_ps, _mm512_slli_epi32,
// _mm512_reduce_add_ps) that their _mm512_undefined_* placeholder is read uninitialized
// (GCC PR 105593, fixed in 13); the values are never used.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace runnel::avx512 {
// Internal linkage: compiled with the AVX-512 flags (see avx2_common.h).
namespace {

// Mask of the first `count` (< 32) 16-bit / f32 elements.
inline __mmask32 first_32(int64_t count) {
  return static_cast<__mmask32>((uint64_t{1} << count) - 1);
}
inline __mmask16 first_16(int64_t count) {
  return static_cast<__mmask16>((1u << count) - 1);
}

inline float reduce(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

// F32 and F16: Load(p) gives 16 floats, LoadTail(p, count) the first count (< 16), zeros
// after them.
template <typename T, __m512 (*Load)(const T*), __m512 (*LoadTail)(const T*, int64_t)>
float dot_rows16(int64_t n, const T* w, const T* a) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm512_fmadd_ps(Load(w + i + 16 * k), Load(a + i + 16 * k), acc[k]);
    }
  }
  for (int k = 0; i + 16 <= n; i += 16, ++k) {
    acc[k] = _mm512_fmadd_ps(Load(w + i), Load(a + i), acc[k]);
  }
  if (i < n) acc[3] = _mm512_fmadd_ps(LoadTail(w + i, n - i), LoadTail(a + i, n - i), acc[3]);
  return reduce(acc[0], acc[1], acc[2], acc[3]);
}

inline __m512 load_f32(const float* p) {
  return _mm512_loadu_ps(p);
}
inline __m512 load_f32_tail(const float* p, int64_t count) {
  return _mm512_maskz_loadu_ps(first_16(count), p);
}
inline __m512 load_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load_f16_tail(const uint16_t* p, int64_t count) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(static_cast<__mmask16>(first_16(count)), p));
}

// 32 bf16 as two exact f32 vectors: the even elements (low halves of the 32-bit lanes,
// shifted up) and the odd ones (high halves, low bits cleared).
inline __m512 bf16_even(__m512i v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
inline __m512 bf16_odd(__m512i v) {
  const __m512i high_half = _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  return _mm512_castsi512_ps(_mm512_and_si512(v, high_half));
}
inline __m512i load_bf16x32(const uint16_t* p) {
  return _mm512_loadu_si512(p);
}
inline __m512i load_bf16x32_tail(const uint16_t* p, int64_t count) {
  return _mm512_maskz_loadu_epi16(first_32(count), p);
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  return dot_rows16<float, load_f32, load_f32_tail>(n, static_cast<const float*>(w),
                                                    static_cast<const float*>(a));
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  return dot_rows16<uint16_t, load_f16, load_f16_tail>(n, static_cast<const uint16_t*>(w),
                                                       static_cast<const uint16_t*>(a));
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 2; ++k) {
      const __m512i wv = load_bf16x32(x + i + 32 * k);
      const __m512i av = load_bf16x32(y + i + 32 * k);
      acc[2 * k] = _mm512_fmadd_ps(bf16_even(wv), bf16_even(av), acc[2 * k]);
      acc[2 * k + 1] = _mm512_fmadd_ps(bf16_odd(wv), bf16_odd(av), acc[2 * k + 1]);
    }
  }
  if (i < n) {  // up to 63 left: one full step and / or one masked step
    __m512i wv;
    __m512i av;
    if (i + 32 <= n) {
      wv = load_bf16x32(x + i);
      av = load_bf16x32(y + i);
      acc[0] = _mm512_fmadd_ps(bf16_even(wv), bf16_even(av), acc[0]);
      acc[1] = _mm512_fmadd_ps(bf16_odd(wv), bf16_odd(av), acc[1]);
      i += 32;
    }
    if (i < n) {
      wv = load_bf16x32_tail(x + i, n - i);
      av = load_bf16x32_tail(y + i, n - i);
      acc[2] = _mm512_fmadd_ps(bf16_even(wv), bf16_even(av), acc[2]);
      acc[3] = _mm512_fmadd_ps(bf16_odd(wv), bf16_odd(av), acc[3]);
    }
  }
  return reduce(acc[0], acc[1], acc[2], acc[3]);
}

__attribute__((target("avx512bf16"))) float vec_dot_bf16_dpbf16(int64_t n, const void* w,
                                                                const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 128 <= n; i += 128) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm512_dpbf16_ps(acc[k], (__m512bh)_mm512_loadu_si512(x + i + 32 * k),
                                (__m512bh)_mm512_loadu_si512(y + i + 32 * k));
    }
  }
  for (int k = 0; i + 32 <= n; i += 32, ++k) {
    acc[k] = _mm512_dpbf16_ps(acc[k], (__m512bh)_mm512_loadu_si512(x + i),
                              (__m512bh)_mm512_loadu_si512(y + i));
  }
  if (i < n) {
    const __mmask32 m = first_32(n - i);
    acc[3] = _mm512_dpbf16_ps(acc[3], (__m512bh)_mm512_maskz_loadu_epi16(m, x + i),
                              (__m512bh)_mm512_maskz_loadu_epi16(m, y + i));
  }
  return reduce(acc[0], acc[1], acc[2], acc[3]);
}

}  // namespace runnel::avx512
