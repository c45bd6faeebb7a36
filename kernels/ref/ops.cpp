// Scalar reference float ops. Reductions accumulate in double (in eight independent lanes
// where that keeps the loop vectorizable); element-wise ops use float expf/tanhf like
// ggml. Shapes and contracts are in ops.h.
#include "kernels/ref/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace runnel::ref {
namespace {
constexpr int kLanes = 8;
}  // namespace

void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(x[i + l]) * x[i + l];
  }
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float inv_rms = 1.0f / std::sqrt(mean + eps);
  if (w != nullptr) {
    for (int64_t j = 0; j < n; ++j) out[j] = x[j] * inv_rms * w[j];
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = x[j] * inv_rms;
  }
}

void softmax(float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  if (max == -std::numeric_limits<float>::infinity()) {  // fully masked row
    for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);  // sum >= 1: the max term is exp(0)
  for (int64_t i = 0; i < n; ++i) x[i] *= inv_sum;
}

void silu(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

namespace {
// 0.5 x (1 + tanh(u)) == x / (1 + exp(-2u)): the same function, but without the
// cancellation of 1 + tanh(u) for negative x (which costs float tanh forms ~1% there).
inline float gelu_one(float x) {
  constexpr float kTwoSqrt2OverPi = 1.5957691216057308f;  // 2 * sqrt(2 / pi)
  constexpr float kCoef = 0.044715f;
  return x / (1.0f + std::exp(-kTwoSqrt2OverPi * x * (1.0f + kCoef * x * x)));
}
}  // namespace

void gelu(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_one(x[i]);
}

void geglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_one(gate[i]) * up[i];
}

void softcap(float* x, int64_t n, float cap) {
  const float inv_cap = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv_cap);
}

void add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

void scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void axpy(const float* x, float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] += s * x[i];
}

namespace {

// YaRN's angles and magnitude (ops.h); kept apart so plain rope stays as it was.
void rope_cos_sin_yarn(int64_t pos, const RopeParams& p, float* cos_sin) {
  const int64_t n_pairs = p.n_rot / 2;
  const double n_rot = static_cast<double>(p.n_rot);
  const double log_base = std::log(static_cast<double>(p.freq_base));
  constexpr double kTwoPi = 6.283185307179586;
  // The pair index that turns `beta` times over the original context.
  const auto corr_dim = [&](double beta) {
    return n_rot * std::log(static_cast<double>(p.n_ctx_orig) / (kTwoPi * beta)) / (2.0 * log_base);
  };
  const double low = std::max(0.0, std::floor(corr_dim(p.beta_fast)));
  const double high = std::min(n_rot - 1.0, std::ceil(corr_dim(p.beta_slow)));
  const double freq_scale = static_cast<double>(p.freq_scale);
  const double mscale = static_cast<double>(p.attn_factor) * (1.0 + 0.1 * std::log(1.0 / freq_scale));
  for (int64_t i = 0; i < n_pairs; ++i) {
    double freq = std::exp(-2.0 * static_cast<double>(i) / n_rot * log_base);
    if (p.freq_factors != nullptr) freq /= static_cast<double>(p.freq_factors[i]);
    const double extrap = static_cast<double>(pos) * freq;
    const double interp = static_cast<double>(pos) * freq_scale * freq;
    const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
    const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * static_cast<double>(p.ext_factor);
    const double theta = interp * (1.0 - mix) + extrap * mix;
    cos_sin[2 * i] = static_cast<float>(std::cos(theta) * mscale);
    cos_sin[2 * i + 1] = static_cast<float>(std::sin(theta) * mscale);
  }
}

}  // namespace

void rope_cos_sin(int64_t pos, const RopeParams& p, float* cos_sin) {
  if (p.ext_factor != 0.0f) {
    rope_cos_sin_yarn(pos, p, cos_sin);
    return;
  }
  const int64_t n_pairs = p.n_rot / 2;
  const double log_base = std::log(static_cast<double>(p.freq_base));
  for (int64_t i = 0; i < n_pairs; ++i) {
    // freq_base^(-2i / n_rot) via exp/log keeps full double precision for every i.
    double freq = std::exp(-2.0 * static_cast<double>(i) / static_cast<double>(p.n_rot) * log_base);
    if (p.freq_factors != nullptr) freq /= static_cast<double>(p.freq_factors[i]);
    const double theta = static_cast<double>(pos) * static_cast<double>(p.freq_scale) * freq;
    cos_sin[2 * i] = static_cast<float>(std::cos(theta) * p.attn_factor);
    cos_sin[2 * i + 1] = static_cast<float>(std::sin(theta) * p.attn_factor);
  }
}

void rope_apply(float* x, int64_t n_rot, const float* cos_sin, RopeStyle style) {
  const int64_t n_pairs = n_rot / 2;
  // Pair i is (x[i * step], x[i * step + gap]).
  const int64_t step = style == RopeStyle::kNormal ? 2 : 1;
  const int64_t gap = style == RopeStyle::kNormal ? 1 : n_pairs;
  for (int64_t i = 0; i < n_pairs; ++i) {
    const float c = cos_sin[2 * i];
    const float s = cos_sin[2 * i + 1];
    float* a = x + i * step;
    float* b = a + gap;
    const float x0 = *a;
    const float x1 = *b;
    *a = x0 * c - x1 * s;
    *b = x0 * s + x1 * c;
  }
}

}  // namespace runnel::ref
