// The model quantizers that run ref's k-quant group searches on vector lanes (Q2_K .. Q6_K,
// plain and importance-weighted; kernels/group_fits_lanes.h) against ref's bytes:
// every lane a different kind of group (flat, all zero, below the zero threshold, one
// outlier, huge) and block counts that leave lanes and fit chunks partly empty. Used by
// each ISA's test (tests/kernels/x86/group_fits_test.cpp, tests/kernels/arm/).
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/test_util.h"

namespace runnel::test {
namespace group_fits {

// The types whose plain quantizer runs the lane searches; the weighted ones add Q3_K
// (its plain quantizer has a search of its own, ref's in every table).
constexpr GgmlType kTypes[] = {GgmlType::Q2_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
constexpr GgmlType kWeightedTypes[] = {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                       GgmlType::Q6_K};
// Super-blocks per row: lanes of a 16-wide pass left empty (odd counts of 8 groups), and
// the quantizers' chunks of 4 blocks left partly empty (5, 7).
constexpr int64_t kBlocks[] = {1, 2, 3, 5, 7, 16};

// A row whose 16-element pieces each take one of many shapes, so that neighbouring
// lanes of one pass take different branches of the searches.
inline std::vector<float> mixed_row(Rng& rng, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t g = 0; g < n / 16; ++g) {
    float* v = x.data() + g * 16;
    const auto kind = rng.next() % 10;
    const float c = rng.bell();
    for (int i = 0; i < 16; ++i) {
      switch (kind) {
        case 0: v[i] = 0.0f; break;                            // all zero
        case 1: v[i] = -std::fabs(c) - 0.5f; break;            // flat, negative: max == min
        case 2: v[i] = std::fabs(c) + 0.5f; break;             // flat, positive (min clamps to 0)
        case 3: v[i] = rng.bell() * 1e-17f; break;             // below the zero threshold
        case 4: v[i] = i == 5 ? c * 100.0f : 0.0f; break;      // one outlier
        case 5: v[i] = rng.heavy() * 3e4f; break;              // huge
        case 6: v[i] = std::fabs(rng.bell()); break;           // non-negative
        case 7: v[i] = -std::fabs(rng.bell()) * 0.01f; break;  // small, non-positive
        default: v[i] = rng.bell(); break;
      }
    }
  }
  return x;
}

inline std::vector<uint8_t> quantize(QuantizeRowFn fn, GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(row_bytes(type, static_cast<int64_t>(x.size())), 0xAB);
  fn(x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

inline std::vector<uint8_t> quantize_weighted(QuantizeRowWeightedFn fn, GgmlType type,
                                              const std::vector<float>& x, const std::vector<float>& importance) {
  std::vector<uint8_t> q(row_bytes(type, static_cast<int64_t>(x.size())), 0xAB);
  fn(x.data(), q.data(), static_cast<int64_t>(x.size()), importance.data());
  return q;
}

}  // namespace group_fits

// t's plain quantizers of Q2_K, Q4_K, Q5_K and Q6_K give ref's bytes (and are not ref's own).
inline void check_group_fit_quantizers(const KernelTable& t) {
  using namespace group_fits;
  for (GgmlType type : kTypes) {
    const TypeKernels& ref = ref_kernels().of(type);
    const TypeKernels& simd = t.of(type);
    CHECK(simd.quantize_row != ref.quantize_row);  // the lane searches, not ref's own
    for (int64_t blocks : kBlocks) {
      const int64_t n = blocks * 256;
      for (int variant = 0; variant < 14; ++variant) {
        Rng rng(static_cast<uint64_t>(n) * 131 + static_cast<uint64_t>(variant));
        const std::vector<float> x = variant < 10 ? make_row(kRowKinds[variant], rng, n)
                                                  : mixed_row(rng, n);
        INFO(t.isa << " " << traits(type).name << ", " << blocks << " blocks, variant " << variant);
        const auto expected = quantize(ref.quantize_row, type, x);
        const auto got = quantize(simd.quantize_row, type, x);
        CHECK(std::memcmp(got.data(), expected.data(), got.size()) == 0);
      }
    }
  }
}

// t's importance-weighted quantizers of Q2_K .. Q6_K give ref's bytes; without
// importance, the plain quantizer's.
inline void check_group_fit_weighted_quantizers(const KernelTable& t) {
  using namespace group_fits;
  for (GgmlType type : kWeightedTypes) {
    const TypeKernels& ref = ref_kernels().of(type);
    const TypeKernels& simd = t.of(type);
    REQUIRE(ref.quantize_row_weighted != nullptr);
    CHECK(simd.quantize_row_weighted != ref.quantize_row_weighted);
    for (int64_t blocks : kBlocks) {
      const int64_t n = blocks * 256;
      for (int variant = 0; variant < 6; ++variant) {
        Rng rng(static_cast<uint64_t>(n) * 7919 + static_cast<uint64_t>(variant));
        const std::vector<float> x = variant % 2 == 0 ? mixed_row(rng, n) : bell_row(rng, n);
        // Importance as an imatrix holds it: mean squares, some columns never seen (0).
        std::vector<float> importance(static_cast<size_t>(n));
        for (auto& v : importance) {
          v = variant >= 4 && rng.next() % 4 == 0 ? 0.0f : rng.uniform() * rng.uniform() * 4.0f;
        }
        INFO(t.isa << " " << traits(type).name << ", " << blocks << " blocks, variant " << variant);
        const auto expected = quantize_weighted(ref.quantize_row_weighted, type, x, importance);
        const auto got = quantize_weighted(simd.quantize_row_weighted, type, x, importance);
        CHECK(std::memcmp(got.data(), expected.data(), got.size()) == 0);
        // Without importance the weighted entry is the plain quantizer.
        const auto plain = quantize(ref.quantize_row, type, x);
        std::vector<uint8_t> unweighted(plain.size(), 0xAB);
        simd.quantize_row_weighted(x.data(), unweighted.data(), n, nullptr);
        CHECK(std::memcmp(unweighted.data(), plain.data(), plain.size()) == 0);
      }
    }
  }
}

}  // namespace runnel::test
