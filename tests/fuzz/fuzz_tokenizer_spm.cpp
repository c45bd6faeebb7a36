// The SentencePiece tokenizer (tokenizer.ggml.model llama) on arbitrary text, with
// every SPM vocabulary in tests/data/tokenizer (llama, phi-3).
// tokenizer_fuzz.h says what the input is and what is checked.
#include "tests/fuzz/tokenizer_fuzz.h"

namespace {

const runnel::fuzz::TokenizerCase& tokenizer_case() {
  using namespace runnel::fuzz;
  static const TokenizerCase kCase = [] {
    TokenizerCase c;
    c.vocabs.push_back({load_vocab("ggml-vocab-llama-spm.gguf"), RoundTrip::kSpmSpacePrefix});
    c.vocabs.push_back({load_vocab("ggml-vocab-phi-3.gguf"), RoundTrip::kSpmSpacePrefix});
    return c;
  }();
  return kCase;
}

}  // namespace

// Loads the vocabularies before the first input, so that -timeout=1 times inputs only.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tokenizer_case();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runnel::fuzz::fuzz_tokenizer(tokenizer_case(), data, size);
  return 0;
}
