// The SIMD128 float ops (kernels/wasm/simd128_ops.cpp) against ref_float_ops() (compiled
// only into the wasm build). Bounds:
//  - add, mul, scale, axpy, rope_apply and rms_norm bit-exact (same float operations in
//    the same order; rms_norm's double sum of squares is ref's loop);
//  - silu, swiglu and softmax within 10 * 2^-24 relative + 1e-37: the polynomial exp is
//    within 1 ulp of e^x and expf within 0.5 (together <= 3 * 2^-24 relative), and up to
//    three more roundings follow on each side (1 + e, the division, the multiply by up;
//    softmax: 1 / sum and the multiply), each <= 2^-24 relative: 9 * 2^-24 at worst
//    (measured: 4.4, 5.3 and 4.1). 1e-37 covers results in the float subnormal range;
//  - gelu, geglu and softcap: those of tests/kernels/activation_test_util.h (gelu 10u,
//    geglu 12u, softcap 12u relative, u = 2^-24, derived there), against musl's expf /
//    tanhf under node; measured: gelu 3.9u, geglu 4.4u, softcap 4.8u.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ops.h"
#include "kernels/wasm/wasm.h"
#include "tests/kernels/activation_test_util.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::make_row;
using test::Rng;
using test::RowKind;

const FloatOps& ops() {
  return *simd128_float_ops();
}

const int64_t kOpLengths[] = {1, 3, 4, 5, 8, 13, 64, 1000, 4096, 4099};

// |got - want| <= rel * |want| + abs, element by element.
void check_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                 double abs) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": simd128 " << got[i] << ", ref " << want[i]);
    CHECK(std::fabs(static_cast<double>(got[i]) - want[i]) <= rel * std::fabs(want[i]) + abs);
  }
}

void check_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": simd128 " << got[i] << ", ref " << want[i]);
    CHECK(test::bits_of(got[i]) == test::bits_of(want[i]));
  }
}

TEST_CASE("SIMD128 add, mul, scale and axpy are bit-exact with ref", "[simd128]") {
  for (int64_t n : kOpLengths) {
    INFO("n " << n);
    Rng rng(static_cast<uint64_t>(n) + 500);
    const auto a = make_row(RowKind::kHeavy, rng, n);
    const auto b = make_row(RowKind::kBell, rng, n);
    const auto& r = ref_float_ops();
    std::vector<float> got(a.size()), want(a.size());
    ops().add(a.data(), b.data(), got.data(), n);
    r.add(a.data(), b.data(), want.data(), n);
    check_same_bits(got, want);
    ops().mul(a.data(), b.data(), got.data(), n);
    r.mul(a.data(), b.data(), want.data(), n);
    check_same_bits(got, want);
    got = a;
    want = a;
    ops().scale(got.data(), n, -0.3f);
    r.scale(want.data(), n, -0.3f);
    check_same_bits(got, want);
    got = b;
    want = b;
    ops().axpy(a.data(), got.data(), n, 1.7f);
    r.axpy(a.data(), want.data(), n, 1.7f);
    check_same_bits(got, want);
    // out aliasing an input
    got = a;
    ops().add(got.data(), b.data(), got.data(), n);
    r.add(a.data(), b.data(), want.data(), n);
    check_same_bits(got, want);
  }
}

TEST_CASE("SIMD128 rms_norm is bit-exact with ref", "[simd128]") {
  for (int64_t n : kOpLengths) {
    for (RowKind kind : {RowKind::kBell, RowKind::kHeavy, RowKind::kZero, RowKind::kHuge}) {
      INFO("n " << n << ", row kind " << static_cast<int>(kind));
      Rng rng(static_cast<uint64_t>(n) * 3 + static_cast<uint64_t>(kind));
      const auto x = make_row(kind, rng, n);
      const auto w = make_row(RowKind::kBell, rng, n);
      std::vector<float> got(x.size()), want(x.size());
      ops().rms_norm(x.data(), w.data(), got.data(), n, 1e-5f);
      ref_float_ops().rms_norm(x.data(), w.data(), want.data(), n, 1e-5f);
      check_same_bits(got, want);
      ops().rms_norm(x.data(), nullptr, got.data(), n, 1e-6f);
      ref_float_ops().rms_norm(x.data(), nullptr, want.data(), n, 1e-6f);
      check_same_bits(got, want);
      got = x;  // in place
      ops().rms_norm(got.data(), w.data(), got.data(), n, 1e-5f);
      ref_float_ops().rms_norm(x.data(), w.data(), want.data(), n, 1e-5f);
      check_same_bits(got, want);
    }
  }
}

TEST_CASE("SIMD128 silu and swiglu match ref", "[simd128]") {
  for (int64_t n : kOpLengths) {
    INFO("n " << n);
    Rng rng(static_cast<uint64_t>(n) + 77);
    auto x = make_row(RowKind::kBell, rng, n);
    for (auto& v : x) v *= 8.0f;
    // exp overflow and underflow on both sides, and exact zeros
    const float specials[] = {-100.0f, 100.0f, 0.0f, -0.0f, -88.5f, 88.5f, -87.0f, 1e-30f, -30.0f};
    for (size_t i = 0; i < x.size() && i < sizeof specials / sizeof specials[0]; ++i) {
      x[i] = specials[i];
    }
    const auto up = make_row(RowKind::kHeavy, rng, n);
    std::vector<float> got(x.size()), want(x.size());
    ops().silu(x.data(), got.data(), n);
    ref_float_ops().silu(x.data(), want.data(), n);
    check_close(got, want, 10 * 0x1p-24, 1e-37);
    if (n > 1) CHECK(got[0] == 0.0f);    // -100 / (1 + inf)
    if (n > 1) CHECK(got[1] == 100.0f);  // 100 / (1 + e^-100)
    ops().swiglu(x.data(), up.data(), got.data(), n);
    ref_float_ops().swiglu(x.data(), up.data(), want.data(), n);
    check_close(got, want, 10 * 0x1p-24, 1e-37);
    got = x;  // in place
    ops().silu(got.data(), got.data(), n);
    ref_float_ops().silu(x.data(), want.data(), n);
    check_close(got, want, 10 * 0x1p-24, 1e-37);
  }
}

TEST_CASE("SIMD128 softmax matches ref", "[simd128]") {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t n : kOpLengths) {
    for (float spread : {1.0f, 30.0f}) {
      INFO("n " << n << ", spread " << spread);
      Rng rng(static_cast<uint64_t>(n) * 5 + static_cast<uint64_t>(spread));
      auto x = make_row(RowKind::kBell, rng, n);
      for (auto& v : x) v *= spread;
      for (int64_t i = 2; i < n; i += 7) x[i] = ninf;  // masked entries
      if (n > 1) x[1] = 80.0f * spread;                // exp(x) alone would overflow
      auto got = x;
      auto want = x;
      ops().softmax(got.data(), n);
      ref_float_ops().softmax(want.data(), n);
      check_close(got, want, 10 * 0x1p-24, 1e-37);
      for (int64_t i = 2; i < n; i += 7) CHECK(got[i] == 0.0f);
    }
  }
  std::vector<float> all_masked(6, ninf);
  ops().softmax(all_masked.data(), 6);
  for (float v : all_masked) CHECK(v == 0.0f);
}

TEST_CASE("SIMD128 rope_apply is bit-exact with ref", "[simd128]") {
  for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
    for (int64_t n_rot : {2, 4, 6, 10, 32, 64, 80, 128}) {
      for (int64_t pos : {0, 1, 4095, 131071}) {
        INFO("style " << static_cast<int>(style) << ", n_rot " << n_rot << ", pos " << pos);
        RopeParams p;
        p.n_rot = n_rot;
        p.freq_base = 500000.0f;
        p.attn_factor = pos == 1 ? 1.5f : 1.0f;
        std::vector<float> cos_sin(static_cast<size_t>(n_rot));
        ref_float_ops().rope_cos_sin(pos, p, cos_sin.data());
        Rng rng(static_cast<uint64_t>(n_rot) * 11 + static_cast<uint64_t>(pos));
        const auto x = make_row(RowKind::kBell, rng, n_rot + 16);  // a tail past n_rot
        auto got = x;
        auto want = x;
        ops().rope_apply(got.data(), n_rot, cos_sin.data(), style);
        ref_float_ops().rope_apply(want.data(), n_rot, cos_sin.data(), style);
        check_same_bits(got, want);
      }
    }
  }
}

TEST_CASE("SIMD128 gelu and geglu match ref", "[simd128]") {
  test::check_gelu_geglu(*simd128_float_ops());
}

TEST_CASE("SIMD128 softcap matches ref", "[simd128]") {
  test::check_softcap(*simd128_float_ops());
}

}  // namespace
}  // namespace runnel
