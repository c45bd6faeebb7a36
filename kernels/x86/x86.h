// x86 kernel sets, for kernels/kernels.cpp (dispatch) and the tests. No intrinsics here:
// this header is included by code compiled for baseline x86-64.
#pragma once

#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace runnel {

// True when this CPU (and OS) can run the AVX2 set: AVX2 + FMA + F16C.
bool cpu_has_avx2();

// The AVX2 tables (the reference tables with the AVX2 entries swapped in), or nullptr
// when the CPU lacks AVX2 / FMA / F16C. Built once; read-only.
const KernelTable* avx2_kernels();
const FloatOps* avx2_float_ops();

// True when this CPU (and OS) can run the AVX-512 set: AVX-512 F/BW/VL/DQ/VNNI plus the
// AVX2 set (its tails and fallbacks use AVX2).
bool cpu_has_avx512();

// The AVX-512 tables (the AVX2 tables with the AVX-512 entries swapped in), or nullptr
// when the CPU lacks them. Built once; read-only.
const KernelTable* avx512_kernels();
const FloatOps* avx512_float_ops();

}  // namespace runnel
