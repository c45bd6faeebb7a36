// MmapStore: the native WeightStore. Every file of the model (split parts found by
// name, see split_paths) is mapped read-only and private; headers are parsed over the
// mapping and tensor_bytes() returns spans straight into it, so the page cache is
// the only copy of the weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/host/weight_store.h"
#include "native/expert_cache.h"

namespace runnel {

class MmapStore : public WeightStore {
 public:
  // Opens `path` (the first part of a split model brings in the others). Throws
  // GgufError naming the path: missing / unreadable files, directories, empty
  // files, non-GGUF files, and everything GgufFile::parse / GgufModel::join refuse.
  static std::unique_ptr<MmapStore> open(const std::string& path);

  ~MmapStore() override;
  MmapStore(const MmapStore&) = delete;
  MmapStore& operator=(const MmapStore&) = delete;

  const GgufModel& model() const override { return model_; }
  std::span<const uint8_t> tensor_bytes(const GgufTensorInfo& tensor) override;

  // Asks the kernel to read a streamed layer's tensors ahead (MADV_WILLNEED); a
  // no-op for layers that stay resident.
  void prefetch(int layer) override;

  // Streaming residency, for weights larger than the memory budget
  // (MemoryPlan::layer_budget: what the layers may take in all): when the layers do
  // not fit, the first ones that fit next to two streamed layers (the one computing,
  // the next read ahead with MADV_WILLNEED) stay resident; every later layer is
  // released after use (its pages dropped from the mapping and the page cache).
  // Tensors outside layers always stay. Returns how many layers are streamed.
  int set_streaming(uint64_t layer_budget_bytes);
  bool streaming() const { return !streamed_.empty(); }
  // Whether set_streaming() streams this layer (its tensors are never copied).
  bool layer_streamed(int layer) const;
  // Expert streaming, for mixture-of-experts models whose expert stacks do not fit the
  // budget but everything else does: every expert stack is read through an ExpertCache
  // of `cache_bytes` (the rest stays resident). min_slots: the fewest experts the
  // forward pass must hold at once. Returns the cache's slots.
  int set_expert_streaming(uint64_t cache_bytes, int min_slots);
  // Whether this tensor's bytes are read as it runs (a streamed layer's or an expert
  // stack through the cache): such tensors are never copied.
  bool tensor_streamed(const GgufTensorInfo& tensor) const;
  bool experts_streamed(int layer) const override;
  void fetch_experts(int layer, std::span<const int> ids) override;
  int fetch_experts_begin(int layer, std::span<int> ids) override;
  void fetch_experts_wait(int layer) override;
  void unpin_experts(int layer) override;
  int expert_pin_capacity() const override;
  std::span<const uint8_t> expert_bytes(const GgufTensorInfo& stack, int e) override;
  ExpertCacheStats expert_stats() const override;
  void acquire(int layer) override;
  void release(int layer) override;
  // Copies of tensors of layers that stay resident live in anonymous memory (transparent
  // huge pages asked for: the copies are read whole every token), one after another in
  // 2 MiB-aligned arenas so that no 2 MiB page straddles two mappings (a page at a
  // mapping's edge stays 4 KiB); drop() then releases the tensor's pages of the mapping.
  uint8_t* copy_space(const GgufTensorInfo& tensor, size_t n_bytes) override;
  void drop(const GgufTensorInfo& tensor) override;
  // Bytes held in copies (resident in place of their tensors' mapped pages).
  uint64_t copy_bytes() const;
  // Load progress: fn gets the bytes of the tensors copied so far (read from the file
  // and rewritten while the model loads), from drop(), on the loading thread; nullptr
  // stops the calls.
  void on_load_progress(std::function<void(uint64_t bytes_copied)> fn) {
    on_load_progress_ = std::move(fn);
  }

  // The whole mapping of file `file_index` of the model (diagnostics and tests).
  std::span<const uint8_t> mapped_bytes(size_t file_index) const;

 private:
  struct Mapping {
    void* addr = nullptr;
    size_t n_bytes = 0;
    int fd = -1;  // kept open for posix_fadvise when streaming
    std::string path;
  };
  struct Range {
    uint32_t file_index;
    uint64_t start;  // absolute offset in the file
    uint64_t n_bytes;
  };

  MmapStore() = default;
  void map_file(const std::string& path);
  void index_layers();

  std::vector<Mapping> maps_;  // one per file, in model order
  GgufModel model_;
  std::map<int, std::vector<Range>> layer_ranges_;
  std::vector<bool> streamed_;  // per layer: released after use
  std::unique_ptr<ExpertCache> experts_;
  std::map<const GgufTensorInfo*, size_t> expert_stack_;  // stack -> index in experts_
  std::vector<int> direct_fds_;                          // O_DIRECT descriptors for experts_
  struct Arena {
    uint8_t* base;
    size_t size;  // reserved; pages are committed as copies are written
    size_t used;
  };
  std::vector<Arena> arenas_;  // anonymous mappings copy_space hands out
  uint64_t copied_bytes_ = 0;  // what copy_space handed out
  uint64_t dropped_bytes_ = 0;                    // tensors copied and dropped
  std::function<void(uint64_t)> on_load_progress_;
};

}  // namespace runnel
