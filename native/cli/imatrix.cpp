// runnel imatrix -m MODEL -f TEXT -o imatrix.gguf: collects the importance matrix that
// `runnel quantize --imatrix` (and llama-quantize) weight their searches with, as
// llama.cpp's llama-imatrix does (tools/imatrix/imatrix.cpp):
//   - the text's tokens (BOS first when the model adds one) are cut into non-overlapping
//     windows of -c tokens, each evaluated from an empty cache with BOS first;
//   - for every weight matrix of a layer (blk.*; output.weight too with --process-output)
//     the input rows of its products are summed as x^2 per input column (in_sum2), and
//     the rows counted; expert stacks (*_exps) per expert, over the tokens routed to it;
//     dense products of fewer than 16 rows (a window's last partial batch) left out;
//   - the file is llama-imatrix's GGUF (core/quant/imatrix_file.h): either tool's file
//     serves either quantizer.
// The forward pass hands the float inputs over through a MatmulObserver (null in every
// other command). A running perplexity per window is printed as llama-imatrix does
// (its second half scored), unless --no-ppl.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/quant/imatrix_file.h"
#include "core/runtime/engine.h"
#include "core/runtime/perplexity.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "native/cli/model_loader.h"

namespace runnel::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kDefaultCtx = 512;  // llama-imatrix's default -c
// llama-imatrix leaves out the dense products of fewer rows (an expert's are always taken).
constexpr int kMinRows = 16;

// Sums of squared activations per weight matrix, fed by the forward pass.
class ImatrixCollector : public MatmulObserver {
 public:
  explicit ImatrixCollector(bool process_output) : process_output_(process_output) {}

  void observe(const Matrix& w, const float* x, int n_tokens) override {
    if (!w.tensor || n_tokens <= 0) return;
    const std::string& name = w.tensor->name;
    if (name.rfind("blk.", 0) != 0 && !(process_output_ && name == "output.weight")) return;
    const int64_t n_in = w.n_in;
    const int64_t n_mat = w.tensor->dims.size() > 2 ? w.tensor->dims[2] : 1;
    if (n_mat == 1 && n_tokens < kMinRows) return;
    ImatrixEntry& e = data_.entries[name];
    if (e.sums.empty()) {
      e.sums.assign(static_cast<size_t>(n_in * n_mat), 0.0f);
      e.counts.assign(static_cast<size_t>(n_mat), 0);
    }
    float* acc = e.sums.data() + static_cast<size_t>(w.expert) * n_in;  // [n_in] of this matrix
    for (int t = 0; t < n_tokens; ++t) {
      const float* row = x + static_cast<size_t>(t) * n_in;
      for (int64_t j = 0; j < n_in; ++j) acc[j] += row[j] * row[j];
    }
    e.counts[static_cast<size_t>(w.expert)] += n_tokens;
    for (int64_t j = 0; j < n_in && non_finite_.empty(); ++j) {
      if (!std::isfinite(acc[j])) non_finite_ = name + " column " + std::to_string(j);
    }
  }

  // Throws naming the first sum that overflowed (llama-imatrix stops there too); the
  // forward pass itself never throws, so this is asked after each window.
  void check_finite() const {
    if (!non_finite_.empty())
      throw std::runtime_error("imatrix: the sum of squared activations of " + non_finite_ +
                               " is not finite: the model overflows on this text");
  }

  ImatrixData& data() { return data_; }

 private:
  bool process_output_;
  ImatrixData data_;
  std::string non_finite_;  // "NAME column J" of the first non-finite sum
};

struct Options {
  LoadRequest load;
  std::string text_file;
  std::string out_file = "imatrix.gguf";
  int n_chunks = -1;
  bool process_output = false;
  bool no_ppl = false;
};

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UsageError("-o: cannot write '" + tmp + "'");
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) throw std::runtime_error("-o: writing '" + tmp + "' failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("-o: cannot rename " + tmp + " to " + path);
}

// Evaluates window [n_ctx] from an empty cache, n_batch tokens a pass (every position's
// logits when all_logits); with sums, adds the nll of each position from n_ctx/2 on (but
// the last) of the next token.
void eval_window(Session& session, std::span<const TokenId> window,
                 std::span<const TokenId> targets, int n_batch, int n_vocab, bool all_logits,
                 NllSums* sums) {
  const int n_ctx = static_cast<int>(window.size());
  const int first = first_scored_position(n_ctx);
  session.reset();
  for (int pos = 0; pos < n_ctx; pos += n_batch) {
    const int n = std::min(n_batch, n_ctx - pos);
    const std::span<const TokenId> part =
        window.subspan(static_cast<size_t>(pos), static_cast<size_t>(n));
    if (!all_logits) {
      session.eval(part);
      continue;
    }
    const std::vector<float> logits = session.eval_all(part);
    for (int r = 0; r < n && sums; ++r) {
      const int p = pos + r;
      if (p < first || p >= n_ctx - 1) continue;
      sums->add(token_nll(
          std::span<const float>(logits).subspan(static_cast<size_t>(r) * n_vocab, n_vocab),
          targets[static_cast<size_t>(p)]));
    }
  }
}

int run_imatrix(const Options& o, const std::string& text, Engine& engine,
                const LoadedModel& loaded) {
  const Tokenizer& tok = engine.tokenizer();
  if (tok.add_eos()) {
    throw std::invalid_argument(
        "this model's tokenizer appends EOS to every text (tokenizer.ggml.add_eos_token); "
        "imatrix windows need plain text, as llama-imatrix requires");
  }
  const std::vector<TokenId> tokens =
      tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
  const int n_ctx = o.load.n_ctx;
  if (static_cast<int>(tokens.size()) < n_ctx) {
    throw std::invalid_argument("-f " + o.text_file + ": the text has " +
                                std::to_string(tokens.size()) + " tokens; a window of -c " +
                                std::to_string(n_ctx) + " needs at least " + std::to_string(n_ctx) +
                                " (use a longer text or a smaller -c)");
  }
  const int n_chunk_max = static_cast<int>(tokens.size()) / n_ctx;
  const int n_chunk = o.n_chunks < 0 ? n_chunk_max : std::min(o.n_chunks, n_chunk_max);
  const int n_vocab = engine.config().n_vocab;
  const TokenId bos = tok.add_bos() && tok.bos() >= 0 ? tok.bos() : -1;
  std::fprintf(stderr, "imatrix: %d threads, %s; %zu tokens, %d chunks of %d%s\n", loaded.n_threads,
               loaded.streaming_note().empty() ? "resident" : loaded.streaming_note().c_str(),
               tokens.size(), n_chunk, n_ctx,
               o.process_output ? ", collecting output.weight too" : "");

  ImatrixCollector collector(o.process_output);
  std::unique_ptr<Session> session = engine.new_session();
  session->set_matmul_observer(&collector);
  NllSums sums;
  const Clock::time_point start = Clock::now();
  for (int c = 0; c < n_chunk; ++c) {
    const auto begin = tokens.begin() + static_cast<std::ptrdiff_t>(c) * n_ctx;
    std::vector<TokenId> window(begin, begin + n_ctx);
    if (bos >= 0) window[0] = bos;  // every window starts like a document
    // targets[p]: the token after position p of the window
    const std::span<const TokenId> targets(tokens.data() + static_cast<size_t>(c) * n_ctx + 1,
                                           static_cast<size_t>(n_ctx - 1));
    eval_window(*session, window, targets, engine.options().n_batch, n_vocab, o.load.all_logits,
                o.no_ppl ? nullptr : &sums);
    collector.check_finite();
    if (!o.no_ppl && sums.count > 0) std::printf("[%d]%.4f,", c + 1, sums.perplexity().value);
    std::fflush(stdout);
  }
  session->set_matmul_observer(nullptr);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!o.no_ppl && sums.count > 0) {  // windows under 4 tokens score nothing
    const Estimate ppl = sums.perplexity();
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", ppl.value, ppl.error);
    std::fflush(stdout);
  }

  ImatrixData& data = collector.data();
  data.datasets = {o.text_file};
  data.chunk_count = static_cast<uint32_t>(n_chunk);
  data.chunk_size = static_cast<uint32_t>(n_ctx);
  write_file(o.out_file, imatrix_bytes(data));
  std::fprintf(stderr,
               "imatrix: %zu matrices from %d chunks of %d tokens in %.2f s (%.1f tok/s) -> %s\n",
               data.entries.size(), n_chunk, n_ctx, seconds,
               n_chunk * static_cast<double>(n_ctx) / seconds, o.out_file.c_str());
  return 0;
}

}  // namespace

int imatrix_command(const std::vector<std::string>& args) {
  Options o;
  o.load.n_ctx = kDefaultCtx;
  ArgParser p(
      "runnel imatrix -m FILE -f TEXT [-o imatrix.gguf] [options]",
      "Collects an importance matrix for `runnel quantize --imatrix` as llama.cpp's\n"
      "llama-imatrix does: the text cut into windows of -c tokens (BOS first), and for each\n"
      "layer's weight matrix the sum over its input rows of x^2 per input column and the\n"
      "row count (per expert for expert stacks). Writes llama-imatrix's GGUF format.");
  p.string_option("-m, --model", &o.load.model, "FILE",
                  "GGUF model (F16 or F32 is best: the quantizer's input)");
  p.string_option("-f, --file", &o.text_file, "FILE", "the text (one trailing newline dropped)");
  p.string_option("-o, --output", &o.out_file, "FILE",
                  "where to write the matrix (default imatrix.gguf)");
  p.int_option("-c, --ctx-size", &o.load.n_ctx,
               "tokens per window (default 512, as llama-imatrix)");
  p.int_option("--chunks", &o.n_chunks, "at most N windows (default -1: every whole window)");
  p.int_option("-t, --threads", &o.load.n_threads, "threads (default: physical cores)");
  p.int_option("-b, --batch-size", &o.load.n_batch,
               "tokens per forward pass (default 64; at least 16: smaller products are not collected)");
  p.string_option(
      "--mem-budget", &o.load.mem_budget, "SIZE",
      "memory to stay within, e.g. 2500M (default: the cgroup limit, else MemAvailable)");
  p.flag("--process-output", &o.process_output,
         "collect output.weight too (llama-imatrix skips it by default)");
  p.flag("--no-ppl", &o.no_ppl,
         "do not compute the perplexity estimate (skips the logits of most positions)");
  if (p.parse_or_print_help(args)) return 0;
  if (o.load.model.empty()) throw UsageError("-m: a model file is required");
  if (o.text_file.empty()) throw UsageError("-f: a text file is required");
  if (o.out_file.empty()) throw UsageError("-o: expected a file name, got ''");
  if (p.seen("-t") && o.load.n_threads < 1)
    throw UsageError("-t: must be >= 1, got " + std::to_string(o.load.n_threads));
  if (o.load.n_batch < 1)
    throw UsageError("-b: must be >= 1, got " + std::to_string(o.load.n_batch));
  if (o.n_chunks == 0 || o.n_chunks < -1)
    throw UsageError("--chunks: must be >= 1 (or -1: all), got " + std::to_string(o.n_chunks));
  if (o.load.n_ctx < kMinRows || o.load.n_batch < kMinRows) {
    const bool ctx = o.load.n_ctx < kMinRows;
    throw UsageError(std::string(ctx ? "-c: " : "-b: ") + std::to_string(ctx ? o.load.n_ctx : o.load.n_batch) +
                     " is below " + std::to_string(kMinRows) + ": like llama-imatrix, products of fewer than " +
                     std::to_string(kMinRows) + " rows are not collected, so nothing would be");
  }
  const std::string text =
      read_text_file(o.text_file);  // before the model loads: a wrong path fails at once
  select_kernels_from_env();
  // Logits of every position: the perplexity, and output.weight's input rows for all of them.
  o.load.all_logits = !o.no_ppl || o.process_output;
  LoadedModel loaded = load_model(o.load);
  return run_imatrix(o, text, *loaded.engine, loaded);
}

}  // namespace runnel::cli
