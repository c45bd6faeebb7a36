#include "core/kv/kv_cache.h"

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

size_t kv_cache_bytes(int n_layer, int n_ctx, int k_dim, int v_dim, GgmlType type) {
  return static_cast<size_t>(n_layer) * n_ctx * (row_bytes(type, k_dim) + row_bytes(type, v_dim));
}

KvCache::KvCache(int n_layer, int n_ctx, int k_dim, int v_dim, GgmlType type)
    : n_layer_(n_layer), n_ctx_(n_ctx), k_dim_(k_dim), v_dim_(v_dim), type_(type) {
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
  k_row_bytes_ = row_bytes(type, k_dim);
  v_row_bytes_ = row_bytes(type, v_dim);
  const size_t layer_positions = static_cast<size_t>(n_layer) * n_ctx;
  try {
    k_.assign(layer_positions * k_row_bytes_, 0);
    v_.assign(layer_positions * v_row_bytes_, 0);
  } catch (const std::bad_alloc&) {
    const size_t mib = kv_cache_bytes(n_layer, n_ctx, k_dim, v_dim, type) >> 20;
    throw std::runtime_error("cannot allocate the KV cache: " + std::to_string(n_layer) + " layers x " +
                             std::to_string(n_ctx) + " positions in " + std::string(kv_type_name(type)) + " = " +
                             std::to_string(mib) + " MiB (try a smaller context or --kv-type q8_0)");
  }
}

void KvCache::store(int layer, int pos, const float* k, const float* v) {
  uint8_t* kd = k_.data() + (static_cast<size_t>(layer) * n_ctx_ + pos) * k_row_bytes_;
  if (type_ == GgmlType::F16) {
    uint16_t* kh = reinterpret_cast<uint16_t*>(kd);
    for (int i = 0; i < k_dim_; ++i) kh[i] = fp32_to_fp16(k[i]);
    uint16_t* vd = reinterpret_cast<uint16_t*>(v_.data()) + static_cast<size_t>(layer) * v_dim_ * n_ctx_ + pos;
    for (int i = 0; i < v_dim_; ++i) vd[static_cast<size_t>(i) * n_ctx_] = fp32_to_fp16(v[i]);
    return;
  }
  const TypeKernels& q = kernels().of(type_);
  q.quantize_row(k, kd, k_dim_);
  q.quantize_row(v, v_.data() + (static_cast<size_t>(layer) * n_ctx_ + pos) * v_row_bytes_, v_dim_);
}

void KvCache::move_positions(int from, int to, int count) {
  if (count <= 0 || from == to) return;
  for (int l = 0; l < n_layer_; ++l) {
    std::memmove(k_row_mut(l, to), k_row(l, from), static_cast<size_t>(count) * k_row_bytes_);
    if (v_transposed()) {
      for (int d = 0; d < v_dim_; ++d) {
        uint16_t* row = const_cast<uint16_t*>(v_row(l, d));
        std::memmove(row + to, row + from, static_cast<size_t>(count) * sizeof(uint16_t));
      }
    } else {
      uint8_t* base = v_.data() + static_cast<size_t>(l) * n_ctx_ * v_row_bytes_;
      std::memmove(base + static_cast<size_t>(to) * v_row_bytes_, base + static_cast<size_t>(from) * v_row_bytes_,
                   static_cast<size_t>(count) * v_row_bytes_);
    }
  }
}

size_t KvCache::position_bytes() const { return static_cast<size_t>(n_layer_) * (k_row_bytes_ + v_row_bytes_); }

void KvCache::save_positions(int n_pos, std::vector<uint8_t>& out) const {
  for (int l = 0; l < n_layer_; ++l) {
    const uint8_t* k = k_row(l, 0);
    out.insert(out.end(), k, k + static_cast<size_t>(n_pos) * k_row_bytes_);
    if (v_transposed()) {
      for (int d = 0; d < v_dim_; ++d) {
        const uint8_t* row = reinterpret_cast<const uint8_t*>(v_row(l, d));
        out.insert(out.end(), row, row + static_cast<size_t>(n_pos) * sizeof(uint16_t));
      }
    } else {
      const uint8_t* v = v_pos(l, 0);
      out.insert(out.end(), v, v + static_cast<size_t>(n_pos) * v_row_bytes_);
    }
  }
}

bool KvCache::load_positions(int n_pos, const uint8_t* bytes, size_t n_bytes) {
  if (n_pos < 0 || n_pos > n_ctx_ || n_bytes != static_cast<size_t>(n_pos) * position_bytes()) return false;
  for (int l = 0; l < n_layer_; ++l) {
    const size_t k_n = static_cast<size_t>(n_pos) * k_row_bytes_;
    std::memcpy(k_.data() + static_cast<size_t>(l) * n_ctx_ * k_row_bytes_, bytes, k_n);
    bytes += k_n;
    if (v_transposed()) {
      for (int d = 0; d < v_dim_; ++d) {
        uint8_t* row = reinterpret_cast<uint8_t*>(const_cast<uint16_t*>(v_row(l, d)));
        std::memcpy(row, bytes, static_cast<size_t>(n_pos) * sizeof(uint16_t));
        bytes += static_cast<size_t>(n_pos) * sizeof(uint16_t);
      }
    } else {
      const size_t v_n = static_cast<size_t>(n_pos) * v_row_bytes_;
      std::memcpy(v_.data() + static_cast<size_t>(l) * n_ctx_ * v_row_bytes_, bytes, v_n);
      bytes += v_n;
    }
  }
  return true;
}

}  // namespace runnel
