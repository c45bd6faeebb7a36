// The row-interleaved ("x8") weight layouts of the SIMD128 kernels (TypeKernels::repack_x8 /
// gemm_x8, kernels/kernels.h). Eight consecutive rows become one group; block b of the
// group holds block b of all 8 rows, so the kernels read one stream instead of eight.
// The rows' f16 scales are stored as floats, 4 rows to a 16-byte load: SIMD128 has no
// f16 conversion, and widening the scales in the kernel cost a fifth of its instructions
// (the groups are 3-20% larger than the rows they hold, Q6_K 31%: x8_block_bytes).
//
// SIMD128 has no 8-bit multiply-add into 32 bits, only i32x4.dot_i16x8 (8 int16 products
// summed in pairs). So the quants are stored the way the kernels widen them to int16:
//  - 4-bit quants, per 32 elements, in "lane order": 16 bytes read as 8 uint16 lanes,
//    lane k holding elements k, 8 + k, 16 + k and 24 + k in bits 0-3, 4-7, 8-11 and 12-15.
//    (lane >> 4j) & 15 is then elements 8j .. 8j + 7 as int16 lanes: 3 shifts and 3 ands
//    per 32 elements instead of a byte unpack and four widenings.
//  - Q5_0 / Q5_1's 5-bit quants likewise, three to a uint16 lane (the fourth element's
//    fifth bit in bit 15, its nibble in a lane shared by 4 rows).
//  - Q6_K's 6-bit quants as plain int8 (q - 32): this group is 31% larger than the rows
//    it holds, and its dot costs what Q8_0's does.
//  - MXFP4 / IQ4_NL / IQ4_XS codes in the file's nibble order (low nibbles: elements
//    0..15, high: 16..31): i8x16.swizzle turns each half into 16 signed weights that line
//    up with one 16-byte activation load, so the kernel widens them as it does Q8_0's.
// Plain structs (no intrinsics): simd128_x8_repack.cpp writes and reads them; the floats
// hold the f16 values exactly and go back to the same bits.
#pragma once

#include <cstdint>

#include "kernels/types.h"

namespace runnel::simd128::x8 {

constexpr int kRows = 8;

// Q4_0: d[r] and row r's 32 nibbles in lane order (q in [0, 15]; the kernel subtracts 8
// through the activation's block sum).
struct BlockQ4_0x8 {
  float d[kRows];
  uint8_t qs[kRows][16];
};
static_assert(sizeof(BlockQ4_0x8) == 8 * 18 + 16);

// Q4_1: Q4_0's arrangement with the 8 rows' mins after their scales.
struct BlockQ4_1x8 {
  float d[kRows];
  float m[kRows];
  uint8_t qs[kRows][16];
};
static_assert(sizeof(BlockQ4_1x8) == 8 * 20 + 32);

// Q5_0: 5-bit quants q in [0, 31] (the kernel subtracts 16 through the activation's block
// sum), so that shifts and masks give int16 lanes of 8 consecutive elements as for 4-bit
// lane order: qs[r] is 8 uint16 lanes, lane k holding elements k, 8 + k and 16 + k of row
// r in bits 0-4, 5-9 and 10-14 and the fifth bit of element 24 + k in bit 15; the low
// nibbles of elements 24 .. 31 of rows 4h .. 4h + 3 are q3[h], lane k holding row
// 4h + i's element 24 + k in bits 4i .. 4i + 3. 16 bytes larger than the rows (the scales).
struct BlockQ5_0x8 {
  float d[kRows];
  uint8_t qs[kRows][16];
  uint8_t q3[2][16];
};
static_assert(sizeof(BlockQ5_0x8) == 8 * 22 + 16);

// Q5_1: Q5_0's arrangement with the 8 rows' mins after their scales.
struct BlockQ5_1x8 {
  float d[kRows];
  float m[kRows];
  uint8_t qs[kRows][16];
  uint8_t q3[2][16];
};
static_assert(sizeof(BlockQ5_1x8) == 8 * 24 + 32);

// Q8_0: the rows' blocks with their scales gathered in front.
struct BlockQ8_0x8 {
  float d[kRows];
  int8_t qs[kRows][kQK];
};
static_assert(sizeof(BlockQ8_0x8) == 8 * 34 + 16);

// Q4_K: sc[s][r] = row r's 6-bit scale of sub-block s (one byte, so the kernel splats it),
// m[r][s] its min (a row's 8 mins are one 8-byte load, dotted with the 8 sub-block sums
// of the activation), qs[r / 4][s][r % 4] row r's sub-block s: 32 nibbles in lane order.
// The kernel takes rows 4h .. 4h + 3 sub-block by sub-block, so it reads qs in order.
struct BlockQ4_Kx8 {
  float d[kRows];
  float dmin[kRows];
  uint8_t sc[8][kRows];
  uint8_t m[kRows][8];
  uint8_t qs[2][8][4][16];
};
static_assert(sizeof(BlockQ4_Kx8) == 8 * 144 + 64);

// Q6_K: scales[r][g] = row r's scale of 16-element group g, q[r / 4][s][r % 4][i] = row
// r's element 32 s + i as q - 32 in [-32, 31]: the order the kernel reads them in (4 rows'
// 32 elements at a time). Rows stored whole made that 4 streams 256 bytes apart, which
// read slower from memory.
struct BlockQ6_Kx8 {
  float d[kRows];
  int8_t scales[kRows][kQK_K / 16];
  int8_t q[2][8][4][32];
};
static_assert(sizeof(BlockQ6_Kx8) == 32 + 8 * 16 + 8 * 256);

// MXFP4: d[r] = row r's 2^(e - 128) (ref::e8m0_to_fp32_half; every exponent byte gives a
// distinct float, so unpacking gets it back), qs[r] its 16 code bytes as in the file.
struct BlockMxfp4x8 {
  float d[kRows];
  uint8_t qs[kRows][16];
};
static_assert(sizeof(BlockMxfp4x8) == 8 * 17 + 24);

// IQ4_NL: d[r] and row r's 16 code bytes as in the file.
struct BlockIq4Nlx8 {
  float d[kRows];
  uint8_t qs[kRows][16];
};
static_assert(sizeof(BlockIq4Nlx8) == 8 * 18 + 16);

// IQ4_XS: sc[s][r] = row r's sub-block scale ls - 32 of sub-block s (the 8 rows' scales of
// a sub-block are one 8-byte load), qs[s][r] row r's sub-block s: 16 code bytes as in the
// file, in the order the kernel reads them (sub-block by sub-block, all 8 rows), so a block
// streams in as one forward run.
struct BlockIq4Xsx8 {
  float d[kRows];
  int8_t sc[8][kRows];
  uint8_t qs[8][kRows][16];
};
static_assert(sizeof(BlockIq4Xsx8) == 8 * 136 + 32);

}  // namespace runnel::simd128::x8
