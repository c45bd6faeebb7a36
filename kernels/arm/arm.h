// aarch64 NEON kernel sets, for kernels/kernels.cpp (dispatch) and the tests. No
// intrinsics here: this header is included by code compiled for baseline aarch64.
#pragma once

#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace runnel {

// True when this CPU runs the NEON set (Advanced SIMD is mandatory on aarch64).
bool cpu_has_neon();

// True when the CPU (as the kernel reports it: getauxval(AT_HWCAP) & HWCAP_ASIMDDP) has
// the dot-product extension (sdot / udot; ARMv8.2 optional, ARMv8.4 mandatory).
bool cpu_has_dotprod();

// The NEON table of this CPU (the reference table with the NEON entries swapped in):
// neon_dotprod_kernels() where the CPU has the dot-product extension, else
// neon_baseline_kernels(). Never nullptr on aarch64. Built once; read-only.
const KernelTable* neon_kernels();
const FloatOps* neon_float_ops();

// The two NEON tables, for the tests. Baseline: plain Advanced SIMD entries only (what
// a CPU without the dot-product extension runs). Dotprod: the baseline table with the
// vdotq_s32 integer dots swapped in; nullptr when the CPU lacks the extension.
const KernelTable* neon_baseline_kernels();
const KernelTable* neon_dotprod_kernels();

}  // namespace runnel
