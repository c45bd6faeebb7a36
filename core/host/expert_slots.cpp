#include "core/host/expert_slots.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace runnel {
namespace {

uint64_t align_down(uint64_t n) { return n / kExpertReadAlign * kExpertReadAlign; }
uint64_t align_up(uint64_t n) { return (n + kExpertReadAlign - 1) / kExpertReadAlign * kExpertReadAlign; }
// Room for an expert's bytes read as whole aligned blocks, wherever it starts.
uint64_t read_room(uint64_t n_bytes) { return align_up(n_bytes) + kExpertReadAlign; }

}  // namespace

void ExpertSlots::FreeAligned::operator()(uint8_t* p) const { std::free(p); }

std::vector<ExpertSlots::Stack> ExpertSlots::stacks_of(const GgufModel& model) {
  std::vector<Stack> stacks;
  for (const GgufTensorInfo& t : model.tensors) {
    const int layer = layer_of_tensor(t.name);
    if (!is_expert_stack(t) || layer < 0) continue;
    stacks.push_back(Stack{layer, t.file_index, model.files[t.file_index].data_offset() + t.offset,
                           t.n_bytes / static_cast<uint64_t>(t.dims[2])});
  }
  return stacks;
}

ExpertSlots::Layout ExpertSlots::layout_of(const GgufModel& model) {
  Layout out;
  out.stacks = stacks_of(model);
  out.stack_of_tensor.assign(model.tensors.size(), -1);
  int index = 0;  // stacks_of's order
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const GgufTensorInfo& t = model.tensors[i];
    const int layer = layer_of_tensor(t.name);
    if (!is_expert_stack(t) || layer < 0) continue;
    out.n_layers = std::max(out.n_layers, layer + 1);
    out.n_experts = std::max(out.n_experts, static_cast<int>(t.dims[2]));
    out.stack_of_tensor[i] = index++;
  }
  return out;
}

uint64_t ExpertSlots::slot_bytes(const std::vector<Stack>& stacks) {
  std::vector<uint64_t> per_layer;
  for (const Stack& s : stacks) {
    if (static_cast<size_t>(s.layer) >= per_layer.size()) per_layer.resize(s.layer + 1, 0);
    per_layer[s.layer] += read_room(s.expert_bytes);
  }
  return per_layer.empty() ? 0 : *std::max_element(per_layer.begin(), per_layer.end());
}

ExpertSlots::ExpertSlots(std::vector<Stack> stacks, int n_layers, int n_experts, uint64_t budget_bytes,
                         int min_slots)
    : stacks_(std::move(stacks)), n_layers_(n_layers), n_experts_(n_experts) {
  layer_stacks_.resize(n_layers);
  stack_at_.resize(n_layers);
  for (size_t i = 0; i < stacks_.size(); ++i) {
    const int l = stacks_[i].layer;
    if (l < 0 || l >= n_layers) throw std::logic_error("expert slots: a stack of layer " + std::to_string(l));
    uint64_t at = 0;
    for (const size_t j : layer_stacks_[l]) at += read_room(stacks_[j].expert_bytes);
    stack_at_[l].push_back(at);
    layer_stacks_[l].push_back(i);
  }
  slot_bytes_ = slot_bytes(stacks_);
  const uint64_t all = static_cast<uint64_t>(n_layers) * static_cast<uint64_t>(n_experts);
  const uint64_t n_slots = slot_bytes_ > 0 ? std::min(all, budget_bytes / slot_bytes_) : 0;
  if (n_slots < static_cast<uint64_t>(std::max(1, min_slots))) {
    throw std::runtime_error("expert cache: " + std::to_string(budget_bytes >> 20) + " MiB holds " +
                             std::to_string(n_slots) + " experts of " + std::to_string(slot_bytes_ >> 10) +
                             " KiB; at least " + std::to_string(min_slots) + " are needed");
  }
  arena_bytes_ = n_slots * slot_bytes_;  // a multiple of kExpertReadAlign, as aligned_alloc wants
  arena_.reset(static_cast<uint8_t*>(std::aligned_alloc(kExpertReadAlign, static_cast<size_t>(arena_bytes_))));
  if (!arena_) {
    throw std::runtime_error("out of memory: cannot allocate " + std::to_string(arena_bytes_ >> 20) +
                             " MiB for the expert cache");
  }
  slots_.resize(static_cast<size_t>(n_slots));
  // Transit slots: enough for a token's misses of one layer, at most half the cache.
  const size_t n_transit = std::min<size_t>(static_cast<size_t>(std::max(0, min_slots)), slots_.size() / 2);
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].base = arena_.get() + i * slot_bytes_;
    slots_[i].transit = i < n_transit;
  }
  uses_.resize(static_cast<size_t>(all));
}

ExpertSlots::~ExpertSlots() = default;

double ExpertSlots::decayed(const Use& u) const {
  const double half_life = kHalfLifeTokens * std::max(1, n_layers_);
  return u.count * std::exp2(-static_cast<double>(tick_ - u.tick) / half_life);
}

int ExpertSlots::pick_slot(double score) const {
  int victim = -1, transit = -1;
  double victim_score = 0.0, transit_score = 0.0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.pins > 0) continue;
    if (s.layer < 0 && !s.transit) return static_cast<int>(i);  // room in the cache
    const double held = s.layer < 0 ? -1.0 : decayed(uses_[static_cast<size_t>(s.layer) * n_experts_ + s.expert]);
    int& best = s.transit ? transit : victim;
    double& best_score = s.transit ? transit_score : victim_score;
    if (best < 0 || held < best_score) {
      best = static_cast<int>(i);
      best_score = held;
    }
  }
  if (victim >= 0 && (score > victim_score || transit < 0)) return victim;
  return transit;
}

std::span<const ExpertSlots::Read> ExpertSlots::fetch(int layer, std::span<const int> ids) {
  if (ids.size() > slots_.size()) {
    throw std::logic_error("expert cache: " + std::to_string(ids.size()) + " experts pinned at once, " +
                           std::to_string(slots_.size()) + " slots");
  }
  ++tick_;
  reads_.clear();
  for (const int e : ids) {
    Use& u = use_of(layer, e);
    const double score = decayed(u);  // before this use: compared with others' past uses
    u.count = static_cast<float>(score + 1.0);
    u.tick = tick_;
    if (u.slot >= 0) {
      ++hits_;
      ++slots_[u.slot].pins;
      continue;
    }
    const int at = pick_slot(score);
    if (at < 0) {
      throw std::logic_error("expert cache: " + std::to_string(ids.size()) + " experts pinned at once, " +
                             std::to_string(slots_.size()) + " slots");
    }
    Slot& s = slots_[at];
    if (s.layer >= 0) use_of(s.layer, s.expert).slot = -1;
    s.layer = layer;
    s.expert = e;
    s.pins = 1;
    u.slot = at;
    ++misses_;
    for (size_t j = 0; j < layer_stacks_[layer].size(); ++j) {
      const Stack& st = stacks_[layer_stacks_[layer][j]];
      const uint64_t start = st.offset + static_cast<uint64_t>(e) * st.expert_bytes;
      const uint64_t begin = align_down(start);
      reads_.push_back(Read{e, st.file_index, begin, align_up(start + st.expert_bytes) - begin,
                            start + st.expert_bytes - begin, start, s.base + stack_at_[layer][j]});
      bytes_read_ += st.expert_bytes;
    }
  }
  return reads_;
}

void ExpertSlots::forget_pinned() {
  for (Slot& s : slots_) {
    if (s.pins == 0) continue;
    if (s.layer >= 0) use_of(s.layer, s.expert).slot = -1;
    s.layer = s.expert = -1;
    s.pins = 0;
  }
}

void ExpertSlots::unpin(int layer) {
  for (Slot& s : slots_) {
    if (s.layer == layer) s.pins = 0;
  }
}

std::span<const uint8_t> ExpertSlots::bytes(size_t stack, int e) const {
  const Stack& st = stacks_.at(stack);
  const int slot = uses_[static_cast<size_t>(st.layer) * n_experts_ + e].slot;
  if (slot < 0 || slots_[slot].pins == 0) {
    throw std::logic_error("expert cache: expert " + std::to_string(e) + " of layer " + std::to_string(st.layer) +
                           " used without fetch()");
  }
  const std::vector<size_t>& of_layer = layer_stacks_[st.layer];
  const size_t j = static_cast<size_t>(std::find(of_layer.begin(), of_layer.end(), stack) - of_layer.begin());
  const uint64_t start = st.offset + static_cast<uint64_t>(e) * st.expert_bytes;
  return {slots_[slot].base + stack_at_[st.layer][j] + (start - align_down(start)),
          static_cast<size_t>(st.expert_bytes)};
}

ExpertCacheStats ExpertSlots::stats() const {
  ExpertCacheStats s;
  s.hits = hits_;
  s.misses = misses_;
  s.bytes_read = bytes_read_;
  s.n_slots = n_slots();
  s.n_experts = n_layers_ * n_experts_;
  return s;
}

}  // namespace runnel
