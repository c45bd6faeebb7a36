// The integer dots of the NEON set with the dot-product extension (ARMv8.2 DotProd,
// optional in 8.2, mandatory from 8.4): vdotq_s32 adds four int8 products into each int32
// lane in one instruction, where the baseline needs a widening multiply, multiply-add
// and pairwise add. The kernels are neon_legacy_dots.h, neon_kquant_dots.h and
// neon_lut4_dots.h with that step. This file alone is compiled with
// -march=armv8.2-a+dotprod (CMakeLists.txt), and its functions run only after
// cpu_has_dotprod() (arm_tables.cpp) said yes.
#include <arm_neon.h>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_kquant_dots.h"
#include "kernels/arm/neon_legacy_dots.h"
#include "kernels/arm/neon_lut4_dots.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "neon_dotprod.cpp needs -march=armv8.2-a+dotprod (see CMakeLists.txt)"
#endif

namespace runnel::neon::dotprod {
namespace {

// acc's four lanes += the 16 products a[i] * b[i], four per lane; exact for any int8.
struct SdotStep {
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};

}  // namespace

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  return dot_q4_0<SdotStep>(n, w, a);
}
float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  return dot_q4_1<SdotStep>(n, w, a);
}
float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  return dot_q5_0<SdotStep>(n, w, a);
}
float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  return dot_q5_1<SdotStep>(n, w, a);
}
float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  return dot_q8_0<SdotStep>(n, w, a);
}
float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  return dot_q2_k<SdotStep>(n, w, a);
}
float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  return dot_q3_k<SdotStep>(n, w, a);
}
float vec_dot_q4_k(int64_t n, const void* w, const void* a) {
  return dot_q4_k<SdotStep>(n, w, a);
}
float vec_dot_q5_k(int64_t n, const void* w, const void* a) {
  return dot_q5_k<SdotStep>(n, w, a);
}
float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  return dot_q6_k<SdotStep>(n, w, a);
}
float vec_dot_mxfp4(int64_t n, const void* w, const void* a) {
  return dot_lut4_blocks<SdotStep, ref::BlockMxfp4>(n, w, a);
}
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) {
  return dot_lut4_blocks<SdotStep, ref::BlockIq4Nl>(n, w, a);
}
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a) {
  return dot_iq4_xs<SdotStep>(n, w, a);
}

}  // namespace runnel::neon::dotprod
