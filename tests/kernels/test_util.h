// Helpers shared by the kernel tests: a platform-independent random source (integer
// PRNG + exact float construction, so the same rows come out on x86, ARM and wasm) and
// small numeric utilities.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

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

}  // namespace runnel::test
