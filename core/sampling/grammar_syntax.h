// Internal to the grammar engine: GBNF text parsed into rules of code-point symbols,
// before grammar.cpp lowers them to bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/sampling/grammar.h"
#include "core/sampling/grammar_utf8.h"

namespace runnel {

struct GrammarSymbol {
  enum class Kind : uint8_t { kRule, kChars, kToken, kTokenNot };
  Kind kind = Kind::kChars;
  uint32_t value = 0;                 // kRule: rule index; kToken*: token id
  std::vector<CodepointRange> chars;  // kChars: normalized, never empty
};

using GrammarSequence = std::vector<GrammarSymbol>;

struct ParsedRule {
  std::string name;
  std::vector<GrammarSequence> alternatives;
  size_t offset = 0;  // where it is defined (or first referenced, while undefined)
  bool defined = false;
};

struct ParsedGrammar {
  std::vector<ParsedRule> rules;  // user rules and the helper rules of groups/repetitions
  uint32_t root = 0;
};

// Throws GrammarError.
ParsedGrammar parse_gbnf(std::string_view text, const TokenTrie* vocab,
                         std::string_view root_rule);

// The error for byte `offset` of `text`, with its line and column.
GrammarError grammar_error_at(std::string_view text, size_t offset, const std::string& message);

}  // namespace runnel
