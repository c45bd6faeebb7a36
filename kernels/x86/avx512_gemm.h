// Declarations of the AVX-512 VNNI batched products (avx512_gemm.cpp, compiled with the
// AVX-512 flags). Same contracts as the AVX2 ones (kernels/kernels.h TypeKernels::gemm)
// and the same packed groups (gemm_packed.h, packed by avx2::gemm_pack_*); call them
// only after cpu_has_avx512() (kernels/x86/x86.h) said yes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace runnel::avx512 {

void gemm_q4_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);  // packed: Q8_0
void gemm_q4_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);  // packed: Q8_1
void gemm_q5_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);  // packed: Q8_0
void gemm_q5_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);  // packed: Q8_1
void gemm_q8_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);  // packed: Q8_0
void gemm_q4_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);  // packed: Q8_K
void gemm_q5_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);  // packed: Q8_K
void gemm_q6_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);  // packed: Q8_K
void gemm_mxfp4(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
                float* out, size_t out_stride);  // packed: Q8_0
void gemm_iq4_nl(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
                 float* out, size_t out_stride);  // packed: Q8_0
void gemm_iq4_xs(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
                 float* out, size_t out_stride);  // packed: Q8_K

}  // namespace runnel::avx512
