// WebAssembly SIMD128 kernel set, for kernels/kernels.cpp (dispatch) and the tests.
// Only compiled into the Emscripten build (-msimd128 is on for every wasm file).
#pragma once

#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace runnel {

// The SIMD128 tables: the reference tables with the SIMD128 entries swapped in. A wasm
// engine either validates SIMD128 modules or refuses the whole module, so these are
// always available in the wasm build. Built once; read-only.
const KernelTable* simd128_kernels();
const FloatOps* simd128_float_ops();

// The SIMD128 table with relaxed-SIMD Q4_0 / Q4_1 / Q4_K / Q6_K x8 products
// (simd128_relaxed.cpp), or
// null where the engine does not run relaxed SIMD or the build had no clang++-16. Its
// float ops are simd128_float_ops().
const KernelTable* simd128_relaxed_kernels();

// Sets type's x8 entries of table t (the two tables above).
inline void set_x8(KernelTable& t, GgmlType type,
                   void (*repack)(int64_t, const void*, size_t, void*),
                   void (*gemm)(int64_t, const void*, const void*, size_t, const int32_t*, int,
                                float*, size_t),
                   void (*unpack)(int64_t, const void*, int, void*), uint32_t block_bytes) {
  TypeKernels& k = t.types[static_cast<uint32_t>(type)];
  k.repack_x8 = repack;
  k.gemm_x8 = gemm;
  k.unpack_x8_row = unpack;
  k.x8_block_bytes = block_bytes;
}

}  // namespace runnel
