// GBNF grammars from clients (llama-server's `grammar` field, `--grammar-file`):
// Grammar::parse with a vocabulary (so <token> references resolve), then a short walk
// of the matcher (grammar_walk.h). Input: the grammar text. The expected failure is
// GrammarError; anything else escaping, a sanitizer report, a timeout or an OOM is a finding.
#include <memory>
#include <string_view>

#include "core/sampling/grammar.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/grammar_walk.h"
#include "tests/fuzz/tiny_engine.h"

// Loads what the inputs need before the first one, so that -timeout=1 times inputs only.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)runnel::fuzz::shared_tiny_engine().grammar_vocab();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace runnel;
  const std::shared_ptr<const TokenTrie> vocab = fuzz::shared_tiny_engine().grammar_vocab();
  const std::string_view text = fuzz::as_text(data, size);
  std::shared_ptr<const Grammar> grammar;
  try {
    grammar = std::make_shared<const Grammar>(Grammar::parse(text, vocab.get()));
  } catch (const GrammarError&) {
    return 0;
  }
  const uint32_t pick = size > 0 ? data[size - 1] : 0;
  fuzz::walk_grammar(grammar, vocab, pick, text);
  return 0;
}
