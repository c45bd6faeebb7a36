// ggml's GGUF block layouts, byte for byte. Every quantized row in a GGUF file (and every
// activation row quantized for a dot product) is an array of one of these structs.
// f16 fields are raw IEEE-half bits (uint16_t); decode them with kernels/fp16.h.
// Sizes are pinned here and checked against kernels/types.h in tests/kernels.
#pragma once

#include <cstdint>

#include "kernels/types.h"

namespace runnel::ref {

// ---- legacy formats: 32 elements per block, one scale (and min) per block.
// Nibble layout: byte j holds element j (low nibble) and element j + 16 (high nibble).

struct BlockQ4_0 {  // x = d * (q - 8), q in [0, 15]
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {  // x = d * q + m, q in [0, 15]
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {  // x = d * (q - 16), q = nibble | bit j of qh << 4
  uint16_t d;
  uint8_t qh[4];  // little-endian uint32: bit j = 5th bit of element j
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {  // x = d * q + m
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {  // x = d * q
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ8_1 {  // x = d * q; s = d * sum(q) (the Q4_1/Q5_1 dot uses it for the min term)
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};

// ---- k-quants: 256-element super-blocks split into 16 or 32 element sub-blocks whose
// scales (and mins) are themselves quantized against the super-block's f16 d (dmin).

// 16 sub-blocks of 16. x = d * (scales[j] & 15) * q - dmin * (scales[j] >> 4), q in [0, 3].
// qs: in each 128-element half, byte l holds elements l, l+32, l+64, l+96 at bits 0,2,4,6.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};

// 16 sub-blocks of 16. x = d * (s[j] - 32) * (q - 4 * !high_bit), q (2 bits) like Q2_K.
// hmask[m] bit b is the high bit of element 32 * b + m. scales: 16 six-bit values, low
// nibbles in bytes 0..7 (j < 8: low half, else high half of byte j - 8), high two bits in
// bytes 8..11 (byte 8 + j % 4, bit offset 2 * (j / 4)).
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};

// 8 sub-blocks of 32. x = d * sc[j] * q - dmin * m[j], q in [0, 15]; sc, m are 6-bit and
// packed in 12 bytes (see unpack_scale_min_k4 in k_quants_common.h).
// qs: in each 64-element chunk, byte l holds element l (low nibble) and l + 32 (high).
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};

// Like Q4_K with a fifth bit: qh[l] bit 2c is element 64c + l's, bit 2c+1 is 64c + 32 + l's.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16. x = d * scales[j] * (q - 32), q 6 bits: in each 128-element half,
// ql[l] = low nibbles of elements l | l+64 << 4, ql[l+32] = l+32 | l+96 << 4, and qh[l]
// holds the top two bits of elements l, l+32, l+64, l+96 at bits 0, 2, 4, 6.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// Activation-only partner of Q2_K..Q6_K. x = d * q; bsums[j] = sum of q over elements
// [16j, 16j + 16) so dot products can apply the weight mins without touching q again.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

// ---- 4-bit lookup formats: each 4-bit code indexes a 16-entry table of int8 values
// (kernels/ref/lut4_values.h), times the block's scale. Nibbles as in the legacy blocks:
// byte j holds element j (low nibble) and element j + 16 (high nibble) of 32.

// MXFP4 (OCP microscaling; gpt-oss's expert weights): x = kMxfp4Values[q] * 2^(e - 128).
// The table holds the E2M1 values doubled (integers), hence half the E8M0 scale 2^(e - 127).
struct BlockMxfp4 {
  uint8_t e;  // E8M0: a bare exponent, bias 127
  uint8_t qs[kQK / 2];
};

// IQ4_NL: x = d * kIq4NlValues[q] (a non-linear grid, denser near zero).
struct BlockIq4Nl {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// IQ4_XS: 8 sub-blocks of 32 on IQ4_NL's grid. x = d * (ls_j - 32) * kIq4NlValues[q];
// ls_j is 6 bits: low 4 in nibble j % 2 of scales_l[j / 2], high 2 at bits 2j, 2j + 1 of
// scales_h. qs: sub-block j in bytes 16j .. 16j + 15, nibbles as the legacy blocks.
struct BlockIq4Xs {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

// Sizes are the on-disk ggml sizes (also in kernels/types.cpp; a test checks both agree).
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockMxfp4) == 17);
static_assert(sizeof(BlockIq4Nl) == 18);
static_assert(sizeof(BlockIq4Xs) == 136);

}  // namespace runnel::ref
