// Perplexity and KL-divergence math (core/runtime/perplexity.h): hand-computed
// log-softmax, quantized rows and KL divergences; the base file format written and read
// back; and a base written by llama.cpp's llama-perplexity read as it meant it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "core/runtime/perplexity.h"

namespace runnel {
namespace {

using Catch::Matchers::Contains;

std::vector<uint16_t> quantized(const std::vector<float>& logits, TokenId target, double* nll = nullptr) {
  std::vector<uint16_t> row(base_row_u16(static_cast<int>(logits.size())), 0xFFFF);
  const double v = quantize_log_probs(logits, target, row);
  if (nll) *nll = v;
  return row;
}

TEST_CASE("scored positions are the second half of a window but its last", "[perplexity]") {
  CHECK(first_scored_position(512) == 256);
  CHECK(scored_positions(512) == 255);  // positions 256..510 predict tokens 257..511
  CHECK(first_scored_position(5) == 2);
  CHECK(scored_positions(5) == 2);
  CHECK(scored_positions(4) == 1);
}

TEST_CASE("token_nll is -log softmax at the target", "[perplexity]") {
  const std::vector<float> logits = {1, 2, 3};
  // log(e^1 + e^2 + e^3) - 3 = log(1 + e^-1 + e^-2)
  const double lse_minus_max = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  CHECK(lse_minus_max == Approx(0.40760596).epsilon(1e-7));
  CHECK(token_nll(logits, 2) == Approx(lse_minus_max).epsilon(1e-6));
  CHECK(token_nll(logits, 0) == Approx(2 + lse_minus_max).epsilon(1e-6));
  // Shifting every logit changes nothing.
  CHECK(token_nll(std::vector<float>{101, 102, 103}, 0) == Approx(2 + lse_minus_max).epsilon(1e-6));
  CHECK_THROWS_WITH(token_nll(logits, 3), Contains("outside the 3 logits"));
}

TEST_CASE("NllSums gives exp(mean) and llama-perplexity's error", "[perplexity]") {
  NllSums s;
  for (double v : {1.0, 2.0, 3.0}) s.add(v);
  const Estimate ppl = s.perplexity();
  CHECK(ppl.value == Approx(std::exp(2.0)));
  // var = 14/3 - 4 = 2/3; error = ppl * sqrt(var / (n - 1)) = e^2 * sqrt(1/3)
  CHECK(ppl.error == Approx(std::exp(2.0) * std::sqrt(1.0 / 3.0)));
  NllSums one;
  one.add(0.5);
  CHECK(one.perplexity().value == Approx(std::exp(0.5)));
  CHECK(one.perplexity().error == 0);
}

TEST_CASE("quantize_log_probs: levels over the top 16 nats, header scale and minimum", "[perplexity]") {
  double nll = 0;
  const std::vector<uint16_t> row = quantized({2, 1, 0, -20}, 1, &nll);
  REQUIRE(row.size() == 8);  // 4 uint16 of header + 4 levels
  const double lse = std::log(1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-22.0));  // after subtracting max 2
  CHECK(nll == Approx(2 + lse - 1).epsilon(1e-6));
  float header[2];
  std::memcpy(header, row.data(), sizeof header);
  // The minimum is clamped to max - 16 = -14: scale = 16 / 65535, min log-prob = -14 - 2 - lse.
  CHECK(header[0] == Approx(16.0 / 65535).epsilon(1e-6));
  CHECK(header[1] == Approx(-16 - lse).epsilon(1e-6));
  // (l - (-14)) / scale: 16 -> 65535, 15 -> 61439.06 -> 61439, 14 -> 57343.1 -> 57343; -20 < -14 -> 0.
  CHECK(row[4] == 65535);
  CHECK(row[5] == 61439);
  CHECK(row[6] == 57343);
  CHECK(row[7] == 0);
  CHECK(base_log_prob(row, 0) == Approx(-lse).margin(2e-6));
  CHECK(base_log_prob(row, 1) == Approx(-1 - lse).margin(16.0 / 65535));
  CHECK(base_log_prob(row, 3) == Approx(-16 - lse).epsilon(1e-6));
}

TEST_CASE("quantize_log_probs pads odd vocabularies and handles flat rows", "[perplexity]") {
  const std::vector<uint16_t> odd = quantized({0, -1, -2}, 0);
  REQUIRE(odd.size() == 8);  // 4 + 3 levels + 1 padding
  CHECK(odd[4] == 65535);
  CHECK(odd[7] == 0);  // the padding is written as zero, not left as it was (0xFFFF)
  double nll = 0;
  const std::vector<uint16_t> flat = quantized({5, 5, 5, 5}, 2, &nll);
  CHECK(nll == Approx(std::log(4.0)).epsilon(1e-6));
  float header[2];
  std::memcpy(header, flat.data(), sizeof header);
  CHECK(header[0] == 0);  // no range: every level 0, every log-prob the minimum
  for (int i = 0; i < 4; ++i) {
    CHECK(flat[4 + i] == 0);
    CHECK(base_log_prob(flat, i) == Approx(-std::log(4.0)).epsilon(1e-6));
  }
  std::vector<uint16_t> short_row(7);
  CHECK_THROWS_WITH(quantize_log_probs(std::vector<float>{0, 1, 2, 3}, 0, short_row),
                    Contains("needs 8 uint16, got 7"));
}

// Two positions with closed forms: base p = (1/2, 1/2) vs q = (3/4, 1/4), then base
// p = (1/4, 3/4) vs q = (3/4, 1/4).
KldStats two_hand_rows(std::vector<KldRow>* rows) {
  const float ln3 = std::log(3.0f);
  KldStats s;
  rows->push_back(kld_row(std::vector<float>{ln3, 0}, quantized({0, 0}, 0), 0, s));
  rows->push_back(kld_row(std::vector<float>{ln3, 0}, quantized({0, ln3}, 1), 1, s));
  return s;
}

TEST_CASE("kld_row: KL(base || current), nll, Δp and top token by hand", "[perplexity]") {
  std::vector<KldRow> rows;
  const KldStats s = two_hand_rows(&rows);
  // 1/2 ln(1/2 / 3/4) + 1/2 ln(1/2 / 1/4) = 1/2 ln(4/3)
  CHECK(rows[0].kld == Approx(0.5 * std::log(4.0 / 3)).epsilon(1e-5));
  CHECK(rows[0].p_diff == Approx(0.25).epsilon(1e-5));
  // 1/4 ln(1/4 / 3/4) + 3/4 ln(3/4 / 1/4) = 1/2 ln 3
  CHECK(rows[1].kld == Approx(0.5 * std::log(3.0)).epsilon(1e-5));
  CHECK(rows[1].p_diff == Approx(-0.5).epsilon(1e-5));
  CHECK(s.count == 2);
  CHECK(s.n_same_top == 1);  // ties go to the first token: row 0 agrees, row 1 does not
  CHECK(s.sum_nll == Approx(-std::log(0.75) - std::log(0.25)).epsilon(1e-5));
  CHECK(s.sum_nll_base == Approx(std::log(2.0) - std::log(0.75)).epsilon(1e-5));
  CHECK(s.max_p_diff == Approx(0.5).epsilon(1e-5));
  CHECK(s.sum_p_diff2 == Approx(0.0625 + 0.25).epsilon(1e-5));

  // The same distribution as the base: zero divergence but for the quantization (each
  // log-prob within half a level, 3 nats / 65535 / 2), same top token.
  KldStats same;
  const KldRow r = kld_row(std::vector<float>{0.5f, 2.0f, -1.0f}, quantized({0.5f, 2.0f, -1.0f}, 1), 1, same);
  CHECK(std::fabs(r.kld) < 3.0 / 65535 / 2);
  CHECK(std::fabs(r.p_diff) < 1e-4);
  CHECK(same.n_same_top == 1);
}

TEST_CASE("summarize_kld reports llama-perplexity's figures", "[perplexity]") {
  std::vector<KldRow> rows;
  const KldStats pair = two_hand_rows(&rows);
  KldStats s;
  for (int i = 0; i < 10; ++i) s.add(pair);  // 20 positions: errors are reported above 10
  const KldSummary k = summarize_kld(s);
  // mean nll = (ln 4/3 + ln 4) / 2 = ln(16/3) / 2; base: (ln 2 + ln 4/3) / 2 = ln(8/3) / 2
  CHECK(k.ppl.value == Approx(std::sqrt(16.0 / 3)).epsilon(1e-5));
  CHECK(k.ppl_base.value == Approx(std::sqrt(8.0 / 3)).epsilon(1e-5));
  CHECK(k.ln_ppl_ratio.value == Approx(0.5 * std::log(2.0)).epsilon(1e-5));
  CHECK(k.ppl_ratio.value == Approx(std::sqrt(2.0)).epsilon(1e-5));
  CHECK(k.kld.value == Approx(0.25 * std::log(4.0)).epsilon(1e-5));
  // kld values ln(4/3)/2 and ln(3)/2 alternate: sd of the mean = |a - b| / 2 / sqrt(19)
  CHECK(k.kld.error == Approx((0.5 * std::log(3.0) - 0.5 * std::log(4.0 / 3)) / 2 / std::sqrt(19.0)).epsilon(1e-4));
  CHECK(k.same_top.value == Approx(0.5));
  CHECK(k.same_top.error == Approx(std::sqrt(0.25 / 19)));
  CHECK(k.rms_p_diff.value == Approx(std::sqrt((0.0625 + 0.25) / 2)).epsilon(1e-5));
  CHECK(k.p_diff.value == Approx(-0.125).epsilon(1e-4));

  const Estimate e = mean_and_uncertainty(30, 50, 20);
  CHECK(e.value == Approx(1.5));
  CHECK(e.error == Approx(std::sqrt(0.25 / 19)));
  CHECK(mean_and_uncertainty(15, 25, 10).error == 0);  // too few to say
}

TEST_CASE("percentile interpolates between ranks; median", "[perplexity]") {
  const std::vector<float> v = {1, 2, 3, 4};
  CHECK(median(v) == Approx(2.5));
  CHECK(percentile(v, 0.5f) == Approx(2.5));
  CHECK(percentile(v, 0.1f) == Approx(1.3));
  CHECK(percentile(v, 0.999f) == Approx(3.997));
  CHECK(percentile(v, 0) == 1);
  CHECK(percentile(v, 1) == 4);
  CHECK(median(std::vector<float>{1, 2, 3}) == 2);
  CHECK_THROWS(median(std::vector<float>{}));
}

// A base for 2 windows of 6 tokens over a 5-token vocabulary: 2 scored rows each.
struct SmallBase {
  LogitsBaseHeader header{6, 5, 2, {1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2}};
  std::vector<uint16_t> rows;
  std::string bytes;

  SmallBase() {
    for (int r = 0; r < 4; ++r) {
      const std::vector<uint16_t> row = quantized({0.1f * r, 1, -2, 0.5f, 3.0f - r}, r % 5);
      rows.insert(rows.end(), row.begin(), row.end());
    }
    std::ostringstream out;
    write_logits_base_header(out, header);
    out.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(rows.size() * 2));
    bytes = out.str();
  }
};

TEST_CASE("a base file round-trips through write and read", "[perplexity]") {
  const SmallBase b;
  CHECK(b.rows.size() == 4 * base_row_u16(5));
  CHECK(b.bytes.size() == b.header.file_bytes());
  CHECK(b.bytes.size() == 8 + 12 + 12 * 4 + 4 * 10 * 2);
  std::istringstream in(b.bytes);
  const LogitsBaseHeader h = read_logits_base_header(in, "small");
  CHECK(h.n_ctx == 6);
  CHECK(h.n_vocab == 5);
  CHECK(h.n_chunk == 2);
  CHECK(h.tokens == b.header.tokens);
  std::vector<uint16_t> rows(b.rows.size());
  const size_t half = rows.size() / 2;
  read_logits_base_rows(in, std::span(rows).first(half), 0, "small");
  read_logits_base_rows(in, std::span(rows).subspan(half), 1, "small");
  CHECK(rows == b.rows);
  CHECK_THROWS_WITH(read_logits_base_rows(in, std::span(rows).first(1), 2, "small"),
                    "small: the file ends inside chunk 3");
}

TEST_CASE("damaged base files are refused by name", "[perplexity]") {
  const SmallBase b;
  {
    std::istringstream in("_lagits_" + b.bytes.substr(8));
    CHECK_THROWS_WITH(read_logits_base_header(in, "x.base"), Contains("x.base: not a logits base file"));
  }
  {
    std::istringstream in(b.bytes.substr(0, b.bytes.size() - 2));
    CHECK_THROWS_WITH(read_logits_base_header(in, "x.base"),
                      "x.base: 146 bytes, but its header (n_ctx 6, n_vocab 5, 2 chunks) makes 148");
  }
  {
    std::istringstream in(b.bytes + "zz");
    CHECK_THROWS_WITH(read_logits_base_header(in, "x.base"), Contains("150 bytes"));
  }
  {
    std::string bad = b.bytes;
    const int32_t token = 7;  // token 3 outside the 5-token vocabulary
    std::memcpy(bad.data() + 20 + 3 * 4, &token, 4);
    std::istringstream in(bad);
    CHECK_THROWS_WITH(read_logits_base_header(in, "x.base"), "x.base: token 3 is 7, outside its vocabulary of 5");
  }
  {
    std::string bad = b.bytes;
    const int32_t n_ctx = 0;
    std::memcpy(bad.data() + 8, &n_ctx, 4);
    std::istringstream in(bad);
    CHECK_THROWS_WITH(read_logits_base_header(in, "x.base"), Contains("implausible header (n_ctx 0"));
  }
  {
    std::istringstream in(b.bytes.substr(0, 14));
    CHECK_THROWS_WITH(read_logits_base_header(in, "x.base"), "x.base: the file ends inside its header");
  }
}

// tests/data/perplexity/smollm2-c4.kld-base was written by llama.cpp's llama-perplexity
// (llama.cpp de3ff81, scripts/build_llama_cpp.sh) on SmolLM2-135M-Instruct Q4_1 and the
// US Constitution of Debian's miscfiles package (/usr/share/state/us-constitution.gz):
//   llama-perplexity -m SmolLM2-135M-Instruct.Q4_1.gguf -f us-constitution.txt -c 4 -b 4
//                    --chunks 2 --kl-divergence-base smollm2-c4.kld-base
// which printed "[1]1.2876,[2]1.7391," and "Final estimate: PPL = 1.7391 +/- 0.52273".
TEST_CASE("a base written by llama-perplexity reads as it wrote it", "[perplexity]") {
  const std::string path = RUNNEL_TEST_DATA "/perplexity/smollm2-c4.kld-base";
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  const LogitsBaseHeader h = read_logits_base_header(in, path);
  CHECK(h.n_ctx == 4);
  CHECK(h.n_vocab == 49152);
  CHECK(h.n_chunk == 2);
  // "The Constitution of the United States of America" under SmolLM2's tokenizer (no BOS).
  CHECK(h.tokens == std::vector<TokenId>{504, 7152, 282, 260, 1797, 1918, 282, 2493});

  // Our header bytes are llama-perplexity's.
  std::ostringstream ours;
  write_logits_base_header(ours, h);
  std::ifstream raw(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(raw)), std::istreambuf_iterator<char>());
  REQUIRE(ours.str().size() == 52);
  CHECK(file.compare(0, 52, ours.str()) == 0);

  const size_t nv = base_row_u16(h.n_vocab);
  std::vector<uint16_t> rows(2 * nv);
  read_logits_base_rows(in, std::span(rows).first(nv), 0, path);
  read_logits_base_rows(in, std::span(rows).subspan(nv), 1, path);
  double sum_nll = 0;
  for (int c = 0; c < 2; ++c) {
    INFO("chunk " << c);
    const std::span<const uint16_t> row = std::span<const uint16_t>(rows).subspan(c * nv, nv);
    float header[2];
    std::memcpy(header, row.data(), sizeof header);
    // The row spans the top 16 nats (its minimum logit was lower).
    CHECK(header[0] * 65535 == Approx(16).epsilon(1e-5));
    // The levels decode to a distribution: the tokens above the floor carry all the
    // mass but the floor's, each at most exp(min log-prob).
    double above = 0;
    for (int i = 0; i < h.n_vocab; ++i) {
      if (row[4 + i] > 0) above += std::exp(static_cast<double>(base_log_prob(row, i)));
    }
    CHECK(above <= 1 + 1e-3);
    CHECK(above >= 1 - h.n_vocab * std::exp(static_cast<double>(header[1])) - 1e-3);
    // The scored position is 2 (n_ctx / 2); it predicts the window's token 3.
    sum_nll -= base_log_prob(row, h.tokens[c * 4 + 3]);
  }
  CHECK(std::exp(sum_nll / 2) == Approx(1.7391).epsilon(1e-4));
}

}  // namespace
}  // namespace runnel
