// The x86 model quantizers (Q2_K .. Q6_K, plain and importance-weighted) run ref's
// group searches on 8 (AVX2) or 16 (AVX-512) groups at once: their bytes must equal
// ref's exactly (tests/kernels/group_fits_test_util.h).
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/x86/x86.h"
#include "tests/kernels/group_fits_test_util.h"

namespace runnel {
namespace {

std::vector<const KernelTable*> x86_tables() {
  std::vector<const KernelTable*> tables;
  if (avx2_kernels() != nullptr) tables.push_back(avx2_kernels());
  if (avx512_kernels() != nullptr) tables.push_back(avx512_kernels());
  if (tables.empty()) WARN("CPU lacks AVX2: x86 model quantizer tests skipped");
  return tables;
}

TEST_CASE("x86 k-quant model quantizers give ref's bytes", "[avx2][avx512]") {
  for (const KernelTable* t : x86_tables()) test::check_group_fit_quantizers(*t);
}

TEST_CASE("x86 importance-weighted k-quant quantizers give ref's bytes", "[avx2][avx512]") {
  for (const KernelTable* t : x86_tables()) test::check_group_fit_weighted_quantizers(*t);
}

}  // namespace
}  // namespace runnel
