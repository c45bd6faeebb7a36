// The SIMD128 gelu, geglu and softcap (kernels/wasm/simd128_ops.cpp) against
// ref_float_ops() (the other SIMD128 float ops are in simd128_test.cpp). Bounds: those of
// tests/kernels/activation_test_util.h (gelu 10u, geglu 12u, softcap 12u relative,
// u = 2^-24, derived there), against musl's expf / tanhf under node; measured: gelu 3.9u,
// geglu 4.4u, softcap 4.8u.
#include <catch2/catch.hpp>

#include "kernels/ops.h"
#include "kernels/wasm/wasm.h"
#include "tests/kernels/activation_test_util.h"

namespace runnel {
namespace {

TEST_CASE("SIMD128 gelu and geglu match ref", "[simd128]") {
  test::check_gelu_geglu(*simd128_float_ops());
}

TEST_CASE("SIMD128 softcap matches ref", "[simd128]") {
  test::check_softcap(*simd128_float_ops());
}

}  // namespace
}  // namespace runnel
