// Internal to kernels/ref: k-quant scale packing and the scale-search routines that
// ggml's reference k-quant quantizers use (reimplemented; same arithmetic order, so the
// chosen quants are bit-identical).
#pragma once

#include <cstdint>
#include <cstring>

namespace runnel::ref {

// Below this the group is treated as all zeros (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;
// Largest sub-block the searches handle (Q4_K / Q5_K use 32, the others 16).
constexpr int kMaxGroup = 32;

// Q4_K / Q5_K pack 8 six-bit scales and 8 six-bit mins in 12 bytes:
//   j < 4:  scale = b[j] & 63,                        min = b[j + 4] & 63
//   j >= 4: scale = b[j + 4] & 15 | (b[j - 4] >> 6) << 4,  min = b[j + 4] >> 4 | (b[j] >> 6) << 4
inline void unpack_scale_min_k4(int j, const uint8_t* b, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = b[j] & 63;
    *min = b[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((b[j + 4] & 0x0F) | ((b[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((b[j + 4] >> 4) | ((b[j] >> 6) << 4));
  }
}

// All 8 scales and mins at once by word arithmetic (the same fields as
// unpack_scale_min_k4 for j = 0..7): the x86 prompt tiles' unpacking, faster than field
// by field.
inline void unpack_scales_mins_k4(const uint8_t* b, uint8_t* scales, uint8_t* mins) {
  uint32_t u[3];
  std::memcpy(u, b, sizeof u);
  const uint32_t sc[2] = {u[0] & 0x3F3F3F3Fu, (u[2] & 0x0F0F0F0Fu) | ((u[0] >> 2) & 0x30303030u)};
  const uint32_t m[2] = {u[1] & 0x3F3F3F3Fu,
                         ((u[2] >> 4) & 0x0F0F0F0Fu) | ((u[1] >> 2) & 0x30303030u)};
  std::memcpy(scales, sc, sizeof sc);
  std::memcpy(mins, m, sizeof m);
}

// Inverse of unpack_scale_min_k4 for scales[8], mins[8] in [0, 63].
inline void pack_scale_min_k4(const uint8_t* scales, const uint8_t* mins, uint8_t* b) {
  for (int j = 0; j < 4; ++j) {
    b[j] = scales[j];
    b[j + 4] = mins[j];
  }
  for (int j = 4; j < 8; ++j) {
    b[j + 4] = static_cast<uint8_t>((scales[j] & 0x0F) | ((mins[j] & 0x0F) << 4));
    b[j - 4] = static_cast<uint8_t>(b[j - 4] | ((scales[j] >> 4) << 6));
    b[j] = static_cast<uint8_t>(b[j] | ((mins[j] >> 4) << 6));
  }
}

// Q3_K sub-block j's signed scale (six bits minus 32), from the 12 packed bytes.
inline int q3_k_scale(const uint8_t* b, int j) {
  const int low = j < 8 ? (b[j] & 0x0F) : (b[j - 8] >> 4);
  const int high = (b[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Symmetric fit x ~ scale * (L - nmax), L in [0, 2 nmax), weighting each element by x^2;
// tries 19 candidate scales around nmax / max|x| and keeps the best weighted fit.
// ggml's make_qx_quants with rmse_type 1 and no importance weights. Returns the scale.
float fit_symmetric_weighted(int n, int nmax, const float* x, int8_t* L);

// Symmetric fit for Q3_K: start at scale max|x| / nmax, then up to 5 passes of
// coordinate descent on single quants (weights x^2). ggml's make_q3_quants(do_rmse).
// L in [0, 2 nmax). Returns the scale. (All searches: n <= kMaxGroup.)
float fit_symmetric_q3(int n, int nmax, const float* x, int8_t* L);

// Asymmetric fit x ~ scale * L - min_out, L in [0, nmax], min_out >= 0, minimizing the
// weighted error (abs if use_mad, else squared) over nstep + 1 trial scales
// (rmin + rdelta * is + nmax) / (max - min), each followed by a least-squares solve
// for scale and min. ggml's make_qkx2_quants. Returns the scale.
float fit_affine(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* min_out,
                 float rmin, float rdelta, int nstep, bool use_mad);

// make_qx_quants with importance weights qw[n] (rmse_type 1): as fit_symmetric_weighted,
// but each element weighted by qw[i] instead of x^2. L = l + nmax in [0, 2 nmax), all 0
// for an all-but-zero group (then the scale is 0). Returns the scale. Used by the
// importance-weighted quantizers (quant_weighted.cpp), where n may be 16 or 32 and, for
// the super-block scales of Q3_K, the 16 sub-block scales with their weight sums.
float fit_symmetric_qw(int n, int nmax, const float* x, const float* qw, int8_t* L);

// Fit of non-negative values x[n] (sub-block scales or mins, n <= kMaxGroup) as
// scale * L, L in [0, nmax], weighted by qw: the rounding scale nmax / max, 8 more
// candidates (nmax +- 0.1 k) / max kept by weighted squared error, then up to 5 passes
// of coordinate descent on single L. ggml's make_qp_quants. L is stored as uint8_t
// exactly as ggml stores it (a negative x would wrap). Returns the scale.
float fit_positive_scales(int n, int nmax, const float* x, const float* qw, uint8_t* L);

// 2-bit quants L[256] -> qs[64]: per 128-element half, byte l = L[l] | L[l+32] << 2 |
// L[l+64] << 4 | L[l+96] << 6 (Q2_K and the low bits of Q3_K).
template <typename T>
void pack_2bit(const T* L, uint8_t* qs) {
  for (int half = 0; half < 256; half += 128) {
    for (int l = 0; l < 32; ++l) {
      const T* q = L + half + l;
      qs[half / 4 + l] = static_cast<uint8_t>(q[0] | (q[32] << 2) | (q[64] << 4) | (q[96] << 6));
    }
  }
}

// Q4_K / Q5_K: the levels L[256] in [0, nmax] of x at the block's packed 6-bit scales
// and mins (packed[12]) times d and dmin (f16), as both of their quantizers finish
// (k_quants.cpp; the weighted ones share it).
void requantize_k4_levels(const float* x, const uint8_t* packed, uint16_t d, uint16_t dmin, int nmax, uint8_t* L);

struct BlockQ4_K;
struct BlockQ5_K;
struct BlockQ6_K;
// Q4_K / Q5_K: the levels L[256] packed into the block's qs (and qh) (the plain and the
// weighted quantizers share them).
void pack_q4_k_levels(const uint8_t* L, BlockQ4_K& y);
void pack_q5_k_levels(const uint8_t* L, BlockQ5_K& y);
// Super-blocks whose groups one GroupFits call (group_fits.h) searches: enough groups
// (32 or 64) for an ISA's lanes, few enough for the stack.
constexpr int kFitBlocks = 4;
// A Q6_K block once each 16-element group's scale is fitted (scales[16]; L [256] the
// fitted levels, overwritten): the block scale from the largest, the 8-bit group
// scales, the levels again at the rounded scales, packed; a block of zeros where every
// group is (k_quants.cpp; the weighted quantizer shares it).
void finish_q6_k_block(const float* x, const float* scales, int8_t* L, BlockQ6_K& y);

}  // namespace runnel::ref
