// Declarations of the AVX-512 per-token dots (avx512_dots_legacy.cpp,
// avx512_dots_kquants.cpp, avx512_dots_lut4.cpp, avx512_dots_float.cpp, compiled with the AVX-512
// flags). Same signatures and contracts as the ref kernels (kernels/kernels.h
// TypeKernels::vec_dot): sum_i w[i] * a[i], w a weight row in its type, a the row in its
// vec_dot_type. Call them only after cpu_has_avx512() (kernels/x86/x86.h) said yes;
// vec_dot_bf16_dpbf16 also needs cpu_has_avx512_bf16().
#pragma once

#include <cstdint>

#include "kernels/ref/group_fits.h"

namespace runnel {

// True when cpu_has_avx512() and the CPU also has AVX512-BF16 (vdpbf16ps). Baseline code
// (x86_tables.cpp).
bool cpu_has_avx512_bf16();

}  // namespace runnel

namespace runnel::avx512 {

// Legacy 32-element blocks (x Q8_0 or Q8_1): vpdpbusd on 256-bit vectors.
float vec_dot_q4_0(int64_t n, const void* w, const void* a);
float vec_dot_q4_1(int64_t n, const void* w, const void* a);
float vec_dot_q5_0(int64_t n, const void* w, const void* a);
float vec_dot_q5_1(int64_t n, const void* w, const void* a);
float vec_dot_q8_0(int64_t n, const void* w, const void* a);

// k-quants (x Q8_K).
float vec_dot_q2_k(int64_t n, const void* w, const void* a);
float vec_dot_q3_k(int64_t n, const void* w, const void* a);
float vec_dot_q4_k(int64_t n, const void* w, const void* a);
float vec_dot_q5_k(int64_t n, const void* w, const void* a);
float vec_dot_q6_k(int64_t n, const void* w, const void* a);

// 4-bit lookup formats (MXFP4, IQ4_NL x Q8_0; IQ4_XS x Q8_K), avx512_dots_lut4.cpp.
float vec_dot_mxfp4(int64_t n, const void* w, const void* a);
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a);
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a);

// Float rows (x the same type): 512-bit FMA, masked tails. F32 and F16 measured slower
// than the AVX2 dots on Zen 4 and are not in the avx512 table (kept and tested for CPUs
// where 512-bit loads and conversions are full width).
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_f16(int64_t n, const void* w, const void* a);
// BF16 widened exactly (shift / mask into f32) and FMA: any AVX-512 CPU.
float vec_dot_bf16(int64_t n, const void* w, const void* a);
// BF16 with vdpbf16ps (AVX512-BF16 only): products exact, but inputs below 2^-126 in
// magnitude (bf16 subnormals) count as zero and subnormal results flush to zero.
float vec_dot_bf16_dpbf16(int64_t n, const void* w, const void* a);

// ---- model quantizers (avx512_group_fits.cpp): Q2_K .. Q6_K with the group searches
// on 16 lanes
RUNNEL_GROUP_FIT_QUANTIZER_DECLS

}  // namespace runnel::avx512
