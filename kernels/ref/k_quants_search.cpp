// Scale searches behind the reference k-quant quantizers. Every float expression keeps
// ggml's evaluation order (products left to right, same accumulators) because the
// quantizers must choose the same quants as llama.cpp bit for bit; "simplifying" any
// of these sums changes which candidate wins on ties and near-ties.
#include <algorithm>
#include <cmath>

#include "kernels/ref/group_fits.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/ref/quant_math.h"

namespace runnel::ref {
namespace {

// The element of largest magnitude, sign kept; first wins ties. amax_out = its |x|.
float signed_absmax(int n, const float* x, float* amax_out) {
  float max = 0.0f;
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  *amax_out = amax;
  return max;
}

}  // namespace

float fit_symmetric_weighted(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0.0f;
  float suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  int8_t trial[kMaxGroup];
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = 0.0f;
    suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      trial[i] = static_cast<int8_t>(l + nmax);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    // Better fit <=> larger sumlx^2 / suml2 (the explained weighted energy).
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = trial[i];
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float fit_symmetric_qw(int n, int nmax, const float* x, const float* qw, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  // The sums of one candidate inverse scale: codes into `out`, sum w x l and sum w l^2.
  auto try_scale = [&](float iscale, int8_t* out, float* sumlx, float* suml2) {
    *sumlx = 0.0f;
    *suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      out[i] = static_cast<int8_t>(l + nmax);
      *sumlx += qw[i] * x[i] * static_cast<float>(l);
      *suml2 += qw[i] * static_cast<float>(l) * static_cast<float>(l);
    }
  };
  float sumlx, suml2;
  try_scale(static_cast<float>(-nmax) / max, L, &sumlx, &suml2);
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  int8_t trial[kMaxGroup];
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    try_scale(-(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max, trial, &sumlx, &suml2);
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = trial[i];
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float fit_positive_scales(int n, int nmax, const float* x, const float* qw, uint8_t* L) {
  float max = 0.0f;
  for (int i = 0; i < n; ++i) max = max > x[i] ? max : x[i];
  if (max < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / max;
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * static_cast<float>(L[i]);
    best_mse += qw[i] * diff * diff;
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * static_cast<float>(is) + static_cast<float>(nmax)) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
      const float diff = x[i] - scale_is * static_cast<float>(l);
      mse += qw[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  float sumlx = 0.0f;
  float suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::min(nmax, nearest_int(iscale * x[i])));
    const float l = static_cast<float>(L[i]);
    sumlx += qw[i] * x[i] * l;
    suml2 += qw[i] * l * l;
  }
  for (int pass = 0; pass < 5; ++pass) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      // Re-choose L[i] as the best level given the scale fitted to all the others.
      const float w = qw[i];
      const float li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      float sl2 = suml2 - w * li * li;
      if (slx > 0.0f && sl2 > 0.0f) {
        const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
        if (new_l != L[i]) {
          slx += w * x[i] * static_cast<float>(new_l);
          sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<uint8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float fit_symmetric_q3(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0.0f;
  float suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      // Re-choose L[i] as the best quant given the scale fitted to all the others.
      const float w = x[i] * x[i];
      const float li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0.0f) {
        float sl2 = suml2 - w * li * li;
        const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != L[i]) {
          slx += w * x[i] * static_cast<float>(new_l);
          sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
          if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float fit_affine(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* min_out,
                 float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0.0f) min = 0.0f;  // the offset only ever shifts down (min_out >= 0)
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *min_out = -min;
    return 0.0f;
  }
  auto error_of = [&](float scale, float offset, const uint8_t* q) {
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      float diff = scale * static_cast<float>(q[i]) + offset - x[i];
      diff = use_mad ? std::fabs(diff) : diff * diff;
      err += weights[i] * diff;
    }
    return err;
  };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1.0f / iscale;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
  }
  float best_error = error_of(scale, min, L);
  if (nstep < 1) {
    *min_out = -min;
    return scale;
  }
  uint8_t trial[kMaxGroup];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0.0f;
    float sum_l2 = 0.0f;
    float sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float lf = static_cast<float>(l);
      sum_l += w * lf;
      sum_l2 += w * lf * lf;
      sum_xl += w * lf * x[i];
    }
    // Weighted least squares for x ~ this_scale * l + this_min.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det > 0.0f) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      if (this_min > 0.0f) {
        this_min = 0.0f;
        this_scale = sum_xl / sum_l2;
      }
      const float cur_error = error_of(this_scale, this_min, trial);
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = trial[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *min_out = -min;
  return scale;
}

namespace {

void fit_affine_groups(int count, int size, int nmax, const float* x, const float* w, float rmin, float rdelta,
                       int nstep, bool use_mad, float* scales, float* mins, uint8_t* L) {
  for (int g = 0; g < count; ++g) {
    const int at = g * size;
    scales[g] = fit_affine(size, nmax, x + at, w + at, L + at, &mins[g], rmin, rdelta, nstep, use_mad);
  }
}

void fit_symmetric_groups(int count, int size, int nmax, const float* x, const float* qw, float* scales,
                          int8_t* L) {
  for (int g = 0; g < count; ++g) {
    const int at = g * size;
    scales[g] = qw ? fit_symmetric_qw(size, nmax, x + at, qw + at, L + at)
                   : fit_symmetric_weighted(size, nmax, x + at, L + at);
  }
}

}  // namespace

const GroupFits& ref_group_fits() {
  static constexpr GroupFits kFits{fit_affine_groups, fit_symmetric_groups};
  return kFits;
}

}  // namespace runnel::ref
