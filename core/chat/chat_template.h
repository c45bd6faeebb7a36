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

struct ChatMessage {
  std::string role;
  std::string content;
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

  std::string source_, bos_, eos_, builtin_;
  std::shared_ptr<const jinja::Template> template_;
  int64_t now_ = 0;
};

// ChatML, the built-in of llama, qwen2 and unknown architectures.
extern const char* const kChatMlTemplate;

}  // namespace runnel
