// JsStore: the wasm WeightStore. Tensor bytes are read from JsFiles (wasm/src/js_file.h)
// into wasm memory.
//  - Whole (the model fits the budget): every tensor is read at load into its own
//    allocation and kept. The model repacks most matrices into the kernels' x8 layout
//    (copy_space); drop() then frees the original, so a load peaks at the model plus one
//    matrix, not twice the model.
//  - Streaming: tensors outside layers are held as in whole mode; each layer's tensors
//    share one arena. The first layers that fit `layer_budget_bytes` are pinned; the others
//    live in an LRU of layer arenas bounded by what is left, and acquire() reads a
//    missing layer (evicting the least recently used ones not in use). So a model
//    larger than the budget, or than wasm's 4 GiB, runs with a few layers resident.
//    Bytes read are counted for the API's per-token figure.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/host/expert_slots.h"
#include "core/host/weight_store.h"
#include "wasm/src/js_file.h"

namespace runnel::wasm {

class JsStore : public WeightStore {
 public:
  // Parses every file's header (throws GgufError for bad files); reads no weights.
  static std::unique_ptr<JsStore> open(std::vector<JsFile> files);
  // Reads the weights. layer_budget_bytes (MemoryPlan::layer_budget): 0 = load whole,
  // else stream layers within that many bytes (at least the largest layer's size is
  // used, so one always fits).
  void load_weights(uint64_t layer_budget_bytes);
  // Reads the weights but the expert stacks, whose experts are read as the router picks
  // them into an expert cache of cache_bytes (MemoryPlan::expert_cache_bytes; at least
  // min_slots experts). Throws what ExpertSlots throws.
  void load_weights_streaming_experts(uint64_t cache_bytes, int min_slots);
  // Called with bytes_read() after each tensor read (load progress).
  void on_load_progress(std::function<void(uint64_t)> fn) { on_load_progress_ = std::move(fn); }

  const GgufModel& model() const override { return model_; }
  std::span<const uint8_t> tensor_bytes(const GgufTensorInfo& tensor) override;
  void acquire(int layer) override;
  void release(int layer) override;
  uint8_t* copy_space(const GgufTensorInfo& tensor, size_t n_bytes) override;
  void drop(const GgufTensorInfo& tensor) override;

  bool experts_streamed(int layer) const override;
  void fetch_experts(int layer, std::span<const int> ids) override;
  void unpin_experts(int layer) override;
  int expert_pin_capacity() const override;
  std::span<const uint8_t> expert_bytes(const GgufTensorInfo& stack, int e) override;
  ExpertCacheStats expert_stats() const override;

  bool streaming() const { return streaming_ || experts_ != nullptr; }
  uint64_t resident_bytes() const { return resident_bytes_; }  // weights held now (copies included)
  uint64_t bytes_read() const { return bytes_read_; }           // since open
  int n_layers() const { return static_cast<int>(layers_.size()); }

 private:
  struct Arena {
    std::unique_ptr<uint8_t[]> bytes;  // one block for all tensors (streamed layers)
    bool loaded = false;
    uint64_t n_bytes = 0;  // what the arena needs (its tensors, aligned)
    std::vector<size_t> tensors;  // indexes into model_.tensors
    int in_use = 0;               // acquire() minus release()
    bool pinned = false;          // streaming: read once, never evicted
  };
  struct Placement {
    int arena = 0;  // 0 = outside layers, l + 1 = layer l
    uint64_t offset = 0;
    std::unique_ptr<uint8_t[]> own;  // the tensor's own allocation (per-tensor loading)
    bool dropped = false;            // repacked: its bytes are gone (drop())
  };

  JsStore() = default;
  Arena& arena_of(int layer) { return layer < 0 ? non_layer_ : layers_[static_cast<size_t>(layer)]; }
  size_t index_of(const GgufTensorInfo& tensor) const;
  // Whole mode and tensors outside layers: one allocation per tensor (drop() frees one).
  bool per_tensor(const Arena& a) const { return !streaming_ || &a == &non_layer_; }
  std::unique_ptr<uint8_t[]> allocate(uint64_t n_bytes, const std::string& what) const;
  void load(Arena& a);
  void evict_for(uint64_t n_bytes);

  // Whether tensor i is an expert stack read through experts_.
  bool through_cache(size_t i) const { return experts_ && stack_index_[i] >= 0; }

  std::vector<JsFile> files_;
  std::unique_ptr<ExpertSlots> experts_;
  std::vector<int> stack_index_;  // per tensor: its index in ExpertSlots::stacks_of, or -1
  GgufModel model_;
  std::vector<Placement> placement_;  // per tensor
  Arena non_layer_;
  std::vector<Arena> layers_;
  bool streaming_ = false;
  uint64_t layer_budget_ = 0;
  uint64_t layer_bytes_resident_ = 0;
  std::list<int> lru_;  // loaded layers, least recently used first
  std::vector<std::unique_ptr<uint8_t[]>> copies_;  // copy_space()
  uint64_t resident_bytes_ = 0;
  uint64_t bytes_read_ = 0;
  std::function<void(uint64_t)> on_load_progress_;
};

}  // namespace runnel::wasm
