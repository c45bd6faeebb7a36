// The WebAssembly SIMD128 kernel set against kernels/ref, entry by entry (compiled only
// into the wasm build, where SIMD128 is always available): quantizers, quantized dots,
// and the tables and their selection. Bounds:
//  - Quantizers (Q8_0, Q8_1, Q8_K): bit-exact with ref on random and adversarial rows.
//  - Quantized dots (test::kQuantWeightTypes: the legacy blocks, k-quants, MXFP4, IQ4_NL,
//    IQ4_XS): |simd128 - ref| <= 1e-5 * S + 1e-30, S = sum_i |w_i a_i| over the decoded rows
//    plus, for Q4_1 / Q5_1, sum_b |m_b s_b| (the min terms). Both sides do exact integer
//    sums per block; only the float accumulation order differs.
// Float rows: simd128_float_test.cpp; float ops: simd128_ops_test.cpp; x8 products:
// simd128_x8_test.cpp.
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
#include "tests/kernels/lut4_test_util.h"
#include "tests/kernels/test_util.h"
#include "tests/kernels/wasm/wasm_test_tables.h"

namespace runnel {
namespace {

using test::Rng;

const KernelTable& simd() {
  return test::simd128_table();
}
const KernelTable& relaxed() {
  return test::relaxed_table();
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
  SECTION("MXFP4, IQ4_NL, IQ4_XS: every code, -127 x 127, subnormal and negative scales") {
    for (const test::Lut4Case& c : test::lut4_hand_cases()) {
      INFO(c.what);
      CHECK(simd().of(c.type).vec_dot(c.n, c.w.data(), c.a.data()) == c.expected);
    }
    // Four blocks and a tail block: the vector steps and the scalar tail
    const auto cases = test::lut4_hand_cases();
    for (const test::Lut4Case& c : cases) {
      if (c.n != 32) continue;
      std::vector<uint8_t> w, a;
      for (int k = 0; k < 5; ++k) {
        w.insert(w.end(), c.w.begin(), c.w.end());
        a.insert(a.end(), c.a.begin(), c.a.end());
      }
      INFO(c.what << ", five times");
      CHECK(simd().of(c.type).vec_dot(160, w.data(), a.data()) == 5.0f * c.expected);
    }
  }
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
  CHECK(replaced == 21);  // 16 dots + 3 activation quantizers + the f16 row decoder / encoder
  CHECK(t->of(GgmlType::F16).dequantize_row == simd128::dequantize_row_f16);
  CHECK(t->of(GgmlType::F16).quantize_row == simd128::quantize_row_f16);
  int x8_types = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& x = t->types[id];
    CHECK((x.repack_x8 != nullptr) == (x.gemm_x8 != nullptr));
    CHECK((x.repack_x8 != nullptr) == (x.unpack_x8_row != nullptr));
    x8_types += x.repack_x8 != nullptr;
  }
  CHECK(x8_types == 10);  // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q6_K, MXFP4, IQ4_NL, IQ4_XS
  // Only Q4_0 and Q5_0 read the activation's block sums (their -8 / -16 offsets); MoE's
  // routed experts, which have none, can use the other x8 products.
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const bool zero_point = id == static_cast<uint32_t>(GgmlType::Q4_0) ||
                            id == static_cast<uint32_t>(GgmlType::Q5_0);
    INFO("type id " << id);
    CHECK(t->types[id].gemm_x8_reads_sums == zero_point);
  }
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
