// F32, F16 and BF16 rows: element-wise conversion, and dot products that accumulate the
// float products in double like ggml's scalar ggml_vec_dot_f32/f16/bf16. Eight
// independent double lanes keep the loop vectorizable; the lanes are summed at the end
// (differs from a single running double sum only in the last double bits).
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/ref/quant_math.h"
#include "kernels/ref/ref.h"

namespace runnel::ref {
namespace {

constexpr int kLanes = 8;

// sum_i to_f32(w[i]) * to_f32(a[i]); products rounded to float, summed in double.
template <typename T, float (*ToF32)(T)>
float dot_lanes(int64_t n, const T* w, const T* a) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    float prod[kLanes];  // converting first keeps both loops simple enough to vectorize
    for (int l = 0; l < kLanes; ++l) prod[l] = ToF32(w[i + l]) * ToF32(a[i + l]);
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(prod[l]);
  }
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  for (; i < n; ++i) sum += static_cast<double>(ToF32(w[i]) * ToF32(a[i]));
  return static_cast<float>(sum);
}

inline float f32_identity(float x) {
  return x;
}

}  // namespace

void dequantize_row_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void quantize_row_f32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
float vec_dot_f32(int64_t n, const void* w, const void* a) {
  return dot_lanes<float, f32_identity>(n, static_cast<const float*>(w),
                                        static_cast<const float*>(a));
}

void dequantize_row_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32_branchless(h[i]);
}
void quantize_row_f16(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
}
float vec_dot_f16(int64_t n, const void* w, const void* a) {
  return dot_lanes<uint16_t, fp16_to_fp32_branchless>(n, static_cast<const uint16_t*>(w),
                                                      static_cast<const uint16_t*>(a));
}

void dequantize_row_bf16(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(b[i]);
}
void quantize_row_bf16(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) b[i] = fp32_to_bf16(src[i]);
}
float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  return dot_lanes<uint16_t, bf16_to_fp32>(n, static_cast<const uint16_t*>(w),
                                           static_cast<const uint16_t*>(a));
}

}  // namespace runnel::ref
