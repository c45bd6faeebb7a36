// The float-op half of the kernel table: the element-wise and reduction ops of a forward
// pass, as function pointers so per-ISA versions can replace the reference ones. Chosen
// together with the type kernels by select_kernels() (kernels/kernels.h) and read-only
// afterwards. Contracts (shapes, aliasing, rope conventions) are in kernels/ref/ops.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernels/ref/ops.h"

namespace runnel {

using ref::RopeParams;
using ref::RopeStyle;

struct FloatOps {
  std::string_view isa = "ref";
  void (*rms_norm)(const float* x, const float* w, float* out, int64_t n, float eps) = nullptr;
  void (*softmax)(float* x, int64_t n) = nullptr;
  void (*silu)(const float* x, float* out, int64_t n) = nullptr;
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n) = nullptr;
  void (*gelu)(const float* x, float* out, int64_t n) = nullptr;
  void (*geglu)(const float* gate, const float* up, float* out, int64_t n) = nullptr;
  void (*softcap)(float* x, int64_t n, float cap) = nullptr;
  void (*add)(const float* a, const float* b, float* out, int64_t n) = nullptr;
  void (*mul)(const float* a, const float* b, float* out, int64_t n) = nullptr;
  void (*scale)(float* x, int64_t n, float s) = nullptr;
  void (*axpy)(const float* x, float* y, int64_t n, float s) = nullptr;
  // cos_sin: float[n_rot] (cos, sin interleaved per pair), shared by all heads of a position.
  void (*rope_cos_sin)(int64_t pos, const RopeParams& p, float* cos_sin) = nullptr;
  void (*rope_apply)(float* x, int64_t n_rot, const float* cos_sin, RopeStyle style) = nullptr;
  // Optional (nullptr: not offered): sum_i f16(w[i]) a[i], an F16 dot with its activation
  // side already widened to floats (attention's f16-rounded query / probabilities), within
  // the F16 vec_dot's error bound. Attention uses it where f16 widening is expensive
  // (SIMD128 has no conversion instruction): the query / probabilities are widened once
  // per head instead of once per position.
  float (*dot_f16_f32)(int64_t n, const uint16_t* w, const float* a) = nullptr;
  // Optional: out[r] = dot_f16_f32(n, w + r * w_stride, a) bit for bit, for r < n_rows
  // (attention's scores over a head's K slices, its outputs over the V rows), with the
  // rows' horizontal sums done together instead of one per call.
  void (*dot_f16_f32_rows)(int64_t n, const uint16_t* w, int64_t w_stride, int n_rows, const float* a,
                           float* out) = nullptr;
  // Optional: out[j * out_stride] = sum_i f16(w[i]) a[j * a_stride + i] for j < n_a, the
  // f16 row widened once for all n_a float rows (attention's query heads that share a kv
  // head), each result dot_f16_f32(n, w, a + j * a_stride) bit for bit.
  void (*dot_f16_f32_multi)(int64_t n, const uint16_t* w, const float* a, int64_t a_stride, int n_a,
                            float* out, int64_t out_stride) = nullptr;
  // Optional: reads one byte of every 64-byte line of n rows of `bytes` bytes, `stride`
  // bytes apart, so that attention's cache misses on a kv head's K slices / V rows
  // (evicted by the weights streamed since) are in flight together instead of one row
  // at a time behind the dot products. Wasm has no prefetch instruction; native code
  // gained nothing from it (scripts/BENCHMARKS.md) and leaves it null.
  void (*touch_rows)(const void* first, int n, size_t stride, size_t bytes) = nullptr;
};

// The scalar reference ops (always available; the oracle for every other ISA).
const FloatOps& ref_float_ops();

// The ops chosen at start-up by select_kernels(); the reference ops before that.
const FloatOps& float_ops();

}  // namespace runnel
