// runnel run: load a model, echo the prompt, stream the continuation.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "core/runtime/engine.h"
#include "core/runtime/memory_plan.h"
#include "core/runtime/session_file.h"
#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cpu_topology.h"
#include "native/cli/model_loader.h"
#include "native/memory_budget.h"
#include "native/mmap_store.h"
#include "native/thread_pool.h"

namespace runnel::cli {
namespace {

struct RunOptions {
  std::string model, prompt, dump_logits, kv_type = "f16", mem_budget, session;
  int n_keep = 0;
  bool dry_run = false;
  int n_predict = 128;
  int n_ctx = 0;
  int n_threads = 0;
  SamplerParams sampler;
  bool no_display_prompt = false;
  bool special = false;
};

void check_ranges(const RunOptions& o, const ArgParser& p) {
  if (o.model.empty()) throw UsageError("-m: a model file is required");
  if (!p.seen("-p")) throw UsageError("-p: a prompt is required");
  if (o.n_predict < -1) throw UsageError("-n: must be >= -1, got " + std::to_string(o.n_predict));
  if (p.seen("-c") && o.n_ctx < 1) {
    throw UsageError("-c: must be >= 1, got " + std::to_string(o.n_ctx));
  }
  if (p.seen("-t") && o.n_threads < 1) {
    throw UsageError("-t: must be >= 1, got " + std::to_string(o.n_threads));
  }
  const SamplerParams& s = o.sampler;
  if (s.temperature < 0) throw UsageError("--temp: must be >= 0");
  if (s.top_k < 0) throw UsageError("--top-k: must be >= 0");
  if (!(s.top_p > 0 && s.top_p <= 1)) throw UsageError("--top-p: must be in (0, 1]");
  if (!(s.min_p >= 0 && s.min_p <= 1)) throw UsageError("--min-p: must be in [0, 1]");
  if (!(s.repeat_penalty > 0)) throw UsageError("--repeat-penalty: must be > 0");
  if (o.n_keep < -1) throw UsageError("--keep: must be >= -1, got " + std::to_string(o.n_keep));
}

void write_stdout(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

void select_kernels_from_env() {
  const char* isa = std::getenv("RUNNEL_ISA");
  const std::string forced = isa ? isa : "";
  if (!select_kernels(forced)) {
    throw UsageError("RUNNEL_ISA: unknown or unsupported ISA '" + forced + "'");
  }
}

int run_command(const std::vector<std::string>& args) {
  RunOptions o;
  ArgParser p("runnel run -m FILE -p TEXT [options]",
              "Generates a continuation of TEXT with the model in FILE, streaming it to stdout.");
  p.string_option("-m, --model", &o.model, "FILE", "GGUF model (first part of a split model)");
  p.string_option("-p, --prompt", &o.prompt, "TEXT", "prompt text");
  p.int_option("-n, --n-predict", &o.n_predict,
               "tokens to generate (default 128; -1 = until end of text or full context)");
  p.int_option("-c, --ctx-size", &o.n_ctx, "context size (default: min(model's, 4096))");
  p.int_option("-t, --threads", &o.n_threads, "threads (default: physical cores)");
  p.float_option("--temp", &o.sampler.temperature, "temperature (default 0.8; 0 = greedy)");
  p.int_option("--top-k", &o.sampler.top_k, "top-k sampling (default 40; 0 = off)");
  p.float_option("--top-p", &o.sampler.top_p, "top-p sampling (default 0.95; 1 = off)");
  p.float_option("--min-p", &o.sampler.min_p, "min-p sampling (default 0.05; 0 = off)");
  p.u64_option("--seed", &o.sampler.seed, "random seed (default 4294967295)");
  p.float_option("--repeat-penalty", &o.sampler.repeat_penalty,
                 "penalty for repeating recent tokens (default 1.0 = off)");
  p.flag("--no-display-prompt", &o.no_display_prompt, "do not echo the prompt");
  p.flag("--special", &o.special, "parse special-token text (\"<|im_start|>\") in the prompt");
  p.string_option("--dump-logits", &o.dump_logits, "PATH",
                  "write the float32 logits after the prompt to PATH");
  p.string_option("--kv-type", &o.kv_type, "TYPE", "KV cache type: f16 (default), q8_0, q4_0");
  p.int_option("--keep", &o.n_keep,
               "when the context fills, keep the first N tokens and drop the oldest half of the rest\n"
               "(default 0; -1 = stop at a full context instead)");
  p.string_option("--mem-budget", &o.mem_budget, "SIZE",
                  "memory to stay within, e.g. 2500M or 2.5G (default: the cgroup limit, else\n"
                  "MemAvailable); weights beyond it are streamed from the file layer by layer");
  p.flag("--dry-run", &o.dry_run, "print the memory plan and exit (status 1 if it does not fit)");
  p.string_option("--session", &o.session, "FILE",
                  "restore the conversation's tokens and KV cache from FILE if it exists, evaluate\n"
                  "only the new part of the prompt, and save everything back to FILE afterwards");
  p.parse(args);
  if (p.help_requested()) {
    std::fputs(p.help_text().c_str(), stdout);
    return 0;
  }
  check_ranges(o, p);
  select_kernels_from_env();

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  LoadRequest lr;
  lr.model = o.model;
  lr.n_ctx = o.n_ctx;
  lr.n_threads = o.n_threads;
  lr.kv_type = o.kv_type;
  lr.n_keep = o.n_keep;
  lr.mem_budget = o.mem_budget;
  lr.dry_run = o.dry_run;
  LoadedModel loaded = load_model(lr);
  if (o.dry_run) return loaded.dry_run_status;
  std::unique_ptr<Engine> engine = std::move(loaded.engine);
  const MemoryPlan& plan = loaded.plan;
  const int n_threads = loaded.n_threads;
  const int n_streamed = loaded.n_streamed_layers;
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();

  const std::vector<TokenId> full_prompt = engine->tokenizer().encode(o.prompt, true, o.special);
  GenerateParams gp;
  gp.max_tokens = o.n_predict;
  gp.sampler = o.sampler;
  std::unique_ptr<Session> session = engine->new_session();
  const uint64_t fingerprint = o.session.empty() ? 0 : model_fingerprint(engine->store().model());
  std::vector<TokenId> prompt = full_prompt;
  if (!o.session.empty() && load_session_file(o.session, *session, fingerprint)) {
    // Reuse the saved tokens the prompt starts with; evaluate only the rest.
    size_t keep = 0;
    const std::vector<TokenId>& saved = session->tokens();
    const size_t n_saved = saved.size();
    while (keep < n_saved && keep < full_prompt.size() && saved[keep] == full_prompt[keep]) ++keep;
    session->rewind(static_cast<int>(keep));
    prompt.assign(full_prompt.begin() + static_cast<std::ptrdiff_t>(keep), full_prompt.end());
    std::fprintf(stderr, "session: %s holds %zu tokens; %zu reused, %zu to evaluate\n", o.session.c_str(),
                 n_saved, keep, prompt.size());
  }
  session->check_request(prompt, gp);  // refuse before echoing or writing anything

  std::ofstream dump;
  if (!o.dump_logits.empty()) {
    dump.open(o.dump_logits, std::ios::binary | std::ios::trunc);
    if (!dump) throw std::runtime_error("--dump-logits: cannot write '" + o.dump_logits + "'");
    gp.on_logits = [&dump](int step, std::span<const float> logits) {
      // float32 little-endian: this is how x86-64 and aarch64 Linux store floats.
      if (step == 0) dump.write(reinterpret_cast<const char*>(logits.data()), logits.size_bytes());
    };
  }
  if (!o.no_display_prompt) write_stdout(o.prompt);
  const uint64_t read_before = process_read_bytes();
  const GenerationStats stats = session->generate(prompt, gp, [](std::string_view piece) {
    write_stdout(piece);
    return true;
  });
  const uint64_t read_bytes = process_read_bytes() - read_before;
  write_stdout("\n");
  if (!o.session.empty()) save_session_file(o.session, *session, fingerprint);
  if (dump.is_open()) {
    dump.close();
    if (!dump) throw std::runtime_error("--dump-logits: writing '" + o.dump_logits + "' failed");
  }
  std::fprintf(stderr, "load: %.1f ms (%d threads, %s kernels, context %d)\n", load_ms, n_threads,
               std::string(kernels().isa).c_str(), engine->n_ctx());
  std::fprintf(stderr, "prompt: %d tokens in %.1f ms, %.2f tok/s\n", stats.n_prompt,
               stats.prompt_ms, stats.prompt_tokens_per_s());
  std::fprintf(stderr, "generation: %d tokens in %.1f ms, %.2f tok/s\n", stats.n_generated,
               stats.gen_ms, stats.gen_tokens_per_s());
  const int n_tokens = std::max(1, stats.n_prompt + stats.n_generated);
  std::fprintf(stderr, "memory: resident %.1f MiB, read %.2f MiB/token from storage, kv %s %s, %s%s\n",
               static_cast<double>(process_rss_bytes()) / (1 << 20), static_cast<double>(read_bytes) / n_tokens / (1 << 20),
               std::string(kv_type_name(engine->options().kv_type)).c_str(), format_bytes(plan.kv_bytes).c_str(),
               n_streamed > 0 ? ("streaming " + std::to_string(n_streamed) + " layers").c_str() : "all resident",
               session->n_context_shifts() > 0
                   ? (", " + std::to_string(session->n_context_shifts()) + " context shifts").c_str()
                   : "");
  return 0;
}

}  // namespace runnel::cli
