// Declarations of the NEON kernels. Same signatures and contracts as kernels/ref/ref.h
// and kernels/ref/ops.h.
// runnel::neon: plain Advanced SIMD (baseline on every aarch64 CPU; neon_legacy.cpp,
// neon_kquants.cpp, neon_lut4.cpp, neon_gemm.cpp, neon_float.cpp, neon_ops.cpp).
// runnel::neon::dotprod: the integer dots and batched products again with the dot-product
// extension (neon_dotprod.cpp, neon_dotprod_gemm.cpp: the files compiled with
// -march=armv8.2-a+dotprod); call them only after cpu_has_dotprod() (kernels/arm/arm.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ref/group_fits.h"
#include "kernels/ref/ops.h"

// The 13 batched products (kernels.h TypeKernels::gemm), declared in runnel::neon
// (baseline) and runnel::neon::dotprod over the same packed groups. Activations: Q8_0 for
// Q4_0 / Q5_0 / Q8_0 / MXFP4 / IQ4_NL, Q8_1 for Q4_1 / Q5_1, Q8_K for Q2_K .. Q6_K and
// IQ4_XS.
#define RUNNEL_NEON_GEMM_DECLS                                                                    \
  void gemm_q4_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_q4_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_q5_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_q5_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_q8_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_q2_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_q3_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_q4_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_q5_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_q6_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride);                                                  \
  void gemm_mxfp4(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,  \
                  float* out, size_t out_stride);                                                 \
  void gemm_iq4_nl(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc, \
                   float* out, size_t out_stride);                                                \
  void gemm_iq4_xs(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc, \
                   float* out, size_t out_stride);

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

// ---- model quantizers (neon_group_fits.cpp): Q2_K .. Q6_K with the group searches
// on 4 lanes
RUNNEL_GROUP_FIT_QUANTIZER_DECLS

// ---- k-quants, 256-element super-blocks (neon_kquants.cpp)
float vec_dot_q2_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q3_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q4_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q5_k(int64_t n, const void* w, const void* a);     // a: Q8_K
float vec_dot_q6_k(int64_t n, const void* w, const void* a);     // a: Q8_K
void quantize_row_q8_k(const float* src, void* dst, int64_t n);  // bit-exact with ref

// ---- 4-bit lookup formats (neon_lut4.cpp)
float vec_dot_mxfp4(int64_t n, const void* w, const void* a);   // a: Q8_0
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a);  // a: Q8_0
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a);  // a: Q8_K

// ---- batched products for prefill (TypeKernels::gemm / gemm_pack; neon_gemm.cpp over
// neon_gemm_impl.h). gemm_pack*: the activation side, shared by both NEON tables (8 tokens
// per group, one int32 lane per token; layout in neon_gemm_impl.h). gemm_*: up to
// kGemmRows weight rows x one packed group, with widening multiplies.
size_t gemm_pack_bytes_q8_0(int64_t n);
size_t gemm_pack_bytes_q8_1(int64_t n);
size_t gemm_pack_bytes_q8_k(int64_t n);
void gemm_pack_q8_0(int64_t n, const void* a, size_t a_stride, int nc, void* packed);
void gemm_pack_q8_1(int64_t n, const void* a, size_t a_stride, int nc, void* packed);
void gemm_pack_q8_k(int64_t n, const void* a, size_t a_stride, int nc, void* packed);
RUNNEL_NEON_GEMM_DECLS

// ---- float rows (neon_float.cpp)
float vec_dot_f32(int64_t n, const void* w, const void* a);   // a: F32
float vec_dot_f16(int64_t n, const void* w, const void* a);   // a: F16
float vec_dot_bf16(int64_t n, const void* w, const void* a);  // a: BF16

// ---- batched products of float rows against the f32 groups of float_gemm_pack.h
// (neon_gemm_float.cpp; both tables)
void gemm_f32(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
              float* out, size_t out_stride);
void gemm_f16(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
              float* out, size_t out_stride);
void gemm_bf16(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
               float* out, size_t out_stride);

// ---- float ops (neon_ops.cpp): kernels/ref/ops.h contracts. silu, swiglu, softmax, gelu,
// geglu with a polynomial e^x, softcap with a polynomial e^x - 1; the others bit-exact.
void silu(const float* x, float* out, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);
void softmax(float* x, int64_t n);
void gelu(const float* x, float* out, int64_t n);
void geglu(const float* gate, const float* up, float* out, int64_t n);
void softcap(float* x, int64_t n, float cap);
void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps);       // bit-exact
void add(const float* a, const float* b, float* out, int64_t n);                       // bit-exact
void mul(const float* a, const float* b, float* out, int64_t n);                       // bit-exact
void scale(float* x, int64_t n, float s);                                              // bit-exact
void axpy(const float* x, float* y, int64_t n, float s);                               // bit-exact
void rope_apply(float* x, int64_t n_rot, const float* cos_sin, ref::RopeStyle style);  // bit-exact

}  // namespace runnel::neon

namespace runnel::neon::dotprod {

// The integer dots of runnel::neon with vdotq_s32 (neon_dotprod.cpp); same contracts.
float vec_dot_q4_0(int64_t n, const void* w, const void* a);    // a: Q8_0
float vec_dot_q4_1(int64_t n, const void* w, const void* a);    // a: Q8_1
float vec_dot_q5_0(int64_t n, const void* w, const void* a);    // a: Q8_0
float vec_dot_q5_1(int64_t n, const void* w, const void* a);    // a: Q8_1
float vec_dot_q8_0(int64_t n, const void* w, const void* a);    // a: Q8_0
float vec_dot_q2_k(int64_t n, const void* w, const void* a);    // a: Q8_K
float vec_dot_q3_k(int64_t n, const void* w, const void* a);    // a: Q8_K
float vec_dot_q4_k(int64_t n, const void* w, const void* a);    // a: Q8_K
float vec_dot_q5_k(int64_t n, const void* w, const void* a);    // a: Q8_K
float vec_dot_q6_k(int64_t n, const void* w, const void* a);    // a: Q8_K
float vec_dot_mxfp4(int64_t n, const void* w, const void* a);   // a: Q8_0
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a);  // a: Q8_0
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a);  // a: Q8_K

// The batched products of runnel::neon with vdotq_laneq_s32 (neon_dotprod_gemm.cpp), over
// the same packed groups (runnel::neon::gemm_pack_*); same contracts.
RUNNEL_NEON_GEMM_DECLS

}  // namespace runnel::neon::dotprod

#undef RUNNEL_NEON_GEMM_DECLS
