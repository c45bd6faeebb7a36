// Helpers for the grammar engine tests.
#pragma once

#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/sampling/grammar.h"
#include "core/sampling/grammar_matcher.h"
#include "core/sampling/grammar_token_trie.h"

namespace runnel::grammar_test {

inline std::string read_grammar(const std::string& name) {
  const std::string path = std::string(RUNNEL_TEST_DATA) + "/grammars/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::shared_ptr<const Grammar> compile(std::string_view text,
                                              const TokenTrie* vocab = nullptr) {
  return std::make_shared<const Grammar>(Grammar::parse(text, vocab));
}

// The whole string matches the grammar.
inline bool matches(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  GrammarMatcher m(g);
  return m.accept_bytes(s) && m.is_accepting();
}

// Some continuation of the string matches the grammar.
inline bool viable(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  GrammarMatcher m(g);
  return m.accept_bytes(s);
}

inline std::shared_ptr<const TokenTrie> make_vocab(const std::vector<std::string>& texts,
                                                   const std::vector<int32_t>& eog = {},
                                                   const std::vector<int32_t>& control = {}) {
  std::vector<GrammarTokenKind> kinds(texts.size(), GrammarTokenKind::kText);
  for (int32_t id : control) kinds[static_cast<size_t>(id)] = GrammarTokenKind::kControl;
  for (int32_t id : eog) kinds[static_cast<size_t>(id)] = GrammarTokenKind::kEog;
  return std::make_shared<const TokenTrie>(texts, kinds);
}

}  // namespace runnel::grammar_test
