// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1: 32-element blocks with one f16 scale (and min).
// Quantizers follow ggml's quantize_row_*_ref arithmetic step by step (same scale
// choice, same float rounding points) so output blocks are bit-identical to llama.cpp's.
// Dot products sum integer products within a block, then apply the scales in ggml's
// order: w in Q4_0/Q5_0/Q8_0 pairs with Q8_0 activations, Q4_1/Q5_1 with Q8_1.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/ref/blocks.h"
#include "kernels/ref/quant_math.h"
#include "kernels/ref/ref.h"

namespace runnel::ref {
namespace {

// The value of largest magnitude (keeping its sign); the first one wins ties.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* min_out, float* max_out) {
  float min = FLT_MAX;
  float max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    min = x[j] < min ? x[j] : min;
    max = x[j] > max ? x[j] : max;
  }
  *min_out = min;
  *max_out = max;
}

uint32_t load_qh(const uint8_t* qh) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
         static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

void store_qh(uint8_t* qh, uint32_t bits) {
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(bits >> (8 * b));
}

// 5-bit unsigned quants [32] of a Q5 block: nibbles plus bit j of qh as bit 4.
void unpack_q5(const uint8_t* qs, const uint8_t* qh_bytes, int8_t* q) {
  const uint32_t qh = load_qh(qh_bytes);
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = static_cast<int8_t>((qs[j] & 0x0F) | (((qh >> j) & 1u) << 4));
    q[j + kQK / 2] = static_cast<int8_t>((qs[j] >> 4) | (((qh >> (j + kQK / 2)) & 1u) << 4));
  }
}

// Packs 5-bit quants [32] into nibbles + qh bits.
void pack_q5(const int* q, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    const int lo = q[j];
    const int hi = q[j + kQK / 2];
    qs[j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
    qh |= static_cast<uint32_t>((lo >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((hi >> 4) & 1) << (j + kQK / 2);
  }
  store_qh(qh_bytes, qh);
}

}  // namespace

// ---------------------------------------------------------------- Q4_0

void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    // The extreme value maps to q = 0 (-8 * d), so d carries the extreme's sign.
    const float d = signed_absmax(x, kQK) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      // ggml truncates (v + 8.5): round half up, then clamps the top to 15.
      const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int q1 = std::min(15, static_cast<int>(x[j + kQK / 2] * id + 8.5f));
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ4_0*>(src);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16(x[b].d);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((x[b].qs[j] & 0x0F) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += ((x[b].qs[j] & 0x0F) - 8) * y[b].qs[j];
      sumi += ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + kQK / 2];
    }
    sum += static_cast<float>(sumi) * f16(x[b].d) * f16(y[b].d);
  }
  return sum;
}

// ---------------------------------------------------------------- Q4_1

void quantize_row_q4_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_1*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    float min, max;
    min_max(x, kQK, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    y[b].m = fp32_to_fp16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, static_cast<int>((x[j] - min) * id + 0.5f));
      const int q1 = std::min(15, static_cast<int>((x[j + kQK / 2] - min) * id + 0.5f));
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ4_1*>(src);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16(x[b].d);
    const float m = f16(x[b].m);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(x[b].qs[j] & 0x0F) * d + m;
      y[j + kQK / 2] = static_cast<float>(x[b].qs[j] >> 4) * d + m;
    }
  }
}

float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += (x[b].qs[j] & 0x0F) * y[b].qs[j];
      sumi += (x[b].qs[j] >> 4) * y[b].qs[j + kQK / 2];
    }
    // w = d q + m, so sum w a = d da sum(q qa) + m * (da sum qa), the last term being s.
    sum += (f16(x[b].d) * f16(y[b].d)) * static_cast<float>(sumi) + f16(x[b].m) * f16(y[b].s);
  }
  return sum;
}

// ---------------------------------------------------------------- Q5_0

void quantize_row_q5_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_0*>(dst);
  int q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    const float d = signed_absmax(x, kQK) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) q[j] = std::min(31, static_cast<int>(x[j] * id + 16.5f));
    pack_q5(q, y[b].qs, y[b].qh);
  }
}

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ5_0*>(src);
  int8_t q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16(x[b].d);
    unpack_q5(x[b].qs, x[b].qh, q);
    for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = static_cast<float>(q[j] - 16) * d;
  }
}

float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  int8_t q[kQK];
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    unpack_q5(x[b].qs, x[b].qh, q);
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += (q[j] - 16) * y[b].qs[j];
    sum += (f16(x[b].d) * f16(y[b].d)) * static_cast<float>(sumi);
  }
  return sum;
}

// ---------------------------------------------------------------- Q5_1

void quantize_row_q5_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_1*>(dst);
  int q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    float min, max;
    min_max(x, kQK, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    y[b].m = fp32_to_fp16(min);
    // (x - min) * id <= 31 up to rounding, so the clamp never bites; it keeps 5 bits.
    for (int j = 0; j < kQK; ++j) q[j] = std::min(31, static_cast<int>((x[j] - min) * id + 0.5f));
    pack_q5(q, y[b].qs, y[b].qh);
  }
}

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ5_1*>(src);
  int8_t q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16(x[b].d);
    const float m = f16(x[b].m);
    unpack_q5(x[b].qs, x[b].qh, q);
    for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = static_cast<float>(q[j]) * d + m;
  }
}

float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  int8_t q[kQK];
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    unpack_q5(x[b].qs, x[b].qh, q);
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += q[j] * y[b].qs[j];
    sum += (f16(x[b].d) * f16(y[b].d)) * static_cast<float>(sumi) + f16(x[b].m) * f16(y[b].s);
  }
  return sum;
}

// ---------------------------------------------------------------- Q8_0, Q8_1

namespace {

// Symmetric 8-bit block: d = amax / 127, q = round(x / d) half away from zero.
// Returns d (unrounded: the quants are computed against it, then d is stored as f16).
float quantize_block_q8(const float* x, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; ++j) qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  return d;
}

}  // namespace

void block_sums_q8_0(int64_t n, const void* a, int32_t* sums) {
  const auto* y = static_cast<const BlockQ8_0*>(a);
  for (int64_t b = 0; b < n / kQK; ++b) {
    int32_t s = 0;
    for (int i = 0; i < kQK; ++i) s += y[b].qs[i];
    sums[b] = s;
  }
}

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    y[b].d = fp32_to_fp16(quantize_block_q8(src + b * kQK, y[b].qs));
  }
}

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16(x[b].d);
    for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += x[b].qs[j] * y[b].qs[j];
    sum += static_cast<float>(sumi) * (f16(x[b].d) * f16(y[b].d));
  }
  return sum;
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = quantize_block_q8(src + b * kQK, y[b].qs);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) sum += y[b].qs[j];
    y[b].d = fp32_to_fp16(d);
    y[b].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

void dequantize_row_q8_1(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const BlockQ8_1*>(src);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16(x[b].d);
    for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

}  // namespace runnel::ref
