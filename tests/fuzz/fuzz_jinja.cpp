// The Jinja parser and renderer on untrusted templates (a GGUF's
// tokenizer.chat_template): ChatTemplate::parse (which also renders its probe
// conversations) and apply() with and without tools. Input: the template, optionally
// followed by kMessagesSeparator and a JSON array of {"role", "content"} messages
// (without it, a fixed four-message conversation). The expected failure is
// ChatTemplateError; anything else escaping, a sanitizer report, a timeout (a template
// that loops too long must be stopped with an error) or an OOM is a finding.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/chat/chat_template.h"
#include "tests/fuzz/fuzz_util.h"

namespace runnel {
namespace {

constexpr std::string_view kMessagesSeparator = "\n==runnel-messages==\n";

std::vector<ChatMessage> messages_of(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  std::vector<ChatMessage> out;
  if (!j.is_array()) return out;
  for (const nlohmann::json& m : j) {
    if (!m.is_object()) continue;
    ChatMessage msg;
    if (auto it = m.find("role"); it != m.end() && it->is_string()) msg.role = it->get<std::string>();
    if (auto it = m.find("content"); it != m.end() && it->is_string()) msg.content = it->get<std::string>();
    if (auto it = m.find("reasoning_content"); it != m.end() && it->is_string()) {
      msg.reasoning_content = it->get<std::string>();
    }
    if (auto it = m.find("tool_call"); it != m.end() && it->is_string()) {
      msg.tool_calls.push_back({"get_weather", it->get<std::string>(), "call_1"});
    }
    out.push_back(std::move(msg));
  }
  return out;
}

const std::vector<ChatMessage> kConversation = {
    {"system", "You are helpful."},
    {"user", "Hi <b>there</b>"},
    {"assistant", "", {{"get_weather", R"({"city": "Paris"})", "call_1"}}},
    {"tool", "sunny", {}, "call_1", "get_weather"},
    {"user", "Thanks"},
};

}  // namespace
}  // namespace runnel

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace runnel;
  const std::vector<std::string_view> parts = fuzz::split_input(fuzz::as_text(data, size), kMessagesSeparator);
  const std::vector<ChatMessage> messages = parts.size() > 1 ? messages_of(parts[1]) : kConversation;
  try {
    ChatTemplate t = ChatTemplate::parse(parts[0], "<s>", "</s>");
    t.set_now(1700000000);
    (void)t.apply(messages, true);
    ChatOptions options;
    options.enable_thinking = false;
    options.tools = {{"get_weather", "Weather in a city",
                      R"({"type": "object", "properties": {"city": {"type": "string"}}})"}};
    (void)t.apply(messages, false, options);
  } catch (const ChatTemplateError&) {
  }
  return 0;
}
