// AVX2 dots of float rows: F32 x F32, F16 x F16 and BF16 x BF16 (the attention scores and values,
// and F16 weight matrices). Products are fused into four 8-lane float accumulators
// (32 independent chains), reduced at the end. ref sums in double, so the two agree to
// float rounding of the accumulation: |avx2 - ref| <= (n / 32 + 16) * 2^-24 * sum|w a|
// (chains of n / 32 + 3 steps, a 5-level reduction, up to 7 tail adds, ref's one rounding).
// Attention's F16 x F32 dots (an f16 row against queries / probabilities already widened,
// one row or several at once) repeat the F16 dot's steps: its bits, each f16 piece
// converted once for all the float rows.
// Also the f16 row conversions (the KV cache's K rows, attention's query rows) with F16C,
// bit-exact with ref's fp32_to_fp16 / fp16_to_fp32 for every input, NaNs included.
#include <type_traits>
#include <utility>

#include "kernels/fp16.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx2_common.h"

namespace runnel::avx2 {
namespace {

// The row formats: an element type, an 8-element vector load and one element's conversion.
struct F32 {
  using Elem = float;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static float scalar(float v) { return v; }
};

struct F16 {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float scalar(uint16_t v) { return f16(v); }
};

// bf16 is the top half of a float32: widen to 32 bits and shift into place.
struct BF16 {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static float scalar(uint16_t v) { return bf16_to_fp32(v); }
};

// f(0), f(1), .., f(N - 1) as straight-line code, each index a constant: the chains below
// then stay in registers (g++ leaves an array indexed in a loop it did not unroll early,
// such as one over rows and chains, in memory).
template <int N, typename F>
inline void unrolled(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

// out[j * out_stride] = sum_i w[i] * a[j * a_stride + i] for j < kA, each 8-element piece
// of w loaded (converted) once for all kA rows. Per row: 4 chains of 8 lanes over
// 32-element steps, 8-element steps into chain 0, the chains added pairwise and the lanes
// summed, then the tail one scalar product at a time (the same expression for every row
// and kA, so g++ fuses it alike). A row's result depends on its own operands only, the
// same for every kA: vec_dot_f16, dot_f16_f32 and dot_f16_f32_multi give the same bits
// where the float rows hold the f16 activation's values. flatten: the lambdas inlined
// (else g++ calls them, the chains in memory); up to 3 rows keep all chains in registers.
template <typename W, typename A, int kA>
[[gnu::flatten]] void dot_rows(int64_t n, const typename W::Elem* w, const typename A::Elem* a,
                               int64_t a_stride, float* out, int64_t out_stride) {
  __m256 acc[kA][4];
  unrolled<kA>([&](auto j) {
    unrolled<4>([&](auto k) { acc[j][k] = _mm256_setzero_ps(); });
  });
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    unrolled<4>([&](auto k) {
      const __m256 wk = W::load(w + i + 8 * k);
      unrolled<kA>([&](auto j) {
        acc[j][k] = _mm256_fmadd_ps(wk, A::load(a + j * a_stride + i + 8 * k), acc[j][k]);
      });
    });
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 wi = W::load(w + i);
    unrolled<kA>([&](auto j) {
      acc[j][0] = _mm256_fmadd_ps(wi, A::load(a + j * a_stride + i), acc[j][0]);
    });
  }
  float sum[kA];
  unrolled<kA>([&](auto j) {
    sum[j] = hsum(_mm256_add_ps(_mm256_add_ps(acc[j][0], acc[j][1]),
                                _mm256_add_ps(acc[j][2], acc[j][3])));
  });
  for (; i < n; ++i) {
    const float wi = W::scalar(w[i]);
    unrolled<kA>([&](auto j) { sum[j] += wi * A::scalar(a[j * a_stride + i]); });
  }
  unrolled<kA>([&](auto j) { out[j * out_stride] = sum[j]; });
}

// One row pair: dot_rows for kA = 1.
template <typename W, typename A>
[[gnu::flatten]] float dot_row(int64_t n, const void* w, const void* a) {
  float out;
  dot_rows<W, A, 1>(n, static_cast<const typename W::Elem*>(w),
                    static_cast<const typename A::Elem*>(a), 0, &out, 0);
  return out;
}

// Eight floats to halves as fp32_to_fp16 rounds them. vcvtps2ph already rounds to nearest
// even (65520 and up to inf, subnormal halves, signed zeros) but keeps a NaN's payload bits,
// where ref gives every NaN sign | 0x7E00: NaN lanes become sign | quiet NaN first.
inline __m128i encode_f16(__m256 x) {
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 quiet = _mm256_or_ps(_mm256_and_ps(x, _mm256_set1_ps(-0.0f)),
                                    _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)));
  return _mm256_cvtps_ph(_mm256_blendv_ps(x, quiet, nan),
                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// Eight halves to floats as fp16_to_fp32 widens them. vcvtph2ps sets the quiet bit (float
// bit 22) of a signalling NaN; ref keeps the half's bits, so that bit is cleared again
// where the half is a NaN whose own quiet bit (bit 9) is clear.
inline __m256 decode_f16(__m128i h) {
  const __m256i bits = _mm256_castps_si256(_mm256_cvtph_ps(h));
  const __m256i wide = _mm256_cvtepu16_epi32(h);
  const __m256i magnitude = _mm256_and_si256(wide, _mm256_set1_epi32(0x7FFF));
  const __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7C00));
  const __m256i quiet_bit = _mm256_set1_epi32(0x400000);
  const __m256i signalling = _mm256_andnot_si256(_mm256_slli_epi32(wide, 13), quiet_bit);
  return _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_and_si256(nan, signalling), bits));
}

}  // namespace

void quantize_row_f16(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), encode_f16(_mm256_loadu_ps(src + i)));
  }
  for (; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
}

void dequantize_row_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i,
                     decode_f16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
  }
  for (; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
}

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  return dot_row<F32, F32>(n, w, a);
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  return dot_row<BF16, BF16>(n, w, a);
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  return dot_row<F16, F16>(n, w, a);
}

float dot_f16_f32(int64_t n, const uint16_t* w, const float* a) {
  return dot_row<F16, F32>(n, w, a);
}

void dot_f16_f32_multi(int64_t n, const uint16_t* w, const float* a, int64_t a_stride, int n_a,
                       float* out, int64_t out_stride) {
  // Up to three rows a pass: their 12 chains, the widened piece of w and a spare fill the 16
  // ymm registers (four rows spill two chains and measured no faster).
  int j = 0;
  for (; j + 3 <= n_a; j += 3) {
    dot_rows<F16, F32, 3>(n, w, a + j * a_stride, a_stride, out + j * out_stride, out_stride);
  }
  const float* aj = a + j * a_stride;
  float* oj = out + j * out_stride;
  if (n_a - j == 2) dot_rows<F16, F32, 2>(n, w, aj, a_stride, oj, out_stride);
  if (n_a - j == 1) dot_rows<F16, F32, 1>(n, w, aj, a_stride, oj, out_stride);
}

}  // namespace runnel::avx2
