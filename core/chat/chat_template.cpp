#include "core/chat/chat_template.h"

#include <chrono>

#include "core/chat/builtin_templates.h"
#include "core/chat/chat_json.h"
#include "core/chat/jinja.h"

namespace runnel {

namespace {

using jinja::Value;

// A JSON text as a Jinja value; `what` names it in the error for invalid JSON.
Value json_value(const std::string& text, const std::string& what) {
  std::optional<Value> v = chat_json::parse(text);
  if (!v) throw ChatTemplateError("chat template: " + what + " is not valid JSON: " + text);
  return *v;
}

// OpenAI's message shape, as HF and llama.cpp hand it to templates: the optional fields
// only when set, tool_calls as [{type, function: {name, arguments}, id}] with arguments
// parsed when the template wants an object, and an empty content beside tool calls as
// None (OpenAI's null) when the template takes it.
Value message_value(const ChatMessage& m, ChatTemplateCaps caps) {
  jinja::Dict d;
  d.set("role", Value(m.role));
  const bool null_content = caps.null_tool_call_content && !m.tool_calls.empty() && m.content.empty();
  d.set("content", null_content ? Value::none() : Value(m.content));
  if (!m.reasoning_content.empty()) d.set("reasoning_content", Value(m.reasoning_content));
  if (!m.name.empty()) d.set("name", Value(m.name));
  if (!m.tool_call_id.empty()) d.set("tool_call_id", Value(m.tool_call_id));
  if (!m.tool_calls.empty()) {
    jinja::List calls;
    for (const ChatToolCall& c : m.tool_calls) {
      jinja::Dict function;
      function.set("name", Value(c.name));
      function.set("arguments",
                   caps.object_arguments ? json_value(c.arguments, "the arguments of tool call '" + c.name + "'")
                                    : Value(c.arguments));
      jinja::Dict call;
      call.set("type", Value("function"));
      call.set("function", Value(std::move(function)));
      if (!c.id.empty()) call.set("id", Value(c.id));
      calls.emplace_back(std::move(call));
    }
    d.set("tool_calls", Value(std::move(calls)));
  }
  return Value(std::move(d));
}

Value tools_value(const std::vector<ChatTool>& tools) {
  if (tools.empty()) return Value::none();
  jinja::List list;
  for (const ChatTool& t : tools) {
    jinja::Dict function;
    function.set("name", Value(t.name));
    function.set("description", Value(t.description));
    function.set("parameters", t.parameters.empty()
                                   ? Value(jinja::Dict{})
                                   : json_value(t.parameters, "the parameters of tool '" + t.name + "'"));
    jinja::Dict tool;
    tool.set("type", Value("function"));
    tool.set("function", Value(std::move(function)));
    list.emplace_back(std::move(tool));
  }
  return Value(std::move(list));
}

}  // namespace

std::string ChatTemplateChoice::description() const {
  if (builtin.empty()) return "from the file (tokenizer.chat_template)";
  return "built-in " + builtin + " (the file has none)";
}

ChatTemplateChoice choose_chat_template(const GgufMetadata& metadata) {
  const std::optional<std::string> source = metadata.find_string("tokenizer.chat_template");
  if (source && !source->empty()) return {*source, ""};
  const BuiltinChatTemplate t = builtin_chat_template_for_architecture(
      metadata.find_string("general.architecture").value_or(""));
  return {std::string(t.source), std::string(t.name)};
}

// A conversation with one tool call whose arguments hold a key no template prints by
// itself, rendered the ways a template may expect it: the first that renders and shows
// the key is how this template reads tool calls (llama.cpp's template caps, found the
// same way). Arguments as an object first (most templates `tojson` them), content None
// first (what HF passes for OpenAI's null); a template that never shows the call gets
// the plain strings.
ChatTemplateCaps ChatTemplate::probe_caps() const {
  const std::vector<ChatMessage> messages = {
      {"user", "User message"},
      {"assistant", "", {{"tool1", R"({"argument_needle": "value"})", "call00001"}}},
      {"tool", "Tool response", {}, "call00001", "tool1"},
      {"assistant", "The tool response was 'tool response'"},
      {"user", "User message"},
  };
  ChatOptions options;
  options.tools = {{"tool1", "Tool description",
                    R"({"type": "object", "properties": {"argument_needle": {"type": "string"}}})"}};
  for (const bool object_arguments : {true, false}) {
    for (const bool null_content : {true, false}) {
      const ChatTemplateCaps caps{object_arguments, null_content};
      try {
        if (render(messages, false, options, caps).find("argument_needle") != std::string::npos) return caps;
      } catch (const ChatTemplateError&) {
      }
    }
  }
  return {false, false};
}

ChatTemplate ChatTemplate::parse(std::string_view source, std::string bos_token, std::string eos_token) {
  ChatTemplate t;
  t.source_ = std::string(source);
  t.bos_ = std::move(bos_token);
  t.eos_ = std::move(eos_token);
  try {
    t.template_ = std::make_shared<const jinja::Template>(source);
  } catch (const jinja::JinjaError& e) {
    throw ChatTemplateError(e.what());
  }
  t.caps_ = t.probe_caps();
  return t;
}

ChatTemplate ChatTemplate::from_model(const GgufMetadata& metadata, const Tokenizer& tokenizer) {
  ChatTemplateChoice choice = choose_chat_template(metadata);
  const auto text = [&](TokenId id) { return id >= 0 ? tokenizer.token_text(id) : std::string(); };
  ChatTemplate t = parse(choice.source, text(tokenizer.bos()), text(tokenizer.eos()));
  t.builtin_ = std::move(choice.builtin);
  return t;
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, const ChatOptions& options) const {
  return render(messages, add_generation_prompt, options, caps_);
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                 const ChatOptions& options, ChatTemplateCaps caps) const {
  jinja::List list;
  for (const ChatMessage& m : messages) list.push_back(message_value(m, caps));
  // What HF's apply_chat_template passes (tools=None when the request has none).
  std::vector<std::pair<std::string, Value>> globals = {
      {"messages", Value(std::move(list))},
      {"add_generation_prompt", Value(add_generation_prompt)},
      {"bos_token", Value(bos_)},
      {"eos_token", Value(eos_)},
      {"tools", tools_value(options.tools)},
  };
  if (options.enable_thinking) {
    globals.emplace_back("enable_thinking", Value(*options.enable_thinking));
  }
  const int64_t now = now_ != 0 ? now_
                                : std::chrono::duration_cast<std::chrono::seconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
  try {
    return template_->render(globals, now);
  } catch (const jinja::JinjaError& e) {
    throw ChatTemplateError(e.what());
  }
}

}  // namespace runnel
