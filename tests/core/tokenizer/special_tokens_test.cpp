// Special tokens: splitting text at their texts, strip flags, end-of-generation.
#include <catch2/catch.hpp>

#include "core/tokenizer/special_partition.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/core/tokenizer/synthetic_vocab.h"

namespace runnel {
namespace {

using tokenizer_test::VocabBuilder;
using Ids = std::vector<TokenId>;

const std::string kSp = "\xE2\x96\x81";  // U+2581

VocabBuilder chat_vocab() {
  VocabBuilder v;
  v.add("<unk>", 2);
  v.add("<s>", 3);
  v.add("</s>", 3);
  v.add_spm_bytes();
  v.add(kSp, 1, -1.0);
  v.add("a", 1, -2.0);
  v.add("b", 1, -2.0);
  v.add(kSp + "a", 1, -1.5);
  v.add(kSp + "b", 1, -1.5);
  v.add("<|im_end|>", 3);  // control: end of turn, found by its text
  v.add("<|user|>", 4);    // user-defined: always split out
  v.add("<|user|>x", 4);   // longer, so tried first
  return v;
}

TEST_CASE("control tokens are parsed only when asked, user-defined ones always", "[tokenizer]") {
  const VocabBuilder v = chat_vocab();
  const auto tok = Tokenizer::from_metadata(v.metadata("llama"));
  auto id = [&](const std::string& t) { return v.id(t); };

  // As text, "<|im_end|>" is spelled in bytes ('<', '|', ...), not one id.
  const Ids plain = tok->encode("a<|im_end|>", false, false);
  CHECK(plain.size() > 3);
  CHECK(std::find(plain.begin(), plain.end(), id("<|im_end|>")) == plain.end());
  CHECK(tok->encode("a<|im_end|>", false, true) == Ids{id(kSp + "a"), id("<|im_end|>")});

  // User-defined tokens split the text even without parse_special; the text after a
  // special token gets SPM's space prefix again.
  const Ids expect = {id(kSp + "a"), id("<|user|>"), id(kSp + "b")};
  CHECK(tok->encode("a<|user|>b", false, false) == expect);
  CHECK(tok->encode("a<|user|>b", false, true) == expect);
  // Longest first: "<|user|>x" wins over "<|user|>".
  CHECK(tok->encode("<|user|>x", false, false) == Ids{id("<|user|>x")});
  // Back-to-back specials, and BOS before them.
  CHECK(tok->encode("<s><|im_end|>", true, true) == Ids{1, 1, id("<|im_end|>")});
}

TEST_CASE("end of generation and special ids", "[tokenizer]") {
  const VocabBuilder v = chat_vocab();
  const auto tok = Tokenizer::from_metadata(v.metadata("llama"));
  CHECK(tok->bos() == 1);
  CHECK(tok->eos() == 2);
  CHECK(tok->unk() == 0);
  CHECK(tok->eot() == v.id("<|im_end|>"));  // found by text
  CHECK(tok->is_eog(2));
  CHECK(tok->is_eog(v.id("<|im_end|>")));
  CHECK_FALSE(tok->is_eog(1));
  CHECK_FALSE(tok->is_eog(v.id("a")));
  CHECK_FALSE(tok->is_eog(-1));
  CHECK(tok->attr(v.id("<|user|>")) == TokenAttr::UserDefined);
  CHECK(tok->attr(v.id("<0x41>")) == TokenAttr::Byte);
}

TEST_CASE("a token that ends turns is made a control token even if typed otherwise",
          "[tokenizer]") {
  VocabBuilder v = chat_vocab();
  v.types[v.id("<|im_end|>")] = 1;  // converted as a normal token
  const auto tok = Tokenizer::from_metadata(v.metadata("llama"));
  CHECK(tok->attr(v.id("<|im_end|>")) == TokenAttr::Control);
  CHECK(tok->is_eog(v.id("<|im_end|>")));
  CHECK(tok->token_to_piece(v.id("<|im_end|>"), false).empty());
}

TEST_CASE("each family's end-of-turn token ends generation, found by its text", "[tokenizer]") {
  // Gemma, Phi-3, Qwen/ChatML, Llama 3: the token that closes a turn, typed however the
  // converter typed it, with the tokens that open turns for contrast.
  const std::pair<const char*, const char*> families[] = {
      {"<end_of_turn>", "<start_of_turn>"},
      {"<|end|>", "<|assistant|>"},
      {"<|im_end|>", "<|im_start|>"},
      {"<|eot_id|>", "<|start_header_id|>"},
  };
  for (const auto& [end, start] : families) {
    INFO(end);
    VocabBuilder v;
    v.add("<unk>", 2);
    v.add("<s>", 3);
    v.add("<eos>", 3);
    v.add_spm_bytes();
    v.add("a", 1, -2.0);
    const int start_id = v.add(start, 3);
    const int end_id = v.add(end, 4);  // user-defined in the file: made control
    GgufMetadata md = v.metadata("llama");
    md.set("tokenizer.ggml.eos_token_id", tokenizer_test::gguf_u32(2));
    const auto tok = Tokenizer::from_metadata(md);
    CHECK(tok->eot() == end_id);
    CHECK(tok->is_eog(end_id));
    CHECK(tok->is_eog(2));
    CHECK_FALSE(tok->is_eog(start_id));
    CHECK_FALSE(tok->is_eog(v.id("a")));
    CHECK(tok->attr(end_id) == TokenAttr::Control);
  }
}

TEST_CASE("phi-3 special tokens eat the whitespace after them", "[tokenizer]") {
  const VocabBuilder v = chat_vocab();
  GgufMetadata md = v.metadata("llama");
  md.set("general.name", tokenizer_test::gguf_string("Phi3"));
  const auto tok = Tokenizer::from_metadata(md);
  const Ids expect = {v.id("<|user|>"), v.id(kSp + "a")};
  CHECK(tok->encode("<|user|>   \n a", false, false) == expect);
  // Without the name, the spaces stay (and become U+2581 pieces).
  const auto plain = Tokenizer::from_metadata(v.metadata("llama"));
  CHECK(plain->encode("<|user|>   \n a", false, false).size() > 2);
}

TEST_CASE("partition_special_tokens cuts fragments as llama.cpp does", "[tokenizer]") {
  const std::vector<std::string> texts = {"<a>", "<b>", "xx"};
  const std::vector<uint16_t> bits = {kAttrControl, kAttrUserDefined | kAttrLstrip,
                                      kAttrUserDefined | kAttrRstrip};
  const std::vector<TokenId> order = {0, 1, 2};
  auto parts = [&](std::string_view text, bool parse_special) {
    std::vector<std::string> out;
    for (const Fragment& f : partition_special_tokens(text, order, texts, bits, parse_special)) {
      std::string s = "#";
      if (f.is_token) {
        s += std::to_string(f.token);
      } else {
        s = text.substr(f.offset, f.length);
      }
      out.push_back(s);
    }
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(parts("", true).empty());
  CHECK(parts("no specials", true) == V{"no specials"});
  CHECK(parts("1<a>2<a>", true) == V{"1", "#0", "2", "#0"});
  CHECK(parts("1<a>2", false) == V{"1<a>2"});           // control: only with parse_special
  CHECK(parts("1  <b>2", false) == V{"1", "#1", "2"});  // lstrip eats "  "
  CHECK(parts("  <b>", false) == V{"#1"});
  CHECK(parts("1xx \t 2", false) == V{"1", "#2", "2"});  // rstrip eats " \t "
  CHECK(parts("xxxx", false) == V{"#2", "#2"});
  CHECK(parts("<a>xx<b>", true) == V{"#0", "#2", "#1"});
}

}  // namespace
}  // namespace runnel
