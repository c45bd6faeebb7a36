#include "core/runtime/logprobs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/tokenizer/utf8.h"

namespace runnel {

StepLogprobs token_logprobs(std::span<const float> logits, TokenId chosen, int n) {
  if (chosen < 0 || static_cast<size_t>(chosen) >= logits.size()) {
    throw std::invalid_argument("token_logprobs: token " + std::to_string(chosen) + " is outside the logits");
  }
  float max = -INFINITY;
  for (const float l : logits) max = std::max(max, l);
  double sum = 0;
  for (const float l : logits) sum += std::exp(static_cast<double>(l - max));
  const double log_z = static_cast<double>(max) + std::log(sum);
  const auto logprob = [&](TokenId id) { return static_cast<float>(logits[id] - log_z); };

  StepLogprobs out;
  out.chosen = {chosen, logprob(chosen)};
  // The n best in one pass: `top` stays sorted, most likely first.
  const size_t k = std::min(static_cast<size_t>(std::max(n, 0)), logits.size());
  const auto better = [&](TokenId a, TokenId b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::vector<TokenId> top;
  top.reserve(k + 1);
  for (TokenId id = 0; k > 0 && static_cast<size_t>(id) < logits.size(); ++id) {
    if (top.size() == k && !better(id, top.back())) continue;
    top.insert(std::upper_bound(top.begin(), top.end(), id, better), id);
    if (top.size() > k) top.pop_back();
  }
  out.top.reserve(top.size());
  for (const TokenId id : top) out.top.push_back({id, logprob(id)});
  return out;
}

std::string token_bytes(const Tokenizer& tokenizer, TokenId id) {
  if (id < 0 || id >= tokenizer.n_vocab()) return {};
  return tokenizer.token_to_piece(id, false);
}

namespace {

nlohmann::json entry_json(const Tokenizer& tokenizer, const TokenLogprob& t) {
  const std::string bytes = token_bytes(tokenizer, t.id);
  nlohmann::json b = nlohmann::json::array();
  for (const char c : bytes) b.push_back(static_cast<unsigned char>(c));
  return {{"token", utf8_sanitize(bytes)}, {"logprob", t.logprob}, {"bytes", std::move(b)}};
}

}  // namespace

nlohmann::json chat_logprobs_json(const Tokenizer& tokenizer, std::span<const StepLogprobs> steps) {
  nlohmann::json content = nlohmann::json::array();
  for (const StepLogprobs& s : steps) {
    nlohmann::json e = entry_json(tokenizer, s.chosen);
    nlohmann::json top = nlohmann::json::array();
    for (const TokenLogprob& t : s.top) top.push_back(entry_json(tokenizer, t));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return content;
}

}  // namespace runnel
