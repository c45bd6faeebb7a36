// Perplexity and KL divergence over a model's logits, computed as llama.cpp's
// llama-perplexity computes them (tools/perplexity/perplexity.cpp), so that the figures
// and the saved logits ("KL-divergence base") files of the two tools agree:
//   - the text is cut into windows of n_ctx tokens, each evaluated from an empty cache;
//     the first n_ctx/2 positions are context, and each later position but the last
//     scores the next token (scored_positions(n_ctx) per window);
//   - log-softmax takes the max in float, sums expf(l - max) in double and takes the
//     log in double, as llama.cpp does;
//   - a base file holds, per scored position, the log-softmax quantized to uint16 with
//     a per-row scale and minimum (quantize_log_probs).
// Pure functions over spans and std streams (the caller opens the files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace runnel {

// Positions of a window that score the next token: n_ctx/2 .. n_ctx - 2.
inline int first_scored_position(int n_ctx) { return n_ctx / 2; }
inline int scored_positions(int n_ctx) { return n_ctx - 1 - n_ctx / 2; }

// -log softmax(logits)[target]: llama-perplexity's plain path (float max, double sum
// and log). logits [n_vocab].
double token_nll(std::span<const float> logits, TokenId target);

// A value with its standard error.
struct Estimate {
  double value = 0;
  double error = 0;
};

// Running sums of per-token negative log-likelihoods.
struct NllSums {
  double nll = 0;
  double nll2 = 0;
  size_t count = 0;

  void add(double v) {
    nll += v;
    nll2 += v * v;
    ++count;
  }
  // exp(mean nll) and its error, ppl * sqrt(var(nll) / (count - 1)) as llama-perplexity's
  // "Final estimate: PPL = X +/- Y" (error 0 for fewer than two tokens or no spread).
  Estimate perplexity() const;
};

// ---- KL-divergence base files (llama-perplexity's --kl-divergence-base) -------------
// In the host's byte order, as llama-perplexity writes them (little-endian on every
// target runnel builds for):
//   "_logits_" | i32 n_ctx | i32 n_vocab | i32 n_chunk | i32 tokens[n_chunk * n_ctx] |
//   for each chunk, for each of its scored_positions(n_ctx) positions, one row of
//   base_row_u16(n_vocab) uint16: f32 scale, f32 min_log_prob (as 4 uint16), then
//   n_vocab levels q (log-prob = scale * q + min_log_prob), padded to an even count.
// The tokens are the text's (not the BOS that replaces each window's first token).

// uint16 values in a row: 2 * ceil(n_vocab / 2) + 4.
inline size_t base_row_u16(int n_vocab) { return 2 * ((static_cast<size_t>(n_vocab) + 1) / 2) + 4; }

// Quantizes log-softmax(logits) [n_vocab] into `row` [base_row_u16(n_vocab)]: levels
// span [max(min logit, max logit - 16), max logit] in 65535 steps, rounded to nearest
// even; lower logits get level 0. Returns the target's nll as llama-perplexity's saving
// path computes it (float log-sum-exp).
double quantize_log_probs(std::span<const float> logits, TokenId target, std::span<uint16_t> row);

// The log-probability of token i in a quantized row.
float base_log_prob(std::span<const uint16_t> row, int i);

struct LogitsBaseHeader {
  int32_t n_ctx = 0;
  int32_t n_vocab = 0;
  int32_t n_chunk = 0;
  std::vector<TokenId> tokens;  // [n_chunk * n_ctx]

  // The size of the whole file this header describes, rows included.
  uint64_t file_bytes() const;
};

void write_logits_base_header(std::ostream& out, const LogitsBaseHeader& header);
// Throws std::runtime_error "NAME: ..." for a file that is not a base (magic), sizes
// out of range, tokens outside [0, n_vocab) or a short read. Leaves `in` at the rows.
LogitsBaseHeader read_logits_base_header(std::istream& in, const std::string& name);
// Reads rows.size() / base_row_u16(n_vocab) rows; throws "NAME: ... ends inside chunk C".
void read_logits_base_rows(std::istream& in, std::span<uint16_t> rows, int chunk, const std::string& name);

// ---- KL divergence against a base ---------------------------------------------------

// Sums over scored tokens, llama-perplexity's kl_divergence_result.
struct KldStats {
  double sum_nll = 0, sum_nll2 = 0;
  double sum_nll_base = 0, sum_nll_base2 = 0;
  double sum_nll_nll_base = 0;
  double sum_kld = 0, sum_kld2 = 0;
  double sum_p_diff = 0, sum_p_diff2 = 0, sum_p_diff4 = 0;
  float max_p_diff = 0;
  size_t n_same_top = 0;
  size_t count = 0;

  void add(const KldStats& o);
};

struct KldRow {
  double kld = 0;     // KL(base || this) at this position
  float p_diff = 0;   // p(target) - p_base(target)
};

// One scored position: this run's logits [n_vocab] against the base's quantized row
// (only base log-probs above -16 contribute, as in llama-perplexity). Adds the position
// to `stats`.
KldRow kld_row(std::span<const float> logits, std::span<const uint16_t> base_row, TokenId target,
               KldStats& stats);

// The figures llama-perplexity reports from KldStats (mean and standard error each).
struct KldSummary {
  Estimate ppl, ppl_base;
  double ppl_correlation = 0;  // of ln PPL and ln PPL(base)
  Estimate ln_ppl_ratio;       // ln(PPL / PPL(base))
  Estimate ppl_ratio, ppl_diff;
  Estimate kld;
  Estimate p_diff;             // mean Δp
  Estimate rms_p_diff;
  Estimate same_top;           // fraction of positions whose argmax matches the base's
};
KldSummary summarize_kld(const KldStats& s);

// llama-perplexity's mean_and_uncertainty: sum/count and sqrt(var / (count - 1)),
// the error left 0 for 10 samples or fewer.
Estimate mean_and_uncertainty(double sum, double sum2, size_t count);

// Linear interpolation between the closest ranks of `sorted` (ascending, non-empty);
// fraction 0 and 1 give the ends.
float percentile(std::span<const float> sorted, float fraction);
// The middle value, or the mean of the two middle ones.
float median(std::span<const float> sorted);

}  // namespace runnel
