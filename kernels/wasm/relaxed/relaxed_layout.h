// The x8 layouts of the relaxed-SIMD kernels (relaxed_kernels.cpp), shared by that
// module and the main one (which repacks into them: simd128_x8_repack.cpp). Plain C
// types only: the kernel module is built by clang++-16 without a C++ library.
//
// i16x8.relaxed_dot_i8x16_i7x16_s multiplies 16 signed activation bytes by 16 weight
// bytes in [0, 127] and adds neighbouring products into int16 lanes (pmaddubsw on x86,
// 16 products per instruction against i32x4.dot_i16x8's 8). So the weights are stored as
// unsigned bytes the instruction reads directly, one row per 16-byte load, and each row's
// 16 int16 lanes get their scale from one i32x4.dot_i16x8. The group sizes equal the
// SIMD128 layouts' (simd128_x8_layout.h), so the memory plan does not change.
#pragma once

#include <stdint.h>

namespace runnel::simd128::relaxed {

constexpr int kRows = 8;

// The activation blocks (ref::BlockQ8_0 / Q8_1 / Q8_K; simd128_relaxed.cpp checks they
// agree). d and s are f16 bits.
struct ActQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct ActQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[32];
};
struct ActQ8K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};

// Q4_0 / Q4_1: the rows' scales (and mins) as floats, 4 rows to a load, then each row's
// 16 bytes as in the file: element i in the low nibble of byte i, 16 + i in the high one.
struct BlockQ4_0x8R {
  float d[kRows];
  uint8_t qs[kRows][16];
};
static_assert(sizeof(BlockQ4_0x8R) == 8 * 18 + 16, "same size as BlockQ4_0x8");

struct BlockQ4_1x8R {
  float d[kRows];
  float m[kRows];
  uint8_t qs[kRows][16];
};
static_assert(sizeof(BlockQ4_1x8R) == 8 * 20 + 32, "same size as BlockQ4_1x8");

// Q4_K: d, dmin and the 6-bit scales / mins as in BlockQ4_Kx8 (sc[s][r], m[r][s]);
// qs[s][c][4 r + k] holds element 4c + k of sub-block s, row r in its low nibble and
// row r + 4 in its high nibble. One 16-byte load is then 4 elements of all 8 rows: its
// low nibbles dot with the activation's 4 elements splatted (rows 0-3), its high nibbles
// with the same splat (rows 4-7), and a sub-block's int16 sums come out with lane pairs
// by row, scaled by one i32x4.dot_i16x8 per 4 rows. The block streams in as one forward
// run. (Rows' 32 elements per load, `qs[r / 4][s][r % 4]`, needed a splat of the row's
// scale and a scale dot per row and load: 30 against 36 G weights/s streamed.)
struct BlockQ4_Kx8R {
  float d[kRows];
  float dmin[kRows];
  uint8_t sc[8][kRows];
  uint8_t m[kRows][8];
  uint8_t qs[8][8][16];
};
static_assert(sizeof(BlockQ4_Kx8R) == 8 * 144 + 64, "same size as BlockQ4_Kx8");

// Q6_K: q[r / 4][j][r % 4][i] = the 6-bit quant in [0, 63] of row r's element 32 j + i
// (the kernel subtracts 32 through the activation's group sums), in the order the kernel
// reads them: 4 rows' 32 elements at a time, one forward stream per block. Rows stored
// whole (q[r][256]) made that 4 streams 256 bytes apart, which streamed from memory at
// ~14 GB/s against ~26 GB/s in order. scales[j][h] holds the scales of groups 2j and
// 2j + 1 of rows 4h .. 4h + 3 as pairs: [r0 g2j, r0 g2j+1, r1 g2j, r1 g2j+1, ...], which is
// both the per-row splat source and, dotted with the pair of group sums, the -32 term.
struct BlockQ6_Kx8R {
  float d[kRows];
  int8_t scales[8][2][8];
  uint8_t q[2][8][4][32];
};
static_assert(sizeof(BlockQ6_Kx8R) == 32 + 8 * 16 + 8 * 256, "same size as BlockQ6_Kx8");

}  // namespace runnel::simd128::relaxed
