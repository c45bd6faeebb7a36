// runnel perplexity: the perplexity of a model on a text, as llama.cpp's
// llama-perplexity measures it (core/runtime/perplexity.h has the math), and the KL
// divergence of this run against a base saved by either tool:
//   runnel perplexity -m MODEL -f TEXT                       PPL over 512-token windows
//   ... --kl-divergence-base BASE                            also save this run's log-probs
//   runnel perplexity -m MODEL --kl-divergence --kl-divergence-base BASE   KLD vs BASE
// Each window is evaluated from an empty cache (its first token BOS when the model adds
// one); its first half is context and the rest is scored.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/runtime/engine.h"
#include "core/runtime/perplexity.h"
#include "kernels/kernels.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cli/model_loader.h"

namespace runnel::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kDefaultCtx = 512;  // llama-perplexity's default -c

struct Options {
  LoadRequest load;
  std::string text_file;
  int n_chunks = -1;
  std::string base_file;
  bool kl_divergence = false;
};

// Runs fn(r) for r in [0, n) spread over the engine's threads (rows are independent;
// their results are combined afterwards in row order, so the sums do not depend on
// the thread count).
void for_rows(Parallel& par, int n, const std::function<void(int)>& fn) {
  const int n_tasks = n_tasks_for(par, n);
  par.run(n_tasks, [&](int t) {
    const int64_t end = split_begin(n, t + 1, n_tasks);
    for (int64_t r = split_begin(n, t, n_tasks); r < end; ++r) fn(static_cast<int>(r));
  });
}

// Evaluates one window [n_ctx] from an empty cache: the context half without logits,
// then the scored positions a batch at a time. on_rows(row0, logits [n, n_vocab], n)
// gets scored rows row0 .. row0 + n - 1 (row k predicts window[first + k + 1]).
void eval_window(Session& session, std::span<const TokenId> window, int n_batch,
                 const std::function<void(int, std::span<const float>, int)>& on_rows) {
  const int n_ctx = static_cast<int>(window.size());
  const int first = first_scored_position(n_ctx);
  session.reset();
  session.eval(window.first(static_cast<size_t>(first)));
  const int end = n_ctx - 1;  // the last position has no next token to score
  for (int pos = first; pos < end; pos += n_batch) {
    const int n = std::min(n_batch, end - pos);
    const std::vector<float> logits = session.eval_all(window.subspan(static_cast<size_t>(pos), n));
    on_rows(pos - first, logits, n);
  }
}

// Chunk c's window: the text's tokens, the first replaced by BOS when the model adds one
// (llama-perplexity's rule: every window starts like a document).
std::vector<TokenId> window_of(const std::vector<TokenId>& tokens, int chunk, int n_ctx, TokenId bos) {
  const auto begin = tokens.begin() + static_cast<std::ptrdiff_t>(chunk) * n_ctx;
  std::vector<TokenId> window(begin, begin + n_ctx);
  if (bos >= 0) window[0] = bos;
  return window;
}

TokenId window_bos(const Engine& engine) {
  const Tokenizer& tok = engine.tokenizer();
  return tok.add_bos() && tok.bos() >= 0 ? tok.bos() : -1;
}

std::vector<TokenId> tokenize_text(const Engine& engine, const std::string& text) {
  const Tokenizer& tok = engine.tokenizer();
  if (tok.add_eos()) {
    throw std::invalid_argument("this model's tokenizer appends EOS to every text (tokenizer.ggml.add_eos_token); "
                                "perplexity windows need plain text, as llama-perplexity refuses such models");
  }
  return tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
}

void print_load_line(const LoadedModel& loaded, double load_ms) {
  std::fprintf(stderr, "load: %.1f ms (%d threads, %s kernels, context %d, batch %d, kv %s%s)\n", load_ms,
               loaded.n_threads, std::string(kernels().isa).c_str(), loaded.engine->n_ctx(),
               loaded.engine->options().n_batch, std::string(kv_type_name(loaded.engine->options().kv_type)).c_str(),
               loaded.streaming_note().empty() ? "" : (", " + loaded.streaming_note()).c_str());
}

void print_timing(int n_chunk, int n_ctx, double seconds) {
  std::fprintf(stderr, "perplexity: %d chunks of %d tokens in %.2f s (%.2f s per chunk, %.1f tok/s)\n", n_chunk, n_ctx,
               seconds, seconds / n_chunk, n_chunk * static_cast<double>(n_ctx) / seconds);
}

// Perplexity over the text's windows; with a base file, each scored row's quantized
// log-probs are saved too (llama-perplexity's --kl-divergence-base without
// --kl-divergence).
int run_perplexity(const Options& o, const std::string& text, Engine& engine, const LoadedModel& loaded,
                   double load_ms) {
  const int n_ctx = o.load.n_ctx;
  const std::vector<TokenId> tokens = tokenize_text(engine, text);
  if (static_cast<int>(tokens.size()) < n_ctx) {
    throw std::invalid_argument("-f " + o.text_file + ": the text has " + std::to_string(tokens.size()) +
                                " tokens; a window of -c " + std::to_string(n_ctx) + " needs at least " +
                                std::to_string(n_ctx) + " (use a longer text or a smaller -c)");
  }
  const int n_chunk_max = static_cast<int>(tokens.size()) / n_ctx;
  const int n_chunk = o.n_chunks < 0 ? n_chunk_max : std::min(o.n_chunks, n_chunk_max);
  const int n_vocab = engine.config().n_vocab;
  const int n_scored = scored_positions(n_ctx);
  const int first = first_scored_position(n_ctx);
  const size_t nv = base_row_u16(n_vocab);

  std::ofstream base;
  std::vector<uint16_t> rows;
  if (!o.base_file.empty()) {
    base.open(o.base_file, std::ios::binary | std::ios::trunc);
    if (!base) throw UsageError("--kl-divergence-base: cannot write '" + o.base_file + "'");
    const auto end = tokens.begin() + static_cast<std::ptrdiff_t>(n_chunk) * n_ctx;
    const LogitsBaseHeader h{n_ctx, n_vocab, n_chunk, std::vector<TokenId>(tokens.begin(), end)};
    write_logits_base_header(base, h);
    rows.resize(static_cast<size_t>(engine.options().n_batch) * nv);
  }
  print_load_line(loaded, load_ms);
  std::fprintf(stderr, "perplexity: %zu tokens, %d chunks of %d, scoring the last %d positions of each%s\n",
               tokens.size(), n_chunk, n_ctx, n_scored,
               base.is_open() ? (", saving log-probs to " + o.base_file).c_str() : "");

  std::unique_ptr<Session> session = engine.new_session();
  Parallel& par = *engine.options().parallel;
  const TokenId bos = window_bos(engine);
  NllSums sums;
  std::vector<double> nll(static_cast<size_t>(engine.options().n_batch));
  const Clock::time_point start = Clock::now();
  for (int c = 0; c < n_chunk; ++c) {
    const std::vector<TokenId> window = window_of(tokens, c, n_ctx, bos);
    const TokenId* targets = tokens.data() + static_cast<size_t>(c) * n_ctx + first + 1;
    eval_window(*session, window, engine.options().n_batch, [&](int row0, std::span<const float> logits, int n) {
      for_rows(par, n, [&](int r) {
        const std::span<const float> row = logits.subspan(static_cast<size_t>(r) * n_vocab, n_vocab);
        const TokenId target = targets[row0 + r];
        nll[r] = base.is_open() ? quantize_log_probs(row, target, std::span(rows).subspan(r * nv, nv))
                                : token_nll(row, target);
      });
      for (int r = 0; r < n; ++r) sums.add(nll[r]);
      if (base.is_open()) {
        base.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(n * nv * sizeof(uint16_t)));
      }
    });
    const Estimate ppl = sums.perplexity();
    std::printf("[%d]%.4f±%.4f,", c + 1, ppl.value, ppl.error);
    std::fflush(stdout);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("\n");
  if (base.is_open()) {
    base.close();
    if (!base) throw std::runtime_error("--kl-divergence-base: writing '" + o.base_file + "' failed");
  }
  const Estimate ppl = sums.perplexity();
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl.value, ppl.error);
  print_timing(n_chunk, n_ctx, seconds);
  return 0;
}

void print_kld_chunk(int chunk, const KldSummary& k) {
  std::printf("%4d    %9.4f ± %9.4f    %10.5f ± %10.5f    %10.5f ± %10.5f    %6.3f ± %6.3f %%"
              "    %6.3f ± %6.3f %%\n",
              chunk, k.ppl.value, k.ppl.error, k.ln_ppl_ratio.value, k.ln_ppl_ratio.error, k.kld.value, k.kld.error,
              100.0 * k.rms_p_diff.value, 100.0 * k.rms_p_diff.error, 100.0 * k.same_top.value,
              100.0 * k.same_top.error);
}

// llama-perplexity's closing report of a KL-divergence run.
void print_kld_report(const KldSummary& k, std::vector<float> kld, std::vector<float> p_diff) {
  std::sort(kld.begin(), kld.end());
  std::sort(p_diff.begin(), p_diff.end());
  std::printf("\n====== Perplexity statistics ======\n");
  std::printf("Mean PPL(Q)                   : %10.6f ± %10.6f\n", k.ppl.value, k.ppl.error);
  std::printf("Mean PPL(base)                : %10.6f ± %10.6f\n", k.ppl_base.value, k.ppl_base.error);
  std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100.0 * k.ppl_correlation);
  std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", k.ln_ppl_ratio.value, k.ln_ppl_ratio.error);
  std::printf("Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", k.ppl_ratio.value, k.ppl_ratio.error);
  std::printf("Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n", k.ppl_diff.value, k.ppl_diff.error);

  std::printf("\n====== KL divergence statistics ======\n");
  std::printf("Mean    KLD: %10.6f ± %10.6f\n", k.kld.value, k.kld.error);
  std::printf("Maximum KLD: %10.6f\n", kld.back());
  const std::pair<const char*, float> kld_points[] = {{"99.9%", 0.999f}, {"99.0%", 0.990f}, {"95.0%", 0.950f},
                                                      {"90.0%", 0.900f}, {"Median", -1},     {"10.0%", 0.100f},
                                                      {" 5.0%", 0.050f}, {" 1.0%", 0.010f},  {" 0.1%", 0.001f}};
  for (const auto& [label, f] : kld_points) {
    std::printf("%-7s KLD: %10.6f\n", label, f < 0 ? median(kld) : percentile(kld, f));
  }
  std::printf("Minimum KLD: %10.6f\n", kld.front());

  std::printf("\n====== Token probability statistics ======\n");
  std::printf("Mean    Δp: %6.3f ± %5.3f %%\n", 100.0 * k.p_diff.value, 100.0 * k.p_diff.error);
  std::printf("Maximum Δp: %6.3f%%\n", 100.0 * p_diff.back());
  const std::pair<const char*, float> p_points[] = {
      {"99.9%", 0.999f}, {"99.0%", 0.990f}, {"95.0%", 0.950f}, {"90.0%", 0.900f}, {"75.0%", 0.750f}, {"Median", -1},
      {"25.0%", 0.250f}, {"10.0%", 0.100f}, {" 5.0%", 0.050f}, {" 1.0%", 0.010f}, {" 0.1%", 0.001f}};
  for (const auto& [label, f] : p_points) {
    std::printf("%-7s Δp: %6.3f%%\n", label, 100.0 * (f < 0 ? median(p_diff) : percentile(p_diff, f)));
  }
  std::printf("Minimum Δp: %6.3f%%\n", 100.0 * p_diff.front());
  std::printf("RMS Δp    : %6.3f ± %5.3f %%\n", 100.0 * k.rms_p_diff.value, 100.0 * k.rms_p_diff.error);
  std::printf("Same top p: %6.3f ± %5.3f %%\n", 100.0 * k.same_top.value, 100.0 * k.same_top.error);
}

// The text given with --kl-divergence must be the one the base was computed on.
void check_base_text(const LogitsBaseHeader& h, const std::vector<TokenId>& tokens, const Options& o) {
  if (tokens.size() < h.tokens.size()) {
    throw std::invalid_argument("-f " + o.text_file + ": the text has " + std::to_string(tokens.size()) +
                                " tokens but the base " + o.base_file + " holds " + std::to_string(h.tokens.size()) +
                                " (" + std::to_string(h.n_chunk) + " chunks of " + std::to_string(h.n_ctx) +
                                "): not the text it was computed on");
  }
  const auto diff = std::mismatch(h.tokens.begin(), h.tokens.end(), tokens.begin());
  if (diff.first != h.tokens.end()) {
    throw std::invalid_argument("-f " + o.text_file + ": token " + std::to_string(diff.first - h.tokens.begin()) +
                                " is " + std::to_string(*diff.second) + " but " + std::to_string(*diff.first) +
                                " in the base " + o.base_file + ": not the text (or tokenizer) it was computed on");
  }
}

// KL divergence of this model's distributions against the base's, over the base's
// windows (its tokens; -f only checks them).
int run_kl_divergence(const Options& o, const std::string& text, const LogitsBaseHeader& h, std::ifstream& in,
                      Engine& engine, const LoadedModel& loaded, double load_ms) {
  const int n_vocab = engine.config().n_vocab;
  if (h.n_vocab != n_vocab) {
    throw std::invalid_argument("--kl-divergence-base " + o.base_file + ": computed with a vocabulary of " +
                                std::to_string(h.n_vocab) + " tokens, but this model has " + std::to_string(n_vocab) +
                                ": not the same tokenizer");
  }
  if (!o.text_file.empty()) check_base_text(h, tokenize_text(engine, text), o);
  const int n_ctx = h.n_ctx;
  const int n_chunk = o.n_chunks < 0 ? h.n_chunk : std::min(o.n_chunks, h.n_chunk);
  const int n_scored = scored_positions(n_ctx);
  const int first = first_scored_position(n_ctx);
  const size_t nv = base_row_u16(n_vocab);
  const int n_batch = engine.options().n_batch;
  print_load_line(loaded, load_ms);
  std::fprintf(stderr, "kl-divergence: %d of the base's %d chunks of %d, scoring the last %d positions of each\n",
               n_chunk, h.n_chunk, n_ctx, n_scored);

  std::unique_ptr<Session> session = engine.new_session();
  Parallel& par = *engine.options().parallel;
  const TokenId bos = window_bos(engine);
  std::vector<uint16_t> rows(static_cast<size_t>(n_batch) * nv);
  std::vector<KldStats> row_stats(static_cast<size_t>(n_batch));
  std::vector<KldRow> row_out(static_cast<size_t>(n_batch));
  std::vector<float> kld_values, p_diff_values;
  kld_values.reserve(static_cast<size_t>(n_chunk) * n_scored);
  p_diff_values.reserve(kld_values.capacity());
  KldStats stats;
  std::printf("chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS"
              "            Same top p\n");
  const Clock::time_point start = Clock::now();
  for (int c = 0; c < n_chunk; ++c) {
    const std::vector<TokenId> window = window_of(h.tokens, c, n_ctx, bos);
    const TokenId* targets = h.tokens.data() + static_cast<size_t>(c) * n_ctx + first + 1;
    eval_window(*session, window, n_batch, [&](int row0, std::span<const float> logits, int n) {
      const std::span<uint16_t> batch_rows = std::span(rows).first(static_cast<size_t>(n) * nv);
      read_logits_base_rows(in, batch_rows, c, o.base_file);
      for_rows(par, n, [&](int r) {
        row_stats[r] = {};
        row_out[r] = kld_row(logits.subspan(static_cast<size_t>(r) * n_vocab, n_vocab),
                             batch_rows.subspan(r * nv, nv), targets[row0 + r], row_stats[r]);
      });
      for (int r = 0; r < n; ++r) {
        stats.add(row_stats[r]);
        kld_values.push_back(static_cast<float>(row_out[r].kld));
        p_diff_values.push_back(row_out[r].p_diff);
      }
    });
    print_kld_chunk(c + 1, summarize_kld(stats));
    std::fflush(stdout);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  print_kld_report(summarize_kld(stats), std::move(kld_values), std::move(p_diff_values));
  print_timing(n_chunk, n_ctx, seconds);
  return 0;
}

}  // namespace

int perplexity_command(const std::vector<std::string>& args) {
  Options o;
  o.load.n_ctx = kDefaultCtx;
  ArgParser p("runnel perplexity -m FILE -f TEXT [options]",
              "Prints the model's perplexity on TEXT as llama.cpp's llama-perplexity measures it: the\n"
              "text's tokens (BOS first when the model adds one) cut into windows of -c tokens, each\n"
              "evaluated from an empty cache with BOS first, its second half scored. A running\n"
              "estimate per window ([1]PPL±error,[2]...) then \"Final estimate: PPL = X +/- Y\".\n"
              "--kl-divergence-base FILE saves this run's log-probs in llama-perplexity's format; with\n"
              "--kl-divergence, the run is compared against such a file instead (KL divergence,\n"
              "both perplexities, same top token), over the base's own windows.");
  // add_load_options' flags, but for -c, whose default here is llama-perplexity's 512
  // rather than the model's context.
  p.string_option("-m, --model", &o.load.model, "FILE", "GGUF model (first part of a split model)");
  p.int_option("-c, --ctx-size", &o.load.n_ctx,
               "tokens per window (default 512, as llama-perplexity); with --kl-divergence the base's");
  p.int_option("-t, --threads", &o.load.n_threads, "threads (default: physical cores)");
  p.string_option("--kv-type", &o.load.kv_type, "TYPE", "KV cache type: f16 (default), q8_0, q4_0");
  p.string_option("--mem-budget", &o.load.mem_budget, "SIZE",
                  "memory to stay within, e.g. 2500M or 2.5G (default: the cgroup limit, else\n"
                  "MemAvailable); weights beyond it are streamed from the file layer by layer");
  p.string_option("-f, --file", &o.text_file, "FILE",
                  "the text (one trailing newline dropped, as llama-perplexity reads it); with\n"
                  "--kl-divergence it is optional and only checked against the base's tokens");
  p.int_option("--chunks", &o.n_chunks, "score at most N windows (default -1: every whole window)");
  p.int_option("-b, --batch-size", &o.load.n_batch,
               "tokens per forward pass; each costs a row of logits (default 64)");
  p.string_option("--kl-divergence-base", &o.base_file, "FILE",
                  "without --kl-divergence: save every scored position's log-probs to FILE (uint16\n"
                  "per token and position: ~n_vocab * 2 bytes each); with it: the base to compare against");
  p.flag("--kl-divergence", &o.kl_divergence,
         "compare against --kl-divergence-base (from runnel or llama-perplexity): mean KLD,\n"
         "its percentiles, PPL and PPL(base), ln(PPL/PPL(base)), Δp and the same-top-token rate");
  p.flag("--dry-run", &o.load.dry_run, "print the memory plan and exit (status 1 if it does not fit)");
  if (p.parse_or_print_help(args)) return 0;
  if (o.load.model.empty()) throw UsageError("-m: a model file is required");
  if (p.seen("-t") && o.load.n_threads < 1) {
    throw UsageError("-t: must be >= 1, got " + std::to_string(o.load.n_threads));
  }
  if (o.load.n_batch < 1) throw UsageError("-b: must be >= 1, got " + std::to_string(o.load.n_batch));
  if (o.n_chunks == 0 || o.n_chunks < -1) {
    throw UsageError("--chunks: must be >= 1 (or -1: all), got " + std::to_string(o.n_chunks));
  }
  if (o.kl_divergence && o.base_file.empty()) {
    throw UsageError("--kl-divergence: needs --kl-divergence-base FILE, a base saved by runnel perplexity or "
                     "llama-perplexity with --kl-divergence-base");
  }
  if (!o.kl_divergence && o.text_file.empty()) throw UsageError("-f: a text file is required");

  // A KL-divergence run takes its windows from the base: its header first, before the
  // model loads, so a wrong file fails at once.
  LogitsBaseHeader base;
  std::ifstream base_in;
  if (o.kl_divergence) {
    base_in.open(o.base_file, std::ios::binary);
    if (!base_in) throw UsageError("--kl-divergence-base: cannot read '" + o.base_file + "'");
    base = read_logits_base_header(base_in, o.base_file);
    if (p.seen("-c") && o.load.n_ctx != base.n_ctx) {
      throw UsageError("-c " + std::to_string(o.load.n_ctx) + ": the base " + o.base_file + " was computed with -c " +
                       std::to_string(base.n_ctx) + " (leave -c out to use it)");
    }
    o.load.n_ctx = base.n_ctx;
  }
  // Windows of fewer than 4 tokens score at most one position each, and none at 2.
  if (o.load.n_ctx < 4) {
    throw UsageError("-c: must be >= 4 (the first half of each window is context and its last position has "
                     "nothing to predict), got " + std::to_string(o.load.n_ctx));
  }
  // The text is read before the model loads, so a wrong path fails at once.
  const std::string text = o.text_file.empty() ? std::string() : read_text_file(o.text_file);
  select_kernels_from_env();

  o.load.all_logits = true;
  LoadedModel loaded = load_model(o.load);
  if (o.load.dry_run) return loaded.dry_run_status;
  Engine& engine = *loaded.engine;
  const double load_ms = engine.load_ms();
  return o.kl_divergence ? run_kl_divergence(o, text, base, base_in, engine, loaded, load_ms)
                         : run_perplexity(o, text, engine, loaded, load_ms);
}

}  // namespace runnel::cli
