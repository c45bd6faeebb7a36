// The NEON k-quant model quantizers: ref's Q2_K .. Q6_K quantizers with their
// group searches run 4 groups at a time (kernels/group_fits_lanes.h), bit-identical to
// ref (aarch64 builds with -ffp-contract=off throughout).
#include "kernels/arm/neon.h"
#define RUNNEL_GROUP_FIT_LANES 4
#include "kernels/group_fits_lanes.h"

namespace runnel::neon {

RUNNEL_DEFINE_GROUP_FIT_QUANTIZERS()

}  // namespace runnel::neon
