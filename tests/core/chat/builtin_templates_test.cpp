// Built-in chat templates: which one a GGUF without `tokenizer.chat_template` gets,
// what each renders for a system + user + assistant + user conversation (the expected
// strings are what the families' official templates give under Python's jinja2 with
// HF's settings), that they render exactly as the official Gemma 3 and Phi-3.5
// templates do through our engine, and Qwen3's enable_thinking.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/chat/builtin_templates.h"
#include "core/chat/chat_template.h"
#include "core/gguf/gguf.h"
#include "core/tokenizer/tokenizer.h"

namespace runnel {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

GgufValue gguf_string(std::string s) {
  GgufValue v;
  v.type = GgufType::STRING;
  v.value = std::move(s);
  return v;
}

GgufMetadata arch_metadata(const std::string& arch) {
  GgufMetadata md;
  if (!arch.empty()) md.set("general.architecture", gguf_string(arch));
  return md;
}

// The template a file of this architecture without a template gets.
ChatTemplate builtin_for(const std::string& arch) {
  return ChatTemplate::parse(choose_chat_template(arch_metadata(arch)).source, "<bos>", "<eos>");
}

const std::vector<ChatMessage> kFull = {{"system", "You are a helpful assistant."},
                                        {"user", "Hello!"},
                                        {"assistant", "Hi there, how can I help?"},
                                        {"user", "What is 2+2?"}};

const char* const kGemmaFull =
    "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n"
    "<start_of_turn>model\nHi there, how can I help?<end_of_turn>\n"
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n";
const char* const kPhi3Full =
    "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHello!<|end|>\n"
    "<|assistant|>\nHi there, how can I help?<|end|>\n<|user|>\nWhat is 2+2?<|end|>\n"
    "<|assistant|>\n";
const char* const kChatMlFull =
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nHello!<|im_end|>\n"
    "<|im_start|>assistant\nHi there, how can I help?<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
    "<|im_start|>assistant\n";

}  // namespace

TEST_CASE("chat: a file without a template gets its architecture's built-in", "[chat]") {
  const std::pair<const char*, const char*> kArchs[] = {
      {"gemma", "gemma"}, {"gemma2", "gemma"}, {"gemma3", "gemma"}, {"phi3", "phi3"},
      {"qwen3", "qwen3"}, {"qwen2", "chatml"}, {"llama", "chatml"}, {"", "chatml"},
  };
  for (const auto& [arch, name] : kArchs) {
    INFO(arch);
    const ChatTemplateChoice c = choose_chat_template(arch_metadata(arch));
    CHECK(c.builtin == name);
    CHECK(c.source == builtin_chat_template(name).source);
    CHECK(c.description() == std::string("built-in ") + name + " (the file has none)");
  }
  CHECK(std::string(builtin_chat_template("chatml").source) == kChatMlTemplate);
  CHECK(builtin_chat_template("no-such-family").source.empty());

  // The file's own template wins; an empty one counts as none.
  GgufMetadata md = arch_metadata("gemma3");
  md.set("tokenizer.chat_template", gguf_string("{{ messages[0].content }}"));
  const ChatTemplateChoice own = choose_chat_template(md);
  CHECK(own.builtin.empty());
  CHECK(own.source == "{{ messages[0].content }}");
  CHECK(own.description() == "from the file (tokenizer.chat_template)");
  md.set("tokenizer.chat_template", gguf_string(""));
  CHECK(choose_chat_template(md).builtin == "gemma");
}

TEST_CASE("chat: each built-in renders its family's format", "[chat]") {
  for (const char* arch : {"gemma", "gemma2", "gemma3"}) {
    INFO(arch);
    CHECK(builtin_for(arch).apply(kFull, true) == kGemmaFull);
  }
  CHECK(builtin_for("gemma3").apply({{"user", "  Hi  "}}, true) ==
        "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
  CHECK(builtin_for("phi3").apply(kFull, true) == kPhi3Full);
  CHECK(builtin_for("phi3").apply({{"user", "Hi"}}, false) == "<|user|>\nHi<|end|>\n<eos>");
  CHECK(builtin_for("qwen2").apply(kFull, true) == kChatMlFull);
  CHECK(builtin_for("llama").apply(kFull, true) == kChatMlFull);
  CHECK(builtin_for("qwen3").apply(kFull, true) == kChatMlFull);
}

TEST_CASE("chat: Gemma's built-in refuses roles that do not alternate, as Gemma's does",
          "[chat]") {
  REQUIRE_THROWS_WITH(builtin_for("gemma3").apply({{"user", "a"}, {"user", "b"}}, true),
                      "Conversation roles must alternate user/assistant/user/assistant/...");
  REQUIRE_THROWS_WITH(builtin_for("gemma3").apply({{"system", "s"}, {"assistant", "a"}}, true),
                      "Conversation roles must alternate user/assistant/user/assistant/...");
}

TEST_CASE("chat: Qwen3's built-in: enable_thinking and earlier reasoning", "[chat]") {
  const ChatTemplate t = builtin_for("qwen3");
  ChatOptions off, on;
  off.enable_thinking = false;
  on.enable_thinking = true;
  // Thinking off: the reply opens with an empty think block. On or unset: nothing added.
  CHECK(t.apply(kFull, true, off) == std::string(kChatMlFull) + "<think>\n\n</think>\n\n");
  CHECK(t.apply(kFull, true, on) == kChatMlFull);
  const std::string no_reply(kChatMlFull, std::string(kChatMlFull).size() - 22);  // no opening
  CHECK(t.apply(kFull, false, off) == no_reply);
  // Reasoning in answers before the last user query is dropped; the answer after it
  // keeps its think block.
  const std::vector<ChatMessage> reasoning = {{"user", "What is 2+2?"},
                                              {"assistant", "<think>\nAdd them.\n</think>\n\n4"},
                                              {"user", "And 3+3?"},
                                              {"assistant", "<think>\nAgain.\n</think>\n\n6"}};
  CHECK(t.apply(reasoning, false) ==
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
        "<|im_start|>user\nAnd 3+3?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nAgain.\n</think>\n\n6<|im_end|>\n");
  CHECK(t.apply({reasoning.begin(), reasoning.begin() + 3}, true) ==
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
        "<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n");
  // Tool results become one user turn.
  CHECK(t.apply({{"user", "q"}, {"assistant", "call"}, {"tool", "r1"}, {"tool", "r2"}}, false) ==
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\ncall<|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n"
        "<tool_response>\nr2\n</tool_response><|im_end|>\n");
}

TEST_CASE("chat: the Gemma and Phi-3 built-ins render as the official templates do", "[chat]") {
  const std::string data = std::string(RUNNEL_TEST_DATA) + "/templates/";
  const std::pair<const char*, const char*> kPairs[] = {
      {"gemma3", "google-gemma-3-270m-it.jinja"},
      {"phi3", "microsoft-Phi-3.5-mini-instruct.jinja"},
  };
  const std::vector<std::vector<ChatMessage>> conversations = {
      kFull,
      {{"user", "  Hi  "}},
      {{"system", "  S  "}, {"user", "\nU\n"}},
      {{"system", ""}, {"user", "x"}},
      {{"system", "only"}},
      {{"user", "a"}, {"assistant", " b "}, {"user", "c"}, {"assistant", "d"}},
      {{"user", "a"}, {"user", "b"}},
      {{"assistant", "first"}},
  };
  for (const auto& [arch, file] : kPairs) {
    const ChatTemplate builtin = builtin_for(arch);
    const ChatTemplate official = ChatTemplate::parse(read_text(data + file), "<bos>", "<eos>");
    for (size_t i = 0; i < conversations.size(); ++i) {
      for (const bool add_generation_prompt : {true, false}) {
        INFO(arch << " conversation " << i << " add_generation_prompt " << add_generation_prompt);
        const auto render = [&](const ChatTemplate& t) {
          try {
            return t.apply(conversations[i], add_generation_prompt);
          } catch (const ChatTemplateError& e) {
            return std::string("error: ") + e.what();
          }
        };
        CHECK(render(builtin) == render(official));
      }
    }
  }
}

TEST_CASE("chat: the Gemma 3 270M file gets the built-in Gemma template", "[chat][real]") {
  const std::string path = std::string(RUNNEL_TEST_DATA) + "/../../models/gemma-3-270m-q4_k_m.gguf";
  if (!std::filesystem::exists(path)) {
    WARN("skipped: " << path << " is not on this machine");
    return;
  }
  // The metadata is in the first few MiB; the tensors are not needed.
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> head(16u << 20);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const uint64_t file_size = std::filesystem::file_size(path);
  const GgufFile file = GgufFile::parse(head, file_size, path);
  const auto tok = Tokenizer::from_metadata(file.metadata());
  const ChatTemplate t = ChatTemplate::from_model(file.metadata(), *tok);
  CHECK(t.builtin_name() == "gemma");
  CHECK(t.bos_token() == "<bos>");
  const std::string text = t.apply(kFull, true);
  CHECK(text == kGemmaFull);
  // What llama.cpp makes of the same text (tokenize(text, true)): <bos> once, each turn
  // marker one control token.
  CHECK(tok->encode(text, false, true) ==
        std::vector<TokenId>{2,      105,    2364,   107,    3048,   659,   496,   11045,  16326,
                             236761, 108,    9259,   236888, 106,    107,   105,   4368,   107,
                             10979,  993,    236764, 1217,   740,    564,   1601,  236881, 106,
                             107,    105,    2364,   107,    3689,   563,   236743, 236778, 236862,
                             236778, 236881, 106,    107,    105,    4368,  107});
}

}  // namespace runnel
