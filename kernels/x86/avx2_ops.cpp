// AVX2 + FMA float ops of a forward pass, eight floats at a time: rms_norm, softmax, silu,
// swiglu, gelu, geglu, softcap, add, mul, scale, axpy and rope_apply (rope_cos_sin stays
// ref's: double cos / sin, once per position). Tails (n not a multiple of 8) go through
// masked loads and stores, so every element takes the same vector path. Contracts (shapes,
// aliasing) are in kernels/ref/ops.h; error bounds in tests/kernels/x86/avx2_ops_test.cpp:
//  - add, mul, scale and rms_norm do ref's float operations on the same operands in the
//    same order (rms_norm's sum of squares in the same eight double lanes; the products of
//    two floats are exact in double), so they are bit-exact.
//  - axpy and rope_apply fuse one multiply into the add (FMA): one rounding fewer than ref.
//  - softmax, silu, swiglu, gelu and geglu use exp8 below instead of the C library's expf;
//    softmax sums in double like ref (eight double lanes instead of one running sum).
//  - softcap computes tanh from expm1_8 below instead of the C library's tanhf.
#include <cmath>
#include <limits>

#include "kernels/x86/avx2.h"
#include "kernels/x86/avx2_common.h"

namespace runnel::avx2 {
namespace {

// Lanes [0, count) set (count in [0, 8]): the mask of a partial load or store.
inline __m256i tail_mask(int64_t count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(count)), lane);
}

// e^x = 2^k (1 + m): x = k ln2 + r with |r| <= ln2 / 2 (Cody-Waite: k ln2_hi is exact and
// so is x - k ln2_hi) and m = e^r - 1 from its Taylor polynomial through r^7 (truncation
// below 1e-8 relative). exp8 and expm1_8 share it.
struct ExpParts {
  __m256 k;  // an integer
  __m256 m;  // in [-0.3, 0.42]
};
inline ExpParts exp_parts(__m256 x) {
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  // m = r + r^2 q(r): the large term is added last.
  __m256 q = _mm256_set1_ps(1.0f / 5040);
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f / 720));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f / 120));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f / 24));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f / 6));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(0.5f));
  return {k, _mm256_fmadd_ps(_mm256_mul_ps(r, r), q, r)};
}

// 2^k for integer k in [-126, 127] (a normal float).
inline __m256 pow2(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

// e^x in every lane, within ~1 ulp: 2^k applied as two factors so that results from the
// subnormal range up to FLT_MAX come out right. Clamping x to [-104, 89] makes -inf give
// 0 (e^-104 rounds to 0) and large x give inf; with the bound as the first operand, max /
// min pass a NaN x through.
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), _mm256_max_ps(_mm256_set1_ps(-104.0f), x));
  const ExpParts e = exp_parts(x);
  const __m256 p = _mm256_add_ps(_mm256_set1_ps(1.0f), e.m);
  // k in [-150, 128]: each factor 2^(k/2) is a normal float.
  const __m256i ki = _mm256_cvtps_epi32(e.k);
  const __m256i k1 = _mm256_srai_epi32(ki, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2(k1)), pow2(_mm256_sub_epi32(ki, k1)));
}

// e^x - 1 for x <= 0 (NaN passes through): 2^k m + (2^k - 1) with one rounding, so it
// keeps m's few-ulp relative accuracy where k = 0 (|x| < 0.35, no cancellation) and is
// within ~1 ulp of the result elsewhere. Below -30 the result is -1 in float anyway.
inline __m256 expm1_8(__m256 x) {
  const ExpParts e = exp_parts(_mm256_max_ps(_mm256_set1_ps(-30.0f), x));
  const __m256 s = pow2(_mm256_cvtps_epi32(e.k));  // k in [-44, 0]
  return _mm256_fmadd_ps(s, e.m, _mm256_sub_ps(s, _mm256_set1_ps(1.0f)));
}

// x / (1 + e^-x); e^-x = inf gives -0 like ref's.
inline __m256 silu8(__m256 x) {
  const __m256 neg_x = _mm256_xor_ps(x, _mm256_set1_ps(-0.0f));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(neg_x)));
}

// g++ fuses a separate multiply and add of intrinsics into an FMA (-ffp-contract=fast); an
// empty asm makes v opaque, so the product that feeds the next add is rounded like ref's
// (without it gelu's error reached 130u instead of 3.9u).
inline __m256 rounded(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

// ref's gelu: x / (1 + e^-u2) with -u2 = (-2 sqrt(2/pi) x) (1 + 0.044715 x x), the tanh
// form 0.5 x (1 + tanh(u)) rewritten. The exponent is ref's float operations in ref's
// order (bit-identical; any difference would be amplified by up to |u2| ~ 88 in e^-u2);
// only e^ differs. x = -inf gives NaN like ref's (-inf / inf).
inline __m256 gelu8(__m256 x) {
  const __m256 cubic = rounded(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), x), x));
  const __m256 neg_u2 = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-1.5957691216057308f), x),
                                      _mm256_add_ps(_mm256_set1_ps(1.0f), cubic));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(neg_u2)));
}

// tanh(t) = sign(t) |y| / (2 + y), y = e^(-2|t|) - 1 in (-1, 0]: no cancellation for small
// |t| (expm1), exactly 1 where tanh saturates (y = -1), +-0 for +-0, NaN for NaN.
inline __m256 tanh8(__m256 t) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 abs_t = _mm256_andnot_ps(sign, t);
  const __m256 y = expm1_8(_mm256_mul_ps(_mm256_set1_ps(-2.0f), abs_t));
  const __m256 th =
      _mm256_div_ps(_mm256_andnot_ps(sign, y), _mm256_add_ps(_mm256_set1_ps(2.0f), y));
  return _mm256_or_ps(th, _mm256_and_ps(sign, t));
}

// out[i] = op(a[i], b[i]) over the row, the tail through masked loads and stores (the
// masked-off lanes read as 0 and are never written).
template <typename Op>
inline void binary_rows(const float* a, const float* b, float* out, int64_t n, Op op) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, op(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    const __m256 va = _mm256_maskload_ps(a + i, m);
    _mm256_maskstore_ps(out + i, m, op(va, _mm256_maskload_ps(b + i, m)));
  }
}

template <typename Op>
inline void unary_rows(const float* x, float* out, int64_t n, Op op) {
  binary_rows(x, x, out, n, [op](__m256 v, __m256) { return op(v); });
}

// The eight floats of v widened to double and added to two 4-lane accumulators.
inline void add_f64(__m256 v, __m256d* lo, __m256d* hi) {
  *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

}  // namespace

void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps) {
  // ref's eight double lanes (l = 0..3 in lo, 4..7 in hi), reduced in ref's order: the
  // squares of floats are exact in double, so the mean is bit-identical to ref's.
  __m256d lo = _mm256_setzero_pd();
  __m256d hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d d_lo = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    const __m256d d_hi = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    lo = _mm256_add_pd(lo, _mm256_mul_pd(d_lo, d_lo));
    hi = _mm256_add_pd(hi, _mm256_mul_pd(d_hi, d_hi));
  }
  double lanes[8];
  _mm256_storeu_pd(lanes, lo);
  _mm256_storeu_pd(lanes + 4, hi);
  double sum = 0.0;
  for (double lane : lanes) sum += lane;
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const __m256 inv_rms = _mm256_set1_ps(1.0f / std::sqrt(mean + eps));
  if (w != nullptr) {
    binary_rows(x, w, out, n, [inv_rms](__m256 v, __m256 wv) {
      return _mm256_mul_ps(_mm256_mul_ps(v, inv_rms), wv);  // (x * inv_rms) * w, as ref
    });
  } else {
    unary_rows(x, out, n, [inv_rms](__m256 v) { return _mm256_mul_ps(v, inv_rms); });
  }
}

void softmax(float* x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const __m256 neg_inf = _mm256_set1_ps(kNegInf);
  // max_ps(v, m) = v > m ? v : m: ref's running max (a NaN v is skipped alike).
  __m256 vmax = neg_inf;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(_mm256_loadu_ps(x + i), vmax);
  float max = hmax(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  if (max == kNegInf) {  // fully masked row
    for (int64_t j = 0; j < n; ++j) x[j] = 0.0f;
    return;
  }
  const __m256 vm = _mm256_set1_ps(max);
  __m256d sum_lo = _mm256_setzero_pd();
  __m256d sum_hi = _mm256_setzero_pd();
  i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(x + i, e);
    add_f64(e, &sum_lo, &sum_hi);
  }
  if (i < n) {
    // Masked-off lanes become -inf, whose exp is 0: they add nothing to the sum.
    const __m256i m = tail_mask(n - i);
    const __m256 v =
        _mm256_blendv_ps(neg_inf, _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m));
    const __m256 e = exp8(_mm256_sub_ps(v, vm));
    _mm256_maskstore_ps(x + i, m, e);
    add_f64(e, &sum_lo, &sum_hi);
  }
  double lanes[4];
  _mm256_storeu_pd(lanes, _mm256_add_pd(sum_lo, sum_hi));
  const double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  scale(x, n, static_cast<float>(1.0 / sum));  // sum >= 1: the max term is exp(0)
}

void silu(const float* x, float* out, int64_t n) {
  unary_rows(x, out, n, silu8);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  binary_rows(gate, up, out, n, [](__m256 g, __m256 u) { return _mm256_mul_ps(silu8(g), u); });
}

void gelu(const float* x, float* out, int64_t n) {
  unary_rows(x, out, n, gelu8);
}

void geglu(const float* gate, const float* up, float* out, int64_t n) {
  binary_rows(gate, up, out, n, [](__m256 g, __m256 u) { return _mm256_mul_ps(gelu8(g), u); });
}

void softcap(float* x, int64_t n, float cap) {
  const __m256 vcap = _mm256_set1_ps(cap);
  const __m256 inv_cap = _mm256_set1_ps(1.0f / cap);  // ref's cap * tanh(x * (1 / cap))
  unary_rows(x, x, n, [vcap, inv_cap](__m256 v) {
    return _mm256_mul_ps(vcap, tanh8(_mm256_mul_ps(v, inv_cap)));
  });
}

void add(const float* a, const float* b, float* out, int64_t n) {
  binary_rows(a, b, out, n, [](__m256 u, __m256 v) { return _mm256_add_ps(u, v); });
}

void mul(const float* a, const float* b, float* out, int64_t n) {
  binary_rows(a, b, out, n, [](__m256 u, __m256 v) { return _mm256_mul_ps(u, v); });
}

void scale(float* x, int64_t n, float s) {
  const __m256 vs = _mm256_set1_ps(s);
  unary_rows(x, x, n, [vs](__m256 v) { return _mm256_mul_ps(v, vs); });
}

void axpy(const float* x, float* y, int64_t n, float s) {
  const __m256 vs = _mm256_set1_ps(s);
  binary_rows(x, y, y, n, [vs](__m256 xv, __m256 yv) { return _mm256_fmadd_ps(vs, xv, yv); });
}

// Pair i is rotated by (c, s) = cos_sin[2i], cos_sin[2i + 1]: a' = a c - b s, b' = a s + b c,
// the second product of each fused into the sum (ref rounds it separately).
void rope_apply(float* x, int64_t n_rot, const float* cos_sin, ref::RopeStyle style) {
  const int64_t n_pairs = n_rot / 2;
  int64_t i = 0;  // pairs done
  if (style == ref::RopeStyle::kNormal) {
    // Four adjacent pairs per vector: x = [a0 b0 a1 b1 ...], cos_sin = [c0 s0 c1 s1 ...].
    for (; i + 4 <= n_pairs; i += 4) {
      const __m256 v = _mm256_loadu_ps(x + 2 * i);
      const __m256 cs = _mm256_loadu_ps(cos_sin + 2 * i);
      const __m256 c = _mm256_moveldup_ps(cs);            // [c0 c0 c1 c1 ...]
      const __m256 s = _mm256_movehdup_ps(cs);            // [s0 s0 s1 s1 ...]
      const __m256 swapped = _mm256_permute_ps(v, 0xB1);  // [b0 a0 b1 a1 ...]
      // even lanes: a c - b s; odd lanes: b c + a s
      _mm256_storeu_ps(x + 2 * i, _mm256_fmaddsub_ps(v, c, _mm256_mul_ps(swapped, s)));
    }
    for (; i < n_pairs; ++i) {
      const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
      const float a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = std::fma(a, c, -(b * s));
      x[2 * i + 1] = std::fma(b, c, a * s);
    }
    return;
  }
  // kNeox: pair i is (x[i], x[i + n_pairs]); eight pairs per step.
  float* second = x + n_pairs;
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  for (; i + 8 <= n_pairs; i += 8) {
    // [c0 s0 c1 s1 c2 s2 c3 s3] -> [c0 c1 c2 c3 s0 s1 s2 s3], and likewise for pairs 4..7
    const __m256 cs0 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(cos_sin + 2 * i), even);
    const __m256 cs1 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(cos_sin + 2 * i + 8), even);
    const __m256 c = _mm256_permute2f128_ps(cs0, cs1, 0x20);
    const __m256 s = _mm256_permute2f128_ps(cs0, cs1, 0x31);
    const __m256 a = _mm256_loadu_ps(x + i);
    const __m256 b = _mm256_loadu_ps(second + i);
    _mm256_storeu_ps(x + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
    _mm256_storeu_ps(second + i, _mm256_fmadd_ps(b, c, _mm256_mul_ps(a, s)));
  }
  for (; i < n_pairs; ++i) {
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float a = x[i], b = second[i];
    x[i] = std::fma(a, c, -(b * s));
    second[i] = std::fma(b, c, a * s);
  }
}

}  // namespace runnel::avx2
