// AVX2 kernels for the legacy 32-element blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights
// dotted with Q8_0 / Q8_1 activations, and the Q8_0 / Q8_1 activation quantizers.
// Dots: one block is one 32-byte vector; integer products within the block
// (maddubs + madd, exact) land in eight int32 lanes. All five are x8 types: they add
// their block terms as the x8 products do (x8_steps.h: eight blocks' sums and
// d_w * d_a formed as vectors, then one FMA per block in block order), so a row gives
// gemm_x8's bits. The float order differs from ref's, so results agree with ref to float
// rounding, not bit for bit.
// Quantizers: same arithmetic as ref step by step, so the bytes are identical.
#include <cmath>

#include "kernels/fp16.h"
#include "kernels/ref/blocks.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::avx2 {

using ref::BlockQ4_0;
using ref::BlockQ4_1;
using ref::BlockQ5_0;
using ref::BlockQ5_1;
using ref::BlockQ8_0;
using ref::BlockQ8_1;

namespace {

inline __m256i load_q8(const int8_t* qs) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
}

inline __m256 lanes_to_float(__m256i lanes) {
  return _mm256_cvtepi32_ps(lanes);
}

}  // namespace

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return x8::dot_legacy_blocks<x8::MinTerms::kNone>(n / kQK, x, y, [x, y](int64_t b) {
    // q - 8 in [-8, 7]
    const __m256i q = _mm256_sub_epi8(unpack_nibbles_16(x[b].qs), _mm256_set1_epi8(8));
    return dot_s8_s8(q, load_q8(y[b].qs));
  });
}

// w = d q + m: the min term m_w * s_a (s_a = d_a * sum q_a) follows each block's term.
float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  return x8::dot_legacy_blocks<x8::kAvx2Q4_1Mins>(n / kQK, x, y, [x, y](int64_t b) {
    return dot_u8_s8(unpack_nibbles_16(x[b].qs), load_q8(y[b].qs));
  });
}

float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return x8::dot_legacy_blocks<x8::MinTerms::kNone>(n / kQK, x, y, [x, y](int64_t b) {
    // q - 16 = nibble - 16 + 16 * bit: as a byte, nibble | 0xF0 when the bit is clear.
    const __m256i high = _mm256_andnot_si256(expand_bits_32(x[b].qh), _mm256_set1_epi8(-16));
    const __m256i q = _mm256_or_si256(unpack_nibbles_16(x[b].qs), high);
    return dot_s8_s8(q, load_q8(y[b].qs));
  });
}

// Q4_1's steps with q = nibble | bit << 4 in [0, 31].
float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  return x8::dot_legacy_blocks<x8::kAvx2Q4_1Mins>(n / kQK, x, y, [x, y](int64_t b) {
    const __m256i high = _mm256_and_si256(expand_bits_32(x[b].qh), _mm256_set1_epi8(0x10));
    return dot_u8_s8(_mm256_or_si256(unpack_nibbles_16(x[b].qs), high), load_q8(y[b].qs));
  });
}

float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  return x8::dot_legacy_blocks<x8::MinTerms::kNone>(
      n / kQK, x, y, [x, y](int64_t b) { return dot_s8_s8(load_q8(x[b].qs), load_q8(y[b].qs)); });
}

namespace {

// std::round (half away from zero) of each lane, exactly: t = trunc(v) and v - t are
// exact in float, so adding sign(v) when |v - t| >= 0.5 is the correctly rounded result.
inline __m256 round_half_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = abs_ps(_mm256_sub_ps(v, t));
  const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 one_signed =
      _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
  return _mm256_add_ps(t, _mm256_and_ps(up, one_signed));
}

// ref's quantize_block_q8: d = amax / 127, q = round(x / d) with id = 1 / d.
// Returns d (unrounded) and the 32 quants as int8 (also stored to qs).
float quantize_block_q8(const float* x, int8_t* qs, __m256i* q_out) {
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    amax = _mm256_max_ps(amax, abs_ps(v[i]));
  }
  const float d = hmax(amax) / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  // amax < ~4e-37: 1 / d overflows and ref's float -> int8 conversion of +-inf / NaN is
  // undefined (0 on x86). Quants 0 it is; the stored f16 d is 0 anyway.
  const __m256 vid = _mm256_set1_ps(std::isinf(id) ? 0.0f : id);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    q[i] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[i], vid)));
  }
  *q_out = pack_32_to_i8(q[0], q[1], q[2], q[3]);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), *q_out);
  return d;
}

}  // namespace

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  __m256i q;
  for (int64_t b = 0; b < n / kQK; ++b) {
    y[b].d = fp32_to_fp16(quantize_block_q8(src + b * kQK, y[b].qs, &q));
  }
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(dst);
  __m256i q;
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = quantize_block_q8(src + b * kQK, y[b].qs, &q);
    // sum of the 32 quants: sign-extend to int16 pairs via maddubs with ones, then madd.
    const int sum = hsum_epi32(dot_u8_s8(_mm256_set1_epi8(1), q));
    y[b].d = fp32_to_fp16(d);
    y[b].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

}  // namespace runnel::avx2
