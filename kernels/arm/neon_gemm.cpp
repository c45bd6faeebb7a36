// NEON batched products for prefill, baseline set (plain Advanced SIMD): the activation
// packing shared by both NEON tables (gemm_pack / gemm_pack_bytes of Q8_0, Q8_1, Q8_K;
// layout in neon_gemm_impl.h) and the gemm kernels of neon_gemm_impl.h with a widening
// multiply tile step.
#include <arm_neon.h>

#include <cstring>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_common.h"
#include "kernels/arm/neon_gemm_impl.h"
#include "kernels/ref/blocks.h"

namespace runnel::neon {
namespace {

// The baseline tile step. Without sdot, a token's 4 products of one k-step are two
// int16 lanes of a vmull_s8 (two tokens per 8-byte half of a k-step, the 4 weight bytes
// duplicated), the next k-step is added with vmlal_s8 (two products per int16 lane:
// <= 2 * 128 * 127 = 32512, exact for activations in [-127, 127]), and vpadalq_s16
// widens pairs into int32 lanes. Acc v[q] holds tokens 2q and 2q + 1 in two lanes each;
// sums() folds them with one pairwise add per 4 tokens.
struct WideningTile {
  static constexpr int kMaxRows = 1;  // 4 accumulators a row: more rows spill (g++ 12)
  struct Acc {
    int32x4_t v[4];
  };
  static Acc zero() { return {{vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)}}; }

  // k-steps 2j and 2j + 1 (32 bytes apart in a), weight bytes 8j .. 8j + 7 of w.
  template <int J>
  static void pair_step(Acc& acc, int32x4_t w, const int8_t* a) {
    const int8x8_t w0 = vreinterpret_s8_s32(vdup_laneq_s32(w, 2 * J));
    const int8x8_t w1 = vreinterpret_s8_s32(vdup_laneq_s32(w, 2 * J + 1));
    const int8_t* a0 = a + 64 * J;
    for (int q = 0; q < 4; ++q) {
      int16x8_t prod = vmull_s8(vld1_s8(a0 + 8 * q), w0);
      prod = vmlal_s8(prod, vld1_s8(a0 + 32 + 8 * q), w1);
      acc.v[q] = vpadalq_s16(acc.v[q], prod);
    }
  }
  // Every token += its dot with w (elements e .. e + 15; a = k-step e / 4, 128 bytes).
  static void dot16(Acc& acc, int8x16_t w, const int8_t* a) {
    const int32x4_t w32 = vreinterpretq_s32_s8(w);
    pair_step<0>(acc, w32, a);
    pair_step<1>(acc, w32, a);
  }
  static void mla(Acc& acc, const Acc& t, int32_t scale) {
    for (int q = 0; q < 4; ++q) acc.v[q] = vmlaq_n_s32(acc.v[q], t.v[q], scale);
  }
  static void sums(const Acc& acc, int32x4_t* out) {
    out[0] = vpaddq_s32(acc.v[0], acc.v[1]);  // tokens 0..3
    out[1] = vpaddq_s32(acc.v[2], acc.v[3]);  // tokens 4..7
  }
};

using Set = GemmSet<WideningTile>;

template <typename Block>
const Block* token_row(const void* a, size_t a_stride, int c) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(a) +
                                        static_cast<size_t>(c) * a_stride);
}

// One token's block of quants into column c of a packed block (k-step k: 4 quants).
inline void scatter_quants(const int8_t* qs, int n_elements, int8_t (*dst)[kTokens][4], int c) {
  for (int k = 0; k < n_elements / 4; ++k) std::memcpy(dst[k][c], qs + 4 * k, 4);
}

}  // namespace

// ---------------------------------------------------------------- packing

size_t gemm_pack_bytes_q8_0(int64_t n) {
  return static_cast<size_t>(n / kQK) * sizeof(PackedQ8_0);
}
size_t gemm_pack_bytes_q8_1(int64_t n) {
  return static_cast<size_t>(n / kQK) * sizeof(PackedQ8_1);
}
size_t gemm_pack_bytes_q8_k(int64_t n) {
  return static_cast<size_t>(n / kQK_K) * sizeof(PackedQ8_K);
}

// Missing tokens (c >= nc) stay zero: d = 0 and q = 0, so their lanes compute 0.
void gemm_pack_q8_0(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  auto* p = static_cast<PackedQ8_0*>(packed);
  std::memset(p, 0, gemm_pack_bytes_q8_0(n));
  for (int c = 0; c < nc; ++c) {
    const auto* y = token_row<ref::BlockQ8_0>(a, a_stride, c);
    for (int64_t b = 0; b < n / kQK; ++b) {
      p[b].d[c] = f16(y[b].d);
      scatter_quants(y[b].qs, kQK, p[b].q, c);
    }
  }
}

void gemm_pack_q8_1(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  auto* p = static_cast<PackedQ8_1*>(packed);
  std::memset(p, 0, gemm_pack_bytes_q8_1(n));
  for (int c = 0; c < nc; ++c) {
    const auto* y = token_row<ref::BlockQ8_1>(a, a_stride, c);
    for (int64_t b = 0; b < n / kQK; ++b) {
      p[b].d[c] = f16(y[b].d);
      p[b].s[c] = f16(y[b].s);
      scatter_quants(y[b].qs, kQK, p[b].q, c);
    }
  }
}

void gemm_pack_q8_k(int64_t n, const void* a, size_t a_stride, int nc, void* packed) {
  auto* p = static_cast<PackedQ8_K*>(packed);
  std::memset(p, 0, gemm_pack_bytes_q8_k(n));
  for (int c = 0; c < nc; ++c) {
    const auto* y = token_row<ref::BlockQ8_K>(a, a_stride, c);
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      p[b].d[c] = y[b].d;
      for (int g = 0; g < kQK_K / 16; ++g) p[b].bsums16[g][c] = y[b].bsums[g];
      for (int j = 0; j < kQK_K / 32; ++j) {
        // |pair| <= 32 * 127: exact in int16
        p[b].bsums32[j][c] = static_cast<int16_t>(y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
      }
      scatter_quants(y[b].qs, kQK_K, p[b].q, c);
    }
  }
}

// ---------------------------------------------------------------- baseline gemm

RUNNEL_NEON_DEFINE_GEMM(Set)

}  // namespace runnel::neon
