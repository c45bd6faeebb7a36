// The key/value cache of one session, in f16 (default) or a block format (q8_0,
// q4_0: half / a quarter of the memory, for long contexts on small machines).
//   K: k[layer][pos][k_dim] in the cache type's layout: one row per position, heads
//      contiguous, so a (position, kv head) slice is head_dim elements and a score is
//      one kernel-table dot product of that slice with the quantized query.
//   V, f16: v[layer][v_dim][n_ctx], transposed: one row per value dimension, so a
//      head's output dimension d is one F16 dot of the probabilities with row d.
//   V, q8_0/q4_0: v[layer][pos][v_dim], like K (blocks run along the head dimension,
//      which a transposed layout would not allow); attention then accumulates
//      probability-weighted dequantized rows (see core/kv/README.md).
// Quantized types need head_dim to be a multiple of the block size (32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/types.h"

namespace runnel {

// The KV cache types --kv-type accepts: "f16", "q8_0", "q4_0". Throws
// std::invalid_argument naming the value otherwise.
GgmlType parse_kv_type(std::string_view name);
std::string_view kv_type_name(GgmlType type);

// Bytes the cache takes for these sizes (the memory plan uses it before allocating).
size_t kv_cache_bytes(int n_layer, int n_ctx, int k_dim, int v_dim, GgmlType type);

class KvCache {
 public:
  // Throws std::invalid_argument for non-positive sizes, an unsupported type, or row
  // sizes that are not whole blocks; std::runtime_error (with the MiB) when the
  // allocation fails.
  KvCache(int n_layer, int n_ctx, int k_dim, int v_dim, GgmlType type = GgmlType::F16);

  int n_layer() const { return n_layer_; }
  int n_ctx() const { return n_ctx_; }
  int k_dim() const { return k_dim_; }
  int v_dim() const { return v_dim_; }
  GgmlType type() const { return type_; }
  bool v_transposed() const { return type_ == GgmlType::F16; }
  size_t n_bytes() const { return k_.size() + v_.size(); }
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }  // quantized V: one position's row

  // Rounds k[0..k_dim) and v[0..v_dim) into position `pos` of `layer`.
  void store(int layer, int pos, const float* k, const float* v);

  // Position `pos`'s K row (k_row_bytes()).
  const uint8_t* k_row(int layer, int pos) const {
    return k_.data() + (static_cast<size_t>(layer) * n_ctx_ + pos) * k_row_bytes_;
  }
  // f16 only: [k_dim] halves of position `pos`.
  const uint16_t* k(int layer, int pos) const { return reinterpret_cast<const uint16_t*>(k_row(layer, pos)); }
  // f16 only: [n_ctx] halves: value dimension `dim` at every position.
  const uint16_t* v_row(int layer, int dim) const {
    return reinterpret_cast<const uint16_t*>(v_.data()) + (static_cast<size_t>(layer) * v_dim_ + dim) * n_ctx_;
  }
  // Quantized only: position `pos`'s V row (v_row_bytes()).
  const uint8_t* v_pos(int layer, int pos) const {
    return v_.data() + (static_cast<size_t>(layer) * n_ctx_ + pos) * v_row_bytes_;
  }

  // Moves every layer's entries of positions [from, from + count) to [to, to + count)
  // (to < from: a context shift closing a gap). K rows keep their old rotation: the
  // model re-rotates them (Model::rerotate_keys).
  void move_positions(int from, int to, int count);
  // Mutable K row, for re-rotation.
  uint8_t* k_row_mut(int layer, int pos) {
    return k_.data() + (static_cast<size_t>(layer) * n_ctx_ + pos) * k_row_bytes_;
  }

  // Serialization of positions [0, n_pos) (session files): appends / reads back the
  // bytes of every layer's K and V for those positions.
  void save_positions(int n_pos, std::vector<uint8_t>& out) const;
  // Returns false if `bytes` is not exactly what save_positions wrote for n_pos.
  bool load_positions(int n_pos, const uint8_t* bytes, size_t n_bytes);
  size_t position_bytes() const;  // bytes one position takes over all layers

 private:
  int n_layer_, n_ctx_, k_dim_, v_dim_;
  GgmlType type_;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  std::vector<uint8_t> k_;  // [n_layer][n_ctx][k row]
  std::vector<uint8_t> v_;  // f16: [n_layer][v_dim][n_ctx] halves; else [n_layer][n_ctx][v row]
};

}  // namespace runnel
