#include "core/kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "kernels/fp16.h"
#include "kernels/kernels.h"

namespace runnel {
namespace {

bool is_kv_type(GgmlType t) { return t == GgmlType::F16 || t == GgmlType::Q8_0 || t == GgmlType::Q4_0; }

}  // namespace

GgmlType parse_kv_type(std::string_view name) {
  if (name == "f16") return GgmlType::F16;
  if (name == "q8_0") return GgmlType::Q8_0;
  if (name == "q4_0") return GgmlType::Q4_0;
  throw std::invalid_argument("KV cache type '" + std::string(name) + "' is not one of f16, q8_0, q4_0");
}

std::string_view kv_type_name(GgmlType type) {
  switch (type) {
    case GgmlType::F16: return "f16";
    case GgmlType::Q8_0: return "q8_0";
    case GgmlType::Q4_0: return "q4_0";
    default: return "?";
  }
}

int kv_layer_cells(int n_ctx, int window, int n_batch) {
  if (window <= 0) return n_ctx;
  // the window before a batch's first position, the batch, and as much again so that
  // sliding back happens about once per window
  return static_cast<int>(std::min<int64_t>(n_ctx, 2ll * window + std::max(1, n_batch) - 1));
}

size_t kv_cache_bytes(int n_layer, int n_ctx, int k_dim, int v_dim, GgmlType type, const std::vector<int>& windows,
                      int n_batch) {
  size_t cells = 0;
  for (int l = 0; l < n_layer; ++l) {
    cells += static_cast<size_t>(kv_layer_cells(n_ctx, windows.empty() ? 0 : windows[l], n_batch));
  }
  return cells * (row_bytes(type, k_dim) + row_bytes(type, v_dim));
}

KvCache::KvCache(int n_layer, int n_ctx, int k_dim, int v_dim, GgmlType type, std::vector<int> windows, int n_batch)
    : n_layer_(n_layer), n_ctx_(n_ctx), k_dim_(k_dim), v_dim_(v_dim), type_(type), windows_(std::move(windows)) {
  if (n_layer <= 0 || n_ctx <= 0 || k_dim <= 0 || v_dim <= 0) {
    throw std::invalid_argument("kv cache: sizes must be positive, got n_layer " + std::to_string(n_layer) +
                                ", n_ctx " + std::to_string(n_ctx) + ", k_dim " + std::to_string(k_dim) +
                                ", v_dim " + std::to_string(v_dim));
  }
  if (!is_kv_type(type)) {
    throw std::invalid_argument("kv cache: type " + std::string(traits(type).name) +
                                " is not supported (f16, q8_0, q4_0)");
  }
  const int block = static_cast<int>(traits(type).block_size);
  if (k_dim % block != 0 || v_dim % block != 0) {
    throw std::invalid_argument("kv cache: " + std::string(kv_type_name(type)) + " needs k/v row sizes that are " +
                                "multiples of " + std::to_string(block) + ", got " + std::to_string(k_dim) + " and " +
                                std::to_string(v_dim));
  }
  if (windows_.empty()) windows_.assign(n_layer, 0);
  if (static_cast<int>(windows_.size()) != n_layer) {
    throw std::invalid_argument("kv cache: " + std::to_string(windows_.size()) + " windows for " +
                                std::to_string(n_layer) + " layers");
  }
  k_row_bytes_ = row_bytes(type, k_dim);
  v_row_bytes_ = row_bytes(type, v_dim);
  size_t total_cells = 0;
  for (int l = 0; l < n_layer; ++l) {
    cells_.push_back(kv_layer_cells(n_ctx, windows_[l], n_batch));
    first_.push_back(0);
    k_off_.push_back(total_cells * k_row_bytes_);
    v_off_.push_back(total_cells * v_row_bytes_);
    total_cells += static_cast<size_t>(cells_[l]);
  }
  try {
    k_.assign(total_cells * k_row_bytes_, 0);
    v_.assign(total_cells * v_row_bytes_, 0);
  } catch (const std::bad_alloc&) {
    const size_t mib = kv_cache_bytes(n_layer, n_ctx, k_dim, v_dim, type, windows_, n_batch) >> 20;
    throw std::runtime_error("cannot allocate the KV cache: " + std::to_string(n_layer) + " layers x " +
                             std::to_string(n_ctx) + " positions in " + std::string(kv_type_name(type)) + " = " +
                             std::to_string(mib) + " MiB (try a smaller context or --kv-type q8_0)");
  }
}

void KvCache::store(int layer, int pos, const float* k, const float* v) {
  uint8_t* kd = k_row_mut(layer, pos);
  if (type_ == GgmlType::F16) {
    // Every table's f16 rows round as fp32_to_fp16 does (tests/kernels/*/ pin the bits).
    kernels().of(GgmlType::F16).quantize_row(k, kd, k_dim_);
    uint16_t* vd = const_cast<uint16_t*>(v_row(layer, 0)) + cell(layer, pos);
    for (int i = 0; i < v_dim_; ++i) vd[static_cast<size_t>(i) * cells_[layer]] = fp32_to_fp16(v[i]);
    return;
  }
  const TypeKernels& q = kernels().of(type_);
  q.quantize_row(k, kd, k_dim_);
  q.quantize_row(v, const_cast<uint8_t*>(v_pos(layer, pos)), v_dim_);
}

void KvCache::move_cells(int l, int from, int to, int count) {
  if (count <= 0 || from == to) return;
  uint8_t* k = k_.data() + k_off_[l];
  std::memmove(k + static_cast<size_t>(to) * k_row_bytes_, k + static_cast<size_t>(from) * k_row_bytes_,
               static_cast<size_t>(count) * k_row_bytes_);
  if (v_transposed()) {
    for (int d = 0; d < v_dim_; ++d) {
      uint16_t* row = const_cast<uint16_t*>(v_row(l, d));
      std::memmove(row + to, row + from, static_cast<size_t>(count) * sizeof(uint16_t));
    }
  } else {
    uint8_t* v = v_.data() + v_off_[l];
    std::memmove(v + static_cast<size_t>(to) * v_row_bytes_, v + static_cast<size_t>(from) * v_row_bytes_,
                 static_cast<size_t>(count) * v_row_bytes_);
  }
}

void KvCache::make_room(int pos0, int n) {
  for (int l = 0; l < n_layer_; ++l) {
    if (pos0 + n - first_[l] <= cells_[l]) continue;
    // keep the window of the batch's first position, [pos0 - window + 1, pos0)
    const int keep_from = std::max(first_[l], pos0 - windows_[l] + 1);
    if (windows_[l] <= 0 || pos0 + n - keep_from > cells_[l]) {
      throw std::logic_error("kv cache: positions [" + std::to_string(pos0) + ", " + std::to_string(pos0 + n) +
                             ") do not fit layer " + std::to_string(l) + "'s " + std::to_string(cells_[l]) + " slots");
    }
    move_cells(l, cell(l, keep_from), 0, pos0 - keep_from);
    first_[l] = keep_from;
  }
}

bool KvCache::resume_at(int pos) {
  for (int l = 0; l < n_layer_; ++l) {
    if (first_[l] > std::max(0, pos - windows_[l] + 1)) {
      std::fill(first_.begin(), first_.end(), 0);
      return false;
    }
  }
  return true;
}

void KvCache::move_positions(int from, int to, int count) {
  if (count <= 0 || from == to) return;
  for (int l = 0; l < n_layer_; ++l) {
    // A sliding layer may no longer hold the start of the range (positions it will not
    // attend to again); what it holds moves by the same distance.
    const int src = std::max(from, first_[l]);
    const int n = from + count - src;
    if (n <= 0) continue;
    const int dst = to + (src - from);
    if (dst < first_[l]) {
      move_cells(l, cell(l, src), 0, n);
      first_[l] = dst;
    } else {
      move_cells(l, cell(l, src), cell(l, dst), n);
    }
  }
}

size_t KvCache::position_bytes() const { return static_cast<size_t>(n_layer_) * (k_row_bytes_ + v_row_bytes_); }

void KvCache::save_positions(int n_pos, std::vector<uint8_t>& out) const {
  for (int l = 0; l < n_layer_; ++l) {
    const int first = std::min(first_[l], n_pos);
    const size_t n = static_cast<size_t>(n_pos - first);
    const uint32_t first_u32 = static_cast<uint32_t>(first);
    const auto* f = reinterpret_cast<const uint8_t*>(&first_u32);
    out.insert(out.end(), f, f + sizeof first_u32);
    const uint8_t* k = k_.data() + k_off_[l] + static_cast<size_t>(cell(l, first)) * k_row_bytes_;
    out.insert(out.end(), k, k + n * k_row_bytes_);
    if (v_transposed()) {
      for (int d = 0; d < v_dim_; ++d) {
        const uint8_t* row = reinterpret_cast<const uint8_t*>(v_row(l, d) + cell(l, first));
        out.insert(out.end(), row, row + n * sizeof(uint16_t));
      }
    } else {
      const uint8_t* v = v_.data() + v_off_[l] + static_cast<size_t>(cell(l, first)) * v_row_bytes_;
      out.insert(out.end(), v, v + n * v_row_bytes_);
    }
  }
}

bool KvCache::load_positions(int n_pos, const uint8_t* bytes, size_t n_bytes) {
  if (n_pos < 0 || n_pos > n_ctx_) return false;
  const uint8_t* end = bytes + n_bytes;
  std::vector<int> first(n_layer_);
  // check the whole layout before writing anything
  const uint8_t* at = bytes;
  for (int l = 0; l < n_layer_; ++l) {
    uint32_t f;
    if (end - at < static_cast<std::ptrdiff_t>(sizeof f)) return false;
    std::memcpy(&f, at, sizeof f);
    // a full layer holds everything; a sliding one at least its last window
    if (f > static_cast<uint32_t>(n_pos) || (windows_[l] <= 0 && f != 0) ||
        (windows_[l] > 0 && static_cast<int>(f) > std::max(0, n_pos - windows_[l] + 1))) {
      return false;
    }
    first[l] = static_cast<int>(f);
    const size_t size = static_cast<size_t>(n_pos - first[l]) * (k_row_bytes_ + v_row_bytes_);
    if (static_cast<size_t>(end - at) < sizeof f + size) return false;
    at += sizeof f + size;
  }
  if (at != end) return false;
  for (int l = 0; l < n_layer_; ++l) {
    bytes += sizeof(uint32_t);
    const int n_saved = n_pos - first[l];
    const int skip = std::max(0, n_saved - cells_[l]);  // the oldest, beyond this layer's slots
    const int n = n_saved - skip;
    first_[l] = first[l] + skip;
    std::memcpy(k_.data() + k_off_[l], bytes + static_cast<size_t>(skip) * k_row_bytes_,
                static_cast<size_t>(n) * k_row_bytes_);
    bytes += static_cast<size_t>(n_saved) * k_row_bytes_;
    if (v_transposed()) {
      for (int d = 0; d < v_dim_; ++d) {
        uint8_t* row = reinterpret_cast<uint8_t*>(const_cast<uint16_t*>(v_row(l, d)));
        std::memcpy(row, bytes + static_cast<size_t>(skip) * sizeof(uint16_t), static_cast<size_t>(n) * sizeof(uint16_t));
        bytes += static_cast<size_t>(n_saved) * sizeof(uint16_t);
      }
    } else {
      std::memcpy(v_.data() + v_off_[l], bytes + static_cast<size_t>(skip) * v_row_bytes_,
                  static_cast<size_t>(n) * v_row_bytes_);
      bytes += static_cast<size_t>(n_saved) * v_row_bytes_;
    }
  }
  return true;
}

}  // namespace runnel
