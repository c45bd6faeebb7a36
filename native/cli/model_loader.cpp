#include "native/cli/model_loader.h"

#include "core/runtime/speculative.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/kv/kv_cache.h"
#include "core/model/model.h"
#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/load_progress.h"
#include "native/cpu_topology.h"
#include "native/memory_budget.h"
#include "native/mmap_store.h"
#include "native/thread_pool.h"

namespace runnel::cli {

int resolve_thread_count(int requested) {
  if (requested <= 0) return physical_core_count();
  const int n_cpus = logical_cpu_count();
  if (requested <= n_cpus) return requested;
  std::fprintf(stderr, "runnel: warning: -t %d is more than the %d logical CPU%s; using %d\n",
               requested, n_cpus, n_cpus == 1 ? "" : "s", n_cpus);
  return n_cpus;
}

uint64_t load_repack_bytes(const MmapStore& store, const ModelConfig& config) {
  uint64_t total = 0;
  for (const GgufTensorInfo& t : store.model().tensors) {
    if (!x8_repacks(config, t)) continue;
    if (store.tensor_streamed(t)) continue;
    total += t.n_bytes;
  }
  return total;
}

std::string LoadedModel::streaming_note() const {
  if (n_streamed_layers > 0) return "streaming " + std::to_string(n_streamed_layers) + " layers";
  if (n_expert_slots > 0) {
    return "experts streamed, a cache of " + std::to_string(n_expert_slots) + " of " + std::to_string(plan.n_experts);
  }
  return "";
}

void add_load_options(ArgParser& p, LoadRequest* r) {
  p.string_option("-m, --model", &r->model, "FILE", "GGUF model (first part of a split model)");
  p.int_option("-c, --ctx-size", &r->n_ctx, "context size (default: min(model's, 4096))");
  p.int_option("-t, --threads", &r->n_threads, "threads (default: physical cores)");
  p.string_option("--kv-type", &r->kv_type, "TYPE", "KV cache type: f16 (default), q8_0, q4_0");
  p.string_option("--mem-budget", &r->mem_budget, "SIZE",
                  "memory to stay within, e.g. 2500M or 2.5G (default: the cgroup limit, else\n"
                  "MemAvailable); weights beyond it are streamed from the file layer by layer");
}

void add_speculation_options(ArgParser& p, LoadRequest* r) {
  r->lookup_ngram = kDefaultLookupNgram;  // on where the command offers speculation
  p.int_option("--lookup-ngram", &r->lookup_ngram,
               "speculative decoding by prompt lookup: propose the tokens that followed an earlier\n"
               "occurrence of the last N tokens (down to 2) and check them in one pass; pays where\n"
               "the reply repeats its input (edits, code); the draft starts at one token and\n"
               "grows while accepted, pausing after misses; greedy output is unchanged\n"
               "(default 3; 0: off)");
  p.string_option("--model-draft", &r->model_draft, "FILE",
                  "speculative decoding with a draft model: a smaller GGUF of the same vocabulary\n"
                  "proposes tokens greedily, checked in one pass (instead of --lookup-ngram)");
  p.int_option("--draft-max", &r->n_draft,
               "with --lookup-ngram or --model-draft: the most tokens proposed at once (default 8)");
}

void check_speculation_options(const LoadRequest& r) {
  if (r.lookup_ngram < 0 || r.lookup_ngram > 16) {
    throw UsageError("--lookup-ngram: must be in [0, 16], got " + std::to_string(r.lookup_ngram));
  }
  if (r.n_draft < 1 || r.n_draft >= r.n_batch) {
    throw UsageError("--draft-max: must be in [1, " + std::to_string(r.n_batch - 1) + "], got " +
                     std::to_string(r.n_draft));
  }
}

void check_load_options(const ArgParser& p, const LoadRequest& r) {
  if (r.model.empty()) throw UsageError("-m: a model file is required");
  if (p.seen("-c") && r.n_ctx < 1) throw UsageError("-c: must be >= 1, got " + std::to_string(r.n_ctx));
  if (p.seen("-t") && r.n_threads < 1) throw UsageError("-t: must be >= 1, got " + std::to_string(r.n_threads));
  if (r.n_keep < -1) throw UsageError("--keep: must be >= -1, got " + std::to_string(r.n_keep));
  check_speculation_options(r);
}

LoadedModel load_model(const LoadRequest& r) {
  EngineOptions eo;
  eo.n_ctx = r.n_ctx;
  eo.n_keep = r.n_keep;
  eo.n_batch = r.n_batch;
  eo.all_logits = r.all_logits;
  eo.n_draft = r.lookup_ngram > 0 || !r.model_draft.empty() ? r.n_draft : 0;
  try {
    eo.kv_type = parse_kv_type(r.kv_type);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--kv-type: ") + e.what());
  }
  LoadedModel out;
  out.n_threads = resolve_thread_count(r.n_threads);
  std::unique_ptr<MmapStore> store = MmapStore::open(r.model);

  // The memory plan, before anything big is allocated or read.
  const ModelConfig config = ModelConfig::from_model(store->model());
  MemoryPlanOptions po;
  po.n_ctx = r.n_ctx > 0 ? r.n_ctx : config.default_n_ctx();
  po.n_batch = eo.n_batch;
  po.all_logits = r.all_logits;
  po.n_draft = eo.n_draft;
  po.kv_type = eo.kv_type;
  po.n_sessions = r.n_sessions;
  po.n_decode_batch = r.decode_batch;
  po.n_tasks = out.n_threads == 1 ? 1 : out.n_threads * kTasksPerThread;
  out.plan = plan_memory(store->model(), config, po);
  MemoryBudget budget = detect_memory_budget();
  if (!r.mem_budget.empty()) {
    try {
      budget = {parse_byte_size(r.mem_budget), "(--mem-budget)"};
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--mem-budget: ") + e.what());
    }
  }
  if (r.reserved_bytes > 0) {
    budget.source += ", less " + format_bytes(r.reserved_bytes) + " the target model holds";
    budget.bytes = budget.bytes > r.reserved_bytes ? budget.bytes - r.reserved_bytes : 0;
  }
  out.budget_bytes = budget.bytes;
  const MemoryPlan& plan = out.plan;
  const MemoryPlan::Fit fit = plan.fit(budget.bytes);
  if (r.dry_run) {
    std::fputs(plan.describe(budget.bytes, budget.source).c_str(), stdout);
    if (r.extra_sessions >= 0) {
      // Each slot is a KV cache; the largest count that fits with the weights resident,
      // and with experts or layers streamed.
      int resident = 0, streaming = 0;
      for (int n = 1; n <= 64; ++n) {
        MemoryPlanOptions more = po;
        more.n_sessions = n + r.extra_sessions;
        more.n_decode_batch = r.decode_batch > 0 ? n : 0;
        const MemoryPlan::Fit f = plan_memory(store->model(), config, more).fit(budget.bytes);
        if (f == MemoryPlan::Fit::Resident) resident = n;
        if (f != MemoryPlan::Fit::DoesNotFit) streaming = n;
      }
      std::printf("slots: up to %d with the weights resident, %d with layers streamed (--slots, at most 64)\n",
                  resident, streaming);
    }
    out.dry_run_status = fit == MemoryPlan::Fit::DoesNotFit ? 1 : 0;
    return out;
  }
  if (fit == MemoryPlan::Fit::DoesNotFit) {
    throw std::runtime_error("the model does not fit the memory budget: " + format_bytes(plan.streaming_bytes()) +
                             " needed even when streaming (kv cache " + format_bytes(plan.kv_bytes) + "), budget " +
                             format_bytes(budget.bytes) + " " + budget.source +
                             "; lower -c, use --kv-type q8_0, or raise --mem-budget (see --dry-run)");
  }
  if (fit == MemoryPlan::Fit::Experts) {
    out.n_expert_slots = store->set_expert_streaming(plan.expert_cache_bytes(budget.bytes), plan.min_expert_slots);
  }
  if (fit == MemoryPlan::Fit::Streaming) {
    out.n_streamed_layers = store->set_streaming(plan.layer_budget(budget.bytes));
  }
  eo.parallel = std::make_shared<ThreadPool>(out.n_threads);
  LoadProgress progress(stderr, std::filesystem::path(r.model).filename().string(),
                        load_repack_bytes(*store, config), LoadProgress::on_terminal());
  MmapStore& mmap_store = *store;
  mmap_store.on_load_progress([&progress](uint64_t done) { progress.update(done); });
  out.engine = Engine::load(std::move(store), eo);
  // The engine owns the store now, and `progress` goes out of scope.
  mmap_store.on_load_progress(nullptr);
  progress.finish();
  return out;
}

std::unique_ptr<Engine> load_draft_model(const LoadRequest& request, const Engine& target,
                                         uint64_t target_held_bytes) {
  if (request.model_draft.empty()) return nullptr;
  LoadRequest r = request;
  r.model = request.model_draft;
  r.model_draft.clear();
  r.lookup_ngram = 0;
  r.decode_batch = 0;  // draft sessions run one at a time
  r.reserved_bytes = request.reserved_bytes + target_held_bytes;
  r.n_ctx = target.n_ctx();
  r.all_logits = false;
  r.dry_run = false;
  r.extra_sessions = -1;
  LoadedModel draft;
  try {
    draft = load_model(r);
  } catch (const UsageError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("--model-draft: ") + e.what());
  }
  check_draft_vocabulary(target, *draft.engine);
  return std::move(draft.engine);
}

}  // namespace runnel::cli
