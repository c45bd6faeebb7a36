// Dot products of Q2_K .. Q6_K weight rows with Q8_K activation rows. Per super-block,
// the weight quants are unpacked to int8 q[256], multiplied with the activation quants
// in integers (exact), scaled by the integer sub-block scales, and only then converted
// to float with d_w * d_a. Like ggml's scalar code, the integer sums are kept in eight
// lanes (element e goes to lane e % 8) and each lane is scaled and accumulated in float
// separately, with the lanes summed at the very end: same float operations, same order,
// so results match llama.cpp's scalar path closely (bit-exactly on the same compiler
// flags). Affine types (Q2_K, Q4_K, Q5_K) take the min term from the Q8_K bsums.
#include <cstdint>

#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/ref/quant_math.h"
#include "kernels/ref/ref.h"

namespace runnel::ref {
namespace {

constexpr int kLanes = 8;

// lanes[l] += scale * sum over elements [begin, begin + len) at lane l of q * a.
inline void add_scaled_lanes(const int8_t* q, const int8_t* a, int len, int scale, int32_t* lanes) {
  int32_t part[kLanes] = {};
  for (int k = 0; k < len; k += kLanes) {
    for (int l = 0; l < kLanes; ++l) part[l] += q[k + l] * a[k + l];
  }
  for (int l = 0; l < kLanes; ++l) lanes[l] += scale * part[l];
}

// Unpacks 2-bit fields of a 128-element half: byte l holds elements l, l+32, l+64, l+96.
inline void unpack_2bit_half(const uint8_t* qs, int8_t* q) {
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) q[32 * g + l] = static_cast<int8_t>((qs[l] >> (2 * g)) & 3);
  }
}

}  // namespace

float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  int8_t q[kQK_K];
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    // Min term: sum_j m_j * (sum of activation quants in sub-block j).
    int summs = 0;
    for (int j = 0; j < 16; ++j) summs += y[b].bsums[j] * (x[b].scales[j] >> 4);
    unpack_2bit_half(x[b].qs, q);
    unpack_2bit_half(x[b].qs + 32, q + 128);
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      int isuml = 0;
      for (int l = 0; l < 16; ++l) isuml += y[b].qs[16 * j + l] * q[16 * j + l];
      isum += (x[b].scales[j] & 0x0F) * isuml;
    }
    const float dall = y[b].d * f16(x[b].d);
    const float dmin = y[b].d * f16(x[b].dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  int8_t q[kQK_K];
  float sums[kLanes] = {};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unpack_2bit_half(x[b].qs, q);
    unpack_2bit_half(x[b].qs + 32, q + 128);
    // Missing high bit means -4: q in [-4, 3]. Element 32g + l's bit is hmask[l] bit g.
    for (int g = 0; g < 8; ++g) {
      for (int l = 0; l < 32; ++l) {
        q[32 * g + l] = static_cast<int8_t>(q[32 * g + l] - 4 + 4 * ((x[b].hmask[l] >> g) & 1));
      }
    }
    int32_t lanes[kLanes] = {};
    for (int j = 0; j < 16; ++j)
      add_scaled_lanes(q + 16 * j, y[b].qs + 16 * j, 16, q3_k_scale(x[b].scales, j), lanes);
    const float d = f16(x[b].d) * y[b].d;
    for (int l = 0; l < kLanes; ++l) sums[l] += d * static_cast<float>(lanes[l]);
  }
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += sums[l];
  return sum;
}

namespace {

// Q4_K and Q5_K share everything but the fifth bit. q[256] must already hold the quants.
inline void dot_scale_min_k4(const uint8_t* packed, uint16_t d16, uint16_t dmin16, const int8_t* q,
                             const BlockQ8_K& y, float* sums, float* sum) {
  uint8_t sc[8];
  uint8_t m[8];
  for (int j = 0; j < 8; ++j) unpack_scale_min_k4(j, packed, &sc[j], &m[j]);
  int sumi = 0;
  for (int g = 0; g < kQK_K / 16; ++g) sumi += y.bsums[g] * m[g / 2];
  int32_t lanes[kLanes] = {};
  for (int j = 0; j < 8; ++j) add_scaled_lanes(q + 32 * j, y.qs + 32 * j, 32, sc[j], lanes);
  const float d = f16(d16) * y.d;
  for (int l = 0; l < kLanes; ++l) sums[l] += d * static_cast<float>(lanes[l]);
  const float dmin = f16(dmin16) * y.d;
  *sum -= dmin * static_cast<float>(sumi);
}

}  // namespace

float vec_dot_q4_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  int8_t q[kQK_K];
  float sums[kLanes] = {};
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int c = 0; c < kQK_K / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = static_cast<int8_t>(x[b].qs[32 * c + l] & 0x0F);
        q[64 * c + 32 + l] = static_cast<int8_t>(x[b].qs[32 * c + l] >> 4);
      }
    }
    dot_scale_min_k4(x[b].scales, x[b].d, x[b].dmin, q, y[b], sums, &sum);
  }
  for (int l = 0; l < kLanes; ++l) sum += sums[l];
  return sum;
}

float vec_dot_q5_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  int8_t q[kQK_K];
  float sums[kLanes] = {};
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int c = 0; c < kQK_K / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo_bit = (x[b].qh[l] >> (2 * c)) & 1;
        const int hi_bit = (x[b].qh[l] >> (2 * c + 1)) & 1;
        q[64 * c + l] = static_cast<int8_t>((x[b].qs[32 * c + l] & 0x0F) | (lo_bit << 4));
        q[64 * c + 32 + l] = static_cast<int8_t>((x[b].qs[32 * c + l] >> 4) | (hi_bit << 4));
      }
    }
    dot_scale_min_k4(x[b].scales, x[b].d, x[b].dmin, q, y[b], sums, &sum);
  }
  for (int l = 0; l < kLanes; ++l) sum += sums[l];
  return sum;
}

float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  int8_t q[kQK_K];
  float sums[kLanes] = {};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const uint8_t* qh = x[b].qh + 32 * half;
      int8_t* qq = q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        qq[l] = static_cast<int8_t>(((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32);
        qq[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
        qq[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        qq[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
    int32_t lanes[kLanes] = {};
    for (int j = 0; j < 16; ++j)
      add_scaled_lanes(q + 16 * j, y[b].qs + 16 * j, 16, x[b].scales[j], lanes);
    const float d = f16(x[b].d) * y[b].d;
    for (int l = 0; l < kLanes; ++l) sums[l] += d * static_cast<float>(lanes[l]);
  }
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += sums[l];
  return sum;
}

}  // namespace runnel::ref
