// The row-interleaved ("x8") weight layouts of the x86 kernels (TypeKernels::repack_x8 /
// gemm_x8, kernels/kernels.h). Eight consecutive rows become one group of the same byte
// size; block b of the group holds block b of all 8 rows, arranged so that one 256-bit
// load gives 4 bytes of every row: the int32 lanes of the kernels are then the 8 rows,
// the activation is broadcast 4 bytes at a time, and the 8 rows' block scales are one
// 16-byte load. Plain structs (no intrinsics): x8_repack.cpp writes them on any x86 CPU.
#pragma once

#include <cstdint>

#include "kernels/types.h"

namespace runnel::x8 {

constexpr int kRows = 8;

// Q4_0: q[j][r] = bytes 4j .. 4j + 3 of row r's qs: low nibbles are elements 4j .. 4j + 3,
// high nibbles elements 16 + 4j .. 16 + 4j + 3.
struct BlockQ4_0x8 {
  uint16_t d[kRows];
  uint8_t q[4][kRows][4];
};
static_assert(sizeof(BlockQ4_0x8) == 8 * 18);

// Q4_1: Q4_0's arrangement with the 8 rows' mins after their scales.
struct BlockQ4_1x8 {
  uint16_t d[kRows];
  uint16_t m[kRows];
  uint8_t q[4][kRows][4];
};
static_assert(sizeof(BlockQ4_1x8) == 8 * 20);

// Q5_0: Q4_0's arrangement plus the 8 rows' fifth bits as a bit plane, so that one shift
// and one AND per vector put them in place: with w[j] the vector of elements 4j .. 4j + 3
// of the 8 rows (the low nibbles of q[j] for j < 4, the high nibbles of q[j - 4] for
// j >= 4; byte i of lane r is element 4j + i of row r), bit j of h[r][i] is the fifth bit
// of that element, i.e. bit 4j + i of row r's qh.
struct BlockQ5_0x8 {
  uint16_t d[kRows];
  uint8_t h[kRows][4];
  uint8_t q[4][kRows][4];
};
static_assert(sizeof(BlockQ5_0x8) == 8 * 22);

// Q5_1: Q5_0's arrangement with the 8 rows' mins after their scales.
struct BlockQ5_1x8 {
  uint16_t d[kRows];
  uint16_t m[kRows];
  uint8_t h[kRows][4];
  uint8_t q[4][kRows][4];
};
static_assert(sizeof(BlockQ5_1x8) == 8 * 24);

// Q8_0: q[k][r] = elements 4k .. 4k + 3 of row r.
struct BlockQ8_0x8 {
  uint16_t d[kRows];
  int8_t q[kQK / 4][kRows][4];
};
static_assert(sizeof(BlockQ8_0x8) == 8 * 34);

// Q6_K, 8 bytes of a row at a time like Q4_K (row r in int32 lanes 2r, 2r + 1), as the
// 6-bit values v = q + 32 so that three of a half's four quarters decode with one AND: for
// half h, quarter i < 3 and k < 4, q[h][i][k][r] = row r's elements 128h + 32i + 8k .. + 7
// in bits 0-5 of each byte, and in bits 6-7 bits 2i, 2i + 1 of the element 96 on (quarter
// 3, same k). scales[p][r] = row r's scales of 16-element groups 2p and 2p + 1 (an int16
// pair once widened, for the -32 * bsums term).
// The AVX-512 table stores each quarter in pair order instead (repack_q6_k_pairs): byte
// 4m + e (m < 2, e < 4) of a row's 8 bytes at k holds element 16m + 4k + e of the quarter,
// so int32 lane 2r takes 4 elements of 16-element group 2p and lane 2r + 1 the same 4 of
// group 2p + 1 (p = 4h + i); scales[p][r] are then exactly those two lanes' scales.
struct BlockQ6_Kx8 {
  uint16_t d[kRows];
  int8_t scales[kQK_K / 32][kRows][2];
  uint8_t q[2][3][4][kRows][8];
};
static_assert(sizeof(BlockQ6_Kx8) == 8 * 210);

// Q4_K, 8 bytes of a row at a time: qs[c][k][r] = row r's qs bytes 32c + 8k .. + 7 (low
// nibbles: elements 64c + 8k .. + 7 of sub-block 2c; high nibbles: 32 elements on, sub-block
// 2c + 1). A 512-bit load (or two 256-bit ones) gives row r in int32 lanes 2r and 2r + 1, and
// one 8-byte activation broadcast feeds every lane. Everything else is stored as the
// kernels consume it, so that a block costs no unpacking beyond its nibbles:
// dm[r] = (d, dmin) of row r, one f16 pair per int32 lane (one vcvtph2ps gives lanes 2r, 2r + 1);
// sc[c][r] = the 6-bit scales of sub-blocks 2c and 2c + 1 of row r (an int16 pair once widened);
// m[q][r][h] = the 6-bit mins of sub-blocks 4q + 2h and 4q + 2h + 1 of row r (widened to
// int16: the pair of lane 2r + h). The group is 32 bytes larger than its 8 rows
// (TypeKernels::x8_block_bytes): the scales and mins take a byte each.
struct BlockQ4_Kx8 {
  uint16_t dm[kRows][2];
  uint8_t sc[4][kRows][2];
  uint8_t m[2][kRows][2][2];
  uint8_t qs[4][4][kRows][8];
};
static_assert(sizeof(BlockQ4_Kx8) == 8 * 144 + 32);

// IQ4_NL rows use BlockQ4_0x8 as they are (an IQ4_NL block is a Q4_0 block's bytes: f16 d,
// 16 code bytes), and the product looks the nibbles up in the value table.

// MXFP4: Q4_0's arrangement of the codes, the 8 rows' E8M0 exponent bytes in front.
struct BlockMxfp4x8 {
  uint8_t e[kRows];
  uint8_t q[4][kRows][4];
};
static_assert(sizeof(BlockMxfp4x8) == 8 * 17);

// IQ4_XS: sc[s][r] = row r's sub-block s scale minus 32 (in [-32, 31]; one 8-byte load gives
// the 8 rows'), q[s] = the codes of sub-block s in Q4_0's arrangement. The group is 16 bytes
// larger than its 8 rows (TypeKernels::x8_block_bytes): a scale takes a byte, not 6 bits.
struct BlockIq4Xsx8 {
  uint16_t d[kRows];
  int8_t sc[kQK_K / 32][kRows];
  uint8_t q[kQK_K / 32][4][kRows][4];
};
static_assert(sizeof(BlockIq4Xsx8) == 8 * 136 + 16);

}  // namespace runnel::x8
