// SPM and BPE merge order, byte fallback and metadata errors on hand-made
// vocabularies, where each expected id list follows from the scores / ranks.
#include <catch2/catch.hpp>

#include "core/tokenizer/tokenizer.h"
#include "tests/core/tokenizer/synthetic_vocab.h"

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
  v.add("a", 1, -2.0);
  v.add("b", 1, -2.0);
  v.add("c", 1, -2.0);
  v.add(kSp + "a", 1, -3.0);
  v.add("ab", 1, -1.0);
  v.add("aa", 1, -1.5);
  v.add("abc", 1, -0.5);
  return v;
}

TEST_CASE("SPM merges the best-scoring pair first, leftmost on ties", "[tokenizer]") {
  const VocabBuilder v = spm_vocab();
  const auto tok = Tokenizer::from_metadata(v.metadata("llama"));
  REQUIRE(tok->model_name() == "llama");
  auto id = [&](const std::string& t) { return v.id(t); };
  // "▁ab": "ab" (-1) beats "▁a" (-3); "▁ab" is no token.
  CHECK(tok->encode("ab", false, false) == Ids{id(kSp), id("ab")});
  // "▁aaa": the two "aa" pairs tie; the left one merges, the right one is then stale.
  CHECK(tok->encode("aaa", false, false) == Ids{id(kSp), id("aa"), id("a")});
  // "abc" is reachable only through "ab" + "c".
  CHECK(tok->encode("abc", false, false) == Ids{id(kSp), id("abc")});
  // Spaces become U+2581; only the first word gets the added one.
  CHECK(tok->encode("a b", false, false) == Ids{id(kSp + "a"), id(kSp), id("b")});
  // Characters outside the vocabulary are spelled with byte tokens.
  CHECK(tok->encode("\xC3\xA9", false, false) == Ids{id(kSp), id("<0xC3>"), id("<0xA9>")});
  CHECK(tok->encode("", false, false).empty());
  // BOS by default for SPM, no EOS.
  CHECK(tok->add_bos());
  CHECK_FALSE(tok->add_eos());
  CHECK(tok->encode("ab", true, false) == Ids{1, id(kSp), id("ab")});
  CHECK(tok->encode("", true, false) == Ids{1});
}

TEST_CASE("SPM metadata switches: space prefix and EOS", "[tokenizer]") {
  VocabBuilder v = spm_vocab();
  GgufMetadata md = v.metadata("llama");
  md.set("tokenizer.ggml.add_space_prefix", tokenizer_test::gguf_bool(false));
  md.set("tokenizer.ggml.add_eos_token", tokenizer_test::gguf_bool(true));
  const auto tok = Tokenizer::from_metadata(md);
  CHECK(tok->encode("ab", false, false) == Ids{v.id("ab")});
  CHECK(tok->encode("ab", true, false) == Ids{1, v.id("ab"), 2});
}

// A byte-level vocabulary: the 256 alphabet characters, then merged tokens.
VocabBuilder bpe_vocab() {
  VocabBuilder v;
  v.add_gpt2_bytes();
  v.add(
      "\xC4\xA0"
      "a");  // "Ġa"
  v.add("ab");
  v.add(
      "\xC4\xA0"
      "ab");  // "Ġab"
  v.add("xyz");
  v.add("<|endoftext|>", 3);
  return v;
}

GgufMetadata bpe_metadata(const VocabBuilder& v, std::vector<std::string> merges,
                          const std::string& pre = "gpt-2") {
  GgufMetadata md = v.metadata("gpt2");
  md.set("tokenizer.ggml.merges", tokenizer_test::gguf_strings(std::move(merges)));
  md.set("tokenizer.ggml.pre", tokenizer_test::gguf_string(pre));
  md.set("tokenizer.ggml.bos_token_id", tokenizer_test::gguf_u32(v.id("<|endoftext|>")));
  md.set("tokenizer.ggml.eos_token_id", tokenizer_test::gguf_u32(v.id("<|endoftext|>")));
  return md;
}

TEST_CASE("BPE merges by rank", "[tokenizer]") {
  const VocabBuilder v = bpe_vocab();
  const std::string g = "\xC4\xA0";  // Ġ, the space
  {
    // "Ġ a" outranks "a b": Ġ+a, then Ġa+b.
    const auto tok = Tokenizer::from_metadata(bpe_metadata(v, {g + " a", "a b", g + "a b"}));
    CHECK(tok->encode(" ab", false, false) == Ids{v.id(g + "ab")});
    CHECK(tok->encode("ab ab", false, false) == Ids{v.id("ab"), v.id(g + "ab")});
    CHECK_FALSE(tok->add_bos());
    CHECK(tok->encode("ab", true, false) == Ids{v.id("ab")});
  }
  {
    // "a b" first: Ġ is left alone, as no merge joins Ġ and ab.
    const auto tok = Tokenizer::from_metadata(bpe_metadata(v, {"a b", g + " a", g + "a b"}));
    CHECK(tok->encode(" ab", false, false) == Ids{v.id(g), v.id("ab")});
  }
}

TEST_CASE("BPE: a word that is a token skips the merges for llama3-style vocabularies",
          "[tokenizer]") {
  const VocabBuilder v = bpe_vocab();
  const auto gpt2 = Tokenizer::from_metadata(bpe_metadata(v, {"a b"}, "gpt-2"));
  CHECK(gpt2->encode("xyz", false, false) == Ids{v.id("x"), v.id("y"), v.id("z")});
  const auto llama3 = Tokenizer::from_metadata(bpe_metadata(v, {"a b"}, "llama-bpe"));
  CHECK(llama3->encode("xyz", false, false) == Ids{v.id("xyz")});
  // llama3 vocabularies add BOS by default.
  CHECK(llama3->add_bos());
  CHECK(llama3->encode("xyz", true, false) == Ids{v.id("<|endoftext|>"), v.id("xyz")});
}

TEST_CASE("from_metadata refuses what it cannot tokenize, naming it", "[tokenizer]") {
  const VocabBuilder v = bpe_vocab();
  auto error_of = [](const GgufMetadata& md) -> std::string {
    try {
      Tokenizer::from_metadata(md);
    } catch (const GgufError& e) {
      return e.what();
    }
    return "no error";
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(error_of(bpe_metadata(v, {}, "xyz")), Contains("unknown pre-tokenizer 'xyz'"));
  CHECK_THAT(error_of(v.metadata("t5")), Contains("'t5'"));
  CHECK_THAT(error_of(GgufMetadata{}), Contains("tokenizer.ggml.model"));
  CHECK_THAT(error_of(v.metadata("gpt2")), Contains("tokenizer.ggml.merges"));

  GgufMetadata no_tokens;
  no_tokens.set("tokenizer.ggml.model", tokenizer_test::gguf_string("llama"));
  CHECK_THAT(error_of(no_tokens), Contains("tokenizer.ggml.tokens"));

  VocabBuilder dup = spm_vocab();
  dup.add("ab");
  CHECK_THAT(error_of(dup.metadata("llama")), Contains("duplicate token"));

  GgufMetadata short_scores = spm_vocab().metadata("llama");
  short_scores.set("tokenizer.ggml.scores", tokenizer_test::gguf_f32s({0.0, 1.0}));
  CHECK_THAT(error_of(short_scores), Contains("tokenizer.ggml.scores has 2 entries"));

  // chatglm has no BOS unless the metadata names one; asking to add it fails.
  GgufMetadata glm = v.metadata("gpt2");
  glm.set("tokenizer.ggml.merges", tokenizer_test::gguf_strings({"a b"}));
  glm.set("tokenizer.ggml.pre", tokenizer_test::gguf_string("chatglm-bpe"));
  glm.set("tokenizer.ggml.add_bos_token", tokenizer_test::gguf_bool(true));
  CHECK_THAT(error_of(glm), Contains("tokenizer.ggml.add_bos_token is true"));

  // A missing pre-tokenizer means "default".
  GgufMetadata no_pre = v.metadata("gpt2");
  no_pre.set("tokenizer.ggml.merges", tokenizer_test::gguf_strings({"a b"}));
  CHECK(Tokenizer::from_metadata(no_pre)->pre_name() == "");
  CHECK(Tokenizer::from_metadata(no_pre)->encode("ab", false, false) == Ids{v.id("ab")});
}

}  // namespace
}  // namespace runnel
