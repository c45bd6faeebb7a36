// Declarations of the AVX2 kernels (defined in the avx2_*.cpp files, which alone are
// compiled with -mavx2 -mfma -mf16c). Same signatures and contracts as kernels/ref/ref.h;
// call them only after cpu_has_avx2() (kernels/x86/x86.h) said yes.
#pragma once

#include <cstdint>

namespace runnel::avx2 {

// ---- legacy 32-element blocks (avx2_legacy.cpp). Activations from quantize_row_q8_0/1
// (q in [-127, 127]; the signed dots rely on that, see avx2_common.h).
float vec_dot_q4_0(int64_t n, const void* w, const void* a);     // a: Q8_0
float vec_dot_q4_1(int64_t n, const void* w, const void* a);     // a: Q8_1
float vec_dot_q5_0(int64_t n, const void* w, const void* a);     // a: Q8_0
float vec_dot_q5_1(int64_t n, const void* w, const void* a);     // a: Q8_1
float vec_dot_q8_0(int64_t n, const void* w, const void* a);     // a: Q8_0
void quantize_row_q8_0(const float* src, void* dst, int64_t n);  // bit-exact with ref
void quantize_row_q8_1(const float* src, void* dst, int64_t n);  // bit-exact with ref

// ---- float rows (avx2_float.cpp)
float vec_dot_f32(int64_t n, const void* w, const void* a);  // a: F32
float vec_dot_f16(int64_t n, const void* w, const void* a);  // a: F16
float vec_dot_bf16(int64_t n, const void* w, const void* a);  // a: BF16

// ---- k-quants, 256-element super-blocks (avx2_kquants.cpp)
float vec_dot_q2_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q3_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q4_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q5_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q6_k(int64_t n, const void* w, const void* a);     // a: Q8_K
void quantize_row_q8_k(const float* src, void* dst, int64_t n);  // bit-exact with ref

}  // namespace runnel::avx2
