// aarch64 NEON kernel set, for kernels/kernels.cpp (dispatch) and the tests.
#pragma once

#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace runnel {

// True when this CPU runs the NEON set (Advanced SIMD is mandatory on aarch64; the dot
// product extension is checked separately by the kernels that use it).
bool cpu_has_neon();

// The NEON tables (the reference tables with the NEON entries swapped in), or nullptr
// when the CPU lacks what they need. Built once; read-only.
const KernelTable* neon_kernels();
const FloatOps* neon_float_ops();

}  // namespace runnel
