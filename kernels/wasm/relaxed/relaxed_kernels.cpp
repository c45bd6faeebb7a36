// The relaxed-SIMD x8 products: a separate wasm module, built by clang++-16 (Debian's
// Emscripten 3.1.6 cannot emit relaxed SIMD) and instantiated at run time over the main
// module's memory (simd128_relaxed.cpp), where the engine validates relaxed SIMD.
// Its functions are called through the main module's function table, wasm to wasm.
//
// Rules of this module (relaxed_module.mjs checks the first two when it embeds it):
//  - it has no globals, no data and no stack: everything lives in locals, so nothing it
//    does touches memory except the loads and stores written here;
//  - its only import is the memory;
//  - only relaxed operations whose result is deterministic: the weight operand of
//    i16x8.relaxed_dot_i8x16_i7x16_s is always in [0, 63].
//
// Per block and per half group (4 rows), each row's int16 pair sums of 32 (Q4_K) or 16
// (Q6_K) products get the row's sub-block scale from one i32x4.dot_i16x8 and are summed
// in int32; the 4 rows' int32 vectors are transposed into one (lane r = row r) and scaled
// with the rows' float scales, as in the SIMD128 kernels (simd128_x8.cpp). Integer sums
// are exact, so the results agree with ref's vec_dot to float rounding.
#include <stdint.h>
#include <wasm_simd128.h>

#include "kernels/wasm/relaxed/relaxed_layout.h"

namespace runnel::simd128::relaxed {
namespace {

inline v128_t load(const void* p) {
  return wasm_v128_load(p);
}

// 16 activation bytes (signed) times 16 weight bytes in [0, 127], neighbours summed.
inline v128_t dot_u7(v128_t a, v128_t w) {
  return reinterpret_cast<v128_t>(__builtin_wasm_relaxed_dot_i8x16_i7x16_s_i16x8(
      reinterpret_cast<__i8x16>(a), reinterpret_cast<__i8x16>(w)));
}

inline v128_t transpose_sum(v128_t s0, v128_t s1, v128_t s2, v128_t s3) {
  const v128_t s01 = wasm_i32x4_add(wasm_i32x4_shuffle(s0, s1, 0, 4, 1, 5),
                                    wasm_i32x4_shuffle(s0, s1, 2, 6, 3, 7));
  const v128_t s23 = wasm_i32x4_add(wasm_i32x4_shuffle(s2, s3, 0, 4, 1, 5),
                                    wasm_i32x4_shuffle(s2, s3, 2, 6, 3, 7));
  return wasm_i32x4_add(wasm_i32x4_shuffle(s01, s23, 0, 1, 4, 5),
                        wasm_i32x4_shuffle(s01, s23, 2, 3, 6, 7));
}

// int16 lane k of v in all 8 lanes.
template <int k>
inline v128_t splat16(v128_t v) {
  return wasm_i16x8_shuffle(v, v, k, k, k, k, k, k, k, k);
}

// The 8 sums of 32 activation quants (from the 16 sums of 16) as int16 lanes.
inline v128_t sums32(const ActQ8K& y) {
  const v128_t lo = wasm_i32x4_extadd_pairwise_i16x8(load(y.bsums));
  const v128_t hi = wasm_i32x4_extadd_pairwise_i16x8(load(y.bsums + 8));
  return wasm_i16x8_narrow_i32x4(lo, hi);
}

// Q4_K, one sub-block of row r: (q . a) in int16 pairs (|lane| <= 4 * 15 * 128), times
// the row's scale into int32: |row total| <= 8 * 63 * 32 * 15 * 128.
template <int r>
inline v128_t q4_k_sub(const uint8_t* qs, v128_t a_lo, v128_t a_hi, v128_t sc, v128_t mask) {
  const v128_t v = load(qs);
  const v128_t p = wasm_i16x8_add(dot_u7(a_lo, wasm_v128_and(v, mask)),
                                  dot_u7(a_hi, wasm_v128_and(wasm_u16x8_shr(v, 4), mask)));
  return wasm_i32x4_dot_i16x8(p, splat16<r>(sc));
}

// Row r's block = d sum_s sc_s (q_s . a_s) - dmin sum_s m_s sum(a_s), times d_a.
void q4_k_rows(int32_t nb, const BlockQ4_Kx8R* g, const ActQ8K* y, float* out) {
  const v128_t mask = wasm_i8x16_splat(0x0F);
  v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
  for (int32_t b = 0; b < nb; ++b) {
    const BlockQ4_Kx8R& blk = g[b];
    const v128_t da = wasm_f32x4_splat(y[b].d);
    const v128_t s32 = sums32(y[b]);
    for (int h = 0; h < 2; ++h) {
      v128_t row0 = wasm_i32x4_splat(0), row1 = row0, row2 = row0, row3 = row0;
      for (int s = 0; s < 8; ++s) {
        const v128_t a_lo = load(y[b].qs + 32 * s);
        const v128_t a_hi = load(y[b].qs + 32 * s + 16);
        const v128_t sc = wasm_u16x8_extend_low_u8x16(wasm_v128_load32_zero(&blk.sc[s][4 * h]));
        const uint8_t(*qs)[8][16] = blk.qs + 4 * h;
        row0 = wasm_i32x4_add(row0, q4_k_sub<0>(qs[0][s], a_lo, a_hi, sc, mask));
        row1 = wasm_i32x4_add(row1, q4_k_sub<1>(qs[1][s], a_lo, a_hi, sc, mask));
        row2 = wasm_i32x4_add(row2, q4_k_sub<2>(qs[2][s], a_lo, a_hi, sc, mask));
        row3 = wasm_i32x4_add(row3, q4_k_sub<3>(qs[3][s], a_lo, a_hi, sc, mask));
      }
      // Min terms: a row's 8 mins dotted with the 8 sub-block sums (|lane| <= 2 * 63 * 4096).
      v128_t mins[4];
      for (int r = 0; r < 4; ++r) {
        const v128_t m = wasm_u16x8_extend_low_u8x16(wasm_v128_load64_zero(blk.m[4 * h + r]));
        mins[r] = wasm_i32x4_dot_i16x8(m, s32);
      }
      const v128_t isum = transpose_sum(row0, row1, row2, row3);
      const v128_t msum = transpose_sum(mins[0], mins[1], mins[2], mins[3]);
      const v128_t term =
          wasm_f32x4_sub(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), load(blk.d + 4 * h)),
                         wasm_f32x4_mul(wasm_f32x4_convert_i32x4(msum), load(blk.dmin + 4 * h)));
      acc[h] = wasm_f32x4_add(acc[h], wasm_f32x4_mul(term, da));
    }
  }
  wasm_v128_store(out, acc[0]);
  wasm_v128_store(out + 4, acc[1]);
}

// Q6_K, groups 2j and 2j + 1 of row r (q in [0, 63]): int16 pairs |lane| <= 2 * 63 * 128,
// each times its group's scale into int32.
template <int r>
inline v128_t q6_k_pair(const uint8_t* q, v128_t a0, v128_t a1, v128_t sc) {
  return wasm_i32x4_add(wasm_i32x4_dot_i16x8(dot_u7(a0, load(q)), splat16<2 * r>(sc)),
                        wasm_i32x4_dot_i16x8(dot_u7(a1, load(q + 16)), splat16<2 * r + 1>(sc)));
}

// Row r's block = d sum_g sc_g ((q_g - 32) . a_g) = d (sum_g sc_g (q_g . a_g) -
// 32 sum_g sc_g sum(a_g)), times d_a: |first| <= 16 * 128 * 16 * 63 * 128,
// |second| <= 32 * 16 * 128 * 16 * 128.
void q6_k_rows(int32_t nb, const BlockQ6_Kx8R* g, const ActQ8K* y, float* out) {
  v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
  for (int32_t b = 0; b < nb; ++b) {
    const BlockQ6_Kx8R& blk = g[b];
    const v128_t da = wasm_f32x4_splat(y[b].d);
    for (int h = 0; h < 2; ++h) {
      v128_t row0 = wasm_i32x4_splat(0), row1 = row0, row2 = row0, row3 = row0;
      v128_t offset = row0;  // lane r: sum_g sc_g sum(a_g) of row 4h + r
      for (int j = 0; j < 8; ++j) {
        const v128_t a0 = load(y[b].qs + 32 * j);
        const v128_t a1 = load(y[b].qs + 32 * j + 16);
        const v128_t sc = wasm_i16x8_extend_low_i8x16(wasm_v128_load64_zero(blk.scales[j][h]));
        const uint8_t* q = blk.q[4 * h] + 32 * j;
        row0 = wasm_i32x4_add(row0, q6_k_pair<0>(q, a0, a1, sc));
        row1 = wasm_i32x4_add(row1, q6_k_pair<1>(q + 256, a0, a1, sc));
        row2 = wasm_i32x4_add(row2, q6_k_pair<2>(q + 512, a0, a1, sc));
        row3 = wasm_i32x4_add(row3, q6_k_pair<3>(q + 768, a0, a1, sc));
        offset = wasm_i32x4_add(
            offset, wasm_i32x4_dot_i16x8(sc, wasm_v128_load32_splat(y[b].bsums + 2 * j)));
      }
      const v128_t isum =
          wasm_i32x4_sub(transpose_sum(row0, row1, row2, row3), wasm_i32x4_shl(offset, 5));
      acc[h] = wasm_f32x4_add(acc[h], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum),
                                                     wasm_f32x4_mul(load(blk.d + 4 * h), da)));
    }
  }
  wasm_v128_store(out, acc[0]);
  wasm_v128_store(out + 4, acc[1]);
}

template <typename Group, void (*Rows)(int32_t, const Group*, const ActQ8K*, float*)>
void over_tokens(int32_t nb, const void* group, const void* a, int32_t a_stride, int32_t nc,
                 float* out, int32_t out_stride) {
  for (int32_t c = 0; c < nc; ++c) {
    Rows(nb, static_cast<const Group*>(group),
         reinterpret_cast<const ActQ8K*>(static_cast<const uint8_t*>(a) + c * a_stride),
         out + c * out_stride);
  }
}

}  // namespace
}  // namespace runnel::simd128::relaxed

// The module's exports (same signature: the main module calls them through one function
// pointer type). nb: super-blocks per row; a: nc Q8_K rows a_stride bytes apart; out: nc
// rows of 8 floats, out_stride floats apart.
using namespace runnel::simd128::relaxed;
extern "C" {
__attribute__((export_name("gemm_x8_q4_k"))) void gemm_x8_q4_k(int32_t nb, const void* group,
                                                               const void* a, int32_t a_stride,
                                                               int32_t nc, float* out,
                                                               int32_t out_stride) {
  over_tokens<BlockQ4_Kx8R, q4_k_rows>(nb, group, a, a_stride, nc, out, out_stride);
}
__attribute__((export_name("gemm_x8_q6_k"))) void gemm_x8_q6_k(int32_t nb, const void* group,
                                                               const void* a, int32_t a_stride,
                                                               int32_t nc, float* out,
                                                               int32_t out_stride) {
  over_tokens<BlockQ6_Kx8R, q6_k_rows>(nb, group, a, a_stride, nc, out, out_stride);
}
}
