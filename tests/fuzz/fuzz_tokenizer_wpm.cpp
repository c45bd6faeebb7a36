// The WordPiece tokenizer (tokenizer.ggml.model bert) on arbitrary text, with bert-bge
// from tests/data/tokenizer (it lower-cases and splits punctuation: no round trip).
// tokenizer_fuzz.h says what the input is and what is checked.
#include "tests/fuzz/tokenizer_fuzz.h"

namespace {

const runnel::fuzz::TokenizerCase& tokenizer_case() {
  using namespace runnel::fuzz;
  static const TokenizerCase kCase = [] {
    TokenizerCase c;
    c.vocabs.push_back({load_vocab("ggml-vocab-bert-bge.gguf"), RoundTrip::kNone});
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
