// Tool calls and reasoning split out of replies, per format; the stream parser's deltas
// add up to the one-shot parse at every split of each sample.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/chat/tool_calls.h"

namespace runnel {
namespace {

std::string template_text(const std::string& name) {
  std::ifstream in(std::string(RUNNEL_TEST_DATA) + "/templates/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ChatSyntax syntax(ToolCallFormat f, bool reasoning = false, bool thinking_open = false) {
  ChatSyntax s;
  s.format = f;
  s.reasoning = reasoning;
  s.thinking_open = thinking_open;
  s.id_seed = 42;
  return s;
}

struct Sample {
  const char* what;
  ChatSyntax syntax;
  const char* text;
  const char* content;
  const char* reasoning;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  // False: the call turns malformed after its name was streamed, which a stream cannot
  // take back (see the test of that below).
  bool streams_as_parsed = true;
};

const ChatSyntax kHermes = syntax(ToolCallFormat::Hermes);
const ChatSyntax kQwen3 = syntax(ToolCallFormat::Hermes, true);
const ChatSyntax kR1 = syntax(ToolCallFormat::Generic, true, true);
const ChatSyntax kLlama = syntax(ToolCallFormat::Llama3);
const ChatSyntax kMistral = syntax(ToolCallFormat::Mistral);
const ChatSyntax kPhi4 = syntax(ToolCallFormat::Phi4);
const ChatSyntax kGeneric = syntax(ToolCallFormat::Generic);

const std::vector<Sample>& samples() {
  static const std::vector<Sample> s = {
      {"hermes: content only", kHermes, "Hello, world!\nWhat's up?", "Hello, world!\nWhat's up?", "", {}},
      {"hermes: one call (llama.cpp's test reply)", kHermes,
       "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>", "", "",
       {{"special_function", "{\"arg1\": 1}"}}},
      {"hermes: content, then two calls", kHermes,
       "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": [1, 2]}}\n</tool_call>",
       "Let me check.", "", {{"get_weather", "{\"city\": \"Paris\"}"}, {"get_weather", "{\"city\": \"Rome\", \"days\": [1, 2]}"}}},
      {"hermes: malformed JSON stays content", kHermes,
       "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>",
       "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>", "", {}, false},
      {"hermes: not JSON after the marker stays content", kHermes, "x <tool_call>oops</tool_call>",
       "x <tool_call>oops</tool_call>", "", {}},
      {"hermes: arguments as a JSON string", kHermes,
       "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": \\\"\\u00e9\\\"}\"}</tool_call>", "", "",
       {{"f", "{\"a\": \"é\"}"}}},
      {"hermes: no close marker at the end", kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}", "", "", {{"f", "{}"}}},
      {"hermes: a '<' that is no marker", kHermes, "a < b and <tool> c", "a < b and <tool> c", "", {}},
      {"hermes: UTF-8 in content and arguments", kHermes,
       "Météo 🌤\n<tool_call>{\"name\": \"f\", \"arguments\": {\"ville\": \"Zürich\"}}</tool_call>", "Météo 🌤", "",
       {{"f", "{\"ville\": \"Zürich\"}"}}},
      {"qwen3: think, then a call", kQwen3,
       "<think>\nI'm\nthinking\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": true}}\n</tool_call>", "",
       "I'm\nthinking", {{"f", "{\"x\": true}"}}},
      {"qwen3: think, then content", kQwen3, "<think>\nHmm.\n</think>\n\nHello!", "Hello!", "Hmm.", {}},
      {"qwen3: empty think block", kQwen3, "<think>\n\n</think>\n\nHi", "Hi", "", {}},
      {"qwen3: no think block", kQwen3, "Hi <b>there</b>", "Hi <b>there</b>", "", {}},
      {"qwen3: unclosed think block is all reasoning", kQwen3, "<think>still going", "", "still going", {}},
      {"r1: the prompt opened the think block", kR1, "I'm\nthinking\n</think>\n\nHello, world!", "Hello, world!",
       "I'm\nthinking", {}},
      {"llama3: one call (llama.cpp's test reply)", kLlama,
       "{\"name\": \"special_function\", \"parameters\": {\"arg1\": 1}}", "", "", {{"special_function", "{\"arg1\": 1}"}}},
      {"llama3: type, name, parameters", kLlama, "{\"type\": \"function\", \"name\": \"f\", \"parameters\": {\"a\": \"b\"}}",
       "", "", {{"f", "{\"a\": \"b\"}"}}},
      {"llama3: two calls separated by ';'", kLlama,
       "{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {\"n\": 2}}", "", "",
       {{"f", "{}"}, {"g", "{\"n\": 2}"}}},
      {"llama3: JSON that is no call is content", kLlama, "{\"answer\": 42}", "{\"answer\": 42}", "", {}},
      {"llama3: content", kLlama, "Paris is sunny.", "Paris is sunny.", "", {}},
      {"llama3: python_tag with code", kLlama, "Sure.<|python_tag|>print(\"hi\")\n", "Sure.", "",
       {{"python", "{\"code\": \"print(\\\"hi\\\")\"}"}}},
      {"llama3: python_tag with a JSON call", kLlama, "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"q\": 1}}", "", "",
       {{"f", "{\"q\": 1}"}}},
      {"mistral: call with id (llama.cpp's test reply)", kMistral,
       "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}, \"id\": \"123456789\"}]", "", "",
       {{"special_function", "{\"arg1\": 1}"}}},
      {"mistral: content, then two calls", kMistral,
       "On it.[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", \"arguments\": {}}]", "On it.", "",
       {{"f", "{\"a\": 1}"}, {"g", "{}"}}},
      {"mistral: malformed array stays content", kMistral, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {]",
       "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {]", "", {}},
      {"phi4: list of calls", kPhi4,
       "<|tool_call|>[{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", \"arguments\": {\"b\": [2]}}]<|/tool_call|>",
       "", "", {{"f", "{\"a\": 1}"}, {"g", "{\"b\": [2]}"}}},
      {"phi4: content and one call object", kPhi4, "Ok <|tool_call|>{\"name\": \"f\", \"arguments\": {}}<|/tool_call|> done",
       "Ok  done", "", {{"f", "{}"}}},
      {"generic: tool_calls", kGeneric,
       "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", \"arguments\": {}}]}", "", "",
       {{"f", "{\"a\": 1}"}, {"g", "{}"}}},
      {"generic: tool_call", kGeneric, "{\"tool_call\": {\"name\": \"f\", \"arguments\": {\"a\": 1}}}", "", "",
       {{"f", "{\"a\": 1}"}}},
      {"generic: response", kGeneric, "{\"response\": \"Hi \\\"you\\\"\"}", "Hi \"you\"", "", {}},
      {"generic: plain text", kGeneric, "Just text.", "Just text.", "", {}},
      {"generic: broken JSON", kGeneric, "{\"tool_calls\": [", "{\"tool_calls\": [", "", {}},
  };
  return s;
}

void check_reply(const Sample& s, const ChatReply& r) {
  CHECK(r.content == s.content);
  CHECK(r.reasoning == s.reasoning);
  REQUIRE(r.tool_calls.size() == s.calls.size());
  for (size_t i = 0; i < s.calls.size(); ++i) {
    CHECK(r.tool_calls[i].name == s.calls[i].first);
    CHECK(r.tool_calls[i].arguments == s.calls[i].second);
  }
}

// What a client rebuilds from the deltas.
ChatReply add_up(const std::vector<ChatReplyDelta>& deltas) {
  ChatReply r;
  for (const ChatReplyDelta& d : deltas) {
    r.content += d.content;
    r.reasoning += d.reasoning;
    for (const ToolCallDelta& c : d.tool_calls) {
      if (c.index == r.tool_calls.size()) {
        CHECK_FALSE(c.name.empty());  // a call starts with its name and id
        CHECK_FALSE(c.id.empty());
        r.tool_calls.push_back({c.name, c.arguments, c.id});
      } else {
        REQUIRE(c.index < r.tool_calls.size());
        CHECK(c.name.empty());
        r.tool_calls[c.index].arguments += c.arguments;
      }
    }
  }
  return r;
}

void check_same(const ChatReply& a, const ChatReply& b) {
  CHECK(a.content == b.content);
  CHECK(a.reasoning == b.reasoning);
  REQUIRE(a.tool_calls.size() == b.tool_calls.size());
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    CHECK(a.tool_calls[i].name == b.tool_calls[i].name);
    CHECK(a.tool_calls[i].arguments == b.tool_calls[i].arguments);
    CHECK(a.tool_calls[i].id == b.tool_calls[i].id);
  }
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

TEST_CASE("tools: each format's replies split into content, reasoning and calls", "[tools]") {
  for (const Sample& s : samples()) {
    INFO(s.what);
    check_reply(s, parse_chat_reply(s.text, s.syntax));
  }
}

TEST_CASE("tools: ids are the model's when it gives them, else generated per index", "[tools]") {
  const ChatReply m = parse_chat_reply(samples()[22].text, kMistral);
  REQUIRE(m.tool_calls.size() == 1);
  CHECK(m.tool_calls[0].id == "123456789");
  const ChatReply two = parse_chat_reply(samples()[23].text, kMistral);
  REQUIRE(two.tool_calls.size() == 2);
  for (const ChatToolCall& c : two.tool_calls) {  // Mistral's templates want 9 alphanumerics
    CHECK(c.id.size() == 9);
    CHECK(c.id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == std::string::npos);
  }
  CHECK(two.tool_calls[0].id != two.tool_calls[1].id);
  const ChatReply h = parse_chat_reply(samples()[2].text, kHermes);
  REQUIRE(h.tool_calls.size() == 2);
  CHECK(h.tool_calls[0].id.substr(0, 5) == "call_");
  CHECK(h.tool_calls[0].id.size() == 29);
  CHECK(h.tool_calls[0].id != h.tool_calls[1].id);
  ChatSyntax other = kHermes;
  other.id_seed = 43;
  CHECK(parse_chat_reply(samples()[2].text, other).tool_calls[0].id != h.tool_calls[0].id);
}

TEST_CASE("tools: streamed deltas add up to the one-shot parse at every split", "[tools]") {
  for (const Sample& s : samples()) {
    if (!s.streams_as_parsed) continue;
    INFO(s.what);
    const std::string text = s.text;
    const ChatReply whole = parse_chat_reply(text, s.syntax);
    for (size_t cut = 0; cut <= text.size(); ++cut) {
      INFO("split at " << cut);
      ChatReplyStream stream(s.syntax);
      std::vector<ChatReplyDelta> deltas = {stream.feed(text.substr(0, cut)), stream.feed(text.substr(cut)),
                                            stream.finish()};
      check_same(add_up(deltas), whole);
    }
    // Byte by byte: every delta is whole UTF-8 and never shows a marker's first bytes.
    ChatReplyStream stream(s.syntax);
    std::vector<ChatReplyDelta> deltas;
    for (const char c : text) deltas.push_back(stream.feed(std::string(1, c)));
    deltas.push_back(stream.finish());
    for (const ChatReplyDelta& d : deltas) {
      CHECK(valid_utf8(d.content));
      for (const ToolCallDelta& c : d.tool_calls) CHECK(valid_utf8(c.arguments));
    }
    check_same(add_up(deltas), whole);
    check_same(stream.reply(), whole);
  }
}

TEST_CASE("tools: a call streams its name once, then its arguments as they come", "[tools]") {
  ChatReplyStream stream(kHermes);
  CHECK(stream.feed("Sure <tool").content == "Sure");  // "<tool" may be the marker
  CHECK(stream.feed("_call>{\"name\": \"get_").empty());
  ChatReplyDelta d = stream.feed("weather\", \"arguments\": {\"ci");
  REQUIRE(d.tool_calls.size() == 1);
  CHECK(d.tool_calls[0].index == 0);
  CHECK(d.tool_calls[0].name == "get_weather");
  CHECK(d.tool_calls[0].arguments == "{\"ci");
  d = stream.feed("ty\": \"Paris\"}}</tool_call>");
  REQUIRE(d.tool_calls.size() == 1);
  CHECK(d.tool_calls[0].name.empty());
  CHECK(d.tool_calls[0].arguments == "ty\": \"Paris\"}");
  CHECK(stream.finish().empty());
}

TEST_CASE("tools: a call left malformed after its name streamed cannot be taken back", "[tools]") {
  ChatReplyStream stream(kHermes);
  const ChatReplyDelta d = stream.feed("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1");
  REQUIRE(d.tool_calls.size() == 1);
  stream.finish();
  // The final reply (what a non-streaming answer would say) has it as content.
  CHECK(stream.reply().tool_calls.empty());
  CHECK(stream.reply().content == "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1");
}

TEST_CASE("tools: the format and reasoning come from the template", "[tools]") {
  struct Expect {
    const char* file;
    ToolCallFormat format;
    bool reasoning;
  };
  const Expect cases[] = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::Hermes, false},
      {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::Hermes, true},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::Hermes, false},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::Llama3, false},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::Llama3, false},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::Mistral, false},
      {"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", ToolCallFormat::Generic, false},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ToolCallFormat::Generic, true},
  };
  for (const Expect& e : cases) {
    INFO(e.file);
    const ChatSyntax s = chat_syntax_for(template_text(e.file), "");
    CHECK(s.format == e.format);
    CHECK(s.reasoning == e.reasoning);
  }
  CHECK(detect_tool_call_format("{{ '<|tool_call|>' }}") == ToolCallFormat::Phi4);
  // R1's generation prompt opens the think block; Qwen3's enable_thinking=false closes it.
  const std::string r1 = template_text("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja");
  CHECK(chat_syntax_for(r1, "<｜User｜>Hi<｜Assistant｜><think>\n").thinking_open);
  const std::string qwen3 = template_text("Qwen-Qwen3-0.6B.jinja");
  CHECK_FALSE(chat_syntax_for(qwen3, "<|im_start|>assistant\n<think>\n\n</think>\n\n").thinking_open);
  CHECK_FALSE(chat_syntax_for(qwen3, "<|im_start|>assistant\n").thinking_open);
}

}  // namespace runnel
