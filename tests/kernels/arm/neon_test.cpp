// The NEON kernel sets against kernels/ref, entry by entry: the baseline table (plain
// Advanced SIMD, every aarch64 CPU) and, where the CPU has the dot-product extension,
// the dotprod table (skipped with a warning elsewhere). Run under qemu-aarch64 by the
// `neon` stage of scripts/test.sh. Bounds:
//  - Quantizers (Q8_0, Q8_1, Q8_K): bit-exact with ref on random and adversarial rows.
//  - Quantized dots (test::kQuantWeightTypes: the legacy blocks, k-quants, MXFP4, IQ4_NL,
//    IQ4_XS): |neon - ref| <= 1e-5 * S + 1e-30, S = sum_i |w_i a_i| over the decoded rows
//    plus, for Q4_1 / Q5_1, sum_b |m_b s_b| (the min terms). Both sides do exact integer
//    sums per block; only the float accumulation order differs.
//  - Float dots (F32, F16, BF16): |neon - ref| <= (n / 32 + 16) * 2^-24 * S + 1e-30:
//    32 float FMA chains of n / 32 + 3 steps, a 5-level reduction and up to 7 tail adds,
//    against ref's double sum rounded once. The f16 widening is exact (every finite half).
//  - Float ops: silu, swiglu and softmax within 10 * 2^-24 relative + 1e-37 of ref: the
//    polynomial exp is within 1 ulp of e^x and glibc's expf within 0.5 (together
//    <= 3 * 2^-24 relative), and up to three more roundings follow on each side (1 + e,
//    the division, the multiply by up; softmax: 1 / sum and the multiply), each
//    <= 2^-24 relative: 9 * 2^-24 at worst. 1e-37 covers results in the subnormal range.
//    The other float ops are in neon_ops_test.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/arm/arm.h"
#include "kernels/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "kernels/ref/blocks.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/lut4_test_util.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::ByteMode;
using test::Rng;
using test::RowKind;

// The NEON tables this CPU runs: the baseline one always, the dotprod one if it can.
std::vector<const KernelTable*> neon_tables() {
  std::vector<const KernelTable*> tables = {neon_baseline_kernels()};
  if (const KernelTable* t = neon_dotprod_kernels()) {
    tables.push_back(t);
  } else {
    WARN("CPU lacks the dot-product extension: NEON dotprod kernel tests skipped");
  }
  return tables;
}

std::string table_name(const KernelTable* t) {
  return t == neon_dotprod_kernels() ? "neon (dotprod)" : "neon (baseline)";
}

const int64_t* lengths_of(GgmlType type) {
  return traits(type).block_size == kQK_K ? test::kSuperBlockLengths : test::kBlockLengths;
}
constexpr int kNumLengths = 4;

// ---------------------------------------------------------------- quantizers

TEST_CASE("NEON activation quantizers give the same bytes as ref", "[neon]") {
  const KernelTable& neon = *neon_baseline_kernels();  // the dotprod table shares them
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
    for (int li = 0; li < kNumLengths; ++li) {
      const int64_t n = lengths_of(type)[li];
      for (RowKind kind : test::kRowKinds) {
        Rng rng(static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(kind));
        const std::vector<float> x = test::make_row(kind, rng, n);
        INFO("type " << traits(type).name << ", n " << n << ", row kind "
                     << static_cast<int>(kind));
        const auto expected = test::quantize_with(ref_kernels(), type, x);
        const auto got = test::quantize_with(neon, type, x);
        REQUIRE(got.size() == expected.size());
        CHECK(std::memcmp(got.data(), expected.data(), got.size()) == 0);
      }
    }
  }
}

// ---------------------------------------------------------------- quantized dots

void check_dot(const KernelTable& neon, GgmlType wt, const std::vector<uint8_t>& w,
               const std::vector<uint8_t>& a, int64_t n) {
  const float expected = ref_kernels().of(wt).vec_dot(n, w.data(), a.data());
  const float got = neon.of(wt).vec_dot(n, w.data(), a.data());
  const double bound = 1e-5 * test::dot_magnitude(wt, w, a, n) + 1e-30;
  INFO("ref " << expected << ", neon " << got << ", bound " << bound);
  REQUIRE(std::isfinite(expected));
  CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
}

TEST_CASE("NEON quantized dots match ref on quantized random rows", "[neon]") {
  for (const KernelTable* neon : neon_tables()) {
    INFO("kernel set " << table_name(neon));
    for (GgmlType wt : test::kQuantWeightTypes) {
      const GgmlType at = ref_kernels().of(wt).vec_dot_type;
      for (int li = 0; li < kNumLengths; ++li) {
        const int64_t n = lengths_of(wt)[li];
        for (uint64_t seed = 0; seed < 6; ++seed) {
          INFO("type " << traits(wt).name << ", n " << n << ", seed " << seed);
          Rng rng(1000 + seed);
          const RowKind wk = seed % 2 ? RowKind::kHeavy : RowKind::kBell;
          const RowKind ak = seed == 4   ? RowKind::kSignTie
                             : seed == 5 ? RowKind::kOneHot
                                         : RowKind::kBell;
          const auto w = test::quantize(wt, test::make_row(wk, rng, n));
          const auto a = test::quantize(at, test::make_row(ak, rng, n));
          check_dot(*neon, wt, w, a, n);
          // The real magnitude of the result, so a kernel returning 0 cannot pass.
          if (seed < 4) CHECK(std::fabs(neon->of(wt).vec_dot(n, w.data(), a.data())) > 0.0f);
        }
      }
    }
  }
}

TEST_CASE("NEON quantized dots match ref on adversarial blocks", "[neon]") {
  for (const KernelTable* neon : neon_tables()) {
    INFO("kernel set " << table_name(neon));
    for (GgmlType wt : test::kQuantWeightTypes) {
      const GgmlType at = ref_kernels().of(wt).vec_dot_type;
      for (int li = 0; li < kNumLengths; ++li) {
        const int64_t n = lengths_of(wt)[li];
        for (ByteMode mode : {ByteMode::kRandom, ByteMode::kAllZero, ByteMode::kAllOnes}) {
          for (int extreme = 0; extreme < 2; ++extreme) {
            INFO("type " << traits(wt).name << ", n " << n << ", byte mode "
                         << static_cast<int>(mode) << ", extreme activations " << extreme);
            Rng rng(static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(mode) * 3 +
                    static_cast<uint64_t>(extreme));
            const auto w = test::raw_weight_row(wt, n, rng, mode);
            const auto a = test::raw_activation_row(at, n, rng, extreme != 0);
            check_dot(*neon, wt, w, a, n);
          }
        }
      }
    }
  }
}

TEST_CASE("NEON dots: hand-checked extreme blocks", "[neon]") {
  // Plain scopes, not SECTIONs: Catch runs a SECTION once per pass, i.e. for one table.
  for (const KernelTable* neon : neon_tables()) {
    INFO("kernel set " << table_name(neon));
    {  // Q8_0 weight -128 against activation 127, d = 1
      ref::BlockQ8_0 w{}, a{};
      w.d = a.d = 0x3C00;
      for (int j = 0; j < 32; ++j) {
        w.qs[j] = -128;
        a.qs[j] = 127;
      }
      CHECK(neon->of(GgmlType::Q8_0).vec_dot(32, &w, &a) == -128.0f * 127.0f * 32.0f);
    }
    {  // Q4_0 nibbles 0 (-8) against -127, d = 0.5, da = 2
      ref::BlockQ4_0 w{};
      ref::BlockQ8_0 a{};
      w.d = 0x3800;
      a.d = 0x4000;
      for (auto& q : a.qs) q = -127;
      CHECK(neon->of(GgmlType::Q4_0).vec_dot(32, &w, &a) == 8.0f * 127.0f * 32.0f);
    }
    {  // Q5_0 with every fifth bit set and nibble 15: q - 16 = 15
      ref::BlockQ5_0 w{};
      ref::BlockQ8_0 a{};
      w.d = a.d = 0x3C00;
      std::memset(w.qh, 0xFF, sizeof w.qh);
      std::memset(w.qs, 0xFF, sizeof w.qs);
      for (int j = 0; j < 32; ++j) a.qs[j] = static_cast<int8_t>(j - 16);
      CHECK(neon->of(GgmlType::Q5_0).vec_dot(32, &w, &a) == -240.0f);  // 15 * sum(j - 16)
    }
    {  // Q4_K all 0xFF: q 15, scales and mins 63, against 127
      ref::BlockQ4_K w;
      std::memset(&w, 0xFF, sizeof w);
      w.d = w.dmin = 0x3C00;
      ref::BlockQ8_K a{};
      a.d = 1.0f;
      for (auto& q : a.qs) q = 127;
      for (auto& s : a.bsums) s = 16 * 127;
      // 8 * 63 * 15 * 127 * 32 - 16 * (16 * 127) * 63, all exact in float
      CHECK(neon->of(GgmlType::Q4_K).vec_dot(256, &w, &a) == 28675584.0f);
    }
    {  // Q6_K all 0xFF: q - 32 = 31, scales -1, against -127
      ref::BlockQ6_K w;
      std::memset(&w, 0xFF, sizeof w);  // int8 scales 0xFF = -1
      w.d = 0x3C00;
      ref::BlockQ8_K a{};
      a.d = 1.0f;
      for (auto& q : a.qs) q = -127;
      for (auto& s : a.bsums) s = 16 * -127;
      CHECK(neon->of(GgmlType::Q6_K).vec_dot(256, &w, &a) == 256.0f * 31.0f * 127.0f);
    }
    // MXFP4, IQ4_NL, IQ4_XS: every code, -127 x 127, subnormal and negative scales
    for (const test::Lut4Case& c : test::lut4_hand_cases()) {
      INFO(c.what);
      CHECK(neon->of(c.type).vec_dot(c.n, c.w.data(), c.a.data()) == c.expected);
    }
  }
}

// ---------------------------------------------------------------- float dots

TEST_CASE("NEON f16 widening is exact for every finite half", "[neon]") {
  // w = 8 copies of h, a = 1 in lanes 0 and 4 (both halves of the 8-wide conversion):
  // the dot is exactly 2h.
  const auto dot = neon_kernels()->of(GgmlType::F16).vec_dot;
  uint16_t a[8] = {};
  a[0] = a[4] = 0x3C00;
  int mismatches = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00u) == 0x7C00u) continue;  // inf, NaN
    uint16_t w[8];
    for (auto& v : w) v = static_cast<uint16_t>(h);
    const float expected = 2.0f * fp16_to_fp32(static_cast<uint16_t>(h));
    if (dot(8, w, a) != expected) ++mismatches;  // (+0 and -0 compare equal)
  }
  CHECK(mismatches == 0);
}

TEST_CASE("NEON F32, F16 and BF16 dots match ref", "[neon]") {
  const KernelTable& neon = *neon_kernels();  // one float set in both tables
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    for (int64_t n : {1, 7, 8, 31, 32, 33, 64, 100, 576, 4096}) {
      for (int kind = 0; kind < 4; ++kind) {
        INFO("type " << traits(t).name << ", n " << n << ", kind " << kind);
        Rng rng(static_cast<uint64_t>(n) * 13 + static_cast<uint64_t>(kind));
        std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
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
            case 2:  // the f16 extremes, no inf
              x[i] = 65504.0f * (i % 2 ? 1.0f : -1.0f);
              y[i] = rng.symmetric() * 60000.0f;
              break;
            default:  // f16 subnormals
              x[i] = rng.symmetric() * 1e-6f;
              y[i] = rng.symmetric() * 1e-3f;
              break;
          }
        }
        const auto w = test::quantize(t, x);
        const auto a = test::quantize(t, y);
        const auto wd = test::dequantize(t, w, n);
        const auto ad = test::dequantize(t, a, n);
        double s = 0.0;
        for (size_t i = 0; i < wd.size(); ++i) s += std::fabs(static_cast<double>(wd[i]) * ad[i]);
        const double bound = (static_cast<double>(n) / 32 + 16) * 0x1p-24 * s + 1e-30;
        const float expected = ref_kernels().of(t).vec_dot(n, w.data(), a.data());
        const float got = neon.of(t).vec_dot(n, w.data(), a.data());
        INFO("ref " << expected << ", neon " << got << ", bound " << bound);
        CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
        CHECK(got != 0.0f);
      }
    }
  }
}

// ---------------------------------------------------------------- float ops

const int64_t kOpLengths[] = {1, 3, 4, 7, 64, 100, 4099};

// |got - want| <= rel * |want| + abs elementwise; equal infinities and NaN positions.
void check_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                 double abs) {
  REQUIRE(got.size() == want.size());
  int bad = 0;
  double worst = 0.0;  // in units of rel * |want|
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
      bad += !same;
      continue;
    }
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double bound = rel * std::fabs(static_cast<double>(want[i])) + abs;
    if (!(err <= bound)) {
      ++bad;
      UNSCOPED_INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    }
    if (want[i] != 0.0f)
      worst = std::max(worst, err / (rel * std::fabs(static_cast<double>(want[i]))));
  }
  INFO("largest error " << worst << " of the relative bound");
  CHECK(bad == 0);
}

TEST_CASE("NEON silu and swiglu match ref", "[neon]") {
  const FloatOps& ops = *neon_float_ops();
  for (int64_t n : kOpLengths) {
    INFO("n " << n);
    Rng rng(static_cast<uint64_t>(n) + 77);
    auto x = test::make_row(RowKind::kBell, rng, n);
    for (auto& v : x) v *= 8.0f;
    // exp overflow and underflow on both sides, and exact zeros
    const float specials[] = {-100.0f, 100.0f, 0.0f, -0.0f, -88.5f, 88.5f, -87.0f, 1e-30f, -30.0f};
    for (size_t i = 0; i < x.size() && i < sizeof specials / sizeof specials[0]; ++i) {
      x[i] = specials[i];
    }
    const auto up = test::make_row(RowKind::kHeavy, rng, n);
    std::vector<float> got(x.size()), want(x.size());
    ops.silu(x.data(), got.data(), n);
    ref_float_ops().silu(x.data(), want.data(), n);
    check_close(got, want, 10 * 0x1p-24, 1e-37);
    if (n > 1) CHECK(got[0] == 0.0f);    // -100 / (1 + inf)
    if (n > 1) CHECK(got[1] == 100.0f);  // 100 / (1 + e^-100)
    ops.swiglu(x.data(), up.data(), got.data(), n);
    ref_float_ops().swiglu(x.data(), up.data(), want.data(), n);
    check_close(got, want, 10 * 0x1p-24, 1e-37);
    got = x;  // in place
    ops.silu(got.data(), got.data(), n);
    ref_float_ops().silu(x.data(), want.data(), n);
    check_close(got, want, 10 * 0x1p-24, 1e-37);
  }
}

TEST_CASE("NEON silu over the whole exp range, NaN and infinities", "[neon]") {
  // -110 .. 110 in steps of 2^-8 (every exponent of e^-x from underflow to overflow).
  std::vector<float> x;
  for (int i = -110 * 256; i <= 110 * 256; ++i) x.push_back(static_cast<float>(i) / 256.0f);
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> got(x.size()), want(x.size());
  neon_float_ops()->silu(x.data(), got.data(), n);
  ref_float_ops().silu(x.data(), want.data(), n);
  check_close(got, want, 10 * 0x1p-24, 1e-37);
}

TEST_CASE("NEON softmax matches ref", "[neon]") {
  const FloatOps& ops = *neon_float_ops();
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t n : kOpLengths) {
    for (float spread : {1.0f, 30.0f}) {
      INFO("n " << n << ", spread " << spread);
      Rng rng(static_cast<uint64_t>(n) * 5 + static_cast<uint64_t>(spread));
      auto x = test::make_row(RowKind::kBell, rng, n);
      for (auto& v : x) v *= spread;
      for (int64_t i = 2; i < n; i += 7) x[static_cast<size_t>(i)] = ninf;  // masked entries
      if (n > 1) x[1] = 80.0f * spread;  // exp(x) alone would overflow
      auto got = x;
      auto want = x;
      ops.softmax(got.data(), n);
      ref_float_ops().softmax(want.data(), n);
      check_close(got, want, 10 * 0x1p-24, 1e-37);
      for (int64_t i = 2; i < n; i += 7) CHECK(got[static_cast<size_t>(i)] == 0.0f);
    }
  }
  std::vector<float> all_masked(6, ninf);
  ops.softmax(all_masked.data(), 6);
  for (float v : all_masked) CHECK(v == 0.0f);
}

// ---------------------------------------------------------------- tables and dispatch

// Entries of `t` that differ from `base` (vec_dot, quantize_row, gemm, gemm_pack and
// gemm_pack_bytes, each counted); every other field of every type must be base's, and a
// replaced entry never turns a present one into nullptr.
int replaced_entries(const KernelTable& t, const KernelTable& base) {
  int replaced = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& b = base.types[id];
    const TypeKernels& x = t.types[id];
    INFO("type id " << id);
    CHECK(x.supported == b.supported);
    CHECK(x.vec_dot_type == b.vec_dot_type);
    CHECK(x.dequantize_row == b.dequantize_row);
    CHECK((x.vec_dot == nullptr) == (b.vec_dot == nullptr));
    CHECK((b.gemm == nullptr || x.gemm != nullptr));
    CHECK((b.gemm_pack == nullptr || x.gemm_pack != nullptr));
    CHECK((x.gemm_pack == nullptr) == (x.gemm_pack_bytes == nullptr));
    CHECK(x.repack_x8 == b.repack_x8);
    CHECK(x.gemm_x8 == b.gemm_x8);
    replaced += (x.vec_dot != b.vec_dot) + (x.quantize_row != b.quantize_row) + (x.gemm != b.gemm) +
                (x.gemm_pack != b.gemm_pack) + (x.gemm_pack_bytes != b.gemm_pack_bytes) +
                (x.quantize_row_weighted != b.quantize_row_weighted);
  }
  return replaced;
}

TEST_CASE("The NEON tables are the ref table with the NEON entries swapped in", "[neon]") {
  CHECK(cpu_has_neon());
  const KernelTable* baseline = neon_baseline_kernels();
  REQUIRE(baseline != nullptr);
  CHECK(baseline->isa == "neon");
  // 16 dots + 3 activation quantizers + 16 gemm (13 quantized, 3 float) + 6 x (gemm_pack,
  // gemm_pack_bytes) + Q2_K, Q4_K, Q5_K, Q6_K model quantizers, plain and weighted, + Q3_K's
  // weighted one
  CHECK(replaced_entries(*baseline, ref_kernels()) == 56);
  const KernelTable* dotprod = neon_dotprod_kernels();
  CHECK((dotprod != nullptr) == cpu_has_dotprod());
  if (dotprod != nullptr) {
    CHECK(dotprod->isa == "neon");
    CHECK(replaced_entries(*dotprod, *baseline) == 26);  // the integer dots and the gemm
    CHECK(neon_kernels() == dotprod);
  } else {
    CHECK(neon_kernels() == baseline);
  }
  const FloatOps* ops = neon_float_ops();
  REQUIRE(ops != nullptr);
  CHECK(ops->isa == "neon");
  const FloatOps& r = ref_float_ops();
  CHECK(ops->silu != r.silu);
  CHECK(ops->swiglu != r.swiglu);
  CHECK(ops->softmax != r.softmax);
  CHECK(ops->rms_norm != r.rms_norm);
  CHECK(ops->gelu != r.gelu);
  CHECK(ops->geglu != r.geglu);
  CHECK(ops->softcap != r.softcap);
  CHECK(ops->add != r.add);
  CHECK(ops->mul != r.mul);
  CHECK(ops->scale != r.scale);
  CHECK(ops->axpy != r.axpy);
  CHECK(ops->rope_apply != r.rope_apply);
  CHECK(ops->rope_cos_sin == r.rope_cos_sin);  // double cos / sin once per position: ref's
}

TEST_CASE("select_kernels picks NEON automatically and can still force ref", "[neon]") {
  CHECK(select_kernels(""));
  CHECK(&kernels() == neon_kernels());
  CHECK(kernels().isa == "neon");
  CHECK(&float_ops() == neon_float_ops());
  CHECK(select_kernels("ref"));
  CHECK(&kernels() == &ref_kernels());
  CHECK(&float_ops() == &ref_float_ops());
  CHECK(select_kernels("neon"));  // what RUNNEL_ISA=neon asks for
  CHECK(&kernels() == neon_kernels());
  CHECK_FALSE(select_kernels("NEON"));
  CHECK_FALSE(select_kernels("avx2"));
  CHECK(&kernels() == neon_kernels());  // a failed selection leaves the choice alone
  CHECK(select_kernels("ref"));         // leave the process on the default for other tests
}

}  // namespace
}  // namespace runnel
