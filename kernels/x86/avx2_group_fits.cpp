// The AVX2 k-quant model quantizers: ref's Q2_K .. Q6_K quantizers with their
// group searches run 8 groups at a time (group_fits_lanes.h), bit-identical to ref.
#include "kernels/x86/avx2.h"
#define RUNNEL_GROUP_FIT_LANES 8
#include "kernels/group_fits_lanes.h"

namespace runnel::avx2 {

RUNNEL_DEFINE_GROUP_FIT_QUANTIZERS()

}  // namespace runnel::avx2
