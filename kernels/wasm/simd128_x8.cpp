// SIMD128 products over row-interleaved groups (TypeKernels::gemm_x8; layouts in
// simd128_x8_layout.h): one group of 8 weight rows against nc activation rows, for decode
// (nc = 1) and prefill alike.
//
// Per block and per half group (4 rows): each row's quants (MXFP4 / IQ4_NL / IQ4_XS: the
// weights looked up from its codes by i8x16.swizzle) are widened to int16 and
// dotted with the activation's int16 quants (i32x4.dot_i16x8: exact; the largest lane
// sums are stated per type), the 4 rows' int32 vectors are transposed into one vector
// (lane r = row r), and that vector is scaled with the 4 rows' scales (stored as floats:
// one load). ref sums one float per block as well, so the two agree to float rounding,
// within vec_dot's bound of 1e-5 * S.
#include <wasm_simd128.h>

#include <type_traits>

#include "kernels/ref/blocks.h"
#include "kernels/ref/lut4_values.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"
#include "kernels/wasm/simd128_x8_layout.h"

namespace runnel::simd128 {
namespace {

using namespace x8;

// 32 activation quants as four int16 vectors: elements 0..7, 8..15, 16..23, 24..31.
struct Act32 {
  v128_t v[4];
  explicit Act32(const int8_t* q) {
    const v128_t lo = load(q);
    const v128_t hi = load(q + 16);
    v[0] = wasm_i16x8_extend_low_i8x16(lo);
    v[1] = wasm_i16x8_extend_high_i8x16(lo);
    v[2] = wasm_i16x8_extend_low_i8x16(hi);
    v[3] = wasm_i16x8_extend_high_i8x16(hi);
  }
};

// sum q[e] a[e] over 32 nibbles in lane order (q in [0, 15], |a| <= 128): each int32 lane
// gets 8 products, |lane| <= 8 * 15 * 128.
inline v128_t dot_lane_order(const uint8_t* qs, const Act32& a) {
  const v128_t packed = load(qs);
  const v128_t mask = wasm_i16x8_splat(0x0F);
  const v128_t q0 = wasm_v128_and(packed, mask);
  const v128_t q1 = wasm_v128_and(wasm_u16x8_shr(packed, 4), mask);
  const v128_t q2 = wasm_v128_and(wasm_u16x8_shr(packed, 8), mask);
  const v128_t q3 = wasm_u16x8_shr(packed, 12);
  return wasm_i32x4_add(
      wasm_i32x4_add(wasm_i32x4_dot_i16x8(q0, a.v[0]), wasm_i32x4_dot_i16x8(q1, a.v[1])),
      wasm_i32x4_add(wasm_i32x4_dot_i16x8(q2, a.v[2]), wasm_i32x4_dot_i16x8(q3, a.v[3])));
}

// sum q[e] a[e] over the 32 5-bit quants of row 4h + i of a Q5 group (BlockQ5_0x8: the
// row's 16 bytes qs and its half's q3; q in [0, 31], |a| <= 128): |lane| <= 8 * 31 * 128.
inline v128_t dot_q5(const uint8_t* qs, v128_t q3, int i, const Act32& a) {
  const v128_t packed = load(qs);
  const v128_t mask = wasm_i16x8_splat(0x1F);
  const v128_t q0 = wasm_v128_and(packed, mask);
  const v128_t q1 = wasm_v128_and(wasm_u16x8_shr(packed, 5), mask);
  const v128_t q2 = wasm_v128_and(wasm_u16x8_shr(packed, 10), mask);
  const v128_t q3_low = wasm_v128_and(wasm_u16x8_shr(q3, 4 * i), wasm_i16x8_splat(0x0F));
  const v128_t q3_high = wasm_v128_and(wasm_u16x8_shr(packed, 11), wasm_i16x8_splat(0x10));
  return wasm_i32x4_add(
      wasm_i32x4_add(wasm_i32x4_dot_i16x8(q0, a.v[0]), wasm_i32x4_dot_i16x8(q1, a.v[1])),
      wasm_i32x4_add(wasm_i32x4_dot_i16x8(q2, a.v[2]),
                     wasm_i32x4_dot_i16x8(wasm_v128_or(q3_low, q3_high), a.v[3])));
}

// sum q[e] a[e] over 32 int8 quants (elements 0..15 in lo, 16..31 in hi): |lane| <= 8 *
// 128 * 128.
inline v128_t dot_i8x32(v128_t lo, v128_t hi, const Act32& a) {
  return wasm_i32x4_add(
      wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(lo), a.v[0]),
                     wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(lo), a.v[1])),
      wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(hi), a.v[2]),
                     wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(hi), a.v[3])));
}

inline v128_t dot_i8_32(const int8_t* q, const Act32& a) {
  return dot_i8x32(load(q), load(q + 16), a);
}

// sum w[e] a[e] over a 4-bit lookup block's 32 weights (16 code bytes through `table`, the
// value table: |w| <= 127): |lane| <= 8 * 127 * 128.
inline v128_t dot_lut4(v128_t table, const uint8_t* qs, const Act32& a) {
  v128_t lo, hi;
  decode_lut4(table, qs, &lo, &hi);
  return dot_i8x32(lo, hi, a);
}

// Activation scales are widened kChunk blocks at a time (widen_fields, simd128_vec.h) into
// arrays on the stack.
constexpr int kChunk = 32;
static_assert(kChunk % 8 == 0, "widen_fields writes whole vectors of 8");

inline void store_8(float* out, v128_t lo, v128_t hi) {
  wasm_v128_store(out, lo);
  wasm_v128_store(out + 4, hi);
}

// ---------------------------------------------------------------- legacy blocks

// Block b of the 4 rows of half h: their integer dots with the activation, lane r = row 4h + r.
template <typename Group>
inline v128_t half_sums_nibbles(const Group& g, int h, const Act32& a) {
  return transpose_sum(dot_lane_order(g.qs[4 * h], a), dot_lane_order(g.qs[4 * h + 1], a),
                       dot_lane_order(g.qs[4 * h + 2], a), dot_lane_order(g.qs[4 * h + 3], a));
}

// The same for the 5-bit quants of a Q5_0 / Q5_1 group.
template <typename Group>
inline v128_t half_sums_q5(const Group& g, int h, const Act32& a) {
  const v128_t q3 = load(g.q3[h]);
  return transpose_sum(dot_q5(g.qs[4 * h], q3, 0, a), dot_q5(g.qs[4 * h + 1], q3, 1, a),
                       dot_q5(g.qs[4 * h + 2], q3, 2, a), dot_q5(g.qs[4 * h + 3], q3, 3, a));
}

// Either of the two above, by the group's type.
template <typename Group>
inline v128_t half_sums_legacy(const Group& g, int h, const Act32& a) {
  if constexpr (std::is_same_v<Group, BlockQ5_0x8> || std::is_same_v<Group, BlockQ5_1x8>) {
    return half_sums_q5(g, h, a);
  } else {
    return half_sums_nibbles(g, h, a);
  }
}

// Q4_0 and Q5_0 (Group BlockQ4_0x8 / BlockQ5_0x8): sum (q - 8) a = sum q a - 8 sum a (16
// for Q5_0), with sum a from a_sums (exact in int32).
template <typename Group>
void gemm_zero_point_rows(int64_t nb, const Group* g, const ref::BlockQ8_0* y, const int32_t* sums,
                          float* out) {
  constexpr bool kQ5 = std::is_same_v<Group, BlockQ5_0x8>;
  v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
  alignas(16) float da[kChunk];
  for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
    const int count = static_cast<int>(nb - b0 < kChunk ? nb - b0 : kChunk);
    widen_fields(y + b0, count, &ref::BlockQ8_0::d, da);
    for (int i = 0; i < count; ++i) {
      const int64_t b = b0 + i;
      const Act32 a(y[b].qs);
      const v128_t offset = wasm_i32x4_splat((kQ5 ? 16 : 8) * sums[b]);
      const v128_t d_a = wasm_f32x4_splat(da[i]);
      for (int h = 0; h < 2; ++h) {
        const v128_t isum = wasm_i32x4_sub(half_sums_legacy(g[b], h, a), offset);
        acc[h] = add_scaled(acc[h], isum, g[b].d + 4 * h, d_a);
      }
    }
  }
  store_8(out, acc[0], acc[1]);
}

// Q4_1 and Q5_1 (Group BlockQ4_1x8 / BlockQ5_1x8): w = d q + m; the m term is m * s
// (s = d_a sum q_a, the Q8_1 block's second field).
template <typename Group>
void gemm_with_mins_rows(int64_t nb, const Group* g, const ref::BlockQ8_1* y,
                         const int32_t* /*sums*/, float* out) {
  v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
  alignas(16) float da[kChunk];
  alignas(16) float sa[kChunk];
  for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
    const int count = static_cast<int>(nb - b0 < kChunk ? nb - b0 : kChunk);
    widen_fields(y + b0, count, &ref::BlockQ8_1::d, da);
    widen_fields(y + b0, count, &ref::BlockQ8_1::s, sa);
    for (int i = 0; i < count; ++i) {
      const int64_t b = b0 + i;
      const Act32 a(y[b].qs);
      const v128_t d_a = wasm_f32x4_splat(da[i]);
      const v128_t s = wasm_f32x4_splat(sa[i]);
      for (int h = 0; h < 2; ++h) {
        const v128_t isum = half_sums_legacy(g[b], h, a);
        acc[h] = add_scaled(acc[h], isum, g[b].d + 4 * h, d_a);
        acc[h] = wasm_f32x4_add(acc[h], wasm_f32x4_mul(load(g[b].m + 4 * h), s));
      }
    }
  }
  store_8(out, acc[0], acc[1]);
}

// Q8_0, MXFP4 and IQ4_NL (Group BlockQ8_0x8 / BlockMxfp4x8 / BlockIq4Nlx8): int8 weights,
// stored or looked up from the codes (|w| <= 128 either way); d[r] is 2^(e - 128) for
// MXFP4. Exact integer block sums (|total| <= 32 * 128 * 128), so vec_dot's float steps
// give the same bits.
template <typename Group>
void gemm_signed_rows(int64_t nb, const Group* g, const ref::BlockQ8_0* y, const int32_t* /*sums*/,
                      float* out) {
  constexpr bool kQ8_0 = std::is_same_v<Group, BlockQ8_0x8>;
  v128_t table = wasm_i32x4_splat(0);
  if constexpr (!kQ8_0) table = load(std::is_same_v<Group, BlockMxfp4x8> ? ref::kMxfp4Values : ref::kIq4NlValues);
  const auto dot = [&](const Group& blk, int r, const Act32& a) {
    if constexpr (kQ8_0) {
      return dot_i8_32(blk.qs[r], a);
    } else {
      return dot_lut4(table, blk.qs[r], a);
    }
  };
  v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
  alignas(16) float da[kChunk];
  for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
    const int count = static_cast<int>(nb - b0 < kChunk ? nb - b0 : kChunk);
    widen_fields(y + b0, count, &ref::BlockQ8_0::d, da);
    for (int i = 0; i < count; ++i) {
      const int64_t b = b0 + i;
      const Act32 a(y[b].qs);
      const v128_t d_a = wasm_f32x4_splat(da[i]);
      for (int h = 0; h < 2; ++h) {
        const v128_t isum = transpose_sum(dot(g[b], 4 * h, a), dot(g[b], 4 * h + 1, a),
                                          dot(g[b], 4 * h + 2, a), dot(g[b], 4 * h + 3, a));
        acc[h] = add_scaled(acc[h], isum, g[b].d + 4 * h, d_a);
      }
    }
  }
  store_8(out, acc[0], acc[1]);
}

// ---------------------------------------------------------------- k-quants

// Q4_K: row r's block = d sum_s sc_s (q_s . a_s) - dmin sum_s m_s sum(a_s), times d_a.
// Per row, sc_s (q_s . a_s) is accumulated in int32 lanes: |total| <= 8 * 63 * 32 * 15 * 128.
void gemm_q4_k_rows(int64_t nb, const BlockQ4_Kx8* g, const ref::BlockQ8_K* y,
                    const int32_t* /*sums*/, float* out) {
  v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_Kx8& blk = g[b];
    const v128_t da = wasm_f32x4_splat(y[b].d);
    const v128_t sums32 = q8_k_sums32(y[b].bsums);
    for (int h = 0; h < 2; ++h) {
      v128_t row[4] = {wasm_i32x4_splat(0), wasm_i32x4_splat(0), wasm_i32x4_splat(0),
                       wasm_i32x4_splat(0)};
      for (int s = 0; s < 8; ++s) {
        const Act32 a(y[b].qs + 32 * s);
        for (int r = 0; r < 4; ++r) {
          const v128_t dot = dot_lane_order(blk.qs[h][s][r], a);
          row[r] =
              wasm_i32x4_add(row[r], wasm_i32x4_mul(dot, wasm_i32x4_splat(blk.sc[s][4 * h + r])));
        }
      }
      // The min terms: row r's 8 mins dotted with the 8 sub-block sums (|lane| <= 2 * 63 * 4096).
      v128_t mins[4];
      for (int r = 0; r < 4; ++r) {
        const v128_t m = wasm_u16x8_extend_low_u8x16(wasm_v128_load64_zero(blk.m[4 * h + r]));
        mins[r] = wasm_i32x4_dot_i16x8(m, sums32);
      }
      const v128_t isum = transpose_sum(row[0], row[1], row[2], row[3]);
      const v128_t msum = transpose_sum(mins[0], mins[1], mins[2], mins[3]);
      acc[h] = add_scaled_min(acc[h], isum, msum, blk.d + 4 * h, blk.dmin + 4 * h, da);
    }
  }
  store_8(out, acc[0], acc[1]);
}

// Q6_K: row r's block = d sum_g sc_g (q_g . a_g) over 16 groups of 16 (q in [-32, 31]):
// |total| <= 16 * 128 * 16 * 32 * 128.
void gemm_q6_k_rows(int64_t nb, const BlockQ6_Kx8* g, const ref::BlockQ8_K* y,
                    const int32_t* /*sums*/, float* out) {
  v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6_Kx8& blk = g[b];
    const v128_t da = wasm_f32x4_splat(y[b].d);
    for (int h = 0; h < 2; ++h) {
      v128_t row[4] = {wasm_i32x4_splat(0), wasm_i32x4_splat(0), wasm_i32x4_splat(0),
                       wasm_i32x4_splat(0)};
      for (int s = 0; s < 8; ++s) {
        const Act32 a(y[b].qs + 32 * s);
        for (int r = 0; r < 4; ++r) {
          const int8_t* q = blk.q[h][s][r];
          const v128_t lo = load(q);
          const v128_t hi = load(q + 16);
          const v128_t dot0 =
              wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(lo), a.v[0]),
                             wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(lo), a.v[1]));
          const v128_t dot1 =
              wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(hi), a.v[2]),
                             wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(hi), a.v[3]));
          const int8_t* sc = blk.scales[4 * h + r] + 2 * s;
          row[r] =
              wasm_i32x4_add(row[r], wasm_i32x4_add(wasm_i32x4_mul(dot0, wasm_i32x4_splat(sc[0])),
                                                    wasm_i32x4_mul(dot1, wasm_i32x4_splat(sc[1]))));
        }
      }
      const v128_t isum = transpose_sum(row[0], row[1], row[2], row[3]);
      acc[h] = add_scaled(acc[h], isum, blk.d + 4 * h, da);
    }
  }
  store_8(out, acc[0], acc[1]);
}

// IQ4_XS: row r's block = d sum_s sc_s (w_s . a_s) over 8 sub-blocks of 32 (|w| <= 127,
// sc in [-32, 31]). Per sub-block the 4 rows of each half are transposed into one vector
// (lane r = row r's w_s . a_s, |.| <= 32 * 127 * 128) and multiplied by their 4 scales, one
// 8-byte load for all 8 rows; the activation is widened once for both halves.
// |total| <= 8 * 32 * 32 * 127 * 128 < 2^31.
void gemm_iq4_xs_rows(int64_t nb, const BlockIq4Xsx8* g, const ref::BlockQ8_K* y,
                      const int32_t* /*sums*/, float* out) {
  const v128_t table = load(ref::kIq4NlValues);
  v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIq4Xsx8& blk = g[b];
    const v128_t da = wasm_f32x4_splat(y[b].d);
    v128_t isum[2] = {wasm_i32x4_splat(0), wasm_i32x4_splat(0)};
    for (int s = 0; s < 8; ++s) {
      const Act32 a(y[b].qs + 32 * s);
      const v128_t sc = wasm_i16x8_extend_low_i8x16(wasm_v128_load64_zero(blk.sc[s]));
      for (int h = 0; h < 2; ++h) {
        const uint8_t(&qs)[kRows][16] = blk.qs[s];
        const v128_t dots =
            transpose_sum(dot_lut4(table, qs[4 * h], a), dot_lut4(table, qs[4 * h + 1], a),
                          dot_lut4(table, qs[4 * h + 2], a), dot_lut4(table, qs[4 * h + 3], a));
        const v128_t sc4 =
            h == 0 ? wasm_i32x4_extend_low_i16x8(sc) : wasm_i32x4_extend_high_i16x8(sc);
        isum[h] = wasm_i32x4_add(isum[h], wasm_i32x4_mul(dots, sc4));
      }
    }
    for (int h = 0; h < 2; ++h) acc[h] = add_scaled(acc[h], isum[h], blk.d + 4 * h, da);
  }
  store_8(out, acc[0], acc[1]);
}

// Each activation row runs over the whole group (nc passes): a group is a few KiB to a
// few tens of KiB, so the later passes read it from L1 / L2. a_sums: n / 32 per row.
template <typename Group, typename Act, int kBlock,
          void (*Rows)(int64_t, const Group*, const Act*, const int32_t*, float*)>
void over_tokens(int64_t n, const void* group, const void* a, size_t a_stride,
                 const int32_t* a_sums, int nc, float* out, size_t out_stride) {
  for (int c = 0; c < nc; ++c) {
    const auto* y = reinterpret_cast<const Act*>(static_cast<const uint8_t*>(a) +
                                                 static_cast<size_t>(c) * a_stride);
    Rows(n / kBlock, static_cast<const Group*>(group), y, a_sums ? a_sums + c * (n / kQK) : nullptr,
         out + c * out_stride);
  }
}

}  // namespace

void gemm_x8_q4_0(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride) {
  over_tokens<BlockQ4_0x8, ref::BlockQ8_0, kQK, gemm_zero_point_rows<BlockQ4_0x8>>(
      n, group, a, a_stride, a_sums, nc, out, out_stride);
}

void gemm_x8_q4_1(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride) {
  over_tokens<BlockQ4_1x8, ref::BlockQ8_1, kQK, gemm_with_mins_rows<BlockQ4_1x8>>(
      n, group, a, a_stride, a_sums, nc, out, out_stride);
}

void gemm_x8_q5_0(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride) {
  over_tokens<BlockQ5_0x8, ref::BlockQ8_0, kQK, gemm_zero_point_rows<BlockQ5_0x8>>(
      n, group, a, a_stride, a_sums, nc, out, out_stride);
}

void gemm_x8_q5_1(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride) {
  over_tokens<BlockQ5_1x8, ref::BlockQ8_1, kQK, gemm_with_mins_rows<BlockQ5_1x8>>(
      n, group, a, a_stride, a_sums, nc, out, out_stride);
}

void gemm_x8_q8_0(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride) {
  over_tokens<BlockQ8_0x8, ref::BlockQ8_0, kQK, gemm_signed_rows<BlockQ8_0x8>>(n, group, a, a_stride, a_sums, nc,
                                                                out, out_stride);
}

void gemm_x8_q4_k(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride) {
  over_tokens<BlockQ4_Kx8, ref::BlockQ8_K, kQK_K, gemm_q4_k_rows>(n, group, a, a_stride, a_sums, nc,
                                                                  out, out_stride);
}

void gemm_x8_q6_k(int64_t n, const void* group, const void* a, size_t a_stride,
                  const int32_t* a_sums, int nc, float* out, size_t out_stride) {
  over_tokens<BlockQ6_Kx8, ref::BlockQ8_K, kQK_K, gemm_q6_k_rows>(n, group, a, a_stride, a_sums, nc,
                                                                  out, out_stride);
}

// MXFP4, IQ4_NL and IQ4_XS read no a_sums (the routed MoE experts have none to give).
void gemm_x8_mxfp4(int64_t n, const void* group, const void* a, size_t a_stride,
                   const int32_t* /*a_sums*/, int nc, float* out, size_t out_stride) {
  over_tokens<BlockMxfp4x8, ref::BlockQ8_0, kQK, gemm_signed_rows<BlockMxfp4x8>>(
      n, group, a, a_stride, nullptr, nc, out, out_stride);
}

void gemm_x8_iq4_nl(int64_t n, const void* group, const void* a, size_t a_stride,
                    const int32_t* /*a_sums*/, int nc, float* out, size_t out_stride) {
  over_tokens<BlockIq4Nlx8, ref::BlockQ8_0, kQK, gemm_signed_rows<BlockIq4Nlx8>>(
      n, group, a, a_stride, nullptr, nc, out, out_stride);
}

void gemm_x8_iq4_xs(int64_t n, const void* group, const void* a, size_t a_stride,
                    const int32_t* /*a_sums*/, int nc, float* out, size_t out_stride) {
  over_tokens<BlockIq4Xsx8, ref::BlockQ8_K, kQK_K, gemm_iq4_xs_rows>(n, group, a, a_stride,
                                                                     nullptr, nc, out, out_stride);
}

}  // namespace runnel::simd128
