// The WebAssembly SIMD128 kernel set against kernels/ref, entry by entry (compiled only
// into the wasm build, where SIMD128 is always available). Bounds:
//  - Quantizers (Q8_0, Q8_1, Q8_K): bit-exact with ref on random and adversarial rows.
//  - Quantized dots: |simd128 - ref| <= 1e-5 * S + 1e-30, S = sum_i |w_i a_i| over the
//    decoded rows plus, for Q4_1 / Q5_1, sum_b |m_b s_b| (the min terms). Both sides do
//    exact integer sums per block; only the float accumulation order differs.
//  - Float dots (F32, F16, BF16): |simd128 - ref| <= (n / 16 + 16) * 2^-24 * S + 1e-30:
//    16 float chains of n / 16 + 1 steps, a 4-level reduction and up to 7 tail adds,
//    against ref's double sum rounded once. The f16 / bf16 widening is exact (checked
//    for all 65536 bit patterns).
//  - Float ops: add, mul, scale, axpy, rope_apply and rms_norm bit-exact (same float
//    operations in the same order; rms_norm's double sum of squares is ref's loop);
//    silu, swiglu and softmax within 10 * 2^-24 relative + 1e-37: the polynomial exp is
//    within 1 ulp of e^x and expf within 0.5 (together <= 3 * 2^-24 relative), and up to
//    three more roundings follow on each side (1 + e, the division, the multiply by up;
//    softmax: 1 / sum and the multiply), each <= 2^-24 relative: 9 * 2^-24 at worst
//    (measured: 4.4, 5.3 and 4.1). 1e-37 covers results in the float subnormal range.
#include "kernels/wasm/simd128.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "kernels/ref/blocks.h"
#include "kernels/wasm/simd128_common.h"
#include "kernels/wasm/wasm.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/test_util.h"
#include "tests/kernels/x8_test_util.h"

namespace runnel {
namespace {

using test::Rng;

const KernelTable& simd() {
  return *simd128_kernels();
}

using test::dot_magnitude;
using test::kQuantWeightTypes;
using test::kRowKinds;
using test::make_row;
using test::quantize_with;
using test::raw_activation_row;
using test::raw_weight_row;
using test::RowKind;
// 1, 3 and 7 (super-)blocks, and 4096
constexpr auto& kLengths = test::kSuperBlockLengths;
constexpr auto& kLegacyLengths = test::kBlockLengths;

TEST_CASE("SIMD128 activation quantizers give the same bytes as ref", "[simd128]") {
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
    const bool k_quant = type == GgmlType::Q8_K;
    for (int64_t n : k_quant ? kLengths : kLegacyLengths) {
      for (RowKind kind : kRowKinds) {
        Rng rng(static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(kind));
        const std::vector<float> x = make_row(kind, rng, n);
        INFO("type " << traits(type).name << ", n " << n << ", row kind "
                     << static_cast<int>(kind));
        const auto expected = quantize_with(ref_kernels(), type, x);
        const auto got = quantize_with(simd(), type, x);
        REQUIRE(got.size() == expected.size());
        CHECK(std::memcmp(got.data(), expected.data(), got.size()) == 0);
      }
    }
  }
}

// ---------------------------------------------------------------- dots of quantized rows

void check_dot(GgmlType wt, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a,
               int64_t n) {
  const float expected = ref_kernels().of(wt).vec_dot(n, w.data(), a.data());
  const float got = simd().of(wt).vec_dot(n, w.data(), a.data());
  const double bound = 1e-5 * dot_magnitude(wt, w, a, n) + 1e-30;
  INFO("ref " << expected << ", simd128 " << got << ", bound " << bound);
  REQUIRE(std::isfinite(expected));
  CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
}

TEST_CASE("SIMD128 quantized dots match ref on quantized random rows", "[simd128]") {
  for (GgmlType wt : kQuantWeightTypes) {
    const GgmlType at = ref_kernels().of(wt).vec_dot_type;
    const bool k_quant = traits(wt).block_size == kQK_K;
    for (int64_t n : k_quant ? kLengths : kLegacyLengths) {
      for (uint64_t seed = 0; seed < 6; ++seed) {
        INFO("type " << traits(wt).name << ", n " << n << ", seed " << seed);
        Rng rng(1000 + seed);
        const RowKind wk = seed % 2 ? RowKind::kHeavy : RowKind::kBell;
        const RowKind ak = seed == 4   ? RowKind::kSignTie
                           : seed == 5 ? RowKind::kOneHot
                                       : RowKind::kBell;
        const auto w = test::quantize(wt, make_row(wk, rng, n));
        const auto a = test::quantize(at, make_row(ak, rng, n));
        check_dot(wt, w, a, n);
        // The real magnitude of the result, so a kernel returning 0 cannot pass.
        if (seed < 4) CHECK(std::fabs(simd().of(wt).vec_dot(n, w.data(), a.data())) > 0.0f);
      }
    }
  }
}

TEST_CASE("SIMD128 quantized dots match ref on adversarial blocks", "[simd128]") {
  for (GgmlType wt : kQuantWeightTypes) {
    const GgmlType at = ref_kernels().of(wt).vec_dot_type;
    const bool k_quant = traits(wt).block_size == kQK_K;
    for (int64_t n : k_quant ? kLengths : kLegacyLengths) {
      for (int byte_mode = 0; byte_mode < 3; ++byte_mode) {
        for (int extreme = 0; extreme < 2; ++extreme) {
          INFO("type " << traits(wt).name << ", n " << n << ", bytes " << byte_mode
                       << ", extreme activations " << extreme);
          Rng rng(static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(byte_mode) * 3 +
                  static_cast<uint64_t>(extreme));
          const auto w = raw_weight_row(wt, n, rng, static_cast<test::ByteMode>(byte_mode));
          const auto a = raw_activation_row(at, n, rng, extreme != 0);
          check_dot(wt, w, a, n);
        }
      }
    }
  }
}

TEST_CASE("SIMD128 dots: hand-checked extreme blocks", "[simd128]") {
  SECTION("Q8_0 weight -128 against activation 127, d = 1") {
    ref::BlockQ8_0 w{}, a{};
    w.d = a.d = 0x3C00;
    for (int j = 0; j < 32; ++j) {
      w.qs[j] = -128;
      a.qs[j] = 127;
    }
    CHECK(simd().of(GgmlType::Q8_0).vec_dot(32, &w, &a) == -128.0f * 127.0f * 32.0f);
  }
  SECTION("Q4_0 nibbles 0 (-8) against -127, d = 0.5, da = 2") {
    ref::BlockQ4_0 w{};
    ref::BlockQ8_0 a{};
    w.d = 0x3800;
    a.d = 0x4000;
    for (auto& q : a.qs) q = -127;
    CHECK(simd().of(GgmlType::Q4_0).vec_dot(32, &w, &a) == 8.0f * 127.0f * 32.0f);
  }
  SECTION("Q5_0 with every fifth bit set and nibble 15: q - 16 = 15") {
    ref::BlockQ5_0 w{};
    ref::BlockQ8_0 a{};
    w.d = a.d = 0x3C00;
    std::memset(w.qh, 0xFF, sizeof w.qh);
    std::memset(w.qs, 0xFF, sizeof w.qs);
    for (int j = 0; j < 32; ++j) a.qs[j] = static_cast<int8_t>(j - 16);
    // 15 * sum(j - 16) = 15 * -16 = -240
    CHECK(simd().of(GgmlType::Q5_0).vec_dot(32, &w, &a) == -240.0f);
  }
  SECTION("Q5_1 with no fifth bits: q = nibble, plus the min term") {
    ref::BlockQ5_1 w{};
    ref::BlockQ8_1 a{};
    w.d = a.d = 0x3C00;
    w.m = 0x4000;                          // m = 2
    a.s = 0x3800;                          // s = 0.5
    std::memset(w.qs, 0x21, sizeof w.qs);  // low nibble 1 (elements 0..15), high 2 (16..31)
    for (int j = 0; j < 32; ++j) a.qs[j] = static_cast<int8_t>(j < 16 ? 3 : -5);
    // 16 * 1 * 3 + 16 * 2 * -5 + 2 * 0.5 = 48 - 160 + 1
    CHECK(simd().of(GgmlType::Q5_1).vec_dot(32, &w, &a) == -111.0f);
  }
  SECTION("Q6_K with all quants 63 (q - 32 = 31) and scale 127 against 127") {
    ref::BlockQ6_K w{};
    ref::BlockQ8_K a{};
    std::memset(w.ql, 0xFF, sizeof w.ql);
    std::memset(w.qh, 0xFF, sizeof w.qh);
    for (auto& s : w.scales) s = 127;
    w.d = 0x3C00;
    a.d = 1.0f;
    for (auto& q : a.qs) q = 127;
    for (auto& s : a.bsums) s = 16 * 127;
    CHECK(simd().of(GgmlType::Q6_K).vec_dot(256, &w, &a) == 31.0f * 127.0f * 127.0f * 256.0f);
  }
  SECTION("Q3_K with no high bits (q = low - 4) and scale -32") {
    ref::BlockQ3_K w{};  // hmask 0, qs 0: q = -4; scales bytes 0 -> scale 0 - 32
    ref::BlockQ8_K a{};
    w.d = 0x3C00;
    a.d = 1.0f;
    for (auto& q : a.qs) q = -127;
    CHECK(simd().of(GgmlType::Q3_K).vec_dot(256, &w, &a) == -4.0f * -32.0f * -127.0f * 256.0f);
  }
}

// ---------------------------------------------------------------- float dots

TEST_CASE("SIMD128 f16 and bf16 widening is exact for every bit pattern", "[simd128]") {
  for (uint32_t base = 0; base < 65536; base += 8) {
    uint16_t h[8];
    for (uint32_t k = 0; k < 8; ++k) h[k] = static_cast<uint16_t>(base + k);
    v128_t lo, hi;
    float got[8];
    simd128::f16x8_to_f32(wasm_v128_load(h), &lo, &hi);
    wasm_v128_store(got, lo);
    wasm_v128_store(got + 4, hi);
    for (int k = 0; k < 8; ++k) {
      INFO("f16 bits " << h[k]);
      CHECK(test::bits_of(got[k]) == test::bits_of(fp16_to_fp32(h[k])));
    }
    simd128::bf16x8_to_f32(wasm_v128_load(h), &lo, &hi);
    wasm_v128_store(got, lo);
    wasm_v128_store(got + 4, hi);
    for (int k = 0; k < 8; ++k) {
      INFO("bf16 bits " << h[k]);
      CHECK(test::bits_of(got[k]) == test::bits_of(bf16_to_fp32(h[k])));
    }
  }
}

TEST_CASE("SIMD128 F32, F16 and BF16 dots match ref", "[simd128]") {
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    for (int64_t n : {1, 7, 8, 31, 32, 33, 64, 100, 576, 4096}) {
      for (int kind = 0; kind < 4; ++kind) {
        INFO("type " << traits(t).name << ", n " << n << ", kind " << kind);
        Rng rng(static_cast<uint64_t>(n) * 13 + static_cast<uint64_t>(kind));
        std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          switch (kind) {
            case 0:
              x[i] = rng.bell();
              y[i] = rng.bell();
              break;
            case 1:
              x[i] = rng.heavy() * 100.0f;
              y[i] = rng.symmetric() + 0.5f;
              break;
            case 2:
              x[i] = 65504.0f * (i % 2 ? 1.0f : -1.0f);
              y[i] = rng.symmetric() * 60000.0f;
              break;
            default:
              x[i] = rng.symmetric() * 1e-6f;
              y[i] = rng.symmetric() * 1e-3f;
              break;  // f16 subnormals
          }
        }
        const auto w = test::quantize(t, x);
        const auto a = test::quantize(t, y);
        const auto wd = test::dequantize(t, w, n);
        const auto ad = test::dequantize(t, a, n);
        double s = 0.0;
        for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(wd[i]) * ad[i]);
        const double bound = (static_cast<double>(n) / 16 + 16) * 0x1p-24 * s + 1e-30;
        const float expected = ref_kernels().of(t).vec_dot(n, w.data(), a.data());
        const float got = simd().of(t).vec_dot(n, w.data(), a.data());
        INFO("ref " << expected << ", simd128 " << got << ", bound " << bound);
        CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
        CHECK(got != 0.0f);
      }
    }
  }
}

TEST_CASE("SIMD128 F16 dots of rows holding inf or NaN give ref's inf or NaN", "[simd128]") {
  // The fast path widens finite halves only; a row with inf / NaN is redone exactly.
  for (int64_t n : {8, 40, 256}) {
    for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
      for (uint16_t special : {uint16_t{0x7C00}, uint16_t{0xFC00}, uint16_t{0x7E00}}) {
        INFO("n " << n << ", special " << special << " at " << at);
        Rng rng(static_cast<uint64_t>(n + at));
        std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          x[i] = rng.bell();
          y[i] = rng.bell();
        }
        auto w = test::quantize(GgmlType::F16, x);
        const auto a = test::quantize(GgmlType::F16, y);
        std::memcpy(w.data() + 2 * at, &special, 2);
        const float expected = ref_kernels().of(GgmlType::F16).vec_dot(n, w.data(), a.data());
        const float got = simd().of(GgmlType::F16).vec_dot(n, w.data(), a.data());
        INFO("ref " << expected << ", simd128 " << got);
        if (std::isnan(expected)) {
          CHECK(std::isnan(got));
        } else {
          REQUIRE(std::isinf(expected));
          CHECK(got == expected);
        }
      }
    }
  }
}

TEST_CASE("SIMD128 dot_f16_f32 matches ref's F16 dot, its activation widened once", "[simd128]") {
  // Attention widens the f16 query / probabilities once and calls dot_f16_f32 per row. Its
  // 2 chains of n / 8 + 1 steps (a tail of n % 8 zero-padded into one), their sum and a
  // 2-level lane sum: |got - ref| <= (n / 8 + 4) * 2^-24 * S. Finite rows and subnormals,
  // and rows holding inf or NaN (either side) give ref's inf or NaN.
  REQUIRE(simd128_float_ops()->dot_f16_f32 != nullptr);
  for (int64_t n : {1, 7, 8, 15, 16, 17, 64, 100, 576, 4099}) {
    for (int kind = 0; kind < 5; ++kind) {
      INFO("n " << n << ", kind " << kind);
      Rng rng(static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(kind));
      std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        x[i] = kind == 2 ? rng.symmetric() * 1e-6f : rng.bell() * (kind == 1 ? 300.0f : 1.0f);
        y[i] = kind == 2 ? rng.symmetric() * 1e-3f : rng.bell();
      }
      auto w = test::quantize(GgmlType::F16, x);
      auto a = test::quantize(GgmlType::F16, y);
      if (kind == 3) {  // inf in the weights, NaN in the activation
        const uint16_t inf = 0x7C00, nan = 0x7E00;
        std::memcpy(w.data() + 2 * (n / 2), &inf, 2);
        if (n > 2) std::memcpy(a.data() + 2 * (n - 1), &nan, 2);
      }
      if (kind == 4) {  // -inf in the last element (the zero-padded tail for most n)
        const uint16_t minus_inf = 0xFC00;
        std::memcpy(w.data() + 2 * (n - 1), &minus_inf, 2);
      }
      std::vector<float> a32(static_cast<size_t>(n)), w32(static_cast<size_t>(n));
      ref_kernels().of(GgmlType::F16).dequantize_row(a.data(), a32.data(), n);
      ref_kernels().of(GgmlType::F16).dequantize_row(w.data(), w32.data(), n);
      double s = 0.0;
      for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(w32[i]) * a32[i]);
      const double bound = (static_cast<double>(n) / 8 + 4) * 0x1p-24 * s + 1e-30;
      const float expected = ref_kernels().of(GgmlType::F16).vec_dot(n, w.data(), a.data());
      const float got = simd128_float_ops()->dot_f16_f32(
          n, reinterpret_cast<const uint16_t*>(w.data()), a32.data());
      INFO("ref " << expected << ", dot_f16_f32 " << got << ", bound " << bound);
      if (std::isnan(expected)) {
        CHECK(std::isnan(got));
      } else if (std::isinf(expected)) {
        CHECK(got == expected);
      } else {
        CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
        CHECK(got != 0.0f);
      }
    }
  }
}

TEST_CASE("SIMD128 f16 rows encode exactly like ref: every half, its neighbours and midpoints",
          "[simd128]") {
  // quantize_row_f16 (the KV cache's stores, attention's query / probabilities) must round
  // as fp32_to_fp16 does. Inputs: every half's float value, the floats one ulp either side,
  // the midpoints to the next half and one ulp either side of them (the ties and the
  // rounding boundaries: subnormal, normal, overflow to inf), inf, NaNs and random bits.
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float v = fp16_to_fp32(static_cast<uint16_t>(h));
    const uint32_t b = test::bits_of(v);
    x.push_back(v);
    if ((b & 0x7FFFFFFFu) >= 0x7F800000u) continue;  // inf / NaN: neighbours are not floats
    x.push_back(f32_from_bits(b + 1));
    if (b & 0x7FFFFFFFu) x.push_back(f32_from_bits(b - 1));
    if ((h & 0x7FFFu) < 0x7C00u) {
      // midpoint to the next half away from zero (for 0x7BFF: 65520, the overflow boundary)
      const double next = (h & 0x7FFFu) == 0x7BFFu ? std::copysign(65536.0, v)
                                                   : fp16_to_fp32(static_cast<uint16_t>(h + 1));
      const float mid = static_cast<float>((static_cast<double>(v) + next) / 2);
      const uint32_t m = test::bits_of(mid);
      x.push_back(mid);
      x.push_back(f32_from_bits(m + 1));
      x.push_back(f32_from_bits(m - 1));
    }
  }
  for (float v : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), 1e-30f, -1e-30f, 70000.0f, -1e10f}) {
    x.push_back(v);
  }
  for (uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FFFFFFFu})
    x.push_back(f32_from_bits(nan));
  Rng rng(2024);
  for (int i = 0; i < 200000; ++i) x.push_back(f32_from_bits(static_cast<uint32_t>(rng.next())));
  x.resize(x.size() / 8 * 8 + 5);  // + a tail shorter than a vector
  std::vector<uint16_t> got(x.size()), want(x.size());
  const int64_t n = static_cast<int64_t>(x.size());
  simd128::quantize_row_f16(x.data(), got.data(), n);
  ref_kernels().of(GgmlType::F16).quantize_row(x.data(), want.data(), n);
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) {
      INFO("float bits " << test::bits_of(x[i]) << ": ref " << want[i] << ", simd128 " << got[i]);
      CHECK(got[i] == want[i]);
    }
  }
  CHECK(bad == 0);
  CHECK(simd().of(GgmlType::F16).quantize_row == simd128::quantize_row_f16);
}

TEST_CASE(
    "SIMD128 dot_f16_f32_multi: one f16 row against several float rows, each within "
    "vec_dot's bound",
    "[simd128]") {
  // Attention's query heads sharing a kv head (core/model/attention.cpp); n_a > 4 takes
  // passes of 4 and the rest.
  const auto multi = simd128_float_ops()->dot_f16_f32_multi;
  REQUIRE(multi != nullptr);
  for (int64_t n : {1, 7, 8, 9, 16, 64, 100, 4099}) {
    for (int n_a : {1, 2, 3, 4, 5, 8, 9}) {
      for (int kind = 0; kind < 3; ++kind) {
        INFO("n " << n << ", rows " << n_a << ", kind " << kind);
        Rng rng(static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(n_a) * 7 +
                static_cast<uint64_t>(kind));
        std::vector<float> x(static_cast<size_t>(n));
        for (float& v : x)
          v = kind == 1 ? rng.symmetric() * 1e-6f : rng.bell() * (kind == 2 ? 300.0f : 1.0f);
        auto w = test::quantize(GgmlType::F16, x);
        const int64_t a_stride = n + 3;
        std::vector<float> a(static_cast<size_t>(a_stride * n_a));
        for (float& v : a) v = rng.bell();
        const int64_t out_stride = 2;
        std::vector<float> out(static_cast<size_t>(out_stride * n_a), -1.0f);
        multi(n, reinterpret_cast<const uint16_t*>(w.data()), a.data(), a_stride, n_a, out.data(),
              out_stride);
        std::vector<float> w32(static_cast<size_t>(n));
        ref_kernels().of(GgmlType::F16).dequantize_row(w.data(), w32.data(), n);
        for (int j = 0; j < n_a; ++j) {
          double exact = 0.0, magnitude = 0.0;
          for (int64_t i = 0; i < n; ++i) {
            const double p = static_cast<double>(w32[i]) * a[j * a_stride + i];
            exact += p;
            magnitude += std::fabs(p);
          }
          const float single = simd128_float_ops()->dot_f16_f32(
              n, reinterpret_cast<const uint16_t*>(w.data()), a.data() + j * a_stride);
          INFO("row " << j << ": " << out[j * out_stride] << " vs " << exact << ", dot_f16_f32 "
                      << single);
          CHECK(std::fabs(out[j * out_stride] - exact) <= (n / 8.0 + 4) * 0x1p-24 * magnitude);
          CHECK(test::bits_of(out[j * out_stride]) ==
                test::bits_of(single));  // attention's results unchanged
        }
      }
    }
  }
  // An inf in the f16 row: inf or NaN wherever the exact dot would be.
  std::vector<uint16_t> w(24, 0x3C00);  // 1.0
  w[9] = 0x7C00;                        // +inf
  std::vector<float> a(24 * 2, 1.0f);
  a[24 + 9] = 0.0f;  // inf * 0: NaN for the second row
  float out[2];
  multi(24, w.data(), a.data(), 24, 2, out, 1);
  CHECK(std::isinf(out[0]));
  CHECK(std::isnan(out[1]));
}

// ---------------------------------------------------------------- float ops

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

// ---------------------------------------------------------------- f16 rows

TEST_CASE("SIMD128 f16 rows decode exactly like ref, all 65536 halfs", "[simd128]") {
  std::vector<uint16_t> h(65536 + 5);  // + a tail shorter than a vector
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> got(h.size()), want(h.size());
  simd128::dequantize_row_f16(h.data(), got.data(), static_cast<int64_t>(h.size()));
  ref_kernels().of(GgmlType::F16).dequantize_row(h.data(), want.data(), static_cast<int64_t>(h.size()));
  int bad = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (test::bits_of(got[i]) != test::bits_of(want[i]) && !(std::isnan(got[i]) && std::isnan(want[i]))) ++bad;
  }
  CHECK(bad == 0);
}

// ---------------------------------------------------------------- row-interleaved (x8) products

TEST_CASE(
    "SIMD128 x8 products match ref's vec_dot on random and adversarial rows, and SIMD128's "
    "vec_dot bit for bit",
    "[simd128]") {
  // A streamed layer is dotted in the file's layout (vec_dot), a resident one repacked
  // (gemm_x8): the same bits make a streamed run give the resident run's tokens.
  test::check_x8_table(simd(), /*same_bits=*/true);
}

TEST_CASE("SIMD128 x8: Q4_0 nibble 0 (-8) against -127 in every element, with the block sum",
          "[simd128]") {
  // The offset -8 goes through the activation's block sum: check it on a hand-computed case.
  const int64_t n = 64;
  std::vector<uint8_t> rows(kX8Rows * row_bytes(GgmlType::Q4_0, n), 0);
  for (int r = 0; r < kX8Rows; ++r) {
    auto* blk = reinterpret_cast<ref::BlockQ4_0*>(rows.data() + r * row_bytes(GgmlType::Q4_0, n));
    for (int b = 0; b < 2; ++b) blk[b].d = fp32_to_fp16(0.5f * static_cast<float>(r + 1));
  }
  std::vector<ref::BlockQ8_0> act(2);
  for (auto& blk : act) {
    blk.d = fp32_to_fp16(2.0f);
    for (auto& q : blk.qs) q = -127;
  }
  const TypeKernels& k = simd().of(GgmlType::Q4_0);
  std::vector<uint8_t> group(x8_group_bytes(k, GgmlType::Q4_0, n));
  k.repack_x8(n, rows.data(), row_bytes(GgmlType::Q4_0, n), group.data());
  int32_t sums[2];
  simd().of(GgmlType::Q8_0).block_sums(n, act.data(), sums);
  CHECK(sums[0] == -127 * 32);
  float out[kX8Rows];
  k.gemm_x8(n, group.data(), act.data(), 0, sums, 1, out, kX8Rows);
  for (int r = 0; r < kX8Rows; ++r) {
    // 64 elements of (0.5 (r + 1) * -8) * (2 * -127)
    CHECK(out[r] == 64.0f * 0.5f * static_cast<float>(r + 1) * 8.0f * 254.0f);
  }
}

// ---------------------------------------------------------------- relaxed-SIMD x8 products

// The relaxed table exists where the engine validates relaxed SIMD: test.sh runs node with
// --experimental-wasm-relaxed-simd (Node 22 and Chromium have it on by default).
const KernelTable& relaxed() {
  const KernelTable* t = simd128_relaxed_kernels();
  INFO(
      "no relaxed-SIMD table: run node with --experimental-wasm-relaxed-simd, and build with "
      "clang++-16");
  REQUIRE(t != nullptr);
  return *t;
}

TEST_CASE("Relaxed-SIMD x8 products match ref's vec_dot on random and adversarial rows",
          "[simd128][relaxed]") {
  test::check_x8_table(relaxed(), /*same_bits=*/true);
}

// An activation row of n quants all equal to a (scales 1, sums to match) in format at.
std::vector<uint8_t> constant_activation(GgmlType at, int64_t n, int8_t a) {
  std::vector<uint8_t> act(row_bytes(at, n));
  if (at == GgmlType::Q8_K) {
    auto* blk = reinterpret_cast<ref::BlockQ8_K*>(act.data());
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      blk[b].d = 1.0f;
      for (auto& q : blk[b].qs) q = a;
      for (auto& s : blk[b].bsums) s = static_cast<int16_t>(16 * a);
    }
  } else if (at == GgmlType::Q8_1) {
    auto* blk = reinterpret_cast<ref::BlockQ8_1*>(act.data());
    for (int64_t b = 0; b < n / kQK; ++b) {
      blk[b].d = fp32_to_fp16(1.0f);
      blk[b].s = fp32_to_fp16(32.0f * a);
      for (auto& q : blk[b].qs) q = a;
    }
  } else {
    auto* blk = reinterpret_cast<ref::BlockQ8_0*>(act.data());
    for (int64_t b = 0; b < n / kQK; ++b) {
      blk[b].d = fp32_to_fp16(1.0f);
      for (auto& q : blk[b].qs) q = a;
    }
  }
  return act;
}

constexpr GgmlType kRelaxedTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q4_K,
                                      GgmlType::Q6_K};

TEST_CASE("Relaxed-SIMD x8: the largest int16 pair sums (4-bit 15 x -128, Q6_K 63 x -128)",
          "[simd128][relaxed]") {
  // i16x8.relaxed_dot_i8x16_i7x16_s sums neighbouring products in int16: the largest
  // quants against the activation bytes -128 and 127, with the largest scales and mins.
  const int64_t n = 512;
  for (GgmlType wt : kRelaxedTypes) {
    for (int8_t a : {int8_t{-128}, int8_t{127}}) {
      INFO("type " << traits(wt).name << ", activation quants " << int{a});
      Rng rng(7);
      std::vector<std::vector<uint8_t>> rows;
      for (int r = 0; r < kX8Rows; ++r) {
        rows.push_back(raw_weight_row(wt, n, rng,
                                      r % 2 ? test::ByteMode::kAllOnes : test::ByteMode::kAllZero));
      }
      const auto act = constant_activation(relaxed().of(wt).vec_dot_type, n, a);
      test::check_gemm_x8(relaxed(), wt, rows, {act, act, act}, n);
    }
  }
}

TEST_CASE("Relaxed-SIMD x8 products equal the SIMD128 x8 products bit for bit",
          "[simd128][relaxed]") {
  // Both sum the same exact integers per block and scale them with the same float steps,
  // so a model gives the same tokens with either table.
  for (GgmlType wt : kRelaxedTypes) {
    const bool k_quant = traits(wt).block_size == kQK_K;
    const GgmlType at = relaxed().of(wt).vec_dot_type;
    for (int64_t n : k_quant ? kLengths : kLegacyLengths) {
      INFO("type " << traits(wt).name << ", n " << n);
      Rng rng(static_cast<uint64_t>(n) + 3);
      std::vector<uint8_t> rows, acts;
      for (int r = 0; r < kX8Rows; ++r) {
        const auto row = r < 6 ? quantize_with(ref_kernels(), wt, make_row(RowKind::kBell, rng, n))
                               : raw_weight_row(wt, n, rng, test::ByteMode::kRandom);
        rows.insert(rows.end(), row.begin(), row.end());
      }
      const int nc = 3;
      std::vector<int32_t> sums(static_cast<size_t>(nc * (n / kQK)));
      for (int c = 0; c < nc; ++c) {
        const auto act = c == 2
                             ? raw_activation_row(at, n, rng, true)
                             : quantize_with(ref_kernels(), at, make_row(RowKind::kHeavy, rng, n));
        if (simd().of(at).block_sums) simd().of(at).block_sums(n, act.data(), &sums[c * (n / kQK)]);
        acts.insert(acts.end(), act.begin(), act.end());
      }
      std::vector<float> out[2];
      int t = 0;
      for (const KernelTable* table : {&simd(), &relaxed()}) {
        const TypeKernels& k = table->of(wt);
        std::vector<uint8_t> group(x8_group_bytes(k, wt, n));
        k.repack_x8(n, rows.data(), row_bytes(wt, n), group.data());
        out[t].assign(nc * kX8Rows, 0.0f);
        k.gemm_x8(n, group.data(), acts.data(), row_bytes(at, n), sums.data(), nc, out[t].data(),
                  kX8Rows);
        ++t;
      }
      for (size_t i = 0; i < out[0].size(); ++i) {
        INFO("output " << i << ": " << out[0][i] << " vs " << out[1][i]);
        CHECK(test::bits_of(out[0][i]) == test::bits_of(out[1][i]));
      }
    }
  }
}

TEST_CASE("The relaxed table is the SIMD128 table with its 4-bit and Q6_K x8 entries replaced",
          "[simd128][relaxed]") {
  const KernelTable& t = relaxed();
  CHECK(t.isa == "simd128-relaxed");
  int replaced = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& s = simd().types[id];
    const TypeKernels& x = t.types[id];
    INFO("type id " << id);
    CHECK(x.vec_dot == s.vec_dot);
    CHECK(x.quantize_row == s.quantize_row);
    CHECK(x.gemm == s.gemm);
    // same group sizes, but for Q6_K's packed quants (6.6 bits a weight, not 8.6) and
    // Q4_K's packed mins (4.69, not 4.75)
    if (id == static_cast<uint32_t>(GgmlType::Q6_K)) {
      CHECK(x.x8_block_bytes == 1696);
      CHECK(s.x8_block_bytes == 2208);
    } else if (id == static_cast<uint32_t>(GgmlType::Q4_K)) {
      CHECK(x.x8_block_bytes == 1200);
      CHECK(s.x8_block_bytes == 1216);
    } else {
      CHECK(x.x8_block_bytes == s.x8_block_bytes);
    }
    replaced += (x.repack_x8 != s.repack_x8) + (x.gemm_x8 != s.gemm_x8) +
                (x.unpack_x8_row != s.unpack_x8_row);
  }
  CHECK(replaced == 12);  // repack, product and unpack of Q4_0, Q4_1, Q4_K and Q6_K
  CHECK(t.of(GgmlType::Q4_0).repack_x8 == simd128::repack_x8_q4_0_relaxed);
  CHECK(t.of(GgmlType::Q4_1).repack_x8 == simd128::repack_x8_q4_1_relaxed);
  CHECK(t.of(GgmlType::Q4_K).repack_x8 == simd128::repack_x8_q4_k_relaxed);
  CHECK(t.of(GgmlType::Q6_K).repack_x8 == simd128::repack_x8_q6_k_relaxed);
}

// ---------------------------------------------------------------- table and dispatch

TEST_CASE("The SIMD128 table is the ref table with the SIMD128 entries swapped in", "[simd128]") {
  const KernelTable* t = simd128_kernels();
  REQUIRE(t != nullptr);
  CHECK(t->isa == "simd128");
  int replaced = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& r = ref_kernels().types[id];
    const TypeKernels& x = t->types[id];
    INFO("type id " << id);
    CHECK(x.supported == r.supported);
    CHECK(x.vec_dot_type == r.vec_dot_type);
    CHECK((x.vec_dot == nullptr) == (r.vec_dot == nullptr));
    replaced += (x.vec_dot != r.vec_dot) + (x.quantize_row != r.quantize_row) +
                (x.dequantize_row != r.dequantize_row);
  }
  CHECK(replaced == 18);  // 13 dots + 3 activation quantizers + the f16 row decoder / encoder
  CHECK(t->of(GgmlType::F16).dequantize_row == simd128::dequantize_row_f16);
  CHECK(t->of(GgmlType::F16).quantize_row == simd128::quantize_row_f16);
  int x8_types = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& x = t->types[id];
    CHECK((x.repack_x8 != nullptr) == (x.gemm_x8 != nullptr));
    CHECK((x.repack_x8 != nullptr) == (x.unpack_x8_row != nullptr));
    x8_types += x.repack_x8 != nullptr;
  }
  CHECK(x8_types == 5);  // Q4_0, Q4_1, Q8_0, Q4_K, Q6_K
  CHECK(t->of(GgmlType::Q8_0).block_sums != nullptr);
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
    CHECK(t->of(type).quantize_row != ref_kernels().of(type).quantize_row);
  }

  const FloatOps* f = simd128_float_ops();
  REQUIRE(f != nullptr);
  const FloatOps& r = ref_float_ops();
  CHECK(f->isa == "simd128");
  CHECK(f->rms_norm != r.rms_norm);
  CHECK(f->softmax != r.softmax);
  CHECK(f->silu != r.silu);
  CHECK(f->swiglu != r.swiglu);
  CHECK(f->add != r.add);
  CHECK(f->mul != r.mul);
  CHECK(f->scale != r.scale);
  CHECK(f->axpy != r.axpy);
  CHECK(f->rope_apply != r.rope_apply);
  CHECK(f->gelu != r.gelu);  // tested in simd128_ops_test.cpp
  CHECK(f->geglu != r.geglu);
  CHECK(f->softcap != r.softcap);
  CHECK(f->rope_cos_sin == r.rope_cos_sin);  // not sped up: ref's
  CHECK(f->dot_f16_f32 == simd128::dot_f16_f32);
  CHECK(r.dot_f16_f32 == nullptr);
}

TEST_CASE("select_kernels picks relaxed SIMD automatically and can still force SIMD128 or ref",
          "[simd128]") {
  CHECK(select_kernels(""));
  CHECK(&kernels() == &relaxed());
  CHECK(kernels().isa == "simd128-relaxed");
  CHECK(&float_ops() == simd128_float_ops());
  CHECK(float_ops().isa == "simd128");
  CHECK(select_kernels("simd128-relaxed"));
  CHECK(&kernels() == &relaxed());
  CHECK(select_kernels("ref"));
  CHECK(&kernels() == &ref_kernels());
  CHECK(&float_ops() == &ref_float_ops());
  CHECK(select_kernels("simd128"));
  CHECK(&kernels() == simd128_kernels());
  CHECK_FALSE(select_kernels("avx2"));  // not in a wasm build
  CHECK_FALSE(select_kernels("SIMD128"));
  CHECK(&kernels() == simd128_kernels());  // a failed selection leaves the choice alone
  CHECK(select_kernels("ref"));            // leave the process on the default for other tests
}

}  // namespace
}  // namespace runnel
