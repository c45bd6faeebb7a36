// SIMD128 dots of the 4-bit lookup formats: MXFP4 and IQ4_NL x Q8_0, IQ4_XS x Q8_K. A
// block's 16 code bytes give two index vectors (low nibbles: elements 0..15, high:
// 16..31) and one i8x16.swizzle each turns them into the signed weights from the 16-byte
// value table (ref/lut4_values.h). Products go to int16 lanes with i16x8.extmul, two per
// lane (2 * 127 * 128 <= 32767, exact; MXFP4's |w| <= 12 allows four), and are widened to
// int32 once per half block (IQ4_XS: by i32x4.dot_i16x8 against the sub-block's integer
// scale), giving each block's exact integer sum I_b (IQ4_XS: sum_s scale_s dot_s, |I_b| <=
// 8 * 32 * 32 * 127 * 128 < 2^31). The float steps are the x8 products' (simd128_x8.cpp):
// sum += float(I_b) * (d_w * d_a), one block at a time in block order, so a row read in
// the file's layout (a streamed layer) gives the resident, repacked row's bits. The
// 32-element types take four blocks a step: their integer sums transposed into one
// vector and scaled by the four d_w * d_a together (IQ4_NL's f16 fields widened with the
// activations'), then added one by one. ref adds one float per block as well: |dot - ref|
// <= 1e-5 S.
#include "kernels/ref/blocks.h"
#include "kernels/ref/lut4_values.h"
#include "kernels/wasm/simd128.h"
#include "kernels/wasm/simd128_common.h"

namespace runnel::simd128 {
namespace {

// Eight int16 lanes of w . a over 16 elements, two products each (|w| <= 127).
inline v128_t mul16(v128_t w, const int8_t* a) {
  return mul_i8_to_i16(w, load(a));
}

// Four blocks' d_w * d_a: IQ4_NL's f16 d fields widened together with the activations';
// MXFP4's exponents made into floats from their bits.
inline v128_t scales4(const ref::BlockIq4Nl* x, const ref::BlockQ8_0* y) {
  v128_t dw, da;
  f16x8_to_f32(wasm_u16x8_make(x[0].d, x[1].d, x[2].d, x[3].d, y[0].d, y[1].d, y[2].d, y[3].d), &dw,
               &da);
  return wasm_f32x4_mul(dw, da);
}
inline v128_t scales4(const ref::BlockMxfp4* x, const ref::BlockQ8_0* y) {
  v128_t da, unused;
  f16x8_to_f32(wasm_u16x8_make(y[0].d, y[1].d, y[2].d, y[3].d, 0, 0, 0, 0), &da, &unused);
  const v128_t dw = wasm_f32x4_make(ref::e8m0_to_fp32_half(x[0].e), ref::e8m0_to_fp32_half(x[1].e),
                                    ref::e8m0_to_fp32_half(x[2].e), ref::e8m0_to_fp32_half(x[3].e));
  return wasm_f32x4_mul(dw, da);
}
inline float scale1(const ref::BlockIq4Nl& x) {
  return f16(x.d);
}
inline float scale1(const ref::BlockMxfp4& x) {
  return ref::e8m0_to_fp32_half(x.e);
}

// Block b's integer dot in four int32 lanes.
inline v128_t block_lanes(v128_t table, const ref::BlockIq4Nl& x, const ref::BlockQ8_0& y) {
  v128_t lo, hi;
  decode_lut4(table, x.qs, &lo, &hi);
  return wasm_i32x4_add(widen(mul16(lo, y.qs)), widen(mul16(hi, y.qs + 16)));
}
// |w| <= 12: four products per int16 lane (4 * 12 * 128 <= 32767), one widening.
inline v128_t block_lanes(v128_t table, const ref::BlockMxfp4& x, const ref::BlockQ8_0& y) {
  v128_t lo, hi;
  decode_lut4(table, x.qs, &lo, &hi);
  return widen(mul_32_to_i16(lo, hi, y.qs));
}

template <typename Block>
float dot_lut4_blocks(int64_t n, const void* w, const void* a, const int8_t* values) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const ref::BlockQ8_0*>(a);
  const v128_t table = load(values);
  const int64_t nb = n / kQK;
  float sum = 0.0f;
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const v128_t sums = transpose_sum(
        block_lanes(table, x[b], y[b]), block_lanes(table, x[b + 1], y[b + 1]),
        block_lanes(table, x[b + 2], y[b + 2]), block_lanes(table, x[b + 3], y[b + 3]));
    alignas(16) float terms[4];
    wasm_v128_store(terms,
                    wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sums), scales4(x + b, y + b)));
    for (int k = 0; k < 4; ++k) sum += terms[k];
  }
  for (; b < nb; ++b) {
    const float d = scale1(x[b]) * f16(y[b].d);
    sum += static_cast<float>(hsum_i32(block_lanes(table, x[b], y[b]))) * d;
  }
  return sum;
}

}  // namespace

float vec_dot_mxfp4(int64_t n, const void* w, const void* a) {
  return dot_lut4_blocks<ref::BlockMxfp4>(n, w, a, ref::kMxfp4Values);
}

float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) {
  return dot_lut4_blocks<ref::BlockIq4Nl>(n, w, a, ref::kIq4NlValues);
}

float vec_dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const ref::BlockIq4Xs*>(w);
  const auto* y = static_cast<const ref::BlockQ8_K*>(a);
  const v128_t table = load(ref::kIq4NlValues);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    // |lane| <= 16 * 2 * 2 * 127 * 128 * 32 over the 8 sub-blocks: exact
    v128_t isum = wasm_i32x4_splat(0);
    for (int s = 0; s < 8; ++s) {
      v128_t lo, hi;
      decode_lut4(table, x[b].qs + 16 * s, &lo, &hi);
      const int scale = ref::iq4_xs_scale(x[b], s);
      const int8_t* ya = y[b].qs + 32 * s;
      isum = wasm_i32x4_add(isum, wasm_i32x4_add(widen_scaled(mul16(lo, ya), scale),
                                                 widen_scaled(mul16(hi, ya + 16), scale)));
    }
    sum += static_cast<float>(hsum_i32(isum)) * (f16(x[b].d) * y[b].d);
  }
  return sum;
}

}  // namespace runnel::simd128
