// The OpenAI wire format of `runnel serve`: request bodies validated into plain
// structs (every problem becomes an ApiError naming the field), response bodies, and
// the stop-string matcher. Pure functions, no sockets: tests/native/server_api_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/chat/chat_template.h"
#include "core/sampling/sampler.h"

namespace runnel::server {

using nlohmann::json;

// An error answered with `status` and OpenAI's {"error": {...}} body.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "", std::string code = "",
           std::string type = "");
  int status;
  std::string param, code, type;
  json body() const;
};

// /v1/chat/completions and /v1/completions, validated.
struct GenerationRequest {
  bool chat = false;
  std::vector<ChatMessage> messages;  // chat
  std::string prompt;                 // completions
  std::string model;                  // as sent ("" if absent)
  std::optional<int> max_tokens;      // absent: until the context is full
  SamplerParams sampler;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions: prepend the prompt to the text
};

// Parse + validate. `body` is the raw request text. n_vocab bounds logit_bias ids.
GenerationRequest parse_generation_request(std::string_view body, bool chat, int n_vocab);

// /v1/embeddings: input as a list of strings (a single string becomes one item).
struct EmbeddingRequest {
  std::vector<std::string> inputs;
  std::string model;
  bool base64 = false;  // encoding_format "base64": little-endian float32, base64 (the openai SDKs ask for it)
};
// Base64 of the float32 little-endian bytes of v.
std::string base64_floats(const std::vector<float>& v);
EmbeddingRequest parse_embedding_request(std::string_view body);

// Parses JSON text, turning syntax errors into a 400 that names the position.
json parse_json_body(std::string_view body);

// Holds back generated text that might be the start of a stop string, so a stop
// string is never streamed, even when it arrives split across tokens.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds generated text; returns what is safe to emit now. After a stop string is
  // found, stopped() is true and the text before it is the last returned.
  std::string push(std::string_view text);
  // The held-back text at the end of generation (nothing once stopped).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

// "stop" or "length" for the usage of OpenAI's finish_reason.
struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;  // prompt tokens reused from the slot's cache
};
json usage_json(const Usage& u);

}  // namespace runnel::server
