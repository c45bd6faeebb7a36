// The checks of gelu, geglu and softcap shared by the per-ISA float-op tests (AVX2, NEON,
// SIMD128 all compute them the same way: ref's gelu exponent bit for bit, then a
// polynomial e^x within ~1 ulp; tanh as |y| / (2 + y) from a polynomial e^x - 1). Each
// check runs random rows (every length's vector tail included), a dense sweep over the
// range where the result changes shape, and adversarial values, and returns the largest
// error it saw in units of u = 2^-24 relative to ref's result, so each ISA's test can state
// (and pin) its measured figure.
//
// Bounds (the same derivation for every ISA; u = 2^-24, the unit roundoff of float):
//  - gelu: both sides compute the same exponent v = -2 sqrt(2/pi) x (1 + 0.044715 x^2)
//    (ref's float operations in ref's order), then x / (1 + e^v). The polynomial e^v is
//    within ~1 ulp (2u) and expf within 0.5 ulp (u); the relative error of e^v reaches
//    x / (1 + e^v) scaled by e^v / (1 + e^v) <= 1; each side then rounds 1 + e and the
//    division: 3u + 4u = 7u at worst; kGeluRel = 10u. Where e^v overflows on one side
//    only (x ~ -10.06) one result is -0 and the other ~ -3e-38: kGeluAbs = 1e-37.
//  - geglu: gelu's bound plus the multiply by up on each side: 12u, and kGeluAbs |up|.
//  - softcap: ref is cap * tanhf(x * (1 / cap)) with the same argument t on both sides.
//    y = e^(-2|t|) - 1 is within ~2u relative (k = 0: the polynomial's m directly; else
//    one fused rounding of 2^k m + 2^k - 1 with |y| >= 0.29), |y| / (2 + y) scales that by
//    2 / (2 + y) <= 2 and adds two roundings: 6u; tanhf is within ~1 ulp (2u); cap * T
//    rounds once on each side: 10u at worst; kSoftcapRel = 12u. Results below FLT_MIN
//    (t subnormal) are exact on both sides; kSoftcapAbs covers one subnormal step times
//    cap anyway.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/ops.h"
#include "tests/kernels/test_util.h"

namespace runnel::test {

inline constexpr double kActU = 0x1p-24;
inline constexpr double kGeluRel = 10 * kActU;
inline constexpr double kGegluRel = 12 * kActU;
inline constexpr double kGeluAbs = 1e-37;
inline constexpr double kSoftcapRel = 12 * kActU;
inline constexpr double kSoftcapAbs = 0x1p-148;  // times |cap|

// Lengths covering every vector width's tail (4 and 8 lanes) and a long row.
inline constexpr int64_t kActivationLengths[] = {1, 3, 4, 7, 8, 9, 31, 64, 100, 4099};

// |got - want| <= rel |want| + abs[i] element by element, NaN where ref has NaN, equal
// infinities. Returns the largest |got - want| / (u |want|) over normal nonzero results.
inline double check_activation(const std::vector<float>& got, const std::vector<float>& want,
                               double rel, const std::vector<double>& abs) {
  REQUIRE(got.size() == want.size());
  int bad = 0;
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want[i];
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(got[i]);
    } else if (std::isinf(w)) {
      ok = got[i] == want[i];
    } else {
      const double err = std::fabs(static_cast<double>(got[i]) - w);
      ok = err <= rel * std::fabs(w) + abs[i];
      if (std::fabs(w) >= std::numeric_limits<float>::min()) {
        worst = std::max(worst, err / (kActU * std::fabs(w)));
      }
    }
    if (!ok && ++bad <= 8) {
      UNSCOPED_INFO("element " << i << ": got " << got[i] << ", ref " << want[i]);
    }
  }
  INFO("largest error " << worst << " u");
  CHECK(bad == 0);
  return worst;
}

// Random bell rows times spread, with specials[] written over the front of the row.
inline std::vector<float> activation_row(Rng& rng, int64_t n, float spread,
                                         const std::vector<float>& specials) {
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = rng.bell() * spread;
  for (size_t i = 0; i < x.size() && i < specials.size(); ++i) x[i] = specials[i];
  return x;
}

// [-lim, lim] in steps of 2^-8, then the specials.
inline std::vector<float> sweep(float lim, const std::vector<float>& specials) {
  std::vector<float> x;
  const int steps = static_cast<int>(lim * 256.0f);
  for (int i = -steps; i <= steps; ++i) x.push_back(static_cast<float>(i) / 256.0f);
  x.insert(x.end(), specials.begin(), specials.end());
  return x;
}

inline std::vector<float> gelu_specials() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {0.0f,    -0.0f,   1e-40f, -1e-40f, 1e-30f, -1e-30f, 1e-4f,    -1e-4f, -10.0f, -10.05f,
          -10.06f, -10.07f, -10.1f, 10.06f,  -12.0f, 30.0f,   -30.0f,   1e4f,   -1e4f,  1e19f,
          -1e19f,  2e19f,   -2e19f, 1e30f,   -1e30f, 3.4e38f, -3.4e38f, inf,    -inf,   nan};
}

struct GeluErrors {
  double gelu = 0.0, geglu = 0.0;
};

// gelu and geglu (and gelu in place) against ref; returns the largest errors in u.
inline GeluErrors check_gelu_geglu(const FloatOps& f) {
  const FloatOps& r = ref_float_ops();
  const auto specials = gelu_specials();
  GeluErrors worst;
  auto run = [&](const std::vector<float>& x, Rng& rng) {
    const auto n = static_cast<int64_t>(x.size());
    std::vector<float> up(x.size());
    for (auto& v : up) v = rng.heavy();
    std::vector<float> got(x.size()), want(x.size());
    const std::vector<double> gelu_abs(x.size(), kGeluAbs);
    f.gelu(x.data(), got.data(), n);
    r.gelu(x.data(), want.data(), n);
    worst.gelu = std::max(worst.gelu, check_activation(got, want, kGeluRel, gelu_abs));
    got = x;  // in place
    f.gelu(got.data(), got.data(), n);
    check_activation(got, want, kGeluRel, gelu_abs);
    f.geglu(x.data(), up.data(), got.data(), n);
    r.geglu(x.data(), up.data(), want.data(), n);
    std::vector<double> abs(x.size());
    for (size_t i = 0; i < x.size(); ++i) abs[i] = kGeluAbs * std::fabs(up[i]);
    worst.geglu = std::max(worst.geglu, check_activation(got, want, kGegluRel, abs));
  };
  for (int64_t n : kActivationLengths) {
    for (float spread : {1.0f, 4.0f, 30.0f}) {
      INFO("n " << n << ", spread " << spread);
      Rng rng(static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(spread));
      run(activation_row(rng, n, spread, spread == 4.0f ? specials : std::vector<float>{}), rng);
    }
  }
  INFO("sweep of [-12, 12]");
  Rng rng(1234);
  run(sweep(12.0f, specials), rng);

  // Exact values: signed zeros, saturation both ways, infinities, NaN.
  const float inf = std::numeric_limits<float>::infinity();
  const float x[] = {0.0f, -0.0f, 20.0f, -20.0f, 1e30f, inf, -inf, std::nanf("")};
  float out[8];
  f.gelu(x, out, 8);
  CHECK(bits_of(out[0]) == bits_of(0.0f));
  CHECK(bits_of(out[1]) == bits_of(-0.0f));
  CHECK(out[2] == 20.0f);                    // 20 / (1 + e^-680)
  CHECK(bits_of(out[3]) == bits_of(-0.0f));  // -20 / (1 + inf)
  CHECK(out[4] == 1e30f);
  CHECK(out[5] == inf);
  CHECK(std::isnan(out[6]));  // -inf / inf, as ref
  CHECK(std::isnan(out[7]));
  return worst;
}

inline std::vector<float> softcap_specials(float cap) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {0.0f,          -0.0f,        1e-40f,       -1e-40f,     1e-30f * cap,
          -1e-30f * cap, 1e-6f * cap,  -1e-6f * cap, 0.17f * cap, -0.18f * cap,
          0.35f * cap,   -0.35f * cap, 9.0f * cap,   -9.0f * cap, 9.2f * cap,
          -9.2f * cap,   15.0f * cap,  -15.0f * cap, 1e30f,       -1e30f,
          3.4e38f,       -3.4e38f,     inf,          -inf,        nan};
}

// softcap against ref for several caps; returns the largest error in u.
inline double check_softcap(const FloatOps& f) {
  const FloatOps& r = ref_float_ops();
  double worst = 0.0;
  for (float cap : {30.0f, 50.0f, 1.0f, 7.3f}) {
    const auto specials = softcap_specials(cap);
    auto run = [&](const std::vector<float>& x) {
      auto got = x;
      auto want = x;
      f.softcap(got.data(), static_cast<int64_t>(x.size()), cap);
      r.softcap(want.data(), static_cast<int64_t>(x.size()), cap);
      std::vector<double> abs(x.size(), kSoftcapAbs * cap);
      worst = std::max(worst, check_activation(got, want, kSoftcapRel, abs));
    };
    for (int64_t n : kActivationLengths) {
      for (float spread : {0.3f, 2.0f, 8.0f}) {  // t = x / cap ~ spread
        INFO("cap " << cap << ", n " << n << ", spread " << spread);
        Rng rng(static_cast<uint64_t>(n) * 37 + static_cast<uint64_t>(spread * 10) +
                static_cast<uint64_t>(cap));
        run(activation_row(rng, n, spread * cap, spread == 2.0f ? specials : std::vector<float>{}));
      }
    }
    INFO("cap " << cap << ", sweep of t in [-12, 12]");
    auto x = sweep(12.0f, {});
    for (auto& v : x) v *= cap;
    x.insert(x.end(), specials.begin(), specials.end());
    run(x);

    // Exact values: signed zeros, tanh saturated to 1, infinities, NaN.
    const float inf = std::numeric_limits<float>::infinity();
    float y[] = {0.0f, -0.0f, 10.0f * cap, -10.0f * cap, inf, -inf, std::nanf("")};
    f.softcap(y, 7, cap);
    INFO("cap " << cap);
    CHECK(bits_of(y[0]) == bits_of(0.0f));
    CHECK(bits_of(y[1]) == bits_of(-0.0f));
    CHECK(y[2] == cap);
    CHECK(y[3] == -cap);
    CHECK(y[4] == cap);
    CHECK(y[5] == -cap);
    CHECK(std::isnan(y[6]));
  }
  return worst;
}

}  // namespace runnel::test
