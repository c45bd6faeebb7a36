// JSON schemas from clients (response_format json_schema, tools' parameters) through
// the JSON Schema -> GBNF converter. Input: JSON text (inputs that are not JSON are
// dropped). The expected failure is JsonSchemaError; the grammar of a schema the
// converter accepts must compile (a GrammarError there is a converter bug) and run a
// few steps (grammar_walk.h). The prefixed form (json_schema_rules) must compile too.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/sampling/grammar.h"
#include "core/sampling/json_schema.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/grammar_walk.h"
#include "tests/fuzz/tiny_engine.h"

namespace {

std::shared_ptr<const runnel::Grammar> compile(const std::string& gbnf, const runnel::TokenTrie* vocab,
                                               std::string_view root) {
  try {
    return std::make_shared<const runnel::Grammar>(runnel::Grammar::parse(gbnf, vocab, root));
  } catch (const runnel::GrammarError& e) {
    std::fprintf(stderr, "json_schema: the converter's grammar does not compile: %s\n%s\n", e.what(), gbnf.c_str());
    std::abort();
  }
}

}  // namespace

// Loads what the inputs need before the first one, so that -timeout=1 times inputs only.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)runnel::fuzz::shared_tiny_engine().grammar_vocab();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace runnel;
  const std::shared_ptr<const TokenTrie> vocab = fuzz::shared_tiny_engine().grammar_vocab();
  const nlohmann::json schema = nlohmann::json::parse(fuzz::as_text(data, size), nullptr, false);
  if (schema.is_discarded()) return -1;  // not JSON: not worth keeping
  std::string gbnf, rules;
  try {
    gbnf = json_schema_to_grammar(schema);
    rules = json_schema_rules(schema, "t-");
  } catch (const JsonSchemaError&) {
    return 0;
  }
  const std::shared_ptr<const Grammar> grammar = compile(gbnf, vocab.get(), "root");
  (void)compile(rules, vocab.get(), "t-root");
  fuzz::walk_grammar(grammar, vocab, static_cast<uint32_t>(size), schema.dump());
  return 0;
}
