// Builds the SIMD128 kernel tables from the reference tables plus the SIMD128 entries.
// A wasm engine either validates a SIMD128 module or refuses all of it, so there is no
// feature check: the wasm build always has these tables.
#include "kernels/ref/ref.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_x8_layout.h"
#include "kernels/wasm/wasm.h"

namespace runnel {
namespace {

KernelTable build_simd128_table() {
  KernelTable t = ref_kernels();  // types not sped up keep their reference entries
  t.isa = "simd128";
  auto dot = [&t](GgmlType type, float (*fn)(int64_t, const void*, const void*)) {
    t.types[static_cast<uint32_t>(type)].vec_dot = fn;
  };
  auto quant = [&t](GgmlType type, void (*fn)(const float*, void*, int64_t)) {
    t.types[static_cast<uint32_t>(type)].quantize_row = fn;
  };
  using G = GgmlType;
  dot(G::F32, simd128::vec_dot_f32);
  dot(G::F16, simd128::vec_dot_f16);
  dot(G::BF16, simd128::vec_dot_bf16);
  dot(G::Q4_0, simd128::vec_dot_q4_0);
  dot(G::Q4_1, simd128::vec_dot_q4_1);
  dot(G::Q5_0, simd128::vec_dot_q5_0);
  dot(G::Q5_1, simd128::vec_dot_q5_1);
  dot(G::Q8_0, simd128::vec_dot_q8_0);
  dot(G::Q2_K, simd128::vec_dot_q2_k);
  dot(G::Q3_K, simd128::vec_dot_q3_k);
  dot(G::Q4_K, simd128::vec_dot_q4_k);
  dot(G::Q5_K, simd128::vec_dot_q5_k);
  dot(G::Q6_K, simd128::vec_dot_q6_k);
  dot(G::MXFP4, simd128::vec_dot_mxfp4);
  dot(G::IQ4_NL, simd128::vec_dot_iq4_nl);
  dot(G::IQ4_XS, simd128::vec_dot_iq4_xs);
  // Activation quantizers (Q8_0 is also a weight type; its quantizer is exact either way).
  quant(G::Q8_0, simd128::quantize_row_q8_0);
  quant(G::Q8_1, simd128::quantize_row_q8_1);
  quant(G::Q8_K, simd128::quantize_row_q8_k);
  // f16 rows are the KV cache's values: decoded for every attended position.
  t.types[static_cast<uint32_t>(G::F16)].dequantize_row = simd128::dequantize_row_f16;
  t.types[static_cast<uint32_t>(G::F16)].quantize_row = simd128::quantize_row_f16;
  // Row-interleaved layout for resident weights (decode and prefill).
  auto x8 = [&t](auto... args) { set_x8(t, args...); };
  x8(G::Q4_0, simd128::repack_x8_q4_0, simd128::gemm_x8_q4_0, simd128::unpack_x8_row_q4_0,
     sizeof(simd128::x8::BlockQ4_0x8));
  x8(G::Q4_1, simd128::repack_x8_q4_1, simd128::gemm_x8_q4_1, simd128::unpack_x8_row_q4_1,
     sizeof(simd128::x8::BlockQ4_1x8));
  x8(G::Q5_0, simd128::repack_x8_q5_0, simd128::gemm_x8_q5_0, simd128::unpack_x8_row_q5_0,
     sizeof(simd128::x8::BlockQ5_0x8));
  x8(G::Q5_1, simd128::repack_x8_q5_1, simd128::gemm_x8_q5_1, simd128::unpack_x8_row_q5_1,
     sizeof(simd128::x8::BlockQ5_1x8));
  x8(G::Q8_0, simd128::repack_x8_q8_0, simd128::gemm_x8_q8_0, simd128::unpack_x8_row_q8_0,
     sizeof(simd128::x8::BlockQ8_0x8));
  x8(G::Q4_K, simd128::repack_x8_q4_k, simd128::gemm_x8_q4_k, simd128::unpack_x8_row_q4_k,
     sizeof(simd128::x8::BlockQ4_Kx8));
  x8(G::Q6_K, simd128::repack_x8_q6_k, simd128::gemm_x8_q6_k, simd128::unpack_x8_row_q6_k,
     sizeof(simd128::x8::BlockQ6_Kx8));
  x8(G::MXFP4, simd128::repack_x8_mxfp4, simd128::gemm_x8_mxfp4, simd128::unpack_x8_row_mxfp4,
     sizeof(simd128::x8::BlockMxfp4x8));
  x8(G::IQ4_NL, simd128::repack_x8_iq4_nl, simd128::gemm_x8_iq4_nl, simd128::unpack_x8_row_iq4_nl,
     sizeof(simd128::x8::BlockIq4Nlx8));
  x8(G::IQ4_XS, simd128::repack_x8_iq4_xs, simd128::gemm_x8_iq4_xs, simd128::unpack_x8_row_iq4_xs,
     sizeof(simd128::x8::BlockIq4Xsx8));
  // Q4_0 and Q5_0 take their -8 (-16) offsets through the activation's block sums (the
  // relaxed Q4_0 product too, which inherits the flag); the other x8 products read none.
  t.types[static_cast<uint32_t>(G::Q4_0)].gemm_x8_reads_sums = true;
  t.types[static_cast<uint32_t>(G::Q5_0)].gemm_x8_reads_sums = true;
  t.types[static_cast<uint32_t>(G::Q8_0)].block_sums = ref::block_sums_q8_0;
  return t;
}

FloatOps build_simd128_float_ops() {
  FloatOps ops = ref_float_ops();  // rope_cos_sin stays ref's (double, once per position)
  ops.isa = "simd128";
  ops.rms_norm = simd128::rms_norm;
  ops.softmax = simd128::softmax;
  ops.silu = simd128::silu;
  ops.swiglu = simd128::swiglu;
  ops.gelu = simd128::gelu;
  ops.geglu = simd128::geglu;
  ops.softcap = simd128::softcap;
  ops.add = simd128::add;
  ops.mul = simd128::mul;
  ops.scale = simd128::scale;
  ops.axpy = simd128::axpy;
  ops.rope_apply = simd128::rope_apply;
  ops.dot_f16_f32 = simd128::dot_f16_f32;
  ops.dot_f16_f32_multi = simd128::dot_f16_f32_multi;
  ops.touch_rows = simd128::touch_rows;
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
