// The batched products of the AVX2 and AVX-512 kernel sets (gemm tiles, and the x8
// products of repacked rows) against ref's per-row dots, every tile shape, on random rows,
// adversarial blocks and hand-checked extremes: |tile - ref| <= 1e-5 * S + 1e-30 per
// output (float weights: the float dot bound), S as in avx2_test.cpp, which keeps the
// per-row entries and the tables. Skipped with a warning on CPUs without AVX2 + FMA + F16C.
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
#include "tests/kernels/x8_test_util.h"

namespace runnel {
namespace {

using test::Rng;

const KernelTable* avx2_or_warn() {
  const KernelTable* t = avx2_kernels();
  if (t == nullptr) WARN("CPU lacks AVX2/FMA/F16C: AVX2 gemm tests skipped");
  return t;
}

using test::ByteMode;
using test::dot_magnitude;
using test::kQuantWeightTypes;
using test::make_row;
using test::raw_activation_row;
using test::raw_weight_row;
using test::RowKind;
// 1, 3 and 7 (super-)blocks, and 4096
constexpr auto& kLengths = test::kSuperBlockLengths;
constexpr auto& kLegacyLengths = test::kBlockLengths;

// ---------------------------------------------------------------- batched products (gemm)

// Runs the table's gemm for `rows` (nr weight rows) against `acts` (nc activation rows)
// through the activation format's packing, and checks every output against ref's
// vec_dot with check_dot's bound. Cells outside the nr x nc tile must stay untouched.
void check_gemm(const KernelTable& avx2, GgmlType wt, const std::vector<std::vector<uint8_t>>& rows,
                const std::vector<std::vector<uint8_t>>& acts, int64_t n) {
  const GgmlType at = avx2.of(wt).vec_dot_type;
  const TypeKernels& ak = avx2.of(at);
  const auto nr = static_cast<int>(rows.size());
  const auto nc = static_cast<int>(acts.size());
  const size_t w_stride = row_bytes(wt, n);
  const size_t a_stride = row_bytes(at, n);
  std::vector<uint8_t> w, a;
  for (const auto& r : rows) w.insert(w.end(), r.begin(), r.end());
  for (const auto& c : acts) a.insert(a.end(), c.begin(), c.end());
  std::vector<uint8_t> packed(ak.gemm_pack_bytes(n));
  ak.gemm_pack(n, a.data(), a_stride, nc, packed.data());
  const size_t out_stride = static_cast<size_t>(nr) + 3;
  std::vector<float> out(static_cast<size_t>(kGemmCols) * out_stride, -7.0f);
  avx2.of(wt).gemm(n, w.data(), w_stride, nr, packed.data(), nc, out.data(), out_stride);
  for (int c = 0; c < kGemmCols; ++c) {
    for (size_t r = 0; r < out_stride; ++r) {
      const float got = out[static_cast<size_t>(c) * out_stride + r];
      INFO("row " << r << " of " << nr << ", token " << c << " of " << nc);
      if (c >= nc || r >= static_cast<size_t>(nr)) {
        CHECK(got == -7.0f);
        continue;
      }
      const auto& wr = rows[r];
      const auto& ac = acts[static_cast<size_t>(c)];
      const float expected = ref_kernels().of(wt).vec_dot(n, wr.data(), ac.data());
      const double bound = 1e-5 * dot_magnitude(wt, wr, ac, n) + 1e-30;
      INFO("ref " << expected << ", gemm " << got << ", bound " << bound);
      REQUIRE(std::isfinite(expected));
      CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
    }
  }
}

const GgmlType kGemmWeightTypes[] = {
    GgmlType::Q4_0,  GgmlType::Q4_1,   GgmlType::Q5_0,  GgmlType::Q5_1, GgmlType::Q8_0,
    GgmlType::Q2_K,  GgmlType::Q3_K,   GgmlType::Q4_K,  GgmlType::Q5_K, GgmlType::Q6_K,
    GgmlType::MXFP4, GgmlType::IQ4_NL, GgmlType::IQ4_XS};

// The AVX2 table and, on CPUs with AVX-512 VNNI, the AVX-512 one (its own gemm kernels
// over the same packed groups).
std::vector<const KernelTable*> gemm_tables() {
  std::vector<const KernelTable*> tables;
  if (const KernelTable* t = avx2_or_warn()) tables.push_back(t);
  if (const KernelTable* t = avx512_kernels()) {
    tables.push_back(t);
  } else {
    WARN("CPU lacks AVX-512 F/BW/VL/DQ/VNNI: AVX-512 gemm tests skipped");
  }
  return tables;
}

TEST_CASE("AVX2 and AVX-512 gemm tiles match ref's vec_dot on random rows, every tile shape",
          "[avx2]") {
  for (const KernelTable* avx2 : gemm_tables()) {
    INFO("kernel set " << avx2->isa);
    for (GgmlType wt : kGemmWeightTypes) {
      REQUIRE(avx2->of(wt).gemm != nullptr);
      const GgmlType at = avx2->of(wt).vec_dot_type;
      REQUIRE(avx2->of(at).gemm_pack != nullptr);
      const bool k_quant = traits(wt).block_size == kQK_K;
      for (int64_t n : k_quant ? kLengths : kLegacyLengths) {
        for (int nr = 1; nr <= kGemmRows; ++nr) {
          for (int nc = 1; nc <= kGemmCols; ++nc) {
            INFO("type " << traits(wt).name << ", n " << n << ", nr " << nr << ", nc " << nc);
            Rng rng(static_cast<uint64_t>(n) * 131 + static_cast<uint64_t>(nr) * 17 +
                    static_cast<uint64_t>(nc));
            std::vector<std::vector<uint8_t>> rows, acts;
            for (int r = 0; r < nr; ++r)
              rows.push_back(
                  test::quantize(wt, make_row(r % 2 ? RowKind::kHeavy : RowKind::kBell, rng, n)));
            for (int c = 0; c < nc; ++c) {
              const RowKind kind = c == 1   ? RowKind::kSignTie
                                   : c == 2 ? RowKind::kOneHot
                                            : RowKind::kBell;
              acts.push_back(test::quantize(at, make_row(kind, rng, n)));
            }
            check_gemm(*avx2, wt, rows, acts, n);
          }
        }
      }
    }
  }
}

TEST_CASE("AVX2 and AVX-512 gemm tiles match ref on adversarial blocks, every tile shape",
          "[avx2]") {
  for (const KernelTable* avx2 : gemm_tables()) {
    INFO("kernel set " << avx2->isa);
    for (GgmlType wt : kGemmWeightTypes) {
      const GgmlType at = avx2->of(wt).vec_dot_type;
      const int64_t n = traits(wt).block_size == kQK_K ? 768 : 96;
      for (int extreme = 0; extreme < 2; ++extreme) {
        INFO("type " << traits(wt).name << ", extreme activations " << extreme);
        Rng rng(77 + static_cast<uint64_t>(extreme));
        // rows: random bytes, all 0x00 (lowest quants, zero points at their most negative),
        // all 0xFF (max scales and quants), random again, twice (extreme f16 scales from
        // raw_weight_row); every tile shape takes a prefix of rows and tokens
        std::vector<std::vector<uint8_t>> rows, acts;
        for (int rep = 0; rep < 2; ++rep) {
          for (ByteMode mode :
               {ByteMode::kRandom, ByteMode::kAllZero, ByteMode::kAllOnes, ByteMode::kRandom}) {
            rows.push_back(raw_weight_row(wt, n, rng, mode));
          }
        }
        for (int c = 0; c < kGemmCols; ++c)
          acts.push_back(raw_activation_row(at, n, rng, extreme != 0));
        for (int nr = 1; nr <= kGemmRows; ++nr) {
          for (int nc = 1; nc <= kGemmCols; ++nc) {
            INFO("nr " << nr << ", nc " << nc);
            check_gemm(*avx2, wt, {rows.begin(), rows.begin() + nr},
                       {acts.begin(), acts.begin() + nc}, n);
          }
        }
      }
    }
  }
}

TEST_CASE(
    "AVX2 and AVX-512 float gemm tiles (F32, F16, BF16) match ref's vec_dot, every tile shape",
    "[avx2]") {
  for (const KernelTable* t : gemm_tables()) {
    INFO("kernel set " << t->isa);
    // Every float type has a tile, except BF16 in the AVX-512 table on CPUs with
    // AVX512-BF16, where the per-token vdpbf16ps dot is faster (kernels/x86/x86_tables.cpp).
    const bool bf16_dot_only = t->isa == "avx512" && cpu_has_avx512_bf16();
    for (GgmlType type : test::kFloatGemmTypes) {
      INFO("type " << traits(type).name);
      const bool expected = !(type == GgmlType::BF16 && bf16_dot_only);
      REQUIRE((t->of(type).gemm != nullptr) == expected);
      REQUIRE(t->of(type).gemm_pack != nullptr);
    }
    test::check_float_gemm_table(*t, {1, 7, 8, 9, 63, 64, 65, 100, 513, 4096});
  }
}

TEST_CASE("Hand-checked float gemm tiles: f16 extremes, exact sums", "[avx2]") {
  for (const KernelTable* t : gemm_tables()) {
    INFO("kernel set " << t->isa);
    // 3 rows x 2 tokens of 20 halves (two chunks and a tail of 4): every product and
    // partial sum is exact in f32, so gemm must give the exact values.
    constexpr int64_t n = 20;
    uint16_t w[3][n], a[2][n];
    for (int i = 0; i < n; ++i) {
      w[0][i] = fp32_to_fp16(65504.0f);  // largest half
      w[1][i] = fp32_to_fp16(i % 2 ? 1.0f : -1.0f);
      w[2][i] = 0x0001;  // smallest subnormal, 2^-24
      a[0][i] = fp32_to_fp16(static_cast<float>(i));
      a[1][i] = fp32_to_fp16(-2.0f);
    }
    const TypeKernels& k = t->of(GgmlType::F16);
    std::vector<uint8_t> packed(k.gemm_pack_bytes(n));
    k.gemm_pack(n, a, sizeof a[0], 2, packed.data());
    float out[2][3];
    k.gemm(n, w, sizeof w[0], 3, packed.data(), 2, &out[0][0], 3);
    CHECK(out[0][0] == 65504.0f * 190.0f);  // sum of 0 .. 19
    CHECK(out[0][1] == 10.0f);              // pairs (2j + 1) - 2j
    CHECK(out[0][2] == 190.0f * 0x1p-24f);
    CHECK(out[1][0] == -65504.0f * 40.0f);
    CHECK(out[1][1] == 0.0f);
    CHECK(out[1][2] == -40.0f * 0x1p-24f);
  }
}

TEST_CASE("Hand-checked gemm tiles: Q8_0 weights at -128 and 127 (the AVX-512 a + 128 trick)",
          "[avx2]") {
  for (const KernelTable* t : gemm_tables()) {
    INFO("kernel set " << t->isa);
    // rows: all -128, all 127, alternating; tokens: all 127, all -127, zero, d = 2
    ref::BlockQ8_0 w[3]{}, a[3]{};
    for (int j = 0; j < 32; ++j) {
      w[0].qs[j] = -128;
      w[1].qs[j] = 127;
      w[2].qs[j] = static_cast<int8_t>(j % 2 ? 127 : -128);
      a[0].qs[j] = 127;
      a[1].qs[j] = -127;
    }
    for (auto& b : w) b.d = 0x3C00;  // 1.0
    for (auto& b : a) b.d = 0x4000;  // 2.0
    std::vector<uint8_t> packed(t->of(GgmlType::Q8_0).gemm_pack_bytes(32));
    t->of(GgmlType::Q8_0).gemm_pack(32, a, sizeof a[0], 3, packed.data());
    float out[3][3];
    t->of(GgmlType::Q8_0).gemm(32, w, sizeof w[0], 3, packed.data(), 3, &out[0][0], 3);
    const float expect[3][3] = {{-128.f * 127 * 64, 127.f * 127 * 64, -16.f * 127 * 2},
                                {128.f * 127 * 64, -127.f * 127 * 64, 16.f * 127 * 2},
                                {0, 0, 0}};
    for (int c = 0; c < 3; ++c) {
      for (int r = 0; r < 3; ++r) {
        INFO("token " << c << ", row " << r);
        CHECK(out[c][r] == expect[c][r]);
      }
    }
  }
}

TEST_CASE("Hand-checked gemm tiles: Q5 weights at their largest quants against +-127 tokens",
          "[avx2]") {
  // 5-bit quants at 31 against 127 are the int16 limit of the AVX2 chains (4 steps of
  // 2 * 31 * 127); all sums are exact in float, so the outputs are exact.
  for (const KernelTable* t : gemm_tables()) {
    INFO("kernel set " << t->isa);
    auto run = [t](GgmlType wt, const void* w, size_t w_size, const void* a, size_t a_size,
                   int64_t n, float(&out)[2][2]) {
      const TypeKernels& ak = t->of(t->of(wt).vec_dot_type);
      std::vector<uint8_t> packed(ak.gemm_pack_bytes(n));
      ak.gemm_pack(n, a, a_size, 2, packed.data());
      t->of(wt).gemm(n, w, w_size, 2, packed.data(), 2, &out[0][0], 2);
    };
    ref::BlockQ8_0 a0[2]{};
    ref::BlockQ8_1 a1[2]{};
    ref::BlockQ8_K ak[2]{};
    for (int c = 0; c < 2; ++c) {
      const int8_t v = c == 0 ? 127 : -127;
      a0[c].d = a1[c].d = 0x3C00;  // 1.0; a1[c].s = 0 leaves Q5_1's min term out
      ak[c].d = 1.0f;
      for (auto& q : a0[c].qs) q = v;
      for (auto& q : a1[c].qs) q = v;
      for (auto& q : ak[c].qs) q = v;
      for (auto& s : ak[c].bsums) s = static_cast<int16_t>(16 * v);
    }
    float out[2][2];
    // Q5_0: all 0xFF bytes (q 31, value 15) and all 0x00 (value -16), d = 1
    ref::BlockQ5_0 w0[2]{};
    std::memset(w0[0].qh, 0xFF, sizeof w0[0].qh);
    std::memset(w0[0].qs, 0xFF, sizeof w0[0].qs);
    w0[0].d = w0[1].d = 0x3C00;
    run(GgmlType::Q5_0, w0, sizeof w0[0], a0, sizeof a0[0], 32, out);
    CHECK(out[0][0] == 15.f * 127 * 32);
    CHECK(out[0][1] == -16.f * 127 * 32);
    CHECK(out[1][0] == -15.f * 127 * 32);
    CHECK(out[1][1] == 16.f * 127 * 32);
    // Q5_1: q 31 everywhere, d = 1 and -1, m = 0
    ref::BlockQ5_1 w1[2]{};
    for (auto& b : w1) {
      std::memset(b.qh, 0xFF, sizeof b.qh);
      std::memset(b.qs, 0xFF, sizeof b.qs);
    }
    w1[0].d = 0x3C00;
    w1[1].d = 0xBC00;
    run(GgmlType::Q5_1, w1, sizeof w1[0], a1, sizeof a1[0], 32, out);
    CHECK(out[0][0] == 31.f * 127 * 32);
    CHECK(out[0][1] == -31.f * 127 * 32);
    CHECK(out[1][0] == -31.f * 127 * 32);
    CHECK(out[1][1] == 31.f * 127 * 32);
    // Q5_K: q 31 everywhere, every sub-block scale 63, every min 0; d = 1 and -1, dmin = 0
    ref::BlockQ5_K wk[2]{};
    for (auto& b : wk) {
      std::memset(b.qh, 0xFF, sizeof b.qh);
      std::memset(b.qs, 0xFF, sizeof b.qs);
      std::memset(b.scales, 0xFF, 4);      // scales 0-3 (and the top bits of 4-7)
      std::memset(b.scales + 8, 0x0F, 4);  // low bits of scales 4-7; mins stay 0
    }
    wk[0].d = 0x3C00;
    wk[1].d = 0xBC00;
    run(GgmlType::Q5_K, wk, sizeof wk[0], ak, sizeof ak[0], 256, out);
    const float big = 63.f * 31 * 127 * 256;
    CHECK(out[0][0] == big);
    CHECK(out[0][1] == -big);
    CHECK(out[1][0] == -big);
    CHECK(out[1][1] == big);
    for (int c = 0; c < 2; ++c) {
      CHECK(ref_kernels().of(GgmlType::Q5_K).vec_dot(256, &wk[0], &ak[c]) == out[c][0]);
    }
  }
}

TEST_CASE("Hand-checked gemm tiles: Q2_K and Q3_K at their extreme quants and scales", "[avx2]") {
  // Row 0 all 0xFF bytes, row 1 all 0x00, d = dmin = 1, against all-127 and all-(-127)
  // tokens (d = 1). Every sum is an integer below 2^24, so the outputs are exact.
  for (const KernelTable* t : gemm_tables()) {
    INFO("kernel set " << t->isa);
    ref::BlockQ8_K a[2]{};
    for (int c = 0; c < 2; ++c) {
      const int8_t v = c == 0 ? 127 : -127;
      a[c].d = 1.0f;
      for (auto& q : a[c].qs) q = v;
      for (auto& s : a[c].bsums) s = static_cast<int16_t>(16 * v);
    }
    const TypeKernels& ak = t->of(GgmlType::Q8_K);
    std::vector<uint8_t> packed(ak.gemm_pack_bytes(256));
    ak.gemm_pack(256, a, sizeof a[0], 2, packed.data());
    auto check = [&](GgmlType wt, const void* w, size_t w_size, const float(&expect)[2]) {
      INFO("type " << traits(wt).name);
      float out[2][2];
      t->of(wt).gemm(256, w, w_size, 2, packed.data(), 2, &out[0][0], 2);
      for (int c = 0; c < 2; ++c) {
        const float sign = c == 0 ? 1.0f : -1.0f;
        for (int r = 0; r < 2; ++r) {
          INFO("token " << c << ", row " << r);
          CHECK(out[c][r] == sign * expect[r]);
          const void* row = static_cast<const uint8_t*>(w) + r * w_size;
          CHECK(ref_kernels().of(wt).vec_dot(256, row, &a[c]) == out[c][r]);
        }
      }
    };
    // Q2_K: 0xFF is q 3, scale 15, min 15: x = 15 * 3 - 15 = 30; 0x00 is q 0, scale 0,
    // min 0 except row 1's scales 0xF0 (min 15, scale 0): x = -15.
    ref::BlockQ2_K w2[2]{};
    std::memset(&w2[0], 0xFF, sizeof w2[0]);
    std::memset(w2[1].scales, 0xF0, sizeof w2[1].scales);
    for (auto& b : w2) b.d = b.dmin = 0x3C00;
    check(GgmlType::Q2_K, w2, sizeof w2[0], {30.f * 127 * 256, -15.f * 127 * 256});
    // Q3_K: 0xFF is q 3 (high bit set), scale 63 - 32 = 31: x = 93; 0x00 is q -4, scale
    // -32: x = 128.
    ref::BlockQ3_K w3[2]{};
    std::memset(&w3[0], 0xFF, sizeof w3[0]);
    for (auto& b : w3) b.d = 0x3C00;
    check(GgmlType::Q3_K, w3, sizeof w3[0], {93.f * 127 * 256, 128.f * 127 * 256});
  }
}

TEST_CASE("AVX2 and AVX-512 lookup-type dots and gemm tiles: hand-checked blocks", "[avx2]") {
  // Every code of each table, -127 x 127 extremes, subnormal E8M0 scales, IQ4_XS scales of
  // both signs (tests/kernels/lut4_test_util.h): exact sums, so exact results.
  for (const KernelTable* t : gemm_tables()) {
    for (const test::Lut4Case& c : test::lut4_hand_cases()) {
      INFO("kernel set " << t->isa << ": " << c.what);
      const TypeKernels& k = t->of(c.type);
      CHECK(k.vec_dot(c.n, c.w.data(), c.a.data()) == c.expected);
      REQUIRE(k.gemm != nullptr);
      // the activation row as token 1 of 2 (token 0 all zero)
      const TypeKernels& ak = t->of(k.vec_dot_type);
      std::vector<uint8_t> acts(2 * c.a.size(), 0);
      std::memcpy(acts.data() + c.a.size(), c.a.data(), c.a.size());
      std::vector<uint8_t> packed(ak.gemm_pack_bytes(c.n));
      ak.gemm_pack(c.n, acts.data(), c.a.size(), 2, packed.data());
      float out[2] = {-7.0f, -7.0f};
      k.gemm(c.n, c.w.data(), c.w.size(), 1, packed.data(), 2, out, 1);
      CHECK(out[0] == 0.0f);
      CHECK(out[1] == c.expected);
    }
  }
}

// ---------------------------------------------------------------- row-interleaved (x8) products

TEST_CASE(
    "AVX2 and AVX-512 x8 products match ref's vec_dot on random and adversarial rows, and the "
    "table's own vec_dot bit for bit",
    "[avx2]") {
  // A streamed layer is dotted in the file's layout (vec_dot), a resident one repacked
  // (gemm_x8): the same bits make a streamed run give the resident run's tokens.
  for (const KernelTable* t : gemm_tables()) test::check_x8_table(*t, /*same_bits=*/true);
}

}  // namespace
}  // namespace runnel
