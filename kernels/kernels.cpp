// The one place where kernels are chosen. Tables are built once (function-local statics)
// and never modified; select_kernels() only swaps which table kernels() returns. That
// pointer is the single piece of global mutable state the conventions allow.
#include "kernels/kernels.h"

#include <atomic>

#include "kernels/ops.h"
#include "kernels/ref/ref.h"

#if defined(__x86_64__) && !defined(__EMSCRIPTEN__)
#include "kernels/x86/x86.h"
#define RUNNEL_HAVE_X86_KERNELS 1
#endif
#if defined(__EMSCRIPTEN__) && defined(__wasm_simd128__)
#include "kernels/wasm/wasm.h"
#define RUNNEL_HAVE_WASM_KERNELS 1
#endif
#if defined(__aarch64__)
#include "kernels/arm/arm.h"
#define RUNNEL_HAVE_ARM_KERNELS 1
#endif

namespace runnel {
namespace {

KernelTable build_ref_table() {
  KernelTable t;
  t.isa = "ref";
  auto set = [&t](GgmlType type, void (*deq)(const void*, float*, int64_t),
                  void (*quant)(const float*, void*, int64_t), GgmlType dot_type,
                  float (*dot)(int64_t, const void*, const void*)) {
    TypeKernels& k = t.types[static_cast<uint32_t>(type)];
    k.supported = true;
    k.dequantize_row = deq;
    k.quantize_row = quant;
    k.vec_dot_type = dot_type;
    k.vec_dot = dot;
  };
  using G = GgmlType;
  set(G::F32, ref::dequantize_row_f32, ref::quantize_row_f32, G::F32, ref::vec_dot_f32);
  set(G::F16, ref::dequantize_row_f16, ref::quantize_row_f16, G::F16, ref::vec_dot_f16);
  set(G::BF16, ref::dequantize_row_bf16, ref::quantize_row_bf16, G::BF16, ref::vec_dot_bf16);
  set(G::Q4_0, ref::dequantize_row_q4_0, ref::quantize_row_q4_0, G::Q8_0, ref::vec_dot_q4_0);
  set(G::Q4_1, ref::dequantize_row_q4_1, ref::quantize_row_q4_1, G::Q8_1, ref::vec_dot_q4_1);
  set(G::Q5_0, ref::dequantize_row_q5_0, ref::quantize_row_q5_0, G::Q8_0, ref::vec_dot_q5_0);
  set(G::Q5_1, ref::dequantize_row_q5_1, ref::quantize_row_q5_1, G::Q8_1, ref::vec_dot_q5_1);
  set(G::Q8_0, ref::dequantize_row_q8_0, ref::quantize_row_q8_0, G::Q8_0, ref::vec_dot_q8_0);
  // Activation-only formats: no weight x activation dot of their own.
  set(G::Q8_1, ref::dequantize_row_q8_1, ref::quantize_row_q8_1, G::Q8_1, nullptr);
  set(G::Q2_K, ref::dequantize_row_q2_k, ref::quantize_row_q2_k, G::Q8_K, ref::vec_dot_q2_k);
  set(G::Q3_K, ref::dequantize_row_q3_k, ref::quantize_row_q3_k, G::Q8_K, ref::vec_dot_q3_k);
  set(G::Q4_K, ref::dequantize_row_q4_k, ref::quantize_row_q4_k, G::Q8_K, ref::vec_dot_q4_k);
  set(G::Q5_K, ref::dequantize_row_q5_k, ref::quantize_row_q5_k, G::Q8_K, ref::vec_dot_q5_k);
  set(G::Q6_K, ref::dequantize_row_q6_k, ref::quantize_row_q6_k, G::Q8_K, ref::vec_dot_q6_k);
  set(G::Q8_K, ref::dequantize_row_q8_k, ref::quantize_row_q8_k, G::Q8_K, nullptr);
  set(G::MXFP4, ref::dequantize_row_mxfp4, ref::quantize_row_mxfp4, G::Q8_0, ref::vec_dot_mxfp4);
  set(G::IQ4_NL, ref::dequantize_row_iq4_nl, ref::quantize_row_iq4_nl, G::Q8_0,
      ref::vec_dot_iq4_nl);
  set(G::IQ4_XS, ref::dequantize_row_iq4_xs, ref::quantize_row_iq4_xs, G::Q8_K,
      ref::vec_dot_iq4_xs);
  auto weighted = [&t](GgmlType type, QuantizeRowWeightedFn fn) {
    t.types[static_cast<uint32_t>(type)].quantize_row_weighted = fn;
  };
  weighted(G::Q4_0, ref::quantize_row_q4_0_weighted);
  weighted(G::Q4_1, ref::quantize_row_q4_1_weighted);
  weighted(G::Q5_0, ref::quantize_row_q5_0_weighted);
  weighted(G::Q5_1, ref::quantize_row_q5_1_weighted);
  weighted(G::Q2_K, ref::quantize_row_q2_k_weighted);
  weighted(G::Q3_K, ref::quantize_row_q3_k_weighted);
  weighted(G::Q4_K, ref::quantize_row_q4_k_weighted);
  weighted(G::Q5_K, ref::quantize_row_q5_k_weighted);
  weighted(G::Q6_K, ref::quantize_row_q6_k_weighted);
  weighted(G::IQ4_NL, ref::quantize_row_iq4_nl_weighted);
  weighted(G::IQ4_XS, ref::quantize_row_iq4_xs_weighted);
  return t;
}

FloatOps build_ref_float_ops() {
  FloatOps ops;
  ops.isa = "ref";
  ops.rms_norm = ref::rms_norm;
  ops.softmax = ref::softmax;
  ops.silu = ref::silu;
  ops.swiglu = ref::swiglu;
  ops.gelu = ref::gelu;
  ops.geglu = ref::geglu;
  ops.softcap = ref::softcap;
  ops.add = ref::add;
  ops.mul = ref::mul;
  ops.scale = ref::scale;
  ops.axpy = ref::axpy;
  ops.rope_cos_sin = ref::rope_cos_sin;
  ops.rope_apply = ref::rope_apply;
  return ops;
}

// The selected tables; null means "not selected yet" (= reference).
std::atomic<const KernelTable*> g_selected_table{nullptr};
std::atomic<const FloatOps*> g_selected_float_ops{nullptr};

}  // namespace

const KernelTable& ref_kernels() {
  static const KernelTable table = build_ref_table();
  return table;
}

const FloatOps& ref_float_ops() {
  static const FloatOps ops = build_ref_float_ops();
  return ops;
}

const KernelTable& kernels() {
  const KernelTable* t = g_selected_table.load(std::memory_order_acquire);
  return t != nullptr ? *t : ref_kernels();
}

const FloatOps& float_ops() {
  const FloatOps* ops = g_selected_float_ops.load(std::memory_order_acquire);
  return ops != nullptr ? *ops : ref_float_ops();
}

namespace {

// Returns the table and ops of `isa` ("" = the best this CPU runs), or nulls when that
// ISA is unknown here or the CPU lacks it.
struct Selection {
  const KernelTable* table = nullptr;
  const FloatOps* ops = nullptr;
};

Selection find_isa(std::string_view isa) {
  if (isa == "ref") return {&ref_kernels(), &ref_float_ops()};
#if defined(RUNNEL_HAVE_X86_KERNELS)
  if (isa.empty() || isa == "avx512") {
    if (const KernelTable* t = avx512_kernels()) return {t, avx512_float_ops()};
  }
  if (isa.empty() || isa == "avx2") {
    if (const KernelTable* t = avx2_kernels()) return {t, avx2_float_ops()};
  }
#endif
#if defined(RUNNEL_HAVE_WASM_KERNELS)
  if (isa.empty() || isa == "simd128-relaxed") {
    if (const KernelTable* t = simd128_relaxed_kernels()) return {t, simd128_float_ops()};
  }
  if (isa.empty() || isa == "simd128") {
    if (const KernelTable* t = simd128_kernels()) return {t, simd128_float_ops()};
  }
#endif
#if defined(RUNNEL_HAVE_ARM_KERNELS)
  if (isa.empty() || isa == "neon") {
    if (const KernelTable* t = neon_kernels()) return {t, neon_float_ops()};
  }
#endif
  if (isa.empty()) return {&ref_kernels(), &ref_float_ops()};
  return {};
}

}  // namespace

bool select_kernels(std::string_view isa) {
  const Selection s = find_isa(isa);
  if (s.table == nullptr || s.ops == nullptr) return false;
  g_selected_float_ops.store(s.ops, std::memory_order_release);
  g_selected_table.store(s.table, std::memory_order_release);
  return true;
}

}  // namespace runnel
