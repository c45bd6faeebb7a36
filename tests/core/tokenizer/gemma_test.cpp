// Gemma 3 270M's tokenizer (SPM over 262144 tokens, tokenizer.ggml.add_space_prefix
// false, byte fallback, user-defined tokens for runs of whitespace) and its end of
// generation. The expected ids and the EOG set are llama.cpp's on the same file
// (node-llama-cpp 3.22.1's tokenize() and isEogToken()); tests/parity/
// gemma_tokenize.test.mjs compares many more inputs live.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/core/tokenizer/tokenizer_test_util.h"

namespace runnel {
namespace {

using Ids = std::vector<TokenId>;

const char* const kGemma3 = RUNNEL_TEST_DATA "/../../models/gemma-3-270m-q4_k_m.gguf";

TEST_CASE("Gemma 3 tokenizer", "[tokenizer][real]") {
  if (!std::filesystem::exists(kGemma3)) {
    WARN("skipped: " << kGemma3 << " is not on this machine");
    return;
  }
  const auto tok = tokenizer_test::load_tokenizer(kGemma3);
  CHECK(tok->model_name() == "llama");
  CHECK(tok->n_vocab() == 262144);
  CHECK(tok->bos() == 2);
  CHECK(tok->eos() == 1);
  CHECK(tok->add_bos());
  CHECK_FALSE(tok->add_eos());

  const std::pair<const char*, Ids> cases[] = {
      {"Hello world", {9259, 1902}},
      // No space prefix: a leading space is a piece of its own; "  " is one token.
      {" Hello  world", {26352, 138, 12392}},
      {"a\n\nb\n\n\nc", {236746, 108, 236763, 109, 236755}},
      {"x     y\t\tz", {236781, 141, 236762, 255969, 236802}},
      // U+1D518 and U+0001 are not in the vocabulary: their UTF-8 bytes are byte tokens.
      {"caf\xC3\xA9 \xF0\x9D\x94\x98\x01", {123125, 236859, 236743, 478, 395, 386, 390, 249732}},
      {"def f(x):\n    return x**2\n",
       {2063, 517, 236769, 236781, 1473, 107, 140, 2060, 1123, 1018, 236778, 107}},
      // Chat markup without parse_special is text.
      {"<start_of_turn>user\nHi<end_of_turn>\n",
       {236820, 3041, 236779, 1340, 236779, 887, 236813, 2364, 107, 10979, 236820, 643, 236779,
        1340, 236779, 887, 236813, 107}},
  };
  for (const auto& [text, ids] : cases) {
    INFO(text);
    CHECK(tok->encode(text, false, false) == ids);
    CHECK(tok->decode(ids, false) == text);
  }
  CHECK(tok->encode("Hello world", true, false) == Ids{2, 9259, 1902});
  CHECK(tok->encode("<start_of_turn>user\nHi<end_of_turn>\n", false, true) ==
        Ids{105, 2364, 107, 10979, 106, 107});
}

TEST_CASE("Gemma 3 ends generation at <end_of_turn>, as llama.cpp does", "[tokenizer][real]") {
  if (!std::filesystem::exists(kGemma3)) {
    WARN("skipped: " << kGemma3 << " is not on this machine");
    return;
  }
  const auto tok = tokenizer_test::load_tokenizer(kGemma3);
  const auto id = [&](const char* text) {
    const std::vector<TokenId> ids = tok->encode(text, false, true);
    REQUIRE(ids.size() == 1);
    return ids[0];
  };
  REQUIRE(id("<end_of_turn>") == 106);
  REQUIRE(id("<start_of_turn>") == 105);
  // The file names no EOT token: it is found by its text.
  CHECK(tok->eot() == 106);
  // llama.cpp's EOG set for this file is exactly {<eos>, <end_of_turn>, </s>}.
  std::vector<TokenId> eog;
  for (TokenId t = 0; t < tok->n_vocab(); ++t) {
    if (tok->is_eog(t)) eog.push_back(t);
  }
  CHECK(eog == std::vector<TokenId>{1, 106, 212});
  CHECK(tok->token_text(212) == "</s>");
  CHECK(tok->attr(106) == TokenAttr::Control);
  CHECK(tok->token_to_piece(106, false).empty());  // never printed as text
  CHECK(tok->token_to_piece(106, true) == "<end_of_turn>");
}

}  // namespace
}  // namespace runnel
