// Declarations of the NEON kernels. Same signatures and contracts as kernels/ref/ref.h
// and kernels/ref/ops.h.
// runnel::neon: plain Advanced SIMD (baseline on every aarch64 CPU; neon_legacy.cpp,
// neon_kquants.cpp, neon_float.cpp, neon_ops.cpp).
// runnel::neon::dotprod: the integer dots again with the dot-product extension
// (neon_dotprod.cpp, the one file compiled with -march=armv8.2-a+dotprod); call them only
// after cpu_has_dotprod() (kernels/arm/arm.h).
#pragma once

#include <cstdint>

namespace runnel::neon {

// ---- legacy 32-element blocks (neon_legacy.cpp). Activations from quantize_row_q8_0/1:
// q in [-127, 127] (the widening int16 products of the baseline dots rely on it, see
// neon_common.h).
float vec_dot_q4_0(int64_t n, const void* w, const void* a);     // a: Q8_0
float vec_dot_q4_1(int64_t n, const void* w, const void* a);     // a: Q8_1
float vec_dot_q5_0(int64_t n, const void* w, const void* a);     // a: Q8_0
float vec_dot_q5_1(int64_t n, const void* w, const void* a);     // a: Q8_1
float vec_dot_q8_0(int64_t n, const void* w, const void* a);     // a: Q8_0
void quantize_row_q8_0(const float* src, void* dst, int64_t n);  // bit-exact with ref
void quantize_row_q8_1(const float* src, void* dst, int64_t n);  // bit-exact with ref

// ---- k-quants, 256-element super-blocks (neon_kquants.cpp)
float vec_dot_q2_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q3_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q4_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q5_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q6_k(int64_t n, const void* w, const void* a);     // a: Q8_K
void quantize_row_q8_k(const float* src, void* dst, int64_t n);  // bit-exact with ref

// ---- float rows (neon_float.cpp)
float vec_dot_f32(int64_t n, const void* w, const void* a);   // a: F32
float vec_dot_f16(int64_t n, const void* w, const void* a);   // a: F16
float vec_dot_bf16(int64_t n, const void* w, const void* a);  // a: BF16

// ---- float ops on exp (neon_ops.cpp): kernels/ref/ops.h contracts, polynomial e^x
void silu(const float* x, float* out, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);
void softmax(float* x, int64_t n);

}  // namespace runnel::neon

namespace runnel::neon::dotprod {

// The integer dots of runnel::neon with vdotq_s32 (neon_dotprod.cpp); same contracts.
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

}  // namespace runnel::neon::dotprod
