// The group searches of the k-quant quantizers (kernels/ref/group_fits.h) on W groups at
// once, one group per vector lane (GCC vector extensions). Each lane repeats ref's scalar
// search step for step: the same products in the same order, its sums running element
// after element, branches turned into per-lane selects. So every group gets ref's scale,
// min and levels bit for bit; only the groups run side by side instead of one after
// another, which is what the searches' long chains of dependent adds need.
// Included once by kernels/x86/avx2_group_fits.cpp (RUNNEL_GROUP_FIT_LANES 8),
// kernels/x86/avx512_group_fits.cpp (16) and kernels/arm/neon_group_fits.cpp (4), all
// compiled with -ffp-contract=off: a fused a * b + c would round once and part from ref.
#pragma once
#ifndef RUNNEL_GROUP_FIT_LANES
#error "define RUNNEL_GROUP_FIT_LANES (the lanes of a vector) before including group_fits_lanes.h"
#endif

#include <algorithm>
#include <cstdint>

#include "kernels/ref/group_fits.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/ref/ref.h"

namespace runnel::group_lanes {
// Internal linkage: each ISA file compiles its own copy (see kernels/x86/x8_gemm_impl.h).
namespace {

constexpr int W = RUNNEL_GROUP_FIT_LANES;
typedef float F __attribute__((vector_size(4 * W)));
typedef int32_t I __attribute__((vector_size(4 * W)));

inline F splat(float v) { return F{} + v; }
inline I splat(int v) { return I{} + v; }
// ref's nearest_int (quant_math.h) per lane: the same biased add and bit masks.
inline I nearest(F v) {
  const F biased = v + 12582912.0f;
  return ((I)biased & 0x007fffff) - 0x00400000;
}
inline I clamp(I v, int lo, int hi) {
  const I low = v < lo ? splat(lo) : v;
  return low > hi ? splat(hi) : low;
}
inline F to_float(I v) { return __builtin_convertvector(v, F); }
inline F abs(F v) { return (F)((I)v & 0x7fffffff); }

// Lanes [0, W) <- groups g0 .. g0 + W - 1 of `size` elements (element i of each in v[i]);
// lanes past `count` repeat group g0, whose results are dropped.
void gather_groups(const float* src, int g0, int count, int size, F* v) {
  for (int lane = 0; lane < W; ++lane) {
    const float* g = src + static_cast<int64_t>(g0 + (lane < count ? lane : 0)) * size;
    for (int i = 0; i < size; ++i) v[i][lane] = g[i];
  }
}

// The levels of lanes [0, count) back into groups g0 .. g0 + count - 1 of L.
template <typename Level>
void scatter_levels(const I* lv, int g0, int count, int size, Level* L) {
  for (int lane = 0; lane < count; ++lane) {
    Level* out = L + static_cast<int64_t>(g0 + lane) * size;
    for (int i = 0; i < size; ++i) out[i] = static_cast<Level>(lv[i][lane]);
  }
}

// fit_affine (kernels/ref/k_quants_search.cpp) on the lanes' groups.
void fit_affine_lanes(int size, int nmax, const F* x, const F* w,
                      float rmin, float rdelta, int nstep, bool use_mad, F* scale_out,
                      F* min_out, I* L) {
  F min = x[0];
  F max = x[0];
  F sum_w = w[0];
  F sum_x = sum_w * x[0];
  for (int i = 1; i < size; ++i) {
    min = x[i] < min ? x[i] : min;
    max = x[i] > max ? x[i] : max;
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  min = min > 0.0f ? splat(0.0f) : min;
  const I flat = max == min;
  const F flat_min = min;
  auto error_of = [&](F scale, F offset, const I* q) {
    F err = splat(0.0f);
    for (int i = 0; i < size; ++i) {
      F diff = scale * to_float(q[i]) + offset - x[i];
      diff = use_mad ? abs(diff) : diff * diff;
      err += w[i] * diff;
    }
    return err;
  };
  F iscale = splat(static_cast<float>(nmax)) / (max - min);
  F scale = 1.0f / iscale;
  for (int i = 0; i < size; ++i) L[i] = clamp(nearest(iscale * (x[i] - min)), 0, nmax);
  if (nstep >= 1) {
    F best_error = error_of(scale, min, L);
    I trial[ref::kMaxGroup];
    for (int is = 0; is <= nstep; ++is) {
      // (max - min: min is the best fit's so far, as in ref)
      iscale = splat(rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
      F sum_l = splat(0.0f);
      F sum_l2 = splat(0.0f);
      F sum_xl = splat(0.0f);
      for (int i = 0; i < size; ++i) {
        trial[i] = clamp(nearest(iscale * (x[i] - min)), 0, nmax);
        const F l = to_float(trial[i]);
        const F wl = w[i] * l;
        sum_l += wl;
        sum_l2 += wl * l;
        sum_xl += wl * x[i];
      }
      const F det = sum_w * sum_l2 - sum_l * sum_l;
      F this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      F this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      const I clipped = this_min > 0.0f;
      this_min = clipped ? splat(0.0f) : this_min;
      this_scale = clipped ? sum_xl / sum_l2 : this_scale;
      const F cur_error = error_of(this_scale, this_min, trial);
      const I better = (det > 0.0f) & (cur_error < best_error);
      for (int i = 0; i < size; ++i) L[i] = better ? trial[i] : L[i];
      best_error = better ? cur_error : best_error;
      scale = better ? this_scale : scale;
      min = better ? this_min : min;
    }
  }
  for (int i = 0; i < size; ++i) L[i] = flat ? splat(0) : L[i];
  *scale_out = flat ? splat(0.0f) : scale;
  *min_out = -(flat ? flat_min : min);
}

// fit_symmetric_qw (k_quants_search.cpp) on the lanes' groups; qw = x^2 is
// fit_symmetric_weighted. L = l + nmax.
void fit_symmetric_lanes(int size, int nmax, const F* x, const F* qw,
                         F* scale_out, I* L) {
  F amax = splat(0.0f);
  F max = splat(0.0f);  // the element of largest magnitude, sign kept; first wins ties
  F qwx[ref::kMaxGroup];
  for (int i = 0; i < size; ++i) {
    const F ax = abs(x[i]);
    const I larger = ax > amax;
    amax = larger ? ax : amax;
    max = larger ? x[i] : max;
    qwx[i] = qw[i] * x[i];
  }
  const I zero = amax < ref::kGroupMaxEps;
  auto try_scale = [&](F iscale, I* out, F* sumlx, F* suml2) {
    *sumlx = splat(0.0f);
    *suml2 = splat(0.0f);
    for (int i = 0; i < size; ++i) {
      const I l = clamp(nearest(iscale * x[i]), -nmax, nmax - 1);
      out[i] = l + nmax;
      const F lf = to_float(l);
      *sumlx += qwx[i] * lf;
      *suml2 += qw[i] * lf * lf;
    }
  };
  F sumlx;
  F suml2;
  try_scale(splat(static_cast<float>(-nmax)) / max, L, &sumlx, &suml2);
  F scale = suml2 != 0.0f ? sumlx / suml2 : splat(0.0f);
  F best = scale * sumlx;
  I trial[ref::kMaxGroup];
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    try_scale(splat(-(static_cast<float>(nmax) + 0.1f * static_cast<float>(is))) / max, trial, &sumlx, &suml2);
    const I better = (suml2 > 0.0f) & (sumlx * sumlx > best * suml2);
    const F new_scale = sumlx / suml2;
    for (int i = 0; i < size; ++i) L[i] = better ? trial[i] : L[i];
    scale = better ? new_scale : scale;
    best = better ? new_scale * sumlx : best;
  }
  for (int i = 0; i < size; ++i) L[i] = zero ? splat(0) : L[i];
  *scale_out = zero ? splat(0.0f) : scale;
}

// ref::GroupFits::affine over W groups at a time.
void fit_affine_groups(int count, int size, int nmax, const float* x, const float* w, float rmin, float rdelta,
                       int nstep, bool use_mad, float* scales, float* mins, uint8_t* L) {
  F xv[ref::kMaxGroup];
  F wv[ref::kMaxGroup];
  I lv[ref::kMaxGroup];
  for (int g0 = 0; g0 < count; g0 += W) {
    const int lanes = std::min(W, count - g0);
    gather_groups(x, g0, lanes, size, xv);
    gather_groups(w, g0, lanes, size, wv);
    F scale;
    F min;
    fit_affine_lanes(size, nmax, xv, wv, rmin, rdelta, nstep, use_mad, &scale, &min, lv);
    for (int lane = 0; lane < lanes; ++lane) {
      scales[g0 + lane] = scale[lane];
      mins[g0 + lane] = min[lane];
    }
    scatter_levels(lv, g0, lanes, size, L);
  }
}

// ref::GroupFits::symmetric over W groups at a time.
void fit_symmetric_groups(int count, int size, int nmax, const float* x, const float* qw, float* scales,
                          int8_t* L) {
  F xv[ref::kMaxGroup];
  F qv[ref::kMaxGroup];
  I lv[ref::kMaxGroup];
  for (int g0 = 0; g0 < count; g0 += W) {
    const int lanes = std::min(W, count - g0);
    gather_groups(x, g0, lanes, size, xv);
    if (qw) {
      gather_groups(qw, g0, lanes, size, qv);
    } else {
      for (int i = 0; i < size; ++i) qv[i] = xv[i] * xv[i];
    }
    F scale;
    fit_symmetric_lanes(size, nmax, xv, qv, &scale, lv);
    for (int lane = 0; lane < lanes; ++lane) scales[g0 + lane] = scale[lane];
    scatter_levels(lv, g0, lanes, size, L);
  }
}

}  // namespace
}  // namespace runnel::group_lanes

// Defines, in the namespace of the ISA file that expands it, kGroupFits over the lanes and
// the table entries that use it (RUNNEL_GROUP_FIT_QUANTIZER_DECLS, kernels/ref/group_fits.h).
#define RUNNEL_DEFINE_GROUP_FIT_QUANTIZERS()                                                            \
  namespace {                                                                                          \
  constexpr ref::GroupFits kGroupFits{group_lanes::fit_affine_groups,                                \
                                      group_lanes::fit_symmetric_groups};                            \
  }                                                                                                    \
  void quantize_row_q2_k(const float* src, void* dst, int64_t n) { ref::quantize_q2_k(src, dst, n, kGroupFits); } \
  void quantize_row_q2_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {   \
    if (!importance) return quantize_row_q2_k(src, dst, n);                                            \
    ref::quantize_q2_k_weighted(src, dst, n, importance, kGroupFits);                                  \
  }                                                                                                    \
  void quantize_row_q3_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {   \
    if (!importance) return ref::quantize_row_q3_k(src, dst, n);                                       \
    ref::quantize_q3_k_weighted(src, dst, n, importance, kGroupFits);                                  \
  }                                                                                                    \
  void quantize_row_q4_k(const float* src, void* dst, int64_t n) { ref::quantize_q4_k(src, dst, n, kGroupFits); } \
  void quantize_row_q5_k(const float* src, void* dst, int64_t n) { ref::quantize_q5_k(src, dst, n, kGroupFits); } \
  void quantize_row_q6_k(const float* src, void* dst, int64_t n) {                                      \
    ref::quantize_q6_k(src, dst, n, nullptr, kGroupFits);                                              \
  }                                                                                                    \
  void quantize_row_q4_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {   \
    if (!importance) return quantize_row_q4_k(src, dst, n);                                            \
    ref::quantize_q4_k_weighted(src, dst, n, importance, kGroupFits);                                  \
  }                                                                                                    \
  void quantize_row_q5_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {   \
    if (!importance) return quantize_row_q5_k(src, dst, n);                                            \
    ref::quantize_q5_k_weighted(src, dst, n, importance, kGroupFits);                                  \
  }                                                                                                    \
  void quantize_row_q6_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {   \
    ref::quantize_q6_k(src, dst, n, importance, kGroupFits);                                           \
  }
