// NEON batched products for prefill (TypeKernels::gemm, kernels/kernels.h) as templates
// over the integer "tile step", instantiated twice: neon_gemm.cpp with the baseline
// widening multiplies, neon_dotprod_gemm.cpp with vdotq_laneq_s32. Include only from
// those two files (internal linkage, see neon_common.h).
//
// Layout (one packed group = kGemmCols = 8 tokens, packed once per matmul by
// neon_gemm.cpp): in every block, k-step k holds elements 4k .. 4k + 3 of each token,
// tokens in order: q[k] = 32 bytes = [t0: 4 quants][t1: 4] .. [t7: 4]. So one 16-byte
// load is "4 elements of 4 tokens" and each int32 lane of a product belongs to one
// token. A weight vector (16 consecutive elements of one row, unpacked once per block)
// meets 4 k-steps: vdotq_laneq_s32(acc, q[k], w, k % 4) adds the 4 products of element
// group k to every token's lane, so a row's 16 x 8 products take 8 sdot and no
// horizontal sum; the block's integer sum ends in the token's lane and the float
// scaling is one vector op per 4 tokens. Per-token values (d, s, bsums) are stored as
// vectors over the 8 tokens.
//
// Integer sums per block are exact (bounds at each use); only the float accumulation
// order differs from ref, so results agree within vec_dot's bounds.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm/neon_common.h"
#include "kernels/arm/neon_lut4_dots.h"
#include "kernels/kernels.h"
#include "kernels/ref/blocks.h"

namespace runnel::neon {
namespace {

constexpr int kTokens = kGemmCols;
static_assert(kTokens == 8, "two int32x4 vectors of token lanes per packed group");

// ---------------------------------------------------------------- packed groups

// One 32-element block of 8 tokens (Q8_0 activations; Q8_1 adds s = d * sum(q)).
struct PackedQ8_0 {
  float d[kTokens];
  int8_t q[kQK / 4][kTokens][4];
};
struct PackedQ8_1 {
  float d[kTokens];
  float s[kTokens];
  int8_t q[kQK / 4][kTokens][4];
};
// One 256-element super-block of 8 tokens. bsums16[g][t]: token t's sum over elements
// 16g .. 16g + 15 (Q2_K mins); bsums32[j][t]: over 32j .. 32j + 31 (Q4_K / Q5_K mins).
struct PackedQ8_K {
  float d[kTokens];
  int16_t bsums16[kQK_K / 16][kTokens];
  int16_t bsums32[kQK_K / 32][kTokens];
  int8_t q[kQK_K / 4][kTokens][4];
};
static_assert(sizeof(PackedQ8_0) == 288 && sizeof(PackedQ8_1) == 320 && sizeof(PackedQ8_K) == 2464);

// ---------------------------------------------------------------- legacy weights

// Each: the block's 32 quants as two int8 vectors (elements 0..15, 16..31), d, min.
struct Q4_0W {
  using Block = ref::BlockQ4_0;
  using Packed = PackedQ8_0;
  static constexpr bool kHasMin = false;
  static void unpack(const Block& x, int8x16_t* lo, int8x16_t* hi) {
    uint8x16_t l, h;
    unpack_nibbles(x.qs, &l, &h);
    const int8x16_t eight = vdupq_n_s8(8);
    *lo = vsubq_s8(as_s8(l), eight);  // q - 8 in [-8, 7]
    *hi = vsubq_s8(as_s8(h), eight);
  }
  static float min(const Block&) { return 0.0f; }
  static float d(const Block& x) { return f16(x.d); }
};

struct Q4_1W {
  using Block = ref::BlockQ4_1;
  using Packed = PackedQ8_1;
  static constexpr bool kHasMin = true;
  static void unpack(const Block& x, int8x16_t* lo, int8x16_t* hi) {
    uint8x16_t l, h;
    unpack_nibbles(x.qs, &l, &h);
    *lo = as_s8(l);
    *hi = as_s8(h);
  }
  static float min(const Block& x) { return f16(x.m); }
  static float d(const Block& x) { return f16(x.d); }
};

struct Q5_0W {
  using Block = ref::BlockQ5_0;
  using Packed = PackedQ8_0;
  static constexpr bool kHasMin = false;
  static void unpack(const Block& x, int8x16_t* lo, int8x16_t* hi) {
    uint8x16_t l, h, bit_lo, bit_hi;
    unpack_nibbles(x.qs, &l, &h);
    expand_bits_32(x.qh, &bit_lo, &bit_hi);
    // q - 16 = nibble - 16 + 16 * bit: as a byte, nibble | 0xF0 where the bit is clear
    const uint8x16_t high_nibble = vdupq_n_u8(0xF0);
    *lo = as_s8(vorrq_u8(l, vbicq_u8(high_nibble, bit_lo)));
    *hi = as_s8(vorrq_u8(h, vbicq_u8(high_nibble, bit_hi)));
  }
  static float min(const Block&) { return 0.0f; }
  static float d(const Block& x) { return f16(x.d); }
};

struct Q5_1W {
  using Block = ref::BlockQ5_1;
  using Packed = PackedQ8_1;
  static constexpr bool kHasMin = true;
  static void unpack(const Block& x, int8x16_t* lo, int8x16_t* hi) {
    uint8x16_t l, h, bit_lo, bit_hi;
    unpack_nibbles(x.qs, &l, &h);
    expand_bits_32(x.qh, &bit_lo, &bit_hi);
    const uint8x16_t fifth_bit = vdupq_n_u8(0x10);
    *lo = as_s8(vorrq_u8(l, vandq_u8(bit_lo, fifth_bit)));  // [0, 31]
    *hi = as_s8(vorrq_u8(h, vandq_u8(bit_hi, fifth_bit)));
  }
  static float min(const Block& x) { return f16(x.m); }
  static float d(const Block& x) { return f16(x.d); }
};

struct Q8_0W {
  using Block = ref::BlockQ8_0;
  using Packed = PackedQ8_0;
  static constexpr bool kHasMin = false;
  static void unpack(const Block& x, int8x16_t* lo, int8x16_t* hi) {
    *lo = load_s8(x.qs);
    *hi = load_s8(x.qs + 16);
  }
  static float min(const Block&) { return 0.0f; }
  static float d(const Block& x) { return f16(x.d); }
};

// MXFP4 and IQ4_NL: the codes looked up into signed weights (|w| <= 127), Q8_0's way on.
template <typename B>
struct Lut4W {
  using Block = B;
  using Packed = PackedQ8_0;
  static constexpr bool kHasMin = false;
  static void unpack(const Block& x, int8x16_t* lo, int8x16_t* hi) {
    lut4_decode(lut4_table(&x), x.qs, lo, hi);
  }
  static float min(const Block&) { return 0.0f; }
  static float d(const Block& x) { return lut4_scale(x); }
};
using Mxfp4W = Lut4W<ref::BlockMxfp4>;
using Iq4NlW = Lut4W<ref::BlockIq4Nl>;

// ---------------------------------------------------------------- k-quant weights

// Each: vec(x, g) = the 16 quants of elements 16g .. 16g + 15 (g < 16) in order;
// sub-blocks of kSubBlock (16 or 32) elements with integer scales; the min term
// (kMinGroup 0: none) is dmin * sum over min groups of min * the token's group sum.
struct KScales {
  int32_t scale[16];  // per sub-block
  int16_t min[16];    // per min group
};

// Q2_K: 2-bit quants; in each 128-element half, byte l of its 32 holds elements l,
// l + 32, l + 64, l + 96 (bits 0-1, 2-3, 4-5, 6-7). Scale (low nibble) and min (high)
// per sub-block of 16.
struct Q2_KW {
  using Block = ref::BlockQ2_K;
  static constexpr int kSubBlock = 16;
  static constexpr int kMinGroup = 16;
  static void scales(const Block& x, KScales* s) {
    for (int j = 0; j < 16; ++j) {
      s->scale[j] = x.scales[j] & 0x0F;
      s->min[j] = static_cast<int16_t>(x.scales[j] >> 4);
    }
  }
  static int8x16_t vec(const Block& x, int g) {
    const uint8x16_t q = vld1q_u8(x.qs + 32 * (g / 8) + 16 * (g % 2));
    return as_s8(vandq_u8(shift_right(q, 2 * ((g % 8) / 2)), vdupq_n_u8(0x03)));
  }
  static float d(const Block& x) { return f16(x.d); }
  static float dmin(const Block& x) { return f16(x.dmin); }
};

// Q3_K: Q2_K's two low bits plus a high bit (hmask[l] bit j: element 32j + l); the
// quant is low - 4 where the high bit is clear; signed 6-bit scales per 16.
struct Q3_KW {
  using Block = ref::BlockQ3_K;
  static constexpr int kSubBlock = 16;
  static constexpr int kMinGroup = 0;
  static void scales(const Block& x, KScales* s) {
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? (x.scales[j] & 0x0F) : (x.scales[j - 8] >> 4);
      const int high = (x.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      s->scale[j] = (low | (high << 4)) - 32;
    }
  }
  static int8x16_t vec(const Block& x, int g) {
    const int group = g / 2;  // 32-element group: its hmask bit
    const uint8x16_t q = vld1q_u8(x.qs + 32 * (group / 4) + 16 * (g % 2));
    const uint8x16_t h = vld1q_u8(x.hmask + 16 * (g % 2));
    const uint8x16_t low = vandq_u8(shift_right(q, 2 * (group % 4)), vdupq_n_u8(0x03));
    return vsubq_s8(as_s8(low), as_s8(vbicq_u8(vdupq_n_u8(4), test_bit(h, group))));
  }
  static float d(const Block& x) { return f16(x.d); }
  static float dmin(const Block&) { return 0.0f; }
};

// Q4_K / Q5_K: in each 64-element chunk c, byte l of its 32 holds element 64c + l (low
// nibble) and 64c + 32 + l (high); Q5_K's fifth bit is qh[l] bit 2c (low) / 2c + 1
// (high). 6-bit scales and mins per sub-block of 32.
template <typename B, bool Q5>
struct ScaleMinK4W {
  using Block = B;
  static constexpr int kSubBlock = 32;
  static constexpr int kMinGroup = 32;
  static void scales(const Block& x, KScales* s) {
    const uint8_t* b = x.scales;
    for (int j = 0; j < 4; ++j) {
      s->scale[j] = b[j] & 63;
      s->min[j] = static_cast<int16_t>(b[j + 4] & 63);
    }
    for (int j = 4; j < 8; ++j) {
      s->scale[j] = (b[j + 4] & 0x0F) | ((b[j - 4] >> 6) << 4);
      s->min[j] = static_cast<int16_t>((b[j + 4] >> 4) | ((b[j] >> 6) << 4));
    }
  }
  static int8x16_t vec(const Block& x, int g) {
    const int c = g / 4;
    const int high = (g / 2) % 2;  // high nibbles: the chunk's second sub-block
    const uint8x16_t packed = vld1q_u8(x.qs + 32 * c + 16 * (g % 2));
    uint8x16_t q = vandq_u8(shift_right(packed, 4 * high), vdupq_n_u8(0x0F));
    if constexpr (Q5) {
      const uint8x16_t qh = vld1q_u8(x.qh + 16 * (g % 2));
      q = vorrq_u8(q, vandq_u8(test_bit(qh, 2 * c + high), vdupq_n_u8(0x10)));
    }
    return as_s8(q);
  }
  static float d(const Block& x) { return f16(x.d); }
  static float dmin(const Block& x) { return f16(x.dmin); }
};
using Q4_KW = ScaleMinK4W<ref::BlockQ4_K, false>;
using Q5_KW = ScaleMinK4W<ref::BlockQ5_K, true>;

// Q6_K: per 128-element half, element 32k + l (k < 4, l < 32) has its low nibble in ql
// byte 32 (k % 2) + l (bits 4 (k / 2) ..) and its top two bits in qh byte l (bits 2k);
// stored as q + 32. int8 scales per sub-block of 16.
struct Q6_KW {
  using Block = ref::BlockQ6_K;
  static constexpr int kSubBlock = 16;
  static constexpr int kMinGroup = 0;
  static void scales(const Block& x, KScales* s) {
    for (int j = 0; j < 16; ++j) s->scale[j] = x.scales[j];
  }
  static int8x16_t vec(const Block& x, int g) {
    const int half = g / 8;
    const int k = (g % 8) / 2;
    const int v = g % 2;
    const uint8x16_t ql = vld1q_u8(x.ql + 64 * half + 32 * (k % 2) + 16 * v);
    const uint8x16_t qh = vld1q_u8(x.qh + 32 * half + 16 * v);
    const uint8x16_t low = vandq_u8(shift_right(ql, 4 * (k / 2)), vdupq_n_u8(0x0F));
    const uint8x16_t top = vshlq_n_u8(vandq_u8(shift_right(qh, 2 * k), vdupq_n_u8(0x03)), 4);
    return vsubq_s8(as_s8(vorrq_u8(low, top)), vdupq_n_s8(32));  // [-32, 31]
  }
  static float d(const Block& x) { return f16(x.d); }
  static float dmin(const Block&) { return 0.0f; }
};

// IQ4_XS: sub-block s (32 elements) in code bytes 16s .. 16s + 15, low nibbles first;
// signed 6-bit scales per sub-block of 32 on IQ4_NL's grid, no mins.
struct Iq4XsW {
  using Block = ref::BlockIq4Xs;
  static constexpr int kSubBlock = 32;
  static constexpr int kMinGroup = 0;
  static void scales(const Block& x, KScales* s) {
    for (int j = 0; j < 8; ++j) s->scale[j] = ref::iq4_xs_scale(x, j);
  }
  static int8x16_t vec(const Block& x, int g) {
    const uint8x16_t packed = vld1q_u8(x.qs + 16 * (g / 2));
    const uint8x16_t codes = g % 2 ? vshrq_n_u8(packed, 4) : vandq_u8(packed, vdupq_n_u8(0x0F));
    return vqtbl1q_s8(lut4_table(&x), codes);
  }
  static float d(const Block& x) { return f16(x.d); }
  static float dmin(const Block&) { return 0.0f; }
};

// ---------------------------------------------------------------- kernels

template <typename Block>
const Block* weight_row(const void* w, size_t w_stride, int r) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) +
                                        static_cast<size_t>(r) * w_stride);
}

// acc[2 * r + h] holds row r, tokens 4h .. 4h + 3.
inline void store_tile(const float32x4_t* acc, int nr, int nc, float* out, size_t out_stride) {
  float lanes[kTokens];
  for (int r = 0; r < nr; ++r) {
    vst1q_f32(lanes, acc[2 * r]);
    vst1q_f32(lanes + 4, acc[2 * r + 1]);
    for (int c = 0; c < nc; ++c) out[static_cast<size_t>(c) * out_stride + r] = lanes[c];
  }
}

// acc[h] += sums[h] * (da[h] * dw): one block's integer sums, scaled, for 8 tokens.
inline void add_scaled(float32x4_t* acc, const int32x4_t* sums, const float32x4_t* da, float dw) {
  for (int h = 0; h < 2; ++h)
    acc[h] = vfmaq_f32(acc[h], vcvtq_f32_s32(sums[h]), vmulq_n_f32(da[h], dw));
}

// NR weight rows of a legacy type against one packed group. Tile: the integer step
// (Acc: the 8 tokens' int32 sums; zero, dot16 = += 16 weights x 8 tokens, mla = += t *
// scale, sums = the two int32x4 of tokens 0..3 and 4..7; kMaxRows), see neon_gemm.cpp
// (widening multiplies) and neon_dotprod_gemm.cpp (sdot).
template <typename Tile, typename W, int NR>
void gemm_legacy_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                      float* out, size_t out_stride) {
  using Packed = typename W::Packed;
  const auto* p = static_cast<const Packed*>(packed);
  const typename W::Block* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<typename W::Block>(w, w_stride, r);
  float32x4_t acc[2 * NR];
  for (auto& v : acc) v = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float32x4_t da[2] = {vld1q_f32(p[b].d), vld1q_f32(p[b].d + 4)};
    for (int r = 0; r < NR; ++r) {
      const auto& blk = x[r][b];
      int8x16_t lo, hi;
      W::unpack(blk, &lo, &hi);
      typename Tile::Acc t = Tile::zero();
      Tile::dot16(t, lo, p[b].q[0][0]);  // elements 0..15: k-steps 0..3
      Tile::dot16(t, hi, p[b].q[4][0]);  // 16..31: k-steps 4..7
      int32x4_t sums[2];
      Tile::sums(t, sums);
      add_scaled(acc + 2 * r, sums, da, W::d(blk));
      if constexpr (W::kHasMin) {  // + m_w * s_a per token
        const float m = W::min(blk);
        acc[2 * r] = vfmaq_n_f32(acc[2 * r], vld1q_f32(p[b].s), m);
        acc[2 * r + 1] = vfmaq_n_f32(acc[2 * r + 1], vld1q_f32(p[b].s + 4), m);
      }
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

// The min term's integer part for 8 tokens: sum over groups of min * group sum
// (|sum| <= 16 * 127 * 256 * 63 < 2^31).
template <typename W>
void min_sums(const PackedQ8_K& p, const KScales& s, int32x4_t* m) {
  m[0] = m[1] = vdupq_n_s32(0);
  if constexpr (W::kMinGroup == 16) {
    for (int g = 0; g < 16; ++g) {
      const int16x8_t bs = vld1q_s16(p.bsums16[g]);
      m[0] = vmlal_n_s16(m[0], vget_low_s16(bs), s.min[g]);
      m[1] = vmlal_high_n_s16(m[1], bs, s.min[g]);
    }
  } else if constexpr (W::kMinGroup == 32) {
    for (int j = 0; j < 8; ++j) {
      const int16x8_t bs = vld1q_s16(p.bsums32[j]);
      m[0] = vmlal_n_s16(m[0], vget_low_s16(bs), s.min[j]);
      m[1] = vmlal_high_n_s16(m[1], bs, s.min[j]);
    }
  }
}

// NR weight rows of a k-quant type against one packed group: per sub-block the 8
// tokens' integer sums are scaled by the sub-block's integer scale (exact: <= 256 *
// 32 * 127 * 128 < 2^31 for every type), then the block's sum is scaled in float. The
// rows are the inner loop, so each 16-element group's 8 activation vectors are loaded
// once and meet the NR rows' weight vectors in registers (as in the AVX2 gemm).
template <typename Tile, typename W, int NR>
void gemm_kquant_rows(int64_t n, const void* w, size_t w_stride, const void* packed, int nc,
                      float* out, size_t out_stride) {
  constexpr int kVecs = W::kSubBlock / 16;  // weight vectors per sub-block
  const auto* p = static_cast<const PackedQ8_K*>(packed);
  const typename W::Block* x[NR];
  for (int r = 0; r < NR; ++r) x[r] = weight_row<typename W::Block>(w, w_stride, r);
  float32x4_t acc[2 * NR];
  for (auto& v : acc) v = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    KScales s[NR];
    typename Tile::Acc isum[NR];
    for (int r = 0; r < NR; ++r) {
      W::scales(x[r][b], &s[r]);
      isum[r] = Tile::zero();
    }
    // Not unrolled: the whole block over 4 rows would not fit the registers (g++ then
    // spills the activation vectors it hoists); the unpacking's shifts take registers.
#pragma GCC unroll 1
    for (int j = 0; j < 16 / kVecs; ++j) {
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        typename Tile::Acc t = Tile::zero();
#pragma GCC unroll 2
        for (int v = 0; v < kVecs; ++v) {
          const int g = kVecs * j + v;
          Tile::dot16(t, W::vec(x[r][b], g), p[b].q[4 * g][0]);
        }
        Tile::mla(isum[r], t, s[r].scale[j]);
      }
    }
    const float32x4_t da[2] = {vld1q_f32(p[b].d), vld1q_f32(p[b].d + 4)};
    for (int r = 0; r < NR; ++r) {
      const auto& blk = x[r][b];
      int32x4_t sums[2];
      Tile::sums(isum[r], sums);
      add_scaled(acc + 2 * r, sums, da, W::d(blk));
      if constexpr (W::kMinGroup != 0) {
        int32x4_t m[2];
        min_sums<W>(p[b], s[r], m);
        const float dmin = W::dmin(blk);
        for (int h = 0; h < 2; ++h)
          acc[2 * r + h] = vfmsq_f32(acc[2 * r + h], vcvtq_f32_s32(m[h]), vmulq_n_f32(da[h], dmin));
      }
    }
  }
  store_tile(acc, NR, nc, out, out_stride);
}

using RowsFn = void (*)(int64_t, const void*, size_t, const void*, int, float*, size_t);

// Up to Tile::kMaxRows (at most 4) rows per pass; longer runs go in passes over the
// same packed group. With sdot, 4 rows' integer tiles and float accumulators fit the 32
// vector registers next to a group's activation vectors; the baseline tile is twice as
// wide, and g++ spills from 2 rows on, so it takes one row at a time.
constexpr int kMaxRows = 4;

template <typename Tile>
void dispatch_rows(const RowsFn (&fns)[kMaxRows], int64_t n, const void* w, size_t w_stride, int nr,
                   const void* packed, int nc, float* out, size_t out_stride) {
  constexpr int kRows = Tile::kMaxRows;
  static_assert(kRows >= 1 && kRows <= kMaxRows);
  for (int r = 0; r < nr; r += kRows) {
    const int rows = nr - r < kRows ? nr - r : kRows;
    fns[rows - 1](n, static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * w_stride, w_stride,
                  packed, nc, out + r, out_stride);
  }
}

// Kernels for 1 .. Tile::kMaxRows rows (nullptr beyond: never called, never compiled).
template <typename Tile, typename W, int NR>
constexpr RowsFn legacy_fn() {
  if constexpr (NR <= Tile::kMaxRows) {
    return gemm_legacy_rows<Tile, W, NR>;
  } else {
    return nullptr;
  }
}
template <typename Tile, typename W, int NR>
constexpr RowsFn kquant_fn() {
  if constexpr (NR <= Tile::kMaxRows) {
    return gemm_kquant_rows<Tile, W, NR>;
  } else {
    return nullptr;
  }
}

template <typename Tile, typename W>
constexpr RowsFn kLegacyRows[kMaxRows] = {legacy_fn<Tile, W, 1>(), legacy_fn<Tile, W, 2>(),
                                          legacy_fn<Tile, W, 3>(), legacy_fn<Tile, W, 4>()};
template <typename Tile, typename W>
constexpr RowsFn kKquantRows[kMaxRows] = {kquant_fn<Tile, W, 1>(), kquant_fn<Tile, W, 2>(),
                                          kquant_fn<Tile, W, 3>(), kquant_fn<Tile, W, 4>()};

// The entry points of one tile step, for the 13 quantized weight types.
template <typename Tile>
struct GemmSet {
  template <typename W>
  static void legacy(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
                     float* out, size_t out_stride) {
    dispatch_rows<Tile>(kLegacyRows<Tile, W>, n, w, w_stride, nr, packed, nc, out, out_stride);
  }
  template <typename W>
  static void kquant(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,
                     float* out, size_t out_stride) {
    dispatch_rows<Tile>(kKquantRows<Tile, W>, n, w, w_stride, nr, packed, nc, out, out_stride);
  }
};

}  // namespace
}  // namespace runnel::neon

// The 13 `gemm` entries of a file over its GemmSet `Set` (neon_gemm.cpp: baseline,
// neon_dotprod_gemm.cpp: vdotq_laneq_s32), in the namespace the macro stands in.
#define RUNNEL_NEON_DEFINE_GEMM(Set)                                                              \
  void gemm_q4_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::legacy<Q4_0W>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_q4_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::legacy<Q4_1W>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_q5_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::legacy<Q5_0W>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_q5_1(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::legacy<Q5_1W>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_q8_0(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::legacy<Q8_0W>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_q2_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::kquant<Q2_KW>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_q3_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::kquant<Q3_KW>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_q4_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::kquant<Q4_KW>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_q5_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::kquant<Q5_KW>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_q6_k(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,   \
                 float* out, size_t out_stride) {                                                 \
    Set::kquant<Q6_KW>(n, w, w_stride, nr, packed, nc, out, out_stride);                          \
  }                                                                                               \
  void gemm_mxfp4(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc,  \
                  float* out, size_t out_stride) {                                                \
    Set::legacy<Mxfp4W>(n, w, w_stride, nr, packed, nc, out, out_stride);                         \
  }                                                                                               \
  void gemm_iq4_nl(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc, \
                   float* out, size_t out_stride) {                                               \
    Set::legacy<Iq4NlW>(n, w, w_stride, nr, packed, nc, out, out_stride);                         \
  }                                                                                               \
  void gemm_iq4_xs(int64_t n, const void* w, size_t w_stride, int nr, const void* packed, int nc, \
                   float* out, size_t out_stride) {                                               \
    Set::kquant<Iq4XsW>(n, w, w_stride, nr, packed, nc, out, out_stride);                         \
  }
