// The fuzz build's answer to kernels/x86/x86.h: no AVX2 or AVX-512 table, so the
// dispatch in kernels/kernels.cpp settles on the ref kernels. The fuzz targets parse
// untrusted inputs; the only model they run is the tiny one of the unit tests, for
// which the scalar ref kernels (the oracle every ISA is tested against) are enough.
// It also keeps the per-ISA files out of the clang build: clang-16 rejects
// __builtin_cpu_supports("f16c") in kernels/x86/x86_tables.cpp, which g++ accepts.
#include "kernels/x86/x86.h"

namespace runnel {

bool cpu_has_avx2() { return false; }
const KernelTable* avx2_kernels() { return nullptr; }
const FloatOps* avx2_float_ops() { return nullptr; }
bool cpu_has_avx512() { return false; }
const KernelTable* avx512_kernels() { return nullptr; }
const FloatOps* avx512_float_ops() { return nullptr; }

}  // namespace runnel
