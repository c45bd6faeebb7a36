// AVX2 k-quant kernels: Q2_K, Q3_K, Q4_K, Q5_K and Q6_K weights dotted with Q8_K activations, and
// the Q8_K activation quantizer. Per super-block the weight quants are unpacked into 32-byte
// vectors, multiplied with the activation bytes (maddubs: unsigned weight x signed
// activation -> int16 pairs, exact for q <= 63, |a| <= 127), weighted by the integer
// sub-block scales (madd -> int32, exact) and only then converted to float and scaled by
// d_w * d_a with FMA. Min / offset terms come from the Q8_K bsums, in integers.
// Q4_K and Q6_K (x8 types) sum each block's lanes to one exact integer and add the block
// terms as the x8 products do (x8_steps.h), so a row gives gemm_x8's bits.
// Float order differs from ref's eight scalar lanes, so dots agree to float rounding.
// The quantizer follows ref's arithmetic exactly (bit-identical blocks).
#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/ref/blocks.h"
#include "kernels/ref/k_quants_common.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/x8_steps.h"

namespace runnel::avx2 {

using ref::BlockQ2_K;
using ref::BlockQ3_K;
using ref::BlockQ4_K;
using ref::BlockQ5_K;
using ref::BlockQ6_K;
using ref::BlockQ8_K;

namespace {

inline __m256i load_32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Q4_K / Q5_K 6-bit scales and mins of the 8 sub-blocks, from the 12 packed bytes.
inline void unpack_scales_mins(const uint8_t* b, uint8_t* sc, uint8_t* m) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = b[j] & 63;
    m[j] = b[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>((b[j + 4] & 0x0F) | ((b[j - 4] >> 6) << 4));
    m[j] = static_cast<uint8_t>((b[j + 4] >> 4) | ((b[j] >> 6) << 4));
  }
}

// Two sub-blocks of 16 in one vector: int16 pairs of the low 128 bits get scale lo,
// the high 128 bits scale hi; returns eight int32 lanes.
inline __m256i scale_pairs(__m256i pairs16, int lo, int hi) {
  const __m256i s = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(hi)),
                                     _mm_set1_epi16(static_cast<int16_t>(lo)));
  return _mm256_madd_epi16(pairs16, s);
}

}  // namespace

// The d part and the min part of each block go to two float sums (x8_steps.h), added at
// the end.
static_assert(offsetof(BlockQ4_K, d) == 0 && offsetof(BlockQ4_K, dmin) == 2);  // add_q4_k_terms

float vec_dot_q4_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m128 acc = _mm_setzero_ps();    // lane 0: the d parts
  __m128 acc_m = _mm_setzero_ps();  // lane 0: the min parts
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t sc[8];
    uint8_t m[8];
    unpack_scales_mins(x[b].scales, sc, m);
    // sum_g bsums[g] * min of the 32-element sub-block holding g, in eight int32 lanes
    // (|bsums| <= 2032, m <= 63): the mins each twice as int16, one madd
    const __m128i m8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(m));
    const __m256i summ =
        _mm256_madd_epi16(load_32(y[b].bsums), _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8)));
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < kQK_K / 64; ++c) {  // 64-element chunk: sub-blocks 2c, 2c + 1
      const __m256i packed = load_32(x[b].qs + 32 * c);
      const __m256i lo = _mm256_and_si256(packed, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load_32(y[b].qs + 64 * c));
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load_32(y[b].qs + 64 * c + 32));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_lo, _mm256_set1_epi16(sc[2 * c])));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_hi, _mm256_set1_epi16(sc[2 * c + 1])));
    }
    x8::add_q4_k_terms(acc, acc_m, &x[b], y[b].d, sumi, summ);
  }
  return _mm_cvtss_f32(_mm_add_ss(acc, acc_m));
}

// Q2_K: in each 128-element half, byte l of its 32 quant bytes holds elements l, l + 32,
// l + 64, l + 96 (two bits each, lowest first); sub-block j of 16 has a 4-bit scale
// (low nibble) and min (high nibble). The integer sum per block is exact, and the float
// steps are ref's, so the result equals ref's.
float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int summs = 0;
    for (int j = 0; j < 16; ++j) summs += y[b].bsums[j] * (x[b].scales[j] >> 4);
    __m256i sumi = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const __m256i packed = load_32(x[b].qs + 32 * half);
      for (int g = 0; g < 4; ++g) {
        const __m256i q = _mm256_and_si256(_mm256_srl_epi16(packed, _mm_cvtsi32_si128(2 * g)), two_bits);
        const __m256i pairs = _mm256_maddubs_epi16(q, load_32(y[b].qs + 128 * half + 32 * g));
        const int j = 8 * half + 2 * g;  // sub-blocks j (low 128 bits) and j + 1
        sumi = _mm256_add_epi32(sumi, scale_pairs(pairs, x[b].scales[j] & 0x0F, x[b].scales[j + 1] & 0x0F));
      }
    }
    const float dall = y[b].d * f16(x[b].d);
    const float dmin = y[b].d * f16(x[b].dmin);
    sum += dall * static_cast<float>(hsum_epi32(sumi)) - dmin * static_cast<float>(summs);
  }
  return sum;
}

// Q3_K: Q2_K's two low bits plus a high bit (hmask[l] bit g for element 32g + l); the
// quant is (low | high << 2) - 4 with signed 6-bit scales per sub-block of 16. The -4
// comes back as 4 * sum_j scale_j * bsums_j, like Q6_K's offset.
float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  const __m256i one = _mm256_set1_epi8(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int sc[16];
    int offset = 0;
    for (int j = 0; j < 16; ++j) {
      sc[j] = ref::q3_k_scale(x[b].scales, j);
      offset += sc[j] * y[b].bsums[j];
    }
    __m256i sumi = _mm256_setr_epi32(-4 * offset, 0, 0, 0, 0, 0, 0, 0);
    const __m256i hmask = load_32(x[b].hmask);
    for (int half = 0; half < 2; ++half) {
      const __m256i packed = load_32(x[b].qs + 32 * half);
      for (int g = 0; g < 4; ++g) {
        const int group = 4 * half + g;  // elements 32 group .. + 31
        const __m256i low = _mm256_and_si256(_mm256_srl_epi16(packed, _mm_cvtsi32_si128(2 * g)), two_bits);
        const __m256i high = _mm256_and_si256(_mm256_srl_epi16(hmask, _mm_cvtsi32_si128(group)), one);
        const __m256i q = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));  // [0, 7]
        const __m256i pairs = _mm256_maddubs_epi16(q, load_32(y[b].qs + 32 * group));
        sumi = _mm256_add_epi32(sumi, scale_pairs(pairs, sc[2 * group], sc[2 * group + 1]));
      }
    }
    const float d = f16(x[b].d) * y[b].d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum(acc);
}

// Q4_K plus a fifth bit per element: qh bit 2c (low nibbles of chunk c) and 2c + 1
// (high nibbles) of byte l belong to element l of that 32-element run. q <= 31, so the
// unsigned-by-signed byte products cannot saturate their int16 pair sums.
float vec_dot_q5_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi8(1);
  __m256 acc = _mm256_setzero_ps();
  float min_terms = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t sc[8];
    uint8_t m[8];
    unpack_scales_mins(x[b].scales, sc, m);
    int summ = 0;
    for (int g = 0; g < kQK_K / 16; ++g) summ += y[b].bsums[g] * m[g / 2];
    const __m256i qh = load_32(x[b].qh);
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < kQK_K / 64; ++c) {
      const __m256i packed = load_32(x[b].qs + 32 * c);
      // bit k of every byte -> 16 (an epi16 shift keeps each byte's own bit k at bit 0)
      const __m256i bit_lo = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c)), one);
      const __m256i bit_hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c + 1)), one);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(packed, low4), _mm256_slli_epi16(bit_lo, 4));
      const __m256i hi =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(packed, 4), low4), _mm256_slli_epi16(bit_hi, 4));
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load_32(y[b].qs + 64 * c));
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load_32(y[b].qs + 64 * c + 32));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_lo, _mm256_set1_epi16(sc[2 * c])));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_hi, _mm256_set1_epi16(sc[2 * c + 1])));
    }
    const float d = f16(x[b].d) * y[b].d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    min_terms += (f16(x[b].dmin) * y[b].d) * static_cast<float>(summ);
  }
  return hsum(acc) - min_terms;
}

float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m128 acc = _mm_setzero_ps();  // lane 0
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const int8_t* sc = x[b].scales;
    // The quants are stored as q + 32; the -32 comes back as 32 * sum_j sc_j * bsums_j,
    // in eight int32 lanes (one madd of the 16 scales as int16: |bsums| <= 2032).
    const __m256i offset = _mm256_madd_epi16(
        load_32(y[b].bsums),
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc))));
    __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 5));
    for (int half = 0; half < 2; ++half) {
      const __m256i ql_a = load_32(x[b].ql + 64 * half);       // elements l, l + 64
      const __m256i ql_b = load_32(x[b].ql + 64 * half + 32);  // elements l + 32, l + 96
      const __m256i qh = load_32(x[b].qh + 32 * half);         // 2 bits each of l + 32 k
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(ql_a, low4),
                          _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4)),
          _mm256_or_si256(_mm256_and_si256(ql_b, low4),
                          _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0C)), 2)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_a, 4), low4),
                          _mm256_and_si256(qh, _mm256_set1_epi8(0x30))),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_b, 4), low4),
                          _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(-64)), 2)),
      };
      const int8_t* yq = y[b].qs + 128 * half;
      for (int k = 0; k < 4; ++k) {  // elements 32k .. 32k + 31 of this half
        const __m256i pairs = _mm256_maddubs_epi16(q[k], load_32(yq + 32 * k));
        const int j = 8 * half + 2 * k;  // first sub-block of 16 in this vector
        sumi = _mm256_add_epi32(sumi, scale_pairs(pairs, sc[j], sc[j + 1]));
      }
    }
    acc = x8::add_q6_k_term(acc, f16(x[b].d), y[b].d, sumi);  // the block's exact sum, scaled
  }
  return _mm_cvtss_f32(acc);
}

void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    __m256 vmax = _mm256_setzero_ps();
    for (int i = 0; i < kQK_K; i += 8) vmax = _mm256_max_ps(vmax, abs_ps(_mm256_loadu_ps(x + i)));
    const float amax = hmax(vmax);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    // ref keeps the sign of the first element of largest magnitude.
    float max = 0.0f;
    const __m256 vamax = _mm256_set1_ps(amax);
    for (int i = 0; i < kQK_K; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      const int hits = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(v), vamax, _CMP_EQ_OQ));
      if (hits != 0) {
        max = x[i + __builtin_ctz(static_cast<unsigned>(hits))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    // |max| < 127 / FLT_MAX: iscale is inf and ref's nearest_int(+-inf or NaN) keeps the
    // low byte 0, so every quant is 0 (and d = 1 / iscale = -0 or +0, as there).
    const __m256 vscale = _mm256_set1_ps(std::isinf(iscale) ? 0.0f : iscale);
    for (int i = 0; i < kQK_K; i += 32) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        // ties to even, like ref's nearest_int; packs saturate at 127 like its min(127, .)
        const __m256 v = _mm256_mul_ps(vscale, _mm256_loadu_ps(x + i + 8 * k));
        q[k] =
            _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      }
      const __m256i q8 = pack_32_to_i8(q[0], q[1], q[2], q[3]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs + i), q8);
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * g + i];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace runnel::avx2
