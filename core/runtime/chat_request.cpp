// Tools on the request path (chat_request.h).
#include "core/runtime/chat_request.h"

#include <set>

#include <nlohmann/json.hpp>

#include "core/sampling/grammar.h"
#include "core/sampling/json_schema.h"

namespace runnel {
namespace {

using nlohmann::json;

// JSON whitespace as the schema converter allows it, bounded so a small model cannot
// spend its tokens on it.
constexpr const char* kToolGrammarCommon =
    "ws ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n"
    "resp-string ::= \"\\\"\" ([^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}))* "
    "\"\\\"\"\n";

bool valid_tool_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-';
    if (!ok) return false;
  }
  return true;
}

// The schema of a tool's arguments: its parameters, {"type": "object"} when none given.
json parameters_schema(const ChatTool& tool, size_t index) {
  if (tool.parameters.empty()) return json{{"type", "object"}};
  json schema = json::parse(tool.parameters, nullptr, false);
  if (schema.is_discarded()) {
    throw RequestError("tools[" + std::to_string(index) + "].function.parameters is not valid JSON", "tools");
  }
  return schema;
}

// A marker as the grammar names it: a token reference when it is one token.
std::string marker(std::string_view text, const std::function<std::optional<TokenId>(std::string_view)>& one_token) {
  if (one_token) {
    if (const std::optional<TokenId> id = one_token(text)) return "<[" + std::to_string(*id) + "]>";
  }
  std::string lit = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') lit += '\\';
    lit += c;
  }
  return lit + "\"";
}

// "tools" or, for a refused schema, the converter's pointer under the tool's parameters.
[[noreturn]] void schema_refused(const JsonSchemaError& e, size_t index) {
  std::string_view message = e.what();
  constexpr std::string_view kPrefix = "json_schema";
  if (message.starts_with(kPrefix)) message.remove_prefix(kPrefix.size());
  throw RequestError("tools[" + std::to_string(index) + "].function.parameters" + std::string(message), "tools");
}

std::string tool_grammar_impl(ToolCallFormat format, const std::vector<ChatTool>& tools, bool parallel,
                              bool allow_response,
                              const std::function<std::optional<TokenId>(std::string_view)>& one_token) {
  std::string g = kToolGrammarCommon;
  const char* args_key = format == ToolCallFormat::Llama3 ? "parameters" : "arguments";
  std::string calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    std::string prefix = "t";
    prefix.append(std::to_string(i)).append("-");
    try {
      g += json_schema_rules(parameters_schema(tools[i], i), prefix);
    } catch (const JsonSchemaError& e) {
      schema_refused(e, i);
    }
    g += "call-" + std::to_string(i) + " ::= \"{\" ws \"\\\"name\\\"\" ws \":\" ws \"\\\"" + tools[i].name +
         "\\\"\" ws \",\" ws \"\\\"" + args_key + "\\\"\" ws \":\" ws " + prefix + "root ws \"}\"\n";
    calls += (i ? " | call-" : "call-") + std::to_string(i);
  }
  g += "call ::= " + calls + "\n";
  // Up to 8 calls in one reply where the format has a list.
  const std::string more = parallel ? " (ws \",\" ws call){0,7}" : "";
  switch (format) {
    case ToolCallFormat::Hermes: {
      const std::string one =
          marker("<tool_call>", one_token) + " \"\\n\" call \"\\n\" " + marker("</tool_call>", one_token);
      g += "root ::= " + one + (parallel ? " (\"\\n\" " + one + "){0,7}" : "") + "\n";
      break;
    }
    case ToolCallFormat::Llama3:  // one call: Llama 3.1-3.3 do not make parallel calls
      g += "root ::= call\n";
      break;
    case ToolCallFormat::Mistral:
      g += "root ::= " + marker("[TOOL_CALLS]", one_token) + " \"[\" call" + more + " \"]\"\n";
      break;
    case ToolCallFormat::Phi4:
      g += "root ::= " + marker("<|tool_call|>", one_token) + " \"[\" call" + more + " \"]\" " +
           marker("<|/tool_call|>", one_token) + "\n";
      break;
    case ToolCallFormat::Generic: {
      g += parallel ? "calls ::= \"{\" ws \"\\\"tool_calls\\\"\" ws \":\" ws \"[\" ws call" + more +
                          " ws \"]\" ws \"}\"\n"
                    : "calls ::= \"{\" ws \"\\\"tool_call\\\"\" ws \":\" ws call ws \"}\"\n";
      g += "root ::= calls";
      if (allow_response) g += " | \"{\" ws \"\\\"response\\\"\" ws \":\" ws resp-string ws \"}\"";
      g += "\n";
      break;
    }
  }
  return g;
}

std::string tools_json(const std::vector<ChatTool>& tools) {
  json list = json::array();
  for (const ChatTool& t : tools) {
    json f = {{"name", t.name}};
    if (!t.description.empty()) f["description"] = t.description;
    f["parameters"] = t.parameters.empty() ? json::object() : json::parse(t.parameters, nullptr, false);
    list.push_back({{"type", "function"}, {"function", f}});
  }
  return list.dump(2);
}

// For templates that ignore `tools`: the tools and the generic JSON form, as a system
// message (merged into the conversation's own system message when it has one).
std::vector<ChatMessage> with_tools_described(std::vector<ChatMessage> messages, const std::vector<ChatTool>& tools,
                                              bool parallel, bool required) {
  std::string text = "You can call these tools:\n" + tools_json(tools) + "\n\nReply with JSON only. ";
  text += parallel ? "To call tools: {\"tool_calls\": [{\"name\": \"<tool name>\", \"arguments\": {...}}]}."
                   : "To call a tool: {\"tool_call\": {\"name\": \"<tool name>\", \"arguments\": {...}}}.";
  if (!required) text += " To answer the user directly: {\"response\": \"<your answer>\"}.";
  if (!messages.empty() && messages[0].role == "system") {
    messages[0].content += "\n\n" + text;
  } else {
    messages.insert(messages.begin(), ChatMessage{"system", text});
  }
  return messages;
}

// Whether the template shows neither the tools nor the conversation's calls: none of
// their names is in the prompt rendered with them.
bool ignores_tools(const PromptFormat& format, const std::vector<ChatMessage>& messages, ChatOptions options,
                   const std::vector<ChatTool>& tools) {
  std::vector<std::string> names;
  for (const ChatTool& t : tools) names.push_back(t.name);
  for (const ChatMessage& m : messages) {
    for (const ChatToolCall& c : m.tool_calls) names.push_back(c.name);
  }
  if (names.empty()) return false;
  options.tools = tools;
  const std::string text = format.render(messages, options);
  for (const std::string& n : names) {
    if (text.find(n) != std::string::npos) return false;
  }
  return true;
}

// Calls as the assistant's JSON content, results as user messages, as llama.cpp's
// generic format writes them for templates without tool support.
std::vector<ChatMessage> generic_messages(const std::vector<ChatMessage>& messages) {
  std::vector<ChatMessage> out;
  for (const ChatMessage& m : messages) {
    if (!m.tool_calls.empty()) {
      json calls = json::array();
      for (const ChatToolCall& c : m.tool_calls) {
        json args = json::parse(c.arguments, nullptr, false);
        json call = {{"name", c.name}, {"arguments", args.is_discarded() ? json(c.arguments) : args}};
        if (!c.id.empty()) call["id"] = c.id;
        calls.push_back(call);
      }
      json content = {{"tool_calls", calls}};
      if (!m.content.empty()) content["content"] = m.content;
      out.push_back(ChatMessage{"assistant", content.dump(2)});
    } else if (m.role == "tool") {
      json response = {{"tool", m.name}, {"content", m.content}};
      if (!m.tool_call_id.empty()) response["tool_call_id"] = m.tool_call_id;
      out.push_back(ChatMessage{"user", json{{"tool_response", response}}.dump(2)});
    } else {
      out.push_back(m);
    }
  }
  return out;
}

}  // namespace

std::string tool_call_grammar(ToolCallFormat format, const std::vector<ChatTool>& tools, bool parallel,
                              bool allow_response,
                              const std::function<std::optional<TokenId>(std::string_view)>& one_token) {
  if (tools.empty()) throw RequestError("a tool-call grammar needs at least one tool", "tools");
  return tool_grammar_impl(format, tools, parallel, allow_response, one_token);
}

ChatTurn prepare_chat_turn(const Engine& engine, const PromptFormat& format, const std::vector<ChatMessage>& messages,
                           ChatOptions chat_options, const ChatToolOptions& request) {
  std::set<std::string> names;
  for (size_t i = 0; i < request.tools.size(); ++i) {
    const std::string& name = request.tools[i].name;
    if (!valid_tool_name(name)) {
      throw RequestError("tools[" + std::to_string(i) + "].function.name must be 1 to 64 of a-z A-Z 0-9 _ -, got '" +
                             name + "'",
                         "tools");
    }
    if (!names.insert(name).second) {
      throw RequestError("tools[" + std::to_string(i) + "]: a second tool named '" + name + "'", "tools");
    }
    parameters_schema(request.tools[i], i);  // valid JSON, before the template sees it
  }
  std::vector<ChatTool> callable;  // what the grammar lets the model call
  if (request.choice == ToolChoice::Required) {
    if (request.tools.empty()) throw RequestError("tool_choice 'required' needs tools", "tool_choice");
    callable = request.tools;
  } else if (request.choice == ToolChoice::Function) {
    for (const ChatTool& t : request.tools) {
      if (t.name == request.function) callable.push_back(t);
    }
    if (callable.empty()) {
      throw RequestError("tool_choice names the function '" + request.function + "', which is not among the tools",
                         "tool_choice");
    }
  }
  const bool offered = !request.tools.empty() && request.choice != ToolChoice::None;
  if (offered) chat_options.tools = request.tools;

  ChatTurn turn;
  const ChatTemplate* tmpl = format.chat_template();
  const std::string source = tmpl ? tmpl->source() : "";
  ChatSyntax syntax = chat_syntax_for(source, "");
  if (ignores_tools(format, messages, chat_options, request.tools)) {
    // SmolLM2's, plain ChatML: the tools, the earlier calls and their results are
    // written in the generic JSON form the model is asked to answer in.
    syntax.format = ToolCallFormat::Generic;
    std::vector<ChatMessage> generic = generic_messages(messages);
    if (offered) {
      generic = with_tools_described(std::move(generic), request.tools, request.parallel,
                                     request.choice != ToolChoice::Auto);
    }
    turn.prompt_text = format.render(generic, chat_options);
  } else {
    turn.prompt_text = format.render(messages, chat_options);
  }
  const ToolCallFormat call_format = syntax.format;
  syntax = chat_syntax_for(source, turn.prompt_text);
  syntax.format = call_format;
  syntax.tool_calls = offered;
  syntax.id_seed = request.id_seed;
  if (!request.split_reasoning) {
    syntax.reasoning = false;
    syntax.thinking_open = false;
  }
  turn.syntax = syntax;
  turn.prompt = format.chat_tokens(turn.prompt_text);

  // required / a named function: the call is forced; the generic form is always JSON.
  const bool forced = offered && request.choice != ToolChoice::Auto;
  if (forced || (offered && syntax.format == ToolCallFormat::Generic)) {
    const Tokenizer& tok = engine.tokenizer();
    const auto one_token = [&](std::string_view text) -> std::optional<TokenId> {
      const std::vector<TokenId> ids = tok.encode(text, false, true);
      if (ids.size() == 1) return ids[0];
      return std::nullopt;
    };
    const std::string gbnf = tool_call_grammar(syntax.format, forced ? callable : request.tools, request.parallel,
                                               !forced, one_token);
    turn.grammar = compile_grammar(engine, gbnf, "tools");
  }
  return turn;
}

}  // namespace runnel
