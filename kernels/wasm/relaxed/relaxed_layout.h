// The x8 layouts of the relaxed-SIMD kernels (relaxed_kernels.cpp), shared by that
// module and the main one (which repacks into them: simd128_x8_repack.cpp). Plain C
// types only: the kernel module is built by clang++-16 without a C++ library.
//
// i16x8.relaxed_dot_i8x16_i7x16_s multiplies 16 signed activation bytes by 16 weight
// bytes in [0, 127] and adds neighbouring products into int16 lanes (pmaddubsw on x86,
// 16 products per instruction against i32x4.dot_i16x8's 8). So the weights are stored as
// unsigned bytes the instruction reads directly, one row per 16-byte load, and each row's
// 16 int16 lanes get their scale from one i32x4.dot_i16x8. The group sizes equal the
// SIMD128 layouts' (simd128_x8_layout.h) except Q4_K's and Q6_K's, which are smaller (the
// memory plan takes the selected table's sizes).
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

// Q4_K in 4.69 bits a weight (SIMD128's BlockQ4_Kx8 is 4.75, the file 4.5): d, dmin as
// floats and the 6-bit scales sc[s][r] as bytes, as in BlockQ4_Kx8; the 6-bit mins
// m(r, s) (index i = 8 r + s), read only where a block ends, packed: mlo[j] holds the low
// 4 bits of min j (low nibble) and j + 32 (high), mhi[j] the top 2 bits of mins j,
// j + 16, j + 32 and j + 48 (bits 0-1, 2-3, 4-5, 6-7). (Packing the scales too, read once
// per sub-block, and f16 d / dmin, widened where a block ends, each cost more speed than
// the bytes they saved.)
// qs[s][c][4 r + k] holds element 4c + k of sub-block s, row r in its low nibble and
// row r + 4 in its high nibble. One 16-byte load is then 4 elements of all 8 rows: its
// low nibbles dot with the activation's 4 elements splatted (rows 0-3), its high nibbles
// with the same splat (rows 4-7), and a sub-block's int16 sums come out with lane pairs
// by row, scaled by one i32x4.dot_i16x8 per 4 rows. The block streams in as one forward
// run. (Rows' 32 elements per load, `qs[r / 4][s][r % 4]`, needed a splat of the row's
// scale and a scale dot per row and load: slower.)
struct BlockQ4_Kx8R {
  float d[kRows];
  float dmin[kRows];
  uint8_t sc[8][kRows];
  uint8_t mlo[32];
  uint8_t mhi[16];
  uint8_t qs[8][8][16];
};
static_assert(sizeof(BlockQ4_Kx8R) == 8 * 150, "8 rows of 256: 1200 bytes");

// Q6_K in 6.6 bits a weight (the file's 6.56; a byte per quant took 8.6 and made the
// group 31% larger than its rows). Sub-block s (elements 32 s .. 32 s + 31 of all 8 rows)
// is one forward run of 208 bytes: first scales[h] = the scales of groups 2s and 2s + 1 of
// rows 4h .. 4h + 3 as pairs, [r0 g2s, r0 g2s+1, r1 g2s, r1 g2s+1, ...] (dotted with the
// pair of group sums, the -32 term); then for each pair of chunks c = 2p, 2p + 1 (chunk c:
// elements 32 s + 4c .. + 3) three vectors of 16 bytes, byte i = 4 r + k for element
// 32 s + 4c + k: q[p][0] holds row r / chunk 2p in its low 6 bits, q[p][1] row r + 4 /
// chunk 2p, q[p][2] row r / chunk 2p + 1; row r + 4 / chunk 2p + 1 is spread over their top
// 2 bits (bits 0-1 in q[p][0], 2-3 in q[p][1], 4-5 in q[p][2]). Quants are q in [0, 63]
// (the kernel subtracts 32 through the group sums). Three ANDs give three quant vectors and
// 8 operations the fourth: 11 against the 17 of 4-bit halves with the high bits in a third
// vector. The runs must be one stream: the same bytes as two streams (low bits, high bits)
// read several times slower from memory.
struct SubQ6_Kx8R {
  int8_t scales[2][8];
  uint8_t q[4][3][16];
};
struct BlockQ6_Kx8R {
  float d[kRows];
  SubQ6_Kx8R sub[8];
};
static_assert(sizeof(BlockQ6_Kx8R) == 32 + 8 * 208, "8 rows of 256: 1696 bytes");

}  // namespace runnel::simd128::relaxed
