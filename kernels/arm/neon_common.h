// Small NEON helpers shared by the neon_*.cpp kernels, and the baseline integer dot step.
// Include only from kernels/arm/neon_*.cpp.
//
// Everything here has internal linkage (an unnamed namespace) on purpose: neon_dotprod.cpp
// includes it under -march=armv8.2-a+dotprod, and with ordinary inline functions the
// linker would keep one copy for the whole program, possibly that one, which a CPU
// without the extension must never run.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

namespace runnel::neon {
namespace {

// One f16 (raw bits) to float with the hardware conversion (exact; baseline on aarch64).
inline float f16(uint16_t h) {
  __fp16 v;
  std::memcpy(&v, &h, sizeof v);
  return static_cast<float>(v);
}

// Eight float elements as two f32 vectors (f32, f16 by fcvtl, bf16 by a shift: all exact).
inline void load8_f32(const float* p, float32x4_t* lo, float32x4_t* hi) {
  *lo = vld1q_f32(p);
  *hi = vld1q_f32(p + 4);
}

inline void load8_f16(const uint16_t* p, float32x4_t* lo, float32x4_t* hi) {
  const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(p));
  *lo = vcvt_f32_f16(vget_low_f16(h));
  *hi = vcvt_high_f32_f16(h);
}

// bf16 is the top half of a float32: widen with a shift into place.
inline void load8_bf16(const uint16_t* p, float32x4_t* lo, float32x4_t* hi) {
  const uint16x8_t h = vld1q_u16(p);
  *lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
  *hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
}

inline int8x16_t load_s8(const int8_t* p) {
  return vld1q_s8(p);
}

inline int8x16_t as_s8(uint8x16_t v) {
  return vreinterpretq_s8_u8(v);
}

// 16 bytes of packed nibbles -> low nibbles (elements 0..15 of a legacy block) and high
// nibbles (elements 16..31), each in [0, 15].
inline void unpack_nibbles(const uint8_t* qs, uint8x16_t* lo, uint8x16_t* hi) {
  const uint8x16_t packed = vld1q_u8(qs);
  *lo = vandq_u8(packed, vdupq_n_u8(0x0F));
  *hi = vshrq_n_u8(packed, 4);
}

// The 32 bits of a legacy Q5 block's qh (little-endian bytes) -> 0xFF in byte j where
// bit j is set, else 0: bits 0..15 in *lo, 16..31 in *hi.
inline void expand_bits_32(const uint8_t* qh, uint8x16_t* lo, uint8x16_t* hi) {
  uint32_t v;
  std::memcpy(&v, qh, sizeof v);
  const uint8x8_t bytes = vcreate_u8(v);
  const uint8x16_t select = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull));
  *lo = vtstq_u8(vcombine_u8(vdup_lane_u8(bytes, 0), vdup_lane_u8(bytes, 1)), select);
  *hi = vtstq_u8(vcombine_u8(vdup_lane_u8(bytes, 2), vdup_lane_u8(bytes, 3)), select);
}

// Bit `bit` (0..7) of every byte -> 0xFF where set, else 0.
inline uint8x16_t test_bit(uint8x16_t v, int bit) {
  return vtstq_u8(v, vdupq_n_u8(static_cast<uint8_t>(1u << bit)));
}

// Every byte shifted right by `count` (0..7; a register shift, so it may vary at run time).
inline uint8x16_t shift_right(uint8x16_t v, int count) {
  return vshlq_u8(v, vdupq_n_s8(static_cast<int8_t>(-count)));
}

// The baseline integer dot step: acc's four int32 lanes += the 16 products a[i] * b[i]
// (which lane gets which product does not matter: callers scale or sum whole vectors).
// vmull/vmlal put two products in each int16 lane, exact while |a b| <= 16383 per
// product: true for every caller (activations in [-127, 127], weights in [-128, 127]).
struct WideningDot {
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    int16x8_t pairs = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    pairs = vmlal_high_s8(pairs, a, b);
    return vpadalq_s16(acc, pairs);
  }
};

}  // namespace
}  // namespace runnel::neon
