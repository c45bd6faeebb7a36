// The server's wire format without sockets: request validation (each bad input is a
// 4xx naming the field), stop strings split across tokens, error bodies.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "native/server/api.h"

namespace runnel::server {
namespace {

constexpr int kVocab = 1000;

GenerationRequest chat(const std::string& body) { return parse_generation_request(body, true, kVocab); }
GenerationRequest completion(const std::string& body) { return parse_generation_request(body, false, kVocab); }

// The ApiError a body raises (status, param), or fails the test if none.
ApiError error_of(const std::string& body, bool is_chat = true) {
  try {
    parse_generation_request(body, is_chat, kVocab);
  } catch (const ApiError& e) {
    return e;
  }
  FAIL("no error for " << body);
  return ApiError(0, "");
}

}  // namespace

TEST_CASE("server api: a full chat request is parsed", "[server]") {
  const GenerationRequest r = chat(R"({
    "model": "m", "messages": [{"role": "system", "content": "S"},
                               {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                               {"role": "developer", "content": "D"}],
    "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 5, "min_p": 0.1, "seed": 42,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "stop": ["x", "yz"], "logit_bias": {"12": 3, "13": -100},
    "stream": true, "stream_options": {"include_usage": true}, "n": 1})");
  CHECK(r.chat);
  CHECK(r.model == "m");
  REQUIRE(r.messages.size() == 3);
  CHECK(r.messages[1].role == "user");
  CHECK(r.messages[1].content == "ab");
  CHECK(r.messages[2].role == "system");  // developer is the newer name of system
  CHECK(*r.max_tokens == 7);
  CHECK(r.sampler.temperature == 0.5f);
  CHECK(r.sampler.top_p == 0.9f);
  CHECK(r.sampler.top_k == 5);
  CHECK(r.sampler.min_p == 0.1f);
  CHECK(r.sampler.seed == 42);
  CHECK(r.sampler.presence_penalty == 0.5f);
  CHECK(r.sampler.frequency_penalty == -0.5f);
  CHECK(r.stop == std::vector<std::string>{"x", "yz"});
  REQUIRE(r.sampler.logit_bias.size() == 2);
  CHECK(r.sampler.logit_bias[0] == std::pair<int32_t, float>{12, 3.0f});
  CHECK(r.sampler.logit_bias[1].first == 13);
  CHECK(std::isinf(r.sampler.logit_bias[1].second));
  CHECK(r.stream);
  CHECK(r.include_usage);
}

TEST_CASE("server api: chat_template_kwargs sets enable_thinking and refuses other keys", "[server]") {
  const std::string msgs = R"("messages": [{"role": "user", "content": "hi"}])";
  CHECK_FALSE(chat("{" + msgs + "}").chat_options.enable_thinking.has_value());
  const GenerationRequest off = chat("{" + msgs + R"(, "chat_template_kwargs": {"enable_thinking": false}})");
  REQUIRE(off.chat_options.enable_thinking.has_value());
  CHECK_FALSE(*off.chat_options.enable_thinking);
  const ApiError unknown = error_of("{" + msgs + R"(, "chat_template_kwargs": {"tools_style": 1}})");
  CHECK(unknown.status == 400);
  CHECK(unknown.param == "chat_template_kwargs.tools_style");
  CHECK(unknown.code == "unsupported_parameter");
  CHECK(error_of("{" + msgs + R"(, "chat_template_kwargs": {"enable_thinking": "no"}})").param ==
        "chat_template_kwargs.enable_thinking");
  CHECK(error_of("{" + msgs + R"(, "chat_template_kwargs": [1]})").param == "chat_template_kwargs");
}

TEST_CASE("server api: defaults follow llama.cpp's server", "[server]") {
  const GenerationRequest r = completion(R"({"prompt": ["once"]})");
  CHECK(r.prompt == "once");
  CHECK(!r.max_tokens);
  CHECK(r.sampler.temperature == 0.8f);
  CHECK(r.sampler.top_k == 40);
  CHECK(!r.stream);
  CHECK(completion(R"({"prompt": "x", "stop": "END"})").stop == std::vector<std::string>{"END"});
}

TEST_CASE("server api: bad requests are 400s naming the field", "[server]") {
  struct Bad {
    const char* body;
    bool is_chat;
    const char* param;
    const char* message_part;
  };
  const Bad cases[] = {
      {"{not json", true, "", "not valid JSON"},
      // Found by fuzzing (tests/fuzz/corpus/server_api/regression-number-overflow): a 500.
      {R"({"temperature": 18E4467440737})", true, "", "number out of range"},
      {"[1, 2]", true, "body", "must be a JSON object"},
      {"{}", true, "messages", "'messages' is required"},
      {R"({"messages": "hi"})", true, "messages", "must be an array"},
      {R"({"messages": []})", true, "messages", "at least one message"},
      {R"({"messages": [{"content": "x"}]})", true, "messages[0].role", "is required"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", true, "messages[0].role", "wizard"},
      {R"({"messages": [{"role": "user"}]})", true, "messages[0].content", "is required"},
      {R"({"messages": [{"role": "user", "content": 5}]})", true, "messages[0].content", "got integer"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true, "messages[0].content[0].type",
       "text only"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": -1})", true, "temperature", "[0, 2]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", true, "temperature",
       "must be a number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", true, "max_tokens", "[1, "},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 2.5})", true, "max_tokens", "an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", true, "top_p", "(0, 1]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 9})", true, "n", "[1, 8]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true, "top_logprobs",
       "needs 'logprobs': true"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", true,
       "top_logprobs", "[0, 20]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 2})", true, "logprobs", "a boolean"},
      {R"({"prompt": "x", "logprobs": true})", false, "logprobs", "an integer"},
      {R"({"prompt": "x", "logprobs": 1, "echo": true})", false, "echo", "prompt's log probabilities"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a", "b", "c", "d", "e"]})", true, "stop",
       "at most 4"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [""]})", true, "stop", "must not be empty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": 3})", true, "stop", "a string or an array"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"abc": 1}})", true, "logit_bias.abc",
       "not a token id"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"5000": 1}})", true, "logit_bias.5000",
       "not a token id"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"5": 101}})", true, "logit_bias.5",
       "[-100, 100]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}})", true,
       "stream_options", "only allowed when 'stream'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": 3})", true, "presence_penalty",
       "[-2, 2]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", true, "stream", "a boolean"},
      {R"({"messages": [{"role": "user", "content": "x"}], "model": 3})", true, "model", "a string"},
      {R"({})", false, "prompt", "'prompt' is required"},
      {R"({"prompt": ""})", false, "prompt", "must not be empty"},
      {R"({"prompt": ["a", "b"]})", false, "prompt", "exactly one string"},
      {R"({"prompt": 12})", false, "prompt", "must be a string"},
  };
  for (const Bad& c : cases) {
    INFO(c.body);
    const ApiError e = error_of(c.body, c.is_chat);
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
    CHECK_THAT(e.what(), Catch::Contains(c.message_part));
    const json body = e.body();
    CHECK(body["error"]["message"] == e.what());
    CHECK(body["error"]["type"] == "invalid_request_error");
    CHECK(body["error"].contains("param"));
    CHECK(body["error"].contains("code"));
  }
}

TEST_CASE("server api: fields that change the reply but are not implemented are named", "[server]") {
  const auto fields = [](const char* body, Endpoint endpoint = Endpoint::ChatCompletions) {
    return unsupported_fields(json::parse(body), endpoint);
  };
  using V = std::vector<std::string>;
  // Each asks for a different reply than the one we would send.
  // Tools are served now (parse_generation_request reads them); the legacy fields are not.
  CHECK(fields(R"({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required"})").empty());
  CHECK(fields(R"({"functions": [{"name": "f"}], "function_call": {"name": "f"}})") == V{"functions", "function_call"});
  CHECK(fields(R"({"logprobs": true, "top_logprobs": 3, "n": 4})").empty());  // served now
  CHECK(fields(R"({"logprobs": 2, "n": 2})", Endpoint::Completions).empty());
  CHECK(fields(R"({"n_probs": 3})") == V{"n_probs"});  // llama-server's own format
  CHECK(fields(R"({"modalities": ["text", "audio"], "audio": {"voice": "x"}})") == V{"audio", "modalities"});
  CHECK(fields(R"({"web_search_options": {}})") == V{"web_search_options"});
  // Output constraints are served now (parse_generation_request reads them).
  CHECK(fields(R"({"response_format": {"type": "json_object"}, "grammar": "root ::= x", "json_schema": {}})").empty());
  CHECK(fields(R"({"grammar": "root ::= x", "json_schema": {}})", Endpoint::Completions).empty());
  CHECK(fields(R"({"logprobs": 0, "suffix": "end", "best_of": 2})", Endpoint::Completions) ==
        V{"suffix", "best_of"});
  CHECK(fields(R"({"input": "x", "dimensions": 64})", Endpoint::Embeddings) == V{"dimensions"});
  // Values that ask for nothing, and fields that are safe to ignore, pass.
  CHECK(fields(R"({"tools": [], "tool_choice": "none", "functions": [], "function_call": "auto",
                   "response_format": {"type": "text"}, "logprobs": false, "top_logprobs": 0, "modalities": ["text"],
                   "parallel_tool_calls": false, "user": "u", "metadata": {"k": "v"}, "store": false,
                   "service_tier": "auto", "prediction": {"type": "content", "content": "x"}, "grammar": null})")
            .empty());
  CHECK(fields(R"({"suffix": "", "best_of": 1, "echo": true})", Endpoint::Completions).empty());
  // Each endpoint has its own list: "suffix" is completions' only.
  CHECK(fields(R"({"suffix": "x", "dimensions": 3})").empty());
  CHECK(fields("[1]").empty());  // not an object: parse_generation_request refuses it

  const ApiError e = unsupported_field_error("suffix");
  CHECK(e.status == 400);
  CHECK(e.param == "suffix");
  CHECK(e.code == "unsupported_parameter");
  CHECK_THAT(e.what(), Catch::Contains("'suffix' is not supported") && Catch::Contains("insertion before a suffix") &&
                           Catch::Contains("--lenient"));
}

TEST_CASE("server api: grammar, json_schema and response_format constrain the output", "[server][grammar]") {
  const auto parse = [](const std::string& fields, bool chat = true) {
    const std::string prompt = chat ? R"("messages": [{"role": "user", "content": "hi"}])" : R"("prompt": "hi")";
    return parse_generation_request("{" + prompt + (fields.empty() ? "" : ", ") + fields + "}", chat, 100);
  };
  const auto refusal = [&](const std::string& fields, bool chat = true) {
    try {
      parse(fields, chat);
    } catch (const ApiError& e) {
      return e.param + " (" + e.code + "): " + e.what();
    }
    return std::string("(no error)");
  };
  const GenerationRequest none = parse("");
  CHECK(!none.grammar);
  CHECK(!none.json_schema);
  CHECK(!none.json_object);

  const GenerationRequest g = parse(R"("grammar": "root ::= \"x\"")", false);
  CHECK(g.grammar == R"(root ::= "x")");
  CHECK(g.constraint_field == "grammar");
  const GenerationRequest s = parse(R"("json_schema": {"type": "integer"})", false);
  CHECK(json::parse(*s.json_schema) == json{{"type", "integer"}});
  CHECK(s.constraint_field == "json_schema");
  const GenerationRequest o = parse(R"("response_format": {"type": "json_object"})");
  CHECK(o.json_object);
  CHECK(o.constraint_field == "response_format");
  const GenerationRequest rf = parse(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "strict": true, "schema": {"type": "boolean"}}})");
  CHECK(json::parse(*rf.json_schema) == json{{"type", "boolean"}});
  CHECK(rf.constraint_field == "response_format.json_schema.schema");
  // OpenAI's schema is optional: then any JSON value.
  CHECK(parse(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n"}})").json_schema == "{}");
  const GenerationRequest text = parse(R"("response_format": {"type": "text"})");
  CHECK((!text.json_object && !text.json_schema));

  CHECK(refusal(R"("grammar": "root ::= x", "json_schema": {})") ==
        "grammar (invalid_value): 'grammar' and 'json_schema' each constrain the output: give at most one of them");
  CHECK(refusal(R"("json_schema": {}, "response_format": {"type": "json_object"})") ==
        "json_schema (invalid_value): 'json_schema' and 'response_format' each constrain the output: give at most "
        "one of them");
  CHECK(refusal(R"("grammar": 3)") == "grammar (invalid_type): 'grammar' must be a string (a GBNF grammar), got integer");
  CHECK(refusal(R"("grammar": "")") == "grammar (invalid_value): 'grammar' must not be empty");
  CHECK(refusal(R"("json_schema": "x")") ==
        "json_schema (invalid_type): 'json_schema' must be an object (a JSON schema), got string");
  CHECK(refusal(R"("response_format": {"type": "xml"})") ==
        "response_format.type (unsupported_value): 'response_format.type' must be text, json_object or json_schema; "
        "got 'xml'");
  CHECK(refusal(R"("response_format": {"type": "json_schema"})") ==
        "response_format.json_schema (missing_required_parameter): 'response_format.json_schema' is required for "
        "type json_schema");
  CHECK(refusal(R"("response_format": {"type": "json_schema", "json_schema": {"schema": []}})") ==
        "response_format.json_schema.schema (invalid_type): 'response_format.json_schema.schema' must be an object "
        "(a JSON schema), got array");
}

TEST_CASE("server api: logprobs and n", "[server][logprobs]") {
  const auto chat = [](const std::string& fields) {
    return parse_generation_request(R"({"messages": [{"role": "user", "content": "hi"}], )" + fields + "}", true, 100);
  };
  const auto completion = [](const std::string& fields) {
    return parse_generation_request(R"({"prompt": "hi", )" + fields + "}", false, 100);
  };
  CHECK(chat(R"("n": 1)").logprobs == -1);
  CHECK(chat(R"("logprobs": false)").logprobs == -1);
  CHECK(chat(R"("logprobs": true)").logprobs == 0);
  CHECK(chat(R"("logprobs": true, "top_logprobs": 20)").logprobs == 20);
  CHECK(chat(R"("logprobs": null, "n": 8)").n == 8);
  CHECK(completion(R"("logprobs": 0)").logprobs == 0);
  CHECK(completion(R"("logprobs": 5, "n": 3)").logprobs == 5);
  CHECK(completion(R"("logprobs": null)").logprobs == -1);
  CHECK(completion(R"("n": 2)").n == 2);
}

TEST_CASE("server api: embeddings input", "[server]") {
  CHECK(parse_embedding_request(R"({"input": "a"})").inputs == std::vector<std::string>{"a"});
  CHECK(parse_embedding_request(R"({"input": ["a", "b"], "model": "m"})").inputs.size() == 2);
  REQUIRE_THROWS_AS(parse_embedding_request(R"({"input": []})"), ApiError);
  REQUIRE_THROWS_AS(parse_embedding_request(R"({"input": [1]})"), ApiError);
  REQUIRE_THROWS_AS(parse_embedding_request(R"({})"), ApiError);
  CHECK(parse_embedding_request(R"({"input": "a", "encoding_format": "base64"})").base64);
  REQUIRE_THROWS_AS(parse_embedding_request(R"({"input": "a", "encoding_format": "hex"})"), ApiError);
  // 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0 (little-endian)
  CHECK(base64_floats({1.0f}) == "AACAPw==");
  CHECK(base64_floats({1.0f, -2.0f}) == "AACAPwAAAMA=");
}

TEST_CASE("server api: usage and error bodies", "[server]") {
  const json u = usage_json({10, 5, 3});
  CHECK(u["total_tokens"] == 15);
  CHECK(u["prompt_tokens_details"]["cached_tokens"] == 3);
  const ApiError e(429, "busy", "", "rate_limit_exceeded", "rate_limit_error");
  CHECK(e.body()["error"]["param"].is_null());
  CHECK(e.body()["error"]["type"] == "rate_limit_error");
}

}  // namespace runnel::server

namespace runnel::server {

TEST_CASE("server api: tools, tool_choice and tool conversations are parsed", "[server][tools]") {
  const GenerationRequest r = chat(R"({
    "messages": [{"role": "user", "content": "weather?"},
                 {"role": "assistant", "content": null, "reasoning_content": "think",
                  "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
                                 {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": {"zone": "UTC"}}}]},
                 {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                 {"role": "tool", "tool_call_id": "c2", "name": "clock", "content": "noon"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
              {"type": "function", "function": {"name": "get_time"}}],
    "tool_choice": {"type": "function", "function": {"name": "get_time"}}, "parallel_tool_calls": false})");
  REQUIRE(r.messages.size() == 4);
  CHECK(r.messages[1].content.empty());
  CHECK(r.messages[1].reasoning_content == "think");
  REQUIRE(r.messages[1].tool_calls.size() == 2);
  CHECK(r.messages[1].tool_calls[0].name == "get_weather");
  CHECK(r.messages[1].tool_calls[0].arguments == R"({"city": "Oslo"})");
  CHECK(r.messages[1].tool_calls[0].id == "c1");
  CHECK(r.messages[1].tool_calls[1].arguments == R"({"zone":"UTC"})");
  CHECK(r.messages[2].tool_call_id == "c1");
  CHECK(r.messages[2].name == "get_weather");  // from the call it answers
  CHECK(r.messages[3].name == "clock");        // as sent
  REQUIRE(r.tools.tools.size() == 2);
  CHECK(r.tools.tools[0].name == "get_weather");
  CHECK(r.tools.tools[0].description == "d");
  CHECK(r.tools.tools[0].parameters == R"({"properties":{"city":{"type":"string"}},"type":"object"})");
  CHECK(r.tools.tools[1].parameters.empty());
  CHECK(r.tools.choice == ToolChoice::Function);
  CHECK(r.tools.function == "get_time");
  CHECK_FALSE(r.tools.parallel);
  CHECK(chat(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})").tools.choice ==
        ToolChoice::Required);
  CHECK(chat(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "none"})").tools.choice ==
        ToolChoice::None);
  CHECK(chat(R"({"messages": [{"role": "user", "content": "x"}]})").tools.choice == ToolChoice::Auto);
}

TEST_CASE("server api: malformed tools and tool messages name the field", "[server][tools]") {
  const std::string m = R"("messages": [{"role": "user", "content": "x"}])";
  const auto param = [&](const std::string& fields) { return error_of("{" + m + ", " + fields + "}").param; };
  CHECK(param(R"("tools": {})") == "tools");
  CHECK(param(R"("tools": [{"type": "retrieval"}])") == "tools[0].type");
  CHECK(param(R"("tools": [{"type": "function"}])") == "tools[0].function");
  CHECK(param(R"("tools": [{"type": "function", "function": {"name": 3}}])") == "tools[0].function.name");
  CHECK(param(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": []}}])") ==
        "tools[0].function.parameters");
  CHECK(param(R"("tool_choice": "any")") == "tool_choice");
  CHECK(param(R"("tool_choice": {"type": "function"})") == "tool_choice");
  CHECK(param(R"("parallel_tool_calls": "yes")") == "parallel_tool_calls");
  CHECK(error_of(R"({"messages": [{"role": "tool", "content": "x"}]})").param == "messages[0].tool_call_id");
  CHECK(error_of(R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})").param ==
        "messages[0].tool_calls");
  CHECK(error_of(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}]})")
            .param == "messages[0].tool_calls[0].function.arguments");
}

}  // namespace runnel::server

namespace runnel::server {

TEST_CASE("server api: requests beyond the server's limits are 400s naming the field and the limit", "[server]") {
  RequestLimits limits;
  limits.max_messages = 3;
  limits.max_completion_tokens = 100;
  const auto refusal = [&](const std::string& body) -> ApiError {
    try {
      check_request_limits(parse_generation_request(body, true, 1000), limits);
    } catch (const ApiError& e) {
      return e;
    }
    FAIL("no error for " << body);
    return ApiError(0, "");
  };
  const std::string m = R"({"role": "user", "content": "hi"})";
  // At the limits: accepted.
  CHECK_NOTHROW(check_request_limits(
      parse_generation_request("{\"messages\": [" + m + "," + m + "," + m + "], \"max_tokens\": 100, \"stop\": [\"" +
                                   std::string(256, 's') + "\"]}",
                               true, 1000),
      limits));
  ApiError e = refusal("{\"messages\": [" + m + "," + m + "," + m + "," + m + "]}");
  CHECK(e.status == 400);
  CHECK(e.param == "messages");
  CHECK(e.code == "limit_exceeded");
  CHECK(std::string(e.what()) == "'messages' may hold at most 3 messages, got 4 (--max-messages)");
  e = refusal("{\"messages\": [" + m + "], \"max_completion_tokens\": 101}");
  CHECK(e.param == "max_tokens");
  CHECK(std::string(e.what()) == "'max_tokens' may be at most 100, got 101 (--max-completion-tokens)");
  e = refusal("{\"messages\": [" + m + "], \"stop\": [\"end\", \"" + std::string(257, 's') + "\"]}");
  CHECK(e.param == "stop");
  CHECK(std::string(e.what()) == "'stop' sequences may be at most 256 bytes, got 257 (a fixed limit)");
  limits.max_logit_bias = 10;
  std::string small_bias;
  for (int i = 0; i < 11; ++i) small_bias += (i ? ",\"" : "\"") + std::to_string(i) + "\": 1";
  e = refusal("{\"messages\": [" + m + "], \"logit_bias\": {" + small_bias + "}}");
  CHECK(e.param == "logit_bias");
  CHECK(std::string(e.what()) == "'logit_bias' may hold at most 10 entries, got 11 (a fixed limit)");
  // No limit on completions' messages (they have none); 0 means none on max_tokens.
  limits.max_completion_tokens = 0;
  CHECK_NOTHROW(check_request_limits(parse_generation_request(R"({"prompt": "a", "max_tokens": 100000})", false, 1000),
                                     limits));
}

}  // namespace runnel::server
