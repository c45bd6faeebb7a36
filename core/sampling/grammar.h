// A compiled GBNF grammar (llama.cpp's grammar syntax, grammars/README.md there).
//
//   root   ::= "{" ws pair ("," ws pair)* "}"     # rules; `root` is the start rule
//   pair   ::= [a-z]+ ":" ws ([0-9]{1,3} | "\"" [^"\\]* "\"")
//   ws     ::= [ \t\n]*
//
// Parsing compiles the code-point syntax to a byte-level pushdown grammar: character
// classes and literals become sequences of byte sets (grammar_utf8.h), repetitions and
// groups become helper rules. GrammarMatcher (grammar_matcher.h) runs it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/sampling/grammar_utf8.h"

namespace runnel {

class TokenTrie;

// A malformed grammar: "line 3, column 14: expected ']' to close the character class
// that starts at line 3, column 9". line() and column() are 1-based (columns count
// code points).
class GrammarError : public std::runtime_error {
 public:
  GrammarError(int line, int column, const std::string& message);
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_, column_;
};

// A grammar too ambiguous to match: at some point more parses are open than the matcher
// keeps (GrammarAutomaton::kMaxStacks), as with stacked repetitions (x{2,100}++++...,
// which double them at every level). Thrown while matching; the request fails with it.
class GrammarLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class GrammarOp : uint8_t {
  kEnd,       // end of an alternative
  kRuleRef,   // value: rule index
  kBytes,     // value: index into byte_sets(); matches one byte
  kToken,     // value: token id; matches that whole token
  kTokenNot,  // value: token id; matches any one whole token but that one (and EOG)
};

struct GrammarElement {
  GrammarOp op = GrammarOp::kEnd;
  uint32_t value = 0;
};

struct GrammarRule {
  std::string name;                   // helper rules: "<rule>-<n>"
  std::vector<uint32_t> alternatives;  // index in elements() where each alternative starts
};

class Grammar {
 public:
  // Throws GrammarError. `vocab` resolves token references written as text (<think>)
  // and bounds-checks <[id]>; without it, <text> references are refused.
  static Grammar parse(std::string_view text, const TokenTrie* vocab = nullptr,
                       std::string_view root_rule = "root");

  // Every alternative of every rule, each ending in a kEnd element.
  const std::vector<GrammarElement>& elements() const { return elements_; }
  const std::vector<GrammarRule>& rules() const { return rules_; }
  const std::vector<ByteSet>& byte_sets() const { return byte_sets_; }
  uint32_t root() const { return root_; }
  // Whether the grammar refers to token ids (then it needs a vocabulary to match).
  bool has_token_refs() const { return has_token_refs_; }

 private:
  friend class GrammarCompiler;
  std::vector<GrammarElement> elements_;
  std::vector<GrammarRule> rules_;
  std::vector<ByteSet> byte_sets_;
  uint32_t root_ = 0;
  bool has_token_refs_ = false;
};

}  // namespace runnel
