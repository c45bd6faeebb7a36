// The packed activation groups of the x86 batched products (avx2_gemm.cpp packs them;
// the AVX2 and AVX-512 gemm kernels read them). Plain structs, no intrinsics: 8 tokens
// (kGemmCols) per group, laid out so that one 256-bit load gives 4 consecutive quants of
// each token (q[k][c] = elements 4k .. 4k + 3 of token c) and one load gives a per-token
// value of every token (d, sums).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/types.h"

namespace runnel::gemm {

// One 32-element block of 8 tokens.
struct PackedQ8_0 {
  float d[kGemmCols];
  int32_t sum[kGemmCols];  // sum of the token's 32 quants (for weight offsets)
  int8_t q[kQK / 4][kGemmCols][4];
};
struct PackedQ8_1 {
  float d[kGemmCols];
  float s[kGemmCols];  // the block's s = d * sum(q), as Q8_1 stores it (f16)
  int8_t q[kQK / 4][kGemmCols][4];
};
// One 256-element super-block of 8 tokens. bsums[p][c] = the token's sums of 16-element
// groups 2p and 2p + 1 as an int16 pair, so one madd applies two group scales at once.
struct PackedQ8_K {
  float d[kGemmCols];
  int16_t bsums[kQK_K / 32][kGemmCols][2];
  int8_t q[kQK_K / 4][kGemmCols][4];
};
static_assert(sizeof(PackedQ8_0) == 320 && sizeof(PackedQ8_1) == 320 && sizeof(PackedQ8_K) == 2336);

}  // namespace runnel::gemm
