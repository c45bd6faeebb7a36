// Builds the NEON kernel tables from the reference tables plus the NEON entries, and
// checks the CPU. Compiled for baseline aarch64 (no +dotprod): everything here must run
// on any aarch64 CPU, since it decides whether the dot-product code may run at all.
//
// Without the dot-product extension the table still has every NEON entry that does not
// need it (the baseline set: all 16 dots and the 13 quantized batched products with
// widening multiplies, the 3 quantizers and the 3 activation packings); with it, the 13
// integer dots and the 13 batched products are replaced by their vdotq_s32 versions.
#include <sys/auxv.h>

#include "kernels/arm/arm.h"
#include "kernels/arm/neon.h"
#include "kernels/float_gemm_pack.h"

namespace runnel {
namespace {

using DotFn = float (*)(int64_t, const void*, const void*);
using GemmFn = void (*)(int64_t, const void*, size_t, int, const void*, int, float*, size_t);

void set_dot(KernelTable& t, GgmlType type, DotFn fn) {
  t.types[static_cast<uint32_t>(type)].vec_dot = fn;
}

void set_gemm(KernelTable& t, GgmlType type, GemmFn fn) {
  t.types[static_cast<uint32_t>(type)].gemm = fn;
}

KernelTable build_neon_baseline_table() {
  KernelTable t = ref_kernels();  // types not sped up keep their reference entries
  t.isa = "neon";
  auto quant = [&t](GgmlType type, void (*fn)(const float*, void*, int64_t)) {
    t.types[static_cast<uint32_t>(type)].quantize_row = fn;
  };
  using G = GgmlType;
  set_dot(t, G::F32, neon::vec_dot_f32);
  set_dot(t, G::F16, neon::vec_dot_f16);
  set_dot(t, G::BF16, neon::vec_dot_bf16);
  set_dot(t, G::Q4_0, neon::vec_dot_q4_0);
  set_dot(t, G::Q4_1, neon::vec_dot_q4_1);
  set_dot(t, G::Q5_0, neon::vec_dot_q5_0);
  set_dot(t, G::Q5_1, neon::vec_dot_q5_1);
  set_dot(t, G::Q8_0, neon::vec_dot_q8_0);
  set_dot(t, G::Q2_K, neon::vec_dot_q2_k);
  set_dot(t, G::Q3_K, neon::vec_dot_q3_k);
  set_dot(t, G::Q4_K, neon::vec_dot_q4_k);
  set_dot(t, G::Q5_K, neon::vec_dot_q5_k);
  set_dot(t, G::Q6_K, neon::vec_dot_q6_k);
  set_dot(t, G::MXFP4, neon::vec_dot_mxfp4);
  set_dot(t, G::IQ4_NL, neon::vec_dot_iq4_nl);
  set_dot(t, G::IQ4_XS, neon::vec_dot_iq4_xs);
  // Activation quantizers (Q8_0 is also a weight type; its quantizer is exact either way).
  quant(G::Q8_0, neon::quantize_row_q8_0);
  quant(G::Q8_1, neon::quantize_row_q8_1);
  quant(G::Q8_K, neon::quantize_row_q8_k);
  // Model quantizers (runnel quantize): ref's k-quant searches on 4 groups at once.
  RUNNEL_SET_GROUP_FIT_QUANTIZERS(t, neon);
  // Batched products: the activation packing (shared with the dotprod table) ...
  auto pack = [&t](GgmlType type, size_t (*bytes)(int64_t),
                   void (*fn)(int64_t, const void*, size_t, int, void*)) {
    t.types[static_cast<uint32_t>(type)].gemm_pack_bytes = bytes;
    t.types[static_cast<uint32_t>(type)].gemm_pack = fn;
  };
  pack(G::Q8_0, neon::gemm_pack_bytes_q8_0, neon::gemm_pack_q8_0);
  pack(G::Q8_1, neon::gemm_pack_bytes_q8_1, neon::gemm_pack_q8_1);
  pack(G::Q8_K, neon::gemm_pack_bytes_q8_k, neon::gemm_pack_q8_k);
  // ... and the weight side, with widening multiplies.
  set_gemm(t, G::Q4_0, neon::gemm_q4_0);
  set_gemm(t, G::Q4_1, neon::gemm_q4_1);
  set_gemm(t, G::Q5_0, neon::gemm_q5_0);
  set_gemm(t, G::Q5_1, neon::gemm_q5_1);
  set_gemm(t, G::Q8_0, neon::gemm_q8_0);
  set_gemm(t, G::Q2_K, neon::gemm_q2_k);
  set_gemm(t, G::Q3_K, neon::gemm_q3_k);
  set_gemm(t, G::Q4_K, neon::gemm_q4_k);
  set_gemm(t, G::Q5_K, neon::gemm_q5_k);
  set_gemm(t, G::Q6_K, neon::gemm_q6_k);
  set_gemm(t, G::MXFP4, neon::gemm_mxfp4);
  set_gemm(t, G::IQ4_NL, neon::gemm_iq4_nl);
  set_gemm(t, G::IQ4_XS, neon::gemm_iq4_xs);
  // Float weights (both tables): activation rows widen to f32 groups at packing.
  pack(G::F32, gemm_pack_bytes_float, gemm_pack_f32);
  pack(G::F16, gemm_pack_bytes_float, gemm_pack_f16);
  pack(G::BF16, gemm_pack_bytes_float, gemm_pack_bf16);
  set_gemm(t, G::F32, neon::gemm_f32);
  set_gemm(t, G::F16, neon::gemm_f16);
  set_gemm(t, G::BF16, neon::gemm_bf16);
  return t;
}

KernelTable build_neon_dotprod_table(const KernelTable& baseline) {
  KernelTable t = baseline;
  using G = GgmlType;
  set_dot(t, G::Q4_0, neon::dotprod::vec_dot_q4_0);
  set_dot(t, G::Q4_1, neon::dotprod::vec_dot_q4_1);
  set_dot(t, G::Q5_0, neon::dotprod::vec_dot_q5_0);
  set_dot(t, G::Q5_1, neon::dotprod::vec_dot_q5_1);
  set_dot(t, G::Q8_0, neon::dotprod::vec_dot_q8_0);
  set_dot(t, G::Q2_K, neon::dotprod::vec_dot_q2_k);
  set_dot(t, G::Q3_K, neon::dotprod::vec_dot_q3_k);
  set_dot(t, G::Q4_K, neon::dotprod::vec_dot_q4_k);
  set_dot(t, G::Q5_K, neon::dotprod::vec_dot_q5_k);
  set_dot(t, G::Q6_K, neon::dotprod::vec_dot_q6_k);
  set_dot(t, G::MXFP4, neon::dotprod::vec_dot_mxfp4);
  set_dot(t, G::IQ4_NL, neon::dotprod::vec_dot_iq4_nl);
  set_dot(t, G::IQ4_XS, neon::dotprod::vec_dot_iq4_xs);
  // Batched products over the baseline table's packed groups.
  set_gemm(t, G::Q4_0, neon::dotprod::gemm_q4_0);
  set_gemm(t, G::Q4_1, neon::dotprod::gemm_q4_1);
  set_gemm(t, G::Q5_0, neon::dotprod::gemm_q5_0);
  set_gemm(t, G::Q5_1, neon::dotprod::gemm_q5_1);
  set_gemm(t, G::Q8_0, neon::dotprod::gemm_q8_0);
  set_gemm(t, G::Q2_K, neon::dotprod::gemm_q2_k);
  set_gemm(t, G::Q3_K, neon::dotprod::gemm_q3_k);
  set_gemm(t, G::Q4_K, neon::dotprod::gemm_q4_k);
  set_gemm(t, G::Q5_K, neon::dotprod::gemm_q5_k);
  set_gemm(t, G::Q6_K, neon::dotprod::gemm_q6_k);
  set_gemm(t, G::MXFP4, neon::dotprod::gemm_mxfp4);
  set_gemm(t, G::IQ4_NL, neon::dotprod::gemm_iq4_nl);
  set_gemm(t, G::IQ4_XS, neon::dotprod::gemm_iq4_xs);
  return t;
}

FloatOps build_neon_float_ops() {
  FloatOps ops = ref_float_ops();  // rope_cos_sin stays ref's (double, once per position)
  ops.isa = "neon";
  ops.rms_norm = neon::rms_norm;
  ops.silu = neon::silu;
  ops.swiglu = neon::swiglu;
  ops.softmax = neon::softmax;
  ops.gelu = neon::gelu;
  ops.geglu = neon::geglu;
  ops.softcap = neon::softcap;
  ops.add = neon::add;
  ops.mul = neon::mul;
  ops.scale = neon::scale;
  ops.axpy = neon::axpy;
  ops.rope_apply = neon::rope_apply;
  return ops;
}

}  // namespace

bool cpu_has_neon() {
  return true;  // Advanced SIMD is part of every aarch64 CPU
}

bool cpu_has_dotprod() {
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return has;
}

const KernelTable* neon_baseline_kernels() {
  static const KernelTable table = build_neon_baseline_table();
  return &table;
}

const KernelTable* neon_dotprod_kernels() {
  if (!cpu_has_dotprod()) return nullptr;
  static const KernelTable table = build_neon_dotprod_table(*neon_baseline_kernels());
  return &table;
}

const KernelTable* neon_kernels() {
  const KernelTable* t = neon_dotprod_kernels();
  return t != nullptr ? t : neon_baseline_kernels();
}

const FloatOps* neon_float_ops() {
  static const FloatOps ops = build_neon_float_ops();
  return &ops;
}

}  // namespace runnel
