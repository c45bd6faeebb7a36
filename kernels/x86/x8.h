// The x86 row-interleaved kernels (x8 layouts, kernels/x86/x8_layout.h): repacking
// (x8_repack.cpp, baseline code) and the products over repacked groups (avx2_x8.cpp,
// avx512_x8.cpp). Contracts: kernels/kernels.h TypeKernels::repack_x8 / gemm_x8.
#pragma once

#include <cstddef>
#include <cstdint>

namespace runnel {

namespace x8 {
void repack_q4_0(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_q8_0(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_q6_k(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_q6_k_pairs(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_q4_k(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_q4_1(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_q5_0(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_q5_1(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_mxfp4(int64_t n, const void* rows, size_t row_stride, void* group);
void repack_iq4_xs(int64_t n, const void* rows, size_t row_stride, void* group);
void unpack_row_q4_0(int64_t n, const void* group, int r, void* row);
void unpack_row_q4_1(int64_t n, const void* group, int r, void* row);
void unpack_row_q5_0(int64_t n, const void* group, int r, void* row);
void unpack_row_q5_1(int64_t n, const void* group, int r, void* row);
void unpack_row_q8_0(int64_t n, const void* group, int r, void* row);
void unpack_row_q4_k(int64_t n, const void* group, int r, void* row);
void unpack_row_q6_k(int64_t n, const void* group, int r, void* row);
void unpack_row_q6_k_pairs(int64_t n, const void* group, int r, void* row);
void unpack_row_mxfp4(int64_t n, const void* group, int r, void* row);
void unpack_row_iq4_xs(int64_t n, const void* group, int r, void* row);
// IQ4_NL takes repack_q4_0 / unpack_row_q4_0 (x8_layout.h).
}  // namespace x8

// a: nc activation rows (Q8_0 for Q4_0 / Q5_0 / Q8_0 / MXFP4 / IQ4_NL weights, Q8_1 for Q4_1 /
// Q5_1, Q8_K for Q4_K / Q6_K / IQ4_XS), a_stride apart;
// a_sums: for Q8_0 activations, the sum of the quants of each 32-block, n / 32 per row;
// for AVX-512 Q4_K and Q6_K, the rows as avx512::prepare_q4_k / prepare_q6_k make them.
#define RUNNEL_X8_GEMM(ns)                                                                                    \
  namespace ns {                                                                                              \
  void gemm_x8_q4_0(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,    \
                    int nc, float* out, size_t out_stride);                                                   \
  void gemm_x8_q8_0(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,    \
                    int nc, float* out, size_t out_stride);                                                   \
  void gemm_x8_q6_k(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,    \
                    int nc, float* out, size_t out_stride);                                                   \
  void gemm_x8_q4_k(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,    \
                    int nc, float* out, size_t out_stride);                                                   \
  void gemm_x8_q4_1(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,    \
                    int nc, float* out, size_t out_stride);                                                   \
  void gemm_x8_q5_0(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,    \
                    int nc, float* out, size_t out_stride);                                                   \
  void gemm_x8_q5_1(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,    \
                    int nc, float* out, size_t out_stride);                                                   \
  void gemm_x8_mxfp4(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,   \
                     int nc, float* out, size_t out_stride);                                                  \
  void gemm_x8_iq4_nl(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,  \
                      int nc, float* out, size_t out_stride);                                                 \
  void gemm_x8_iq4_xs(int64_t n, const void* group, const void* a, size_t a_stride, const int32_t* a_sums,  \
                      int nc, float* out, size_t out_stride);                                                 \
  }
RUNNEL_X8_GEMM(avx2)
RUNNEL_X8_GEMM(avx512)
#undef RUNNEL_X8_GEMM

namespace avx512 {
// One Q8_K activation row for gemm_x8_q4_k, 4 int32 a block: -(its sums of sub-blocks of
// 32) as 8 int16.
constexpr uint32_t kQ4KPreparedBlockInts = 4;
void prepare_q4_k(int64_t n, const void* a, int32_t* out);
// One Q8_K activation row for gemm_x8_q6_k over pair-order groups (x8_layout.h), 80 int32
// a block: its quants in pair order (each 8-byte piece 4 of group 2p, then 4 of group
// 2p + 1), then -32 x its 16 group sums.
constexpr uint32_t kQ6KPreparedBlockInts = 80;
void prepare_q6_k(int64_t n, const void* a, int32_t* out);
}  // namespace avx512

}  // namespace runnel
