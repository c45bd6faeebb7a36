// Builds the NEON kernel tables from the reference tables plus the NEON entries.
#include "kernels/arm/arm.h"

namespace runnel {
namespace {

KernelTable build_neon_table() {
  KernelTable t = ref_kernels();  // types not sped up keep their reference entries
  t.isa = "neon";
  return t;
}

FloatOps build_neon_float_ops() {
  FloatOps ops = ref_float_ops();
  ops.isa = "neon";
  return ops;
}

}  // namespace

const KernelTable* neon_kernels() {
  static const KernelTable table = build_neon_table();
  return &table;
}

const FloatOps* neon_float_ops() {
  static const FloatOps ops = build_neon_float_ops();
  return &ops;
}

}  // namespace runnel

namespace runnel {
bool cpu_has_neon() { return true; }  // Advanced SIMD is part of every aarch64 CPU
}  // namespace runnel
