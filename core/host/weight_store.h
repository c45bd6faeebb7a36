// Where a model's tensor bytes live. The model code asks for spans by tensor and
// brackets each layer with acquire/release; whether bytes are mmap'd, in wasm
// memory or streamed from a file is the store's business alone.
#pragma once

#include <climits>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/gguf/gguf.h"

namespace runnel {

// The layer index of a tensor named "blk.N.*", or -1 (tensors outside layers).
int layer_of_tensor(std::string_view name);

// An expert stack: a 3-D "*_exps.weight" tensor [n_in, n_out, n_expert], one matrix an
// expert, each expert's rows contiguous.
bool is_expert_stack(const GgufTensorInfo& tensor);

// Expert caches read whole blocks of this size (O_DIRECT's alignment) around an expert.
constexpr uint64_t kExpertReadAlign = 4096;

// What a store that streams experts (reads them into a cache as the router picks them)
// has done so far; all zero where experts stay resident.
struct ExpertCacheStats {
  uint64_t hits = 0;        // picked experts found in the cache
  uint64_t misses = 0;      // picked experts read from storage
  uint64_t bytes_read = 0;  // by those reads
  int n_slots = 0;          // experts the cache holds at once
  int n_experts = 0;        // experts of all layers

  double hit_rate() const {
    return hits + misses > 0 ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0;
  }
};

class WeightStore {
 public:
  virtual ~WeightStore() = default;

  // Parsed headers of every file of the model (metadata + tensor table).
  virtual const GgufModel& model() const = 0;

  // The bytes of a tensor in GGUF block layout. Valid until release() of its layer
  // (for tensors outside layers: for the life of the store).
  virtual std::span<const uint8_t> tensor_bytes(const GgufTensorInfo& tensor) = 0;

  // Layer residency hints; layer -1 means tensors outside blk.N.
  virtual void acquire(int /*layer*/) {}
  virtual void release(int /*layer*/) {}
  virtual void prefetch(int /*layer*/) {}

  // Writable room of n_bytes for a rewritten copy of a tensor (the kernels'
  // row-interleaved layouts, about the tensor's size) that lives as long as the store; nullptr where the store
  // keeps this tensor's bytes in place (streamed layers, memory it does not own), so a
  // copy would only add memory. Once the copy is written the caller calls drop(): the
  // tensor's original bytes are not asked for again and may leave memory.
  virtual uint8_t* copy_space(const GgufTensorInfo& /*tensor*/, size_t /*n_bytes*/) { return nullptr; }
  virtual void drop(const GgufTensorInfo& /*tensor*/) {}

  // Expert streaming: where experts_streamed(layer), the layer's expert stacks are not in
  // memory; fetch_experts() brings experts ids of that layer in (reading the missing
  // ones) and pins them until unpin_experts(layer); expert_bytes() of a pinned expert is
  // valid until then. At most expert_pin_capacity() experts are pinned at once.
  virtual bool experts_streamed(int /*layer*/) const { return false; }
  virtual void fetch_experts(int /*layer*/, std::span<const int> /*ids*/) {}
  // fetch_experts() in two halves, so that the cached experts can be computed while the
  // missing ones are read: pins `ids` and starts their reads, moves the experts whose
  // bytes are usable now to the front of `ids` (in their order) and returns how many;
  // the rest are usable after fetch_experts_wait(layer), which throws what a read threw.
  // By default the reads are done at once: all are ready.
  virtual int fetch_experts_begin(int layer, std::span<int> ids) {
    fetch_experts(layer, ids);
    return static_cast<int>(ids.size());
  }
  virtual void fetch_experts_wait(int /*layer*/) {}
  virtual void unpin_experts(int /*layer*/) {}
  virtual int expert_pin_capacity() const { return INT_MAX; }
  // Expert e's matrix of an expert stack, in the file's block layout.
  virtual std::span<const uint8_t> expert_bytes(const GgufTensorInfo& stack, int e) {
    const size_t n_bytes = stack.n_bytes / static_cast<size_t>(stack.dims[2]);
    return tensor_bytes(stack).subspan(static_cast<size_t>(e) * n_bytes, n_bytes);
  }
  virtual ExpertCacheStats expert_stats() const { return {}; }
};

// A store over bytes already in memory (tests, wasm with the model in linear memory).
// Does not own the bytes; one span per file of the model.
class SpanStore : public WeightStore {
 public:
  SpanStore(GgufModel model, std::vector<std::span<const uint8_t>> files)
      : model_(std::move(model)), files_(std::move(files)) {}
  const GgufModel& model() const override { return model_; }
  std::span<const uint8_t> tensor_bytes(const GgufTensorInfo& t) override {
    const GgufFile& f = model_.files[t.file_index];
    return files_[t.file_index].subspan(f.data_offset() + t.offset, t.n_bytes);
  }

 private:
  GgufModel model_;
  std::vector<std::span<const uint8_t>> files_;
};

}  // namespace runnel
