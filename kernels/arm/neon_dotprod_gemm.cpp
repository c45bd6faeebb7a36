// NEON batched products for prefill with the dot-product extension: the gemm kernels of
// neon_gemm_impl.h with vdotq_laneq_s32 as the tile step (the packing is the baseline
// one in neon_gemm.cpp; both tables share the layout). Compiled with
// -march=armv8.2-a+dotprod (CMakeLists.txt matches neon_dotprod*.cpp); its functions run
// only after cpu_has_dotprod() (arm_tables.cpp) said yes.
#include <arm_neon.h>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_gemm_impl.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "neon_dotprod_gemm.cpp needs -march=armv8.2-a+dotprod (see CMakeLists.txt)"
#endif

namespace runnel::neon::dotprod {
namespace {

// One int32 lane per token: vdotq_laneq_s32(acc, a, w, k) adds, for each of the 4
// tokens of a, its 4 quants of k-step k times weight bytes 4k .. 4k + 3 (exact for any
// int8). 8 sdot per 16 weights x 8 tokens.
struct SdotTile {
  static constexpr int kMaxRows = 4;
  struct Acc {
    int32x4_t v[2];  // tokens 0..3, 4..7
  };
  static Acc zero() { return {{vdupq_n_s32(0), vdupq_n_s32(0)}}; }

  template <int K>
  static void step(Acc& acc, int8x16_t w, const int8_t* a) {
    acc.v[0] = vdotq_laneq_s32(acc.v[0], vld1q_s8(a + 32 * K), w, K);
    acc.v[1] = vdotq_laneq_s32(acc.v[1], vld1q_s8(a + 32 * K + 16), w, K);
  }
  // Every token += its dot with w (elements e .. e + 15; a = k-step e / 4, 128 bytes).
  static void dot16(Acc& acc, int8x16_t w, const int8_t* a) {
    step<0>(acc, w, a);
    step<1>(acc, w, a);
    step<2>(acc, w, a);
    step<3>(acc, w, a);
  }
  static void mla(Acc& acc, const Acc& t, int32_t scale) {
    acc.v[0] = vmlaq_n_s32(acc.v[0], t.v[0], scale);
    acc.v[1] = vmlaq_n_s32(acc.v[1], t.v[1], scale);
  }
  static void sums(const Acc& acc, int32x4_t* out) {
    out[0] = acc.v[0];
    out[1] = acc.v[1];
  }
};

using Set = GemmSet<SdotTile>;

}  // namespace

RUNNEL_NEON_DEFINE_GEMM(Set)

}  // namespace runnel::neon::dotprod
