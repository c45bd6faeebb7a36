// Tools and reasoning on the request path: a chat request's tools, tool_choice and
// parallel_tool_calls become the rendered prompt (the template sees the tools), the
// syntax its reply is read with (core/chat/tool_calls.h) and, for tool_choice required /
// a named function (and the generic JSON form of templates with no native format), a
// grammar that forces the format's call wrapper around arguments valid under the tool's
// parameters schema, so such a call always parses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/tool_calls.h"
#include "core/runtime/request.h"

namespace runnel {

enum class ToolChoice {
  Auto,      // the model decides; its reply is parsed for calls afterwards
  None,      // no tools reach the template (as llama.cpp); the reply is content
  Required,  // at least one call, to any of the tools (grammar-forced)
  Function,  // one call to ChatToolOptions::function (grammar-forced)
};

struct ChatToolOptions {
  std::vector<ChatTool> tools;
  ToolChoice choice = ToolChoice::Auto;
  std::string function;  // ToolChoice::Function: the tool's name
  bool parallel = true;  // parallel_tool_calls: several calls in one reply, where the format allows
  // False (`--reasoning-format none`): think blocks stay in the content.
  bool split_reasoning = true;
  uint64_t id_seed = 0;  // generated call ids (random per request in a server)
};

// A chat request ready to run: its prompt, how to read the reply, and the grammar that
// forces a call (null: none; the request may then use its own output constraint).
struct ChatTurn {
  std::vector<TokenId> prompt;
  std::string prompt_text;  // the rendered prompt
  ChatSyntax syntax;
  std::shared_ptr<const Grammar> grammar;
};

// Renders `messages` with the tools (unless tool_choice is none) and builds the turn.
// A template that ignores the tools it is given (it prints none of their names) gets
// them described in a system message, with the generic JSON form to call them in.
// Throws RequestError naming "tools" (a name that is not [a-zA-Z0-9_-]{1,64}, duplicate
// names, a parameters schema the converter refuses: "tools[1].function.parameters ...")
// or "tool_choice" (required with no tools, a function that is not among them).
ChatTurn prepare_chat_turn(const Engine& engine, const PromptFormat& format, const std::vector<ChatMessage>& messages,
                           ChatOptions chat_options, const ChatToolOptions& tools);

// GBNF text of a reply that is only tool calls in `format`, to `tools` (all of them
// must be callable: restrict the list for a named function), one call or, with
// `parallel` where the format allows, up to 8. `allow_response` (the generic form
// only) also allows {"response": "..."}. `one_token(marker)`: the token id when a format
// marker (<tool_call>, [TOOL_CALLS], ...) is one token of the vocabulary, which the
// grammar then names as a token reference (a control token matches no literal); unset
// or nullopt: the marker as text. Throws RequestError ("tools") for a refused schema.
std::string tool_call_grammar(
    ToolCallFormat format, const std::vector<ChatTool>& tools, bool parallel, bool allow_response,
    const std::function<std::optional<TokenId>(std::string_view marker)>& one_token = {});

}  // namespace runnel
