#include "core/chat/chat_template.h"

#include <chrono>

#include "core/chat/builtin_templates.h"
#include "core/chat/jinja.h"

namespace runnel {

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
  using jinja::Value;
  jinja::List list;
  for (const ChatMessage& m : messages) {
    jinja::Dict d;
    d.set("role", Value(m.role));
    d.set("content", Value(m.content));
    list.emplace_back(std::move(d));
  }
  // What HF's apply_chat_template passes (tools=None when the request has none).
  std::vector<std::pair<std::string, Value>> globals = {
      {"messages", Value(std::move(list))},
      {"add_generation_prompt", Value(add_generation_prompt)},
      {"bos_token", Value(bos_)},
      {"eos_token", Value(eos_)},
      {"tools", Value::none()},
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
