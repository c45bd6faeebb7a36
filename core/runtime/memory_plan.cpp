#include "core/runtime/memory_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "core/kv/kv_cache.h"
#include "core/model/model.h"
#include "core/host/expert_slots.h"
#include "core/host/weight_store.h"
#include "kernels/kernels.h"

namespace runnel {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
// Code, heap, thread stacks, the HTTP server: `runnel run` on a tiny model has an RSS
// of ~9 MiB; the plan keeps a margin.
constexpr uint64_t kFixedOverhead = 16 * kMiB;
// Per vocabulary entry: the token text, its attributes and the lookup tables.
constexpr uint64_t kBytesPerToken = 96;

}  // namespace

uint64_t plan_kv_bytes(const ModelConfig& c, const MemoryPlanOptions& o) {
  return static_cast<uint64_t>(o.n_sessions) *
         kv_cache_bytes(c.n_layer, o.n_ctx, c.kv_dim(), c.v_dim(), o.kv_type, c.kv_windows(), o.n_batch);
}

namespace {

// One ForwardScratch (and its matmul and attention buffers) for batches of b rows.
uint64_t forward_scratch_bytes(const ModelConfig& c, const MemoryPlanOptions& o, int b, bool all_logits,
                               int n_draft, bool float_gemm) {
  // MatmulScratch: rows of at most float32 width, and packed groups of kGemmCols rows at
  // most 1.25 bytes an element for quantized weights, 4 for float weights (f32 groups,
  // float_gemm_pack.h)
  const uint64_t widest = static_cast<uint64_t>(std::max(c.n_embd, c.n_ff));
  const uint64_t pack = float_gemm ? kGemmCols * ((widest + 7) / 8 * 8) * 4 : kGemmCols * widest * 5 / 4;
  const uint64_t matmul = MatmulScratch::bytes(b, widest * 4, pack);
  // AttentionScratch: f16 rows (the F16 dot's format), widened rows counted everywhere
  // (wasm's; < 1 MiB)
  const int head = std::max(c.head_dim, c.head_dim_v);
  const int group = std::max(1, c.n_head / std::max(1, c.n_head_kv));
  const size_t f16_row = 2 * static_cast<size_t>(std::max(o.n_ctx, head));
  const uint64_t attention = AttentionScratch::bytes(o.n_tasks, o.n_ctx, head, group, f16_row, true);
  return ForwardScratch::float_bytes(c, b, all_logits, n_draft) + matmul + attention;
}

}  // namespace

uint64_t plan_scratch_bytes(const ModelConfig& c, const MemoryPlanOptions& o, bool float_gemm) {
  const int b = c.batch_for(o.n_batch, o.n_ctx);  // an embedding model's is its context
  uint64_t bytes = static_cast<uint64_t>(o.n_sessions) *
                   forward_scratch_bytes(c, o, b, o.all_logits, o.n_draft, float_gemm);
  if (o.n_decode_batch > 1 && c.generative()) {
    // DecodeBatch: rows for the sessions and (Model::mixes_runs) a prompt chunk, the
    // sessions' logits and the chunk's last row's
    bytes += Model::mixes_runs(c)
                 ? forward_scratch_bytes(c, o, o.n_decode_batch + o.n_batch, false, o.n_decode_batch, float_gemm)
                 : forward_scratch_bytes(c, o, o.n_decode_batch, true, 0, float_gemm);
  }
  return bytes;
}

namespace {

// Bytes a matrix takes once the selected kernels repack it into their x8 layout
// (Model::repack_weights); most layouts keep the size, Q4_K's grows by 1/36.
uint64_t resident_bytes(const GgufTensorInfo& t) {
  const TypeKernels& k = kernels().of(t.type);
  // matrices and expert stacks ([n_in, n_out, n_expert]: n_expert matrices)
  if (!k.repack_x8 || k.x8_block_bytes == 0 || t.dims.size() < 2 || t.dims.size() > 3 || t.dims[1] % kX8Rows != 0) {
    return t.n_bytes;
  }
  const uint64_t n_groups = static_cast<uint64_t>(t.dims[1] / kX8Rows) * (t.dims.size() == 3 ? t.dims[2] : 1);
  return std::max<uint64_t>(t.n_bytes, x8_group_bytes(k, t.type, t.dims[0]) * n_groups);
}

}  // namespace

MemoryPlan plan_memory(const GgufModel& model, const ModelConfig& c, const MemoryPlanOptions& o) {
  MemoryPlan p;
  std::map<int, uint64_t> layers;
  for (const GgufTensorInfo& t : model.tensors) {
    const uint64_t n_bytes = resident_bytes(t);
    p.weights_bytes += n_bytes;
    const int l = layer_of_tensor(t.name);
    if (l < 0) p.non_layer_bytes += n_bytes;
    else
      layers[l] += t.n_bytes;  // a streamed layer is not repacked
  }
  for (const auto& [l, n] : layers) p.max_layer_bytes = std::max(p.max_layer_bytes, n);
  p.kv_bytes = plan_kv_bytes(c, o);
  // Float matrices (F32 / F16 / BF16, 2-D) with a batched product pack f32 groups.
  bool float_gemm = false;
  for (const GgufTensorInfo& t : model.tensors) {
    const bool is_float =
        t.type == GgmlType::F32 || t.type == GgmlType::F16 || t.type == GgmlType::BF16;
    if (is_float && t.dims.size() == 2 && kernels().of(t.type).gemm != nullptr) float_gemm = true;
  }
  p.scratch_bytes = plan_scratch_bytes(c, o, float_gemm);
  p.overhead_bytes = kFixedOverhead + static_cast<uint64_t>(c.n_vocab) * kBytesPerToken;
  if (c.n_expert > 0) {
    std::map<int, int> experts_of_layer;
    for (const GgufTensorInfo& t : model.tensors) {
      if (!is_expert_stack(t)) continue;
      p.expert_bytes += resident_bytes(t);
      experts_of_layer[layer_of_tensor(t.name)] = static_cast<int>(t.dims[2]);
    }
    for (const auto& [layer, n] : experts_of_layer) p.n_experts += n;
    p.expert_slot_bytes = ExpertSlots::slot_bytes(ExpertSlots::stacks_of(model));
    p.min_expert_slots = p.expert_bytes > 0 ? 2 * c.n_expert_used : 0;
  }
  return p;
}

MemoryPlan::Fit MemoryPlan::fit(uint64_t budget) const {
  if (total_bytes() <= budget) return Fit::Resident;
  if (min_expert_slots > 0 && expert_streaming_bytes() <= budget) return Fit::Experts;
  if (streaming_bytes() <= budget) return Fit::Streaming;
  return Fit::DoesNotFit;
}

uint64_t MemoryPlan::weight_budget(uint64_t budget) const {
  const uint64_t other = kv_bytes + scratch_bytes + overhead_bytes;
  return budget > other ? budget - other : 0;
}

uint64_t MemoryPlan::expert_cache_bytes(uint64_t budget) const {
  // Headroom: the plan's figures are estimates, and a cache that fills the budget to the
  // byte makes the kernel reclaim the resident weights' pages, read again every token.
  const uint64_t rest = total_bytes() - expert_bytes + std::max<uint64_t>(16 * kMiB, budget / 32);
  const uint64_t cache = budget > rest ? budget - rest : 0;
  return std::max(cache, static_cast<uint64_t>(min_expert_slots) * expert_slot_bytes);
}

uint64_t MemoryPlan::layer_budget(uint64_t budget) const {
  const uint64_t weights = weight_budget(budget);
  return weights > non_layer_bytes ? weights - non_layer_bytes : 0;
}

std::string format_bytes(uint64_t n) {
  char buf[32];
  if (n >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(n) / (1ull << 30));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / kMiB);
  return buf;
}

std::string MemoryPlan::describe(uint64_t budget, const std::string& source) const {
  std::string out;
  const auto row = [&](const char* what, uint64_t n, const char* note) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-10s %12s  %s\n", what, format_bytes(n).c_str(), note);
    out += buf;
  };
  out += "memory plan:\n";
  row("weights", weights_bytes, "(mapped from the file)");
  row("  layers", weights_bytes - non_layer_bytes, "");
  row("  other", non_layer_bytes, "(embeddings, output, norms: always resident)");
  if (expert_bytes > 0) row("  experts", expert_bytes, "(in the layers)");
  row("kv cache", kv_bytes, "");
  row("scratch", scratch_bytes, "");
  row("overhead", overhead_bytes, "(tokenizer, code, heap)");
  row("total", total_bytes(), "");
  row("budget", budget, source.c_str());
  switch (fit(budget)) {
    case Fit::Resident: out += "fits: weights stay resident\n"; break;
    case Fit::Experts: {
      const uint64_t cache = expert_cache_bytes(budget);
      const uint64_t slots = expert_slot_bytes > 0 ? cache / expert_slot_bytes : 0;
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "experts streamed: the experts (%s) do not fit; the rest stays resident and a %s cache holds "
                    "%llu of the %d experts (%.0f%%), read from the file as the router picks them\n",
                    format_bytes(expert_bytes).c_str(), format_bytes(cache).c_str(),
                    static_cast<unsigned long long>(std::min<uint64_t>(slots, n_experts)), n_experts,
                    100.0 * static_cast<double>(std::min<uint64_t>(slots, n_experts)) / std::max(1, n_experts));
      out += buf;
      break;
    }
    case Fit::Streaming:
      out += "streaming: the weights do not fit; layers are read from the file as they run (at least " +
             format_bytes(streaming_bytes()) + " needed, " + format_bytes(weight_budget(budget)) +
             " of weights kept resident)\n";
      break;
    case Fit::DoesNotFit:
      out += "does not fit: even streaming needs " + format_bytes(streaming_bytes()) +
             " (embeddings/output + 2 layers + kv + scratch); lower -c, use --kv-type q8_0 or q4_0, or raise "
             "--mem-budget\n";
      break;
  }
  return out;
}

uint64_t parse_byte_size(const std::string& text) {
  const auto bad = [&]() {
    return std::invalid_argument("size '" + text + "' is not a byte count like 2500M, 2.5G or 1073741824");
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) throw bad();
  char* end = nullptr;
  const std::string number = text.substr(0, i);
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) throw bad();
  std::string unit = text.substr(i);
  for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (unit.size() == 3 && unit[1] == 'I' && unit[2] == 'B') unit = unit.substr(0, 1);  // GiB -> G
  if (unit.size() == 2 && unit[1] == 'B') unit = unit.substr(0, 1);                      // GB -> G
  double scale = 1;
  if (unit == "K") scale = 1024.0;
  else if (unit == "M") scale = 1024.0 * 1024;
  else if (unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty() && unit != "B") throw bad();
  const double bytes = value * scale;
  if (bytes < 1 || bytes > 1.8e19) throw bad();
  return static_cast<uint64_t>(bytes);
}

}  // namespace runnel
