// The AVX2 kernel set against kernels/ref, entry by entry (skipped with a warning on
// CPUs without AVX2 + FMA + F16C).
//  - Quantizers (Q8_0, Q8_1, Q8_K): bit-exact with ref on random and adversarial rows.
//  - Quantized dots: |avx2 - ref| <= 1e-5 * S + 1e-30, S = sum_i |w_i a_i| over the
//    decoded rows plus the min terms (Q4_1 / Q5_1: sum_b |m_b s_b|; Q2_K / Q4_K / Q5_K:
//    sum_i |dmin m a_i|). Both sides do exact integer sums per block; only the float
//    accumulation order differs.
//  - Float dots (F32, F16): |avx2 - ref| <= (n / 32 + 16) * 2^-24 * S + 1e-30: 32 float
//    FMA chains of n / 32 steps, a 5-level reduction and up to 7 tail adds, against ref's
//    double sum rounded once.
//  - f16 rows (quantize_row / dequantize_row): bit-exact with ref for every input, NaNs
//    included.
#include <algorithm>
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
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx512_dots.h"
#include "kernels/x86/x86.h"
#include "tests/kernels/float_gemm_test_util.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/lut4_test_util.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::Rng;

const KernelTable* avx2_or_warn() {
  const KernelTable* t = avx2_kernels();
  if (t == nullptr) WARN("CPU lacks AVX2/FMA/F16C: AVX2 kernel tests skipped");
  return t;
}

using test::ByteMode;
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

TEST_CASE("AVX2 activation quantizers give the same bytes as ref", "[avx2]") {
  const KernelTable* avx2 = avx2_or_warn();
  if (avx2 == nullptr) return;
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
    const bool k_quant = type == GgmlType::Q8_K;
    for (int64_t n : k_quant ? kLengths : kLegacyLengths) {
      for (RowKind kind : kRowKinds) {
        Rng rng(static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(kind));
        const std::vector<float> x = make_row(kind, rng, n);
        INFO("type " << traits(type).name << ", n " << n << ", row kind "
                     << static_cast<int>(kind));
        const auto expected = quantize_with(ref_kernels(), type, x);
        const auto got = quantize_with(*avx2, type, x);
        REQUIRE(got.size() == expected.size());
        CHECK(std::memcmp(got.data(), expected.data(), got.size()) == 0);
      }
    }
  }
}

// ---------------------------------------------------------------- dots of quantized rows

void check_dot(const KernelTable& avx2, GgmlType wt, const std::vector<uint8_t>& w,
               const std::vector<uint8_t>& a, int64_t n) {
  const float expected = ref_kernels().of(wt).vec_dot(n, w.data(), a.data());
  const float got = avx2.of(wt).vec_dot(n, w.data(), a.data());
  const double bound = 1e-5 * dot_magnitude(wt, w, a, n) + 1e-30;
  INFO("ref " << expected << ", avx2 " << got << ", bound " << bound);
  REQUIRE(std::isfinite(expected));
  CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
}

TEST_CASE("AVX2 quantized dots match ref on quantized random rows", "[avx2]") {
  const KernelTable* avx2 = avx2_or_warn();
  if (avx2 == nullptr) return;
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
        check_dot(*avx2, wt, w, a, n);
        // The real magnitude of the result, so a kernel returning 0 cannot pass.
        if (seed < 4) CHECK(std::fabs(avx2->of(wt).vec_dot(n, w.data(), a.data())) > 0.0f);
      }
    }
  }
}

TEST_CASE("AVX2 quantized dots match ref on adversarial blocks", "[avx2]") {
  const KernelTable* avx2 = avx2_or_warn();
  if (avx2 == nullptr) return;
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
          const auto w = raw_weight_row(wt, n, rng, static_cast<ByteMode>(byte_mode));
          const auto a = raw_activation_row(at, n, rng, extreme != 0);
          check_dot(*avx2, wt, w, a, n);
        }
      }
    }
  }
}

TEST_CASE("AVX2 dots: hand-checked extreme blocks", "[avx2]") {
  const KernelTable* avx2 = avx2_or_warn();
  if (avx2 == nullptr) return;
  SECTION("Q8_0 weight -128 against activation 127, d = 1") {
    ref::BlockQ8_0 w{}, a{};
    w.d = a.d = 0x3C00;
    for (int j = 0; j < 32; ++j) {
      w.qs[j] = -128;
      a.qs[j] = 127;
    }
    CHECK(avx2->of(GgmlType::Q8_0).vec_dot(32, &w, &a) == -128.0f * 127.0f * 32.0f);
  }
  SECTION("Q4_0 nibbles 0 (-8) against -127, d = 0.5, da = 2") {
    ref::BlockQ4_0 w{};
    ref::BlockQ8_0 a{};
    w.d = 0x3800;
    a.d = 0x4000;
    for (auto& q : a.qs) q = -127;
    CHECK(avx2->of(GgmlType::Q4_0).vec_dot(32, &w, &a) == 8.0f * 127.0f * 32.0f);
  }
  SECTION("Q5_0 with every fifth bit set and nibble 15: q - 16 = 15") {
    ref::BlockQ5_0 w{};
    ref::BlockQ8_0 a{};
    w.d = a.d = 0x3C00;
    std::memset(w.qh, 0xFF, sizeof w.qh);
    std::memset(w.qs, 0xFF, sizeof w.qs);
    for (int j = 0; j < 32; ++j) a.qs[j] = static_cast<int8_t>(j - 16);
    // 15 * sum(j - 16) = 15 * -16 = -240
    CHECK(avx2->of(GgmlType::Q5_0).vec_dot(32, &w, &a) == -240.0f);
  }
}

// ---------------------------------------------------------------- float dots

TEST_CASE("AVX2 F32, F16 and BF16 dots match ref", "[avx2]") {
  const KernelTable* avx2 = avx2_or_warn();
  if (avx2 == nullptr) return;
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
        const double bound = (static_cast<double>(n) / 32 + 16) * 0x1p-24 * s + 1e-30;
        const float expected = ref_kernels().of(t).vec_dot(n, w.data(), a.data());
        const float got = avx2->of(t).vec_dot(n, w.data(), a.data());
        INFO("ref " << expected << ", avx2 " << got << ", bound " << bound);
        CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
        CHECK(got != 0.0f);
      }
    }
  }
}

TEST_CASE("AVX2 dot_f16_f32 gives vec_dot_f16's bits, its activation widened once", "[avx2]") {
  // Attention widens a query (or a row of probabilities) once and dots it with every K
  // slice (V row): a batched request and a lone one must keep the same scores.
  if (avx2_or_warn() == nullptr) return;
  for (const FloatOps* ops : {avx2_float_ops(), avx512_float_ops()}) {
    if (ops == nullptr) continue;
    CHECK(ops->dot_f16_f32 == avx2::dot_f16_f32);
  }
  for (int64_t n : {1, 7, 8, 31, 32, 33, 64, 100, 128, 576, 4096}) {
    for (int kind = 0; kind < 5; ++kind) {
      INFO("n " << n << ", kind " << kind);
      const auto [w, a] = test::f16_dot_rows(n, kind);
      std::vector<float> a_wide(static_cast<size_t>(n));
      avx2::dequantize_row_f16(a.data(), a_wide.data(), n);
      const float want = avx2::vec_dot_f16(n, w.data(), a.data());
      const float got =
          avx2::dot_f16_f32(n, reinterpret_cast<const uint16_t*>(w.data()), a_wide.data());
      INFO("vec_dot_f16 " << want << ", dot_f16_f32 " << got);
      if (std::isnan(want)) {
        CHECK(std::isnan(got));  // a NaN's payload may differ
      } else {
        CHECK(std::memcmp(&got, &want, sizeof got) == 0);
      }
    }
  }
}

TEST_CASE("AVX2 dot_f16_f32_rows gives dot_f16_f32's bits for every row", "[avx2]") {
  // Attention's scores (n K slices of head_dim) and outputs (head_dim V rows of n) go
  // through it: a row's result must not depend on its neighbours or on where it falls in
  // a group of eight.
  if (avx2_or_warn() == nullptr) return;
  for (const FloatOps* ops : {avx2_float_ops(), avx512_float_ops()}) {
    if (ops == nullptr) continue;
    CHECK(ops->dot_f16_f32_rows == avx2::dot_f16_f32_rows);
  }
  for (int64_t n : {1, 7, 8, 31, 32, 33, 64, 100, 128, 576}) {
    for (int n_rows : {1, 7, 8, 9, 16, 23}) {
      for (int kind = 0; kind < 5; ++kind) {
        INFO("n " << n << ", rows " << n_rows << ", kind " << kind);
        // rows of one F16DotRows pattern each, with gaps between them (a K slice's stride)
        const int64_t stride = n + 5;
        std::vector<uint16_t> w(static_cast<size_t>(stride * n_rows));
        for (int r = 0; r < n_rows; ++r) {
          const auto [row, unused] = test::f16_dot_rows(n, (kind + r) % 5);
          std::memcpy(w.data() + r * stride, row.data(), static_cast<size_t>(n) * sizeof(uint16_t));
        }
        const auto [unused, a] = test::f16_dot_rows(n, kind);
        std::vector<float> a_wide(static_cast<size_t>(n));
        avx2::dequantize_row_f16(a.data(), a_wide.data(), n);
        std::vector<float> out(static_cast<size_t>(n_rows), -1.0f);
        avx2::dot_f16_f32_rows(n, w.data(), stride, n_rows, a_wide.data(), out.data());
        for (int r = 0; r < n_rows; ++r) {
          const float want = avx2::dot_f16_f32(n, w.data() + r * stride, a_wide.data());
          INFO("row " << r << ": dot_f16_f32 " << want << ", rows " << out[r]);
          if (std::isnan(want)) {
            CHECK(std::isnan(out[r]));
          } else {
            CHECK(std::memcmp(&out[r], &want, sizeof want) == 0);
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- f16 rows

// The x86 tables that should hold the AVX2 f16 rows: AVX2's, and AVX-512's built on it.
std::vector<const KernelTable*> f16_row_tables() {
  std::vector<const KernelTable*> tables;
  for (const KernelTable* t : {avx2_kernels(), avx512_kernels()}) {
    if (t != nullptr) tables.push_back(t);
  }
  return tables;
}

TEST_CASE("AVX2 f16 rows encode exactly like ref: every half, its neighbours and midpoints",
          "[avx2]") {
  if (avx2_or_warn() == nullptr) return;
  // quantize_row_f16 (the KV cache's K stores, attention's query rows) must round as
  // fp32_to_fp16 does (inputs: test_util.h).
  const std::vector<float> x = test::f16_encode_inputs();
  std::vector<uint16_t> got(x.size()), want(x.size());
  const int64_t n = static_cast<int64_t>(x.size());
  avx2::quantize_row_f16(x.data(), got.data(), n);
  ref_kernels().of(GgmlType::F16).quantize_row(x.data(), want.data(), n);
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) {
      INFO("float bits " << test::bits_of(x[i]) << ": ref " << want[i] << ", avx2 " << got[i]);
      CHECK(got[i] == want[i]);
    }
  }
  CHECK(bad == 0);
  // Rows shorter than a vector, and a vector plus a tail, leave what follows them alone.
  for (int64_t len = 1; len <= 17; ++len) {
    INFO("n " << len);
    std::vector<uint16_t> short_row(static_cast<size_t>(len) + 1, 0xABCD);
    avx2::quantize_row_f16(x.data(), short_row.data(), len);
    CHECK(std::equal(short_row.begin(), short_row.end() - 1, want.begin()));
    CHECK(short_row.back() == 0xABCD);
  }
  for (const KernelTable* t : f16_row_tables()) {
    INFO("table " << t->isa);
    CHECK(t->of(GgmlType::F16).quantize_row == avx2::quantize_row_f16);
  }
}

TEST_CASE("AVX2 f16 rows decode exactly like ref, all 65536 halfs", "[avx2]") {
  if (avx2_or_warn() == nullptr) return;
  // Bit for bit, NaNs included: F16C quiets a signalling NaN half, ref keeps its bits.
  std::vector<uint16_t> h(65536 + 5);  // + a tail shorter than a vector
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  const int64_t n = static_cast<int64_t>(h.size());
  std::vector<float> got(h.size()), want(h.size());
  avx2::dequantize_row_f16(h.data(), got.data(), n);
  ref_kernels().of(GgmlType::F16).dequantize_row(h.data(), want.data(), n);
  int bad = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (test::bits_of(got[i]) != test::bits_of(want[i]) && bad++ < 5) {
      INFO("f16 bits " << h[i] << ": ref " << test::bits_of(want[i]) << ", avx2 "
                       << test::bits_of(got[i]));
      CHECK(test::bits_of(got[i]) == test::bits_of(want[i]));
    }
  }
  CHECK(bad == 0);
  for (int64_t len = 1; len <= 17; ++len) {
    INFO("n " << len);
    const size_t first = 0x7C00 - 4;  // inf and the NaNs after it land in vector and tail lanes
    std::vector<float> short_row(static_cast<size_t>(len) + 1, -7.0f);
    avx2::dequantize_row_f16(h.data() + first, short_row.data(), len);
    for (int64_t i = 0; i < len; ++i)
      CHECK(test::bits_of(short_row[static_cast<size_t>(i)]) == test::bits_of(want[first + i]));
    CHECK(short_row.back() == -7.0f);
  }
  for (const KernelTable* t : f16_row_tables()) {
    INFO("table " << t->isa);
    CHECK(t->of(GgmlType::F16).dequantize_row == avx2::dequantize_row_f16);
  }
}

// ---------------------------------------------------------------- table and dispatch

TEST_CASE("The AVX2 table is the ref table with the AVX2 entries swapped in", "[avx2]") {
  const KernelTable* avx2 = avx2_or_warn();
  if (avx2 == nullptr) return;
  CHECK(avx2->isa == "avx2");
  int replaced = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& r = ref_kernels().types[id];
    const TypeKernels& x = avx2->types[id];
    INFO("type id " << id);
    CHECK(x.supported == r.supported);
    CHECK(x.vec_dot_type == r.vec_dot_type);
    CHECK((x.vec_dot == nullptr) == (r.vec_dot == nullptr));
    replaced += (x.vec_dot != r.vec_dot) + (x.quantize_row != r.quantize_row) +
                (x.quantize_row_weighted != r.quantize_row_weighted) +
                (x.dequantize_row != r.dequantize_row);
  }
  // 16 dots + 3 activation quantizers + Q2_K, Q4_K, Q5_K, Q6_K plain and weighted + Q3_K
  // weighted + F16's row encode and decode
  CHECK(replaced == 30);
  const TypeKernels& f16 = avx2->of(GgmlType::F16);
  CHECK(f16.quantize_row == avx2::quantize_row_f16);
  CHECK(f16.dequantize_row == avx2::dequantize_row_f16);
  REQUIRE(avx2_float_ops() != nullptr);
  CHECK(avx2_float_ops()->isa == "avx2");
}

TEST_CASE("The AVX-512 table is the AVX2 table with the VNNI gemm and dot entries swapped in",
          "[avx2]") {
  const KernelTable* avx512 = avx512_kernels();
  if (avx512 == nullptr) {
    WARN("CPU lacks AVX-512 F/BW/VL/DQ/VNNI: AVX-512 table test skipped");
    CHECK_FALSE(select_kernels("avx512"));
    return;
  }
  const KernelTable* avx2 = avx2_kernels();
  REQUIRE(avx2 != nullptr);
  CHECK(avx512->isa == "avx512");
  int replaced = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& a = avx2->types[id];
    const TypeKernels& x = avx512->types[id];
    INFO("type id " << id);
    CHECK((x.vec_dot == nullptr) == (a.vec_dot == nullptr));  // which: avx512_test.cpp
    // The k-quant model quantizers run 16 lanes instead of 8 (group_fits_test.cpp); Q3_K's
    // plain one is ref's in both.
    const bool k_quant_model = id == static_cast<uint32_t>(GgmlType::Q2_K) ||
                               id == static_cast<uint32_t>(GgmlType::Q4_K) ||
                               id == static_cast<uint32_t>(GgmlType::Q5_K) ||
                               id == static_cast<uint32_t>(GgmlType::Q6_K);
    const bool q3_k = id == static_cast<uint32_t>(GgmlType::Q3_K);
    CHECK((x.quantize_row == a.quantize_row) != k_quant_model);
    CHECK((x.quantize_row_weighted == a.quantize_row_weighted) != (k_quant_model || q3_k));
    CHECK(x.dequantize_row == a.dequantize_row);  // F16's is the AVX2 one
    CHECK(x.gemm_pack == a.gemm_pack);
    // BF16 prompts keep the per-token vdpbf16ps dot where the CPU has it (faster there).
    const bool dropped = id == static_cast<uint32_t>(GgmlType::BF16) && cpu_has_avx512_bf16();
    CHECK((x.gemm == nullptr) == (a.gemm == nullptr || dropped));
    replaced += x.gemm != a.gemm && !dropped;
  }
  // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, MXFP4, IQ4_NL, IQ4_XS (Q2_K, Q3_K and
  // the float types keep AVX2's)
  CHECK(replaced == 11);
  REQUIRE(avx512_float_ops() != nullptr);
  CHECK(avx512_float_ops()->isa == "avx512");
}

TEST_CASE("select_kernels picks the widest x86 set automatically and can still force ref",
          "[avx2]") {
  const KernelTable* avx2 = avx2_or_warn();
  if (avx2 == nullptr) {
    CHECK_FALSE(select_kernels("avx2"));
    return;
  }
  CHECK(cpu_has_avx2());
  CHECK(select_kernels(""));
  const KernelTable* best = cpu_has_avx512() ? avx512_kernels() : avx2;
  CHECK(&kernels() == best);
  CHECK(kernels().isa == (cpu_has_avx512() ? "avx512" : "avx2"));
  CHECK(float_ops().isa == kernels().isa);
  if (cpu_has_avx512()) {
    CHECK(select_kernels("avx512"));
    CHECK(&kernels() == avx512_kernels());
  }
  CHECK(select_kernels("ref"));
  CHECK(&kernels() == &ref_kernels());
  CHECK(&float_ops() == &ref_float_ops());
  CHECK(select_kernels("avx2"));
  CHECK(&kernels() == avx2);
  CHECK_FALSE(select_kernels("AVX2"));
  CHECK(&kernels() == avx2);     // a failed selection leaves the choice alone
  CHECK(select_kernels("ref"));  // leave the process on the default for other tests
}

}  // namespace
}  // namespace runnel
