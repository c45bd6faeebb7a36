// WordPiece on the bert-bge vocabulary: normalization and greedy matching.
#include "core/tokenizer/wpm.h"

#include <catch2/catch.hpp>

#include "tests/core/tokenizer/tokenizer_test_util.h"

namespace runnel {
namespace {

using Ids = std::vector<TokenId>;
using Words = std::vector<std::string>;

TEST_CASE("WPM normalizes like BERT: lowercase, no accents, punctuation apart", "[tokenizer]") {
  const WpmTokenizer tok(
      tokenizer_test::load_metadata(tokenizer_test::tokenizer_data("ggml-vocab-bert-bge.gguf")));
  CHECK(tok.pre_tokenize("H\xC3\xA9llo, WORLD!") == Words{"hello", ",", "world", "!"});
  // Decomposed accents go too; CJK ideographs are words of their own; controls vanish.
  CHECK(tok.pre_tokenize("Cafe\xCC\x81\t\xE4\xBD\xA0\xE5\xA5\xBD\x01x") ==
        Words{"cafe", "\xE4\xBD\xA0", "\xE5\xA5\xBD", "x"});
  CHECK(tok.pre_tokenize("a$b") == Words{"a", "$", "b"});  // ASCII symbols split
  CHECK(tok.pre_tokenize("a\xE2\x82\xAC"
                         "b") == Words{"a\xE2\x82\xAC"
                                       "b"});  // € does not
  CHECK(tok.pre_tokenize("   ").empty());
}

TEST_CASE("WPM encodes words greedily and adds [CLS] / [SEP]", "[tokenizer]") {
  const auto tok =
      tokenizer_test::load_tokenizer(tokenizer_test::tokenizer_data("ggml-vocab-bert-bge.gguf"));
  CHECK(tok->model_name() == "bert");
  CHECK(tok->bos() == 101);
  CHECK(tok->sep() == 102);
  CHECK(tok->unk() == 100);
  // From the llama.cpp vectors: "Hello world" -> 7592 2088.
  CHECK(tok->encode("Hello world", false, false) == Ids{7592, 2088});
  CHECK(tok->encode("Hello world", true, false) == Ids{101, 7592, 2088, 102});
  // A word with a character no piece covers is one [UNK].
  CHECK(tok->encode("\xF0\x9F\xA6\x99 ok", false, false) == Ids{100, 7929});
  // Special tokens only as text unless parsed.
  CHECK(tok->encode("[SEP]", false, true) == Ids{102});
  CHECK(tok->encode("[SEP]", false, false) == Ids{1031, 19802, 1033});  // "[", "sep", "]"
  // Word-initial pieces carry U+2581, which decodes to a space (as in llama.cpp).
  CHECK(tok->decode({7592, 2088}, false) == " hello world");
}

}  // namespace
}  // namespace runnel
