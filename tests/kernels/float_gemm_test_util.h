// The float batched products (gemm on F32 / F16 / BF16 weights, gemm_pack on the same
// activation formats, kernels/float_gemm_pack.h) of a kernel table against ref's vec_dot,
// shared by the x86 and NEON tests. Bound: vec_dot's,
// |gemm - ref| <= (n / 32 + 16) * 2^-24 * S + 1e-30, S = sum |w_i a_i| over the decoded rows.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/types.h"
#include "tests/kernels/test_util.h"

namespace runnel::test {

inline constexpr GgmlType kFloatGemmTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16};

// Float rows for the tiles. Kinds: 0 bell, 1 heavy tails x 100 against offset values,
// 2 the type's largest magnitudes (f16: 65504; F32 / BF16: 1e17, so 4096 products stay
// finite) with alternating signs, 3 zeros with a few one-hot entries, 4 tiny values (f16
// subnormals; 1e-20 for F32 / BF16), 5 a row that cancels: +v, -v pairs plus noise.
inline constexpr int kFloatGemmKinds = 6;

inline std::vector<float> float_gemm_row(GgmlType type, int kind, Rng& rng, int64_t n) {
  const float big = type == GgmlType::F16 ? 65504.0f : 1e17f;
  const float tiny = type == GgmlType::F16 ? 1e-6f : 1e-20f;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float& v = x[static_cast<size_t>(i)];
    switch (kind) {
      case 0:
        v = rng.bell();
        break;
      case 1:
        v = rng.heavy() * 100.0f + 0.5f;
        break;
      case 2:
        v = (i % 2 ? big : -big) * (rng.next() % 4 == 0 ? 1.0f : rng.uniform());
        break;
      case 3:
        v = i % 13 == 5 ? (i % 2 ? 3.25f : -7.5f) : 0.0f;
        break;
      case 4:
        v = rng.symmetric() * tiny;
        break;
      default:
        v = (i % 2 ? 1.0f : -1.0f) * 1000.0f * static_cast<float>(i / 2 % 7 + 1) + rng.symmetric();
        break;
    }
  }
  return x;
}

// Rows rounded to `type`, `stride` bytes apart
// (the padding is 0xFF: a NaN in every float type, so reading it shows).
inline std::vector<uint8_t> padded_rows(GgmlType type, const std::vector<std::vector<float>>& rows,
                                        size_t stride) {
  std::vector<uint8_t> out(stride * rows.size(), 0xFF);
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto q = quantize(type, rows[r]);
    std::memcpy(out.data() + r * stride, q.data(), q.size());
  }
  return out;
}

// Runs `table`'s float gemm for nr weight rows against nc activation rows (both given as
// floats, rounded to `type`), through gemm_pack, and checks every output against ref's
// vec_dot within vec_dot's bound; cells outside the nr x nc tile must stay untouched.
inline void check_float_gemm(const KernelTable& table, GgmlType type,
                             const std::vector<std::vector<float>>& w_rows,
                             const std::vector<std::vector<float>>& a_rows, int64_t n) {
  const TypeKernels& k = table.of(type);
  REQUIRE(k.vec_dot_type == type);
  REQUIRE(k.gemm != nullptr);
  REQUIRE(k.gemm_pack != nullptr);
  const auto nr = static_cast<int>(w_rows.size());
  const auto nc = static_cast<int>(a_rows.size());
  const size_t rb = row_bytes(type, n);
  // padded, off the 16- / 32-byte vector alignment (element-aligned, as ref reads the rows)
  const size_t w_stride = rb + 4 * sizeof(float) + 4, a_stride = rb + 12;
  const auto w = padded_rows(type, w_rows, w_stride);
  const auto a = padded_rows(type, a_rows, a_stride);
  std::vector<uint8_t> packed(k.gemm_pack_bytes(n), 0xEF);
  k.gemm_pack(n, a.data(), a_stride, nc, packed.data());
  const size_t out_stride = static_cast<size_t>(nr) + 3;
  std::vector<float> out(static_cast<size_t>(kGemmCols) * out_stride, -7.0f);
  k.gemm(n, w.data(), w_stride, nr, packed.data(), nc, out.data(), out_stride);
  for (int c = 0; c < kGemmCols; ++c) {
    for (size_t r = 0; r < out_stride; ++r) {
      const float got = out[static_cast<size_t>(c) * out_stride + r];
      INFO("type " << traits(type).name << ", n " << n << ", row " << r << " of " << nr
                   << ", token " << c << " of " << nc);
      if (c >= nc || r >= static_cast<size_t>(nr)) {
        CHECK(got == -7.0f);
        continue;
      }
      const uint8_t* wr = w.data() + r * w_stride;
      const uint8_t* ac = a.data() + static_cast<size_t>(c) * a_stride;
      const float expected = ref_kernels().of(type).vec_dot(n, wr, ac);
      const auto wd = dequantize(type, std::vector<uint8_t>(wr, wr + rb), n);
      const auto ad = dequantize(type, std::vector<uint8_t>(ac, ac + rb), n);
      double s = 0.0;
      for (size_t i = 0; i < static_cast<size_t>(n); ++i)
        s += std::fabs(static_cast<double>(wd[i]) * ad[i]);
      const double bound = (static_cast<double>(n) / 32 + 16) * 0x1p-24 * s + 1e-30;
      INFO("ref " << expected << ", gemm " << got << ", bound " << bound);
      REQUIRE(std::isfinite(expected));
      CHECK(std::fabs(static_cast<double>(got) - expected) <= bound);
    }
  }
}

// Every tile shape nr x nc in 1..8 of `table`'s float gemm for each float type and row
// length in `lengths`, rows of mixed kinds; then every kind against every kind on full
// tiles. A type whose entry has no gemm is skipped: the callers check which types each
// table registers.
inline void check_float_gemm_table(const KernelTable& table, const std::vector<int64_t>& lengths) {
  for (GgmlType type : kFloatGemmTypes) {
    if (table.of(type).gemm == nullptr) continue;
    for (int64_t n : lengths) {
      for (int nr = 1; nr <= kGemmRows; ++nr) {
        for (int nc = 1; nc <= kGemmCols; ++nc) {
          Rng rng(static_cast<uint64_t>(n) * 131 + static_cast<uint64_t>(nr) * 17 +
                  static_cast<uint64_t>(nc));
          std::vector<std::vector<float>> w, a;
          for (int r = 0; r < nr; ++r) w.push_back(float_gemm_row(type, r % 2, rng, n));
          for (int c = 0; c < nc; ++c)
            a.push_back(float_gemm_row(type, c == 2 ? 3 : c % 2, rng, n));
          check_float_gemm(table, type, w, a, n);
        }
      }
    }
    // adversarial rows: each kind of weight row meets each kind of token
    for (int64_t n : {int64_t{67}, int64_t{1000}}) {
      Rng rng(5 + static_cast<uint64_t>(n));
      std::vector<std::vector<float>> w, a;
      for (int kind = 0; kind < kFloatGemmKinds; ++kind) {
        w.push_back(float_gemm_row(type, kind, rng, n));
        a.push_back(float_gemm_row(type, kind, rng, n));
      }
      w.push_back(float_gemm_row(type, 2, rng, n));
      w.push_back(float_gemm_row(type, 5, rng, n));
      a.push_back(float_gemm_row(type, 5, rng, n));
      a.push_back(float_gemm_row(type, 2, rng, n));
      check_float_gemm(table, type, w, a, n);
    }
  }
}

}  // namespace runnel::test
