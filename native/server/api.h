// The OpenAI wire format of `runnel serve`: request bodies validated into plain
// structs (every problem becomes an ApiError naming the field) and response bodies;
// the request path itself is core/runtime/request.h. Pure functions, no sockets: tests/native/server_api_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/chat/chat_template.h"
#include "core/runtime/chat_request.h"
#include "core/runtime/logprobs.h"
#include "core/runtime/request.h"
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
  ChatOptions chat_options;           // chat: chat_template_kwargs (llama-server's)
  // chat: tools (type "function"), tool_choice, parallel_tool_calls. id_seed and
  // split_reasoning are the server's to set.
  ChatToolOptions tools;
  std::string prompt;                 // completions
  std::string model;                  // as sent ("" if absent)
  std::optional<int> max_tokens;      // absent: until the context is full
  SamplerParams sampler;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions: prepend the prompt to the text
  // Log probabilities: -1 off, else how many alternatives each token lists (chat:
  // logprobs true with top_logprobs 0-20; completions: logprobs 0-20).
  int logprobs = -1;
  int n = 1;  // choices (1-8), sampled after one prompt evaluation
  // The output constraint, at most one: a GBNF grammar (llama-server's `grammar`), a
  // JSON schema as JSON text (llama-server's `json_schema`, OpenAI's response_format
  // json_schema), or any JSON object (response_format json_object). constraint_field
  // names the field it came from, for errors.
  std::optional<std::string> grammar;
  std::optional<std::string> json_schema;
  bool json_object = false;
  std::string constraint_field;
};

// What one generation request may ask for beyond what the context bounds (`runnel
// serve`'s --max-messages, --max-completion-tokens, --max-prompt-tokens; the stop and
// logit_bias bounds are fixed). 0: no limit but the context.
struct RequestLimits {
  int max_messages = 256;
  int max_completion_tokens = 0;  // max_tokens / max_completion_tokens
  int max_prompt_tokens = 0;      // checked by the server once the prompt is tokenized
  size_t max_stop_bytes = 256;    // each stop sequence (at most 4, as OpenAI's)
  size_t max_logit_bias = 1024;   // logit_bias entries
};
// A 400 naming the field (code "limit_exceeded") when `r` asks for more than `limits`.
void check_request_limits(const GenerationRequest& r, const RequestLimits& limits);

// chat_template_kwargs: the template variables we know (enable_thinking); any other key,
// or a value of the wrong type, is an ApiError (400) naming `param`.key.
ChatOptions chat_options_from_json(const json& kwargs, const std::string& param);

// Parse + validate. `body` is the raw request text. n_vocab bounds logit_bias ids.
GenerationRequest parse_generation_request(std::string_view body, bool chat, int n_vocab);
// The same for a body already parsed (the server parses each body once).
GenerationRequest generation_request_from_json(const json& body, bool chat, int n_vocab);

enum class Endpoint { ChatCompletions, Completions, Embeddings };

// A request the core refused as OpenAI's 400, naming the field the core names (a chat's
// prompt is its messages).
ApiError api_error(const RequestError& e, bool chat);

// The fields of an OpenAI request body that would change what the reply means but that
// this server does not implement (the legacy functions / function_call, logprobs,
// suffix, ...), most consequential first (function calls before logprobs). Serving such a request while ignoring them would hand
// the client a reply it did not ask for that looks like one it did. Harmless values are
// not listed (functions: [], function_call: "none", logprobs: false), nor fields that are safe
// to ignore (user, metadata, store, ...).
std::vector<std::string> unsupported_fields(const json& body, Endpoint endpoint);
// The 400 for one of them: param = the field, code "unsupported_parameter" (OpenAI's).
ApiError unsupported_field_error(const std::string& field);

// /v1/embeddings: input as a list of strings (a single string becomes one item).
struct EmbeddingRequest {
  std::vector<std::string> inputs;
  std::string model;
  bool base64 = false;  // encoding_format "base64": little-endian float32, base64 (the openai SDKs ask for it)
};
// Base64 of the float32 little-endian bytes of v.
std::string base64_floats(const std::vector<float>& v);
EmbeddingRequest parse_embedding_request(std::string_view body);
EmbeddingRequest embedding_request_from_json(const json& body);

// Parses JSON text, turning syntax errors into a 400 that names the position.
json parse_json_body(std::string_view body);

// A choice's logprobs as OpenAI's chat API has them: {"content": [{"token", "logprob",
// "bytes", "top_logprobs"}], "refusal": null}.
json chat_logprobs(const Tokenizer& tokenizer, std::span<const StepLogprobs> steps);
// As OpenAI's legacy completions API: {"tokens", "token_logprobs", "top_logprobs" (one
// {token: logprob} object per token), "text_offset"}. text_offset counts characters
// (code points) of the choice's text; `offset` is where these tokens start and is moved
// past them (a stream's chunks continue it).
json completion_logprobs(const Tokenizer& tokenizer, std::span<const StepLogprobs> steps, size_t& offset);

// The usage block of a reply.
struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;  // prompt tokens reused from the slot's cache
};
json usage_json(const Usage& u);

}  // namespace runnel::server
