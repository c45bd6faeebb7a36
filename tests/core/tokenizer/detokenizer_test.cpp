// token_to_piece, decode and the streaming detokenizer.
#include <catch2/catch.hpp>

#include "core/tokenizer/tokenizer.h"
#include "tests/core/tokenizer/synthetic_vocab.h"
#include "tests/core/tokenizer/tokenizer_test_util.h"

namespace runnel {
namespace {

using tokenizer_test::VocabBuilder;
using Ids = std::vector<TokenId>;

const std::string kSp = "\xE2\x96\x81";  // U+2581

VocabBuilder spm_vocab() {
  VocabBuilder v;
  v.add("<unk>", 2);
  v.add("<s>", 3);
  v.add("</s>", 3);
  v.add_spm_bytes();
  v.add(kSp, 1, -1.0);
  // SPM only merges into tokens, so each word needs its chain of prefixes.
  for (std::string word : {"hello", "world"}) {
    for (size_t n = 1; n <= word.size(); ++n) v.add(kSp + word.substr(0, n), 1, -1.0);
  }
  v.add("<|tool|>", 4);
  return v;
}

TEST_CASE("SPM pieces and decode", "[tokenizer]") {
  const VocabBuilder v = spm_vocab();
  const auto tok = Tokenizer::from_metadata(v.metadata("llama"));
  CHECK(tok->token_to_piece(v.id(kSp + "hello"), false) == " hello");
  CHECK(tok->token_to_piece(v.id("<0x41>"), false) == "A");
  CHECK(tok->token_to_piece(v.id("<0x0A>"), false) == "\n");
  CHECK(tok->token_to_piece(1, false).empty());  // control hidden...
  CHECK(tok->token_to_piece(1, true) == "<s>");  // ...unless asked for
  CHECK(tok->token_to_piece(0, false).empty());  // unknown behaves like control
  CHECK(tok->token_to_piece(v.id("<|tool|>"), false) == "<|tool|>");  // user-defined shown
  CHECK_THROWS_AS(tok->token_to_piece(tok->n_vocab(), false), std::out_of_range);

  // decode removes the space SPM added in front of the first word.
  const Ids ids = tok->encode("hello world\xC3\xA9", false, false);
  CHECK(ids == Ids{v.id(kSp + "hello"), v.id(kSp + "world"), v.id("<0xC3>"), v.id("<0xA9>")});
  CHECK(tok->decode(ids, false) == "hello world\xC3\xA9");
  // As llama.cpp: the first token consumes the strip, even a hidden BOS.
  CHECK(tok->decode({1, v.id(kSp + "hello")}, false) == " hello");
  CHECK(tok->decode({1, v.id(kSp + "hello")}, true) == "<s> hello");
}

TEST_CASE("BPE pieces undo the byte alphabet; decode tidies spaces", "[tokenizer]") {
  VocabBuilder v;
  v.add_gpt2_bytes();
  v.add(
      "\xC4\xA0"
      "world");  // "Ġworld"
  v.add("<|endoftext|>", 3);
  GgufMetadata md = v.metadata("gpt2");
  md.set("tokenizer.ggml.merges", tokenizer_test::gguf_strings({}));
  md.set("tokenizer.ggml.pre", tokenizer_test::gguf_string("gpt-2"));
  const auto tok = Tokenizer::from_metadata(md);
  CHECK(tok->token_to_piece(v.id("\xC4\xA0"
                                 "world"),
                            false) == " world");
  CHECK(tok->token_to_piece(v.id("\xC4\x8A"), false) == "\n");    // Ċ
  CHECK(tok->token_to_piece(v.id("\xC3\x83"), false) == "\xC3");  // Ã: one raw byte
  CHECK(tok->token_to_piece(v.id("<|endoftext|>"), false).empty());

  const std::string text = "a , b 's c ' d?";
  const Ids ids = tok->encode(text, false, false);
  // Without merges every byte is its own token, and pieces concatenate back...
  std::string joined;
  for (TokenId id : ids) joined += tok->token_to_piece(id, false);
  CHECK(joined == text);
  // ...while decode applies llama.cpp's clean-up for gpt-2 vocabularies.
  // " ," loses its space, " ' " becomes "'", " 's" loses its space.
  CHECK(tok->decode(ids, false) == "a, b's c'd?");
}

TEST_CASE("streaming never splits a UTF-8 character", "[tokenizer]") {
  const VocabBuilder v = spm_vocab();
  const auto tok = Tokenizer::from_metadata(v.metadata("llama"));
  StreamingDetokenizer stream(*tok);
  auto byte = [&](int b) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    return v.id(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
  };
  CHECK(stream.push(v.id(kSp + "hello")) == " hello");
  CHECK(stream.push(byte(0xC3)).empty());
  CHECK(stream.push(byte(0xA9)) == "\xC3\xA9");  // é
  CHECK(stream.push(byte(0xF0)).empty());
  CHECK(stream.push(byte(0x9F)).empty());
  CHECK(stream.push(byte(0xA6)).empty());
  CHECK(stream.push(byte(0x99)) == "\xF0\x9F\xA6\x99");  // 🦙
  // A byte that can never start a character comes out at once, as U+FFFD.
  CHECK(stream.push(byte(0x80)) == "\xEF\xBF\xBD");
  // A lead byte followed by a non-continuation: the lead is replaced, the rest kept.
  CHECK(stream.push(byte(0xE2)).empty());
  CHECK(stream.push(byte('A')) ==
        "\xEF\xBF\xBD"
        "A");
  // An unfinished character at the end: flush gives U+FFFD for its bytes.
  CHECK(stream.push(byte(0xE2)).empty());
  CHECK(stream.push(byte(0x82)).empty());
  CHECK(stream.flush() == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(stream.flush().empty());
  // Special tokens only when the stream asks for them.
  CHECK(stream.push(1).empty());
  StreamingDetokenizer special(*tok, true);
  CHECK(special.push(1) == "<s>");
}

TEST_CASE("streaming a real vocabulary's byte tokens", "[tokenizer]") {
  // GPT-2 splits "🦙" into byte tokens; printing them one by one must wait.
  const auto tok =
      tokenizer_test::load_tokenizer(tokenizer_test::tokenizer_data("ggml-vocab-gpt-2.gguf"));
  const Ids ids = tok->encode(" this is \xF0\x9F\xA6\x99.cpp", false, false);
  REQUIRE(ids == Ids{428, 318, 12520, 99, 247, 13, 20322});
  StreamingDetokenizer stream(*tok);
  std::string out;
  std::vector<std::string> chunks;
  for (TokenId id : ids) {
    chunks.push_back(stream.push(id));
    out += chunks.back();
  }
  out += stream.flush();
  CHECK(out == " this is \xF0\x9F\xA6\x99.cpp");
  CHECK(chunks[2] == " ");  // the space; the emoji's first bytes wait
  CHECK(chunks[3].empty());
  CHECK(chunks[4] == "\xF0\x9F\xA6\x99");
  CHECK(tok->decode(ids, false) == " this is \xF0\x9F\xA6\x99.cpp");
}

}  // namespace
}  // namespace runnel
