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

}  // namespace runnel
