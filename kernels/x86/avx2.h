// Declarations of the AVX2 kernels (defined in the avx2_*.cpp files, which alone are
// compiled with -mavx2 -mfma -mf16c). Same signatures and contracts as kernels/ref/ref.h;
// call them only after cpu_has_avx2() (kernels/x86/x86.h) said yes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ref/group_fits.h"
#include "kernels/ref/ops.h"

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
// FloatOps::dot_f16_f32: vec_dot_f16's bits with a holding the widened halves
float dot_f16_f32(int64_t n, const uint16_t* w, const float* a);
// FloatOps::dot_f16_f32_rows: eight rows at a time, each dot_f16_f32's bits
void dot_f16_f32_rows(int64_t n, const uint16_t* w, int64_t w_stride, int n_rows, const float* a,
                      float* out);
float vec_dot_bf16(int64_t n, const void* w, const void* a);  // a: BF16
void quantize_row_f16(const float* src, void* dst, int64_t n);    // bit-exact with ref
void dequantize_row_f16(const void* src, float* dst, int64_t n);  // bit-exact with ref

// ---- k-quants, 256-element super-blocks (avx2_kquants.cpp)
float vec_dot_q2_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q3_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q4_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q5_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q6_k(int64_t n, const void* w, const void* a);     // a: Q8_K
void quantize_row_q8_k(const float* src, void* dst, int64_t n);  // bit-exact with ref

// ---- 4-bit lookup formats (avx2_lut4.cpp over lut4_dots_impl.h)
float vec_dot_mxfp4(int64_t n, const void* w, const void* a);   // a: Q8_0
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a);  // a: Q8_0
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a);  // a: Q8_K

// ---- batched products for prefill (avx2_gemm.cpp); contracts in kernels/kernels.h
// (TypeKernels::gemm_pack_bytes / gemm_pack / gemm). Packing per activation format:
size_t gemm_pack_bytes_q8_0(int64_t n);
size_t gemm_pack_bytes_q8_1(int64_t n);
size_t gemm_pack_bytes_q8_k(int64_t n);
void gemm_pack_q8_0(int64_t n, const void* a, size_t a_stride, int nc, void* packed);
void gemm_pack_q8_1(int64_t n, const void* a, size_t a_stride, int nc, void* packed);
void gemm_pack_q8_k(int64_t n, const void* a, size_t a_stride, int nc, void* packed);
// Weight rows against a packed group (Q4_0 / Q5_0 / Q8_0 / MXFP4 / IQ4_NL take Q8_0
// groups, Q4_1 / Q5_1 Q8_1, the k-quants and IQ4_XS Q8_K):
void gemm_q4_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_q4_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_q5_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_q5_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_q8_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_q2_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_q3_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_q4_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_q5_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_q6_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);
void gemm_mxfp4(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
                float* out, size_t out_stride);
void gemm_iq4_nl(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
                 float* out, size_t out_stride);
void gemm_iq4_xs(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
                 float* out, size_t out_stride);
// F32 / F16 / BF16 weight rows against the f32 groups of float_gemm_pack.h (avx2_gemm_float.cpp):
void gemm_f32(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
              float* out, size_t out_stride);
void gemm_f16(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
              float* out, size_t out_stride);
void gemm_bf16(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);

// ---- float ops of a forward pass (avx2_ops.cpp); contracts in kernels/ref/ops.h, bounds
// against ref in tests/kernels/x86/avx2_ops_test.cpp.
void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps);  // bit-exact
void softmax(float* x, int64_t n);
void silu(const float* x, float* out, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);
void gelu(const float* x, float* out, int64_t n);
void geglu(const float* gate, const float* up, float* out, int64_t n);
void softcap(float* x, int64_t n, float cap);
void add(const float* a, const float* b, float* out, int64_t n);  // bit-exact
void mul(const float* a, const float* b, float* out, int64_t n);  // bit-exact
void scale(float* x, int64_t n, float s);                         // bit-exact
void axpy(const float* x, float* y, int64_t n, float s);
void rope_apply(float* x, int64_t n_rot, const float* cos_sin, ref::RopeStyle style);

// ---- model quantizers (avx2_group_fits.cpp): Q2_K .. Q6_K with the group searches
// on 8 lanes
RUNNEL_GROUP_FIT_QUANTIZER_DECLS

}  // namespace runnel::avx2
