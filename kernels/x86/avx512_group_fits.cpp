// The AVX-512 k-quant model quantizers: ref's Q2_K .. Q6_K quantizers with their
// group searches run 16 groups at a time (group_fits_lanes.h), bit-identical to ref.
#include "kernels/x86/avx512_dots.h"
#define RUNNEL_GROUP_FIT_LANES 16
#include "kernels/group_fits_lanes.h"

namespace runnel::avx512 {

RUNNEL_DEFINE_GROUP_FIT_QUANTIZERS()

}  // namespace runnel::avx512
