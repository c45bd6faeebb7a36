// The numeric helpers the reference kernels are built on.
#include "kernels/ref/quant_math.h"

#include <catch2/catch.hpp>
#include <cfenv>
#include <cmath>

#include "kernels/fp16.h"
#include "kernels/ref/k_quants_common.h"
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

TEST_CASE("unpack_scales_mins_k4 gives unpack_scale_min_k4's 8 scales and mins", "[kernels]") {
  test::Rng rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    uint8_t b[12];
    for (uint8_t& x : b)
      x = static_cast<uint8_t>(trial < 2 ? (trial == 0 ? 0x00 : 0xFF) : rng.next());
    uint8_t scales[8], mins[8];
    ref::unpack_scales_mins_k4(b, scales, mins);
    for (int j = 0; j < 8; ++j) {
      uint8_t scale, min;
      ref::unpack_scale_min_k4(j, b, &scale, &min);
      INFO("trial " << trial << ", field " << j);
      REQUIRE(scales[j] == scale);
      REQUIRE(mins[j] == min);
    }
  }
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
