// Quantized matrix products of the forward pass: y = W x for a batch of activation
// rows. Activations are quantized once per row to the weight type's partner format
// (kernels.h vec_dot_type). With several tokens and a kernel set that has a batched
// product for the weight type (TypeKernels::gemm), the quantized rows are packed in
// groups of kGemmCols and each run of up to kGemmRows weight rows meets every group;
// otherwise every output row is one vec_dot per token. Output rows are split statically
// over the Parallel's tasks; within a task a small tile of weight rows stays in cache
// while all tokens stream past it, so each weight byte is read from memory once per
// batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/host/parallel.h"
#include "kernels/kernels.h"
#include "kernels/types.h"

namespace runnel {

struct GgufTensorInfo;

// A GGUF weight matrix: n_out rows of n_in elements in `type`'s block layout.
struct Matrix {
  const uint8_t* data = nullptr;
  GgmlType type = GgmlType::F32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  // Rows repacked kX8Rows at a time (TypeKernels::repack_x8): group g at
  // data + g * x8_group_bytes(); only the kernels' gemm_x8 reads it.
  bool x8 = false;
  // The model tensor these rows come from (null for matrices of no tensor) and, for an
  // expert stack [n_in, n_out, n_expert], the expert: only a MatmulObserver reads them.
  const GgufTensorInfo* tensor = nullptr;
  int expert = 0;
};

// Sees the float input of every product of a forward pass before it is quantized, e.g.
// to collect an importance matrix (runnel imatrix). x [n_tokens, w.n_in]; a call per
// distinct tensor of a product (q, k, v rows of one fused tensor report once), per expert
// for the routed products. Called on the thread that calls matmul, before the product.
class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  virtual void observe(const Matrix& w, const float* x, int n_tokens) = 0;
};

// The batched product pays off from a few tokens on (it computes whole groups of
// kGemmCols; below this the per-token dots are as fast).
constexpr int kMinGemmTokens = 3;

// One product of a group that shares its input: out[t][r] = W[r] . x[t] (+ bias[r]).
struct MatmulJob {
  Matrix w;
  float* out = nullptr;         // [n_tokens, w.n_out]
  const float* bias = nullptr;  // [w.n_out] or nullptr
};

// Space for the quantized copies of one activation batch (and their packed groups for
// the kernels' batched products), sized once per session.
class MatmulScratch {
 public:
  MatmulScratch() = default;
  // Room for up to kMaxFormats formats of n_tokens rows of at most max_row_bytes, and
  // as many packed groups of kGemmCols rows of at most max_pack_bytes each.
  MatmulScratch(int n_tokens, size_t max_row_bytes, size_t max_pack_bytes = 0);
  // What that constructor allocates, for the memory plan.
  static uint64_t bytes(int n_tokens, size_t max_row_bytes, size_t max_pack_bytes);
  uint64_t allocated_bytes() const {
    return bytes_.size() + packed_.size() + act_ints_.size() * sizeof(int32_t);
  }

  static constexpr int kMaxFormats = 3;  // distinct partner formats in one job group

  size_t slot_bytes() const { return slot_bytes_; }
  uint8_t* slot(int format) { return bytes_.data() + static_cast<size_t>(format) * slot_bytes_; }
  size_t packed_slot_bytes() const { return packed_slot_bytes_; }
  uint8_t* packed_slot(int format) {
    return packed_.data() + static_cast<size_t>(format) * packed_slot_bytes_;
  }
  // Every product per token (vec_dot, or the repacked kernels, whose columns are
  // independent), never the packed batched gemm: a batch's rows then get the bits each
  // token would get alone, as decode computes it (speculative verification).
  bool per_token = false;
  // With per_token, the first gemm_tokens rows still take the batched gemm as a pass of
  // their own would (a prompt chunk run beside decode rows: DecodeBatch).
  int gemm_tokens = 0;
  // Null unless something collects the products' inputs (one pointer test per product).
  MatmulObserver* observer = nullptr;

  // What gemm_x8 reads beside the activation rows (x8_act_ints: Q8_0 block sums, a
  // type's x8_prepare), each maker's over each batch of rows once (a format's, or a
  // routed job's), end to end.
  size_t act_ints_size() const { return act_ints_.size(); }
  int32_t* act_ints() { return act_ints_.data(); }

 private:
  size_t slot_bytes_ = 0;
  size_t packed_slot_bytes_ = 0;
  std::vector<uint8_t> bytes_;   // [kMaxFormats][n_tokens][row bytes]
  std::vector<uint8_t> packed_;  // [kMaxFormats][groups][pack bytes]
  std::vector<int32_t> act_ints_;
};

// Bytes one activation row of n_in elements takes in `weight_type`'s partner format.
size_t activation_row_bytes(GgmlType weight_type, int64_t n_in);

// Bytes of one packed group of activation rows for `weight_type`'s batched product, or 0
// when the selected kernels have none for it.
size_t activation_pack_bytes(GgmlType weight_type, int64_t n_in);

// Work on finished output rows [r0, r1) (of every token), run by the task that computed
// them: e.g. gate = silu(gate) * up, done while the other tasks still stream weights
// instead of on one thread after the product.
using RowEpilogue = std::function<void(int64_t r0, int64_t r1)>;

// Every job's out = W x for x [n_tokens, n_in] (all jobs have w.n_in == n_in).
// Allocation-free; x is read only. With an epilogue, the jobs (all of the same n_out) are
// split by row ranges, multiples of kEpilogueRows but for the last: each task computes
// its range of every job, then calls epilogue(r0, r1).
constexpr int64_t kEpilogueRows = 64;
void matmul(Parallel& par, const float* x, int n_tokens, std::span<const MatmulJob> jobs,
            MatmulScratch& scratch, const RowEpilogue* epilogue = nullptr);

// A product with an input of its own: an expert of a mixture over the rows routed to it,
// x [n_tokens, w.n_in].
struct RoutedJob {
  Matrix w;
  const float* x = nullptr;
  int n_tokens = 0;
  float* out = nullptr;         // [n_tokens, w.n_out]
  const float* bias = nullptr;  // [w.n_out] or nullptr
};

// Every routed job's out = W x in one dispatch (experts one after another would each
// pay a dispatch and a wait): jobs sharing an x are quantized once, products are per
// token (vec_dot, the bits a token gets alone), all jobs have the same n_out, and each
// task computes the row ranges [r0, r1) (multiples of kEpilogueRows) of every job and
// then calls epilogue(r0, r1) if given. For the few tokens an expert gets while
// decoding. Repacked weights (Matrix::x8) go through gemm_x8, whose columns are per
// token too. Returns false, having done nothing, when the jobs do not fit: more than
// kMaxRoutedJobs, more input rows or activation ints (x8_act_ints) than the scratch
// holds, unequal n_out, or repacked weights the selected kernels cannot read.
constexpr size_t kMaxRoutedJobs = 128;
bool matmul_routed(Parallel& par, std::span<const RoutedJob> jobs, MatmulScratch& scratch,
                   const RowEpilogue* epilogue = nullptr);

}  // namespace runnel
