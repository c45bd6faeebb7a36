// AVX2 dots of float rows: F32 x F32, F16 x F16 and BF16 x BF16 (the attention scores and values,
// and F16 weight matrices). Products are fused into four 8-lane float accumulators
// (32 independent chains), reduced at the end. ref sums in double, so the two agree to
// float rounding of the accumulation: |avx2 - ref| <= (n / 32 + 16) * 2^-24 * sum|w a|
// (chains of n / 32 + 3 steps, a 5-level reduction, up to 7 tail adds, ref's one rounding).
// dot_f16_f32 is the F16 dot with its activation already widened (attention widens a
// query or a row of probabilities once, not once per K or V row): the same bits;
// dot_f16_f32_rows does eight such rows per step, their horizontal sums as one transpose.
// Also the f16 row conversions (the KV cache's K rows, attention's query rows) with F16C,
// bit-exact with ref's fp32_to_fp16 / fp16_to_fp32 for every input, NaNs included.
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

// The vector part of sum_i w[i] * a[i] with 8-element vector loads Load (LoadA for a):
// four accumulators (32 independent chains) and an 8-wide tail, added up lane-wise.
// *tail: where the elements left for the scalar tail start.
template <typename T, __m256 (*Load)(const T*), typename A, __m256 (*LoadA)(const A*)>
__m256 row_lanes(int64_t n, const T* w, const A* a, int64_t* tail) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm256_fmadd_ps(Load(w + i + 8 * k), LoadA(a + i + 8 * k), acc[k]);
    }
  }
  for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(Load(w + i), LoadA(a + i), acc[0]);
  *tail = i;
  return _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
}

// sum_i w[i] * a[i]: row_lanes, one horizontal sum, then the scalar tail with Scalar
// (ScalarA for a, where its type differs).
template <typename T, __m256 (*Load)(const T*), float (*Scalar)(T), typename A = T,
          __m256 (*LoadA)(const A*) = Load, float (*ScalarA)(A) = Scalar>
float dot_rows(int64_t n, const T* w, const A* a) {
  int64_t i = 0;
  float sum = hsum(row_lanes<T, Load, A, LoadA>(n, w, a, &i));
  for (; i < n; ++i) sum += Scalar(w[i]) * ScalarA(a[i]);
  return sum;
}

// hsum of eight rows' lanes at once, lane r = hsum(v[r]) bit for bit: the same pairs added
// in the same order ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)), across rows.
inline __m256 hsum8(const __m256* v) {
  // rows (r, r + 4) share a vector from here on: [r's 4 lanes | r + 4's]
  __m256 h[4];
  for (int r = 0; r < 4; ++r) {
    h[r] = _mm256_add_ps(_mm256_permute2f128_ps(v[r], v[r + 4], 0x20),
                         _mm256_permute2f128_ps(v[r], v[r + 4], 0x31));
  }
  // per 128-bit half: [x0 + x2, x1 + x3] of two rows
  const __m256 q0 = _mm256_add_ps(_mm256_shuffle_ps(h[0], h[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(h[0], h[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 q1 = _mm256_add_ps(_mm256_shuffle_ps(h[2], h[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(h[2], h[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // y0 + y1 per row: lanes 0..3 rows 0..3, lanes 4..7 rows 4..7
  return _mm256_add_ps(_mm256_shuffle_ps(q0, q1, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm256_shuffle_ps(q0, q1, _MM_SHUFFLE(3, 1, 3, 1)));
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
  return dot_rows<float, load_f32, scalar_f32>(n, static_cast<const float*>(w),
                                               static_cast<const float*>(a));
}

float dot_f16_f32(int64_t n, const uint16_t* w, const float* a) {
  return dot_rows<uint16_t, load_f16, scalar_f16, float, load_f32, scalar_f32>(n, w, a);
}

void dot_f16_f32_rows(int64_t n, const uint16_t* w, int64_t w_stride, int n_rows, const float* a,
                      float* out) {
  int r = 0;
  for (; r + 8 <= n_rows; r += 8) {
    const uint16_t* rows = w + r * w_stride;
    __m256 lanes[8];
    int64_t tail = n;
    for (int j = 0; j < 8; ++j) {
      lanes[j] = row_lanes<uint16_t, load_f16, float, load_f32>(n, rows + j * w_stride, a, &tail);
    }
    _mm256_storeu_ps(out + r, hsum8(lanes));
    for (int j = 0; j < 8; ++j) {
      for (int64_t i = tail; i < n; ++i) out[r + j] += scalar_f16(rows[j * w_stride + i]) * a[i];
    }
  }
  for (; r < n_rows; ++r) out[r] = dot_f16_f32(n, w + r * w_stride, a);
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
