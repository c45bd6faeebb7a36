// The kernel table: one entry per ggml type plus the float ops of a forward pass.
// Filled once at start-up (select_kernels) and read-only afterwards. Every ISA
// implementation has the same signatures as kernels/ref and is tested against it.
#pragma once

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
};

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
