// runnel run: load a model, echo the prompt, stream the continuation.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "core/runtime/engine.h"
#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cpu_topology.h"
#include "native/mmap_store.h"
#include "native/thread_pool.h"

namespace runnel::cli {
namespace {

struct RunOptions {
  std::string model, prompt, dump_logits;
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
  p.parse(args);
  if (p.help_requested()) {
    std::fputs(p.help_text().c_str(), stdout);
    return 0;
  }
  check_ranges(o, p);
  select_kernels_from_env();

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  EngineOptions eo;
  eo.n_ctx = o.n_ctx;
  const int n_threads = o.n_threads > 0 ? o.n_threads : physical_core_count();
  eo.parallel = std::make_shared<ThreadPool>(n_threads);
  std::unique_ptr<Engine> engine = Engine::load(MmapStore::open(o.model), eo);
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();

  const std::vector<TokenId> prompt = engine->tokenizer().encode(o.prompt, true, o.special);
  GenerateParams gp;
  gp.max_tokens = o.n_predict;
  gp.sampler = o.sampler;
  std::unique_ptr<Session> session = engine->new_session();
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
  const GenerationStats stats = session->generate(prompt, gp, [](std::string_view piece) {
    write_stdout(piece);
    return true;
  });
  write_stdout("\n");
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
  return 0;
}

}  // namespace runnel::cli
