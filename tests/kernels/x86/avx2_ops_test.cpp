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
//  - dot_f16_f32, dot_f16_f32_multi (attention's f16 rows against widened queries /
//    probabilities): avx2::vec_dot_f16's bits (its bound against ref: avx2_test.cpp).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/ops.h"
#include "kernels/x86/avx2.h"
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

// ---------------------------------------------------------------- attention's f16 dots

// An f16 row of n elements for the dot tests. kind 0: bell; 1: bell * 300 (large products);
// 2: symmetric * 1e-6 (subnormal halves); the others add specials (see f16_dot_case).
std::vector<uint16_t> f16_row(Rng& rng, int64_t n, int kind) {
  std::vector<uint16_t> h(static_cast<size_t>(n));
  for (auto& v : h) {
    const float x = kind == 2 ? rng.symmetric() * 1e-6f : rng.bell() * (kind == 1 ? 300.0f : 1.0f);
    v = fp32_to_fp16(x);
  }
  return h;
}

std::vector<float> widened(const std::vector<uint16_t>& h) {
  std::vector<float> x(h.size());
  for (size_t i = 0; i < h.size(); ++i) x[i] = fp16_to_fp32(h[i]);
  return x;
}

constexpr uint16_t kF16Inf = 0x7C00, kF16MinusInf = 0xFC00, kF16QuietNan = 0x7E00,
                   kF16SignallingNan = 0x7C01;
constexpr int kF16DotKinds = 8;

// A weight row w and an activation row a (f16) of kind: 0-2 as f16_row; 3: +inf in w, a
// NaN at a's end; 4: -inf as w's last element (the scalar tail for most n); 5: +inf in w
// against a zero (NaN); 6: a signalling NaN in a (widened, still signalling); 7: +inf in w
// and in a at the same place (inf).
struct F16DotCase {
  std::vector<uint16_t> w, a;
};

F16DotCase f16_dot_case(Rng& rng, int64_t n, int kind) {
  F16DotCase c{f16_row(rng, n, kind < 3 ? kind : 0), f16_row(rng, n, kind == 2 ? 2 : 0)};
  const size_t mid = static_cast<size_t>(n / 2), last = static_cast<size_t>(n - 1);
  switch (kind) {
    case 3:
      c.w[mid] = kF16Inf;
      c.a[last] = kF16QuietNan;
      break;
    case 4:
      c.w[last] = kF16MinusInf;
      c.a[last] = 0x3C00;  // 1.0: the result is -inf
      break;
    case 5:
      c.w[mid] = kF16Inf;
      c.a[mid] = 0x8000;  // -0.0
      break;
    case 6:
      c.a[mid] = kF16SignallingNan;
      break;
    case 7:
      for (auto& v : c.w) v &= 0x7FFF;  // all products >= 0: inf + finite stays inf
      for (auto& v : c.a) v &= 0x7FFF;
      c.w[mid] = kF16Inf;
      c.a[mid] = kF16Inf;
      break;
    default:
      break;
  }
  return c;
}

// got must be want bit for bit; NaN only needs to be NaN (payloads may differ).
bool same_dot(float got, float want) {
  return std::isnan(want) ? std::isnan(got) : test::bits_of(got) == test::bits_of(want);
}

TEST_CASE("AVX2 dot_f16_f32 gives vec_dot_f16's bits, its activation widened once", "[avx2]") {
  // Attention rounds the query / probabilities to f16 and, with dot_f16_f32, widens them
  // once per head instead of once per row: the same products (f16 -> f32 is exact) in the
  // same chains, lane sums and tail, so the same bits.
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  REQUIRE(f->dot_f16_f32 != nullptr);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 300; ++n) lengths.push_back(n);
  for (int64_t n : {511, 512, 513, 1000, 4096 + 7}) lengths.push_back(n);
  int specials = 0;
  for (int64_t n : lengths) {
    for (int kind = 0; kind < kF16DotKinds; ++kind) {
      Rng rng(static_cast<uint64_t>(n) * 11 + static_cast<uint64_t>(kind));
      const F16DotCase c = f16_dot_case(rng, n, kind);
      const std::vector<float> a = widened(c.a);
      const float want = avx2::vec_dot_f16(n, c.w.data(), c.a.data());
      const float got = f->dot_f16_f32(n, c.w.data(), a.data());
      INFO("n " << n << ", kind " << kind << ": vec_dot_f16 " << want << ", dot_f16_f32 " << got);
      // the specials give what they are meant to, so both sides see them
      if (kind == 3 || kind == 5 || kind == 6) CHECK(std::isnan(want));
      if (kind == 4) CHECK(want == -std::numeric_limits<float>::infinity());
      if (kind == 7) CHECK(want == std::numeric_limits<float>::infinity());
      if (kind < 2 && n >= 8) CHECK(want != 0.0f);  // kind 2's sums of tiny products can be 0
      specials += kind >= 3 && !std::isfinite(want);
      if (!same_dot(got, want)) CHECK(test::bits_of(got) == test::bits_of(want));
    }
  }
  CHECK(specials == static_cast<int>(lengths.size()) * (kF16DotKinds - 3));
}

TEST_CASE("AVX2 dot_f16_f32_multi gives each row dot_f16_f32's bits and writes only its outputs",
          "[avx2]") {
  // Attention's query heads that share a kv head: rows in passes of 3, the rest in one
  // pass of 2 or 1; every row's bits must not depend on its pass.
  const FloatOps* f = avx2_ops_or_warn();
  if (f == nullptr) return;
  const auto multi = f->dot_f16_f32_multi;
  REQUIRE(multi != nullptr);
  REQUIRE(f->dot_f16_f32 != nullptr);
  const float kUntouched = -12345.5f;
  for (int64_t n : {1, 5, 7, 8, 9, 24, 31, 32, 33, 40, 63, 64, 100, 128, 200, 257, 4096 + 7}) {
    for (int n_a = 1; n_a <= 9; ++n_a) {
      for (int64_t a_pad : {0, 3, 16}) {
        for (int64_t out_stride : {1, 3}) {
          const int kind = static_cast<int>((n + n_a + a_pad) % kF16DotKinds);
          INFO("n " << n << ", rows " << n_a << ", a_stride n + " << a_pad << ", out_stride "
                    << out_stride << ", kind " << kind);
          Rng rng(static_cast<uint64_t>(n) * 131 + static_cast<uint64_t>(n_a) * 17 +
                  static_cast<uint64_t>(a_pad) * 3 + static_cast<uint64_t>(out_stride));
          const std::vector<uint16_t> w = f16_dot_case(rng, n, kind).w;
          // Each row its own case of the same kind (a NaN or inf where the kind puts one);
          // the last row ends the buffer, so an over-read shows under ASan.
          const int64_t a_stride = n + a_pad;
          std::vector<float> a(static_cast<size_t>((n_a - 1) * a_stride + n), 0.5f);
          for (int j = 0; j < n_a; ++j) {
            const std::vector<float> row = widened(f16_dot_case(rng, n, kind).a);
            std::copy(row.begin(), row.end(), a.begin() + j * a_stride);
          }
          std::vector<float> out(static_cast<size_t>(n_a * out_stride + 4), kUntouched);
          multi(n, w.data(), a.data(), a_stride, n_a, out.data(), out_stride);
          for (size_t e = 0; e < out.size(); ++e) {
            const int64_t pos = static_cast<int64_t>(e);
            if (pos % out_stride == 0 && pos / out_stride < n_a) {
              const int64_t j = pos / out_stride;
              const float want = f->dot_f16_f32(n, w.data(), a.data() + j * a_stride);
              INFO("row " << j << ": multi " << out[e] << ", dot_f16_f32 " << want);
              if (!same_dot(out[e], want)) CHECK(test::bits_of(out[e]) == test::bits_of(want));
            } else if (test::bits_of(out[e]) != test::bits_of(kUntouched)) {
              INFO("element " << e << " written");
              CHECK(out[e] == kUntouched);
            }
          }
        }
      }
    }
  }
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
  // attention's grouped path: offered here, not by ref
  CHECK(r.dot_f16_f32 == nullptr);
  CHECK(r.dot_f16_f32_multi == nullptr);
  CHECK(f->dot_f16_f32 == avx2::dot_f16_f32);
  CHECK(f->dot_f16_f32_multi == avx2::dot_f16_f32_multi);
  CHECK(f->touch_rows == nullptr);  // no gain from it on x86 (kernels/ops.h)
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
  CHECK(g->dot_f16_f32 == f->dot_f16_f32);
  CHECK(g->dot_f16_f32_multi == f->dot_f16_f32_multi);
  CHECK(g->touch_rows == nullptr);
}

}  // namespace
}  // namespace runnel
