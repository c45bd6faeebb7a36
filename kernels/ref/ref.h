// The scalar reference kernels: one dequantize / quantize / vec_dot triple per ggml type.
// These are the oracle every ISA-specific kernel is tested against, and the table entries
// used when no faster ISA is selected (kernels/kernels.cpp fills the table from here).
//
// Shapes and contracts (all functions):
//   n         element count; a multiple of the type's block size (32 or 256; 1 for floats).
//   src / w   n elements in the type's block layout (kernels/ref/blocks.h).
//   dst       float[n] (dequantize) or the type's blocks (quantize).
//   a         the activation row in the partner type (kernels.h vec_dot_type).
// Quantizers round to nearest exactly like ggml's quantize_row_*_ref (no importance
// weights; IQ4_NL / IQ4_XS: like llama-quantize, see lut4_quants.cpp), so a row quantized
// here is bit-identical to llama.cpp's. Nothing allocates.
#pragma once

#include <cstdint>

namespace runnel::ref {

// ---- float types (float_types.cpp)
void dequantize_row_f32(const void* src, float* dst, int64_t n);
void quantize_row_f32(const float* src, void* dst, int64_t n);
float vec_dot_f32(int64_t n, const void* w, const void* a);  // a: F32
void dequantize_row_f16(const void* src, float* dst, int64_t n);
void quantize_row_f16(const float* src, void* dst, int64_t n);
float vec_dot_f16(int64_t n, const void* w, const void* a);  // a: F16
void dequantize_row_bf16(const void* src, float* dst, int64_t n);
void quantize_row_bf16(const float* src, void* dst, int64_t n);
float vec_dot_bf16(int64_t n, const void* w, const void* a);  // a: BF16

// ---- legacy 32-element blocks (legacy_quants.cpp)
void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void quantize_row_q4_0(const float* src, void* dst, int64_t n);
float vec_dot_q4_0(int64_t n, const void* w, const void* a);  // a: Q8_0
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
float vec_dot_q4_1(int64_t n, const void* w, const void* a);  // a: Q8_1
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
float vec_dot_q5_0(int64_t n, const void* w, const void* a);  // a: Q8_0
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
float vec_dot_q5_1(int64_t n, const void* w, const void* a);  // a: Q8_1
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
// Sums of the quants of each 32-block of a Q8_0 row (n / 32 of them): the activation side
// data of the row-interleaved products (TypeKernels::block_sums).
void block_sums_q8_0(int64_t n, const void* a, int32_t* sums);
float vec_dot_q8_0(int64_t n, const void* w, const void* a);  // a: Q8_0
void dequantize_row_q8_1(const void* src, float* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);  // activation format

// ---- k-quants, 256-element super-blocks (k_quants.cpp, k_quants_dot.cpp)
void dequantize_row_q2_k(const void* src, float* dst, int64_t n);
void quantize_row_q2_k(const float* src, void* dst, int64_t n);
float vec_dot_q2_k(int64_t n, const void* w, const void* a);  // a: Q8_K
void dequantize_row_q3_k(const void* src, float* dst, int64_t n);
void quantize_row_q3_k(const float* src, void* dst, int64_t n);
float vec_dot_q3_k(int64_t n, const void* w, const void* a);  // a: Q8_K
void dequantize_row_q4_k(const void* src, float* dst, int64_t n);
void quantize_row_q4_k(const float* src, void* dst, int64_t n);
float vec_dot_q4_k(int64_t n, const void* w, const void* a);  // a: Q8_K
void dequantize_row_q5_k(const void* src, float* dst, int64_t n);
void quantize_row_q5_k(const float* src, void* dst, int64_t n);
float vec_dot_q5_k(int64_t n, const void* w, const void* a);  // a: Q8_K
void dequantize_row_q6_k(const void* src, float* dst, int64_t n);
void quantize_row_q6_k(const float* src, void* dst, int64_t n);
float vec_dot_q6_k(int64_t n, const void* w, const void* a);  // a: Q8_K
void dequantize_row_q8_k(const void* src, float* dst, int64_t n);
void quantize_row_q8_k(const float* src, void* dst, int64_t n);  // activation format

// ---- 4-bit codes into a 16-value table (lut4_quants.cpp; tables in lut4_values.h)
void dequantize_row_mxfp4(const void* src, float* dst, int64_t n);
void quantize_row_mxfp4(const float* src, void* dst, int64_t n);
float vec_dot_mxfp4(int64_t n, const void* w, const void* a);  // a: Q8_0
void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n);
void quantize_row_iq4_nl(const float* src, void* dst, int64_t n);
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a);  // a: Q8_0
void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n);
void quantize_row_iq4_xs(const float* src, void* dst, int64_t n);
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a);  // a: Q8_K
// The IQ4 quantizers with importance weights (importance[n], one per element, e.g. an
// imatrix's column weights): ggml's quantize_iq4_nl / quantize_iq4_xs with quant_weights.
// nullptr gives the plain quantizers above.
void quantize_row_iq4_nl_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_iq4_xs_weighted(const float* src, void* dst, int64_t n, const float* importance);

// ---- importance-weighted quantizers (quant_weighted.cpp): what llama-quantize writes with
// an imatrix (ggml's quantize_q4_0 .. quantize_q6_K with quant_weights). src is exactly one
// row of n elements (the 32-element types weight by a mean over the whole row);
// importance[n] holds the row's column weights. nullptr gives the plain quantizers above.
void quantize_row_q4_0_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_q4_1_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_q5_0_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_q5_1_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_q2_k_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_q3_k_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_q4_k_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_q5_k_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_q6_k_weighted(const float* src, void* dst, int64_t n, const float* importance);

}  // namespace runnel::ref
