#include "core/sampling/portable_math.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace runnel {
namespace {

// ln 2 split so that k * kLn2Hi is exact for |k| < 2^11 (kLn2Hi has 32 significant
// bits); kLn2Lo carries the rest. Cody-Waite range reduction.
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3FE62E42FEE00000
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kLog2e = 1.44269504088896338700e+00;
constexpr double kSqrt2 = 1.41421356237309514547e+00;

// Above this e^x overflows; below kExpUnderflow it rounds to 0.
constexpr double kExpOverflow = 7.09782712893383973096e+02;
constexpr double kExpUnderflow = -7.45133219101941108420e+02;

// Taylor coefficients 1/n! for exp and 1/(2n+1) for the atanh series of log,
// rounded once at compile time.
constexpr int kExpDegree = 13;
constexpr int kLogTerms = 11;

struct Coefficients {
  double inverse_factorial[kExpDegree + 1];
  double inverse_odd[kLogTerms + 1];
};

constexpr Coefficients make_coefficients() {
  Coefficients c{};
  double factorial = 1.0;
  for (int n = 0; n <= kExpDegree; ++n) {
    if (n > 0) factorial *= n;  // exact: 13! < 2^53
    c.inverse_factorial[n] = 1.0 / factorial;
  }
  for (int n = 0; n <= kLogTerms; ++n) c.inverse_odd[n] = 1.0 / (2 * n + 1);
  return c;
}

constexpr Coefficients kCoefficients = make_coefficients();

double bits_to_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

uint64_t double_to_bits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}

// 2^k for a normal exponent, -1022 <= k <= 1023.
double pow2(int k) {
  return bits_to_double(static_cast<uint64_t>(k + 1023) << 52);
}

}  // namespace

double portable_exp(double x) {
  if (std::isnan(x)) return x;
  if (x > kExpOverflow) return std::numeric_limits<double>::infinity();
  if (x < kExpUnderflow) return 0.0;

  // x = k ln2 + r with |r| <= ln2 / 2 (floor is exact on every platform).
  const double k = std::floor(x * kLog2e + 0.5);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;

  // Taylor series to r^13: the first omitted term is below 0.35^14 / 14! < 5e-18.
  const double* c = kCoefficients.inverse_factorial;
  double poly = c[kExpDegree];
  for (int n = kExpDegree - 1; n >= 0; --n) poly = poly * r + c[n];

  // Scale by 2^k; k spans [-1075, 1024], outside the normal range split it in two
  // so the only rounding is the final one.
  const int ki = static_cast<int>(k);
  if (ki > 1023) return poly * pow2(1023) * 2.0;
  if (ki < -1022) return (poly * pow2(ki + 54)) * pow2(-54);
  return poly * pow2(ki);
}

double portable_log(double x) {
  if (std::isnan(x) || x < 0.0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;

  int exponent = 0;
  if (x < std::numeric_limits<double>::min()) {  // subnormal: make it normal first
    x *= pow2(54);
    exponent = -54;
  }
  // x = m * 2^e with m in [1, 2), then moved to [sqrt(1/2), sqrt(2)] so |log m| is small.
  const uint64_t bits = double_to_bits(x);
  exponent += static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  double m = bits_to_double((bits & 0x000FFFFFFFFFFFFFull) | (uint64_t{1023} << 52));
  if (m > kSqrt2) {
    m *= 0.5;
    exponent += 1;
  }

  // log m = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), s = (m-1)/(m+1), |s| <= 0.1716.
  // m - 1 is exact here (Sterbenz); terms to s^23 leave an error below 1e-17.
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double s2 = s * s;
  const double* c = kCoefficients.inverse_odd;
  double series = c[kLogTerms];
  for (int n = kLogTerms - 1; n >= 1; --n) series = series * s2 + c[n];
  const double log_m = 2.0 * s + 2.0 * s * (s2 * series);

  const double e = exponent;
  return e * kLn2Hi + (e * kLn2Lo + log_m);
}

}  // namespace runnel
