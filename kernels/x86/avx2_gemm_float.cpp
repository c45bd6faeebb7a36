// AVX2 batched products of float weight rows (F32, F16, BF16) for prefill
// (TypeKernels::gemm, kernels/kernels.h) against the f32 groups of float_gemm_pack.h.
//
// vec_dot widens one weight vector and one activation vector per FMA. Here a tile of R
// weight rows x C tokens keeps R * C accumulators of 8 element lanes: per chunk of 8
// elements each weight row is loaded (and widened) once and meets C tokens, and each
// token's chunk (already f32) meets R rows. Tiles measured on Zen 4 (one core, rows in
// L1): F16 / BF16 4 rows x 2 tokens (4 conversions per 8 FMAs), F32 3 x 4.
//
// Bound: chunks are summed in blocks of kBlockChunks FMA steps into fresh accumulators,
// which are then added to the running totals, so a lane's error is that of a
// kBlockChunks-step chain plus n / 64 additions and a 3-level horizontal sum:
// |gemm - ref| <= (n / 64 + 12) * 2^-24 * sum|w a| + ref's rounding, within vec_dot's
// (n / 32 + 16) * 2^-24 * sum|w a| (tests/kernels/x86/avx2_test.cpp).
#include <algorithm>
#include <cstring>

#include "kernels/float_gemm_pack.h"
#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx2_common.h"

namespace runnel::avx2 {
namespace {

constexpr int kBlockChunks = 8;

inline __m256 load8_f32(const float* p) {
  return _mm256_loadu_ps(p);
}

inline __m256 load8_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// bf16 is the top half of a float32: widen to 32 bits and shift into place.
inline __m256 load8_bf16(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// The last m (< 8) elements of a row, zero-filled to a chunk.
template <typename T, __m256 (*Load)(const T*)>
inline __m256 load_tail(const T* p, int64_t m) {
  T buf[kFloatChunk] = {};
  std::memcpy(buf, p, static_cast<size_t>(m) * sizeof(T));
  return Load(buf);
}

// acc[r][c] += w[r] * (chunk k of token c); a = the group's chunk 0 of the tile's first token.
template <int R, int C>
inline void step(__m256 (&acc)[R][C], const __m256 (&w)[R], const float* a, int64_t k) {
  for (int c = 0; c < C; ++c) {
    const __m256 av = _mm256_loadu_ps(a + (k * kGemmCols + c) * kFloatChunk);
    for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(w[r], av, acc[r][c]);
  }
}

// Chunks [k0, k1) of R rows (w_stride apart) x the C tokens from c0, summed into fresh
// accumulators and then added to total[r][c] (a row of kGemmCols per row).
template <typename T, __m256 (*Load)(const T*), int R, int C>
inline void block_tile(int64_t n, int64_t k0, int64_t k1, const uint8_t* w, size_t w_stride,
                       const float* packed, int c0, __m256 (*total)[kGemmCols]) {
  const float* a = packed + c0 * kFloatChunk;
  const int64_t full = n / kFloatChunk;
  const int64_t k_full = std::min(k1, full);
  __m256 acc[R][C];
  for (auto& row : acc)
    for (auto& v : row) v = _mm256_setzero_ps();
  for (int64_t k = k0; k < k_full; ++k) {
    __m256 wv[R];
    for (int r = 0; r < R; ++r) {
      wv[r] =
          Load(reinterpret_cast<const T*>(w + static_cast<size_t>(r) * w_stride) + k * kFloatChunk);
    }
    step<R, C>(acc, wv, a, k);
  }
  if (k_full < k1) {  // the rows' tail, in the last block
    __m256 wv[R];
    for (int r = 0; r < R; ++r) {
      const T* row = reinterpret_cast<const T*>(w + static_cast<size_t>(r) * w_stride);
      wv[r] = load_tail<T, Load>(row + full * kFloatChunk, n - full * kFloatChunk);
    }
    step<R, C>(acc, wv, a, full);
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) total[r][c0 + c] = _mm256_add_ps(total[r][c0 + c], acc[r][c]);
  }
}

// Rows [0, nr) in tiles of R rows (the last nr % R rows in one smaller tile).
template <typename T, __m256 (*Load)(const T*), int R, int C>
inline void row_tiles(int64_t n, int64_t k0, int64_t k1, const uint8_t* w, size_t w_stride, int nr,
                      const float* packed, int c0, __m256 (*total)[kGemmCols]) {
  int r = 0;
  for (; r + R <= nr; r += R) {
    block_tile<T, Load, R, C>(n, k0, k1, w + static_cast<size_t>(r) * w_stride, w_stride, packed,
                              c0, total + r);
  }
  if constexpr (R > 1) {
    if (r < nr) {
      row_tiles<T, Load, R - 1, C>(n, k0, k1, w + static_cast<size_t>(r) * w_stride, w_stride,
                                   nr - r, packed, c0, total + r);
    }
  }
}

// The whole gemm in tiles of R rows x C tokens, one block of kBlockChunks chunks at a
// time: a block's weights (<= 8 rows x 64 elements) and packed activations (8 tokens x
// 64 f32) stay in L1 while every tile of the group passes over them; the running totals
// (8 x 8 vectors) live on the stack. C divides kGemmCols, so a tile never reads past the
// group (tokens past nc are zeros and are not stored).
template <typename T, __m256 (*Load)(const T*), int R, int C>
void gemm_rows(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  static_assert(kGemmCols % C == 0);
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* a = static_cast<const float*>(packed);
  const int64_t chunks = float_gemm_chunks(n);
  __m256 total[kGemmRows][kGemmCols];
  for (auto& row : total)
    for (auto& v : row) v = _mm256_setzero_ps();
  for (int64_t k0 = 0; k0 < chunks; k0 += kBlockChunks) {
    const int64_t k1 = std::min<int64_t>(k0 + kBlockChunks, chunks);
    for (int c0 = 0; c0 < nc; c0 += C)
      row_tiles<T, Load, R, C>(n, k0, k1, wb, w_stride, nr, a, c0, total);
  }
  for (int c = 0; c < nc; ++c) {
    for (int r = 0; r < nr; ++r) out[static_cast<size_t>(c) * out_stride + r] = hsum(total[r][c]);
  }
}

}  // namespace

void gemm_f32(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
              float* out, size_t out_stride) {
  gemm_rows<float, load8_f32, 3, 4>(n, w, w_stride, nr, packed, nc, out, out_stride);
}

void gemm_f16(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
              float* out, size_t out_stride) {
  gemm_rows<uint16_t, load8_f16, 4, 2>(n, w, w_stride, nr, packed, nc, out, out_stride);
}

void gemm_bf16(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  gemm_rows<uint16_t, load8_bf16, 4, 2>(n, w, w_stride, nr, packed, nc, out, out_stride);
}

}  // namespace runnel::avx2
