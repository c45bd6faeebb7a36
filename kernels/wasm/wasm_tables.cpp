// Builds the SIMD128 kernel tables from the reference tables plus the SIMD128 entries.
#include "kernels/wasm/wasm.h"

namespace runnel {
namespace {

KernelTable build_simd128_table() {
  KernelTable t = ref_kernels();  // types not sped up keep their reference entries
  t.isa = "simd128";
  return t;
}

FloatOps build_simd128_float_ops() {
  FloatOps ops = ref_float_ops();
  ops.isa = "simd128";
  return ops;
}

}  // namespace

const KernelTable* simd128_kernels() {
  static const KernelTable table = build_simd128_table();
  return &table;
}

const FloatOps* simd128_float_ops() {
  static const FloatOps ops = build_simd128_float_ops();
  return &ops;
}

}  // namespace runnel
