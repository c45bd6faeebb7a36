// Helpers shared by the kernel tests: a platform-independent random source (integer
// PRNG + exact float construction, so the same rows come out on x86, ARM and wasm) and
// small numeric utilities.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/types.h"

namespace runnel::test {

// splitmix64: tiny, fast, fully specified (std distributions differ between libstdc++
// and libc++, which would make rows differ between the native and wasm test runs).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), a multiple of 2^-24 (exact).
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform in [-1, 1).
  float symmetric() { return 2.0f * uniform() - 1.0f; }
  // Bell-shaped, mean 0, variance 1 (Irwin-Hall of 4 uniforms, rescaled); only basic
  // IEEE ops, so bit-identical everywhere.
  float bell() { return (uniform() + uniform() + uniform() + uniform() - 2.0f) * 1.7320508f; }
  // Heavy tails: a bell value cubed (occasional large outliers, like real weights).
  float heavy() {
    const float b = bell();
    return b * b * b * 0.3f;
  }

 private:
  uint64_t state_;
};

inline std::vector<float> bell_row(Rng& rng, int64_t n, float scale = 1.0f) {
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = rng.bell() * scale;
  return x;
}

// FNV-1a over bytes: a compact fingerprint for golden comparisons.
inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

inline double rms(const std::vector<float>& x) {
  double s = 0.0;
  for (float v : x) s += static_cast<double>(v) * v;
  return std::sqrt(s / static_cast<double>(x.size()));
}

inline double rms_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    s += d * d;
  }
  return std::sqrt(s / static_cast<double>(a.size()));
}

// Quantizes with the reference table and returns the raw row bytes.
inline std::vector<uint8_t> quantize(GgmlType type, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_bytes(type, n));
  ref_kernels().of(type).quantize_row(x.data(), q.data(), n);
  return q;
}

inline std::vector<float> dequantize(GgmlType type, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  ref_kernels().of(type).dequantize_row(q.data(), y.data(), n);
  return y;
}

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Inputs for an f16 row encoder that must round as fp32_to_fp16 does: every half's float
// value, the floats one ulp either side, the midpoints to the next half and one ulp either
// side of them (the ties and the rounding boundaries: subnormal, normal, overflow to inf),
// inf, extremes, quiet and signalling NaNs of both signs (payloads a conversion instruction
// would keep or drop) and random bits; the length leaves a tail shorter than 8.
inline std::vector<float> f16_encode_inputs() {
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float v = fp16_to_fp32(static_cast<uint16_t>(h));
    const uint32_t b = bits_of(v);
    x.push_back(v);
    if ((b & 0x7FFFFFFFu) >= 0x7F800000u) continue;  // inf / NaN: neighbours are not floats
    x.push_back(f32_from_bits(b + 1));
    if (b & 0x7FFFFFFFu) x.push_back(f32_from_bits(b - 1));
    if ((h & 0x7FFFu) < 0x7C00u) {
      // midpoint to the next half away from zero (for 0x7BFF: 65520, the overflow boundary)
      const double next = (h & 0x7FFFu) == 0x7BFFu ? std::copysign(65536.0, v)
                                                   : fp16_to_fp32(static_cast<uint16_t>(h + 1));
      const float mid = static_cast<float>((static_cast<double>(v) + next) / 2);
      const uint32_t m = bits_of(mid);
      x.push_back(mid);
      x.push_back(f32_from_bits(m + 1));
      x.push_back(f32_from_bits(m - 1));
    }
  }
  using Limits = std::numeric_limits<float>;
  for (float v : {Limits::infinity(), -Limits::infinity(), Limits::max(), -Limits::max(),
                  Limits::denorm_min(), -Limits::denorm_min(), 1e-30f, -1e-30f, 70000.0f, -1e10f,
                  0x1p-25f, -0x1p-25f}) {
    x.push_back(v);
  }
  for (uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu,
                       0xFFFFFFFFu, 0x7FA00000u, 0x7F802000u, 0xFFBFE000u, 0x7FC01000u}) {
    x.push_back(f32_from_bits(nan));
  }
  Rng rng(2024);
  for (int i = 0; i < 200000; ++i) x.push_back(f32_from_bits(static_cast<uint32_t>(rng.next())));
  x.resize(x.size() / 8 * 8 + 5);
  return x;
}

// An f16 weight row and activation of n halves for the attention dot tests, by kind:
// 0 bell-shaped, 1 weights 300x larger, 2 subnormal halves, 3 inf in the middle weight and
// NaN in the last activation (n > 2), 4 -inf in the last weight (for most n in a tail).
struct F16DotRows {
  std::vector<uint8_t> w, a;
};
inline F16DotRows f16_dot_rows(int64_t n, int kind) {
  Rng rng(static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(kind));
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    x[i] = kind == 2 ? rng.symmetric() * 1e-6f : rng.bell() * (kind == 1 ? 300.0f : 1.0f);
    y[i] = kind == 2 ? rng.symmetric() * 1e-3f : rng.bell();
  }
  F16DotRows r{quantize(GgmlType::F16, x), quantize(GgmlType::F16, y)};
  if (kind == 3) {
    const uint16_t inf = 0x7C00, nan = 0x7E00;
    std::memcpy(r.w.data() + 2 * (n / 2), &inf, 2);
    if (n > 2) std::memcpy(r.a.data() + 2 * (n - 1), &nan, 2);
  }
  if (kind == 4) {
    const uint16_t minus_inf = 0xFC00;
    std::memcpy(r.w.data() + 2 * (n - 1), &minus_inf, 2);
  }
  return r;
}

}  // namespace runnel::test
