// The numeric helpers the reference kernels are built on.
#include "kernels/ref/quant_math.h"

#include <catch2/catch.hpp>
#include <cfenv>
#include <cmath>

#include "kernels/fp16.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

TEST_CASE("Branchless f16 decode equals fp16_to_fp32 for all 65536 halves", "[kernels]") {
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t want = test::bits_of(fp16_to_fp32(static_cast<uint16_t>(h)));
    const uint32_t got = test::bits_of(ref::fp16_to_fp32_branchless(static_cast<uint16_t>(h)));
    if (want != got) ++mismatches;
  }
  CHECK(mismatches == 0);
  CHECK(ref::fp16_to_fp32_branchless(0x0001) == 0x1p-24f);
  CHECK(std::isinf(ref::fp16_to_fp32_branchless(0xFC00)));
  CHECK(std::isnan(ref::fp16_to_fp32_branchless(0x7E00)));
}

TEST_CASE("nearest_int rounds half to even like the default rounding mode", "[kernels]") {
  CHECK(ref::nearest_int(0.5f) == 0);
  CHECK(ref::nearest_int(1.5f) == 2);
  CHECK(ref::nearest_int(2.5f) == 2);
  CHECK(ref::nearest_int(-0.5f) == 0);
  CHECK(ref::nearest_int(-1.5f) == -2);
  CHECK(ref::nearest_int(-2.5f) == -2);
  CHECK(ref::nearest_int(2.4999998f) == 2);
  CHECK(ref::nearest_int(-127.0f) == -127);
  CHECK(ref::nearest_int(4194303.0f) == 4194303);
  CHECK(ref::nearest_int(-4194303.0f) == -4194303);
  REQUIRE(std::fegetround() == FE_TONEAREST);
  test::Rng rng(1);
  int mismatches = 0;
  for (int i = 0; i < 100000; ++i) {
    const float v = rng.symmetric() * (i % 2 ? 300.0f : 4.0f);
    if (ref::nearest_int(v) != static_cast<int>(std::nearbyint(v))) ++mismatches;
  }
  CHECK(mismatches == 0);
}

}  // namespace
}  // namespace runnel
