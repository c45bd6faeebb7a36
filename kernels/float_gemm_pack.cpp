// Portable packing of float activation rows for the float batched products (layout in
// float_gemm_pack.h). It runs once per group of tokens per matmul, against a gemm that
// reads each group once per few weight rows: portable code that the compiler vectorizes.
#include "kernels/float_gemm_pack.h"

#include <algorithm>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/ref/quant_math.h"

namespace runnel {
namespace {

inline float widen(float v) {
  return v;
}

// Chunks go through a local copy: rows need not be aligned for T (any a_stride), and
// the fixed-length conversion loops vectorize (the f16 decode is branch-free).
template <typename T, float (*Widen)(T)>
void pack_rows(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  auto* dst = static_cast<float*>(packed);
  const int64_t chunks = float_gemm_chunks(n);
  std::memset(dst, 0, gemm_pack_bytes_float(n));
  for (int c = 0; c < nc; ++c) {
    const auto* src = static_cast<const uint8_t*>(a) + static_cast<size_t>(c) * a_stride;
    for (int64_t k = 0; k < chunks; ++k) {
      const int64_t m = std::min<int64_t>(n - k * kFloatChunk, kFloatChunk);
      T chunk[kFloatChunk] = {};
      std::memcpy(chunk, src + static_cast<size_t>(k * kFloatChunk) * sizeof(T),
                  static_cast<size_t>(m) * sizeof(T));
      float* out = dst + (k * kGemmCols + c) * kFloatChunk;
      for (int j = 0; j < kFloatChunk; ++j) out[j] = Widen(chunk[j]);
    }
  }
}

}  // namespace

size_t gemm_pack_bytes_float(int64_t n) {
  return static_cast<size_t>(float_gemm_chunks(n)) * kGemmCols * kFloatChunk * sizeof(float);
}

void gemm_pack_f32(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  pack_rows<float, widen>(n, a, a_stride, nc, packed);
}

void gemm_pack_f16(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  pack_rows<uint16_t, ref::fp16_to_fp32_branchless>(n, a, a_stride, nc, packed);
}

void gemm_pack_bf16(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  pack_rows<uint16_t, bf16_to_fp32>(n, a, a_stride, nc, packed);
}

}  // namespace runnel
