// The relaxed-SIMD x8 products: a separate wasm module, built by clang++-16 (Debian's
// Emscripten 3.1.6 cannot emit relaxed SIMD) and instantiated at run time over the main
// module's memory (simd128_relaxed.cpp), where the engine validates relaxed SIMD.
// Its functions are called through the main module's function table, wasm to wasm.
//
// Rules of this module (embed.cmake checks the first one when it embeds the module):
//  - it has no globals, no data and no stack: everything lives in locals, so nothing it
//    does touches memory except the loads and stores written here;
//  - its only import is the memory;
//  - only relaxed operations whose result is deterministic: the weight operand of
//    i16x8.relaxed_dot_i8x16_i7x16_s is always in [0, 63].
//
// Per block and per half group (4 rows), each row's int16 pair sums of 32 (Q4_K) or 16
// (Q6_K) products get the row's sub-block scale from one i32x4.dot_i16x8 and are summed
// in int32 (Q4_K and Q6_K: two tokens at a time when there are several, one unpacking of
// the weights for both); the 4 rows' int32 vectors are transposed into one (lane r = row r) and scaled
// with the rows' float scales by the same helpers as the SIMD128 kernels (add_scaled*,
// simd128_vec.h). Integer sums are exact, so the results are the SIMD128 kernels', and
// agree with ref's vec_dot to float rounding.
#include <stdint.h>
#include <wasm_simd128.h>

#include "kernels/wasm/relaxed/relaxed_layout.h"
#include "kernels/wasm/simd128_vec.h"

namespace runnel::simd128::relaxed {
namespace {

// 16 activation bytes (signed) times 16 weight bytes in [0, 127], neighbours summed.
inline v128_t dot_u7(v128_t a, v128_t w) {
  return reinterpret_cast<v128_t>(__builtin_wasm_relaxed_dot_i8x16_i7x16_s_i16x8(
      reinterpret_cast<__i8x16>(a), reinterpret_cast<__i8x16>(w)));
}

// int32 lane k of v in all 4 lanes (one pshufd: cheaper than a 16-bit splat).
template <int k>
inline v128_t splat32(v128_t v) {
  return wasm_i32x4_shuffle(v, v, k, k, k, k);
}

// int16 lanes 0..3 of v, each doubled: (v0, v0, v1, v1, v2, v2, v3, v3).
inline v128_t dup16_low(v128_t v) {
  return wasm_i16x8_shuffle(v, v, 0, 8, 1, 9, 2, 10, 3, 11);
}

// ---------------------------------------------------------------- Q4_0 / Q4_1

// Row r's 32 nibbles (element order) against the activation's 32 quants: int16 pairs
// (|lane| <= 4 * 15 * 128) summed into int32 lanes.
inline v128_t nibble_dot(const uint8_t* qs, v128_t a_lo, v128_t a_hi, v128_t mask) {
  const v128_t v = load(qs);
  return wasm_i32x4_extadd_pairwise_i16x8(
      wasm_i16x8_add(dot_u7(a_lo, wasm_v128_and(v, mask)),
                     dot_u7(a_hi, wasm_v128_and(wasm_u16x8_shr(v, 4), mask))));
}

// Q4_0 (kMin false): row r's block = d (sum q a - 8 sum a) d_a, sum a from sums (the
// activation's block sums, exact in int32). Q4_1 (kMin true): d (sum q a) d_a + m s_a.
// The float steps are the SIMD128 kernels' (simd128_x8.cpp), so the results are theirs.
// scratch: 2 x (nb rounded up to 8) floats for the widened d_a and s_a.
template <bool kMin, typename Group, typename Act>
void legacy_rows(int32_t nb, const Group* g, const Act* y, const int32_t* sums, float* out,
                 float* scratch) {
  const int32_t padded = (nb + 7) / 8 * 8;
  float* da = scratch;
  float* sa = scratch + padded;
  widen_fields(y, nb, &Act::d, da);
  if constexpr (kMin) widen_fields(y, nb, &ActQ8_1::s, sa);
  const v128_t mask = wasm_i8x16_splat(0x0F);
  v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0;
  for (int32_t b = 0; b < nb; ++b) {
    const Group& blk = g[b];
    const v128_t a_lo = load(y[b].qs);
    const v128_t a_hi = load(y[b].qs + 16);
    const v128_t d_a = wasm_f32x4_splat(da[b]);
    v128_t isum[2];
#pragma clang loop unroll(full)
    for (int h = 0; h < 2; ++h) {
      isum[h] = transpose_sum(nibble_dot(blk.qs[4 * h], a_lo, a_hi, mask),
                              nibble_dot(blk.qs[4 * h + 1], a_lo, a_hi, mask),
                              nibble_dot(blk.qs[4 * h + 2], a_lo, a_hi, mask),
                              nibble_dot(blk.qs[4 * h + 3], a_lo, a_hi, mask));
      if constexpr (!kMin) isum[h] = wasm_i32x4_sub(isum[h], wasm_i32x4_splat(8 * sums[b]));
    }
    acc0 = add_scaled(acc0, isum[0], blk.d, d_a);
    acc1 = add_scaled(acc1, isum[1], blk.d + 4, d_a);
    if constexpr (kMin) {
      const v128_t s_a = wasm_f32x4_splat(sa[b]);
      acc0 = wasm_f32x4_add(acc0, wasm_f32x4_mul(load(blk.m), s_a));
      acc1 = wasm_f32x4_add(acc1, wasm_f32x4_mul(load(blk.m + 4), s_a));
    }
  }
  wasm_v128_store(out, acc0);
  wasm_v128_store(out + 4, acc1);
}

template <bool kMin, typename Group, typename Act>
void legacy_tokens(int32_t nb, const void* group, const void* a, int32_t a_stride,
                   const int32_t* sums, int32_t nc, float* out, int32_t out_stride,
                   float* scratch) {
  for (int32_t c = 0; c < nc; ++c) {
    legacy_rows<kMin>(nb, static_cast<const Group*>(group),
                      reinterpret_cast<const Act*>(static_cast<const uint8_t*>(a) + c * a_stride),
                      kMin ? nullptr : sums + c * nb, out + c * out_stride, scratch);
  }
}

// ---------------------------------------------------------------- Q4_K / Q6_K

// Q4_K, chunk c of a sub-block (elements 4c .. 4c + 3 of all 8 rows, one 16-byte load)
// against kT tokens: the low nibbles (rows 0-3) add into p[0][t], the high ones (rows
// 4-7) into p[1][t]; lanes 2r and 2r + 1 of p[h][t] belong to row 4h + r. Over a
// sub-block's 8 chunks a lane sums 16 products: |lane| <= 16 * 15 * 128 < 2^15.
template <int c, int kT>
inline void q4_k_chunk(const uint8_t* qs, const v128_t (&a)[kT][2], v128_t mask,
                       v128_t (&p)[2][kT]) {
  const v128_t v = load(qs);
  const v128_t lo = wasm_v128_and(v, mask);
  const v128_t hi = wasm_v128_and(wasm_u16x8_shr(v, 4), mask);
  for (int t = 0; t < kT; ++t) {
    const v128_t a4 = splat32<c % 4>(a[t][c / 4]);  // the 4 elements, once per row
    p[0][t] = wasm_i16x8_add(p[0][t], dot_u7(a4, lo));
    p[1][t] = wasm_i16x8_add(p[1][t], dot_u7(a4, hi));
  }
}

// V8 schedules a block's loads ahead of the arithmetic that uses them; with the 8 chunk
// loads of a sub-block live at once it ran out of registers and spilled them. Storing
// the partial sums into `out` (rewritten with the results at the end) after every 2
// chunks orders each chunk's arithmetic before the next loads.
template <int kT>
inline void q4_k_fence(const v128_t (&p)[2][kT], float* out, int32_t out_stride) {
  for (int t = 0; t < kT; ++t) {
    wasm_v128_store(out + t * out_stride, p[0][t]);
    wasm_v128_store(out + t * out_stride + 4, p[1][t]);
  }
}

// Mins 16 k .. 16 k + 15 of a Q4_K group (rows 2k and 2k + 1), one per byte, from mlo /
// mhi (relaxed_layout.h): nibble k / 2 of mlo bytes 16 (k % 2) .., top bits in field k of
// mhi moved to bits 4-5 (i16 shifts: bits crossing into the next byte are masked off).
template <int k>
inline v128_t q4_k_mins(const BlockQ4_Kx8R& blk) {
  const v128_t lo = load(blk.mlo + 16 * (k % 2));
  const v128_t hi = load(blk.mhi);
  const v128_t high = k == 0   ? wasm_i16x8_shl(hi, 4)
                      : k == 1 ? wasm_i16x8_shl(hi, 2)
                      : k == 2 ? hi
                               : wasm_u16x8_shr(hi, 2);
  const v128_t low = k < 2 ? wasm_v128_and(lo, wasm_i8x16_splat(0x0F)) : wasm_u8x16_shr(lo, 4);
  return wasm_v128_or(low, wasm_v128_and(high, wasm_i8x16_splat(0x30)));
}

// Row r's block = d sum_s sc_s (q_s . a_s) - dmin sum_s m_s sum(a_s), times d_a, for
// kT activation rows a_stride bytes apart (outputs out_stride floats apart). Each
// sub-block's int16 sums get the rows' scales from one i32x4.dot_i16x8 per 4 rows,
// which leaves lane r = row r: no transposes for the products.
template <int kT>
void q4_k_rows(int32_t nb, const BlockQ4_Kx8R* g, const uint8_t* a, int32_t a_stride, float* out,
               int32_t out_stride) {
  const ActQ8K* y[kT];
  for (int t = 0; t < kT; ++t) y[t] = reinterpret_cast<const ActQ8K*>(a + t * a_stride);
  const v128_t mask = wasm_i8x16_splat(0x0F);
  v128_t acc[kT][2];
  for (int t = 0; t < kT; ++t) acc[t][0] = acc[t][1] = wasm_f32x4_splat(0.0f);
  for (int32_t b = 0; b < nb; ++b) {
    const BlockQ4_Kx8R& blk = g[b];
    v128_t isum[2][kT];  // lane r: row 4h + r
    for (int t = 0; t < kT; ++t) isum[0][t] = isum[1][t] = wasm_i32x4_splat(0);
    for (int s = 0; s < 8; ++s) {
      v128_t at[kT][2];
      for (int t = 0; t < kT; ++t) {
        at[t][0] = load(y[t][b].qs + 32 * s);
        at[t][1] = load(y[t][b].qs + 32 * s + 16);
      }
      v128_t p[2][kT];
      for (int t = 0; t < kT; ++t) p[0][t] = p[1][t] = wasm_i16x8_splat(0);
      const uint8_t(&q)[8][16] = blk.qs[s];
      q4_k_chunk<0>(q[0], at, mask, p);
      q4_k_chunk<1>(q[1], at, mask, p);
      q4_k_fence(p, out, out_stride);
      q4_k_chunk<2>(q[2], at, mask, p);
      q4_k_chunk<3>(q[3], at, mask, p);
      q4_k_fence(p, out, out_stride);
      q4_k_chunk<4>(q[4], at, mask, p);
      q4_k_chunk<5>(q[5], at, mask, p);
      q4_k_fence(p, out, out_stride);
      q4_k_chunk<6>(q[6], at, mask, p);
      q4_k_chunk<7>(q[7], at, mask, p);
      // the 8 rows' scales as int16, each doubled: (r0, r0, r1, r1, ...) for each half
      const v128_t sc = wasm_u16x8_extend_low_u8x16(wasm_v128_load64_zero(blk.sc[s]));
      const v128_t sc_lo = dup16_low(sc);
      const v128_t sc_hi = wasm_i16x8_shuffle(sc, sc, 4, 12, 5, 13, 6, 14, 7, 15);
      for (int t = 0; t < kT; ++t) {
        isum[0][t] = wasm_i32x4_add(isum[0][t], wasm_i32x4_dot_i16x8(p[0][t], sc_lo));
        isum[1][t] = wasm_i32x4_add(isum[1][t], wasm_i32x4_dot_i16x8(p[1][t], sc_hi));
      }
    }
    // Min terms: a row's 8 mins dotted with the 8 sub-block sums (|lane| <= 2 * 63 * 4096).
#pragma clang loop unroll(full)
    for (int h = 0; h < 2; ++h) {
      const v128_t m01 = h == 0 ? q4_k_mins<0>(blk) : q4_k_mins<2>(blk);
      const v128_t m23 = h == 0 ? q4_k_mins<1>(blk) : q4_k_mins<3>(blk);
      const v128_t m[4] = {wasm_u16x8_extend_low_u8x16(m01), wasm_u16x8_extend_high_u8x16(m01),
                           wasm_u16x8_extend_low_u8x16(m23), wasm_u16x8_extend_high_u8x16(m23)};
      for (int t = 0; t < kT; ++t) {
        const v128_t s32 = q8_k_sums32(y[t][b].bsums);
        const v128_t msum =
            transpose_sum(wasm_i32x4_dot_i16x8(m[0], s32), wasm_i32x4_dot_i16x8(m[1], s32),
                          wasm_i32x4_dot_i16x8(m[2], s32), wasm_i32x4_dot_i16x8(m[3], s32));
        acc[t][h] = add_scaled_min(acc[t][h], isum[h][t], msum, blk.d + 4 * h, blk.dmin + 4 * h,
                                   wasm_f32x4_splat(y[t][b].d));
      }
    }
  }
  for (int t = 0; t < kT; ++t) {
    wasm_v128_store(out + t * out_stride, acc[t][0]);
    wasm_v128_store(out + t * out_stride + 4, acc[t][1]);
  }
}

// Q6_K, chunks 2p and 2p + 1 of a sub-block (one scale group; sc0 / sc1 = its scales,
// each doubled, rows 0-3 / 4-7) against kT tokens into i0[t] / i1[t], lane r = row r of
// the half. The pair's three 16-byte loads hold the quants of rows 0-3 / chunk 2p, rows
// 4-7 / chunk 2p and rows 0-3 / chunk 2p + 1 in their low 6 bits, and 2 bits each of rows
// 4-7 / chunk 2p + 1 in their top 2 (relaxed_layout.h): three ANDs, and three ANDs,
// shifts and two ORs for the fourth (i16 shifts: the masked bits never cross a byte),
// once for all the tokens. Over the pair an int16 lane sums 4 products:
// |lane| <= 4 * 63 * 128 < 2^15. The store of the sums into `out` (rewritten at the end)
// keeps V8 from scheduling the next pair's loads ahead, as in Q4_K.
template <int p, int kT>
inline void q6_k_pair(const uint8_t (&q)[3][16], const v128_t (&a)[kT], v128_t sc0, v128_t sc1,
                      v128_t (&i0)[kT], v128_t (&i1)[kT], float* out, int32_t out_stride) {
  const v128_t low6 = wasm_i8x16_splat(0x3F), top2 = wasm_i8x16_splat(static_cast<char>(0xC0));
  const v128_t v0 = load(q[0]), v1 = load(q[1]), v2 = load(q[2]);
  const v128_t q3 = wasm_v128_or(wasm_v128_or(wasm_u16x8_shr(wasm_v128_and(v0, top2), 6),
                                              wasm_u16x8_shr(wasm_v128_and(v1, top2), 4)),
                                 wasm_u16x8_shr(wasm_v128_and(v2, top2), 2));
  const v128_t q0 = wasm_v128_and(v0, low6), q1 = wasm_v128_and(v1, low6),
               q2 = wasm_v128_and(v2, low6);
  for (int t = 0; t < kT; ++t) {
    const v128_t a_even = splat32<(2 * p) % 4>(a[t]), a_odd = splat32<(2 * p + 1) % 4>(a[t]);
    const v128_t p0 = wasm_i16x8_add(dot_u7(a_even, q0), dot_u7(a_odd, q2));
    const v128_t p1 = wasm_i16x8_add(dot_u7(a_even, q1), dot_u7(a_odd, q3));
    i0[t] = wasm_i32x4_add(i0[t], wasm_i32x4_dot_i16x8(p0, sc0));
    i1[t] = wasm_i32x4_add(i1[t], wasm_i32x4_dot_i16x8(p1, sc1));
    wasm_v128_store(out + t * out_stride, i0[t]);
    wasm_v128_store(out + t * out_stride + 4, i1[t]);
  }
}

// Row r's block = d sum_g sc_g ((q_g - 32) . a_g) = d (sum_g sc_g (q_g . a_g) -
// 32 sum_g sc_g sum(a_g)), times d_a, for kT activation rows a_stride bytes apart:
// |first| <= 16 * 128 * 16 * 63 * 128, |second| <= 32 * 16 * 128 * 16 * 128.
template <int kT>
void q6_k_rows(int32_t nb, const BlockQ6_Kx8R* g, const uint8_t* a, int32_t a_stride, float* out,
               int32_t out_stride) {
  const ActQ8K* y[kT];
  for (int t = 0; t < kT; ++t) y[t] = reinterpret_cast<const ActQ8K*>(a + t * a_stride);
  v128_t acc[kT][2];
  for (int t = 0; t < kT; ++t) acc[t][0] = acc[t][1] = wasm_f32x4_splat(0.0f);
  for (int32_t b = 0; b < nb; ++b) {
    const BlockQ6_Kx8R& blk = g[b];
    v128_t i0[kT], i1[kT];      // lane r: row r / row 4 + r
    v128_t off0[kT], off1[kT];  // lane r: sum_g sc_g sum(a_g) of the same rows
    for (int t = 0; t < kT; ++t) i0[t] = i1[t] = off0[t] = off1[t] = wasm_i32x4_splat(0);
    for (int s = 0; s < 8; ++s) {
      const SubQ6_Kx8R& sub = blk.sub[s];
      const v128_t sc0 = wasm_i16x8_extend_low_i8x16(wasm_v128_load64_zero(sub.scales[0]));
      const v128_t sc1 = wasm_i16x8_extend_low_i8x16(wasm_v128_load64_zero(sub.scales[1]));
      v128_t a0[kT], a1[kT];
      for (int t = 0; t < kT; ++t) {
        a0[t] = load(y[t][b].qs + 32 * s);
        a1[t] = load(y[t][b].qs + 32 * s + 16);
        const v128_t sums = wasm_v128_load32_splat(y[t][b].bsums + 2 * s);
        off0[t] = wasm_i32x4_add(off0[t], wasm_i32x4_dot_i16x8(sc0, sums));
        off1[t] = wasm_i32x4_add(off1[t], wasm_i32x4_dot_i16x8(sc1, sums));
      }
      // (r0 g, r0 g, r1 g, r1 g, ...) for group 2s (chunks 0-3) and 2s + 1 (chunks 4-7)
      const v128_t even0 = wasm_i16x8_shuffle(sc0, sc0, 0, 0, 2, 2, 4, 4, 6, 6);
      const v128_t even1 = wasm_i16x8_shuffle(sc1, sc1, 0, 0, 2, 2, 4, 4, 6, 6);
      q6_k_pair<0>(sub.q[0], a0, even0, even1, i0, i1, out, out_stride);
      q6_k_pair<1>(sub.q[1], a0, even0, even1, i0, i1, out, out_stride);
      const v128_t odd0 = wasm_i16x8_shuffle(sc0, sc0, 1, 1, 3, 3, 5, 5, 7, 7);
      const v128_t odd1 = wasm_i16x8_shuffle(sc1, sc1, 1, 1, 3, 3, 5, 5, 7, 7);
      q6_k_pair<2>(sub.q[2], a1, odd0, odd1, i0, i1, out, out_stride);
      q6_k_pair<3>(sub.q[3], a1, odd0, odd1, i0, i1, out, out_stride);
    }
    for (int t = 0; t < kT; ++t) {
      const v128_t da = wasm_f32x4_splat(y[t][b].d);
      acc[t][0] =
          add_scaled(acc[t][0], wasm_i32x4_sub(i0[t], wasm_i32x4_shl(off0[t], 5)), blk.d, da);
      acc[t][1] =
          add_scaled(acc[t][1], wasm_i32x4_sub(i1[t], wasm_i32x4_shl(off1[t], 5)), blk.d + 4, da);
    }
  }
  for (int t = 0; t < kT; ++t) {
    wasm_v128_store(out + t * out_stride, acc[t][0]);
    wasm_v128_store(out + t * out_stride + 4, acc[t][1]);
  }
}

// Q4_K and Q6_K: tokens in pairs (one unpacking of the weights for both), then the odd one
// alone.
void q4_k_tokens(int32_t nb, const void* group, const void* a, int32_t a_stride, int32_t nc,
                 float* out, int32_t out_stride) {
  const auto* g = static_cast<const BlockQ4_Kx8R*>(group);
  const auto* y = static_cast<const uint8_t*>(a);
  int32_t c = 0;
  for (; c + 2 <= nc; c += 2)
    q4_k_rows<2>(nb, g, y + c * a_stride, a_stride, out + c * out_stride, out_stride);
  if (c < nc) q4_k_rows<1>(nb, g, y + c * a_stride, a_stride, out + c * out_stride, out_stride);
}

void q6_k_tokens(int32_t nb, const void* group, const void* a, int32_t a_stride, int32_t nc,
                 float* out, int32_t out_stride) {
  const auto* g = static_cast<const BlockQ6_Kx8R*>(group);
  const auto* y = static_cast<const uint8_t*>(a);
  int32_t c = 0;
  for (; c + 2 <= nc; c += 2)
    q6_k_rows<2>(nb, g, y + c * a_stride, a_stride, out + c * out_stride, out_stride);
  if (c < nc) q6_k_rows<1>(nb, g, y + c * a_stride, a_stride, out + c * out_stride, out_stride);
}

}  // namespace
}  // namespace runnel::simd128::relaxed

// The module's exports, one signature (the main module calls them through one function
// pointer type): nb blocks per row; a: nc activation rows a_stride bytes apart; sums: the
// activations' 32-quant block sums, nb per row (Q4_0 only); out: nc rows of 8 floats,
// out_stride floats apart; scratch: 2 x (nb rounded up to 8) floats (Q4_0 / Q4_1 only).
using namespace runnel::simd128::relaxed;
#define RUNNEL_RELAXED_EXPORT(name)                                                        \
  extern "C" __attribute__((export_name(#name))) void name(                                \
      int32_t nb, const void* group, const void* a, int32_t a_stride, const int32_t* sums, \
      int32_t nc, float* out, int32_t out_stride, float* scratch)

RUNNEL_RELAXED_EXPORT(gemm_x8_q4_0) {
  legacy_tokens<false, BlockQ4_0x8R, ActQ8_0>(nb, group, a, a_stride, sums, nc, out, out_stride,
                                              scratch);
}
RUNNEL_RELAXED_EXPORT(gemm_x8_q4_1) {
  legacy_tokens<true, BlockQ4_1x8R, ActQ8_1>(nb, group, a, a_stride, sums, nc, out, out_stride,
                                             scratch);
}
RUNNEL_RELAXED_EXPORT(gemm_x8_q4_k) {
  (void)sums;
  (void)scratch;
  q4_k_tokens(nb, group, a, a_stride, nc, out, out_stride);
}
RUNNEL_RELAXED_EXPORT(gemm_x8_q6_k) {
  (void)sums;
  (void)scratch;
  q6_k_tokens(nb, group, a, a_stride, nc, out, out_stride);
}
