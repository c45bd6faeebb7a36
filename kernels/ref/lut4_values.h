// The value tables and scale decoding of the 4-bit lookup formats (MXFP4, IQ4_NL,
// IQ4_XS; block layouts in blocks.h). Shared by kernels/ref and the ISA kernels, whose
// byte shuffles (pshufb, tbl, i8x16.swizzle) load a table as one 16-byte vector.
#pragma once

#include <cstdint>

#include "kernels/fp16.h"
#include "kernels/ref/blocks.h"

namespace runnel::ref {

// IQ4_NL / IQ4_XS: a non-linear grid, denser near zero (ggml's kvalues_iq4nl).
alignas(16) inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                        1,    13,   25,  38,  53,  69,  89,  113};

// MXFP4: the 16 E2M1 (fp4) codes, sign in bit 3, as values doubled so they are integers
// (0, 0.5, 1, 1.5, 2, 3, 4, 6 -> 0 .. 12); the scale is halved to match (ggml's kvalues_mxfp4).
alignas(16) inline constexpr int8_t kMxfp4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                                        0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): half the E8M0 scale 2^(e - 127), built from bits (exact, no exp2). e = 0
// and 1 give the float subnormals 2^-128 and 2^-127; e = 255 (E8M0's NaN) reads as 2^127,
// as in ggml, which does not handle it either.
inline float e8m0_to_fp32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  return f32_from_bits(bits);
}

// IQ4_XS sub-block j's 6-bit scale minus 32, in [-32, 31].
inline int iq4_xs_scale(const BlockIq4Xs& b, int j) {
  const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F;
  const int high = (b.scales_h >> (2 * j)) & 0x03;
  return (low | high << 4) - 32;
}

}  // namespace runnel::ref
