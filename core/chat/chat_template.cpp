#include "core/chat/chat_template.h"

#include <chrono>

#include "core/chat/jinja.h"

namespace runnel {

const char* const kChatMlTemplate =
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

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
  const std::optional<std::string> source = metadata.find_string("tokenizer.chat_template");
  const auto text = [&](TokenId id) { return id >= 0 ? tokenizer.token_text(id) : std::string(); };
  return parse(source ? *source : std::string(kChatMlTemplate), text(tokenizer.bos()), text(tokenizer.eos()));
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
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
