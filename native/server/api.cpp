#include "native/server/api.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/tokenizer/utf8.h"

namespace runnel::server {
namespace {

[[noreturn]] void bad(std::string message, std::string param) {
  throw ApiError(400, std::move(message), std::move(param), "invalid_value");
}

std::string type_of(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

[[noreturn]] void wrong_type(const std::string& param, const char* expected, const json& v) {
  throw ApiError(400, "'" + param + "' must be " + expected + ", got " + type_of(v), param, "invalid_type");
}


const json* field(const json& obj, const char* name) {
  const auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

double number(const json& obj, const char* name, double lo, double hi, bool lo_open = false) {
  const json& v = obj.at(name);
  if (!v.is_number()) wrong_type(name, "a number", v);
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi || (lo_open && d == lo)) {
    char range[96];
    std::snprintf(range, sizeof range, "%s%g, %g]", lo_open ? "(" : "[", lo, hi);
    std::string message = "'";
    message.append(name).append("' must be in ").append(range).append(", got ").append(v.dump());
    bad(message, name);
  }
  return d;
}

int64_t integer(const json& obj, const char* name, int64_t lo, int64_t hi) {
  const json& v = obj.at(name);
  if (!v.is_number_integer()) wrong_type(name, "an integer", v);
  const int64_t i = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)
                        ? hi + 1
                        : v.get<int64_t>();
  if (i < lo || i > hi) {
    std::string message = "'";
    message.append(name).append("' must be in [").append(std::to_string(lo)).append(", ");
    message.append(std::to_string(hi)).append("], got ").append(v.dump());
    bad(message, name);
  }
  return i;
}

bool boolean(const json& obj, const char* name) {
  const json& v = obj.at(name);
  if (!v.is_boolean()) wrong_type(name, "a boolean", v);
  return v.get<bool>();
}

// OpenAI message content: a string, or a list of parts of which the text ones count.
std::string message_content(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) wrong_type(param, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string p = param + "[" + std::to_string(i) + "]";
    if (!part.is_object()) wrong_type(p, "an object", part);
    const json* type = field(part, "type");
    if (!type || !type->is_string()) bad("'" + p + ".type' is required", p + ".type");
    if (*type != "text") {
      throw ApiError(400, "content part type '" + type->get<std::string>() + "' is not supported (text only)",
                     p + ".type", "unsupported_value");
    }
    const json* t = field(part, "text");
    if (!t || !t->is_string()) bad("'" + p + ".text' must be a string", p + ".text");
    text += t->get<std::string>();
  }
  return text;
}

// An assistant message's tool_calls: [{id, type: "function", function: {name, arguments}}],
// arguments as OpenAI sends them (JSON text; an object is accepted too).
std::vector<ChatToolCall> parse_tool_calls(const json& calls, const std::string& param) {
  if (!calls.is_array()) wrong_type(param, "an array", calls);
  std::vector<ChatToolCall> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const json& c = calls[i];
    const std::string p = param + "[" + std::to_string(i) + "]";
    if (!c.is_object()) wrong_type(p, "an object", c);
    if (const json* type = field(c, "type"); type && *type != "function") {
      throw ApiError(400, "'" + p + ".type' must be function", p + ".type", "unsupported_value");
    }
    const json* f = field(c, "function");
    if (!f || !f->is_object()) bad("'" + p + ".function' must be an object", p + ".function");
    const json* name = field(*f, "name");
    if (!name || !name->is_string()) bad("'" + p + ".function.name' must be a string", p + ".function.name");
    ChatToolCall call{name->get<std::string>(), "{}", ""};
    if (const json* args = field(*f, "arguments")) {
      if (args->is_string()) {
        call.arguments = args->get<std::string>();
        if (!json::accept(call.arguments)) {
          bad("'" + p + ".function.arguments' is not valid JSON", p + ".function.arguments");
        }
      } else if (args->is_object()) {
        call.arguments = args->dump();
      } else {
        wrong_type(p + ".function.arguments", "a string (JSON text)", *args);
      }
    }
    if (const json* id = field(c, "id")) {
      if (!id->is_string()) wrong_type(p + ".id", "a string", *id);
      call.id = id->get<std::string>();
    }
    out.push_back(std::move(call));
  }
  return out;
}

void parse_messages(const json& req, GenerationRequest& out) {
  const json* messages = field(req, "messages");
  if (!messages) throw ApiError(400, "'messages' is required", "messages", "missing_required_parameter");
  if (!messages->is_array()) wrong_type("messages", "an array", *messages);
  if (messages->empty()) bad("'messages' must contain at least one message", "messages");
  static constexpr std::string_view kRoles[] = {"system", "developer", "user", "assistant", "tool"};
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) wrong_type(p, "an object", m);
    const json* role = field(m, "role");
    if (!role) throw ApiError(400, "'" + p + ".role' is required", p + ".role", "missing_required_parameter");
    if (!role->is_string()) wrong_type(p + ".role", "a string", *role);
    const std::string r = role->get<std::string>();
    if (std::find(std::begin(kRoles), std::end(kRoles), r) == std::end(kRoles)) {
      bad("'" + p + ".role' must be one of system, developer, user, assistant, tool; got '" + r + "'", p + ".role");
    }
    const json* content = field(m, "content");
    std::string text;
    if (content) {
      text = message_content(*content, p + ".content");
    } else if (r != "assistant") {
      throw ApiError(400, "'" + p + ".content' is required", p + ".content", "missing_required_parameter");
    }
    // Templates know "system"; OpenAI's newer "developer" role means the same.
    ChatMessage message{r == "developer" ? "system" : r, std::move(text)};
    if (const json* calls = field(m, "tool_calls")) {
      if (r != "assistant") bad("'" + p + ".tool_calls' is only allowed in assistant messages", p + ".tool_calls");
      message.tool_calls = parse_tool_calls(*calls, p + ".tool_calls");
    }
    if (const json* rc = field(m, "reasoning_content")) {
      if (!rc->is_string()) wrong_type(p + ".reasoning_content", "a string", *rc);
      message.reasoning_content = rc->get<std::string>();
    }
    if (r == "tool") {
      const json* id = field(m, "tool_call_id");
      if (!id) {
        throw ApiError(400, "'" + p + ".tool_call_id' is required in tool messages", p + ".tool_call_id",
                       "missing_required_parameter");
      }
      if (!id->is_string()) wrong_type(p + ".tool_call_id", "a string", *id);
      message.tool_call_id = id->get<std::string>();
    }
    if (const json* name = field(m, "name")) {
      if (!name->is_string()) wrong_type(p + ".name", "a string", *name);
      if (r == "tool") message.name = name->get<std::string>();
    }
    out.messages.push_back(std::move(message));
  }
  // A tool message's function name, for templates that print it: the call it answers.
  for (ChatMessage& m : out.messages) {
    if (m.role != "tool" || !m.name.empty()) continue;
    for (const ChatMessage& a : out.messages) {
      for (const ChatToolCall& c : a.tool_calls) {
        if (c.id == m.tool_call_id) m.name = c.name;
      }
    }
  }
}

// OpenAI's `tools`: [{type: "function", function: {name, description?, parameters?, strict?}}].
void parse_tools(const json& req, GenerationRequest& out) {
  if (const json* tools = field(req, "tools")) {
    if (!tools->is_array()) wrong_type("tools", "an array", *tools);
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string p = "tools[" + std::to_string(i) + "]";
      if (!t.is_object()) wrong_type(p, "an object", t);
      const json* type = field(t, "type");
      if (!type || !type->is_string()) bad("'" + p + ".type' must be a string", p + ".type");
      if (*type != "function") {
        throw ApiError(400, "tool type '" + type->get<std::string>() + "' is not supported (function only)",
                       p + ".type", "unsupported_value");
      }
      const json* f = field(t, "function");
      if (!f) throw ApiError(400, "'" + p + ".function' is required", p + ".function", "missing_required_parameter");
      if (!f->is_object()) wrong_type(p + ".function", "an object", *f);
      const json* name = field(*f, "name");
      if (!name || !name->is_string()) bad("'" + p + ".function.name' must be a string", p + ".function.name");
      ChatTool tool{name->get<std::string>()};
      if (const json* d = field(*f, "description")) {
        if (!d->is_string()) wrong_type(p + ".function.description", "a string", *d);
        tool.description = d->get<std::string>();
      }
      if (const json* params = field(*f, "parameters")) {
        if (!params->is_object()) wrong_type(p + ".function.parameters", "an object (a JSON schema)", *params);
        tool.parameters = params->dump();
      }
      if (const json* strict = field(*f, "strict"); strict && !strict->is_boolean()) {
        wrong_type(p + ".function.strict", "a boolean", *strict);
      }
      out.tools.tools.push_back(std::move(tool));
    }
  }
  if (const json* choice = field(req, "tool_choice")) {
    if (choice->is_string()) {
      const std::string c = choice->get<std::string>();
      if (c == "auto") {
        out.tools.choice = ToolChoice::Auto;
      } else if (c == "none") {
        out.tools.choice = ToolChoice::None;
      } else if (c == "required") {
        out.tools.choice = ToolChoice::Required;
      } else {
        bad("'tool_choice' must be none, auto, required or "
            "{\"type\": \"function\", \"function\": {\"name\": ...}}; got '" + c + "'",
            "tool_choice");
      }
    } else if (choice->is_object()) {
      const json* type = field(*choice, "type");
      const json* f = field(*choice, "function");
      const json* name = f && f->is_object() ? field(*f, "name") : nullptr;
      if (!type || *type != "function" || !name || !name->is_string()) {
        bad("'tool_choice' as an object must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
            "tool_choice");
      }
      out.tools.choice = ToolChoice::Function;
      out.tools.function = name->get<std::string>();
    } else {
      wrong_type("tool_choice", "a string or an object", *choice);
    }
  }
  if (field(req, "parallel_tool_calls")) out.tools.parallel = boolean(req, "parallel_tool_calls");
}

// The output constraint: llama-server's `grammar` (GBNF) and `json_schema`, OpenAI's
// response_format {"type": "json_object"} / {"type": "json_schema", "json_schema":
// {"name", "schema", "strict"}}. At most one may constrain a request.
void parse_constraint(const json& req, GenerationRequest& out) {
  std::vector<std::string> given;
  if (const json* g = field(req, "grammar")) {
    if (!g->is_string()) wrong_type("grammar", "a string (a GBNF grammar)", *g);
    if (g->get_ref<const std::string&>().empty()) bad("'grammar' must not be empty", "grammar");
    out.grammar = g->get<std::string>();
    given.push_back("grammar");
  }
  if (const json* s = field(req, "json_schema")) {
    if (!s->is_object() && !s->is_boolean()) wrong_type("json_schema", "an object (a JSON schema)", *s);
    out.json_schema = s->dump();
    given.push_back("json_schema");
  }
  if (const json* rf = field(req, "response_format")) {
    if (!rf->is_object()) wrong_type("response_format", "an object", *rf);
    const json* type = field(*rf, "type");
    if (!type || !type->is_string()) bad("'response_format.type' must be a string", "response_format.type");
    const std::string t = type->get<std::string>();
    if (t == "json_object") {
      out.json_object = true;
      given.push_back("response_format");
    } else if (t == "json_schema") {
      const json* js = field(*rf, "json_schema");
      if (!js) {
        throw ApiError(400, "'response_format.json_schema' is required for type json_schema",
                       "response_format.json_schema", "missing_required_parameter");
      }
      if (!js->is_object()) wrong_type("response_format.json_schema", "an object", *js);
      if (const json* name = field(*js, "name"); name && !name->is_string()) {
        wrong_type("response_format.json_schema.name", "a string", *name);
      }
      if (const json* strict = field(*js, "strict"); strict && !strict->is_boolean()) {
        wrong_type("response_format.json_schema.strict", "a boolean", *strict);
      }
      // Without a schema any JSON value goes (an empty schema); `strict` changes
      // nothing: the output always follows the schema.
      const json* schema = field(*js, "schema");
      if (schema && !schema->is_object() && !schema->is_boolean()) {
        wrong_type("response_format.json_schema.schema", "an object (a JSON schema)", *schema);
      }
      out.json_schema = schema ? schema->dump() : "{}";
      given.push_back(schema ? "response_format.json_schema.schema" : "response_format");
    } else if (t != "text") {
      throw ApiError(400, "'response_format.type' must be text, json_object or json_schema; got '" + t + "'",
                     "response_format.type", "unsupported_value");
    }
  }
  if (given.size() > 1) {
    std::string names;
    for (const std::string& g : given) names += (names.empty() ? "'" : " and '") + g + "'";
    bad(names + " each constrain the output: give at most one of them", given[0]);
  }
  if (!given.empty()) out.constraint_field = given[0];
}

// Chat: logprobs (a boolean) and top_logprobs (0-20, only with logprobs true), as
// OpenAI's chat API; completions: logprobs as a count (0-20; OpenAI's legacy API stops
// at 5). The prompt's own log probabilities (echo) are not computed.
void parse_logprobs(const json& req, GenerationRequest& out) {
  const json* lp = field(req, "logprobs");
  if (out.chat) {
    const bool on = lp && boolean(req, "logprobs");
    const int top = field(req, "top_logprobs") ? static_cast<int>(integer(req, "top_logprobs", 0, kMaxTopLogprobs)) : 0;
    if (field(req, "top_logprobs") && !on) bad("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    if (on) out.logprobs = top;
    return;
  }
  if (!lp) return;
  out.logprobs = static_cast<int>(integer(req, "logprobs", 0, kMaxTopLogprobs));
  if (out.echo) {
    throw ApiError(400, "'echo' with 'logprobs' is not supported: the prompt's log probabilities are not computed",
                   "echo", "unsupported_value");
  }
}

// A request field this server does not implement, and the values of it that ask for
// nothing (so that clients which always send, say, "tools": [] keep working).
struct UnsupportedField {
  const char* name;
  const char* asks_for;  // for the error message
  bool chat, completions, embeddings;
  bool (*harmless)(const json& value);
};

bool never(const json&) { return false; }
bool empty_array(const json& v) { return v.is_array() && v.empty(); }

constexpr UnsupportedField kUnsupportedFields[] = {
    {"functions", "function calls", true, false, false, empty_array},
    {"function_call", "function calls", true, false, false,
     [](const json& v) { return v == "none" || v == "auto"; }},
    {"suffix", "insertion before a suffix", false, true, false,
     [](const json& v) { return v.is_string() && v.get_ref<const std::string&>().empty(); }},
    {"audio", "audio output", true, false, false, never},
    {"modalities", "output other than text", true, false, false,
     [](const json& v) { return v == json::array({"text"}); }},
    {"web_search_options", "web search", true, false, false, never},
    // llama-server's own probabilities format (OpenAI's logprobs is served).
    {"n_probs", "llama-server's completion_probabilities (use logprobs)", true, true, false,
     [](const json& v) { return v == 0; }},
    {"best_of", "the best of several completions", false, true, false, [](const json& v) { return v == 1; }},
    {"dimensions", "shortened embeddings", false, false, true, never},
};

}  // namespace

std::vector<std::string> unsupported_fields(const json& body, Endpoint endpoint) {
  std::vector<std::string> out;
  if (!body.is_object()) return out;
  for (const UnsupportedField& f : kUnsupportedFields) {
    const bool applies = endpoint == Endpoint::ChatCompletions ? f.chat
                         : endpoint == Endpoint::Completions   ? f.completions
                                                               : f.embeddings;
    const json* value = applies ? field(body, f.name) : nullptr;
    if (value && !f.harmless(*value)) out.emplace_back(f.name);
  }
  return out;
}

ApiError unsupported_field_error(const std::string& name) {
  std::string asks_for = "a feature";
  for (const UnsupportedField& f : kUnsupportedFields) {
    if (name == f.name) asks_for = f.asks_for;
  }
  return ApiError(400,
                  "'" + name + "' is not supported: this server does not implement " + asks_for +
                      " (a server started with --lenient ignores the field instead)",
                  name, "unsupported_parameter");
}

ApiError::ApiError(int status_, std::string message, std::string param_, std::string code_, std::string type_)
    : std::runtime_error(std::move(message)),
      status(status_),
      param(std::move(param_)),
      code(std::move(code_)),
      type(type_.empty() ? (status_ >= 500 ? "server_error" : "invalid_request_error") : std::move(type_)) {}

json ApiError::body() const {
  json e = {{"message", what()}, {"type", type}};
  e["param"] = param.empty() ? json(nullptr) : json(param);
  e["code"] = code.empty() ? json(nullptr) : json(code);
  return {{"error", e}};
}

json parse_json_body(std::string_view body) {
  try {
    return json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {
    throw ApiError(400, std::string("request body is not valid JSON: ") + e.what(), "", "invalid_json");
  } catch (const json::out_of_range& e) {
    // A number beyond a double ("1e999"): nlohmann reports it as out_of_range 406.
    throw ApiError(400, std::string("request body has a number out of range: ") + e.what(), "", "invalid_json");
  }
}

GenerationRequest parse_generation_request(std::string_view body, bool chat, int n_vocab) {
  return generation_request_from_json(parse_json_body(body), chat, n_vocab);
}

ApiError api_error(const RequestError& e, bool chat) {
  return ApiError(400, e.what(), chat && e.field() == "prompt" ? "messages" : e.field(), e.code());
}

GenerationRequest generation_request_from_json(const json& req, bool chat, int n_vocab) {
  if (!req.is_object()) wrong_type("body", "a JSON object", req);
  GenerationRequest out;
  out.chat = chat;
  // llama.cpp server defaults: what its users expect from an unadorned request.
  out.sampler.temperature = 0.8f;
  out.sampler.top_k = 40;
  out.sampler.top_p = 0.95f;
  out.sampler.min_p = 0.05f;
  if (const json* m = field(req, "model")) {
    if (!m->is_string()) wrong_type("model", "a string", *m);
    out.model = m->get<std::string>();
  }
  if (chat) {
    parse_messages(req, out);
    if (const json* kwargs = field(req, "chat_template_kwargs")) {
      out.chat_options = chat_options_from_json(*kwargs, "chat_template_kwargs");
    }
    parse_tools(req, out);
  } else {
    const json* prompt = field(req, "prompt");
    if (!prompt) throw ApiError(400, "'prompt' is required", "prompt", "missing_required_parameter");
    if (prompt->is_array()) {
      if (prompt->size() != 1 || !(*prompt)[0].is_string()) {
        bad("'prompt' must be a string or a list of exactly one string", "prompt");
      }
      out.prompt = (*prompt)[0].get<std::string>();
    } else if (prompt->is_string()) {
      out.prompt = prompt->get<std::string>();
    } else {
      wrong_type("prompt", "a string", *prompt);
    }
    if (out.prompt.empty()) bad("'prompt' must not be empty", "prompt");
    if (field(req, "echo")) out.echo = boolean(req, "echo");
  }
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (field(req, name)) out.max_tokens = static_cast<int>(integer(req, name, 1, 1 << 24));
  }
  if (field(req, "temperature")) out.sampler.temperature = static_cast<float>(number(req, "temperature", 0, 2));
  if (field(req, "top_p")) out.sampler.top_p = static_cast<float>(number(req, "top_p", 0, 1, true));
  if (field(req, "top_k")) out.sampler.top_k = static_cast<int32_t>(integer(req, "top_k", 0, 1 << 24));
  if (field(req, "min_p")) out.sampler.min_p = static_cast<float>(number(req, "min_p", 0, 1));
  if (field(req, "presence_penalty")) {
    out.sampler.presence_penalty = static_cast<float>(number(req, "presence_penalty", -2, 2));
  }
  if (field(req, "frequency_penalty")) {
    out.sampler.frequency_penalty = static_cast<float>(number(req, "frequency_penalty", -2, 2));
  }
  if (field(req, "repeat_penalty")) {
    out.sampler.repeat_penalty = static_cast<float>(number(req, "repeat_penalty", 0, 10, true));
  }
  if (field(req, "seed")) {
    const json& s = req.at("seed");
    if (!s.is_number_integer()) wrong_type("seed", "an integer", s);
    out.sampler.seed = s.is_number_unsigned() ? s.get<uint64_t>() : static_cast<uint64_t>(s.get<int64_t>());
  }
  if (field(req, "n")) out.n = static_cast<int>(integer(req, "n", 1, 8));
  parse_logprobs(req, out);
  if (const json* stop = field(req, "stop")) {
    if (stop->is_string()) {
      out.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > 4) bad("'stop' takes at most 4 sequences, got " + std::to_string(stop->size()), "stop");
      for (const json& s : *stop) {
        if (!s.is_string()) wrong_type("stop", "a string or an array of strings", s);
        out.stop.push_back(s.get<std::string>());
      }
    } else {
      wrong_type("stop", "a string or an array of strings", *stop);
    }
    for (const std::string& s : out.stop) {
      if (s.empty()) bad("'stop' sequences must not be empty", "stop");
    }
  }
  if (const json* bias = field(req, "logit_bias")) {
    try {
      out.sampler.logit_bias = parse_logit_bias(*bias, n_vocab, "logit_bias");
    } catch (const RequestError& e) {
      throw api_error(e, chat);
    }
  }
  parse_constraint(req, out);
  if (field(req, "stream")) out.stream = boolean(req, "stream");
  if (const json* so = field(req, "stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    if (!out.stream) bad("'stream_options' is only allowed when 'stream' is true", "stream_options");
    if (field(*so, "include_usage")) {
      const json& v = so->at("include_usage");
      if (!v.is_boolean()) wrong_type("stream_options.include_usage", "a boolean", v);
      out.include_usage = v.get<bool>();
    }
  }
  return out;
}

EmbeddingRequest parse_embedding_request(std::string_view body) {
  return embedding_request_from_json(parse_json_body(body));
}

EmbeddingRequest embedding_request_from_json(const json& req) {
  if (!req.is_object()) wrong_type("body", "a JSON object", req);
  EmbeddingRequest out;
  if (const json* m = field(req, "model")) {
    if (!m->is_string()) wrong_type("model", "a string", *m);
    out.model = m->get<std::string>();
  }
  const json* input = field(req, "input");
  if (!input) throw ApiError(400, "'input' is required", "input", "missing_required_parameter");
  if (input->is_string()) {
    out.inputs.push_back(input->get<std::string>());
  } else if (input->is_array()) {
    if (input->empty()) bad("'input' must not be an empty array", "input");
    if (input->size() > 256) bad("'input' takes at most 256 items, got " + std::to_string(input->size()), "input");
    for (const json& s : *input) {
      if (!s.is_string()) wrong_type("input", "a string or an array of strings", s);
      out.inputs.push_back(s.get<std::string>());
    }
  } else {
    wrong_type("input", "a string or an array of strings", *input);
  }
  for (const std::string& s : out.inputs) {
    if (s.empty()) bad("'input' strings must not be empty", "input");
  }
  if (const json* f = field(req, "encoding_format")) {
    if (!f->is_string() || (*f != "float" && *f != "base64")) {
      throw ApiError(400, "'encoding_format' must be \"float\" or \"base64\"", "encoding_format",
                     "unsupported_value");
    }
    out.base64 = *f == "base64";
  }
  return out;
}

std::string base64_floats(const std::vector<float>& v) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<uint8_t>(u >> (8 * b));
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = (uint32_t{bytes[i]} << 16) | (i + 1 < bytes.size() ? uint32_t{bytes[i + 1]} << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t{bytes[i + 2]} : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

json chat_logprobs(const Tokenizer& tokenizer, std::span<const StepLogprobs> steps) {
  return {{"content", chat_logprobs_json(tokenizer, steps)}, {"refusal", nullptr}};
}

json completion_logprobs(const Tokenizer& tokenizer, std::span<const StepLogprobs> steps, size_t& offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  const auto text_of = [&](TokenId id) { return utf8_sanitize(token_bytes(tokenizer, id)); };
  for (const StepLogprobs& s : steps) {
    const std::string text = text_of(s.chosen.id);
    tokens.push_back(text);
    token_logprobs.push_back(s.chosen.logprob);
    json alternatives = json::object();
    for (const TokenLogprob& t : s.top) alternatives.emplace(text_of(t.id), t.logprob);  // the likeliest of equal texts
    top.push_back(std::move(alternatives));
    offsets.push_back(offset);
    for (const char c : text) offset += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

// Checked after parsing: the body limit already bounds the parser's work, and the
// parsed request has every field in one shape.
void check_request_limits(const GenerationRequest& r, const RequestLimits& limits) {
  // "'stop' sequences may be at most 256 bytes, got 300"
  const auto refuse = [](const std::string& param, const std::string& subject, size_t limit, const std::string& unit,
                         size_t got, const std::string& option) {
    throw ApiError(400,
                   subject + " at most " + std::to_string(limit) + unit + ", got " + std::to_string(got) + " (" +
                       option + ")",
                   param, "limit_exceeded");
  };
  if (r.chat && limits.max_messages > 0 && r.messages.size() > static_cast<size_t>(limits.max_messages)) {
    refuse("messages", "'messages' may hold", static_cast<size_t>(limits.max_messages), " messages", r.messages.size(),
           "--max-messages");
  }
  if (r.max_tokens && limits.max_completion_tokens > 0 && *r.max_tokens > limits.max_completion_tokens) {
    refuse("max_tokens", "'max_tokens' may be", static_cast<size_t>(limits.max_completion_tokens), "",
           static_cast<size_t>(*r.max_tokens), "--max-completion-tokens");
  }
  for (const std::string& s : r.stop) {
    if (s.size() > limits.max_stop_bytes) {
      refuse("stop", "'stop' sequences may be", limits.max_stop_bytes, " bytes", s.size(), "a fixed limit");
    }
  }
  if (r.sampler.logit_bias.size() > limits.max_logit_bias) {
    refuse("logit_bias", "'logit_bias' may hold", limits.max_logit_bias, " entries", r.sampler.logit_bias.size(),
           "a fixed limit");
  }
}

// Any other key is refused by name rather than dropped (it would change the prompt
// the client asked for).
ChatOptions chat_options_from_json(const json& kwargs, const std::string& param) {
  if (!kwargs.is_object()) wrong_type(param, "an object", kwargs);
  ChatOptions options;
  for (const auto& [key, value] : kwargs.items()) {
    const std::string p = param + "." + key;
    if (key != "enable_thinking") {
      throw ApiError(400, "'" + p + "' is not supported (supported: enable_thinking)", p, "unsupported_parameter");
    }
    if (!value.is_boolean()) wrong_type(p, "a boolean", value);
    options.enable_thinking = value.get<bool>();
  }
  return options;
}

}  // namespace runnel::server
