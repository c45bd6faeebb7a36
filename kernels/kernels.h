// The kernel table: one entry per ggml type plus the float ops of a forward pass.
// Filled once at start-up (select_kernels) and read-only afterwards. Every ISA
// implementation has the same signatures as kernels/ref and is tested against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernels/types.h"

namespace runnel {

struct TypeKernels {
  bool supported = false;
  // dst[0..n) = decoded row; n is a multiple of the block size.
  void (*dequantize_row)(const void* src, float* dst, int64_t n) = nullptr;
  // Round-to-nearest quantization of a float row into this type's blocks.
  void (*quantize_row)(const float* src, void* dst, int64_t n) = nullptr;
  // The activation format this type's dot product takes (Q8_0, Q8_K, F32 ...).
  GgmlType vec_dot_type = GgmlType::F32;
  // sum_i w[i] * a[i] over n elements; w in this type, a in vec_dot_type.
  float (*vec_dot)(int64_t n, const void* w, const void* a) = nullptr;

  // Optional batched products for prefill; nullptr where an ISA has none (matmul then
  // calls vec_dot per token). The activation side lives on the activation format's
  // entry (Q8_0, Q8_1, Q8_K): gemm_pack rearranges up to kGemmCols activation rows of
  // n elements into one packed group of gemm_pack_bytes(n) bytes (missing rows count
  // as zero). The weight side lives on the weight type's entry: gemm dots up to
  // kGemmRows weight rows with every row of one packed group:
  // out[c * out_stride + r] = vec_dot(n, w + r * w_stride, a_c) for r < nr, c < nc,
  // within the same error bounds as vec_dot.
  size_t (*gemm_pack_bytes)(int64_t n) = nullptr;
  void (*gemm_pack)(int64_t n, const void* a, size_t a_stride, int nc, void* packed) = nullptr;
  void (*gemm)(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride) = nullptr;
};

// Tile limits of TypeKernels::gemm / gemm_pack.
constexpr int kGemmRows = 8;
constexpr int kGemmCols = 8;

struct KernelTable {
  std::string_view isa = "ref";
  TypeKernels types[kGgmlTypeIdLimit];

  const TypeKernels& of(GgmlType t) const { return types[static_cast<uint32_t>(t)]; }
};

// The scalar reference table (always available; the oracle for every other ISA).
const KernelTable& ref_kernels();

// The table chosen at start-up. Before select_kernels() it is the reference table.
const KernelTable& kernels();

// Chooses the table for this machine; `isa` forces one ("ref", "avx2", ...) or is
// empty for automatic. Returns false if the forced ISA is unknown or unsupported.
bool select_kernels(std::string_view isa);

}  // namespace runnel
