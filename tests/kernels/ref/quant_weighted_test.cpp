// The importance-weighted quantizers (kernels/ref/quant_weighted.cpp): what they are for
// (a lower error where the importance is high, judged against the plain quantizer of the
// same type), their fallbacks, and rows no search should trip on. Their bytes against
// ggml's are pinned in ggml_golden_test.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::Rng;

using WeightedFn = void (*)(const float*, void*, int64_t, const float*);

struct Case {
  GgmlType type;
  WeightedFn quantize;
  double max_ratio;  // weighted / plain error on the heavy columns must stay below this
};

// Measured ratios (bell rows, a random quarter of the columns 100x as important; the
// light columns' error grows 1.2x-1.5x in exchange): Q4_0 0.68, Q4_1 0.46, Q5_0 0.66,
// Q5_1 0.47, Q2_K 0.36, Q3_K 0.59, Q4_K 0.57, Q5_K 0.64, Q6_K 0.61.
constexpr Case kCases[] = {
    {GgmlType::Q4_0, ref::quantize_row_q4_0_weighted, 0.8},
    {GgmlType::Q4_1, ref::quantize_row_q4_1_weighted, 0.6},
    {GgmlType::Q5_0, ref::quantize_row_q5_0_weighted, 0.8},
    {GgmlType::Q5_1, ref::quantize_row_q5_1_weighted, 0.6},
    {GgmlType::Q2_K, ref::quantize_row_q2_k_weighted, 0.5},
    {GgmlType::Q3_K, ref::quantize_row_q3_k_weighted, 0.75},
    {GgmlType::Q4_K, ref::quantize_row_q4_k_weighted, 0.75},
    {GgmlType::Q5_K, ref::quantize_row_q5_k_weighted, 0.8},
    {GgmlType::Q6_K, ref::quantize_row_q6_k_weighted, 0.8},
};

std::vector<float> dequantized(GgmlType type, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  ref_kernels().of(type).dequantize_row(q.data(), y.data(), n);
  return y;
}

TEST_CASE("weighted quantizers: lower error where the importance is high", "[kernels][quant]") {
  constexpr int64_t kN = 4096;
  for (const Case& c : kCases) {
    INFO("type " << traits(c.type).name);
    double heavy_weighted = 0, heavy_plain = 0, light_weighted = 0, light_plain = 0;
    for (int r = 0; r < 4; ++r) {
      Rng rng(0xA11CE000u + static_cast<uint64_t>(r));
      const std::vector<float> x = test::bell_row(rng, kN, 0.05f);
      std::vector<float> importance(static_cast<size_t>(kN));
      for (auto& v : importance) v = rng.uniform() < 0.25f ? 100.0f : 1.0f;
      std::vector<uint8_t> qw(row_bytes(c.type, kN)), qp(row_bytes(c.type, kN));
      c.quantize(x.data(), qw.data(), kN, importance.data());
      ref_kernels().of(c.type).quantize_row(x.data(), qp.data(), kN);
      const std::vector<float> yw = dequantized(c.type, qw, kN), yp = dequantized(c.type, qp, kN);
      for (int64_t i = 0; i < kN; ++i) {
        const double ew = (yw[i] - x[i]) * double(yw[i] - x[i]),
                     ep = (yp[i] - x[i]) * double(yp[i] - x[i]);
        (importance[i] > 1.0f ? heavy_weighted : light_weighted) += ew;
        (importance[i] > 1.0f ? heavy_plain : light_plain) += ep;
      }
    }
    const double ratio = heavy_weighted / heavy_plain;
    CAPTURE(ratio, light_weighted / light_plain);
    CHECK(ratio < c.max_ratio);
    // The trade: the light columns pay for it, but not without bound.
    CHECK(light_weighted < 2.0 * light_plain);
  }
}

TEST_CASE("weighted quantizers: no importance is the plain quantizer", "[kernels][quant]") {
  constexpr int64_t kN = 512;
  Rng rng(7);
  const std::vector<float> x = test::bell_row(rng, kN);
  for (const Case& c : kCases) {
    INFO("type " << traits(c.type).name);
    std::vector<uint8_t> a(row_bytes(c.type, kN)), b(row_bytes(c.type, kN));
    c.quantize(x.data(), a.data(), kN, nullptr);
    ref_kernels().of(c.type).quantize_row(x.data(), b.data(), kN);
    CHECK(a == b);
  }
}

TEST_CASE("weighted quantizers: zero rows, zero blocks and zero importance stay finite",
          "[kernels][quant]") {
  constexpr int64_t kN = 512;
  Rng rng(11);
  std::vector<float> x = test::bell_row(rng, kN);
  for (int64_t i = 0; i < 256; ++i) x[i] = 0.0f;  // a whole super-block of zeros
  std::vector<float> importance(static_cast<size_t>(kN), 1.0f);
  for (int64_t i = 256; i < 320; ++i) importance[i] = 0.0f;  // columns no activation reached
  const std::vector<float> zeros(static_cast<size_t>(kN), 0.0f);
  for (const Case& c : kCases) {
    INFO("type " << traits(c.type).name);
    std::vector<uint8_t> q(row_bytes(c.type, kN));
    c.quantize(x.data(), q.data(), kN, importance.data());
    const std::vector<float> y = dequantized(c.type, q, kN);
    for (int64_t i = 0; i < kN; ++i) {
      REQUIRE(std::isfinite(y[i]));
      if (i < 256) REQUIRE(y[i] == 0.0f);
      // a rough fit even where the importance is zero (the other columns set the scales)
      if (i >= 320) REQUIRE(std::fabs(y[i] - x[i]) < 1.5f);
    }
    c.quantize(zeros.data(), q.data(), kN, importance.data());
    for (const float v : dequantized(c.type, q, kN)) REQUIRE(v == 0.0f);
  }
}

}  // namespace
}  // namespace runnel
