// The NEON float ops (kernels/arm/neon_ops.cpp) added beside silu / swiglu / softmax (those
// are in neon_test.cpp): against ref_float_ops() on random and adversarial rows of lengths
// 1 to 4099 (tails of 1..3 elements included). Run under qemu-aarch64 by the `neon` stage
// of scripts/test.sh. Bounds (u = 2^-24):
//  - add, mul, scale, axpy, rope_apply, rms_norm: bit-exact (ref's float operations in
//    ref's order; the aarch64 build has -ffp-contract=off on both sides).
//  - gelu, geglu, softcap: the bounds of tests/kernels/activation_test_util.h (10u, 12u
//    and 12u relative, derived there); measured here under qemu against glibc's expf /
//    tanhf: gelu 3.9u, geglu 4.4u, softcap 5.3u.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/arm/arm.h"
#include "kernels/ops.h"
#include "tests/kernels/activation_test_util.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::Rng;
using test::RowKind;

const int64_t kLengths[] = {1, 3, 4, 5, 7, 8, 9, 64, 100, 4099};
const RowKind kKinds[] = {RowKind::kBell,  RowKind::kHeavy, RowKind::kZero,
                          RowKind::kSmall, RowKind::kTiny,  RowKind::kHuge};

void check_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (test::bits_of(got[i]) != test::bits_of(want[i]) && ++bad <= 8) {
      UNSCOPED_INFO("element " << i << ": neon " << got[i] << ", ref " << want[i]);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("NEON add, mul, scale and axpy are bit-exact with ref", "[neon]") {
  const FloatOps& f = *neon_float_ops();
  const FloatOps& r = ref_float_ops();
  for (int64_t n : kLengths) {
    for (RowKind kind : kKinds) {
      INFO("n " << n << ", row kind " << static_cast<int>(kind));
      Rng rng(static_cast<uint64_t>(n) * 13 + static_cast<uint64_t>(kind));
      const auto a = test::make_row(kind, rng, n);
      const auto b = test::make_row(RowKind::kHeavy, rng, n);
      std::vector<float> got(a.size()), want(a.size());
      f.add(a.data(), b.data(), got.data(), n);
      r.add(a.data(), b.data(), want.data(), n);
      check_same_bits(got, want);
      f.mul(a.data(), b.data(), got.data(), n);
      r.mul(a.data(), b.data(), want.data(), n);
      check_same_bits(got, want);
      for (float s : {-0.3f, 0.0f, 1e20f}) {
        got = a;
        want = a;
        f.scale(got.data(), n, s);
        r.scale(want.data(), n, s);
        check_same_bits(got, want);
        got = b;
        want = b;
        f.axpy(a.data(), got.data(), n, s);
        r.axpy(a.data(), want.data(), n, s);
        check_same_bits(got, want);
      }
      got = a;  // out aliasing an input
      f.mul(got.data(), b.data(), got.data(), n);
      r.mul(a.data(), b.data(), want.data(), n);
      check_same_bits(got, want);
    }
  }
}

TEST_CASE("NEON rms_norm is bit-exact with ref", "[neon]") {
  const FloatOps& f = *neon_float_ops();
  const FloatOps& r = ref_float_ops();
  for (int64_t n : kLengths) {
    for (RowKind kind : kKinds) {
      INFO("n " << n << ", row kind " << static_cast<int>(kind));
      Rng rng(static_cast<uint64_t>(n) * 3 + static_cast<uint64_t>(kind));
      const auto x = test::make_row(kind, rng, n);
      const auto w = test::make_row(RowKind::kBell, rng, n);
      std::vector<float> got(x.size()), want(x.size());
      f.rms_norm(x.data(), w.data(), got.data(), n, 1e-5f);
      r.rms_norm(x.data(), w.data(), want.data(), n, 1e-5f);
      check_same_bits(got, want);
      f.rms_norm(x.data(), nullptr, got.data(), n, 1e-6f);
      r.rms_norm(x.data(), nullptr, want.data(), n, 1e-6f);
      check_same_bits(got, want);
      got = x;  // in place
      f.rms_norm(got.data(), w.data(), got.data(), n, 1e-5f);
      r.rms_norm(x.data(), w.data(), want.data(), n, 1e-5f);
      check_same_bits(got, want);
    }
  }
}

TEST_CASE("NEON rope_apply is bit-exact with ref", "[neon]") {
  const FloatOps& f = *neon_float_ops();
  const FloatOps& r = ref_float_ops();
  for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
    for (int64_t n_rot : {2, 4, 6, 8, 10, 14, 16, 18, 32, 34, 64, 80, 128}) {
      for (int64_t pos : {0, 1, 4095, 131071}) {
        INFO("style " << static_cast<int>(style) << ", n_rot " << n_rot << ", pos " << pos);
        RopeParams p;
        p.n_rot = n_rot;
        p.freq_base = 500000.0f;
        p.attn_factor = pos == 1 ? 1.5f : 1.0f;
        std::vector<float> cos_sin(static_cast<size_t>(n_rot));
        r.rope_cos_sin(pos, p, cos_sin.data());
        Rng rng(static_cast<uint64_t>(n_rot) * 11 + static_cast<uint64_t>(pos));
        // a tail past n_rot, which must stay untouched
        const RowKind kind = pos == 4095 ? RowKind::kHeavy : RowKind::kBell;
        const auto x = test::make_row(kind, rng, n_rot + 16);
        auto got = x;
        auto want = x;
        f.rope_apply(got.data(), n_rot, cos_sin.data(), style);
        r.rope_apply(want.data(), n_rot, cos_sin.data(), style);
        check_same_bits(got, want);
      }
    }
  }
}

TEST_CASE("NEON gelu and geglu match ref", "[neon]") {
  test::check_gelu_geglu(*neon_float_ops());
}

TEST_CASE("NEON softcap matches ref", "[neon]") {
  test::check_softcap(*neon_float_ops());
}

}  // namespace
}  // namespace runnel
