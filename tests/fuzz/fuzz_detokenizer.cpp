// Token ids back to text: Tokenizer::decode and the StreamingDetokenizer, on arbitrary
// id sequences over one vocabulary of each kind (SPM, BPE, WPM). Input: byte 0 picks
// the vocabulary and `special`; then 3 bytes per id (mod the vocabulary size, so every
// id is valid: an invalid id is refused by token_to_piece, tested in detokenizer_test).
// Checked: every streamed chunk is well-formed UTF-8, and the chunks together are the
// sanitized bytes of all the pieces (streaming prints what one decode would).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

[[noreturn]] void fail(const runnel::Tokenizer& tok, const char* what) {
  std::fprintf(stderr, "detokenizer (%s): %s\n", std::string(tok.model_name()).c_str(), what);
  std::abort();
}

const std::vector<std::unique_ptr<runnel::Tokenizer>>& vocabs() {
  static const std::vector<std::unique_ptr<runnel::Tokenizer>> kVocabs = [] {
    std::vector<std::unique_ptr<runnel::Tokenizer>> v;
    for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-bert-bge.gguf"}) {
      v.push_back(runnel::fuzz::load_vocab(name));
    }
    return v;
  }();
  return kVocabs;
}

}  // namespace

// Loads what the inputs need before the first one, so that -timeout=1 times inputs only.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)vocabs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace runnel;
  if (size == 0) return 0;
  const Tokenizer& tok = *vocabs()[data[0] % vocabs().size()];
  const bool special = (data[0] & 0x80) != 0;
  std::vector<TokenId> ids;
  for (size_t i = 1; i + 3 <= size; i += 3) {
    const uint32_t v = data[i] | (uint32_t{data[i + 1]} << 8) | (uint32_t{data[i + 2]} << 16);
    ids.push_back(static_cast<TokenId>(v % static_cast<uint32_t>(tok.n_vocab())));
  }
  (void)tok.decode(ids, special);

  StreamingDetokenizer stream(tok, special);
  std::string streamed, pieces;
  for (TokenId id : ids) {
    const std::string chunk = stream.push(id);
    if (utf8_sanitize(chunk) != chunk) fail(tok, "push() returned ill-formed UTF-8");
    streamed += chunk;
    pieces += tok.token_to_piece(id, special);
  }
  const std::string rest = stream.flush();
  if (utf8_sanitize(rest) != rest) fail(tok, "flush() returned ill-formed UTF-8");
  streamed += rest;
  if (streamed != utf8_sanitize(pieces)) fail(tok, "the streamed text differs from the sanitized pieces");
  return 0;
}
