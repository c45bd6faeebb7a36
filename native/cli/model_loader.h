// Loading a model the way `run` and `serve` both do: mmap the GGUF, compute the memory
// plan against the budget (--mem-budget, the cgroup limit or MemAvailable), refuse
// before loading if it cannot fit, stream layers if only that fits, then build the
// Engine on a thread pool. --dry-run stops after printing the plan.
#pragma once

#include <algorithm>
#include <memory>
#include <string>

#include "core/runtime/engine.h"
#include "core/runtime/memory_plan.h"
#include "native/cli/args.h"
#include "native/mmap_store.h"

namespace runnel::cli {

struct LoadRequest {
  std::string model;
  int n_ctx = 0;      // 0: min(model's, 4096)
  int n_threads = 0;  // 0: physical cores
  std::string kv_type = "f16";
  int n_keep = -1;  // EngineOptions::n_keep
  std::string mem_budget;  // empty: detected
  int n_sessions = 1;
  // serve: sessions besides the slots (the embeddings one); a dry run then also prints
  // the largest --slots that fits the budget.
  int extra_sessions = -1;
  int decode_batch = 0;  // serve: slots decoded together (MemoryPlanOptions::n_decode_batch)
  // Memory another model of this process holds (a draft model's target): taken off the
  // budget before this model's plan is checked.
  uint64_t reserved_bytes = 0;
  int n_batch = 64;  // tokens per forward pass of a prompt
  bool all_logits = false;  // EngineOptions::all_logits (run --all-logits)
  // Speculative decoding (add_speculation_options): --lookup-ngram (the requests'
  // GenerateParams::lookup_ngram; 0: off) and --draft-max (EngineOptions::n_draft when on).
  int lookup_ngram = 0;
  int n_draft = 8;
  std::string model_draft;  // --model-draft: a draft model of the same vocabulary
  bool dry_run = false;
};

struct LoadedModel {
  std::unique_ptr<Engine> engine;  // null after a dry run
  MemoryPlan plan;
  int n_threads = 0;
  int n_streamed_layers = 0;
  int n_expert_slots = 0;  // experts streamed through a cache of this many (0: not)
  int dry_run_status = 0;  // a dry run's exit status: 1 if the plan does not fit
  uint64_t budget_bytes = 0;  // the budget the plan was checked against
  // What it holds of that budget: the plan's total, or all of it when streaming.
  // "streaming 12 layers", "experts streamed, a cache of 1400 of 6144", or "" (resident).
  std::string streaming_note() const;
  uint64_t held_bytes() const {
    return n_streamed_layers > 0 || n_expert_slots > 0 ? budget_bytes : std::min(plan.total_bytes(), budget_bytes);
  }
};

// Throws UsageError for bad --kv-type / --mem-budget, std::runtime_error with the
// numbers when the plan does not fit, and what Engine::load throws. On a terminal,
// stderr shows the load's progress (LoadProgress).
LoadedModel load_model(const LoadRequest& request);

// The load flags run and chat share, parsed into `r`: -m, -c, -t, --kv-type,
// --mem-budget (--keep and --dry-run are each command's own).
void add_load_options(ArgParser& p, LoadRequest* r);
// Their checks, and --keep's: UsageError naming the flag.
void check_load_options(const ArgParser& p, const LoadRequest& r);

// --lookup-ngram (on by default: kDefaultLookupNgram), --model-draft and --draft-max
// (run, chat, serve), checked by check_speculation_options (check_load_options runs it).
constexpr int kDefaultLookupNgram = 3;
void add_speculation_options(ArgParser& p, LoadRequest* r);
void check_speculation_options(const LoadRequest& r);

// With --model-draft: the draft model, loaded as `request` says (its own memory plan,
// at the target's context size, within what the target's held bytes (LoadedModel::held_bytes)
// leave of the budget) and checked to share `target`'s vocabulary (an error
// naming the first difference otherwise); null without it.
std::unique_ptr<Engine> load_draft_model(const LoadRequest& request, const Engine& target,
                                         uint64_t target_held_bytes);

// The thread count for -t N, the one place every command resolves it: 0 gives the
// physical cores; more than the logical CPUs gives the logical CPUs, with a warning on
// stderr (threads beyond them only wait on each other at every barrier).
int resolve_thread_count(int requested);

// The bytes Engine::load reads and repacks from `store` with the selected kernels: the
// tensors x8_repacks(config, t) names (core/model/model.h), outside streamed layers.
// The progress line's 100%.
uint64_t load_repack_bytes(const MmapStore& store, const ModelConfig& config);

}  // namespace runnel::cli
