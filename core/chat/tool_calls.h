// Tool calls and reasoning in generated text: which format a model family writes calls
// in (found from its chat template), splitting a finished reply into content, reasoning
// and calls, and the same split fed piece by piece while the reply streams, as
// OpenAI's chat.completion.chunk deltas carry it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/chat_template.h"

namespace runnel {

enum class ToolCallFormat {
  Generic,  // no native format: the reply is {"tool_calls": [...]} or {"response": ...}
  Hermes,   // Qwen2.5/Qwen3/Hermes: <tool_call>{"name": ..., "arguments": ...}</tool_call>
  Llama3,   // {"name": ..., "parameters": ...} at the start, or <|python_tag|>
  Mistral,  // [TOOL_CALLS][{"name": ..., "arguments": ..., "id": ...}]
  Phi4,     // <|tool_call|>[{"name": ..., "arguments": ...}]<|/tool_call|>
};

std::string_view tool_call_format_name(ToolCallFormat format);

// How to read a model's reply.
struct ChatSyntax {
  ToolCallFormat format = ToolCallFormat::Generic;
  // Reasoning between <think> and </think> at the start of the reply goes to `reasoning`.
  bool reasoning = false;
  // The prompt already opened the think block (DeepSeek-R1 distills' generation prompt
  // ends with "<think>\n"): the reply starts inside it.
  bool thinking_open = false;
  // False: no tools were offered, so the reply is not searched for calls (all content).
  bool tool_calls = true;
  // Generated call ids are a function of this and the call's index (a server passes a
  // random one per request), so a stream and a one-shot parse agree.
  uint64_t id_seed = 0;
};

// The format a template's model writes, found from the template text as llama.cpp's
// chat format detection does: [TOOL_CALLS] -> Mistral, <tool_call> -> Hermes,
// <|tool_call|> -> Phi4, <|python_tag|> or an ipython header -> Llama3, else Generic.
ToolCallFormat detect_tool_call_format(std::string_view template_source);

// The syntax for a reply to `prompt` (the rendered prompt): the template's format,
// reasoning when the template knows <think>, thinking_open when the prompt ends inside
// an opened think block.
ChatSyntax chat_syntax_for(std::string_view template_source, std::string_view prompt);

// A finished reply split up. Content and reasoning are trimmed; a call's arguments are
// the model's JSON object text (a JSON string in OpenAI's API); text that looks like a
// call but is not valid JSON stays in content.
struct ChatReply {
  std::string content;
  std::string reasoning;
  std::vector<ChatToolCall> tool_calls;
};
ChatReply parse_chat_reply(std::string_view text, const ChatSyntax& syntax);

// One step of a streamed reply, as OpenAI's chunk `delta` carries it: a call appears
// once with its index, id and name, later steps add to its arguments text.
struct ToolCallDelta {
  size_t index = 0;
  std::string id, name;  // set on the call's first delta only
  std::string arguments;
};
struct ChatReplyDelta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

// Feeds generated pieces and returns what they add. Text that may be the start of a
// marker (`<tool_` of `<tool_call>`, a call's JSON still undecided) is held back until
// it is decided; finish() releases the rest. The deltas of a well-formed reply add up
// to parse_chat_reply() of the whole text, however it was split. A call the model
// leaves malformed after its name was streamed cannot be taken back: reply() then
// differs from what was streamed (it has that text as content).
class ChatReplyStream {
 public:
  explicit ChatReplyStream(ChatSyntax syntax) : syntax_(syntax) {}
  ChatReplyDelta feed(std::string_view piece);
  ChatReplyDelta finish();
  // The one-shot parse of everything fed so far (after finish(): the final reply).
  ChatReply reply() const { return parse_chat_reply(text_, syntax_); }

 private:
  ChatReplyDelta advance(const ChatReply& snapshot);

  ChatSyntax syntax_;
  std::string text_;
  ChatReply sent_;  // what the deltas so far add up to
};

}  // namespace runnel
