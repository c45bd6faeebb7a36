// Builds the x86 kernel tables from the reference tables plus the per-ISA entries, and
// checks the CPU. Compiled for baseline x86-64 (no -mavx2): everything here must run on
// any x86-64 CPU, since it decides whether the AVX2 code may run at all.
#include <cstddef>

#include "kernels/float_gemm_pack.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/ref.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx512_dots.h"
#include "kernels/x86/avx512_gemm.h"
#include "kernels/x86/x8.h"
#include "kernels/x86/x86.h"
#include "kernels/x86/x8_layout.h"

namespace runnel {
namespace {

KernelTable build_avx2_table() {
  KernelTable t = ref_kernels();  // types not sped up keep their reference entries
  t.isa = "avx2";
  auto dot = [&t](GgmlType type, VecDotFn fn) {
    t.types[static_cast<uint32_t>(type)].vec_dot = fn;
  };
  auto quant = [&t](GgmlType type, QuantizeRowFn fn) {
    t.types[static_cast<uint32_t>(type)].quantize_row = fn;
  };
  using G = GgmlType;
  dot(G::F32, avx2::vec_dot_f32);
  dot(G::F16, avx2::vec_dot_f16);
  dot(G::BF16, avx2::vec_dot_bf16);
  dot(G::Q4_0, avx2::vec_dot_q4_0);
  dot(G::Q4_1, avx2::vec_dot_q4_1);
  dot(G::Q5_0, avx2::vec_dot_q5_0);
  dot(G::Q5_1, avx2::vec_dot_q5_1);
  dot(G::Q8_0, avx2::vec_dot_q8_0);
  dot(G::Q2_K, avx2::vec_dot_q2_k);
  dot(G::Q3_K, avx2::vec_dot_q3_k);
  dot(G::Q4_K, avx2::vec_dot_q4_k);
  dot(G::Q5_K, avx2::vec_dot_q5_k);
  dot(G::Q6_K, avx2::vec_dot_q6_k);
  dot(G::MXFP4, avx2::vec_dot_mxfp4);
  dot(G::IQ4_NL, avx2::vec_dot_iq4_nl);
  dot(G::IQ4_XS, avx2::vec_dot_iq4_xs);
  // Activation quantizers (Q8_0 is also a weight type; its quantizer is exact either way).
  quant(G::Q8_0, avx2::quantize_row_q8_0);
  quant(G::Q8_1, avx2::quantize_row_q8_1);
  quant(G::Q8_K, avx2::quantize_row_q8_k);
  // f16 rows: the KV cache's K stores, attention's query rows, the values it decodes.
  quant(G::F16, avx2::quantize_row_f16);
  t.types[static_cast<uint32_t>(G::F16)].dequantize_row = avx2::dequantize_row_f16;
  // Model quantizers (runnel quantize): ref's k-quant searches on 8 groups at once.
  RUNNEL_SET_GROUP_FIT_QUANTIZERS(t, avx2);
  // Batched prefill products: the activation formats pack, the weight types multiply.
  auto pack = [&t](GgmlType type, GemmPackBytesFn bytes, GemmPackFn fn) {
    t.types[static_cast<uint32_t>(type)].gemm_pack_bytes = bytes;
    t.types[static_cast<uint32_t>(type)].gemm_pack = fn;
  };
  auto gemm = [&t](GgmlType type, GemmFn fn) {
    t.types[static_cast<uint32_t>(type)].gemm = fn;
  };
  pack(G::Q8_0, avx2::gemm_pack_bytes_q8_0, avx2::gemm_pack_q8_0);
  pack(G::Q8_1, avx2::gemm_pack_bytes_q8_1, avx2::gemm_pack_q8_1);
  pack(G::Q8_K, avx2::gemm_pack_bytes_q8_k, avx2::gemm_pack_q8_k);
  gemm(G::Q4_0, avx2::gemm_q4_0);
  gemm(G::Q4_1, avx2::gemm_q4_1);
  gemm(G::Q5_0, avx2::gemm_q5_0);
  gemm(G::Q5_1, avx2::gemm_q5_1);
  gemm(G::Q8_0, avx2::gemm_q8_0);
  gemm(G::Q2_K, avx2::gemm_q2_k);
  gemm(G::Q3_K, avx2::gemm_q3_k);
  gemm(G::Q4_K, avx2::gemm_q4_k);
  gemm(G::Q5_K, avx2::gemm_q5_k);
  gemm(G::Q6_K, avx2::gemm_q6_k);
  gemm(G::MXFP4, avx2::gemm_mxfp4);
  gemm(G::IQ4_NL, avx2::gemm_iq4_nl);
  gemm(G::IQ4_XS, avx2::gemm_iq4_xs);
  // Float weights: the activation rows (F32, F16, BF16) widen to f32 groups at packing.
  pack(G::F32, gemm_pack_bytes_float, gemm_pack_f32);
  pack(G::F16, gemm_pack_bytes_float, gemm_pack_f16);
  pack(G::BF16, gemm_pack_bytes_float, gemm_pack_bf16);
  gemm(G::F32, avx2::gemm_f32);
  gemm(G::F16, avx2::gemm_f16);
  gemm(G::BF16, avx2::gemm_bf16);
  // Row-interleaved layout for resident weights (decode and prefill).
  auto x8 = [&t](GgmlType type, RepackX8Fn repack, GemmX8Fn fn) {
    t.types[static_cast<uint32_t>(type)].repack_x8 = repack;
    t.types[static_cast<uint32_t>(type)].gemm_x8 = fn;
  };
  x8(G::Q4_0, x8::repack_q4_0, avx2::gemm_x8_q4_0);
  x8(G::Q8_0, x8::repack_q8_0, avx2::gemm_x8_q8_0);
  x8(G::Q6_K, x8::repack_q6_k, avx2::gemm_x8_q6_k);
  x8(G::Q4_K, x8::repack_q4_k, avx2::gemm_x8_q4_k);
  x8(G::Q4_1, x8::repack_q4_1, avx2::gemm_x8_q4_1);
  x8(G::Q5_0, x8::repack_q5_0, avx2::gemm_x8_q5_0);
  x8(G::Q5_1, x8::repack_q5_1, avx2::gemm_x8_q5_1);
  x8(G::MXFP4, x8::repack_mxfp4, avx2::gemm_x8_mxfp4);
  static_assert(sizeof(ref::BlockIq4Nl) == sizeof(ref::BlockQ4_0) &&
                offsetof(ref::BlockIq4Nl, qs) == offsetof(ref::BlockQ4_0, qs));
  x8(G::IQ4_NL, x8::repack_q4_0, avx2::gemm_x8_iq4_nl);  // an IQ4_NL block is a Q4_0 block's bytes
  x8(G::IQ4_XS, x8::repack_iq4_xs, avx2::gemm_x8_iq4_xs);
  t.types[static_cast<uint32_t>(G::Q4_0)].unpack_x8_row = x8::unpack_row_q4_0;
  t.types[static_cast<uint32_t>(G::Q4_1)].unpack_x8_row = x8::unpack_row_q4_1;
  t.types[static_cast<uint32_t>(G::Q5_0)].unpack_x8_row = x8::unpack_row_q5_0;
  t.types[static_cast<uint32_t>(G::Q5_1)].unpack_x8_row = x8::unpack_row_q5_1;
  t.types[static_cast<uint32_t>(G::Q8_0)].unpack_x8_row = x8::unpack_row_q8_0;
  t.types[static_cast<uint32_t>(G::Q4_K)].unpack_x8_row = x8::unpack_row_q4_k;
  t.types[static_cast<uint32_t>(G::Q6_K)].unpack_x8_row = x8::unpack_row_q6_k;
  t.types[static_cast<uint32_t>(G::MXFP4)].unpack_x8_row = x8::unpack_row_mxfp4;
  t.types[static_cast<uint32_t>(G::IQ4_NL)].unpack_x8_row = x8::unpack_row_q4_0;
  t.types[static_cast<uint32_t>(G::IQ4_XS)].unpack_x8_row = x8::unpack_row_iq4_xs;
  t.types[static_cast<uint32_t>(G::Q4_K)].x8_block_bytes = sizeof(x8::BlockQ4_Kx8);
  t.types[static_cast<uint32_t>(G::IQ4_XS)].x8_block_bytes = sizeof(x8::BlockIq4Xsx8);
  t.types[static_cast<uint32_t>(G::Q8_0)].block_sums = ref::block_sums_q8_0;
  t.types[static_cast<uint32_t>(G::Q4_0)].gemm_x8_reads_sums = true;  // the -8 (-16) offsets
  t.types[static_cast<uint32_t>(G::Q5_0)].gemm_x8_reads_sums = true;
  return t;
}

FloatOps build_avx2_float_ops() {
  FloatOps ops = ref_float_ops();
  ops.isa = "avx2";
  ops.rms_norm = avx2::rms_norm;
  ops.softmax = avx2::softmax;
  ops.silu = avx2::silu;
  ops.swiglu = avx2::swiglu;
  ops.gelu = avx2::gelu;
  ops.geglu = avx2::geglu;
  ops.softcap = avx2::softcap;
  ops.add = avx2::add;
  ops.mul = avx2::mul;
  ops.scale = avx2::scale;
  ops.axpy = avx2::axpy;
  ops.rope_apply = avx2::rope_apply;
  ops.dot_f16_f32 = avx2::dot_f16_f32;
  ops.dot_f16_f32_rows = avx2::dot_f16_f32_rows;
  return ops;
}

}  // namespace

bool cpu_has_avx2() {
  // __builtin_cpu_supports checks CPUID and that the OS saves the YMM registers.
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
}

const KernelTable* avx2_kernels() {
  if (!cpu_has_avx2()) return nullptr;
  static const KernelTable table = build_avx2_table();
  return &table;
}

const FloatOps* avx2_float_ops() {
  if (!cpu_has_avx2()) return nullptr;
  static const FloatOps ops = build_avx2_float_ops();
  return &ops;
}

}  // namespace runnel

namespace runnel {
namespace {

// The AVX-512 set: the AVX2 table with the AVX-512 entries swapped in: the per-token
// dots (VNNI for the quantized types; BF16 with vdpbf16ps where the CPU has
// AVX512-BF16, else widened into 512-bit FMA) and the batched products, gemm and
// gemm_x8. Quantizers and float ops are the AVX2 ones; the packed groups and the x8
// layouts are shared but Q6_K's (pair order here, with its activations prepared). Every
// quantized gemm but Q2_K's and Q3_K's is a VNNI one.
KernelTable build_avx512_table(const KernelTable& avx2_table) {
  KernelTable t = avx2_table;
  t.isa = "avx512";
  auto dot = [&t](GgmlType type, VecDotFn fn) {
    t.types[static_cast<uint32_t>(type)].vec_dot = fn;
  };
  auto gemm = [&t](GgmlType type, GemmFn fn) {
    t.types[static_cast<uint32_t>(type)].gemm = fn;
  };
  using G = GgmlType;
  // F32 and F16 keep the AVX2 dots: avx512::vec_dot_f32 / _f16 measured slower on Zen 4.
  dot(G::BF16, cpu_has_avx512_bf16() ? avx512::vec_dot_bf16_dpbf16 : avx512::vec_dot_bf16);
  dot(G::Q4_0, avx512::vec_dot_q4_0);
  dot(G::Q4_1, avx512::vec_dot_q4_1);
  dot(G::Q5_0, avx512::vec_dot_q5_0);
  dot(G::Q5_1, avx512::vec_dot_q5_1);
  dot(G::Q8_0, avx512::vec_dot_q8_0);
  dot(G::Q2_K, avx512::vec_dot_q2_k);
  dot(G::Q3_K, avx512::vec_dot_q3_k);
  dot(G::Q4_K, avx512::vec_dot_q4_k);
  dot(G::Q5_K, avx512::vec_dot_q5_k);
  dot(G::Q6_K, avx512::vec_dot_q6_k);
  dot(G::MXFP4, avx512::vec_dot_mxfp4);
  dot(G::IQ4_NL, avx512::vec_dot_iq4_nl);
  dot(G::IQ4_XS, avx512::vec_dot_iq4_xs);
  gemm(G::Q4_0, avx512::gemm_q4_0);
  gemm(G::Q4_1, avx512::gemm_q4_1);
  gemm(G::Q5_0, avx512::gemm_q5_0);
  gemm(G::Q5_1, avx512::gemm_q5_1);
  gemm(G::Q8_0, avx512::gemm_q8_0);
  gemm(G::Q4_K, avx512::gemm_q4_k);
  gemm(G::Q5_K, avx512::gemm_q5_k);
  gemm(G::Q6_K, avx512::gemm_q6_k);
  gemm(G::MXFP4, avx512::gemm_mxfp4);
  gemm(G::IQ4_NL, avx512::gemm_iq4_nl);
  gemm(G::IQ4_XS, avx512::gemm_iq4_xs);
  // The inherited f32 tile for BF16 weights is slower than the vdpbf16ps dot per token,
  // so prompts keep the dot.
  if (cpu_has_avx512_bf16()) gemm(G::BF16, nullptr);
  auto x8 = [&t](GgmlType type, GemmX8Fn fn) {
    t.types[static_cast<uint32_t>(type)].gemm_x8 = fn;
  };
  x8(G::Q4_0, avx512::gemm_x8_q4_0);
  x8(G::Q8_0, avx512::gemm_x8_q8_0);
  x8(G::Q6_K, avx512::gemm_x8_q6_k);
  x8(G::Q4_K, avx512::gemm_x8_q4_k);
  x8(G::Q4_1, avx512::gemm_x8_q4_1);
  x8(G::Q5_0, avx512::gemm_x8_q5_0);
  x8(G::Q5_1, avx512::gemm_x8_q5_1);
  x8(G::MXFP4, avx512::gemm_x8_mxfp4);
  x8(G::IQ4_NL, avx512::gemm_x8_iq4_nl);
  x8(G::IQ4_XS, avx512::gemm_x8_iq4_xs);
  // Q6_K in pair order, against activations rearranged once a product (x8.h)
  TypeKernels& q6_k = t.types[static_cast<uint32_t>(G::Q6_K)];
  q6_k.repack_x8 = x8::repack_q6_k_pairs;
  q6_k.unpack_x8_row = x8::unpack_row_q6_k_pairs;
  q6_k.gemm_x8_reads_sums = true;
  q6_k.x8_prepare = avx512::prepare_q6_k;
  q6_k.x8_prepared_block_ints = avx512::kQ6KPreparedBlockInts;
  // Q4_K's Q8_K sums per 32, negated and narrowed once a product
  TypeKernels& q4_k = t.types[static_cast<uint32_t>(G::Q4_K)];
  q4_k.gemm_x8_reads_sums = true;
  q4_k.x8_prepare = avx512::prepare_q4_k;
  q4_k.x8_prepared_block_ints = avx512::kQ4KPreparedBlockInts;
  // Model quantizers (runnel quantize): ref's k-quant searches on 16 groups at once.
  RUNNEL_SET_GROUP_FIT_QUANTIZERS(t, avx512);
  return t;
}

}  // namespace

bool cpu_has_avx512() {
  // __builtin_cpu_supports also checks that the OS saves the ZMM / mask registers.
  static const bool has = cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
  return has;
}

bool cpu_has_avx512_bf16() {
  static const bool has = cpu_has_avx512() && __builtin_cpu_supports("avx512bf16");
  return has;
}

const KernelTable* avx512_kernels() {
  if (!cpu_has_avx512()) return nullptr;
  static const KernelTable table = build_avx512_table(*avx2_kernels());
  return &table;
}

const FloatOps* avx512_float_ops() {
  if (!cpu_has_avx512()) return nullptr;
  static const FloatOps ops = [] {
    FloatOps o = *avx2_float_ops();
    o.isa = "avx512";
    return o;
  }();
  return &ops;
}

}  // namespace runnel
