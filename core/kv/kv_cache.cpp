#include "core/kv/kv_cache.h"

#include <new>
#include <stdexcept>
#include <string>

#include "kernels/fp16.h"

namespace runnel {

KvCache::KvCache(int n_layer, int n_ctx, int k_dim, int v_dim)
    : n_layer_(n_layer), n_ctx_(n_ctx), k_dim_(k_dim), v_dim_(v_dim) {
  if (n_layer <= 0 || n_ctx <= 0 || k_dim <= 0 || v_dim <= 0) {
    throw std::invalid_argument("kv cache: sizes must be positive, got n_layer " +
                                std::to_string(n_layer) + ", n_ctx " + std::to_string(n_ctx) +
                                ", k_dim " + std::to_string(k_dim) + ", v_dim " +
                                std::to_string(v_dim));
  }
  const size_t layer_positions = static_cast<size_t>(n_layer) * n_ctx;
  try {
    k_.assign(layer_positions * k_dim, 0);
    v_.assign(layer_positions * v_dim, 0);
  } catch (const std::bad_alloc&) {
    const size_t mib = layer_positions * (k_dim + v_dim) * sizeof(uint16_t) >> 20;
    throw std::runtime_error("cannot allocate the KV cache: " + std::to_string(n_layer) +
                             " layers x " + std::to_string(n_ctx) + " positions x " +
                             std::to_string(k_dim + v_dim) + " halves = " + std::to_string(mib) +
                             " MiB (try a smaller context)");
  }
}

void KvCache::store(int layer, int pos, const float* k, const float* v) {
  uint16_t* kd = k_.data() + (static_cast<size_t>(layer) * n_ctx_ + pos) * k_dim_;
  for (int i = 0; i < k_dim_; ++i) kd[i] = fp32_to_fp16(k[i]);
  uint16_t* vd = v_.data() + static_cast<size_t>(layer) * v_dim_ * n_ctx_ + pos;
  for (int i = 0; i < v_dim_; ++i) vd[static_cast<size_t>(i) * n_ctx_] = fp32_to_fp16(v[i]);
}

}  // namespace runnel
