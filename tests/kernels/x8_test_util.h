// The row-interleaved ("x8") products of a kernel table against ref, for every ISA with
// an x8 layout (tests/kernels/x86, tests/kernels/wasm): repack_x8 / unpack_x8_row give the
// rows back bit for bit, and gemm_x8 matches ref's vec_dot within its bound of
// 1e-5 * S + 1e-30 (S = dot_magnitude) for every row and activation row, on quantized
// random rows, raw rows with adversarial bytes and scales, and nc = 1, 2, 5 and 8. Where
// the table promises it (SIMD128, whose streamed layers are dotted in the file's layout),
// gemm_x8 equals the table's own vec_dot bit for bit.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/isa_test_util.h"

namespace runnel::test {

inline constexpr GgmlType kX8WeightTypes[] = {
    GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,  GgmlType::Q5_1,   GgmlType::Q8_0,
    GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::MXFP4, GgmlType::IQ4_NL, GgmlType::IQ4_XS};

// Repacks 8 rows with the table's repack_x8, runs gemm_x8 against the activation rows and
// checks every output; outputs of tokens beyond nc and the padding of each output row
// stay untouched. same_bits: each output also equals t's vec_dot of the row bit for bit.
inline void check_gemm_x8(const KernelTable& t, GgmlType wt,
                          const std::vector<std::vector<uint8_t>>& rows,
                          const std::vector<std::vector<uint8_t>>& acts, int64_t n,
                          bool same_bits = false) {
  REQUIRE(rows.size() == static_cast<size_t>(kX8Rows));
  const GgmlType at = t.of(wt).vec_dot_type;
  const auto nc = static_cast<int>(acts.size());
  const size_t w_stride = row_bytes(wt, n);
  const size_t a_stride = row_bytes(at, n);
  std::vector<uint8_t> w, a, group(x8_group_bytes(t.of(wt), wt, n));
  for (const auto& r : rows) w.insert(w.end(), r.begin(), r.end());
  for (const auto& c : acts) a.insert(a.end(), c.begin(), c.end());
  t.of(wt).repack_x8(n, w.data(), w_stride, group.data());
  CHECK(group != w);  // the layout really changed
  REQUIRE(t.of(wt).unpack_x8_row != nullptr);
  for (int r = 0; r < kX8Rows; ++r) {
    std::vector<uint8_t> back(w_stride, 0xAB);
    t.of(wt).unpack_x8_row(n, group.data(), r, back.data());
    CHECK(back == rows[r]);
  }
  // what gemm_x8 reads beside the rows (block sums, or the type's own preparation)
  const size_t per_row = x8_act_ints(t, wt, n);
  std::vector<int32_t> sums(nc * per_row + 1);
  for (int c = 0; c < nc; ++c) x8_act_prepare(t, wt, n, acts[c].data(), sums.data() + c * per_row);
  const size_t out_stride = kX8Rows + 5;
  std::vector<float> out(kGemmCols * out_stride, -7.0f);
  t.of(wt).gemm_x8(n, group.data(), a.data(), a_stride, sums.data(), nc, out.data(), out_stride);
  for (int c = 0; c < kGemmCols; ++c) {
    for (size_t r = 0; r < out_stride; ++r) {
      const float got = out[c * out_stride + r];
      INFO("row " << r << ", token " << c << " of " << nc);
      if (c >= nc || r >= static_cast<size_t>(kX8Rows)) {
        CHECK(got == -7.0f);
        continue;
      }
      const float expected = ref_kernels().of(wt).vec_dot(n, rows[r].data(), acts[c].data());
      const double bound = 1e-5 * dot_magnitude(wt, rows[r], acts[c], n) + 1e-30;
      INFO("ref " << expected << ", gemm_x8 " << got << ", bound " << bound);
      REQUIRE(std::isfinite(expected));
      CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
      if (same_bits) {
        const float own = t.of(wt).vec_dot(n, rows[r].data(), acts[c].data());
        INFO("vec_dot " << own);
        CHECK(bits_of(got) == bits_of(own));
      }
    }
  }
}

// Every x8 type of table t: 5 quantized random rows and 3 raw rows (random bytes, all
// 0x00, all 0xFF, with adversarial scales) against quantized and raw activation rows.
inline void check_x8_table(const KernelTable& t, bool same_bits = false) {
  INFO("kernel set " << t.isa);
  for (GgmlType wt : kX8WeightTypes) {
    REQUIRE(t.of(wt).repack_x8 != nullptr);
    REQUIRE(t.of(wt).gemm_x8 != nullptr);
    const GgmlType at = t.of(wt).vec_dot_type;
    const bool k_quant = traits(wt).block_size == kQK_K;
    for (int64_t n : k_quant ? kSuperBlockLengths : kBlockLengths) {
      for (int nc : {1, 2, 5, kGemmCols}) {
        INFO("type " << traits(wt).name << ", n " << n << ", nc " << nc);
        Rng rng(static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(nc));
        std::vector<std::vector<uint8_t>> rows, acts;
        for (int r = 0; r < kX8Rows; ++r) {
          if (r < 5) {
            rows.push_back(
                quantize(wt, make_row(r % 2 ? RowKind::kHeavy : RowKind::kBell, rng, n)));
          } else {
            rows.push_back(raw_weight_row(wt, n, rng, static_cast<ByteMode>(r - 5)));
          }
        }
        for (int c = 0; c < nc; ++c) {
          if (c % 3 == 2) {
            acts.push_back(raw_activation_row(at, n, rng, c % 2 == 0));
          } else {
            acts.push_back(
                quantize(at, make_row(c == 1 ? RowKind::kSignTie : RowKind::kBell, rng, n)));
          }
        }
        check_gemm_x8(t, wt, rows, acts, n, same_bits);
      }
    }
  }
}

}  // namespace runnel::test
