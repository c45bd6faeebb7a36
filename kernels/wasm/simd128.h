// Declarations of the WebAssembly SIMD128 kernels (simd128_*.cpp; the wasm build
// compiles everything with -msimd128). Same signatures and contracts as kernels/ref/ref.h
// and kernels/ref/ops.h; tested against them in tests/kernels/wasm/simd128_test.cpp.
#pragma once

#include <cstdint>

#include "kernels/ref/ops.h"

namespace runnel::simd128 {

// ---- quantized dots (simd128_quants.cpp). Integer products are exact (int8 widened
// to int16, i32x4.dot_i16x8); only the float accumulation order differs from ref.
float vec_dot_q4_0(int64_t n, const void* w, const void* a);  // a: Q8_0
float vec_dot_q4_1(int64_t n, const void* w, const void* a);  // a: Q8_1
float vec_dot_q5_0(int64_t n, const void* w, const void* a);  // a: Q8_0
float vec_dot_q5_1(int64_t n, const void* w, const void* a);  // a: Q8_1
float vec_dot_q8_0(int64_t n, const void* w, const void* a);  // a: Q8_0
float vec_dot_q2_k(int64_t n, const void* w, const void* a);  // a: Q8_K
float vec_dot_q3_k(int64_t n, const void* w, const void* a);  // a: Q8_K
float vec_dot_q4_k(int64_t n, const void* w, const void* a);  // a: Q8_K
float vec_dot_q5_k(int64_t n, const void* w, const void* a);  // a: Q8_K
float vec_dot_q6_k(int64_t n, const void* w, const void* a);  // a: Q8_K

// ---- float rows and ops (simd128_float.cpp): float accumulation in 4 or 16 lanes
// instead of ref's double lanes; bounds in the test.
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);
void dequantize_row_f16(const void* src, float* dst, int64_t n);  // exact

void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps);
void softmax(float* x, int64_t n);
void silu(const float* x, float* out, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);
void add(const float* a, const float* b, float* out, int64_t n);
void mul(const float* a, const float* b, float* out, int64_t n);
void scale(float* x, int64_t n, float s);
void axpy(const float* x, float* y, int64_t n, float s);

}  // namespace runnel::simd128
