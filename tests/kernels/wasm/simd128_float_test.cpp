// The SIMD128 float-row kernels against ref (compiled only into the wasm build). Bounds:
//  - Float dots (F32, F16, BF16): |simd128 - ref| <= (n / 16 + 16) * 2^-24 * S + 1e-30:
//    16 float chains of n / 16 + 1 steps, a 4-level reduction and up to 7 tail adds,
//    against ref's double sum rounded once. The f16 / bf16 widening is exact (checked
//    for all 65536 bit patterns).
//  - Attention's dot_f16_f32: (n / 8 + 4) * 2^-24 * S; dot_f16_f32_multi gives its bits.
//  - f16 rows: decoded and encoded bit-exact with ref.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"
#include "kernels/wasm/wasm.h"
#include "tests/kernels/test_util.h"
#include "tests/kernels/wasm/wasm_test_tables.h"

namespace runnel {
namespace {

using test::Rng;

const KernelTable& simd() {
  return test::simd128_table();
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
      // kind 4: -inf in the zero-padded tail for most n
      const auto [w, a] = test::f16_dot_rows(n, kind);
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
  // as fp32_to_fp16 does (inputs: test_util.h).
  const std::vector<float> x = test::f16_encode_inputs();
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

// ---------------------------------------------------------------- f16 rows

TEST_CASE("SIMD128 f16 rows decode exactly like ref, all 65536 halfs", "[simd128]") {
  std::vector<uint16_t> h(65536 + 5);  // + a tail shorter than a vector
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> got(h.size()), want(h.size());
  simd128::dequantize_row_f16(h.data(), got.data(), static_cast<int64_t>(h.size()));
  ref_kernels()
      .of(GgmlType::F16)
      .dequantize_row(h.data(), want.data(), static_cast<int64_t>(h.size()));
  int bad = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (test::bits_of(got[i]) != test::bits_of(want[i]) &&
        !(std::isnan(got[i]) && std::isnan(want[i])))
      ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE("SIMD128 float ops touch attention's K / V rows first; ref does not", "[simd128]") {
  // The wasm table offers the cache-line touch (no prefetch instruction in wasm); the
  // reference ops, which native tables start from, leave it null.
  REQUIRE(simd128_float_ops()->touch_rows != nullptr);
  CHECK(ref_float_ops().touch_rows == nullptr);
  // Rows of 99 bytes every 1000 from an unaligned start: the touch only reads.
  std::vector<uint8_t> buf(3 * 1000 + 100, 7);
  const std::vector<uint8_t> before = buf;
  simd128_float_ops()->touch_rows(buf.data() + 1, 3, 1000, 99);
  simd128_float_ops()->touch_rows(buf.data(), 0, 1000, 99);  // no rows
  CHECK(buf == before);
}

}  // namespace
}  // namespace runnel
