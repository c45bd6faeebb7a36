// NEON batched products of float weight rows (F32, F16, BF16) for prefill
// (TypeKernels::gemm, kernels/kernels.h) against the f32 groups of float_gemm_pack.h; both
// NEON tables (plain Advanced SIMD: no bf16 dot in the baseline ISA, so bf16 widens by a
// shift, f16 by fcvtl, both exact).
//
// vec_dot widens one weight chunk and one activation chunk per two FMAs. Here a tile of
// kTileRows weight rows x kTileCols tokens keeps 2 * kTileRows * kTileCols accumulators
// (the low and high 4 lanes of a chunk of 8): each row's chunk is loaded and widened once
// and meets 4 tokens, each token's chunk (already f32) meets 2 rows: 16 FMAs per 4
// widened and 4 plain vector loads, 22 of the 32 vector registers live.
//
// Bound: chunks are summed in blocks of kBlockChunks FMA steps into fresh accumulators,
// whose low and high halves are then added to running totals, so a lane's error is that
// of an 8-step chain, one add, n / 64 additions and a 2-level horizontal sum:
// |gemm - ref| <= (n / 64 + 12) * 2^-24 * sum|w a| + ref's rounding, within vec_dot's
// (n / 32 + 16) * 2^-24 * sum|w a| (tests/kernels/arm/neon_gemm_test.cpp).
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_common.h"
#include "kernels/float_gemm_pack.h"
#include "kernels/kernels.h"

namespace runnel::neon {
namespace {

constexpr int kTileRows = 2;
constexpr int kTileCols = 4;
constexpr int kBlockChunks = 8;
static_assert(kGemmCols % kTileCols == 0, "a tile never reads past the group");

template <typename T>
using Load8 = void (*)(const T*, float32x4_t*, float32x4_t*);

// The last m (< 8) elements of a row, zero-filled to a chunk.
template <typename T, Load8<T> Load>
inline void load_tail(const T* p, int64_t m, float32x4_t* lo, float32x4_t* hi) {
  T buf[kFloatChunk] = {};
  std::memcpy(buf, p, static_cast<size_t>(m) * sizeof(T));
  Load(buf, lo, hi);
}

// acc[r][c][h] += half h of w[r] * half h of (chunk k of token c); a = the group's chunk 0
// of the tile's first token.
template <int R>
inline void step(float32x4_t (&acc)[R][kTileCols][2], const float32x4_t (&w)[R][2], const float* a,
                 int64_t k) {
  for (int c = 0; c < kTileCols; ++c) {
    const float* chunk = a + (k * kGemmCols + c) * kFloatChunk;
    const float32x4_t lo = vld1q_f32(chunk), hi = vld1q_f32(chunk + 4);
    for (int r = 0; r < R; ++r) {
      acc[r][c][0] = vfmaq_f32(acc[r][c][0], w[r][0], lo);
      acc[r][c][1] = vfmaq_f32(acc[r][c][1], w[r][1], hi);
    }
  }
}

// Chunks [k0, k1) of R rows (w_stride apart) x the kTileCols tokens from c0, summed into
// fresh accumulators and then added to total[r][c] (a row of kGemmCols per row).
template <typename T, Load8<T> Load, int R>
inline void block_tile(int64_t n, int64_t k0, int64_t k1, const uint8_t* w, size_t w_stride,
                       const float* packed, int c0, float32x4_t (*total)[kGemmCols]) {
  const float* a = packed + c0 * kFloatChunk;
  const int64_t full = n / kFloatChunk;
  const int64_t k_full = std::min(k1, full);
  float32x4_t acc[R][kTileCols][2];
  for (auto& row : acc)
    for (auto& cell : row) cell[0] = cell[1] = vdupq_n_f32(0.0f);
  for (int64_t k = k0; k < k_full; ++k) {
    float32x4_t wv[R][2];
    for (int r = 0; r < R; ++r) {
      const T* row = reinterpret_cast<const T*>(w + static_cast<size_t>(r) * w_stride);
      Load(row + k * kFloatChunk, &wv[r][0], &wv[r][1]);
    }
    step<R>(acc, wv, a, k);
  }
  if (k_full < k1) {  // the rows' tail, in the last block
    float32x4_t wv[R][2];
    for (int r = 0; r < R; ++r) {
      const T* row = reinterpret_cast<const T*>(w + static_cast<size_t>(r) * w_stride);
      load_tail<T, Load>(row + full * kFloatChunk, n - full * kFloatChunk, &wv[r][0], &wv[r][1]);
    }
    step<R>(acc, wv, a, full);
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < kTileCols; ++c) {
      total[r][c0 + c] = vaddq_f32(total[r][c0 + c], vaddq_f32(acc[r][c][0], acc[r][c][1]));
    }
  }
}

// The whole gemm, one block of kBlockChunks chunks at a time: a block's weights (<= 8
// rows x 64 elements) and packed activations (8 tokens x 64 f32) stay in L1 while every
// tile of the group passes over them; the running totals (8 x 8 vectors) live on the
// stack. Tokens past nc are zeros in the group and are not stored.
template <typename T, Load8<T> Load>
void gemm_rows(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* a = static_cast<const float*>(packed);
  const int64_t chunks = float_gemm_chunks(n);
  float32x4_t total[kGemmRows][kGemmCols];
  for (auto& row : total)
    for (auto& v : row) v = vdupq_n_f32(0.0f);
  for (int64_t k0 = 0; k0 < chunks; k0 += kBlockChunks) {
    const int64_t k1 = std::min<int64_t>(k0 + kBlockChunks, chunks);
    for (int c0 = 0; c0 < nc; c0 += kTileCols) {
      int r = 0;
      for (; r + kTileRows <= nr; r += kTileRows) {
        block_tile<T, Load, kTileRows>(n, k0, k1, wb + static_cast<size_t>(r) * w_stride, w_stride,
                                       a, c0, total + r);
      }
      if (r < nr) {
        block_tile<T, Load, 1>(n, k0, k1, wb + static_cast<size_t>(r) * w_stride, w_stride, a, c0,
                               total + r);
      }
    }
  }
  for (int c = 0; c < nc; ++c) {
    for (int r = 0; r < nr; ++r)
      out[static_cast<size_t>(c) * out_stride + r] = vaddvq_f32(total[r][c]);
  }
}

}  // namespace

void gemm_f32(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
              float* out, size_t out_stride) {
  gemm_rows<float, load8_f32>(n, w, w_stride, nr, packed, nc, out, out_stride);
}

void gemm_f16(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
              float* out, size_t out_stride) {
  gemm_rows<uint16_t, load8_f16>(n, w, w_stride, nr, packed, nc, out, out_stride);
}

void gemm_bf16(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) {
  gemm_rows<uint16_t, load8_bf16>(n, w, w_stride, nr, packed, nc, out, out_stride);
}

}  // namespace runnel::neon
