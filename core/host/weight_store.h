// Where a model's tensor bytes live. The model code asks for spans by tensor and
// brackets each layer with acquire/release; whether bytes are mmap'd, in wasm
// memory or streamed from a file is the store's business alone.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/gguf/gguf.h"

namespace runnel {

// The layer index of a tensor named "blk.N.*", or -1 (tensors outside layers).
int layer_of_tensor(std::string_view name);

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
