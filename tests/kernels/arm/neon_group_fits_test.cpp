// The NEON model quantizers (Q2_K .. Q6_K, plain and importance-weighted) run ref's
// group searches on 4 groups at once: their bytes must equal ref's exactly
// (tests/kernels/group_fits_test_util.h), in both NEON tables.
#include <catch2/catch.hpp>

#include "kernels/arm/arm.h"
#include "kernels/kernels.h"
#include "tests/kernels/group_fits_test_util.h"

namespace runnel {
namespace {

TEST_CASE("NEON k-quant model quantizers give ref's bytes", "[neon]") {
  REQUIRE(neon_baseline_kernels() != nullptr);
  test::check_group_fit_quantizers(*neon_baseline_kernels());
  test::check_group_fit_weighted_quantizers(*neon_baseline_kernels());
  if (neon_dotprod_kernels() != nullptr) {  // inherits the baseline table's quantizers
    CHECK(neon_dotprod_kernels()->of(GgmlType::Q4_K).quantize_row ==
          neon_baseline_kernels()->of(GgmlType::Q4_K).quantize_row);
  }
}

}  // namespace
}  // namespace runnel
