// Small numeric helpers shared by the reference quantizers (internal to kernels/ref; core
// also uses nearest_int for llama-perplexity's logit levels, core/runtime/perplexity.cpp).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/fp16.h"

namespace runnel::ref {

// Round to nearest integer, ties to even, for |v| < 2^22. Adding 1.5 * 2^23 moves the
// integer part into the low mantissa bits (the float add itself does the rounding); the
// bias is then removed from the bit pattern. Bit-identical to ggml's nearest_int, which
// the k-quant searches depend on (lrintf would agree but is slower and not inlined).
inline int nearest_int(float v) {
  const float biased = v + 12582912.0f;  // 1.5 * 2^23
  int32_t bits;
  std::memcpy(&bits, &biased, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// v clamped to [lo, hi].
inline int clamp_int(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

inline float f16(uint16_t h) {
  return fp16_to_fp32(h);
}

// Same result as fp16_to_fp32 for all 65536 inputs (tested exhaustively), but without
// branches, so row loops over f16 data vectorize: the half's exponent and mantissa
// bits, moved to float positions, read as a float 2^112 times too small (subnormal
// halves land on float subnormals), and one multiply rebiases; exponent 31 (inf/nan)
// is patched with a select.
inline float fp16_to_fp32_branchless(uint16_t h) {
  const uint32_t magnitude = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const float scaled = f32_from_bits(magnitude) * 0x1p112f;
  const uint32_t finite = f32_bits(scaled);
  const uint32_t special = magnitude | 0x7f800000u;
  const uint32_t is_special =
      0u - static_cast<uint32_t>(magnitude >= (0x7c00u << 13));  // all ones or 0
  return f32_from_bits(sign | (special & is_special) | (finite & ~is_special));
}

}  // namespace runnel::ref
