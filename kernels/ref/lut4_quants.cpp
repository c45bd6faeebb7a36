// MXFP4, IQ4_NL, IQ4_XS: 4-bit codes looked up in a 16-value table (lut4_values.h) times
// a block scale. The quantizers follow ggml step by step (same searches, same float
// evaluation order), so blocks are bit-identical to llama.cpp's:
//   MXFP4: quantize_row_mxfp4_ref (exponent from the block's amax, nearest table value);
//   IQ4_NL, IQ4_XS: quantize_iq4_nl / quantize_iq4_xs, the weighted scale search of
//   llama-quantize (7 candidate scales each side), with or without importance weights.
//   (ggml's quantize_row_iq4_nl_ref skips that search; llama-quantize does not.)
// Dots sum integer products within a (sub-)block, then apply the scales in the order of
// ggml's ggml_vec_dot_*_generic: MXFP4 / IQ4_NL x Q8_0, IQ4_XS x Q8_K.
#include <cmath>

#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/ref/lut4_values.h"
#include "kernels/ref/quant_math.h"
#include "kernels/ref/ref.h"

namespace runnel::ref {
namespace {

// For each integer k in [-127, 112], the first table index whose value is above k: the
// upper end of x's interval for every x with floor(x) == k (the values are integers, so
// x < v[m] exactly when floor(x) < v[m]). Built at compile time from the table.
struct UpperIndexTable {
  uint8_t at[240];  // at[k + 127]
  constexpr UpperIndexTable() : at() {
    for (int k = -127; k <= 112; ++k) {
      int m = 0;
      while (kIq4NlValues[m] <= k) ++m;
      at[k + 127] = static_cast<uint8_t>(m);
    }
  }
};
constexpr UpperIndexTable kUpperIndex;

// Index of the table value nearest to x (values ascending; a tie goes to the upper one,
// as ggml's best_index_int8 has it). ggml bisects for the interval; a table on floor(x)
// finds the same one (this runs 16 times per element in the IQ4 scale searches), and the
// same float comparison then picks the closer neighbour, so the answers are identical.
int nearest_iq4_index(float x) {
  const int8_t* v = kIq4NlValues;
  if (x <= v[0]) return 0;
  if (!(x < v[15])) return 15;  // also NaN, where ggml's bisection ends at 15
  int k = static_cast<int>(x);  // x in (-127, 113): truncation, then floor
  if (static_cast<float>(k) > x) --k;
  const int hi = kUpperIndex.at[k + 127];
  return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

// Codes L[32 * s + j] of sub-block s -> nibbles: byte 16 s + j = L[j] | L[j + 16] << 4.
void pack_nibbles(const uint8_t* L, int n, uint8_t* qs) {
  for (int s = 0; s < n / 32; ++s) {
    for (int j = 0; j < 16; ++j) {
      qs[16 * s + j] = static_cast<uint8_t>(L[32 * s + j] | (L[32 * s + 16 + j] << 4));
    }
  }
}

// The least-squares scale of one sub-block of 32 (xb, weights w): codes from the first
// guess d = max / 127, then the inverse scales (t - 127) / max for t = -7 .. 7 each
// rounded to codes and refitted; the fit with the largest sumqx^2 / sumq2 wins. Returns
// the scale, 0 for an all-but-zero sub-block. (The callers redo every code against the
// scale finally stored, so the fits' codes are not kept.)
float fit_iq4_scale(const float* xb, const float* w) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float ax = std::fabs(xb[j]);
    if (ax > amax) {
      amax = ax;
      max = xb[j];
    }
  }
  if (amax < kGroupMaxEps) return 0.0f;
  const float v0 = kIq4NlValues[0];
  float d = -max / v0;
  float id = 1 / d;
  float sumqx = 0.0f;
  float sumq2 = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float q = kIq4NlValues[nearest_iq4_index(id * xb[j])];
    sumqx += w[j] * q * xb[j];
    sumq2 += w[j] * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int itry = -7; itry <= 7; ++itry) {
    id = static_cast<float>(itry + kIq4NlValues[0]) / max;
    sumqx = sumq2 = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float q = kIq4NlValues[nearest_iq4_index(id * xb[j])];
      sumqx += w[j] * q * xb[j];
      sumq2 += w[j] * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// The fit's weights for sub-block xb: x^2 without importance weights; with them (qw, the
// sub-block's slice), qw * sqrt(sigma2 + x^2), sigma2 = 2 * mean(x^2) over the super-block.
void iq4_weights(const float* xb, const float* qw, float sigma2, float* w) {
  for (int j = 0; j < 32; ++j) {
    w[j] = qw != nullptr ? qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
  }
}

float iq4_sigma2(const float* x, int n) {
  float sigma2 = 0.0f;
  for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
  return sigma2 * (2.0f / static_cast<float>(n));
}

void quantize_block_iq4_nl(const float* x, const float* qw, BlockIq4Nl* y) {
  float w[32];
  uint8_t L[32];
  iq4_weights(x, qw, iq4_sigma2(x, 32), w);
  const float d = fit_iq4_scale(x, w);
  y->d = fp32_to_fp16(d);
  // codes again against the chosen (unrounded) scale
  const float id = d != 0.0f ? 1 / d : 0.0f;
  for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(nearest_iq4_index(id * x[j]));
  pack_nibbles(L, 32, y->qs);
}

// Sub-block scales fitted one by one, then quantized to 6 bits against
// d = -(the scale of largest magnitude) / 32, and the codes redone against d * l.
void quantize_block_iq4_xs(const float* x, const float* qw, BlockIq4Xs* y) {
  float w[32];
  uint8_t L[kQK_K];
  float scales[8];
  const float sigma2 = iq4_sigma2(x, kQK_K);
  float max_scale = 0.0f;
  float amax_scale = 0.0f;
  for (int s = 0; s < 8; ++s) {
    iq4_weights(x + 32 * s, qw != nullptr ? qw + 32 * s : nullptr, sigma2, w);
    scales[s] = fit_iq4_scale(x + 32 * s, w);
    if (std::fabs(scales[s]) > amax_scale) {
      amax_scale = std::fabs(scales[s]);
      max_scale = scales[s];
    }
  }
  const float d = -max_scale / 32;
  y->d = fp32_to_fp16(d);
  const float id = d != 0.0f ? 1 / d : 0.0f;
  y->scales_h = 0;
  for (int s = 0; s < 8; ++s) {
    int l = nearest_int(id * scales[s]);
    l = l < -32 ? -32 : (l > 31 ? 31 : l);
    const float dl = d * static_cast<float>(l);
    const float idl = dl != 0.0f ? 1 / dl : 0.0f;
    for (int j = 0; j < 32; ++j) {
      L[32 * s + j] = static_cast<uint8_t>(nearest_iq4_index(idl * x[32 * s + j]));
    }
    l += 32;
    if (s % 2 == 0) {
      y->scales_l[s / 2] = static_cast<uint8_t>(l & 0x0F);
    } else {
      y->scales_l[s / 2] |= static_cast<uint8_t>((l & 0x0F) << 4);
    }
    y->scales_h = static_cast<uint16_t>(y->scales_h | (l >> 4) << (2 * s));
  }
  pack_nibbles(L, kQK_K, y->qs);
}

// Integer dot of one 32-element sub-block's codes (nibbles qs[16]) with 32 int8 quants.
int lut4_dot32(const int8_t* values, const uint8_t* qs, const int8_t* a) {
  int sum = 0;
  for (int j = 0; j < 16; ++j) {
    sum += values[qs[j] & 0x0F] * a[j];
    sum += values[qs[j] >> 4] * a[j + 16];
  }
  return sum;
}

}  // namespace

// ---------------------------------------------------------------- MXFP4

void quantize_row_mxfp4(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockMxfp4*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = amax < std::fabs(x[j]) ? std::fabs(x[j]) : amax;
    // The exponent puts amax in [4, 8) times the scale 2^(e - 127), i.e. the table's top
    // value 6 (12 doubled) near it. Below 2^-125 the exponent would be negative, where
    // ggml's float -> uint8 conversion is undefined (aarch64 saturates to 0, x86 wraps);
    // 0 it is, the aarch64 result and the best scale there is. (Finite amax gives e <= 252;
    // the upper clamp only keeps an infinite one defined.)
    const float e = amax > 0.0f ? std::floor(std::log2(amax)) - 2 + 127 : 0.0f;
    y[b].e = static_cast<uint8_t>(e > 0.0f ? (e < 255.0f ? e : 255.0f) : 0.0f);
    const float d = e8m0_to_fp32_half(y[b].e);
    uint8_t L[kQK];
    for (int j = 0; j < kQK; ++j) {
      // the nearest table value; the first one wins ties (0 before -0)
      int best = 0;
      float best_err = std::fabs(kMxfp4Values[0] * d - x[j]);
      for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(kMxfp4Values[i] * d - x[j]);
        if (err < best_err) {
          best = i;
          best_err = err;
        }
      }
      L[j] = static_cast<uint8_t>(best);
    }
    pack_nibbles(L, kQK, y[b].qs);
  }
}

void dequantize_row_mxfp4(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockMxfp4*>(src);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = e8m0_to_fp32_half(x[b].e);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = kMxfp4Values[x[b].qs[j] & 0x0F] * d;
      y[j + kQK / 2] = kMxfp4Values[x[b].qs[j] >> 4] * d;
    }
  }
}

float vec_dot_mxfp4(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockMxfp4*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16(y[b].d) * e8m0_to_fp32_half(x[b].e);
    sum += d * static_cast<float>(lut4_dot32(kMxfp4Values, x[b].qs, y[b].qs));
  }
  return sum;
}

// ---------------------------------------------------------------- IQ4_NL

void quantize_row_iq4_nl_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  auto* y = static_cast<BlockIq4Nl*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    quantize_block_iq4_nl(src + b * kQK, importance != nullptr ? importance + b * kQK : nullptr,
                          &y[b]);
  }
}

void quantize_row_iq4_nl(const float* src, void* dst, int64_t n) {
  quantize_row_iq4_nl_weighted(src, dst, n, nullptr);
}

void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockIq4Nl*>(src);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16(x[b].d);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * kIq4NlValues[x[b].qs[j] & 0x0F];
      y[j + kQK / 2] = d * kIq4NlValues[x[b].qs[j] >> 4];
    }
  }
}

float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIq4Nl*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16(y[b].d) * f16(x[b].d);
    sum += d * static_cast<float>(lut4_dot32(kIq4NlValues, x[b].qs, y[b].qs));
  }
  return sum;
}

// ---------------------------------------------------------------- IQ4_XS

void quantize_row_iq4_xs_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  auto* y = static_cast<BlockIq4Xs*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    quantize_block_iq4_xs(src + b * kQK_K, importance != nullptr ? importance + b * kQK_K : nullptr,
                          &y[b]);
  }
}

void quantize_row_iq4_xs(const float* src, void* dst, int64_t n) {
  quantize_row_iq4_xs_weighted(src, dst, n, nullptr);
}

void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockIq4Xs*>(src);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16(x[b].d);
    for (int s = 0; s < 8; ++s) {
      const float dl = d * static_cast<float>(iq4_xs_scale(x[b], s));
      const uint8_t* qs = x[b].qs + 16 * s;
      float* y = dst + b * kQK_K + 32 * s;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * kIq4NlValues[qs[j] & 0x0F];
        y[j + 16] = dl * kIq4NlValues[qs[j] >> 4];
      }
    }
  }
}

float vec_dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIq4Xs*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16(x[b].d) * y[b].d;
    for (int s = 0; s < 8; ++s) {
      const float ds = d * static_cast<float>(iq4_xs_scale(x[b], s));
      sum += ds * static_cast<float>(lut4_dot32(kIq4NlValues, x[b].qs + 16 * s, y[b].qs + 32 * s));
    }
  }
  return sum;
}

}  // namespace runnel::ref
