#include "core/runtime/perplexity.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <istream>
#include <ostream>
#include <stdexcept>

#include "kernels/ref/quant_math.h"

namespace runnel {
namespace {

constexpr char kBaseMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
// Sanity limits against a damaged header asking for absurd allocations.
constexpr int32_t kMaxBaseCtx = 1 << 24;
constexpr int32_t kMaxBaseVocab = 1 << 24;
constexpr uint64_t kMaxBaseTokens = uint64_t{1} << 28;
// Base log-probs at or below this do not enter the KL divergence (llama-perplexity's
// cut, the same 16 nats the quantization keeps below the max).
constexpr float kLogProbFloor = -16.0f;

float max_of(std::span<const float> v) {
  float m = v[0];
  for (size_t i = 1; i < v.size(); ++i) m = std::max(m, v[i]);
  return m;
}

// sum_i expf(l_i - max) in double, as llama-perplexity sums.
double sum_exp(std::span<const float> logits, float max_logit) {
  double sum = 0.0;
  for (const float l : logits) sum += std::exp(l - max_logit);
  return sum;
}

void check_target(std::span<const float> logits, TokenId target) {
  if (logits.empty() || target < 0 || static_cast<size_t>(target) >= logits.size()) {
    throw std::invalid_argument("token " + std::to_string(target) + " is outside the " +
                                std::to_string(logits.size()) + " logits of a row");
  }
}

void read_exact(std::istream& in, void* dst, size_t n_bytes, const std::string& name, const std::string& what) {
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n_bytes));
  if (static_cast<size_t>(in.gcount()) != n_bytes) {
    throw std::runtime_error(name + ": the file ends inside " + what);
  }
}

}  // namespace

double token_nll(std::span<const float> logits, TokenId target) {
  check_target(logits, target);
  const float max_logit = max_of(logits);
  const double sum = sum_exp(logits, max_logit);
  // (float - float) - double, as llama-perplexity's log_softmax.
  return -((logits[target] - max_logit) - std::log(sum));
}

Estimate NllSums::perplexity() const {
  if (count == 0) return {};
  const double mean = nll / static_cast<double>(count);
  const double ppl = std::exp(mean);
  const double var = nll2 / static_cast<double>(count) - mean * mean;
  if (count < 2 || !(var > 0)) return {ppl, 0};
  return {ppl, ppl * std::sqrt(var / static_cast<double>(count - 1))};
}

double quantize_log_probs(std::span<const float> logits, TokenId target, std::span<uint16_t> row) {
  check_target(logits, target);
  const size_t n_vocab = logits.size();
  if (row.size() != base_row_u16(static_cast<int>(n_vocab))) {
    throw std::invalid_argument("a base row of " + std::to_string(n_vocab) + " tokens needs " +
                                std::to_string(base_row_u16(static_cast<int>(n_vocab))) + " uint16, got " +
                                std::to_string(row.size()));
  }
  float max_logit = logits[0];
  float min_logit = logits[0];
  for (size_t i = 1; i < n_vocab; ++i) {
    max_logit = std::max(max_logit, logits[i]);
    min_logit = std::min(min_logit, logits[i]);
  }
  min_logit = std::max(min_logit, max_logit - 16);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp(logits, max_logit)));
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.f;
  const float header[2] = {scale, min_log_prob};
  std::memcpy(row.data(), header, sizeof header);
  uint16_t* levels = row.data() + 4;
  std::fill(levels, row.data() + row.size(), uint16_t{0});
  if (scale != 0) {
    const float inv_scale = 1 / scale;
    for (size_t i = 0; i < n_vocab; ++i) {
      // Rounded as llama-perplexity rounds (ggml's nearest_int; levels in [0, 65535]) and
      // truncated to 16 bits as it stores them, so the levels match its files.
      if (logits[i] > min_logit) {
        levels[i] = static_cast<uint16_t>(ref::nearest_int(inv_scale * (logits[i] - min_logit)));
      }
    }
  }
  return max_logit + log_sum_exp - logits[target];
}

float base_log_prob(std::span<const uint16_t> row, int i) {
  float header[2];
  std::memcpy(header, row.data(), sizeof header);
  return header[0] * row[4 + static_cast<size_t>(i)] + header[1];
}

uint64_t LogitsBaseHeader::file_bytes() const {
  const uint64_t n_tokens = static_cast<uint64_t>(n_chunk) * static_cast<uint64_t>(n_ctx);
  const uint64_t n_rows = static_cast<uint64_t>(n_chunk) * static_cast<uint64_t>(scored_positions(n_ctx));
  return sizeof kBaseMagic + 3 * sizeof(int32_t) + n_tokens * sizeof(TokenId) +
         n_rows * base_row_u16(n_vocab) * sizeof(uint16_t);
}

void write_logits_base_header(std::ostream& out, const LogitsBaseHeader& h) {
  if (h.tokens.size() != static_cast<size_t>(h.n_chunk) * static_cast<size_t>(h.n_ctx)) {
    throw std::invalid_argument("base header: " + std::to_string(h.tokens.size()) + " tokens for " +
                                std::to_string(h.n_chunk) + " chunks of " + std::to_string(h.n_ctx));
  }
  const int32_t sizes[3] = {h.n_ctx, h.n_vocab, h.n_chunk};
  out.write(kBaseMagic, sizeof kBaseMagic);
  out.write(reinterpret_cast<const char*>(sizes), sizeof sizes);
  out.write(reinterpret_cast<const char*>(h.tokens.data()),
            static_cast<std::streamsize>(h.tokens.size() * sizeof(TokenId)));
}

LogitsBaseHeader read_logits_base_header(std::istream& in, const std::string& name) {
  const std::istream::pos_type start = in.tellg();
  char magic[sizeof kBaseMagic];
  in.read(magic, sizeof magic);
  if (static_cast<size_t>(in.gcount()) != sizeof magic || std::memcmp(magic, kBaseMagic, sizeof magic) != 0) {
    throw std::runtime_error(name + ": not a logits base file (it does not start with \"_logits_\")");
  }
  int32_t sizes[3];
  read_exact(in, sizes, sizeof sizes, name, "its header");
  LogitsBaseHeader h;
  h.n_ctx = sizes[0];
  h.n_vocab = sizes[1];
  h.n_chunk = sizes[2];
  if (h.n_ctx < 2 || h.n_ctx > kMaxBaseCtx || h.n_vocab < 1 || h.n_vocab > kMaxBaseVocab || h.n_chunk < 1 ||
      static_cast<uint64_t>(h.n_ctx) * static_cast<uint64_t>(h.n_chunk) > kMaxBaseTokens) {
    throw std::runtime_error(name + ": implausible header (n_ctx " + std::to_string(h.n_ctx) + ", n_vocab " +
                             std::to_string(h.n_vocab) + ", n_chunk " + std::to_string(h.n_chunk) + ")");
  }
  // A seekable stream is checked against the size the header implies before any row is
  // read: a truncated or padded file fails now, not after hours of evaluation.
  if (start != std::istream::pos_type(-1)) {
    const std::istream::pos_type here = in.tellg();
    in.seekg(0, std::ios::end);
    const std::istream::pos_type end = in.tellg();
    in.seekg(here);
    const uint64_t n_bytes = static_cast<uint64_t>(end - start);
    if (n_bytes != h.file_bytes()) {
      throw std::runtime_error(name + ": " + std::to_string(n_bytes) + " bytes, but its header (n_ctx " +
                               std::to_string(h.n_ctx) + ", n_vocab " + std::to_string(h.n_vocab) + ", " +
                               std::to_string(h.n_chunk) + " chunks) makes " + std::to_string(h.file_bytes()));
    }
  }
  h.tokens.resize(static_cast<size_t>(h.n_chunk) * static_cast<size_t>(h.n_ctx));
  read_exact(in, h.tokens.data(), h.tokens.size() * sizeof(TokenId), name, "its tokens");
  for (size_t i = 0; i < h.tokens.size(); ++i) {
    if (h.tokens[i] < 0 || h.tokens[i] >= h.n_vocab) {
      throw std::runtime_error(name + ": token " + std::to_string(i) + " is " + std::to_string(h.tokens[i]) +
                               ", outside its vocabulary of " + std::to_string(h.n_vocab));
    }
  }
  return h;
}

void read_logits_base_rows(std::istream& in, std::span<uint16_t> rows, int chunk, const std::string& name) {
  read_exact(in, rows.data(), rows.size_bytes(), name, "chunk " + std::to_string(chunk + 1));
}

void KldStats::add(const KldStats& o) {
  sum_nll += o.sum_nll;
  sum_nll2 += o.sum_nll2;
  sum_nll_base += o.sum_nll_base;
  sum_nll_base2 += o.sum_nll_base2;
  sum_nll_nll_base += o.sum_nll_nll_base;
  sum_kld += o.sum_kld;
  sum_kld2 += o.sum_kld2;
  sum_p_diff += o.sum_p_diff;
  sum_p_diff2 += o.sum_p_diff2;
  sum_p_diff4 += o.sum_p_diff4;
  max_p_diff = std::max(max_p_diff, o.max_p_diff);
  n_same_top += o.n_same_top;
  count += o.count;
}

KldRow kld_row(std::span<const float> logits, std::span<const uint16_t> base_row, TokenId target, KldStats& s) {
  check_target(logits, target);
  const size_t n_vocab = logits.size();
  if (base_row.size() != base_row_u16(static_cast<int>(n_vocab))) {
    throw std::invalid_argument("a base row for " + std::to_string(n_vocab) + " logits needs " +
                                std::to_string(base_row_u16(static_cast<int>(n_vocab))) + " uint16, got " +
                                std::to_string(base_row.size()));
  }
  float max_logit = logits[0];
  size_t imax = 0;
  for (size_t i = 1; i < n_vocab; ++i) {
    if (logits[i] > max_logit) {
      max_logit = logits[i];
      imax = i;
    }
  }
  const float log_sum_exp = static_cast<float>(std::log(sum_exp(logits, max_logit)));
  float header[2];
  std::memcpy(header, base_row.data(), sizeof header);
  const float scale = header[0];
  const float min_log_prob = header[1];
  const uint16_t* levels = base_row.data() + 4;

  // Float arithmetic where llama-perplexity has it, so the sums agree.
  const float nll = max_logit + log_sum_exp - logits[target];
  const float nll_base = -(scale * levels[target] + min_log_prob);
  s.sum_nll += nll;
  s.sum_nll2 += nll * nll;
  s.sum_nll_base += nll_base;
  s.sum_nll_base2 += nll_base * nll_base;
  s.sum_nll_nll_base += nll * nll_base;

  const float log_norm = max_logit + log_sum_exp;  // log-prob i = logits[i] - log_norm
  double kld = 0;
  size_t imax_base = 0;
  float log_p_base_max = 0;
  for (size_t i = 0; i < n_vocab; ++i) {
    const float log_p_base = scale * levels[i] + min_log_prob;
    if (i == 0 || log_p_base > log_p_base_max) {
      log_p_base_max = log_p_base;
      imax_base = i;
    }
    if (log_p_base > kLogProbFloor) {
      kld += std::exp(log_p_base) * (log_p_base - logits[i] + log_norm);
    }
  }
  s.sum_kld += kld;
  s.sum_kld2 += kld * kld;
  ++s.count;
  if (imax == imax_base) ++s.n_same_top;

  const float p_diff = std::exp(-nll) - std::exp(-nll_base);
  const double p_diff2 = p_diff * p_diff;
  s.sum_p_diff += p_diff;
  s.sum_p_diff2 += p_diff2;
  s.sum_p_diff4 += p_diff2 * p_diff2;
  s.max_p_diff = std::max(s.max_p_diff, std::fabs(p_diff));
  return {kld, p_diff};
}

Estimate mean_and_uncertainty(double sum, double sum2, size_t count) {
  if (count < 1) return {};
  const double n = static_cast<double>(count);
  const double mean = sum / n;
  const double var = sum2 / n - mean * mean;
  return {mean, var > 0 && count > 10 ? std::sqrt(var / (n - 1)) : 0.0};
}

namespace {

// Covariance of the means of a and b (llama-perplexity's), 0 below 10 samples.
double covariance_of_means(double sum_a, double sum_b, double sum_ab, size_t count) {
  if (count < 10) return 0.0;
  const double n = static_cast<double>(count);
  return (sum_ab / n - (sum_a / n) * (sum_b / n)) / (n - 1);
}

}  // namespace

KldSummary summarize_kld(const KldStats& s) {
  KldSummary r;
  const Estimate log_ppl = mean_and_uncertainty(s.sum_nll, s.sum_nll2, s.count);
  const Estimate log_ppl_base = mean_and_uncertainty(s.sum_nll_base, s.sum_nll_base2, s.count);
  r.ppl = {std::exp(log_ppl.value), std::exp(log_ppl.value) * log_ppl.error};
  r.ppl_base = {std::exp(log_ppl_base.value), std::exp(log_ppl_base.value) * log_ppl_base.error};
  const double cov = covariance_of_means(s.sum_nll, s.sum_nll_base, s.sum_nll_nll_base, s.count);
  const double denom = log_ppl.error * log_ppl_base.error;
  r.ppl_correlation = denom > 0 ? cov / denom : 0.0;
  const double ln_ratio_var = log_ppl.error * log_ppl.error + log_ppl_base.error * log_ppl_base.error - 2.0 * cov;
  r.ln_ppl_ratio = {log_ppl.value - log_ppl_base.value, std::sqrt(std::max(0.0, ln_ratio_var))};
  r.ppl_ratio = {std::exp(r.ln_ppl_ratio.value), std::exp(r.ln_ppl_ratio.value) * r.ln_ppl_ratio.error};
  const double ppl_cov = r.ppl.value * r.ppl_base.value * cov;
  const double diff_var = r.ppl.error * r.ppl.error + r.ppl_base.error * r.ppl_base.error - 2.0 * ppl_cov;
  r.ppl_diff = {r.ppl.value - r.ppl_base.value, std::sqrt(std::max(0.0, diff_var))};
  r.kld = mean_and_uncertainty(s.sum_kld, s.sum_kld2, s.count);
  r.p_diff = mean_and_uncertainty(s.sum_p_diff, s.sum_p_diff2, s.count);
  const Estimate mse = mean_and_uncertainty(s.sum_p_diff2, s.sum_p_diff4, s.count);
  const double rms = std::sqrt(mse.value);
  r.rms_p_diff = {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
  if (s.count > 0) {
    const double top = static_cast<double>(s.n_same_top) / static_cast<double>(s.count);
    r.same_top = {top, s.count > 1 ? std::sqrt(top * (1 - top) / static_cast<double>(s.count - 1)) : 0.0};
  }
  return r;
}

float percentile(std::span<const float> sorted, float fraction) {
  if (sorted.empty()) throw std::invalid_argument("percentile of no values");
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  float p = fraction * static_cast<float>(sorted.size() - 1);
  const size_t ip = static_cast<size_t>(p);
  p -= static_cast<float>(ip);
  return (1 - p) * sorted[ip] + p * sorted[std::min(ip + 1, sorted.size() - 1)];
}

float median(std::span<const float> sorted) {
  if (sorted.empty()) throw std::invalid_argument("median of no values");
  const size_t n = sorted.size();
  return n % 2 == 0 ? 0.5f * (sorted[n / 2] + sorted[n / 2 - 1]) : sorted[n / 2];
}

}  // namespace runnel
