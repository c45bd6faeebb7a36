// The x86 per-token dots (vec_dot) and prompt tiles (gemm over gemm_pack's groups) of the
// seven x8 types against the x8 products (gemm_x8 over repack_x8's groups) of the same
// table, bit for bit per row and token. A resident model multiplies repacked groups; a
// streamed one keeps the file's layout and uses gemm for prompts and vec_dot otherwise
// (kernels/x86/x8_steps.h), so equal bits give a streamed run the resident run's tokens.
// Lengths include 18 blocks (SmolLM2's 576: the legacy dots' groups of 8 blocks and a
// tail); tests/kernels/x8_test_util.h's same_bits checks vec_dot on more row kinds.
// Skipped with a warning on CPUs without AVX2 (AVX-512: without F/BW/VL/DQ/VNNI).
#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/x86/x86.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/test_util.h"
#include "tests/kernels/x8_test_util.h"

namespace runnel {
namespace {

using test::bits_of;
using test::ByteMode;
using test::make_row;
using test::raw_activation_row;
using test::raw_weight_row;
using test::Rng;
using test::RowKind;

std::vector<const KernelTable*> x86_tables() {
  std::vector<const KernelTable*> tables;
  if (const KernelTable* t = avx2_kernels()) {
    tables.push_back(t);
  } else {
    WARN("CPU lacks AVX2/FMA/F16C: x86 x8 bit tests skipped");
  }
  if (const KernelTable* t = avx512_kernels()) {
    tables.push_back(t);
  } else {
    WARN("CPU lacks AVX-512 F/BW/VL/DQ/VNNI: AVX-512 x8 bit tests skipped");
  }
  return tables;
}

// gemm_x8's outputs for the 8 rows against every activation row, kGemmCols tokens per
// call as matmul makes them: [token][row].
std::vector<std::vector<float>> x8_outputs(const KernelTable& t, GgmlType wt,
                                           const std::vector<uint8_t>& w,
                                           const std::vector<uint8_t>& a, int n_tokens, int64_t n) {
  const TypeKernels& k = t.of(wt);
  const size_t a_stride = row_bytes(k.vec_dot_type, n);
  std::vector<uint8_t> group(x8_group_bytes(k, wt, n));
  k.repack_x8(n, w.data(), row_bytes(wt, n), group.data());
  const size_t per_row = x8_act_ints(t, wt, n);
  std::vector<int32_t> sums(n_tokens * per_row + 1);
  for (int c = 0; c < n_tokens; ++c) {
    x8_act_prepare(t, wt, n, a.data() + c * a_stride, sums.data() + c * per_row);
  }
  std::vector<std::vector<float>> out(static_cast<size_t>(n_tokens), std::vector<float>(kX8Rows));
  float tile[kGemmCols][kX8Rows];
  for (int c0 = 0; c0 < n_tokens; c0 += kGemmCols) {
    const int nc = std::min(kGemmCols, n_tokens - c0);
    k.gemm_x8(n, group.data(), a.data() + c0 * a_stride, a_stride, sums.data() + c0 * per_row, nc,
              &tile[0][0], kX8Rows);
    for (int c = 0; c < nc; ++c) out[c0 + c].assign(tile[c], tile[c] + kX8Rows);
  }
  return out;
}

// Runs gemm on the first nr of the 8 rows against the activation rows, packed in groups
// of kGemmCols as matmul packs them, and checks every output against gemm_x8's bits.
// Cells outside the nr x nc tile stay untouched.
void check_gemm_same_bits(const KernelTable& t, GgmlType wt, const std::vector<uint8_t>& w,
                          const std::vector<uint8_t>& a, int n_tokens, int64_t n) {
  const TypeKernels& k = t.of(wt);
  const TypeKernels& ak = t.of(k.vec_dot_type);
  REQUIRE(k.gemm != nullptr);
  REQUIRE(ak.gemm_pack != nullptr);
  const size_t w_stride = row_bytes(wt, n);
  const size_t a_stride = row_bytes(k.vec_dot_type, n);
  const std::vector<std::vector<float>> x8 = x8_outputs(t, wt, w, a, n_tokens, n);
  std::vector<uint8_t> packed(ak.gemm_pack_bytes(n));
  for (int c0 = 0; c0 < n_tokens; c0 += kGemmCols) {
    const int nc = std::min(kGemmCols, n_tokens - c0);
    ak.gemm_pack(n, a.data() + c0 * a_stride, a_stride, nc, packed.data());
    for (int nr = 1; nr <= kGemmRows; ++nr) {
      const size_t out_stride = static_cast<size_t>(nr) + 3;
      std::vector<float> out(kGemmCols * out_stride, -7.0f);
      k.gemm(n, w.data(), w_stride, nr, packed.data(), nc, out.data(), out_stride);
      for (int c = 0; c < kGemmCols; ++c) {
        for (size_t r = 0; r < out_stride; ++r) {
          const float got = out[c * out_stride + r];
          INFO("row " << r << " of " << nr << ", token " << c0 + c << " of " << n_tokens);
          if (c >= nc || r >= static_cast<size_t>(nr)) {
            CHECK(got == -7.0f);
            continue;
          }
          const float want = x8[c0 + c][r];
          INFO("gemm " << got << ", gemm_x8 " << want);
          CHECK(bits_of(got) == bits_of(want));
        }
      }
    }
  }
}

// vec_dot of each of the 8 rows with each activation row against gemm_x8's bits.
void check_vec_dot_same_bits(const KernelTable& t, GgmlType wt, const std::vector<uint8_t>& w,
                             const std::vector<uint8_t>& a, int n_tokens, int64_t n) {
  const TypeKernels& k = t.of(wt);
  const size_t w_stride = row_bytes(wt, n);
  const size_t a_stride = row_bytes(k.vec_dot_type, n);
  const std::vector<std::vector<float>> x8 = x8_outputs(t, wt, w, a, n_tokens, n);
  for (int c = 0; c < n_tokens; ++c) {
    for (int r = 0; r < kX8Rows; ++r) {
      const float got = k.vec_dot(n, w.data() + r * w_stride, a.data() + c * a_stride);
      INFO("row " << r << ", token " << c << ": vec_dot " << got << ", gemm_x8 " << x8[c][r]);
      CHECK(bits_of(got) == bits_of(x8[c][r]));
    }
  }
}

// 8 rows: 5 quantized and 3 raw ones (random bytes, all 0x00, all 0xFF) with extreme f16
// scales. Tokens: quantized (bell, sign ties, f16-overflowing and subnormal scales) or raw
// with extreme scales (every quant +-127 in every other one).
struct X8Case {
  std::vector<uint8_t> w;
  std::vector<uint8_t> a;
};
X8Case make_case(GgmlType wt, GgmlType at, int64_t n, int n_tokens, Rng& rng) {
  X8Case x;
  for (int r = 0; r < kX8Rows; ++r) {
    const std::vector<uint8_t> row =
        r < 5 ? test::quantize(wt, make_row(r % 2 ? RowKind::kHeavy : RowKind::kBell, rng, n))
              : raw_weight_row(wt, n, rng, static_cast<ByteMode>(r - 5));
    x.w.insert(x.w.end(), row.begin(), row.end());
  }
  for (int c = 0; c < n_tokens; ++c) {
    constexpr RowKind kKinds[] = {RowKind::kBell, RowKind::kSignTie, RowKind::kHuge,
                                  RowKind::kSmall, RowKind::kHeavy};
    const std::vector<uint8_t> row = c % 3 == 2
                                         ? raw_activation_row(at, n, rng, c % 2 == 0)
                                         : test::quantize(at, make_row(kKinds[c % 5], rng, n));
    x.a.insert(x.a.end(), row.begin(), row.end());
  }
  return x;
}

constexpr int64_t kLegacyLengths[] = {32, 96, 224, 576, 4096};
constexpr int64_t kKQuantLengths[] = {256, 768, 1792, 2304, 4096};

TEST_CASE("AVX2 and AVX-512 prompt tiles of the x8 types give gemm_x8's bits", "[avx2][x8]") {
  for (const KernelTable* t : x86_tables()) {
    INFO("kernel set " << t->isa);
    for (GgmlType wt : test::kX8WeightTypes) {
      const bool k_quant = traits(wt).block_size == kQK_K;
      for (int64_t n : k_quant ? kKQuantLengths : kLegacyLengths) {
        for (int n_tokens : {1, 2, 3, 8, 11, 19}) {
          INFO("type " << traits(wt).name << ", n " << n << ", tokens " << n_tokens);
          Rng rng(static_cast<uint64_t>(n) * 37 + static_cast<uint64_t>(n_tokens));
          const X8Case x = make_case(wt, t->of(wt).vec_dot_type, n, n_tokens, rng);
          check_gemm_same_bits(*t, wt, x.w, x.a, n_tokens, n);
        }
      }
    }
  }
}

TEST_CASE("AVX2 and AVX-512 per-token dots of the x8 types give gemm_x8's bits", "[avx2][x8]") {
  for (const KernelTable* t : x86_tables()) {
    INFO("kernel set " << t->isa);
    for (GgmlType wt : test::kX8WeightTypes) {
      const bool k_quant = traits(wt).block_size == kQK_K;
      for (int64_t n : k_quant ? kKQuantLengths : kLegacyLengths) {
        INFO("type " << traits(wt).name << ", n " << n);
        Rng rng(static_cast<uint64_t>(n) * 41 + 5);
        const X8Case x = make_case(wt, t->of(wt).vec_dot_type, n, 10, rng);
        check_vec_dot_same_bits(*t, wt, x.w, x.a, 10, n);
      }
    }
  }
}

}  // namespace
}  // namespace runnel
