// Log probabilities of generated tokens (OpenAI's logprobs / top_logprobs, llama-server's
// n_probs): the model's own distribution at each step, log-softmax of the raw logits,
// before logit_bias, penalties, temperature, truncation and grammar masks (llama-server's
// default), so a figure means the same whatever the sampling settings.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"

namespace runnel {

struct TokenLogprob {
  TokenId id = 0;
  float logprob = 0;  // natural log, <= 0
};

// One generated token: its own log probability and the `n` most likely tokens of its
// step, most likely first (the token itself among them when it is one of those).
struct StepLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;
};

// log-softmax of `logits` at `chosen`, with the n most likely ids (ties: lower id first).
StepLogprobs token_logprobs(std::span<const float> logits, TokenId chosen, int n);

// The most top_logprobs a request may ask for (OpenAI's limit).
constexpr int kMaxTopLogprobs = 20;

// A token's bytes as the detokenizer emits them ("" for control tokens and ids past the
// tokenizer's vocabulary: padded output rows).
std::string token_bytes(const Tokenizer& tokenizer, TokenId id);

// OpenAI chat's logprobs.content entries: {"token", "logprob", "bytes",
// "top_logprobs": [{"token", "logprob", "bytes"}]}. "token" is the bytes as text, invalid
// UTF-8 (a token holding part of a character) replaced with U+FFFD; "bytes" is exact.
nlohmann::json chat_logprobs_json(const Tokenizer& tokenizer, std::span<const StepLogprobs> steps);

}  // namespace runnel
