// Chat templates: a model's `tokenizer.chat_template` (Jinja) turned into the prompt
// text for a list of messages, as HF transformers' apply_chat_template renders it.
// The server, the CLI and the wasm API build prompts through this.
#pragma once

#include <cstdint>
#include <memory>
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

class ChatTemplate {
 public:
  // Parses a Jinja template; throws ChatTemplateError naming an unsupported construct
  // (e.g. "chat template: unsupported filter 'wordcount' at line 3") or a syntax error.
  static ChatTemplate parse(std::string_view source, std::string bos_token = "",
                            std::string eos_token = "");
  // The model's template (metadata "tokenizer.chat_template") with the tokenizer's
  // BOS/EOS texts; ChatML (<|im_start|>role\ncontent<|im_end|>\n) when it has none.
  static ChatTemplate from_model(const GgufMetadata& metadata, const Tokenizer& tokenizer);

  // Renders messages, plus the opening of the assistant's turn when asked. Throws
  // ChatTemplateError for the template's raise_exception() (with its message) and
  // runtime errors (type errors, calling what is not a function).
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_; }
  const std::string& eos_token() const { return eos_; }
  // Unix time strftime_now() formats (templates that print today's date); 0: the
  // clock at apply(). Tests fix it.
  void set_now(int64_t unix_seconds) { now_ = unix_seconds; }

 private:
  ChatTemplate() = default;

  std::string source_, bos_, eos_;
  std::shared_ptr<const jinja::Template> template_;
  int64_t now_ = 0;
};

// The template models without `tokenizer.chat_template` get.
extern const char* const kChatMlTemplate;

}  // namespace runnel
