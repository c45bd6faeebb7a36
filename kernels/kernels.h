// The kernel table: one entry per ggml type plus the float ops of a forward pass.
// Filled once at start-up (select_kernels) and read-only afterwards. Every ISA
// implementation has the same signatures as kernels/ref and is tested against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernels/types.h"

namespace runnel {

// The signatures of the table's entries, named once so that kernel files and table
// builders spell them the same way (plain function pointers: every backend's kernels are
// free functions with these signatures).
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n);
using QuantizeRowWeightedFn = void (*)(const float* src, void* dst, int64_t n, const float* importance);
using VecDotFn = float (*)(int64_t n, const void* w, const void* a);
using GemmPackBytesFn = size_t (*)(int64_t n);
using GemmPackFn = void (*)(int64_t n, const void* a, size_t a_stride, int nc, void* packed);
using GemmFn = void (*)(int64_t n, const void* w, size_t w_stride, int nr, const void* packed,
                        int nc, float* out, size_t out_stride);
using RepackX8Fn = void (*)(int64_t n, const void* rows, size_t row_stride, void* group);
using GemmX8Fn = void (*)(int64_t n, const void* group, const void* a, size_t a_stride,
                          const int32_t* a_sums, int nc, float* out, size_t out_stride);
using UnpackX8RowFn = void (*)(int64_t n, const void* group, int r, void* row);
using BlockSumsFn = void (*)(int64_t n, const void* a, int32_t* sums);
using X8PrepareFn = void (*)(int64_t n, const void* a, int32_t* out);

struct TypeKernels {
  bool supported = false;
  // dst[0..n) = decoded row; n is a multiple of the block size.
  DequantizeRowFn dequantize_row = nullptr;
  // Round-to-nearest quantization of a float row into this type's blocks.
  QuantizeRowFn quantize_row = nullptr;
  // The same with importance weights (an imatrix row of n values), as llama-quantize
  // --imatrix quantizes model weights; nullptr for the types whose quantization takes
  // none (floats, Q8_0, MXFP4). Every ISA's entries give ref's bytes.
  QuantizeRowWeightedFn quantize_row_weighted = nullptr;
  // The activation format this type's dot product takes (Q8_0, Q8_K, F32 ...).
  GgmlType vec_dot_type = GgmlType::F32;
  // sum_i w[i] * a[i] over n elements; w in this type, a in vec_dot_type.
  VecDotFn vec_dot = nullptr;

  // Optional batched products for prefill; nullptr where an ISA has none (matmul then
  // calls vec_dot per token). The activation side lives on the activation format's
  // entry (Q8_0, Q8_1, Q8_K): gemm_pack rearranges up to kGemmCols activation rows of
  // n elements into one packed group of gemm_pack_bytes(n) bytes (missing rows count
  // as zero). The weight side lives on the weight type's entry: gemm dots up to
  // kGemmRows weight rows with every row of one packed group:
  // out[c * out_stride + r] = vec_dot(n, w + r * w_stride, a_c) for r < nr, c < nc,
  // within the same error bounds as vec_dot.
  GemmPackBytesFn gemm_pack_bytes = nullptr;
  GemmPackFn gemm_pack = nullptr;
  GemmFn gemm = nullptr;

  // Optional row-interleaved layout ("x8"), for weights resident for the model's life:
  // repack_x8 rewrites 8 rows of n elements (row_stride apart) into one group of
  // x8_group_bytes() (8 * row bytes unless x8_block_bytes says otherwise) in which the
  // ISA's lanes are the rows. gemm_x8 dots
  // one group with up to kGemmCols activation rows in the vec_dot_type format (a_stride
  // apart): out[c * out_stride + r] = vec_dot(n, row r, a_c) for all 8 rows and c < nc,
  // within vec_dot's bounds. a_sums: for Q8_0 activations, the sums of every 32-quant
  // block (n / 32 per row, rows one after the other; block_sums of the Q8_0 entry), or the
  // rows x8_prepare makes; read only where gemm_x8_reads_sums is set (a caller without
  // them may pass null otherwise).
  RepackX8Fn repack_x8 = nullptr;
  GemmX8Fn gemm_x8 = nullptr;
  bool gemm_x8_reads_sums = false;
  // Row r (< 8) of a group back in the type's own block layout (row bytes).
  UnpackX8RowFn unpack_x8_row = nullptr;
  // Bytes of one block column of an x8 group (the 8 rows' block b); 0: 8 * the type's
  // block bytes. Layouts that unpack scales for the lanes take a little more.
  uint32_t x8_block_bytes = 0;
  // On activation formats that gemm_x8 needs them for: sums of each 32-quant block.
  BlockSumsFn block_sums = nullptr;
  // Where set (with gemm_x8_reads_sums), gemm_x8 reads as a_sums each activation row
  // rearranged by x8_prepare instead: x8_prepared_block_ints int32 a weight block, rows
  // one after the other (x8_act_maker / x8_act_ints below pick the right one).
  X8PrepareFn x8_prepare = nullptr;
  uint32_t x8_prepared_block_ints = 0;
};

// Tile limits of TypeKernels::gemm / gemm_pack; kX8Rows rows per repack_x8 group.
constexpr int kX8Rows = 8;
constexpr int kGemmRows = 8;
constexpr int kGemmCols = 8;

// Bytes of one x8 group (kX8Rows rows of n elements of `type`) in the layout of `k`.
inline size_t x8_group_bytes(const TypeKernels& k, GgmlType type, int64_t n) {
  if (k.x8_block_bytes == 0) return kX8Rows * row_bytes(type, n);
  return static_cast<size_t>(n / traits(type).block_size) * k.x8_block_bytes;
}

struct KernelTable {
  std::string_view isa = "ref";
  TypeKernels types[kGgmlTypeIdLimit];

  const TypeKernels& of(GgmlType t) const { return types[static_cast<uint32_t>(t)]; }
};

// The int32 of a_sums that gemm_x8 of `type` reads per activation row of n elements
// (0: it reads none), what makes them (the type's x8_prepare, or the activation
// format's block_sums; one maker over the same rows gives the same ints), and writing
// them for one row.
inline X8PrepareFn x8_act_maker(const KernelTable& t, GgmlType type) {
  const TypeKernels& k = t.of(type);
  if (!k.gemm_x8_reads_sums) return nullptr;
  return k.x8_prepare ? k.x8_prepare : t.of(k.vec_dot_type).block_sums;
}
inline size_t x8_act_ints(const KernelTable& t, GgmlType type, int64_t n) {
  const TypeKernels& k = t.of(type);
  if (!x8_act_maker(t, type)) return 0;
  if (k.x8_prepare) return static_cast<size_t>(n / traits(type).block_size) * k.x8_prepared_block_ints;
  return static_cast<size_t>(n / 32);
}
inline void x8_act_prepare(const KernelTable& t, GgmlType type, int64_t n, const void* a, int32_t* out) {
  if (const X8PrepareFn maker = x8_act_maker(t, type)) maker(n, a, out);
}

// The scalar reference table (always available; the oracle for every other ISA).
const KernelTable& ref_kernels();

// The table chosen at start-up. Before select_kernels() it is the reference table.
const KernelTable& kernels();

// Chooses the table for this machine; `isa` forces one ("ref", "avx2", ...) or is
// empty for automatic. Returns false if the forced ISA is unknown or unsupported.
bool select_kernels(std::string_view isa);

}  // namespace runnel
