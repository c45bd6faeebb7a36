// runnel run: load a model, echo the prompt, stream the continuation.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include "core/runtime/engine.h"
#include "core/runtime/memory_plan.h"
#include "core/runtime/request.h"
#include "core/runtime/session_file.h"
#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cpu_topology.h"
#include "native/cli/model_loader.h"
#include "native/cli/sampler_options.h"
#include "native/memory_budget.h"
#include "native/mmap_store.h"
#include "native/thread_pool.h"

namespace runnel::cli {
namespace {

struct RunOptions {
  RunOptions() { load.n_keep = 0; }  // run shifts a full context by default
  LoadRequest load;
  std::string prompt, prompt_file, dump_logits, session, system, template_kwargs;
  int n_predict = 128;
  SamplerParams sampler;
  GrammarOptions grammar;
  bool no_display_prompt = false;
  bool special = false, no_special = false;
  bool chat = false;
  bool all_logits = false;
};

void check_ranges(const RunOptions& o, const ArgParser& p) {
  check_load_options(p, o.load);
  if (p.seen("-p") == p.seen("-f")) throw UsageError("-p / -f: give the prompt with exactly one of them");
  if (o.special && o.no_special) throw UsageError("--special and --no-special contradict each other");
  if (!o.system.empty() && !o.chat) throw UsageError("--system: only with --chat");
  if (!o.template_kwargs.empty() && !o.chat) throw UsageError("--chat-template-kwargs: only with --chat");
  if (o.n_predict < -1) throw UsageError("-n: must be >= -1, got " + std::to_string(o.n_predict));
  if (o.all_logits && o.dump_logits.empty()) throw UsageError("--all-logits: only with --dump-logits PATH");
  if (o.all_logits && !o.session.empty()) throw UsageError("--all-logits: not with --session");
  check_sampler_options(o.sampler);
  check_grammar_options(p, o.grammar);
}

// The prompt text: -p TEXT, -p - (standard input) or -f FILE, read whole.
std::string read_prompt(const RunOptions& o) {
  if (!o.prompt_file.empty()) {
    std::ifstream in(o.prompt_file, std::ios::binary);
    if (!in) throw UsageError("-f: cannot read '" + o.prompt_file + "'");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  if (o.prompt == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  return o.prompt;
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
  add_load_options(p, &o.load);
  p.string_option("-p, --prompt", &o.prompt, "TEXT", "prompt text; - reads it from standard input");
  p.string_option("-f, --file", &o.prompt_file, "FILE", "read the prompt from FILE");
  p.flag("--chat", &o.chat,
         "send the prompt as a user message through the model's chat template and print only\nthe reply");
  p.string_option("--system", &o.system, "TEXT", "with --chat: a system message before the prompt");
  p.string_option("--chat-template-kwargs", &o.template_kwargs, "JSON",
                  "with --chat: template variables, e.g. '{\"enable_thinking\": false}' (Qwen3)");
  p.int_option("-n, --n-predict", &o.n_predict,
               "tokens to generate (default 128; -1 = until end of text or full context)");
  add_sampler_options(p, &o.sampler);
  add_grammar_options(p, &o.grammar);
  add_speculation_options(p, &o.load);
  p.flag("--no-display-prompt", &o.no_display_prompt, "do not echo the prompt");
  p.flag("--special", &o.special,
         "parse special-token text (\"<|im_start|>\") in the prompt as control tokens (the default,\n"
         "as llama-cli does)");
  p.flag("--no-special", &o.no_special, "take special-token text in the prompt as plain text");
  p.string_option("--dump-logits", &o.dump_logits, "PATH",
                  "write the float32 logits after the prompt to PATH");
  p.flag("--all-logits", &o.all_logits,
         "with --dump-logits: write the logits at every prompt position instead, [n_prompt, n_vocab]\n"
         "(row i predicts the token after prompt token i; the last row is the default dump)");
  p.int_option("--keep", &o.load.n_keep,
               "when the context fills, keep the first N tokens and drop the oldest half of the rest\n"
               "(default 0; -1 = stop at a full context instead)");
  p.flag("--dry-run", &o.load.dry_run, "print the memory plan and exit (status 1 if it does not fit)");
  p.string_option("--session", &o.session, "FILE",
                  "restore the conversation's tokens and KV cache from FILE if it exists, evaluate\n"
                  "only the new part of the prompt, and save everything back to FILE afterwards");
  if (p.parse_or_print_help(args)) return 0;
  check_ranges(o, p);
  select_kernels_from_env();
  o.load.all_logits = o.all_logits;

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  LoadedModel loaded = load_model(o.load);
  if (o.load.dry_run) return loaded.dry_run_status;
  std::unique_ptr<Engine> engine = std::move(loaded.engine);
  engine->check_generative();  // an embedding model: one line, before echoing anything
  const MemoryPlan& plan = loaded.plan;
  const int n_threads = loaded.n_threads;
  const std::string streaming = loaded.streaming_note();
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();

  const std::string prompt_text = read_prompt(o);
  const PromptFormat format(*engine);
  PromptInput input;
  if (o.chat) {
    std::vector<ChatMessage> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", prompt_text});
    input = PromptInput::from_messages(std::move(messages));
    if (!o.template_kwargs.empty()) input.chat_options = parse_chat_template_kwargs(o.template_kwargs);
  } else {
    input = PromptInput::from_text(prompt_text, !o.no_special);
  }
  const std::vector<TokenId> prompt = format.tokens(input);
  RequestOptions request;
  request.max_tokens = o.n_predict;
  request.sampler = o.sampler;
  request.sampler.seed = resolve_seed(request.sampler.seed);
  request.grammar = load_grammar(*engine, o.grammar);
  request.lookup_ngram = o.load.lookup_ngram;
  const std::unique_ptr<Engine> draft_engine = load_draft_model(o.load, *engine, loaded.held_bytes());
  std::unique_ptr<Session> draft_session = draft_engine ? draft_engine->new_session() : nullptr;
  if (draft_session) request.drafter = std::make_shared<DraftModel>(*draft_session, o.load.n_draft);
  std::unique_ptr<Session> session = engine->new_session();
  const uint64_t fingerprint = o.session.empty() ? 0 : model_fingerprint(engine->store().model());
  const bool restored = !o.session.empty() && load_session_file(o.session, *session, fingerprint);
  const int n_saved = session->position();
  // Refuse before echoing or writing anything.
  check_request_fits(static_cast<int>(prompt.size()), request, session->n_ctx(), session->shifts_context());

  std::ofstream dump;
  if (!o.dump_logits.empty()) {
    dump.open(o.dump_logits, std::ios::binary | std::ios::trunc);
    if (!dump) throw std::runtime_error("--dump-logits: cannot write '" + o.dump_logits + "'");
    if (!o.all_logits) {
      request.on_logits = [&dump](int step, std::span<const float> logits) {
        // float32 little-endian: this is how x86-64 and aarch64 Linux store floats.
        if (step == 0) dump.write(reinterpret_cast<const char*>(logits.data()), logits.size_bytes());
      };
    }
  }
  double all_logits_ms = 0;
  if (o.all_logits) {
    // Every position's logits in the prompt's own forward passes; the request below
    // then reuses the cached prompt (recomputing only its last position).
    const Clock::time_point eval_start = Clock::now();
    const std::vector<float> all = session->eval_all(prompt);  // [n_prompt, n_vocab]
    all_logits_ms = std::chrono::duration<double, std::milli>(Clock::now() - eval_start).count();
    dump.write(reinterpret_cast<const char*>(all.data()), static_cast<std::streamsize>(all.size() * sizeof(float)));
  }
  // A chat reply is shown alone: the rendered template is markup, not the user's text.
  if (!o.no_display_prompt && !o.chat) write_stdout(prompt_text);
  const uint64_t read_before = process_read_bytes();
  const ExpertCacheStats experts_before = engine->store().expert_stats();
  const std::unique_ptr<RequestRun> run = run_request(*session, prompt, request, [](std::string_view piece) {
    write_stdout(piece);
    return true;
  });
  if (restored) {
    // The saved tokens the prompt starts with were reused; only the rest was evaluated.
    std::fprintf(stderr, "session: %s holds %d tokens; %d reused, %d to evaluate\n", o.session.c_str(), n_saved,
                 run->n_cached(), run->n_prompt() - run->n_cached());
  }
  const GenerationStats& stats = run->stats();
  const uint64_t read_bytes = process_read_bytes() - read_before;
  write_stdout("\n");
  if (!o.session.empty()) save_session_file(o.session, *session, fingerprint);
  if (dump.is_open()) {
    dump.close();
    if (!dump) throw std::runtime_error("--dump-logits: writing '" + o.dump_logits + "' failed");
  }
  std::fprintf(stderr, "load: %.1f ms (%d threads, %s kernels, context %d, seed %llu)\n", load_ms, n_threads,
               std::string(kernels().isa).c_str(), engine->n_ctx(),
               static_cast<unsigned long long>(request.sampler.seed));
  if (o.all_logits) {
    const int n = static_cast<int>(prompt.size());
    std::fprintf(stderr, "prompt: %d tokens in %.1f ms, %.2f tok/s (all logits)\n", n, all_logits_ms,
                 all_logits_ms > 0 ? n * 1000.0 / all_logits_ms : 0.0);
  } else {
    std::fprintf(stderr, "prompt: %d tokens in %.1f ms, %.2f tok/s\n", stats.n_prompt, stats.prompt_ms,
                 stats.prompt_tokens_per_s());
  }
  std::fprintf(stderr, "generation: %d tokens in %.1f ms, %.2f tok/s\n", stats.n_generated,
               stats.gen_ms, stats.gen_tokens_per_s());
  if (request.lookup_ngram > 0 || request.drafter) {
    std::fprintf(stderr, "speculation: %d draft tokens, %d accepted (%.0f%%)\n", stats.n_drafted,
                 stats.n_draft_accepted, stats.n_drafted > 0 ? 100.0 * stats.n_draft_accepted / stats.n_drafted : 0.0);
  }
  if (request.grammar) {
    std::fprintf(stderr, "grammar: %.1f ms of it, %.3f ms/token (masks)\n", stats.grammar_ms,
                 stats.grammar_ms / std::max(1, stats.n_generated));
  }
  const int n_tokens = std::max(1, stats.n_prompt + stats.n_generated);
  std::fprintf(stderr, "memory: resident %.1f MiB, read %.2f MiB/token from storage, kv %s %s, %s%s\n",
               static_cast<double>(process_rss_bytes()) / (1 << 20), static_cast<double>(read_bytes) / n_tokens / (1 << 20),
               std::string(kv_type_name(engine->options().kv_type)).c_str(), format_bytes(plan.kv_bytes).c_str(),
               streaming.empty() ? "all resident" : streaming.c_str(),
               session->n_context_shifts() > 0
                   ? (", " + std::to_string(session->n_context_shifts()) + " context shifts").c_str()
                   : "");
  const ExpertCacheStats experts = engine->store().expert_stats();
  if (experts.n_slots > 0) {
    const uint64_t hits = experts.hits - experts_before.hits, misses = experts.misses - experts_before.misses;
    std::fprintf(stderr, "experts: hit rate %.1f%% (%llu of %llu picks cached), read %.2f MiB/token\n",
                 hits + misses > 0 ? 100.0 * static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0,
                 static_cast<unsigned long long>(hits), static_cast<unsigned long long>(hits + misses),
                 static_cast<double>(experts.bytes_read - experts_before.bytes_read) / n_tokens / (1 << 20));
  }
  return 0;
}

}  // namespace runnel::cli
