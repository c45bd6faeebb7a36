// Q2_K .. Q6_K and Q8_K rows: quantize (ggml's reference algorithms, no importance
// weights) and dequantize. Each quantizer (1) fits a scale (and min) per sub-block,
// (2) quantizes those scales against one f16 super-block scale, then (3) re-quantizes
// the elements against the scales as they will be decoded, so the stored quants match
// the stored scales. Step (3) skips sub-blocks whose decoded scale is 0 and keeps the
// quants from step (1) there, exactly as ggml does (it matters for bit-identity only).
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

// Weights of the affine fits for Q4_K / Q5_K: rms of the sub-block plus |x|.
void rms_plus_abs_weights(const float* x, float* w) {
  float sum_x2 = 0.0f;
  for (int l = 0; l < 32; ++l) sum_x2 += x[l] * x[l];
  const float av_x = std::sqrt(sum_x2 / 32);
  for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(x[l]);
}

// Shared by Q4_K and Q5_K once the 8 sub-blocks of 32 are fitted (scales[8], mins[8]):
// the 6-bit scales and mins against d and dmin, packed[12], and L[256] in [0, nmax] again
// at the stored scales.
void finish_scale_min_k4(const float* x, const float* scales, const float* mins, int nmax, uint16_t* d_out,
                         uint16_t* dmin_out, uint8_t* packed, uint8_t* L) {
  float max_scale = 0.0f;  // scales are >= 0 because the fit subtracts the min
  float max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  uint8_t ls[8];
  uint8_t lm[8];
  for (int j = 0; j < 8; ++j) {
    // uint8_t wrap then clamp, as ggml stores nearest_int into a uint8_t first.
    ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
  }
  pack_scale_min_k4(ls, lm, packed);
  *d_out = fp32_to_fp16(max_scale / 63.0f);
  *dmin_out = fp32_to_fp16(max_min / 63.0f);
  requantize_k4_levels(x, packed, *d_out, *dmin_out, nmax, L);
}

// Q4_K / Q5_K rows: the affine sub-block fits of kFitBlocks super-blocks at a time (one
// GroupFits call), then each block finished and its levels packed by pack(L, block).
template <typename Block, typename Pack>
void quantize_k4_rows(const float* src, Block* y, int64_t n, int nmax, float rmin, float rdelta, int nstep,
                      const GroupFits& fits, Pack pack) {
  const int64_t nb = n / kQK_K;
  float w[kFitBlocks * kQK_K];
  float scales[kFitBlocks * 8];
  float mins[kFitBlocks * 8];
  uint8_t L[kFitBlocks * kQK_K];
  for (int64_t b0 = 0; b0 < nb; b0 += kFitBlocks) {
    const int count = static_cast<int>(std::min<int64_t>(kFitBlocks, nb - b0));
    const float* x = src + b0 * kQK_K;
    for (int j = 0; j < 8 * count; ++j) rms_plus_abs_weights(x + 32 * j, w + 32 * j);
    fits.affine(8 * count, 32, nmax, x, w, rmin, rdelta, nstep, false, scales, mins, L);
    for (int b = 0; b < count; ++b) {
      Block& blk = y[b0 + b];
      uint8_t* Lb = L + b * kQK_K;
      finish_scale_min_k4(x + b * kQK_K, scales + 8 * b, mins + 8 * b, nmax, &blk.d, &blk.dmin, blk.scales, Lb);
      pack(Lb, blk);
    }
  }
}

}  // namespace

void requantize_k4_levels(const float* x, const uint8_t* packed, uint16_t d_block, uint16_t dmin_block, int nmax,
                          uint8_t* L) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpack_scale_min_k4(j, packed, &sc, &m);
    const float d = f16(d_block) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = f16(dmin_block) * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) {
      L[32 * j + i] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
    }
  }
}

void pack_q4_k_levels(const uint8_t* L, BlockQ4_K& y) {
  for (int chunk = 0; chunk < kQK_K / 64; ++chunk) {
    for (int l = 0; l < 32; ++l) {
      y.qs[32 * chunk + l] = static_cast<uint8_t>(L[64 * chunk + l] | (L[64 * chunk + 32 + l] << 4));
    }
  }
}

void pack_q5_k_levels(const uint8_t* L, BlockQ5_K& y) {
  std::memset(y.qh, 0, sizeof y.qh);
  for (int chunk = 0; chunk < kQK_K / 64; ++chunk) {
    for (int l = 0; l < 32; ++l) {
      const int lo = L[64 * chunk + l];
      const int hi = L[64 * chunk + 32 + l];
      y.qs[32 * chunk + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
      y.qh[l] = static_cast<uint8_t>(y.qh[l] | ((lo >> 4) << (2 * chunk)) | ((hi >> 4) << (2 * chunk + 1)));
    }
  }
}

// ---------------------------------------------------------------- Q2_K

void quantize_q2_k(const float* src, void* dst, int64_t n, const GroupFits& fits) {
  auto* y = static_cast<BlockQ2_K*>(dst);
  constexpr float kQ4Scale = 15.0f;
  uint8_t L[kQK_K];
  float weights[kQK_K];
  float scales[16];
  float mins[16];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    for (int i = 0; i < kQK_K; ++i) weights[i] = std::fabs(x[i]);
    fits.affine(16, 16, 3, x, weights, -0.5f, 0.1f, 15, true, scales, mins, L);
    float max_scale = 0.0f;
    float max_min = 0.0f;
    for (int j = 0; j < 16; ++j) {
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    // Scales in the low nibble, mins in the high nibble, both against 1/15 of the max.
    if (max_scale > 0.0f) {
      const float iscale = kQ4Scale / max_scale;
      for (int j = 0; j < 16; ++j)
        y[b].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y[b].d = fp32_to_fp16(max_scale / kQ4Scale);
    } else {
      for (int j = 0; j < 16; ++j) y[b].scales[j] = 0;
      y[b].d = fp32_to_fp16(0.0f);
    }
    if (max_min > 0.0f) {
      const float iscale = kQ4Scale / max_min;
      for (int j = 0; j < 16; ++j) {
        y[b].scales[j] =
            static_cast<uint8_t>(y[b].scales[j] | (nearest_int(iscale * mins[j]) << 4));
      }
      y[b].dmin = fp32_to_fp16(max_min / kQ4Scale);
    } else {
      y[b].dmin = fp32_to_fp16(0.0f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16(y[b].d) * static_cast<float>(y[b].scales[j] & 0x0F);
      if (d == 0.0f) continue;
      const float dm = f16(y[b].dmin) * static_cast<float>(y[b].scales[j] >> 4);
      for (int i = 0; i < 16; ++i) {
        L[16 * j + i] =
            static_cast<uint8_t>(clamp_int(nearest_int((x[16 * j + i] + dm) / d), 0, 3));
      }
    }
    pack_2bit(L, y[b].qs);
  }
}

void quantize_row_q2_k(const float* src, void* dst, int64_t n) {
  quantize_q2_k(src, dst, n, ref_group_fits());
}

void dequantize_row_q2_k(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ2_K*>(src);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16(x[b].d);
    const float dmin = f16(x[b].dmin);
    float* y = dst + b * kQK_K;
    // Element e: half = e / 128, shift = 2 * ((e % 128) / 32), byte = (e % 32) of that half.
    for (int e = 0; e < kQK_K; ++e) {
      const uint8_t sc = x[b].scales[e / 16];
      const int q = (x[b].qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      const float dl = d * static_cast<float>(sc & 0x0F);
      const float ml = dmin * static_cast<float>(sc >> 4);
      y[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

// ---------------------------------------------------------------- Q3_K

void quantize_row_q3_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ3_K*>(dst);
  int8_t L[kQK_K];
  float scales[16];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    float max_scale = 0.0f;  // signed scale of largest magnitude
    float amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_q3(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::memset(y[b].scales, 0, sizeof y[b].scales);
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = clamp_int(static_cast<int8_t>(nearest_int(iscale * scales[j])), -32, 31) + 32;
        if (j < 8) {
          y[b].scales[j] = static_cast<uint8_t>(l & 0x0F);
        } else {
          y[b].scales[j - 8] = static_cast<uint8_t>(y[b].scales[j - 8] | ((l & 0x0F) << 4));
        }
        y[b].scales[8 + j % 4] =
            static_cast<uint8_t>(y[b].scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      y[b].d = fp32_to_fp16(1.0f / iscale);
    } else {
      y[b].d = fp32_to_fp16(0.0f);
    }
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

void dequantize_row_q3_k(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ3_K*>(src);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d_all = f16(x[b].d);
    float* y = dst + b * kQK_K;
    for (int e = 0; e < kQK_K; ++e) {
      const int low = (x[b].qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      const bool high = (x[b].hmask[e % 32] >> (e / 32)) & 1;
      const float dl = d_all * static_cast<float>(q3_k_scale(x[b].scales, e / 16));
      y[e] = dl * static_cast<float>(low - (high ? 0 : 4));
    }
  }
}

// ---------------------------------------------------------------- Q4_K

void quantize_q4_k(const float* src, void* dst, int64_t n, const GroupFits& fits) {
  quantize_k4_rows(src, static_cast<BlockQ4_K*>(dst), n, 15, -1.0f, 0.1f, 20, fits, pack_q4_k_levels);
}

void quantize_row_q4_k(const float* src, void* dst, int64_t n) {
  quantize_q4_k(src, dst, n, ref_group_fits());
}

void dequantize_row_q4_k(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ4_K*>(src);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16(x[b].d);
    const float dmin = f16(x[b].dmin);
    float* y = dst + b * kQK_K;
    for (int j = 0; j < 8; ++j) {  // sub-block j: chunk j / 2, low nibbles if j even
      uint8_t sc, m;
      unpack_scale_min_k4(j, x[b].scales, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = x[b].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l)
        y[32 * j + l] = dl * static_cast<float>((q[l] >> shift) & 0x0F) - ml;
    }
  }
}

// ---------------------------------------------------------------- Q5_K

void quantize_q5_k(const float* src, void* dst, int64_t n, const GroupFits& fits) {
  quantize_k4_rows(src, static_cast<BlockQ5_K*>(dst), n, 31, -0.5f, 0.1f, 15, fits, pack_q5_k_levels);
}

void quantize_row_q5_k(const float* src, void* dst, int64_t n) {
  quantize_q5_k(src, dst, n, ref_group_fits());
}

void dequantize_row_q5_k(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ5_K*>(src);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16(x[b].d);
    const float dmin = f16(x[b].dmin);
    float* y = dst + b * kQK_K;
    for (int j = 0; j < 8; ++j) {  // sub-block j: qh bit j
      uint8_t sc, m;
      unpack_scale_min_k4(j, x[b].scales, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = x[b].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0x0F) | (((x[b].qh[l] >> j) & 1) << 4);
        y[32 * j + l] = dl * static_cast<float>(v) - ml;
      }
    }
  }
}

// ---------------------------------------------------------------- Q6_K

void finish_q6_k_block(const float* x, const float* scales, int8_t* L, BlockQ6_K& y) {
  float max_scale = 0.0f;  // signed scale of largest magnitude
  float max_abs_scale = 0.0f;
  for (int j = 0; j < 16; ++j) {
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(&y, 0, sizeof y);
    return;
  }
  const float iscale = -128.0f / max_scale;
  y.d = fp32_to_fp16(1.0f / iscale);
  for (int j = 0; j < 16; ++j) {
    y.scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
  }
  for (int j = 0; j < 16; ++j) {
    const float d = f16(y.d) * static_cast<float>(y.scales[j]);
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i) {
      L[16 * j + i] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + i] / d), -32, 31) + 32);
    }
  }
  for (int half = 0; half < 2; ++half) {
    const int8_t* q = L + 128 * half;
    uint8_t* ql = y.ql + 64 * half;
    uint8_t* qh = y.qh + 32 * half;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((q[l] & 0x0F) | ((q[l + 64] & 0x0F) << 4));
      ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0x0F) | ((q[l + 96] & 0x0F) << 4));
      qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                   ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
    }
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t n, const float* importance, const GroupFits& fits) {
  auto* y = static_cast<BlockQ6_K*>(dst);
  const int64_t nb = n / kQK_K;
  int8_t L[kFitBlocks * kQK_K];
  float scales[kFitBlocks * 16];
  for (int64_t b0 = 0; b0 < nb; b0 += kFitBlocks) {
    const int count = static_cast<int>(std::min<int64_t>(kFitBlocks, nb - b0));
    const float* x = src + b0 * kQK_K;
    // Weights x^2, or the importance alone (ggml's sigma2 term is commented out there).
    fits.symmetric(16 * count, 16, 32, x, importance ? importance + b0 * kQK_K : nullptr, scales, L);
    for (int b = 0; b < count; ++b) finish_q6_k_block(x + b * kQK_K, scales + 16 * b, L + b * kQK_K, y[b0 + b]);
  }
}

void quantize_row_q6_k(const float* src, void* dst, int64_t n) {
  quantize_q6_k(src, dst, n, nullptr, ref_group_fits());
}

void dequantize_row_q6_k(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ6_K*>(src);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16(x[b].d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const uint8_t* qh = x[b].qh + 32 * half;
      const int8_t* sc = x[b].scales + 8 * half;
      float* y = dst + b * kQK_K + 128 * half;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// ---------------------------------------------------------------- Q8_K

void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    float max = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    // The extreme maps to -127 (never -128), so the Q8_K range stays symmetric.
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j)
      y[b].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * g + i];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

void dequantize_row_q8_k(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ8_K*>(src);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int j = 0; j < kQK_K; ++j) dst[b * kQK_K + j] = x[b].d * static_cast<float>(x[b].qs[j]);
  }
}

}  // namespace runnel::ref
