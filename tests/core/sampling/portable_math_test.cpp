#include "core/sampling/portable_math.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

namespace runnel {
namespace {

double relative_error(double got, double want) {
  return std::fabs(got - want) / std::fabs(want);
}

TEST_CASE("portable_exp matches std::exp to 2e-15 over the normal range", "[sampling]") {
  double worst = 0.0;
  double worst_x = 0.0;
  // 20001 points across [-708, 709] plus a dense sweep around 0 (the sampler's
  // arguments are logit - max_logit <= 0, mostly in [-30, 0]).
  for (int i = 0; i <= 20000; ++i) {
    const double x = -708.0 + 1417.0 * i / 20000.0;
    const double err = relative_error(portable_exp(x), std::exp(x));
    if (err > worst) worst = err, worst_x = x;
  }
  for (int i = 0; i <= 20000; ++i) {
    const double x = -30.0 + 31.0 * i / 20000.0 + 1e-7;
    const double err = relative_error(portable_exp(x), std::exp(x));
    if (err > worst) worst = err, worst_x = x;
  }
  INFO("worst x = " << worst_x);
  CHECK(worst < 2e-15);
}

TEST_CASE("portable_exp special values and the subnormal tail", "[sampling]") {
  CHECK(portable_exp(0.0) == 1.0);
  CHECK(portable_exp(1.0) == Approx(2.718281828459045).epsilon(1e-15));
  CHECK(portable_exp(-1e9) == 0.0);
  CHECK(portable_exp(-std::numeric_limits<double>::infinity()) == 0.0);
  CHECK(std::isinf(portable_exp(710.0)));
  CHECK(std::isnan(portable_exp(std::numeric_limits<double>::quiet_NaN())));
  // Below -708 the result is subnormal: fewer significant bits, so compare loosely.
  for (double x : {-709.0, -720.5, -740.0, -744.0}) {
    INFO("x = " << x);
    CHECK(relative_error(portable_exp(x), std::exp(x)) < 1e-9);
  }
  CHECK(portable_exp(-746.0) == 0.0);
}

TEST_CASE("portable_log matches std::log to 2e-15 from subnormals to 1e300", "[sampling]") {
  double worst = 0.0;
  double worst_x = 0.0;
  for (int i = 0; i <= 20000; ++i) {
    const double x = std::pow(10.0, -320.0 + 620.0 * i / 20000.0);
    const double want = std::log(x);
    // Near x = 1 log x is near 0: bound the absolute error there instead.
    const double err = std::fabs(want) < 1e-3 ? std::fabs(portable_log(x) - want)
                                              : relative_error(portable_log(x), want);
    if (err > worst) worst = err, worst_x = x;
  }
  for (int i = 0; i <= 20000; ++i) {  // probabilities, the sampler's arguments
    const double x = (i + 0.5) / 20001.0;
    const double err = relative_error(portable_log(x), std::log(x));
    if (err > worst) worst = err, worst_x = x;
  }
  INFO("worst x = " << worst_x);
  CHECK(worst < 2e-15);
  CHECK(std::fabs(portable_log(1.0 + 1e-12) - std::log(1.0 + 1e-12)) < 1e-27);
}

TEST_CASE("portable_log special values", "[sampling]") {
  CHECK(portable_log(1.0) == 0.0);
  CHECK(portable_log(2.0) == Approx(0.6931471805599453).epsilon(1e-15));
  CHECK(portable_log(0.5) == Approx(-0.6931471805599453).epsilon(1e-15));
  CHECK(portable_log(5e-324) == Approx(-744.4400719213812).epsilon(1e-15));
  CHECK(portable_log(0.0) == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(portable_log(-1.0)));
  CHECK(std::isnan(portable_log(std::numeric_limits<double>::quiet_NaN())));
  CHECK(portable_log(std::numeric_limits<double>::infinity()) ==
        std::numeric_limits<double>::infinity());
}

TEST_CASE("portable_log inverts portable_exp", "[sampling]") {
  // e^x rounds to a double near 1 for small |x|, so there the bound is absolute.
  for (double x : {-700.0, -88.5, -20.0, -1.0, -1e-6, 1e-6, 0.3, 5.0, 300.0}) {
    INFO("x = " << x);
    CHECK(portable_log(portable_exp(x)) == Approx(x).epsilon(1e-14).margin(1e-15));
  }
}

}  // namespace
}  // namespace runnel
