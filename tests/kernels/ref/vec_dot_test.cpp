// (3) vec_dot of every weight type against its partner activation type.
//  a. Against the double-precision dot of the two *decoded* rows: the kernels do exact
//     integer sums and then a few float multiply-adds per block, so they must agree to
//     float rounding (bound: 1e-5 of sum |w_i a_i|), after accounting exactly for the
//     one place ggml's formula differs from the decoded rows (Q8_1's rounded sum field).
//  b. Against the dot with the *unquantized* float activations: the difference is the
//     activation quantization error, bounded rigorously per block by
//     sum_i |w_i| * (d_a / 2 + 127 |d_a - f16(d_a)|), i.e. half a step plus the f16
//     rounding of the stored scale (Q8_K stores d as float: half a step only).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"
#include "tests/kernels/lut4_test_util.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::dequantize;
using test::quantize;
using test::Rng;

const GgmlType kWeightTypes[] = {
    GgmlType::F32,  GgmlType::F16,   GgmlType::BF16,   GgmlType::Q4_0,
    GgmlType::Q4_1, GgmlType::Q5_0,  GgmlType::Q5_1,   GgmlType::Q8_0,
    GgmlType::Q2_K, GgmlType::Q3_K,  GgmlType::Q4_K,   GgmlType::Q5_K,
    GgmlType::Q6_K, GgmlType::MXFP4, GgmlType::IQ4_NL, GgmlType::IQ4_XS};

GgmlType expected_partner(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return GgmlType::F32;
    case GgmlType::F16:
      return GgmlType::F16;
    case GgmlType::BF16:
      return GgmlType::BF16;
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0:
    case GgmlType::MXFP4:
    case GgmlType::IQ4_NL:
      return GgmlType::Q8_0;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
      return GgmlType::Q8_1;
    default:
      return GgmlType::Q8_K;
  }
}

TEST_CASE("Each weight type dots with its ggml partner activation type", "[kernels]") {
  for (GgmlType t : kWeightTypes) {
    INFO("type " << traits(t).name);
    CHECK(ref_kernels().of(t).vec_dot_type == expected_partner(t));
    CHECK(ref_kernels().of(t).vec_dot != nullptr);
  }
}

// Q4_1 / Q5_1 apply their min through the Q8_1 block field s = f16(d * sum(q)) (ggml
// rounds it once, from the unrounded d), not through the decoded activations, whose sum
// is f16(d) * sum(q). Returns sum over blocks of m * (s - f16(d) * sum(q)): the exact
// difference between the two.
double q8_1_sum_correction(GgmlType t, const std::vector<uint8_t>& wq,
                           const std::vector<uint8_t>& aq, int64_t n) {
  if (t != GgmlType::Q4_1 && t != GgmlType::Q5_1) return 0.0;
  const size_t w_block = traits(t).type_size;
  double correction = 0.0;
  for (int64_t b = 0; b < n / 32; ++b) {
    uint16_t m_bits;  // both Q4_1 and Q5_1 start with f16 d, f16 m
    std::memcpy(&m_bits, wq.data() + b * w_block + 2, 2);
    ref::BlockQ8_1 a;
    std::memcpy(&a, aq.data() + b * sizeof a, sizeof a);
    int sum_q = 0;
    for (int j = 0; j < 32; ++j) sum_q += a.qs[j];
    correction +=
        static_cast<double>(fp16_to_fp32(m_bits)) *
        (static_cast<double>(fp16_to_fp32(a.s)) - static_cast<double>(fp16_to_fp32(a.d)) * sum_q);
  }
  return correction;
}

TEST_CASE("vec_dot equals the dot of the decoded rows to float rounding", "[kernels]") {
  for (GgmlType t : kWeightTypes) {
    INFO("type " << traits(t).name);
    const GgmlType at = ref_kernels().of(t).vec_dot_type;
    for (int64_t n : {256, 4096}) {
      for (uint64_t seed = 0; seed < 4; ++seed) {
        Rng rng(100 + seed);
        std::vector<float> x(n), y(n);
        for (auto& v : x) v = seed % 2 ? rng.heavy() : rng.bell();
        for (auto& v : y) v = rng.bell() * 3.0f + (seed == 3 ? 1.0f : 0.0f);
        const auto wq = quantize(t, x);
        const auto aq = quantize(at, y);
        const auto wd = dequantize(t, wq, n);
        const auto ad = dequantize(at, aq, n);
        double exact = 0.0;
        double magnitude = 0.0;
        for (int64_t i = 0; i < n; ++i) {
          exact += static_cast<double>(wd[i]) * ad[i];
          magnitude += std::fabs(static_cast<double>(wd[i]) * ad[i]);
        }
        exact += q8_1_sum_correction(t, wq, aq, n);
        const float got = ref_kernels().of(t).vec_dot(n, wq.data(), aq.data());
        CHECK(std::fabs(got - exact) <= 1e-5 * magnitude);
      }
    }
  }
}

// Worst-case |a_i - decode(quant(a))_i| for the block holding i, from the block's amax.
double activation_error_bound(GgmlType at, const std::vector<float>& a, int64_t i) {
  const int64_t block = traits(at).block_size;
  if (block == 1) {  // F32 exact; F16 / BF16 round each element
    const double rel = at == GgmlType::F32 ? 0.0 : at == GgmlType::F16 ? 0x1p-11 : 0x1p-8;
    return std::fabs(a[i]) * rel;
  }
  double amax = 0.0;
  const int64_t start = i / block * block;
  for (int64_t j = start; j < start + block; ++j)
    amax = std::max(amax, static_cast<double>(std::fabs(a[j])));
  const double d = amax / 127.0;
  const double scale_rounding = at == GgmlType::Q8_K ? 0.0 : 127.0 * d * 0x1p-11;
  return d / 2 + scale_rounding + 1e-12;
}

TEST_CASE("vec_dot is within the activation quantization bound of the float dot", "[kernels]") {
  for (GgmlType t : kWeightTypes) {
    INFO("type " << traits(t).name);
    const GgmlType at = ref_kernels().of(t).vec_dot_type;
    const int64_t n = 2048;
    for (uint64_t seed = 0; seed < 4; ++seed) {
      Rng rng(200 + seed);
      std::vector<float> x(n), y(n);
      for (auto& v : x) v = rng.bell();
      for (auto& v : y) v = seed % 2 ? rng.heavy() : rng.bell();
      const auto wq = quantize(t, x);
      const auto wd = dequantize(t, wq, n);
      double reference = 0.0;  // decoded weights . float activations
      double bound = 0.0;
      double trivial = 0.0;  // sum |w_i a_i|: what a useless bound would be
      for (int64_t i = 0; i < n; ++i) {
        reference += static_cast<double>(wd[i]) * y[i];
        bound += std::fabs(wd[i]) * activation_error_bound(at, y, i);
        trivial += std::fabs(static_cast<double>(wd[i]) * y[i]);
      }
      bound += 1e-5 * std::fabs(reference) + 1e-4;  // float accumulation
      const float got = ref_kernels().of(t).vec_dot(n, wq.data(), quantize(at, y).data());
      CHECK(std::fabs(got - reference) <= bound);
      CHECK(bound < 0.1 * trivial);
    }
  }
}

TEST_CASE("vec_dot on hand-built blocks", "[kernels]") {
  SECTION("Q4_0 x Q8_0: sum((q - 8) * qa) * d * da") {
    uint8_t w[18] = {};
    w[0] = 0x00;  // d = 0.5 (0x3800), little-endian
    w[1] = 0x38;
    for (int j = 0; j < 16; ++j) w[2 + j] = static_cast<uint8_t>(9 | (6 << 4));  // +1 low, -2 high
    uint8_t a[34] = {};
    a[0] = 0x00;  // da = 2 (0x4000)
    a[1] = 0x40;
    for (int j = 0; j < 32; ++j)
      a[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j < 16 ? 3 : -5));
    // 16 * (1 * 3) + 16 * (-2 * -5) = 48 + 160 = 208; * 0.5 * 2 = 208.
    CHECK(ref_kernels().of(GgmlType::Q4_0).vec_dot(32, w, a) == 208.0f);
  }
  SECTION("Q6_K x Q8_K with mixed-sign scales") {
    std::vector<float> x(256), y(256);
    for (int e = 0; e < 256; ++e) {
      x[e] = e % 16 == 0 ? -32.0f : static_cast<float>((7 * e) % 63 - 31);  // exact in Q6_K
      y[e] = e == 0 ? -127.0f : static_cast<float>((5 * e) % 255 - 127);    // exact in Q8_K
    }
    double exact = 0.0;
    for (int e = 0; e < 256; ++e) exact += static_cast<double>(x[e]) * y[e];
    const auto wq = quantize(GgmlType::Q6_K, x);
    const auto aq = quantize(GgmlType::Q8_K, y);
    CHECK(ref_kernels().of(GgmlType::Q6_K).vec_dot(256, wq.data(), aq.data()) ==
          static_cast<float>(exact));
  }
  SECTION("MXFP4, IQ4_NL, IQ4_XS: every code, extreme quants, subnormal and negative scales") {
    for (const test::Lut4Case& c : test::lut4_hand_cases()) {
      INFO(c.what);
      CHECK(ref_kernels().of(c.type).vec_dot(c.n, c.w.data(), c.a.data()) == c.expected);
    }
  }
}

}  // namespace
}  // namespace runnel
