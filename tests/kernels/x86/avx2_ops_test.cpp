// The AVX2 float ops (kernels/x86/avx2_ops.cpp) against ref_float_ops(), entry by entry,
// on random and adversarial rows of lengths 1 to 2048 (tails of 1..7 elements included).
// Skipped with a warning on CPUs without AVX2 + FMA + F16C. Bounds (u = 2^-24, the unit
// roundoff of float):
//  - add, mul, scale, rms_norm: bit-exact (the same float operations in the same order).
//  - axpy, rope_apply: one product fused into the sum, so |avx2 - ref| <= kFusedUlps u
//    times the sum of the magnitudes of the terms (see kFusedUlps).
//  - silu, swiglu, softmax: relative kExpRel (see there) plus a tiny absolute slack for
//    results at the edge of float range.
//  - gelu, geglu, softcap: the bounds of tests/kernels/activation_test_util.h (10u, 12u and
//    12u relative, derived there) on random rows, a dense sweep and adversarial values;
//    measured against glibc's expf / tanhf: gelu 3.9u, geglu 4.4u, softcap 5.3u.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/ops.h"
#include "kernels/x86/x86.h"
#include "tests/kernels/activation_test_util.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::Rng;

constexpr double kU = 0x1p-24;  // unit roundoff of float
// exp8 is within ~1 ulp (2u) of e^x and expf within 0.5 ulp (u): 3u between them. Each
// side then rounds 2-3 more times (silu: 1 + e and the division; softmax: 1 / sum to float
// and the multiply), each <= u: 3u + 6u = 9u at worst, 10u as the bound.
constexpr double kExpRel = 10 * kU;
// swiglu: silu's bound plus the rounding of the multiply by up on each side.
constexpr double kSwigluRel = 12 * kU;
// silu(x) for x near -88.7 is ~1e-37: where e^-x is just below FLT_MAX on one side and
// rounds to inf on the other, one result is -0 and the other ~ -2.6e-37.
constexpr double kSiluAbs = 1e-36;
// softmax: outputs below FLT_MIN are subnormal, where relative error is meaningless; they
// differ by a few subnormal steps at most.
constexpr double kSoftmaxAbs = 1e-37;
// axpy: ref rounds s x and then y + s x (<= u |s x| + u |y + s x|), FMA rounds once
// (<= u |y + s x|): together <= 3u (|y| + |s x|); 4u leaves room for the subnormal steps.
// rope_apply alike with the terms a c and b s.
constexpr double kFusedUlps = 4;

const int64_t kOpLengths[] = {1, 7, 8, 31, 64, 576, 2048};

const FloatOps* avx2_ops_or_warn() {
  const FloatOps* f = avx2_float_ops();
  if (f == nullptr) WARN("CPU lacks AVX2/FMA/F16C: AVX2 float op tests skipped");
  return f;
}

enum class Fill { kBell, kWide, kZero, kHuge, kTiny, kMixed };
const Fill kFills[] = {Fill::kBell, Fill::kWide, Fill::kZero,
                       Fill::kHuge, Fill::kTiny, Fill::kMixed};

// kWide: bell * 30 (exp saturates both ways); kHuge: ~1e30 (squares overflow float);
// kTiny: ~1e-39 (subnormal); kMixed: every magnitude from 1e-40 to 1e30 with zeros.
std::vector<float> make_row(Fill fill, Rng& rng, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (size_t i = 0; i < x.size(); ++i) {
    switch (fill) {
      case Fill::kBell:
        x[i] = rng.bell();
        break;
      case Fill::kWide:
        x[i] = rng.bell() * 30.0f;
        break;
      case Fill::kZero:
        x[i] = i % 2 == 0 ? 0.0f : -0.0f;
        break;
      case Fill::kHuge:
        x[i] = rng.symmetric() * 1e30f;
        break;
      case Fill::kTiny:
        x[i] = rng.symmetric() * 1e-39f;
        break;
      case Fill::kMixed: {
        const float magnitudes[] = {0.0f, 1e-40f, 1e-20f, 1e-3f, 1.0f, 50.0f, 90.0f, 1e4f, 1e30f};
        x[i] = rng.symmetric() * magnitudes[rng.next() % 9];
        break;
      }
    }
  }
  return x;
}

void check_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": avx2 " << got[i] << ", ref " << want[i]);
    CHECK(test::bits_of(got[i]) == test::bits_of(want[i]));
  }
}

// |got - want| <= rel |want| + abs[i]; inf and NaN results must match ref's exactly.
void check_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                 const std::vector<double>& abs) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": avx2 " << got[i] << ", ref " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(want[i])) {
      CHECK(got[i] == want[i]);
    } else {
      const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
      CHECK(err <= rel * std::fabs(want[i]) + abs[i]);
    }
  }
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                 double abs) {
  check_close(got, want, rel, std::vector<double>(got.size(), abs));
}

TEST_CASE("AVX2 add, mul and scale are bit-exact with ref", "[avx2]") {
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  const FloatOps& r = ref_float_ops();
  for (int64_t n : kOpLengths) {
    for (Fill fill : kFills) {
      INFO("n " << n << ", fill " << static_cast<int>(fill));
      Rng rng(static_cast<uint64_t>(n) * 13 + static_cast<uint64_t>(fill));
      const auto a = make_row(fill, rng, n);
      const auto b = make_row(Fill::kMixed, rng, n);
      std::vector<float> got(a.size()), want(a.size());
      f->add(a.data(), b.data(), got.data(), n);
      r.add(a.data(), b.data(), want.data(), n);
      check_same_bits(got, want);
      f->mul(a.data(), b.data(), got.data(), n);
      r.mul(a.data(), b.data(), want.data(), n);
      check_same_bits(got, want);
      for (float s : {-0.3f, 0.0f, 1e20f}) {
        got = a;
        want = a;
        f->scale(got.data(), n, s);
        r.scale(want.data(), n, s);
        check_same_bits(got, want);
      }
      got = a;  // out aliasing an input
      f->add(got.data(), b.data(), got.data(), n);
      r.add(a.data(), b.data(), want.data(), n);
      check_same_bits(got, want);
    }
  }
}

TEST_CASE("AVX2 axpy matches ref within the FMA rounding", "[avx2]") {
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  for (int64_t n : kOpLengths) {
    for (Fill fill : kFills) {
      for (float s : {1.7f, -0.25f, 0.0f}) {
        INFO("n " << n << ", fill " << static_cast<int>(fill) << ", s " << s);
        Rng rng(static_cast<uint64_t>(n) * 17 + static_cast<uint64_t>(fill));
        const auto x = make_row(fill, rng, n);
        const auto y = make_row(fill == Fill::kHuge ? Fill::kBell : Fill::kMixed, rng, n);
        auto got = y;
        auto want = y;
        f->axpy(x.data(), got.data(), n, s);
        ref_float_ops().axpy(x.data(), want.data(), n, s);
        std::vector<double> bound(y.size());
        for (size_t i = 0; i < y.size(); ++i) {
          const double terms = std::fabs(y[i]) + std::fabs(static_cast<double>(s) * x[i]);
          bound[i] = kFusedUlps * kU * terms + 0x1p-148;
        }
        check_close(got, want, 0.0, bound);
      }
    }
  }
}

TEST_CASE("AVX2 rms_norm is bit-exact with ref", "[avx2]") {
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  const FloatOps& r = ref_float_ops();
  for (int64_t n : kOpLengths) {
    for (Fill fill : kFills) {
      INFO("n " << n << ", fill " << static_cast<int>(fill));
      Rng rng(static_cast<uint64_t>(n) * 3 + static_cast<uint64_t>(fill));
      const auto x = make_row(fill, rng, n);
      const auto w = make_row(Fill::kBell, rng, n);
      std::vector<float> got(x.size()), want(x.size());
      f->rms_norm(x.data(), w.data(), got.data(), n, 1e-5f);
      r.rms_norm(x.data(), w.data(), want.data(), n, 1e-5f);
      check_same_bits(got, want);
      f->rms_norm(x.data(), nullptr, got.data(), n, 1e-6f);
      r.rms_norm(x.data(), nullptr, want.data(), n, 1e-6f);
      check_same_bits(got, want);
      got = x;  // in place
      f->rms_norm(got.data(), w.data(), got.data(), n, 1e-5f);
      r.rms_norm(x.data(), w.data(), want.data(), n, 1e-5f);
      check_same_bits(got, want);
    }
  }
}

TEST_CASE("AVX2 silu and swiglu match ref", "[avx2]") {
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  const float inf = std::numeric_limits<float>::infinity();
  // exp overflow and underflow on both sides, its overflow edge, infinities and zeros
  const float specials[] = {-100.0f, 100.0f, 0.0f, -0.0f, -88.5f, 88.5f, -88.72f, -87.0f, 1e-30f,
                            -30.0f,  inf,    -inf, 1e30f, -1e30f, 1e-40f, -3.4e38f};
  for (int64_t n : kOpLengths) {
    for (Fill fill : kFills) {
      INFO("n " << n << ", fill " << static_cast<int>(fill));
      Rng rng(static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(fill) + 77);
      auto x = make_row(fill, rng, n);
      if (fill == Fill::kMixed) {
        constexpr size_t kSpecials = sizeof specials / sizeof specials[0];
        for (size_t i = 0; i < x.size(); ++i) x[i] = specials[i % kSpecials];
      }
      const auto up = make_row(Fill::kBell, rng, n);
      std::vector<float> got(x.size()), want(x.size());
      f->silu(x.data(), got.data(), n);
      ref_float_ops().silu(x.data(), want.data(), n);
      check_close(got, want, kExpRel, kSiluAbs);
      f->swiglu(x.data(), up.data(), got.data(), n);
      ref_float_ops().swiglu(x.data(), up.data(), want.data(), n);
      std::vector<double> abs(up.size());
      for (size_t i = 0; i < up.size(); ++i) abs[i] = kSiluAbs * std::fabs(up[i]);
      check_close(got, want, kSwigluRel, abs);
      got = x;  // in place
      f->silu(got.data(), got.data(), n);
      ref_float_ops().silu(x.data(), want.data(), n);
      check_close(got, want, kExpRel, kSiluAbs);
    }
  }
  const float edges[] = {-100.0f, 100.0f, 0.0f};
  std::vector<float> out(3);
  f->silu(edges, out.data(), 3);
  CHECK(out[0] == 0.0f);  // -100 / (1 + inf)
  CHECK(std::signbit(out[0]));
  CHECK(out[1] == 100.0f);  // 100 / (1 + e^-100)
  CHECK(out[2] == 0.0f);
}

TEST_CASE("AVX2 softmax matches ref, masked and extreme rows included", "[avx2]") {
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t n : kOpLengths) {
    for (Fill fill : kFills) {
      for (int mask : {0, 1, 2}) {  // none, every 7th element, all but one
        INFO("n " << n << ", fill " << static_cast<int>(fill) << ", mask " << mask);
        Rng rng(static_cast<uint64_t>(n) * 5 + static_cast<uint64_t>(fill) * 3 +
                static_cast<uint64_t>(mask));
        auto x = make_row(fill, rng, n);
        const int64_t keep = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          const bool masked = (mask == 1 && i % 7 == 2) || (mask == 2 && i != keep);
          if (masked) x[static_cast<size_t>(i)] = ninf;
        }
        if (mask == 0 && n > 1 && fill == Fill::kBell) x[1] = 80.0f;  // exp(x) alone would overflow
        auto got = x;
        auto want = x;
        f->softmax(got.data(), n);
        ref_float_ops().softmax(want.data(), n);
        check_close(got, want, kExpRel, kSoftmaxAbs);
        for (int64_t i = 0; i < n; ++i) {
          if (x[static_cast<size_t>(i)] == ninf) CHECK(got[static_cast<size_t>(i)] == 0.0f);
        }
        if (mask == 2) CHECK(got[static_cast<size_t>(keep)] == 1.0f);
      }
    }
  }
  for (int64_t n : kOpLengths) {
    std::vector<float> all_masked(static_cast<size_t>(n), ninf);
    f->softmax(all_masked.data(), n);
    for (float v : all_masked) CHECK(v == 0.0f);
  }
}

TEST_CASE("AVX2 rope_apply matches ref within the FMA rounding", "[avx2]") {
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
    for (int64_t n_rot : {2, 4, 6, 8, 10, 14, 16, 18, 32, 34, 64, 80, 128}) {
      for (int64_t pos : {0, 1, 4095, 131071}) {
        INFO("style " << static_cast<int>(style) << ", n_rot " << n_rot << ", pos " << pos);
        RopeParams p;
        p.n_rot = n_rot;
        p.freq_base = 500000.0f;
        p.attn_factor = pos == 1 ? 1.5f : 1.0f;
        std::vector<float> cos_sin(static_cast<size_t>(n_rot));
        ref_float_ops().rope_cos_sin(pos, p, cos_sin.data());
        Rng rng(static_cast<uint64_t>(n_rot) * 11 + static_cast<uint64_t>(pos));
        // a tail past n_rot, which must stay untouched
        const auto x = make_row(pos == 4095 ? Fill::kMixed : Fill::kBell, rng, n_rot + 16);
        auto got = x;
        auto want = x;
        f->rope_apply(got.data(), n_rot, cos_sin.data(), style);
        ref_float_ops().rope_apply(want.data(), n_rot, cos_sin.data(), style);
        // element j's bound: the magnitudes of both products that make it
        std::vector<double> bound(x.size(), 0.0);
        const int64_t n_pairs = n_rot / 2;
        for (int64_t i = 0; i < n_pairs; ++i) {
          const int64_t ia = style == RopeStyle::kNormal ? 2 * i : i;
          const int64_t ib = style == RopeStyle::kNormal ? 2 * i + 1 : i + n_pairs;
          const double a = x[static_cast<size_t>(ia)], b = x[static_cast<size_t>(ib)];
          const double c = cos_sin[static_cast<size_t>(2 * i)];
          const double s = cos_sin[static_cast<size_t>(2 * i + 1)];
          const double terms = (std::fabs(a) + std::fabs(b)) * (std::fabs(c) + std::fabs(s));
          bound[static_cast<size_t>(ia)] = kFusedUlps * kU * terms + 0x1p-148;
          bound[static_cast<size_t>(ib)] = kFusedUlps * kU * terms + 0x1p-148;
        }
        check_close(got, want, 0.0, bound);  // elements past n_rot: bound 0, untouched
      }
    }
  }
}

TEST_CASE("AVX2 gelu and geglu match ref", "[avx2]") {
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  test::check_gelu_geglu(*f);
}

TEST_CASE("AVX2 softcap matches ref", "[avx2]") {
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  test::check_softcap(*f);
}

TEST_CASE("The AVX2 float ops are ref's with the AVX2 entries swapped in; AVX-512 shares them",
          "[avx2]") {
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  const FloatOps& r = ref_float_ops();
  CHECK(f->rms_norm != r.rms_norm);
  CHECK(f->softmax != r.softmax);
  CHECK(f->silu != r.silu);
  CHECK(f->swiglu != r.swiglu);
  CHECK(f->add != r.add);
  CHECK(f->mul != r.mul);
  CHECK(f->scale != r.scale);
  CHECK(f->axpy != r.axpy);
  CHECK(f->rope_apply != r.rope_apply);
  CHECK(f->gelu != r.gelu);
  CHECK(f->geglu != r.geglu);
  CHECK(f->softcap != r.softcap);
  CHECK(f->rope_cos_sin == r.rope_cos_sin);  // double cos / sin once per position: ref's
  const FloatOps* g = avx512_float_ops();
  if (g == nullptr) return;
  CHECK(g->rms_norm == f->rms_norm);
  CHECK(g->softmax == f->softmax);
  CHECK(g->silu == f->silu);
  CHECK(g->swiglu == f->swiglu);
  CHECK(g->gelu == f->gelu);
  CHECK(g->geglu == f->geglu);
  CHECK(g->softcap == f->softcap);
  CHECK(g->axpy == f->axpy);
  CHECK(g->rope_apply == f->rope_apply);
}

}  // namespace
}  // namespace runnel
