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
// A sliding-window layer (gemma2/3, Mistral) keeps only its last `window` positions and
// room for a batch: `cells(layer)` = min(n_ctx, 2 * window + n_batch - 1) slots holding
// the positions [first_pos(layer), ...) in order; make_room() slides the window's
// positions back to slot 0 when a batch would not fit (about once per `window` tokens,
// a copy of `window` rows), so every layer stays contiguous for the attention dots.
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

// Slots a layer with sliding window `window` (0: none) keeps for a context of n_ctx
// evaluated in batches of up to n_batch tokens.
int kv_layer_cells(int n_ctx, int window, int n_batch);

// Bytes the cache takes for these sizes (the memory plan uses it before allocating);
// windows: per layer, 0 or its sliding window (empty: none).
size_t kv_cache_bytes(int n_layer, int n_ctx, int k_dim, int v_dim, GgmlType type,
                      const std::vector<int>& windows = {}, int n_batch = 1);

class KvCache {
 public:
  // Throws std::invalid_argument for non-positive sizes, an unsupported type, or row
  // sizes that are not whole blocks; std::runtime_error (with the MiB) when the
  // allocation fails.
  // windows: per layer, 0 or its sliding window (empty: every layer keeps the whole
  // context); n_batch: the most positions one forward pass stores.
  KvCache(int n_layer, int n_ctx, int k_dim, int v_dim, GgmlType type = GgmlType::F16,
          std::vector<int> windows = {}, int n_batch = 1);

  int n_layer() const { return n_layer_; }
  int n_ctx() const { return n_ctx_; }
  int k_dim() const { return k_dim_; }
  int v_dim() const { return v_dim_; }
  GgmlType type() const { return type_; }
  bool v_transposed() const { return type_ == GgmlType::F16; }
  size_t n_bytes() const { return k_.size() + v_.size(); }
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }  // quantized V: one position's row

  // Slots of `layer` (n_ctx unless it slides), the oldest position they hold, and the
  // slot of position `pos` (>= first_pos).
  int cells(int layer) const { return cells_[layer]; }
  int first_pos(int layer) const { return first_[layer]; }
  int cell(int layer, int pos) const { return pos - first_[layer]; }
  int window(int layer) const { return windows_[layer]; }

  // Before storing positions [pos0, pos0 + n) (n <= n_batch): slides each windowed
  // layer's positions [pos0 - window + 1, pos0) to slot 0 where the batch would not fit.
  void make_room(int pos0, int n);
  // Whether evaluation can resume at position `pos` with what the cache holds: every
  // sliding layer still has the window before it. Forgets everything when it cannot
  // (first_pos back to 0) and returns false.
  bool resume_at(int pos);

  // Rounds k[0..k_dim) and v[0..v_dim) into position `pos` of `layer`.
  void store(int layer, int pos, const float* k, const float* v);

  // Position `pos`'s K row (k_row_bytes()).
  const uint8_t* k_row(int layer, int pos) const { return k_.data() + k_off_[layer] + cell(layer, pos) * k_row_bytes_; }
  // f16 only: [k_dim] halves of position `pos`.
  const uint16_t* k(int layer, int pos) const { return reinterpret_cast<const uint16_t*>(k_row(layer, pos)); }
  // f16 only: [cells(layer)] halves: value dimension `dim` in every slot (position p in
  // slot cell(layer, p)).
  const uint16_t* v_row(int layer, int dim) const {
    return reinterpret_cast<const uint16_t*>(v_.data() + v_off_[layer]) + static_cast<size_t>(dim) * cells_[layer];
  }
  // Quantized only: position `pos`'s V row (v_row_bytes()).
  const uint8_t* v_pos(int layer, int pos) const { return v_.data() + v_off_[layer] + cell(layer, pos) * v_row_bytes_; }

  // Moves every layer's entries of positions [from, from + count) to [to, to + count)
  // (to < from: a context shift closing a gap). K rows keep their old rotation: the
  // model re-rotates them (Model::rerotate_keys).
  void move_positions(int from, int to, int count);
  // Mutable K row, for re-rotation.
  uint8_t* k_row_mut(int layer, int pos) { return k_.data() + k_off_[layer] + cell(layer, pos) * k_row_bytes_; }

  // Serialization of positions [0, n_pos) (session files): appends / reads back, per
  // layer, the first position it holds (u32) and the bytes of its K and V from there.
  void save_positions(int n_pos, std::vector<uint8_t>& out) const;
  // Returns false if `bytes` is not what save_positions wrote for n_pos (a sliding
  // layer keeps the newest positions that fit its slots).
  bool load_positions(int n_pos, const uint8_t* bytes, size_t n_bytes);
  size_t position_bytes() const;  // bytes one position takes over all layers

 private:
  // Moves slots [from, from + count) of layer l to [to, to + count).
  void move_cells(int l, int from, int to, int count);

  int n_layer_, n_ctx_, k_dim_, v_dim_;
  GgmlType type_;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  std::vector<int> windows_, cells_, first_;  // per layer
  std::vector<size_t> k_off_, v_off_;         // per layer: where its K and V start
  std::vector<uint8_t> k_;  // per layer [cells][k row]
  std::vector<uint8_t> v_;  // per layer, f16: [v_dim][cells] halves; else [cells][v row]
};

}  // namespace runnel
