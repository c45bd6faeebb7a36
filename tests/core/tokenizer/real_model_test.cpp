// The default model's tokenizer (SmolLM2-135M-Instruct: gpt2 BPE, pre "smollm").
// The expected ids come from an independent reference: the regexes of HF's
// tokenizer.json for SmolLM2 (digits split one by one, then GPT-2's pattern) run by
// Python's `regex` module, and a plain "merge the lowest-ranked pair" BPE over
// the GGUF's own vocabulary and merges.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/core/tokenizer/tokenizer_test_util.h"
#include "tests/test_models.h"

namespace runnel {
namespace {

using Ids = std::vector<TokenId>;

const char* const kSmolLm2 = test::kSmolLm2Path;

TEST_CASE("SmolLM2 tokenizer", "[tokenizer][real]") {
  if (!std::filesystem::exists(kSmolLm2)) {
    WARN("skipped: " << kSmolLm2 << " is not on this machine");
    return;
  }
  const auto tok = tokenizer_test::load_tokenizer(kSmolLm2);
  CHECK(tok->model_name() == "gpt2");
  CHECK(tok->pre_name() == "smollm");
  CHECK(tok->n_vocab() == 49152);
  CHECK(tok->bos() == 1);
  CHECK(tok->eos() == 2);
  CHECK_FALSE(tok->add_bos());
  CHECK_FALSE(tok->add_eos());
  // End of generation: EOS, <|endoftext|> and (as llama.cpp's FIM list says) <reponame>.
  CHECK(tok->is_eog(2));
  CHECK(tok->is_eog(0));
  CHECK(tok->is_eog(4));
  CHECK_FALSE(tok->is_eog(1));

  const std::pair<const char*, Ids> cases[] = {
      {"Hello, world!", {19556, 28, 905, 17}},
      {"The year 2024 has 366 days.",
       {504, 713, 216, 34, 32, 34, 36, 553, 216, 35, 38, 38, 2009, 30}},
      {"  multiple   spaces\tand\ttabs\n\nnew paragraph",
       {216, 2701, 256, 5600, 197, 397, 197, 100, 7366, 198, 198, 2241, 8510}},
      {"I'm sure it's fine, isn't it? We'll see.",
       {57, 5248, 2090, 357, 506, 4979, 28, 3247, 982, 357, 47, 1046, 3060, 963, 30}},
      {"na\xC3\xAFve caf\xC3\xA9 \xF0\x9F\xA6\x99 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",
       {3546, 46494, 37366, 15107, 116, 243, 17097, 241, 115, 40993, 179, 120, 248}},
      {"def f(x):\n    return x**2 + 1\n",
       {1604, 275, 24, 104, 727, 472, 1003, 1792, 828, 34, 1232, 216, 33, 198}},
  };
  for (const auto& [text, ids] : cases) {
    INFO(text);
    CHECK(tok->encode(text, false, false) == ids);
    CHECK(tok->decode(ids, false) == text);  // smollm does not tidy spaces
  }
  const std::string chat = "<|im_start|>user\nHi there<|im_end|>\n";
  CHECK(tok->encode(chat, false, true) == Ids{1, 4093, 198, 26843, 665, 2, 198});
  CHECK(tok->decode({1, 4093, 198, 26843, 665, 2, 198}, true) == chat);
  CHECK(tok->decode({1, 4093, 198, 26843, 665, 2, 198}, false) == "user\nHi there\n");
}

}  // namespace
}  // namespace runnel
