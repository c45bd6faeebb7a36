// The memory plan: what a model + options will take, computed from the GGUF header
// before anything is loaded, and compared with a budget. `runnel run/serve --dry-run`
// prints it; a plan that does not fit fails before loading, with the numbers.
//
//   weights  = every tensor's bytes (mapped from the file; page cache)
//   kv       = n_sessions * n_layer * n_ctx * (K row + V row) in the KV type
//   scratch  = the forward pass's buffers (ForwardScratch), per session, plus one for
//              the sessions decoded together (DecodeBatch) where there are several
//   overhead = tokenizer tables + a fixed allowance for code, heap and stacks
// Streaming (weights larger than what is left of the budget) needs room for the
// tensors outside layers (kept resident) plus two layers (the current and the next).
// A mixture-of-experts model streams experts first: everything but the expert stacks
// stays resident, and what the budget has left holds an expert cache (at least
// 2 * n_expert_used experts); only when even that does not fit are whole layers streamed.
#pragma once

#include <cstdint>
#include <string>

#include "core/gguf/gguf.h"
#include "core/model/config.h"
#include "kernels/types.h"

namespace runnel {

struct MemoryPlanOptions {
  int n_ctx = 4096;  // front ends pass ModelConfig::default_n_ctx() when none is asked
  int n_batch = 64;
  GgmlType kv_type = GgmlType::F16;
  int n_sessions = 1;  // server slots (+1 for embeddings when used)
  int n_tasks = 8;     // attention task buffers (threads * tasks per thread)
  bool all_logits = false;
  int n_draft = 0;  // EngineOptions::n_draft: rows of logits for speculative verification
  // Sessions decoded together in one pass (the server's slots: DecodeBatch); above 1 its
  // scratch, for that many rows and a prompt chunk of n_batch (but a mixture of
  // experts': that many rows with every row's logits), is counted once.
  int n_decode_batch = 0;
};

struct MemoryPlan {
  enum class Fit { Resident, Experts, Streaming, DoesNotFit };

  uint64_t weights_bytes = 0;    // all tensors
  uint64_t non_layer_bytes = 0;  // token_embd, output, output_norm, rope_freqs
  uint64_t max_layer_bytes = 0;  // the largest blk.N in the file's layout (streamed layers keep it)
  uint64_t kv_bytes = 0;
  uint64_t scratch_bytes = 0;
  uint64_t overhead_bytes = 0;
  uint64_t expert_bytes = 0;       // expert stacks (in weights_bytes)
  uint64_t expert_slot_bytes = 0;  // one expert of the largest layer, in an expert cache
  int n_experts = 0;               // of all layers
  int min_expert_slots = 0;        // 2 * n_expert_used; 0 for dense models

  uint64_t total_bytes() const { return weights_bytes + kv_bytes + scratch_bytes + overhead_bytes; }
  // The least a run with experts streamed needs.
  uint64_t expert_streaming_bytes() const {
    return total_bytes() - expert_bytes + static_cast<uint64_t>(min_expert_slots) * expert_slot_bytes;
  }
  // The expert cache's share of `budget_bytes` (Fit::Experts): what the rest leaves.
  uint64_t expert_cache_bytes(uint64_t budget_bytes) const;
  // The least a streamed run needs resident.
  uint64_t streaming_bytes() const {
    return non_layer_bytes + 2 * max_layer_bytes + kv_bytes + scratch_bytes + overhead_bytes;
  }
  Fit fit(uint64_t budget_bytes) const;
  // Bytes of weights that may stay resident when streaming under `budget_bytes`.
  uint64_t weight_budget(uint64_t budget_bytes) const;
  // What the layers may take in all under `budget_bytes` (weight_budget less the
  // tensors outside layers), resident and in transit: the one figure both stores get
  // (MmapStore::set_streaming, JsStore::load_weights), each keeping room in it for the
  // layers it streams.
  uint64_t layer_budget(uint64_t budget_bytes) const;

  // A table of the above against the budget, and what to change when it does not fit.
  std::string describe(uint64_t budget_bytes, const std::string& budget_source) const;
};

// The KV cache and forward-pass scratch of one session, from the config alone.
// float_gemm: some matrix is F32 / F16 / BF16 with a batched product in the selected
// kernels (its packed activation groups take 4 bytes an element instead of <= 1.25).
uint64_t plan_kv_bytes(const ModelConfig& c, const MemoryPlanOptions& o);
uint64_t plan_scratch_bytes(const ModelConfig& c, const MemoryPlanOptions& o,
                            bool float_gemm = false);

// The whole plan for a model (its tensor table gives the weights).
MemoryPlan plan_memory(const GgufModel& model, const ModelConfig& c, const MemoryPlanOptions& o);

// "2500M", "2.5G", "512MiB", "1073741824" -> bytes. Throws std::invalid_argument naming
// the text for anything else (negative, unknown unit, overflow).
uint64_t parse_byte_size(const std::string& text);
// 1536 MiB -> "1.50 GiB", 3 MiB -> "3.0 MiB".
std::string format_bytes(uint64_t n);

}  // namespace runnel
