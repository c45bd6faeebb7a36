// The quantizers with importance weights (an imatrix's per-column weights), as
// llama-quantize runs them when given --imatrix: ggml's quantize_q4_0 .. quantize_q6_K with
// quant_weights (the quantize_row_*_impl paths). Learned from ggml-quants.c, reimplemented
// with the same searches and the same float evaluation order, so the blocks are
// bit-identical to llama.cpp's. The fits weight element i of a block by
//   importance[i] * sqrt(sigma2 + x[i]^2)
// (Q6_K: importance[i] alone), sigma2 being a mean square of x: over the whole row for the
// 32-element types (so these take exactly one row), over the super-block for the k-quants
// (twice it for Q3_K .. Q5_K). The k-quants then fit their sub-block scales (and mins) to
// the super-block scale with the summed weights of each sub-block (fit_positive_scales /
// fit_symmetric_qw), and re-quantize the elements against the scales as stored.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/ref/blocks.h"
#include "kernels/ref/group_fits.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/ref/quant_math.h"
#include "kernels/ref/ref.h"

namespace runnel::ref {
namespace {

float mean_square(const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
  return sum / static_cast<float>(n);
}

// w[i] = qw[i] * sqrt(sigma2 + x[i]^2) for i < n.
void fit_weights(const float* x, const float* qw, float sigma2, int n, float* w) {
  for (int i = 0; i < n; ++i) w[i] = qw[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

float sum_of(const float* w, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += w[i];
  return s;
}

// Codes L[32] in [0, 31] of a Q5 block -> nibbles in qs[16] (L[j] low, L[j + 16] high)
// and bit 4 of L[j] as bit j of the little-endian qh.
void pack_q5_block(const uint8_t* L, uint8_t* qs, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    qs[j] = static_cast<uint8_t>((L[j] & 0x0F) | ((L[j + kQK / 2] & 0x0F) << 4));
    bits |= static_cast<uint32_t>((L[j] >> 4) & 1) << j;
    bits |= static_cast<uint32_t>((L[j + kQK / 2] >> 4) & 1) << (j + kQK / 2);
  }
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(bits >> (8 * b));
}

// Symmetric 32-blocks (Q4_0: nmax 8, Q5_0: nmax 16): L = l + nmax in [0, 2 nmax) with the
// block's weighted-fit scale d (x ~ d (L - nmax)).
template <typename Store>
void quantize_symmetric_blocks(const float* x, int64_t n, const float* importance, int nmax,
                               Store store) {
  const float sigma2 = mean_square(x, n);
  float w[kQK];
  int8_t L[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    fit_weights(xb, importance + b * kQK, sigma2, kQK, w);
    const float d = fit_symmetric_qw(kQK, nmax, xb, w, L);
    store(b, d, L);
  }
}

// Affine 32-blocks (Q4_1: nmax 15, Q5_1: nmax 31): x ~ d L - min, L in [0, nmax].
template <typename Store>
void quantize_affine_blocks(const float* x, int64_t n, const float* importance, int nmax,
                            Store store) {
  const float sigma2 = mean_square(x, n);
  float w[kQK];
  uint8_t L[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    fit_weights(xb, importance + b * kQK, sigma2, kQK, w);
    float min;
    const float d = fit_affine(kQK, nmax, xb, w, L, &min, -0.9f, 0.05f, 36, false);
    store(b, d, -min, L);
  }
}

// Q4_K / Q5_K rows with importance: per super-block the weights of its 8 affine
// sub-blocks of 32 (kFitBlocks super-blocks fitted per GroupFits call), then the 6-bit
// scales and mins fitted to d and dmin with each sub-block's weight sum, the elements
// re-quantized at the stored scales, and the levels packed by pack(L, block).
template <typename Block, typename Pack>
void quantize_k4_weighted_rows(const float* src, Block* y, int64_t n, const float* importance, int nmax,
                               bool clamp_63, const GroupFits& fits, Pack pack) {
  const int64_t nb = n / kQK_K;
  float w[kFitBlocks * kQK_K];
  float sw[kFitBlocks * 8];
  float scales[kFitBlocks * 8];
  float mins[kFitBlocks * 8];
  uint8_t L[kFitBlocks * kQK_K];
  for (int64_t b0 = 0; b0 < nb; b0 += kFitBlocks) {
    const int count = static_cast<int>(std::min<int64_t>(kFitBlocks, nb - b0));
    const float* x = src + b0 * kQK_K;
    const float* qw = importance + b0 * kQK_K;
    for (int b = 0; b < count; ++b) {
      const float sigma2 = 2 * mean_square(x + b * kQK_K, kQK_K);
      for (int j = 8 * b; j < 8 * b + 8; ++j) {
        fit_weights(x + 32 * j, qw + 32 * j, sigma2, 32, w + 32 * j);
        sw[j] = sum_of(w + 32 * j, 32);
      }
    }
    fits.affine(8 * count, 32, nmax, x, w, -0.9f, 0.05f, 36, false, scales, mins, L);
    for (int b = 0; b < count; ++b) {
      uint8_t ls[8];
      uint8_t lm[8];
      const float d_block = fit_positive_scales(8, 63, scales + 8 * b, sw + 8 * b, ls);
      const float m_block = fit_positive_scales(8, 63, mins + 8 * b, sw + 8 * b, lm);
      if (clamp_63) {  // Q5_K clamps (a wrapped negative level would be > 63); Q4_K does not
        for (int j = 0; j < 8; ++j) {
          ls[j] = std::min<uint8_t>(63, ls[j]);
          lm[j] = std::min<uint8_t>(63, lm[j]);
        }
      }
      Block& blk = y[b0 + b];
      pack_scale_min_k4(ls, lm, blk.scales);
      blk.d = fp32_to_fp16(d_block);
      blk.dmin = fp32_to_fp16(m_block);
      requantize_k4_levels(x + b * kQK_K, blk.scales, blk.d, blk.dmin, nmax, L + b * kQK_K);
      pack(L + b * kQK_K, blk);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- 32-element blocks

void quantize_row_q4_0_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  if (!importance) return quantize_row_q4_0(src, dst, n);
  auto* y = static_cast<BlockQ4_0*>(dst);
  quantize_symmetric_blocks(src, n, importance, 8, [&](int64_t b, float d, const int8_t* L) {
    y[b].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j)
      y[b].qs[j] = static_cast<uint8_t>(L[j] | (L[j + kQK / 2] << 4));
  });
}

void quantize_row_q5_0_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  if (!importance) return quantize_row_q5_0(src, dst, n);
  auto* y = static_cast<BlockQ5_0*>(dst);
  quantize_symmetric_blocks(src, n, importance, 16, [&](int64_t b, float d, const int8_t* L) {
    y[b].d = fp32_to_fp16(d);
    uint8_t u[kQK];
    for (int j = 0; j < kQK; ++j) u[j] = static_cast<uint8_t>(L[j]);
    pack_q5_block(u, y[b].qs, y[b].qh);
  });
}

void quantize_row_q4_1_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  if (!importance) return quantize_row_q4_1(src, dst, n);
  auto* y = static_cast<BlockQ4_1*>(dst);
  quantize_affine_blocks(src, n, importance, 15,
                         [&](int64_t b, float d, float m, const uint8_t* L) {
                           y[b].d = fp32_to_fp16(d);
                           y[b].m = fp32_to_fp16(m);
                           for (int j = 0; j < kQK / 2; ++j)
                             y[b].qs[j] = static_cast<uint8_t>(L[j] | (L[j + kQK / 2] << 4));
                         });
}

void quantize_row_q5_1_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  if (!importance) return quantize_row_q5_1(src, dst, n);
  auto* y = static_cast<BlockQ5_1*>(dst);
  quantize_affine_blocks(src, n, importance, 31,
                         [&](int64_t b, float d, float m, const uint8_t* L) {
                           y[b].d = fp32_to_fp16(d);
                           y[b].m = fp32_to_fp16(m);
                           pack_q5_block(L, y[b].qs, y[b].qh);
                         });
}

// ---------------------------------------------------------------- k-quants

void quantize_q2_k_weighted(const float* src, void* dst, int64_t n, const float* importance,
                            const GroupFits& fits) {
  auto* y = static_cast<BlockQ2_K*>(dst);
  uint8_t L[kQK_K];
  float w[kQK_K];
  float sw[16];
  float scales[16];
  float mins[16];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    const float* qw = importance + b * kQK_K;
    const float sigma2 = mean_square(x, kQK_K);  // Q2_K: not doubled
    for (int j = 0; j < 16; ++j) {
      fit_weights(x + 16 * j, qw + 16 * j, sigma2, 16, w + 16 * j);
      sw[j] = sum_of(w + 16 * j, 16);
    }
    fits.affine(16, 16, 3, x, w, -0.9f, 0.05f, 36, false, scales, mins, L);
    uint8_t ls[16];
    uint8_t lm[16];
    y[b].d = fp32_to_fp16(fit_positive_scales(16, 15, scales, sw, ls));
    y[b].dmin = fp32_to_fp16(fit_positive_scales(16, 15, mins, sw, lm));
    const float dm = f16(y[b].d);
    const float mm = f16(y[b].dmin);
    for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<uint8_t>(ls[j] | (lm[j] << 4));
    for (int j = 0; j < 16; ++j) {
      const float d = dm * static_cast<float>(y[b].scales[j] & 0x0F);
      if (d == 0.0f) continue;
      const float m = mm * static_cast<float>(y[b].scales[j] >> 4);
      for (int i = 0; i < 16; ++i) {
        L[16 * j + i] = static_cast<uint8_t>(clamp_int(nearest_int((x[16 * j + i] + m) / d), 0, 3));
      }
    }
    pack_2bit(L, y[b].qs);
  }
}

void quantize_q3_k_weighted(const float* src, void* dst, int64_t n, const float* importance,
                            const GroupFits& fits) {
  auto* y = static_cast<BlockQ3_K*>(dst);
  int8_t L[kQK_K];
  float w[kQK_K];
  float sw[16];
  float scales[16];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    const float* qw = importance + b * kQK_K;
    const float sigma2 = 2 * mean_square(x, kQK_K);
    for (int j = 0; j < 16; ++j) {
      fit_weights(x + 16 * j, qw + 16 * j, sigma2, 16, w + 16 * j);
      sw[j] = sum_of(w + 16 * j, 16);
    }
    fits.symmetric(16, 16, 4, x, w, scales, L);
    // The 16 signed sub-block scales as 6-bit levels (l + 32) of one super-block scale.
    int8_t ls[16];
    const float d_block = fit_symmetric_qw(16, 32, scales, sw, ls);
    std::memset(y[b].scales, 0, sizeof y[b].scales);
    for (int j = 0; j < 16; ++j) {
      const int l = ls[j];
      if (j < 8) {
        y[b].scales[j] = static_cast<uint8_t>(l & 0x0F);
      } else {
        y[b].scales[j - 8] = static_cast<uint8_t>(y[b].scales[j - 8] | ((l & 0x0F) << 4));
      }
      y[b].scales[8 + j % 4] =
          static_cast<uint8_t>(y[b].scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
    }
    y[b].d = fp32_to_fp16(d_block);
    for (int j = 0; j < 16; ++j) {
      const float d = f16(y[b].d) * static_cast<float>(q3_k_scale(y[b].scales, j));
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i) {
        L[16 * j + i] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + i] / d), -4, 3) + 4);
      }
    }
    // L in [0, 7]: bit 2 goes to hmask (element e -> byte e % 32, bit e / 32).
    std::memset(y[b].hmask, 0, sizeof y[b].hmask);
    for (int e = 0; e < kQK_K; ++e) {
      if (L[e] > 3) {
        y[b].hmask[e % 32] = static_cast<uint8_t>(y[b].hmask[e % 32] | (1 << (e / 32)));
        L[e] = static_cast<int8_t>(L[e] - 4);
      }
    }
    pack_2bit(L, y[b].qs);
  }
}

void quantize_q4_k_weighted(const float* src, void* dst, int64_t n, const float* importance,
                            const GroupFits& fits) {
  quantize_k4_weighted_rows(src, static_cast<BlockQ4_K*>(dst), n, importance, 15, false, fits, pack_q4_k_levels);
}

void quantize_q5_k_weighted(const float* src, void* dst, int64_t n, const float* importance,
                            const GroupFits& fits) {
  quantize_k4_weighted_rows(src, static_cast<BlockQ5_K*>(dst), n, importance, 31, true, fits, pack_q5_k_levels);
}

void quantize_row_q2_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  if (!importance) return quantize_row_q2_k(src, dst, n);
  quantize_q2_k_weighted(src, dst, n, importance, ref_group_fits());
}

void quantize_row_q3_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  if (!importance) return quantize_row_q3_k(src, dst, n);
  quantize_q3_k_weighted(src, dst, n, importance, ref_group_fits());
}

void quantize_row_q4_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  if (!importance) return quantize_row_q4_k(src, dst, n);
  quantize_q4_k_weighted(src, dst, n, importance, ref_group_fits());
}

void quantize_row_q5_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  if (!importance) return quantize_row_q5_k(src, dst, n);
  quantize_q5_k_weighted(src, dst, n, importance, ref_group_fits());
}

void quantize_row_q6_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_q6_k(src, dst, n, importance, ref_group_fits());  // null importance: the plain one
}

}  // namespace runnel::ref
