// Request bodies of every `runnel serve` endpoint turned into engine requests, as
// Server::handle_generation / handle_embeddings do it but without sockets or slots:
// parse_json_body, unsupported_fields, *_request_from_json, then (chat) the rendered
// turn with tools, the output constraint compiled, the logit_bias check and the fit
// check; (embeddings) the inputs tokenized. Input: byte 0 picks the endpoint (mod 3:
// chat completions, completions, embeddings), the rest is the body.
// Expected failures are what the server answers 400 for (ApiError, RequestError, any
// std::invalid_argument); anything else escaping would be a 500 or a crash: a finding.
#include <memory>
#include <string>
#include <vector>

#include "core/runtime/chat_request.h"
#include "core/runtime/request.h"
#include "native/server/api.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/tiny_engine.h"

namespace runnel {
namespace {

using server::Endpoint;
using server::json;

void generation(const Engine& engine, const PromptFormat& format, const json& body, bool chat) {
  (void)server::unsupported_fields(body, chat ? Endpoint::ChatCompletions : Endpoint::Completions);
  server::GenerationRequest request = server::generation_request_from_json(body, chat, engine.config().n_vocab);
  RequestOptions options;
  std::vector<TokenId> prompt;
  if (chat) {
    request.tools.id_seed = 7;
    ChatTurn turn = prepare_chat_turn(engine, format, request.messages, request.chat_options, request.tools);
    prompt = std::move(turn.prompt);
    options.grammar = std::move(turn.grammar);
  } else {
    prompt = format.tokens(PromptInput::from_text(request.prompt));
  }
  options.sampler = request.sampler;
  options.stop = request.stop;
  options.max_tokens = request.max_tokens ? *request.max_tokens : -1;
  options.logprobs = request.logprobs;
  if (!options.grammar) {
    if (request.grammar) {
      options.grammar = compile_grammar(engine, *request.grammar, request.constraint_field);
    } else if (request.json_schema) {
      options.grammar = compile_json_schema(engine, *request.json_schema, request.constraint_field);
    } else if (request.json_object) {
      options.grammar = compile_json_object(engine);
    }
  }
  check_grammar_bias(engine, options.grammar, options.sampler);
  check_request_fits(static_cast<int>(prompt.size()), options, engine.n_ctx(), false);
}

void embeddings(const Engine& engine, const json& body) {
  (void)server::unsupported_fields(body, Endpoint::Embeddings);
  const server::EmbeddingRequest request = server::embedding_request_from_json(body);
  (void)embedding_inputs(engine, request.inputs);
}

const PromptFormat& prompt_format() {
  static const PromptFormat kFormat(fuzz::shared_tiny_engine());
  return kFormat;
}

}  // namespace
}  // namespace runnel

// Loads what the inputs need before the first one, so that -timeout=1 times inputs only.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)runnel::prompt_format();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace runnel;
  const Engine& engine = fuzz::shared_tiny_engine();
  if (size == 0) return 0;
  const int endpoint = data[0] % 3;
  try {
    const json body = server::parse_json_body(fuzz::as_text(data + 1, size - 1));
    if (endpoint == 2) {
      embeddings(engine, body);
    } else {
      generation(engine, prompt_format(), body, endpoint == 0);
    }
  } catch (const server::ApiError&) {
  } catch (const std::invalid_argument&) {  // RequestError, JsonSchemaError and the like: a 400
  }
  return 0;
}
