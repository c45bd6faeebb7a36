// The byte-level BPE tokenizer (tokenizer.ggml.model gpt2) with each vocabulary's
// pre-tokenizer, on arbitrary text: gpt-2, falcon and deepseek-coder from tests/data/tokenizer.
// Falcon has no round-trip check: its pre-tokenizer drops some bytes (e.g. "\v" before
// NULs), in llama.cpp too, and runnel matches llama.cpp's tokens.
// tokenizer_fuzz.h says what the input is and what is checked.
#include "tests/fuzz/tokenizer_fuzz.h"

namespace {

const runnel::fuzz::TokenizerCase& tokenizer_case() {
  using namespace runnel::fuzz;
  static const TokenizerCase kCase = [] {
    TokenizerCase c;
    c.vocabs.push_back({load_vocab("ggml-vocab-gpt-2.gguf"), RoundTrip::kBytes});
    c.vocabs.push_back({load_vocab("ggml-vocab-falcon.gguf"), RoundTrip::kNone});
    c.vocabs.push_back({load_vocab("ggml-vocab-deepseek-coder.gguf"), RoundTrip::kBytes});
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
