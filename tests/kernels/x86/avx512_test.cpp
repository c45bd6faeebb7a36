// The AVX-512 per-token dots (kernels/x86/avx512_dots.h) against kernels/ref, each kernel
// called directly (registered in the avx512 table or not), plus the table's choice of
// them. Skipped with a warning on CPUs without AVX-512 F/BW/VL/DQ/VNNI (the vdpbf16ps
// BF16 dot also without AVX512-BF16).
//  - Quantized dots: |avx512 - ref| <= 1e-5 * S + 1e-30, S = sum_i |w_i a_i| over the
//    decoded rows plus, for Q4_1 / Q5_1, sum_b |m_b s_b|: both sides sum integers exactly
//    per block, only the float accumulation order differs (the AVX2 bound).
//  - Float dots (F32, F16, BF16 widened): |avx512 - ref| <= (n / 32 + 16) * 2^-24 * S +
//    1e-30 (chains of n / 64 + 3 FMA steps and a 6-level reduction vs ref's double sum).
//  - BF16 with vdpbf16ps: the same plus S_sub + n * 2^-125, S_sub = sum |w_i a_i| over the
//    elements where w_i or a_i is a bf16 subnormal (the instruction reads them as zero and
//    flushes subnormal results).
//  - VNNI gemm kernels (avx512_gemm.h), each output of a prompt product against ref's
//    vec_dot: the quantized dots' bound, as the AVX2 tiles (avx2_test.cpp tests the
//    registered ones through the table too).
//  - The k-quant dots and the Q5_K tile are one template over each ISA's integer steps
//    (kquant_dots_impl.h, gemm_impl.h) with the same exact integer sums and float steps:
//    they give the AVX2 kernels' bits.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx512_dots.h"
#include "kernels/x86/avx512_gemm.h"
#include "kernels/x86/x86.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/lut4_test_util.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::ByteMode;
using test::dot_magnitude;
using test::make_row;
using test::raw_activation_row;
using test::raw_weight_row;
using test::Rng;
using test::RowKind;

struct Dot {
  GgmlType type;
  VecDotFn fn;
};

constexpr Dot kQuantDots[] = {
    {GgmlType::Q4_0, avx512::vec_dot_q4_0},    {GgmlType::Q4_1, avx512::vec_dot_q4_1},
    {GgmlType::Q5_0, avx512::vec_dot_q5_0},    {GgmlType::Q5_1, avx512::vec_dot_q5_1},
    {GgmlType::Q8_0, avx512::vec_dot_q8_0},    {GgmlType::Q2_K, avx512::vec_dot_q2_k},
    {GgmlType::Q3_K, avx512::vec_dot_q3_k},    {GgmlType::Q4_K, avx512::vec_dot_q4_k},
    {GgmlType::Q5_K, avx512::vec_dot_q5_k},    {GgmlType::Q6_K, avx512::vec_dot_q6_k},
    {GgmlType::MXFP4, avx512::vec_dot_mxfp4},  {GgmlType::IQ4_NL, avx512::vec_dot_iq4_nl},
    {GgmlType::IQ4_XS, avx512::vec_dot_iq4_xs}};

bool has_avx512_or_warn() {
  if (!cpu_has_avx512()) WARN("CPU lacks AVX-512 F/BW/VL/DQ/VNNI: AVX-512 dot tests skipped");
  return cpu_has_avx512();
}

void check_quant_dot(const Dot& d, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a,
                     int64_t n) {
  const float expected = ref_kernels().of(d.type).vec_dot(n, w.data(), a.data());
  const float got = d.fn(n, w.data(), a.data());
  const double bound = 1e-5 * dot_magnitude(d.type, w, a, n) + 1e-30;
  INFO("ref " << expected << ", avx512 " << got << ", bound " << bound);
  REQUIRE(std::isfinite(expected));
  CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
}

// ---------------------------------------------------------------- quantized dots

TEST_CASE("AVX-512 quantized dots match ref on quantized random rows", "[avx512]") {
  if (!has_avx512_or_warn()) return;
  for (const Dot& d : kQuantDots) {
    const GgmlType at = ref_kernels().of(d.type).vec_dot_type;
    const bool k_quant = traits(d.type).block_size == kQK_K;
    // 1, 3, 7 (odd: the legacy dots take blocks in pairs) (super-)blocks and 4096
    for (int64_t n : k_quant ? test::kSuperBlockLengths : test::kBlockLengths) {
      for (uint64_t seed = 0; seed < 6; ++seed) {
        INFO("type " << traits(d.type).name << ", n " << n << ", seed " << seed);
        Rng rng(2000 + seed);
        const RowKind wk = seed % 2 ? RowKind::kHeavy : RowKind::kBell;
        const RowKind ak = seed == 4   ? RowKind::kSignTie
                           : seed == 5 ? RowKind::kOneHot
                                       : RowKind::kBell;
        const auto w = test::quantize(d.type, make_row(wk, rng, n));
        const auto a = test::quantize(at, make_row(ak, rng, n));
        check_quant_dot(d, w, a, n);
        if (seed < 4) CHECK(std::fabs(d.fn(n, w.data(), a.data())) > 0.0f);
      }
    }
  }
}

TEST_CASE("AVX-512 quantized dots match ref on adversarial blocks", "[avx512]") {
  if (!has_avx512_or_warn()) return;
  for (const Dot& d : kQuantDots) {
    const GgmlType at = ref_kernels().of(d.type).vec_dot_type;
    const bool k_quant = traits(d.type).block_size == kQK_K;
    for (int64_t n : k_quant ? test::kSuperBlockLengths : test::kBlockLengths) {
      // bytes random / all 0x00 (lowest quants: zero points at their most negative) /
      // all 0xFF (largest quants, scales and mins); f16 scales of both signs, max, subnormal
      for (int byte_mode = 0; byte_mode < 3; ++byte_mode) {
        for (int extreme = 0; extreme < 2; ++extreme) {  // activations all +-127
          for (uint64_t rep = 0; rep < 3; ++rep) {
            INFO("type " << traits(d.type).name << ", n " << n << ", bytes " << byte_mode
                         << ", extreme activations " << extreme << ", rep " << rep);
            Rng rng(static_cast<uint64_t>(n) * 11 + static_cast<uint64_t>(byte_mode) * 5 +
                    static_cast<uint64_t>(extreme) * 2 + rep * 1000);
            const auto w = raw_weight_row(d.type, n, rng, static_cast<ByteMode>(byte_mode));
            const auto a = raw_activation_row(at, n, rng, extreme != 0);
            check_quant_dot(d, w, a, n);
          }
        }
      }
    }
  }
}

// The two sets sum in the same order, so at -O3 the bits are equal; other builds
// (ASan's) may contract multiplies and adds differently, hence a few ulps.
bool same_sum(float got, float want) {
  return std::fabs(got - want) <= 4 * std::numeric_limits<float>::epsilon() * std::max(1.0f, std::fabs(want));
}

TEST_CASE("AVX-512 k-quant dots and Q5_K tile sum as the AVX2 ones do", "[avx512]") {
  if (!has_avx512_or_warn() || !cpu_has_avx2()) return;
  const Dot avx2_dots[] = {{GgmlType::Q2_K, avx2::vec_dot_q2_k},
                           {GgmlType::Q3_K, avx2::vec_dot_q3_k},
                           {GgmlType::Q4_K, avx2::vec_dot_q4_k},
                           {GgmlType::Q5_K, avx2::vec_dot_q5_k},
                           {GgmlType::Q6_K, avx2::vec_dot_q6_k}};
  for (const Dot& d2 : avx2_dots) {
    const Dot& d512 = *std::find_if(std::begin(kQuantDots), std::end(kQuantDots),
                                    [&](const Dot& d) { return d.type == d2.type; });
    for (int64_t n : test::kSuperBlockLengths) {
      for (int byte_mode = 0; byte_mode < 3; ++byte_mode) {
        INFO("type " << traits(d2.type).name << ", n " << n << ", bytes " << byte_mode);
        Rng rng(static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(byte_mode));
        const auto w = raw_weight_row(d2.type, n, rng, static_cast<ByteMode>(byte_mode));
        const auto a = raw_activation_row(GgmlType::Q8_K, n, rng, byte_mode == 2);
        const float got = d512.fn(n, w.data(), a.data());
        const float want = d2.fn(n, w.data(), a.data());
        INFO("avx512 " << got << " avx2 " << want);
        CHECK(same_sum(got, want));
      }
    }
  }
  // Q5_K's tile: 8 rows x 8 tokens of one packed group
  const int64_t n = 768;
  Rng rng(77);
  std::vector<uint8_t> w, a;
  for (int r = 0; r < kGemmRows; ++r) {
    const auto row = test::quantize(GgmlType::Q5_K, make_row(RowKind::kHeavy, rng, n));
    w.insert(w.end(), row.begin(), row.end());
  }
  for (int c = 0; c < kGemmCols; ++c) {
    const auto row = test::quantize(GgmlType::Q8_K, make_row(RowKind::kBell, rng, n));
    a.insert(a.end(), row.begin(), row.end());
  }
  std::vector<uint8_t> packed(avx2::gemm_pack_bytes_q8_k(n));
  avx2::gemm_pack_q8_k(n, a.data(), row_bytes(GgmlType::Q8_K, n), kGemmCols, packed.data());
  float got[kGemmRows * kGemmCols], want[kGemmRows * kGemmCols];
  const size_t w_stride = row_bytes(GgmlType::Q5_K, n);
  avx512::gemm_q5_k(n, w.data(), w_stride, kGemmRows, packed.data(), kGemmCols, got, kGemmRows);
  avx2::gemm_q5_k(n, w.data(), w_stride, kGemmRows, packed.data(), kGemmCols, want, kGemmRows);
  for (int i = 0; i < kGemmRows * kGemmCols; ++i) CHECK(same_sum(got[i], want[i]));
}

TEST_CASE("AVX-512 dots: hand-checked extreme blocks", "[avx512]") {
  if (!has_avx512_or_warn()) return;
  SECTION("Q8_0 weight -128 against activation 127 and -127, d = 1") {
    ref::BlockQ8_0 w[2]{}, a[2]{};
    for (int b = 0; b < 2; ++b) {
      w[b].d = a[b].d = 0x3C00;
      for (int j = 0; j < 32; ++j) {
        w[b].qs[j] = -128;
        a[b].qs[j] = static_cast<int8_t>(b == 0 ? 127 : -127);
      }
    }
    CHECK(avx512::vec_dot_q8_0(32, w, a) == -128.0f * 127.0f * 32.0f);
    CHECK(avx512::vec_dot_q8_0(64, w, a) == 0.0f);
  }
  SECTION("Q4_0 nibbles 0 (-8) and 15 (7) against -127, d = 0.5, da = 2") {
    ref::BlockQ4_0 w[3]{};
    ref::BlockQ8_0 a[3]{};
    for (int b = 0; b < 3; ++b) {
      w[b].d = 0x3800;
      a[b].d = 0x4000;
      std::memset(w[b].qs, b == 1 ? 0xFF : 0x00, sizeof w[b].qs);
      for (auto& q : a[b].qs) q = -127;
    }
    CHECK(avx512::vec_dot_q4_0(32, w, a) == 8.0f * 127.0f * 32.0f);
    CHECK(avx512::vec_dot_q4_0(96, w, a) == (8.0f + 8.0f - 7.0f) * 127.0f * 32.0f);
  }
  SECTION("Q5_0 with every fifth bit set and nibble 15: q - 16 = 15") {
    ref::BlockQ5_0 w{};
    ref::BlockQ8_0 a{};
    w.d = a.d = 0x3C00;
    std::memset(w.qh, 0xFF, sizeof w.qh);
    std::memset(w.qs, 0xFF, sizeof w.qs);
    for (int j = 0; j < 32; ++j) a.qs[j] = static_cast<int8_t>(j - 16);
    CHECK(avx512::vec_dot_q5_0(32, &w, &a) == -240.0f);  // 15 * sum(j - 16)
  }
  SECTION("Q4_1 with a negative min: d * q + m, m = -2, q = 15") {
    ref::BlockQ4_1 w{};
    ref::BlockQ8_1 a{};
    w.d = 0x3C00;
    w.m = 0xC000;  // -2
    std::memset(w.qs, 0xFF, sizeof w.qs);
    a.d = 0x3C00;
    for (auto& q : a.qs) q = 3;
    a.s = fp32_to_fp16(96.0f);  // d * sum(q)
    CHECK(avx512::vec_dot_q4_1(32, &w, &a) == 15.0f * 96.0f - 2.0f * 96.0f);
  }
  SECTION("Q6_K largest quants (63: lanes at 4 * 63 * 127, the int16 limit of the scale step)") {
    ref::BlockQ6_K w{};
    ref::BlockQ8_K a{};
    std::memset(w.ql, 0xFF, sizeof w.ql);
    std::memset(w.qh, 0xFF, sizeof w.qh);
    for (int j = 0; j < 16; ++j) w.scales[j] = static_cast<int8_t>(j % 2 ? -128 : 127);
    w.d = 0x3C00;
    a.d = 1.0f;
    for (auto& q : a.qs) q = 127;
    for (auto& s : a.bsums) s = 16 * 127;
    // every element (63 - 32) * 127 * scale, 16 per sub-block: 31 * 127 * 16 * (127 - 128) * 8
    CHECK(avx512::vec_dot_q6_k(256, &w, &a) == -31.0f * 127 * 16 * 8);
    CHECK(avx512::vec_dot_q6_k(256, &w, &a) ==
          ref_kernels().of(GgmlType::Q6_K).vec_dot(256, &w, &a));
  }
  SECTION("MXFP4, IQ4_NL, IQ4_XS: every code, -127 x 127, subnormal and negative scales") {
    for (const test::Lut4Case& c : test::lut4_hand_cases()) {
      INFO(c.what);
      const Dot& d = *std::find_if(std::begin(kQuantDots), std::end(kQuantDots),
                                   [&](const Dot& q) { return q.type == c.type; });
      CHECK(d.fn(c.n, c.w.data(), c.a.data()) == c.expected);
    }
  }
}

// ---------------------------------------------------------------- float dots

// Float rows of kind: 0 bell, 1 heavy x offset, 2 f16 max x large, 3 tiny (f16
// subnormals), 4 bf16 subnormals against large activations (BF16 only).
void make_float_rows(int kind, Rng& rng, int64_t n, std::vector<float>& x, std::vector<float>& y) {
  x.assign(static_cast<size_t>(n), 0.0f);
  y.assign(static_cast<size_t>(n), 0.0f);
  for (size_t i = 0; i < x.size(); ++i) {
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
      case 3:
        x[i] = rng.symmetric() * 1e-6f;
        y[i] = rng.symmetric() * 1e-3f;
        break;
      default:  // every third weight a bf16 subnormal (< 2^-126), against ~1e30
        x[i] = i % 3 == 0 ? rng.symmetric() * 1e-39f : rng.bell();
        y[i] = rng.symmetric() * 1e30f;
        break;
    }
  }
}

void check_float_dot(GgmlType t, VecDotFn fn, bool dpbf16) {
  for (int64_t n :
       {1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 200, 576, 4096, 4099}) {
    for (int kind = 0; kind < (t == GgmlType::BF16 ? 5 : 4); ++kind) {
      INFO("type " << traits(t).name << ", n " << n << ", kind " << kind);
      Rng rng(static_cast<uint64_t>(n) * 17 + static_cast<uint64_t>(kind));
      std::vector<float> x, y;
      make_float_rows(kind, rng, n, x, y);
      const auto w = test::quantize(t, x);
      const auto a = test::quantize(t, y);
      const auto wd = test::dequantize(t, w, n);
      const auto ad = test::dequantize(t, a, n);
      double s = 0.0;
      double s_sub = 0.0;  // terms with a subnormal factor
      for (size_t i = 0; i < wd.size(); ++i) {
        const double term = std::fabs(static_cast<double>(wd[i]) * ad[i]);
        s += term;
        const bool w_sub = std::fpclassify(wd[i]) == FP_SUBNORMAL;
        if (w_sub || std::fpclassify(ad[i]) == FP_SUBNORMAL) s_sub += term;
      }
      double bound = (static_cast<double>(n) / 32 + 16) * 0x1p-24 * s + 1e-30;
      if (dpbf16) bound += s_sub + static_cast<double>(n) * 0x1p-125;
      const float expected = ref_kernels().of(t).vec_dot(n, w.data(), a.data());
      const float got = fn(n, w.data(), a.data());
      INFO("ref " << expected << ", avx512 " << got << ", bound " << bound << ", S_sub " << s_sub);
      REQUIRE(std::isfinite(expected));
      CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
      if (s_sub < 0.5 * s) CHECK(got != 0.0f);  // dpbf16 may read every term as 0
    }
  }
}

TEST_CASE("AVX-512 F32 and F16 dots match ref", "[avx512]") {
  if (!has_avx512_or_warn()) return;
  check_float_dot(GgmlType::F32, avx512::vec_dot_f32, false);
  check_float_dot(GgmlType::F16, avx512::vec_dot_f16, false);
}

TEST_CASE("AVX-512 BF16 dot by exact widening and FMA matches ref", "[avx512]") {
  if (!has_avx512_or_warn()) return;
  check_float_dot(GgmlType::BF16, avx512::vec_dot_bf16, false);
}

TEST_CASE("AVX-512 BF16 dot with vdpbf16ps matches ref within its bound", "[avx512]") {
  if (!has_avx512_or_warn()) return;
  if (!cpu_has_avx512_bf16()) {
    WARN("CPU lacks AVX512-BF16: vdpbf16ps dot test skipped");
    return;
  }
  check_float_dot(GgmlType::BF16, avx512::vec_dot_bf16_dpbf16, true);
  SECTION("products are exact: 8-bit significands, sums that fit in 24 bits") {
    std::vector<uint16_t> w(48), a(48);
    for (int i = 0; i < 48; ++i) {
      w[i] = fp32_to_bf16(1.0f + static_cast<float>(i % 128) / 128.0f);  // 1 + k/128
      a[i] = fp32_to_bf16(i % 2 ? -3.0f : 5.0f);
    }
    CHECK(avx512::vec_dot_bf16_dpbf16(48, w.data(), a.data()) ==
          ref_kernels().of(GgmlType::BF16).vec_dot(48, w.data(), a.data()));
  }
}

// ---------------------------------------------------------------- batched products (gemm)

struct Gemm {
  GgmlType type;
  GemmFn fn;
};

constexpr Gemm kGemms[] = {
    {GgmlType::Q4_0, avx512::gemm_q4_0},    {GgmlType::Q4_1, avx512::gemm_q4_1},
    {GgmlType::Q5_0, avx512::gemm_q5_0},    {GgmlType::Q5_1, avx512::gemm_q5_1},
    {GgmlType::Q8_0, avx512::gemm_q8_0},    {GgmlType::Q4_K, avx512::gemm_q4_k},
    {GgmlType::Q5_K, avx512::gemm_q5_k},    {GgmlType::Q6_K, avx512::gemm_q6_k},
    {GgmlType::MXFP4, avx512::gemm_mxfp4},  {GgmlType::IQ4_NL, avx512::gemm_iq4_nl},
    {GgmlType::IQ4_XS, avx512::gemm_iq4_xs}};

// Token counts: every group fill, and 19 (two full groups and a group of 3).
constexpr int kTokenCounts[] = {1, 2, 3, 4, 5, 6, 7, 8, 19};

// A prompt product as core/model/matmul.cpp runs it: the tokens packed in groups of
// kGemmCols (the AVX2 table's gemm_pack, which the avx512 table shares), one gemm call of
// all `rows` (at most kGemmRows) per group. Every output against ref's vec_dot with the
// quantized dots' bound; the padding columns of `out` stay untouched.
void check_gemm(const Gemm& g, const std::vector<std::vector<uint8_t>>& rows,
                const std::vector<std::vector<uint8_t>>& acts, int64_t n) {
  const GgmlType at = ref_kernels().of(g.type).vec_dot_type;
  const TypeKernels& ak = avx2_kernels()->of(at);
  const auto nr = static_cast<int>(rows.size());
  const auto n_tokens = static_cast<int>(acts.size());
  std::vector<uint8_t> w, a;
  for (const auto& r : rows) w.insert(w.end(), r.begin(), r.end());
  for (const auto& c : acts) a.insert(a.end(), c.begin(), c.end());
  const size_t w_stride = row_bytes(g.type, n);
  const size_t a_stride = row_bytes(at, n);
  const size_t out_stride = static_cast<size_t>(nr) + 3;
  std::vector<float> out(static_cast<size_t>(n_tokens) * out_stride, -7.0f);
  std::vector<uint8_t> packed(ak.gemm_pack_bytes(n));
  for (int t0 = 0; t0 < n_tokens; t0 += kGemmCols) {
    const int nc = std::min(kGemmCols, n_tokens - t0);
    ak.gemm_pack(n, a.data() + static_cast<size_t>(t0) * a_stride, a_stride, nc, packed.data());
    g.fn(n, w.data(), w_stride, nr, packed.data(), nc,
         out.data() + static_cast<size_t>(t0) * out_stride, out_stride);
  }
  for (int c = 0; c < n_tokens; ++c) {
    for (size_t r = 0; r < out_stride; ++r) {
      const float got = out[static_cast<size_t>(c) * out_stride + r];
      INFO("row " << r << " of " << nr << ", token " << c << " of " << n_tokens);
      if (r >= static_cast<size_t>(nr)) {
        CHECK(got == -7.0f);
        continue;
      }
      const auto& wr = rows[r];
      const auto& ac = acts[static_cast<size_t>(c)];
      const float expected = ref_kernels().of(g.type).vec_dot(n, wr.data(), ac.data());
      const double bound = 1e-5 * dot_magnitude(g.type, wr, ac, n) + 1e-30;
      INFO("ref " << expected << ", avx512 gemm " << got << ", bound " << bound);
      REQUIRE(std::isfinite(expected));
      CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
    }
  }
}

TEST_CASE("AVX-512 gemm kernels match ref on quantized random rows, every tile shape", "[avx512]") {
  if (!has_avx512_or_warn()) return;
  for (const Gemm& g : kGemms) {
    const GgmlType at = ref_kernels().of(g.type).vec_dot_type;
    const bool k_quant = traits(g.type).block_size == kQK_K;
    for (int64_t n : k_quant ? test::kSuperBlockLengths : test::kBlockLengths) {
      Rng rng(static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(g.type));
      std::vector<std::vector<uint8_t>> rows, acts;
      for (int r = 0; r < kGemmRows; ++r)
        rows.push_back(
            test::quantize(g.type, make_row(r % 2 ? RowKind::kHeavy : RowKind::kBell, rng, n)));
      for (int c = 0; c < 19; ++c) {
        const RowKind kind = c % 5 == 1   ? RowKind::kSignTie
                             : c % 5 == 2 ? RowKind::kOneHot
                                          : RowKind::kBell;
        acts.push_back(test::quantize(at, make_row(kind, rng, n)));
      }
      for (int nr = 1; nr <= kGemmRows; ++nr) {
        for (int n_tokens : kTokenCounts) {
          INFO("type " << traits(g.type).name << ", n " << n << ", nr " << nr << ", tokens "
                       << n_tokens);
          check_gemm(g, {rows.begin(), rows.begin() + nr}, {acts.begin(), acts.begin() + n_tokens},
                     n);
        }
      }
    }
  }
}

TEST_CASE("AVX-512 gemm kernels match ref on adversarial blocks, every tile shape", "[avx512]") {
  if (!has_avx512_or_warn()) return;
  for (const Gemm& g : kGemms) {
    const GgmlType at = ref_kernels().of(g.type).vec_dot_type;
    const int64_t n = traits(g.type).block_size == kQK_K ? 768 : 96;
    for (int extreme = 0; extreme < 2; ++extreme) {  // activations all +-127
      Rng rng(91 + static_cast<uint64_t>(extreme) * 3 + static_cast<uint64_t>(g.type) * 101);
      // rows: all 0xFF (largest quants, 5th bits, scales and mins), all 0x00 (lowest
      // quants), random bytes, twice, with extreme f16 scales (raw_weight_row)
      std::vector<std::vector<uint8_t>> rows, acts;
      for (int rep = 0; rep < 2; ++rep) {
        for (ByteMode mode :
             {ByteMode::kAllOnes, ByteMode::kAllZero, ByteMode::kRandom, ByteMode::kRandom})
          rows.push_back(raw_weight_row(g.type, n, rng, mode));
      }
      for (int c = 0; c < 19; ++c) acts.push_back(raw_activation_row(at, n, rng, extreme != 0));
      for (int nr = 1; nr <= kGemmRows; ++nr) {
        for (int n_tokens : kTokenCounts) {
          INFO("type " << traits(g.type).name << ", extreme activations " << extreme << ", nr "
                       << nr << ", tokens " << n_tokens);
          check_gemm(g, {rows.begin(), rows.begin() + nr}, {acts.begin(), acts.begin() + n_tokens},
                     n);
        }
      }
    }
  }
}

// ---------------------------------------------------------------- the table

TEST_CASE("The AVX-512 table uses the AVX-512 dots it registers", "[avx512]") {
  const KernelTable* avx512 = avx512_kernels();
  if (!has_avx512_or_warn()) {
    CHECK(avx512 == nullptr);
    return;
  }
  REQUIRE(avx512 != nullptr);
  for (const Dot& d : kQuantDots) {
    INFO("type " << traits(d.type).name);
    CHECK(avx512->of(d.type).vec_dot == d.fn);
  }
  // F32 and F16 stay AVX2's (their 512-bit versions measured slower); tested above all the same.
  CHECK(avx512->of(GgmlType::F32).vec_dot == avx2_kernels()->of(GgmlType::F32).vec_dot);
  CHECK(avx512->of(GgmlType::F16).vec_dot == avx2_kernels()->of(GgmlType::F16).vec_dot);
  for (const Gemm& g : kGemms) {
    INFO("gemm of type " << traits(g.type).name);
    CHECK(avx512->of(g.type).gemm == g.fn);
  }
  CHECK(avx512->of(GgmlType::BF16).vec_dot ==
        (cpu_has_avx512_bf16() ? avx512::vec_dot_bf16_dpbf16 : avx512::vec_dot_bf16));
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    INFO("type id " << id);
    CHECK(avx512->types[id].vec_dot_type == ref_kernels().types[id].vec_dot_type);
    CHECK((avx512->types[id].vec_dot == nullptr) == (ref_kernels().types[id].vec_dot == nullptr));
  }
}

}  // namespace
}  // namespace runnel
