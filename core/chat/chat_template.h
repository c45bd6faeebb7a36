// Chat templates: a model's `tokenizer.chat_template` (Jinja) turned into the prompt
// text for a list of messages, as HF transformers' apply_chat_template renders it.
// The server, the CLI and the wasm API build prompts through this.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/tokenizer/tokenizer.h"

namespace runnel {

namespace jinja {
class Template;
}

// A function call an assistant message made, as OpenAI's API carries it
// (`tool_calls[i]`: {id, type: "function", function: {name, arguments}}).
struct ChatToolCall {
  std::string name;
  std::string arguments;  // JSON text of the arguments object, as OpenAI sends it
  std::string id;         // empty: none (the template sees no `id`)
};

// `{role, content}` keeps compiling: every field after content has a default. An
// assistant message that only calls tools has an empty content (OpenAI's `null`);
// templates get "" for it, as llama.cpp passes it.
struct ChatMessage {
  std::string role;
  std::string content;
  std::vector<ChatToolCall> tool_calls = {};  // assistant
  std::string tool_call_id = {};              // role "tool": the call this answers
  std::string name = {};                      // role "tool": the function's name
  std::string reasoning_content = {};         // assistant: earlier reasoning (Qwen3)
};

// A function the model may call (OpenAI's `tools[i].function`).
struct ChatTool {
  std::string name;
  std::string description = {};
  std::string parameters = {};  // JSON Schema text; empty: {} (no parameters given)
};

class ChatTemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Which template a model's chats are rendered with, and why. choose_chat_template makes
// this choice for every front end (through ChatTemplate::from_model) and for `inspect`.
struct ChatTemplateChoice {
  std::string source;   // Jinja
  std::string builtin;  // the built-in's name ("gemma", "chatml", ...); empty: the file's own
  // "from the file (tokenizer.chat_template)" or "built-in gemma (the file has none)".
  std::string description() const;
};

// The file's `tokenizer.chat_template` when it has a non-empty one, else the built-in
// known for its `general.architecture` (core/chat/builtin_templates.h).
ChatTemplateChoice choose_chat_template(const GgufMetadata& metadata);

// Template variables a request may set beyond the messages (HF's apply_chat_template
// keyword arguments, llama.cpp's chat_template_kwargs). Unset ones stay undefined.
struct ChatOptions {
  // Qwen3 and other reasoning templates: false asks the model not to think.
  std::optional<bool> enable_thinking;
  // The request's tools; templates see them as OpenAI's `tools` array
  // ([{type: "function", function: {name, description, parameters}}]), none when empty.
  std::vector<ChatTool> tools = {};
};

// How a template wants tool calls handed to it; parse() finds out by rendering a probe
// conversation with one call each way, as llama.cpp's template caps do.
struct ChatTemplateCaps {
  // Arguments as a JSON object (most templates print `arguments | tojson`), else the
  // JSON text OpenAI sends.
  bool object_arguments = false;
  // A tool-calling message's empty content as None (what HF passes for OpenAI's null;
  // DeepSeek-R1's template renders calls only then), else "".
  bool null_tool_call_content = false;
};

class ChatTemplate {
 public:
  // Parses a Jinja template; throws ChatTemplateError naming an unsupported construct
  // (e.g. "chat template: unsupported filter 'wordcount' at line 3") or a syntax error.
  static ChatTemplate parse(std::string_view source, std::string bos_token = "",
                            std::string eos_token = "");
  // The template choose_chat_template picks (the file's, else the architecture's
  // built-in) with the tokenizer's BOS/EOS texts.
  static ChatTemplate from_model(const GgufMetadata& metadata, const Tokenizer& tokenizer);

  // Renders messages, plus the opening of the assistant's turn when asked. Throws
  // ChatTemplateError for the template's raise_exception() (with its message) and
  // runtime errors (type errors, calling what is not a function).
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                    const ChatOptions& options = {}) const;

  // How the template reads tool calls (found by parse(); see ChatTemplateCaps).
  const ChatTemplateCaps& caps() const { return caps_; }

  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_; }
  const std::string& eos_token() const { return eos_; }
  // The built-in's name when from_model found no template in the file, else empty.
  const std::string& builtin_name() const { return builtin_; }
  // Unix time strftime_now() formats (templates that print today's date); 0: the
  // clock at apply(). Tests fix it.
  void set_now(int64_t unix_seconds) { now_ = unix_seconds; }

 private:
  ChatTemplate() = default;
  ChatTemplateCaps probe_caps() const;
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     const ChatOptions& options, ChatTemplateCaps caps) const;

  std::string source_, bos_, eos_, builtin_;
  std::shared_ptr<const jinja::Template> template_;
  int64_t now_ = 0;
  ChatTemplateCaps caps_;
};

// ChatML, the built-in of llama, qwen2 and unknown architectures.
extern const char* const kChatMlTemplate;

}  // namespace runnel
