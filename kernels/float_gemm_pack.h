// The packed activation groups of the float batched products (TypeKernels::gemm_pack on
// the F32, F16 and BF16 entries; read by the x86 and NEON float gemm kernels). One group
// holds up to kGemmCols tokens as f32, in chunks of kFloatChunk elements:
//   packed[k][c][j] = element 8k + j of token c   // [n8 / 8][kGemmCols][8], n8 = n rounded up to 8
// so the chunk of every token at element 8k is one contiguous 256-byte run. Elements past
// n and tokens past nc are 0, so a kernel may run whole chunks and whole token tiles.
// F16 and BF16 widen to f32 exactly, so packing loses nothing against vec_dot, which
// widens the same values per product.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace runnel {

constexpr int kFloatChunk = 8;

inline int64_t float_gemm_chunks(int64_t n) {
  return (n + kFloatChunk - 1) / kFloatChunk;
}

size_t gemm_pack_bytes_float(int64_t n);  // same for F32, F16 and BF16 rows
void gemm_pack_f32(int64_t n, const void* a, size_t a_stride, int nc, void* packed);
void gemm_pack_f16(int64_t n, const void* a, size_t a_stride, int nc, void* packed);
void gemm_pack_bf16(int64_t n, const void* a, size_t a_stride, int nc, void* packed);

}  // namespace runnel
