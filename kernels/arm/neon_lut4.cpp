// NEON dots of the 4-bit lookup formats (MXFP4, IQ4_NL x Q8_0; IQ4_XS x Q8_K):
// neon_lut4_dots.h with the baseline widening dot step.
#include <arm_neon.h>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_common.h"
#include "kernels/arm/neon_lut4_dots.h"

namespace runnel::neon {

float vec_dot_mxfp4(int64_t n, const void* w, const void* a) {
  return dot_lut4_blocks<WideningDot, ref::BlockMxfp4>(n, w, a);
}
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) {
  return dot_lut4_blocks<WideningDot, ref::BlockIq4Nl>(n, w, a);
}
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a) {
  return dot_iq4_xs<WideningDot>(n, w, a);
}

}  // namespace runnel::neon
