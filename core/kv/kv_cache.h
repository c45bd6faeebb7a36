// The key/value cache of one session, in f16 (rounded to nearest even).
//   K: k[layer][pos][k_dim], k_dim = n_head_kv * head_dim: one row per position, heads
//      contiguous, so a (position, kv head) slice is head_dim adjacent halves and a
//      score is one dot product of that slice with the query.
//   V: v[layer][v_dim][n_ctx], transposed: one row per value dimension, so a head's
//      output dimension d is one dot product of the probabilities with row d.
// Both products then run on the kernel table's F16 dot (SIMD where the ISA has it),
// as llama.cpp's CPU attention does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace runnel {

class KvCache {
 public:
  // Throws std::invalid_argument for non-positive sizes.
  KvCache(int n_layer, int n_ctx, int k_dim, int v_dim);

  int n_layer() const { return n_layer_; }
  int n_ctx() const { return n_ctx_; }
  int k_dim() const { return k_dim_; }
  int v_dim() const { return v_dim_; }
  size_t n_bytes() const { return (k_.size() + v_.size()) * sizeof(uint16_t); }

  // Rounds k[0..k_dim) and v[0..v_dim) to f16 into position `pos` of `layer`.
  void store(int layer, int pos, const float* k, const float* v);

  // [k_dim] halves of position `pos`.
  const uint16_t* k(int layer, int pos) const {
    return k_.data() + (static_cast<size_t>(layer) * n_ctx_ + pos) * k_dim_;
  }
  // [n_ctx] halves: value dimension `dim` at every position.
  const uint16_t* v_row(int layer, int dim) const {
    return v_.data() + (static_cast<size_t>(layer) * v_dim_ + dim) * n_ctx_;
  }

 private:
  int n_layer_, n_ctx_, k_dim_, v_dim_;
  std::vector<uint16_t> k_;  // [n_layer][n_ctx][k_dim]
  std::vector<uint16_t> v_;  // [n_layer][v_dim][n_ctx]
};

}  // namespace runnel
