// Quantized matrix products of the forward pass: y = W x for a batch of activation
// rows. Activations are quantized once per row to the weight type's partner format
// (kernels.h vec_dot_type), then every output row is one vec_dot per token. Output
// rows are split statically over the Parallel's tasks; within a task a small tile of
// weight rows stays in cache while all tokens stream past it, so each weight byte is
// read from memory once per batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/runtime/parallel.h"
#include "kernels/types.h"

namespace runnel {

// A GGUF weight matrix: n_out rows of n_in elements in `type`'s block layout.
struct Matrix {
  const uint8_t* data = nullptr;
  GgmlType type = GgmlType::F32;
  int64_t n_in = 0;
  int64_t n_out = 0;
};

// One product of a group that shares its input: out[t][r] = W[r] . x[t] (+ bias[r]).
struct MatmulJob {
  Matrix w;
  float* out = nullptr;         // [n_tokens, w.n_out]
  const float* bias = nullptr;  // [w.n_out] or nullptr
};

// Space for the quantized copies of one activation batch, sized once per session.
class MatmulScratch {
 public:
  MatmulScratch() = default;
  // Room for up to kMaxFormats formats of n_tokens rows of at most max_row_bytes.
  MatmulScratch(int n_tokens, size_t max_row_bytes);

  static constexpr int kMaxFormats = 3;  // distinct partner formats in one job group

  size_t slot_bytes() const { return slot_bytes_; }
  uint8_t* slot(int format) { return bytes_.data() + static_cast<size_t>(format) * slot_bytes_; }

 private:
  size_t slot_bytes_ = 0;
  std::vector<uint8_t> bytes_;  // [kMaxFormats][n_tokens][row bytes]
};

// Bytes one activation row of n_in elements takes in `weight_type`'s partner format.
size_t activation_row_bytes(GgmlType weight_type, int64_t n_in);

// Every job's out = W x for x [n_tokens, n_in] (all jobs have w.n_in == n_in).
// Allocation-free; x is read only.
void matmul(Parallel& par, const float* x, int n_tokens, std::span<const MatmulJob> jobs,
            MatmulScratch& scratch);

}  // namespace runnel
