// The k-quant quantizers that spend nearly all their time in per-group scale searches
// (Q2_K, Q4_K, Q5_K and Q6_K, with and without importance weights, and Q3_K's weighted
// one), written over a table of group searches. kernels/ref passes its scalar searches;
// an ISA may pass searches that run many groups side by side (kernels/group_fits_lanes.h)
// as long as each group gets ref's scale, min and levels bit for bit, so the bytes stay
// llama.cpp's.
#pragma once

#include <cstdint>

namespace runnel::ref {

struct GroupFits {
  // fit_affine (k_quants_common.h) on `count` consecutive groups of `size` elements:
  // group g reads x[g * size ..] and w[g * size ..], writes L[g * size ..], scales[g]
  // and mins[g] (fit_affine's min_out).
  void (*affine)(int count, int size, int nmax, const float* x, const float* w, float rmin, float rdelta,
                 int nstep, bool use_mad, float* scales, float* mins, uint8_t* L);
  // fit_symmetric_qw on `count` groups, qw laid out like x; qw nullptr weighs each
  // element by x^2 (fit_symmetric_weighted).
  void (*symmetric)(int count, int size, int nmax, const float* x, const float* qw, float* scales, int8_t* L);
};

// The scalar searches, group after group.
const GroupFits& ref_group_fits();

// ref's quantize_row_q2_k / q4_k / q5_k (k_quants.cpp) and the importance-weighted forms
// (quant_weighted.cpp, importance non-null) of those and of Q3_K, with the group
// searches of `fits` (Q3_K's plain quantizer has a search of its own). Q6_K's two differ
// only in the weights: importance nullptr is the plain quantizer.
void quantize_q2_k(const float* src, void* dst, int64_t n, const GroupFits& fits);
void quantize_q2_k_weighted(const float* src, void* dst, int64_t n, const float* importance,
                            const GroupFits& fits);
void quantize_q3_k_weighted(const float* src, void* dst, int64_t n, const float* importance,
                            const GroupFits& fits);
void quantize_q4_k(const float* src, void* dst, int64_t n, const GroupFits& fits);
void quantize_q5_k(const float* src, void* dst, int64_t n, const GroupFits& fits);
void quantize_q4_k_weighted(const float* src, void* dst, int64_t n, const float* importance,
                            const GroupFits& fits);
void quantize_q5_k_weighted(const float* src, void* dst, int64_t n, const float* importance,
                            const GroupFits& fits);
void quantize_q6_k(const float* src, void* dst, int64_t n, const float* importance, const GroupFits& fits);

}  // namespace runnel::ref

// Declares, in the namespace where it is expanded, the model quantizers that
// RUNNEL_DEFINE_GROUP_FIT_QUANTIZERS (kernels/group_fits_lanes.h) defines for an ISA:
// the table's quantize_row and quantize_row_weighted (importance nullptr: the plain
// one) of Q2_K, Q4_K, Q5_K and Q6_K and quantize_row_weighted of Q3_K, bit-exact with ref's.
#define RUNNEL_GROUP_FIT_QUANTIZER_DECLS                                                              \
  void quantize_row_q2_k(const float* src, void* dst, int64_t n);                                     \
  void quantize_row_q2_k_weighted(const float* src, void* dst, int64_t n, const float* importance);  \
  void quantize_row_q3_k_weighted(const float* src, void* dst, int64_t n, const float* importance);  \
  void quantize_row_q4_k(const float* src, void* dst, int64_t n);                                     \
  void quantize_row_q5_k(const float* src, void* dst, int64_t n);                                     \
  void quantize_row_q6_k(const float* src, void* dst, int64_t n);                                     \
  void quantize_row_q4_k_weighted(const float* src, void* dst, int64_t n, const float* importance);  \
  void quantize_row_q5_k_weighted(const float* src, void* dst, int64_t n, const float* importance);  \
  void quantize_row_q6_k_weighted(const float* src, void* dst, int64_t n, const float* importance);

// Puts those quantizers, declared in namespace ns, into the KernelTable t (the table
// builders of kernels/x86 and kernels/arm; Q3_K's plain entry stays as it is).
#define RUNNEL_SET_GROUP_FIT_QUANTIZERS(t, ns)                                             \
  do {                                                                                    \
    auto set = [&](::runnel::GgmlType type, ::runnel::QuantizeRowFn plain,                \
                   ::runnel::QuantizeRowWeightedFn weighted) {                            \
      ::runnel::TypeKernels& k = (t).types[static_cast<uint32_t>(type)];                  \
      if (plain) k.quantize_row = plain;                                                  \
      k.quantize_row_weighted = weighted;                                                 \
    };                                                                                    \
    set(::runnel::GgmlType::Q2_K, ns::quantize_row_q2_k, ns::quantize_row_q2_k_weighted); \
    set(::runnel::GgmlType::Q3_K, nullptr, ns::quantize_row_q3_k_weighted);               \
    set(::runnel::GgmlType::Q4_K, ns::quantize_row_q4_k, ns::quantize_row_q4_k_weighted); \
    set(::runnel::GgmlType::Q5_K, ns::quantize_row_q5_k, ns::quantize_row_q5_k_weighted); \
    set(::runnel::GgmlType::Q6_K, ns::quantize_row_q6_k, ns::quantize_row_q6_k_weighted); \
  } while (0)
