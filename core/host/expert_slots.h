// ExpertSlots: the bookkeeping of an expert cache, for mixture-of-experts models whose
// experts do not fit the memory budget: a fixed set of slots, each holding one expert of
// one layer (its matrix of every expert stack of that layer: gate, up, down, in the
// file's block layout), and which expert goes where. The stores do the reading: native
// MmapStore through ExpertCache (O_DIRECT, parallel), the wasm JsStore from the OPFS
// file. fetch() says what to read; bytes() finds a pinned expert's matrix.
//
// Eviction is frequency-aware: every (layer, expert) keeps a use count that halves every
// kHalfLifeTokens tokens. A missed expert replaces the cached one with the lowest count
// only if its own count is higher; otherwise it goes to one of a few transit slots and
// the cache keeps what it has. So a hot expert survives a burst of one-off picks, and a
// token's experts that do not all fit do not evict each other in turn (plain LRU would
// then never hit: each token walks the same cycle of layers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/host/weight_store.h"

namespace runnel {

class ExpertSlots {
 public:
  // One expert stack of a layer: expert e's bytes are [offset + e * expert_bytes, +
  // expert_bytes) of file `file_index` (offset absolute in the file).
  struct Stack {
    int layer = 0;
    uint32_t file_index = 0;
    uint64_t offset = 0;
    uint64_t expert_bytes = 0;
  };
  // A read fetch() asks for: the file's bytes [offset, + n_bytes), whole
  // kExpertReadAlign blocks, into dst (aligned the same). The expert's own bytes are
  // [expert_offset, offset + n_needed); the last block may run past the end of the file.
  struct Read {
    int expert;  // whose bytes these are
    uint32_t file_index;
    uint64_t offset;
    uint64_t n_bytes;
    uint64_t n_needed;
    uint64_t expert_offset;
    uint8_t* dst;
  };

  // Slots: as many as `budget_bytes` holds (slot_bytes(stacks) each), at most one per
  // expert of every layer. Throws std::runtime_error when fewer than min_slots fit, and
  // when the memory cannot be had.
  ExpertSlots(std::vector<Stack> stacks, int n_layers, int n_experts, uint64_t budget_bytes, int min_slots);
  ~ExpertSlots();
  ExpertSlots(const ExpertSlots&) = delete;
  ExpertSlots& operator=(const ExpertSlots&) = delete;

  // The stacks of every expert stack tensor of `model` (3-D *_exps.weight), in tensor order.
  static std::vector<Stack> stacks_of(const GgufModel& model);
  // What a store needs to build its cache: the stacks, each tensor's index among them
  // (-1: not a stack), and the layer and expert counts the slots are sized by.
  struct Layout {
    std::vector<Stack> stacks;
    std::vector<int> stack_of_tensor;  // per model.tensors entry
    int n_layers = 0;
    int n_experts = 0;
  };
  static Layout layout_of(const GgufModel& model);
  // Bytes of one slot: the largest layer's experts with room to align every read.
  static uint64_t slot_bytes(const std::vector<Stack>& stacks);

  // Pins experts `ids` of `layer`, placing the missing ones in slots; returns the reads
  // that bring them in (valid until the next fetch), which the caller does before using
  // them. Throws std::logic_error when more experts would be pinned than there are slots.
  std::span<const Read> fetch(int layer, std::span<const int> ids);
  // After a failed read: the slots pinned now hold nothing.
  void forget_pinned();
  void unpin(int layer);
  // Expert e of stack index `stack` (into the constructor's stacks), pinned by fetch().
  std::span<const uint8_t> bytes(size_t stack, int e) const;

  int n_slots() const { return static_cast<int>(slots_.size()); }
  uint64_t arena_bytes() const { return arena_bytes_; }
  ExpertCacheStats stats() const;

  // Half-life of the use counts, in tokens (passes over all layers).
  static constexpr double kHalfLifeTokens = 64.0;

 private:
  struct Slot {
    int layer = -1;  // -1: empty
    int expert = -1;
    int pins = 0;
    uint8_t* base = nullptr;
    bool transit = false;  // holds misses that were not admitted to the cache
  };
  struct Use {
    float count = 0.0f;  // decayed to `tick`
    uint64_t tick = 0;
    int slot = -1;  // where it is cached, or -1
  };
  struct FreeAligned {
    void operator()(uint8_t* p) const;
  };

  double decayed(const Use& u) const;
  // The unpinned slot for a missed expert whose count was `score`, or -1.
  int pick_slot(double score) const;
  Use& use_of(int layer, int e) { return uses_[static_cast<size_t>(layer) * n_experts_ + e]; }

  std::vector<Stack> stacks_;
  std::vector<std::vector<size_t>> layer_stacks_;  // per layer: indexes into stacks_
  std::vector<std::vector<uint64_t>> stack_at_;    // per layer: each stack's offset in a slot
  int n_layers_ = 0;
  int n_experts_ = 0;
  uint64_t slot_bytes_ = 0;
  std::vector<Slot> slots_;
  std::vector<Use> uses_;  // [layer * n_experts + expert]
  uint64_t tick_ = 0;      // fetch() calls so far
  std::unique_ptr<uint8_t, FreeAligned> arena_;
  uint64_t arena_bytes_ = 0;
  std::vector<Read> reads_;
  uint64_t hits_ = 0, misses_ = 0, bytes_read_ = 0;
};

}  // namespace runnel
