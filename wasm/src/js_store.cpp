#include "wasm/src/js_store.h"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>

#include "core/runtime/memory_plan.h"

namespace runnel::wasm {
namespace {

constexpr uint64_t kArenaAlign = 64;  // every tensor starts on a cache line

uint64_t align_up(uint64_t n) { return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

}  // namespace

std::unique_ptr<JsStore> JsStore::open(std::vector<JsFile> files) {
  std::unique_ptr<JsStore> s(new JsStore());
  std::vector<GgufFile> parsed;
  for (const JsFile& f : files) parsed.push_back(f.parse_header());
  s->model_ = GgufModel::join(std::move(parsed));
  s->files_ = std::move(files);

  // Place every tensor in its arena.
  int n_layers = 0;
  for (const GgufTensorInfo& t : s->model_.tensors) {
    n_layers = std::max(n_layers, layer_of_tensor(t.name) + 1);
  }
  s->layers_.resize(static_cast<size_t>(n_layers));
  s->placement_.resize(s->model_.tensors.size());
  for (size_t i = 0; i < s->model_.tensors.size(); ++i) {
    const int layer = layer_of_tensor(s->model_.tensors[i].name);
    Arena& a = s->arena_of(layer);
    s->placement_[i].arena = layer + 1;
    s->placement_[i].offset = a.n_bytes;
    a.n_bytes += align_up(s->model_.tensors[i].n_bytes);
    a.tensors.push_back(i);
  }

  return s;
}

void JsStore::load_weights(uint64_t layer_budget_bytes) {
  uint64_t max_layer = 0;
  for (const Arena& a : layers_) max_layer = std::max(max_layer, a.n_bytes);
  uint64_t all_layers = 0;
  for (const Arena& a : layers_) all_layers += a.n_bytes;
  streaming_ = layer_budget_bytes > 0 && layer_budget_bytes < all_layers;
  load(non_layer_);
  if (!streaming_) {
    for (Arena& a : layers_) load(a);
    return;
  }
  // Every forward pass walks the layers in order, which defeats a plain LRU (each
  // layer is evicted just before it is needed again). So the first layers that fit
  // the budget, less room for one streamed layer, are read once and pinned; the rest
  // cycle through the LRU in what is left (at least the largest layer).
  uint64_t pinned = 0;
  for (Arena& a : layers_) {
    if (pinned + a.n_bytes + max_layer > layer_budget_bytes) break;
    load(a);
    a.pinned = true;
    pinned += a.n_bytes;
  }
  layer_budget_ = std::max(layer_budget_bytes - pinned, max_layer);
}

void JsStore::load_weights_streaming_experts(uint64_t cache_bytes, int min_slots) {
  ExpertSlots::Layout layout = ExpertSlots::layout_of(model_);
  stack_index_ = std::move(layout.stack_of_tensor);
  experts_ = std::make_unique<ExpertSlots>(std::move(layout.stacks), layout.n_layers, layout.n_experts, cache_bytes,
                                           min_slots);
  resident_bytes_ += experts_->arena_bytes();
  // Everything else is read whole, a tensor at a time (load() skips the stacks).
  load(non_layer_);
  for (Arena& a : layers_) load(a);
}

bool JsStore::experts_streamed(int /*layer*/) const { return experts_ != nullptr; }

void JsStore::fetch_experts(int layer, std::span<const int> ids) {
  if (!experts_) return;
  for (const ExpertSlots::Read& r : experts_->fetch(layer, ids)) {
    const JsFile& f = files_[r.file_index];
    // the last block may pass the end of the file: read what there is of it
    const uint64_t n = std::min(r.n_bytes, f.size() - std::min(f.size(), r.offset));
    try {
      if (n < r.n_needed) throw GgufError(f.name() + ": the file ends before an expert of layer " + std::to_string(layer));
      f.read(r.offset, r.dst, static_cast<size_t>(n));
    } catch (...) {
      experts_->forget_pinned();
      throw;
    }
    bytes_read_ += r.n_needed;
  }
}

void JsStore::unpin_experts(int layer) {
  if (experts_) experts_->unpin(layer);
}

int JsStore::expert_pin_capacity() const { return experts_ ? experts_->n_slots() : WeightStore::expert_pin_capacity(); }

std::span<const uint8_t> JsStore::expert_bytes(const GgufTensorInfo& stack, int e) {
  const size_t i = index_of(stack);
  if (!through_cache(i)) return WeightStore::expert_bytes(stack, e);
  return experts_->bytes(static_cast<size_t>(stack_index_[i]), e);
}

ExpertCacheStats JsStore::expert_stats() const { return experts_ ? experts_->stats() : ExpertCacheStats{}; }

std::unique_ptr<uint8_t[]> JsStore::allocate(uint64_t n_bytes, const std::string& what) const {
  std::unique_ptr<uint8_t[]> p(new (std::nothrow) uint8_t[std::max<uint64_t>(n_bytes, 1)]);
  if (!p) {
    throw std::runtime_error(
        "out of wasm memory: cannot hold " + format_bytes(n_bytes) + " (" + what + ") next to " +
        format_bytes(resident_bytes_) +
        " of weights already loaded (set a smaller memoryBudget to stream layers)");
  }
  return p;
}

void JsStore::load(Arena& a) {
  if (a.loaded) return;
  if (!per_tensor(a)) a.bytes = allocate(a.n_bytes, "a layer's weights");
  for (const size_t i : a.tensors) {
    if (through_cache(i)) continue;
    const GgufTensorInfo& t = model_.tensors[i];
    Placement& p = placement_[i];
    uint8_t* dst = a.bytes.get() + p.offset;
    if (per_tensor(a)) {
      if (p.dropped) continue;
      p.own = allocate(t.n_bytes, "tensor " + t.name);
      dst = p.own.get();
      resident_bytes_ += t.n_bytes;
    }
    const GgufFile& f = model_.files[t.file_index];
    files_[t.file_index].read(f.data_offset() + t.offset, dst, t.n_bytes);
    bytes_read_ += t.n_bytes;
    if (on_load_progress_) on_load_progress_(bytes_read_);
  }
  if (!per_tensor(a)) resident_bytes_ += a.n_bytes;
  a.loaded = true;
}

size_t JsStore::index_of(const GgufTensorInfo& tensor) const {
  size_t i = static_cast<size_t>(&tensor - model_.tensors.data());
  if (&tensor < model_.tensors.data() || i >= model_.tensors.size()) {
    // Not one of ours by address (a copy): find it by name.
    const GgufTensorInfo* t = model_.find_tensor(tensor.name);
    if (t == nullptr) throw std::invalid_argument("no tensor named " + tensor.name);
    i = static_cast<size_t>(t - model_.tensors.data());
  }
  return i;
}

uint8_t* JsStore::copy_space(const GgufTensorInfo& tensor, size_t n_bytes) {
  const size_t i = index_of(tensor);
  if (through_cache(i)) return nullptr;  // the cache keeps the file's layout
  if (!per_tensor(arena_of(placement_[i].arena - 1)))
    return nullptr;  // streamed: keep the file's layout
  copies_.push_back(allocate(n_bytes, "the repacked " + tensor.name));
  resident_bytes_ += n_bytes;
  return copies_.back().get();
}

void JsStore::drop(const GgufTensorInfo& tensor) {
  Placement& p = placement_[index_of(tensor)];
  if (!p.own) return;
  p.own.reset();
  p.dropped = true;
  resident_bytes_ -= model_.tensors[index_of(tensor)].n_bytes;
}

std::span<const uint8_t> JsStore::tensor_bytes(const GgufTensorInfo& tensor) {
  const size_t i = index_of(tensor);
  const Placement& p = placement_[i];
  if (p.dropped) throw std::logic_error("tensor " + tensor.name + " was dropped after its repack");
  if (through_cache(i)) throw std::logic_error("tensor " + tensor.name + " is read an expert at a time");
  Arena& a = arena_of(p.arena - 1);
  if (!a.loaded) {
    // A layer used outside acquire/release: read it now, through the LRU when streaming.
    if (p.arena > 0 && streaming_) {
      acquire(p.arena - 1);
      release(p.arena - 1);
    } else {
      load(a);
    }
  }
  const uint8_t* base = p.own ? p.own.get() : a.bytes.get() + p.offset;
  return {base, static_cast<size_t>(model_.tensors[i].n_bytes)};
}

void JsStore::evict_for(uint64_t n_bytes) {
  for (auto it = lru_.begin(); it != lru_.end() && layer_bytes_resident_ + n_bytes > layer_budget_;) {
    Arena& a = layers_[static_cast<size_t>(*it)];
    if (a.in_use > 0) {
      ++it;
      continue;
    }
    a.bytes.reset();
    a.loaded = false;
    layer_bytes_resident_ -= a.n_bytes;
    resident_bytes_ -= a.n_bytes;
    it = lru_.erase(it);
  }
}

void JsStore::acquire(int layer) {
  if (layer < 0 || layer >= n_layers()) return;
  Arena& a = layers_[static_cast<size_t>(layer)];
  ++a.in_use;
  if (!streaming_) return;
  if (a.pinned) return;
  lru_.remove(layer);
  if (!a.loaded) {
    evict_for(a.n_bytes);
    load(a);
    layer_bytes_resident_ += a.n_bytes;
  }
  lru_.push_back(layer);
}

void JsStore::release(int layer) {
  if (layer < 0 || layer >= n_layers()) return;
  Arena& a = layers_[static_cast<size_t>(layer)];
  if (a.in_use > 0) --a.in_use;
}

}  // namespace runnel::wasm
