// The x86 model quantizers (Q4_K, Q5_K, Q6_K, plain and importance-weighted) run ref's
// group searches on 8 or 16 groups at once: their bytes must equal ref's exactly, with
// every lane a different kind of group (flat, all zero, below the zero threshold, one
// outlier, huge) and with block counts that leave lanes and fit chunks partly empty.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "kernels/x86/x86.h"
#include "tests/kernels/isa_test_util.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::Rng;

constexpr GgmlType kTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
// Super-blocks per row: lanes of a 16-wide pass left empty (odd counts of 8 groups), and
// the quantizers' chunks of 4 blocks left partly empty (5, 7).
constexpr int64_t kBlocks[] = {1, 2, 3, 5, 7, 16};

std::vector<const KernelTable*> x86_tables() {
  std::vector<const KernelTable*> tables;
  if (avx2_kernels() != nullptr) tables.push_back(avx2_kernels());
  if (avx512_kernels() != nullptr) tables.push_back(avx512_kernels());
  if (tables.empty()) WARN("CPU lacks AVX2: x86 model quantizer tests skipped");
  return tables;
}

// A row whose 16-element pieces each take one of many shapes, so that neighbouring
// lanes of one pass take different branches of the searches.
std::vector<float> mixed_row(Rng& rng, int64_t n) {
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

std::vector<uint8_t> quantize(QuantizeRowFn fn, GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(row_bytes(type, static_cast<int64_t>(x.size())), 0xAB);
  fn(x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<uint8_t> quantize_weighted(QuantizeRowWeightedFn fn, GgmlType type, const std::vector<float>& x,
                                       const std::vector<float>& importance) {
  std::vector<uint8_t> q(row_bytes(type, static_cast<int64_t>(x.size())), 0xAB);
  fn(x.data(), q.data(), static_cast<int64_t>(x.size()), importance.data());
  return q;
}

TEST_CASE("x86 k-quant model quantizers give ref's bytes", "[avx2][avx512]") {
  for (const KernelTable* t : x86_tables()) {
    for (GgmlType type : kTypes) {
      const TypeKernels& ref = ref_kernels().of(type);
      const TypeKernels& simd = t->of(type);
      CHECK(simd.quantize_row != ref.quantize_row);  // the lane searches, not ref's own
      for (int64_t blocks : kBlocks) {
        const int64_t n = blocks * 256;
        for (int variant = 0; variant < 14; ++variant) {
          Rng rng(static_cast<uint64_t>(n) * 131 + static_cast<uint64_t>(variant));
          const std::vector<float> x = variant < 10 ? test::make_row(test::kRowKinds[variant], rng, n)
                                                    : mixed_row(rng, n);
          INFO(t->isa << " " << traits(type).name << ", " << blocks << " blocks, variant " << variant);
          const auto expected = quantize(ref.quantize_row, type, x);
          const auto got = quantize(simd.quantize_row, type, x);
          CHECK(std::memcmp(got.data(), expected.data(), got.size()) == 0);
        }
      }
    }
  }
}

TEST_CASE("x86 importance-weighted k-quant quantizers give ref's bytes", "[avx2][avx512]") {
  for (const KernelTable* t : x86_tables()) {
    for (GgmlType type : kTypes) {
      const TypeKernels& ref = ref_kernels().of(type);
      const TypeKernels& simd = t->of(type);
      REQUIRE(ref.quantize_row_weighted != nullptr);
      CHECK(simd.quantize_row_weighted != ref.quantize_row_weighted);
      for (int64_t blocks : kBlocks) {
        const int64_t n = blocks * 256;
        for (int variant = 0; variant < 6; ++variant) {
          Rng rng(static_cast<uint64_t>(n) * 7919 + static_cast<uint64_t>(variant));
          const std::vector<float> x = variant % 2 == 0 ? mixed_row(rng, n) : test::bell_row(rng, n);
          // Importance as an imatrix holds it: mean squares, some columns never seen (0).
          std::vector<float> importance(static_cast<size_t>(n));
          for (auto& v : importance) {
            v = variant >= 4 && rng.next() % 4 == 0 ? 0.0f : rng.uniform() * rng.uniform() * 4.0f;
          }
          INFO(t->isa << " " << traits(type).name << ", " << blocks << " blocks, variant " << variant);
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
}

}  // namespace
}  // namespace runnel
