// Declarations of the WebAssembly SIMD128 kernels (defined in the simd128_*.cpp files; the
// wasm build compiles every file with -msimd128). Same signatures and contracts as
// kernels/ref/ref.h and kernels/ref/ops.h; reach them through simd128_kernels() /
// simd128_float_ops() (kernels/wasm/wasm.h). Tested in tests/kernels/wasm/simd128_*test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ref/ops.h"

namespace runnel::simd128 {

// ---- legacy 32-element blocks (simd128_legacy.cpp). Integer sums per block are exact;
// only the float accumulation order differs from ref.
float vec_dot_q4_0(int64_t n, const void* w, const void* a);     // a: Q8_0
float vec_dot_q4_1(int64_t n, const void* w, const void* a);     // a: Q8_1
float vec_dot_q5_0(int64_t n, const void* w, const void* a);     // a: Q8_0
float vec_dot_q5_1(int64_t n, const void* w, const void* a);     // a: Q8_1
float vec_dot_q8_0(int64_t n, const void* w, const void* a);     // a: Q8_0
void quantize_row_q8_0(const float* src, void* dst, int64_t n);  // bit-exact with ref
void quantize_row_q8_1(const float* src, void* dst, int64_t n);  // bit-exact with ref

// ---- k-quants, 256-element super-blocks (simd128_kquants.cpp)
float vec_dot_q2_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q3_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q4_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q5_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q6_k(int64_t n, const void* w, const void* a);     // a: Q8_K
void quantize_row_q8_k(const float* src, void* dst, int64_t n);  // bit-exact with ref

// ---- 4-bit lookup formats (simd128_lut4.cpp): codes looked up by i8x16.swizzle; integer
// sums per block exact, the float order differs from ref (it is the x8 products').
float vec_dot_mxfp4(int64_t n, const void* w, const void* a);   // a: Q8_0
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a);  // a: Q8_0
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a);  // a: Q8_K

// ---- float rows (simd128_float.cpp): products rounded to float like ref, summed in
// 16 float lanes instead of ref's double lanes.
float vec_dot_f32(int64_t n, const void* w, const void* a);   // a: F32
float vec_dot_f16(int64_t n, const void* w, const void* a);   // a: F16
float vec_dot_bf16(int64_t n, const void* w, const void* a);  // a: BF16
// FloatOps::dot_f16_f32 (attention): the f16 row widened once per 8 halves, products
// summed in 2 chains of 4 lanes (a tail zero-padded into one more step), then reduced.
float dot_f16_f32(int64_t n, const uint16_t* w, const float* a);
// FloatOps::dot_f16_f32_multi: the row widened once for up to 4 float rows at a time (3
// in one pass too),
// each summed exactly as dot_f16_f32 sums it (the same bits).
void dot_f16_f32_multi(int64_t n, const uint16_t* w, const float* a, int64_t a_stride, int n_a,
                       float* out, int64_t out_stride);
// FloatOps::touch_rows: loads a byte of every cache line of the rows (attention's K / V).
void touch_rows(const void* first, int n, size_t stride, size_t bytes);
// f16 row -> floats, exact for every half (the KV cache's values, decoded per position).
void dequantize_row_f16(const void* src, float* dst, int64_t n);
// floats -> f16 row, bit-exact with ref (round to nearest even; the KV cache's stores,
// attention's queries and probabilities).
void quantize_row_f16(const float* src, void* dst, int64_t n);

// ---- float ops (simd128_ops.cpp). add, mul, scale, axpy, rope_apply and rms_norm are
// bit-exact with ref; softmax, silu and swiglu use a polynomial exp (within 1 ulp).
void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps);
void softmax(float* x, int64_t n);
void silu(const float* x, float* out, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);
// gelu, geglu: polynomial exp; softcap: tanh from a polynomial e^x - 1 (bounds in
// tests/kernels/activation_test_util.h).
void gelu(const float* x, float* out, int64_t n);
void geglu(const float* gate, const float* up, float* out, int64_t n);
void softcap(float* x, int64_t n, float cap);
void add(const float* a, const float* b, float* out, int64_t n);
void mul(const float* a, const float* b, float* out, int64_t n);
void scale(float* x, int64_t n, float s);
void axpy(const float* x, float* y, int64_t n, float s);
void rope_apply(float* x, int64_t n_rot, const float* cos_sin, ref::RopeStyle style);

// ---- row-interleaved ("x8") weights (simd128_x8_layout.h): repacking and its inverse
// (simd128_x8_repack.cpp, bit moves) and the products over a group (simd128_x8.cpp).
// Contracts: kernels/kernels.h TypeKernels::repack_x8 / gemm_x8 / unpack_x8_row.
void repack_x8_q4_0(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_q4_1(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_q5_0(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_q5_1(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_q8_0(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_q4_k(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_q6_k(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_mxfp4(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_iq4_nl(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_iq4_xs(int64_t n, const void* rows, size_t row_stride, void* group);
void unpack_x8_row_q4_0(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_q4_1(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_q5_0(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_q5_1(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_q8_0(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_q4_k(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_q6_k(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_mxfp4(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_iq4_nl(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_iq4_xs(int64_t n, const void* group, int r, void* row);
// The relaxed-SIMD layouts (relaxed/relaxed_layout.h; products in simd128_relaxed.cpp).
void repack_x8_q4_0_relaxed(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_q4_1_relaxed(int64_t n, const void* rows, size_t row_stride, void* group);
void unpack_x8_row_q4_0_relaxed(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_q4_1_relaxed(int64_t n, const void* group, int r, void* row);
void repack_x8_q4_k_relaxed(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_x8_q6_k_relaxed(int64_t n, const void* rows, size_t row_stride, void* group);
void unpack_x8_row_q4_k_relaxed(int64_t n, const void* group, int r, void* row);
void unpack_x8_row_q6_k_relaxed(int64_t n, const void* group, int r, void* row);
// a: nc activation rows a_stride apart (Q8_0 for Q4_0 / Q5_0 / Q8_0 / MXFP4 / IQ4_NL, Q8_1
// for Q4_1 / Q5_1, Q8_K for Q4_K / Q6_K / IQ4_XS); a_sums (Q4_0, Q5_0 only; the others
// ignore it, so MoE's routed experts may pass none): ref::block_sums_q8_0 of those rows,
// n / 32 per row.
void gemm_x8_q4_0(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride);
void gemm_x8_q4_1(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride);
void gemm_x8_q5_0(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride);
void gemm_x8_q5_1(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride);
void gemm_x8_q8_0(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride);
void gemm_x8_q4_k(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride);
void gemm_x8_q6_k(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride);
void gemm_x8_mxfp4(int64_t n, const void* group, const void* a, size_t a_stride,
                   const int32_t* a_sums, int nc, float* out, size_t out_stride);
void gemm_x8_iq4_nl(int64_t n, const void* group, const void* a, size_t a_stride,
                    const int32_t* a_sums, int nc, float* out, size_t out_stride);
void gemm_x8_iq4_xs(int64_t n, const void* group, const void* a, size_t a_stride,
                    const int32_t* a_sums, int nc, float* out, size_t out_stride);

}  // namespace runnel::simd128
