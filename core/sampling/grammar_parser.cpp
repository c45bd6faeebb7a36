// GBNF text -> ParsedGrammar, following llama.cpp's parser (src/llama-grammar.cpp):
// the same syntax, spacing rules, escapes and repetition rewrites, with errors that
// say where and what was expected.
#include <algorithm>
#include <map>

#include "core/sampling/grammar_syntax.h"
#include "core/sampling/grammar_token_trie.h"

namespace runnel {
namespace {

constexpr uint64_t kMaxRepetitions = 2000;  // llama.cpp's MAX_REPETITION_THRESHOLD
constexpr uint64_t kUnbounded = UINT64_MAX;
constexpr size_t kMaxSymbols = size_t{1} << 20;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || is_digit(c);
}
bool is_surrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

std::string hex_codepoint(uint32_t cp) {
  static const char* kDigits = "0123456789ABCDEF";
  std::string s;
  for (int shift = cp > 0xFFFF ? 20 : 12; shift >= 0; shift -= 4) s += kDigits[(cp >> shift) & 15];
  return "U+" + s;
}

GrammarSymbol chars_symbol(std::vector<CodepointRange> ranges) {
  GrammarSymbol s;
  s.kind = GrammarSymbol::Kind::kChars;
  s.chars = std::move(ranges);
  return s;
}

GrammarSymbol ref_symbol(GrammarSymbol::Kind kind, uint32_t value) {
  GrammarSymbol s;
  s.kind = kind;
  s.value = value;
  return s;
}

class Parser {
 public:
  Parser(std::string_view text, const TokenTrie* vocab) : text_(text), vocab_(vocab) {}

  ParsedGrammar run(std::string_view root_rule) {
    size_t pos = skip_space(0, true);
    while (!at_end(pos)) pos = parse_rule(pos);
    for (const ParsedRule& rule : g_.rules) {
      if (!rule.defined) {
        fail(rule.offset, "rule '" + rule.name + "' is not defined: expected a line '" +
                              rule.name + " ::= ...'");
      }
    }
    check_counted_repetitions();
    auto it = by_name_.find(root_rule);
    if (it == by_name_.end()) {
      fail(0, "expected a rule named '" + std::string(root_rule) + "' (the start rule)");
    }
    g_.root = it->second;
    return std::move(g_);
  }

 private:
  std::string_view text_;
  const TokenTrie* vocab_;
  ParsedGrammar g_;
  std::map<std::string, uint32_t, std::less<>> by_name_;
  size_t rule_offset_ = 0;  // definition of the rule being parsed (for helper rules)
  size_t n_symbols_ = 0;    // symbols added by repetitions, against kMaxSymbols

  // A repetition that expands to several copies of its item ({2}, {1,5}, {3,}), checked
  // once every rule is known (an item may refer to rules defined later).
  struct CountedRepetition {
    GrammarSequence item;
    uint64_t min = 0, max = 0;
    size_t pos = 0;  // of the '{'
  };
  std::vector<CountedRepetition> counted_;

  bool at_end(size_t pos) const { return pos >= text_.size(); }
  char at(size_t pos) const { return at_end(pos) ? '\0' : text_[pos]; }

  [[noreturn]] void fail(size_t pos, const std::string& message) const {
    throw grammar_error_at(text_, pos, message);
  }

  std::string where(size_t pos) const {
    GrammarError e = grammar_error_at(text_, pos, "");
    return "line " + std::to_string(e.line()) + ", column " + std::to_string(e.column());
  }

  std::string found(size_t pos) const {
    if (at_end(pos)) return "found the end of the grammar";
    const char c = text_[pos];
    if (c == '\n' || c == '\r') return "found a line break";
    if (static_cast<unsigned char>(c) < 0x20) return "found byte " + std::to_string(c);
    return "found '" + std::string(1, c) + "'";
  }

  // Spaces, tabs and # comments; line breaks too where newline_ok.
  size_t skip_space(size_t pos, bool newline_ok) const {
    while (!at_end(pos)) {
      const char c = text_[pos];
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos;
      } else if (c == '#') {
        while (!at_end(pos) && text_[pos] != '\r' && text_[pos] != '\n') ++pos;
      } else {
        break;
      }
    }
    return pos;
  }

  uint32_t rule_id(std::string_view name, size_t offset) {
    auto it = by_name_.find(name);
    if (it != by_name_.end()) return it->second;
    const auto id = static_cast<uint32_t>(g_.rules.size());
    ParsedRule rule;
    rule.name = std::string(name);
    rule.offset = offset;
    g_.rules.push_back(std::move(rule));
    by_name_.emplace(std::string(name), id);
    return id;
  }

  uint32_t new_helper_rule(const std::string& base) {
    const auto id = static_cast<uint32_t>(g_.rules.size());
    ParsedRule rule;
    rule.name = base + "-" + std::to_string(id);
    rule.offset = rule_offset_;
    rule.defined = true;
    g_.rules.push_back(std::move(rule));
    return id;
  }

  size_t parse_rule(size_t pos) {
    if (!is_word_char(at(pos))) fail(pos, "expected a rule name, " + found(pos));
    const size_t start = pos;
    while (is_word_char(at(pos))) ++pos;
    const std::string name(text_.substr(start, pos - start));
    pos = skip_space(pos, false);
    if (text_.substr(pos, 3) != "::=") {
      fail(pos, "expected '::=' after the rule name '" + name + "', " + found(pos));
    }
    const uint32_t id = rule_id(name, start);
    if (g_.rules[id].defined) {
      fail(start, "rule '" + name + "' is defined twice (first at " + where(g_.rules[id].offset) +
                      "): expected one definition per rule");
    }
    g_.rules[id].defined = true;
    g_.rules[id].offset = start;
    rule_offset_ = start;
    pos = skip_space(pos + 3, true);
    pos = parse_alternates(pos, id, name, false);
    if (at(pos) == '\r') {
      pos += at(pos + 1) == '\n' ? 2 : 1;
    } else if (at(pos) == '\n') {
      ++pos;
    } else if (!at_end(pos)) {
      if (at(pos) == ')') fail(pos, "unexpected ')' without a matching '('");
      fail(pos, "expected a line break or the end of the grammar after rule '" + name + "', " +
                    found(pos));
    }
    return skip_space(pos, true);
  }

  size_t parse_alternates(size_t pos, uint32_t id, const std::string& name, bool nested) {
    std::vector<GrammarSequence> alternatives(1);
    pos = parse_sequence(pos, name, alternatives.back(), nested);
    while (!at_end(pos) && text_[pos] == '|') {
      pos = skip_space(pos + 1, true);
      alternatives.emplace_back();
      pos = parse_sequence(pos, name, alternatives.back(), nested);
    }
    g_.rules[id].alternatives = std::move(alternatives);
    return pos;
  }

  size_t parse_sequence(size_t pos, const std::string& name, GrammarSequence& seq, bool nested) {
    size_t item_start = SIZE_MAX;  // where the last item (what * + ? {} repeat) begins
    while (!at_end(pos)) {
      const char c = text_[pos];
      const size_t start = pos;
      if (c == '"') {
        item_start = seq.size();
        ++pos;
        while (true) {
          if (at_end(pos)) {
            fail(pos, "expected '\"' to end the string that starts at " + where(start));
          }
          if (text_[pos] == '"') break;
          const size_t char_pos = pos;
          const uint32_t cp = parse_char(pos);
          if (is_surrogate(cp)) {
            fail(char_pos, "expected a Unicode scalar value, found the surrogate " +
                               hex_codepoint(cp));
          }
          seq.push_back(chars_symbol({{cp, cp}}));
        }
        pos = skip_space(pos + 1, nested);
      } else if (c == '[') {
        item_start = seq.size();
        seq.push_back(chars_symbol(parse_class(pos)));
        pos = skip_space(pos, nested);
      } else if (c == '<' || c == '!') {
        item_start = seq.size();
        seq.push_back(parse_token_ref(pos));
        pos = skip_space(pos, nested);
      } else if (is_word_char(c)) {
        while (is_word_char(at(pos))) ++pos;
        const uint32_t id = rule_id(text_.substr(start, pos - start), start);
        item_start = seq.size();
        seq.push_back(ref_symbol(GrammarSymbol::Kind::kRule, id));
        pos = skip_space(pos, nested);
      } else if (c == '(') {
        const uint32_t id = new_helper_rule(name);
        pos = parse_alternates(skip_space(pos + 1, true), id, name, true);
        if (at_end(pos) || text_[pos] != ')') {
          fail(pos, "expected ')' to close the group that starts at " + where(start) + ", " +
                        found(pos));
        }
        item_start = seq.size();
        seq.push_back(ref_symbol(GrammarSymbol::Kind::kRule, id));
        pos = skip_space(pos + 1, nested);
      } else if (c == '.') {
        item_start = seq.size();
        seq.push_back(chars_symbol(normalize_ranges({{0, kMaxCodepoint}})));
        pos = skip_space(pos + 1, nested);
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (item_start == SIZE_MAX) {
          fail(pos, std::string("expected an item before '") + c + "' to repeat");
        }
        uint64_t min = 0, max = kUnbounded;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        pos = c == '{' ? parse_bounds(pos, nested, min, max) : skip_space(pos + 1, nested);
        repeat(seq, item_start, min, max, name, start);
      } else {
        break;
      }
    }
    return pos;
  }

  // {m} {m,} {m,n} {,n}; pos at '{'. Returns the position after '}' and spaces.
  size_t parse_bounds(size_t pos, bool nested, uint64_t& min, uint64_t& max) {
    const size_t start = pos;
    pos = skip_space(pos + 1, nested);
    const bool has_min = is_digit(at(pos));
    if (has_min) pos = skip_space(parse_count(pos, min), nested);
    if (has_min && at(pos) == '}') {
      max = min;
    } else if (at(pos) == ',') {
      pos = skip_space(pos + 1, nested);
      if (is_digit(at(pos))) pos = skip_space(parse_count(pos, max), nested);
      if (at(pos) != '}') fail(pos, "expected '}' to close the repetition, " + found(pos));
    } else {
      fail(pos, has_min ? "expected ',' or '}' in the repetition, " + found(pos)
                        : "expected a number after '{', " + found(pos));
    }
    if (min > kMaxRepetitions) {
      fail(start, "expected at most " + std::to_string(kMaxRepetitions) +
                      " repetitions, found a minimum of " + std::to_string(min));
    }
    if (max != kUnbounded && max < min) {
      fail(start, "expected {m,n} with m <= n, found {" + std::to_string(min) + "," +
                      std::to_string(max) + "}");
    }
    if (max != kUnbounded && max > kMaxRepetitions) max = kUnbounded;  // as llama.cpp does
    return skip_space(pos + 1, nested);
  }

  size_t parse_count(size_t pos, uint64_t& value) const {
    value = 0;
    while (is_digit(at(pos))) {
      value = std::min<uint64_t>(value * 10 + static_cast<uint64_t>(at(pos) - '0'), 1u << 30);
      ++pos;
    }
    return pos;
  }

  // item{min,max}: `min` copies of the item, then nested optional helper rules
  // (R1 ::= item | ; Rk ::= item R(k-1) | ) or, unbounded, R ::= item R | .
  void repeat(GrammarSequence& seq, size_t item_start, uint64_t min, uint64_t max,
              const std::string& name, size_t op_pos) {
    const GrammarSequence item(seq.begin() + static_cast<ptrdiff_t>(item_start), seq.end());
    const uint64_t n_copies = min + (max == kUnbounded ? 1 : max - min);
    n_symbols_ += item.size() * n_copies;
    if (n_symbols_ > kMaxSymbols) {
      fail(op_pos, "expected fewer repetitions: they expand the grammar past " +
                       std::to_string(kMaxSymbols) + " symbols");
    }
    if (min + (max == kUnbounded ? 0 : max - min) > 1) counted_.push_back({item, min, max, op_pos});
    seq.resize(item_start);
    for (uint64_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
    const uint64_t n_optional = max == kUnbounded ? 1 : max - min;
    uint32_t last = 0;
    for (uint64_t i = 0; i < n_optional; ++i) {
      const uint32_t id = new_helper_rule(name);
      GrammarSequence first = item;
      if (max == kUnbounded) {
        first.push_back(ref_symbol(GrammarSymbol::Kind::kRule, id));
      } else if (i > 0) {
        first.push_back(ref_symbol(GrammarSymbol::Kind::kRule, last));
      }
      g_.rules[id].alternatives = {std::move(first), GrammarSequence{}};
      last = id;
    }
    if (n_optional > 0) seq.push_back(ref_symbol(GrammarSymbol::Kind::kRule, last));
  }

  // Which rules can match the empty string: a rule with an alternative whose symbols are
  // all such rules (a worklist over rule references, linear in the grammar's size).
  std::vector<bool> nullable_rules() const {
    struct Use {
      size_t alternative;  // index into `remaining`
      uint32_t rule;       // the rule that alternative belongs to
    };
    std::vector<bool> nullable(g_.rules.size(), false);
    std::vector<size_t> remaining;                       // per alternative: rule refs not yet nullable
    std::vector<std::vector<Use>> uses(g_.rules.size());  // per rule: the alternatives referring to it
    std::vector<uint32_t> queue;
    for (uint32_t r = 0; r < g_.rules.size(); ++r) {
      for (const GrammarSequence& alt : g_.rules[r].alternatives) {
        const bool only_rules = std::all_of(alt.begin(), alt.end(), [](const GrammarSymbol& s) {
          return s.kind == GrammarSymbol::Kind::kRule;
        });
        if (!only_rules) continue;  // a character or a token is never empty
        if (alt.empty() && !nullable[r]) {
          nullable[r] = true;
          queue.push_back(r);
        }
        for (const GrammarSymbol& s : alt) uses[s.value].push_back({remaining.size(), r});
        remaining.push_back(alt.size());
      }
    }
    while (!queue.empty()) {
      const uint32_t r = queue.back();
      queue.pop_back();
      for (const Use& use : uses[r]) {
        if (--remaining[use.alternative] == 0 && !nullable[use.rule]) {
          nullable[use.rule] = true;
          queue.push_back(use.rule);
        }
      }
    }
    return nullable;
  }

  // Several copies of an item that can match the empty string ((x?){1,100}) make the
  // grammar ambiguous in a way that costs the matcher: after each byte it keeps every
  // way of spreading the text over the copies, seconds per token for a few hundred
  // copies (found by fuzzing: tests/fuzz/corpus/grammar/regression-nullable-repetition).
  // Such a repetition means the same as a repetition of the item's non-empty forms,
  // which the grammar's author can write directly.
  void check_counted_repetitions() const {
    if (counted_.empty()) return;
    const std::vector<bool> nullable = nullable_rules();
    for (const CountedRepetition& rep : counted_) {
      const bool empty_item = std::all_of(rep.item.begin(), rep.item.end(), [&](const GrammarSymbol& s) {
        return s.kind == GrammarSymbol::Kind::kRule && nullable[s.value];
      });
      if (!empty_item) continue;
      // (appends only: g++ 12 warns falsely (-Wrestrict) about "{" + std::to_string(...))
      std::string bounds = "{";
      bounds += std::to_string(rep.min);
      if (rep.max != rep.min) bounds += ",";
      if (rep.max != rep.min && rep.max != kUnbounded) bounds += std::to_string(rep.max);
      bounds += "}";
      fail(rep.pos, "expected an item that cannot match the empty string before " + bounds +
                        ": repeating one that can is ambiguous and slow to match (write x{0,N} "
                        "rather than (x?){1,N}, and x* rather than (x?){2,})");
    }
  }

  // [abc] [a-z] [^...]; pos at '[', left after ']'.
  std::vector<CodepointRange> parse_class(size_t& pos) {
    const size_t start = pos;
    ++pos;
    const bool negated = at(pos) == '^' && !at_end(pos);
    if (negated) ++pos;
    std::vector<CodepointRange> ranges;
    const std::string close = "expected ']' to close the character class that starts at " +
                              where(start);
    if (!at_end(pos) && text_[pos] == ']') {
      fail(pos, "expected a character in the class (an empty class matches nothing)");
    }
    while (true) {
      if (at_end(pos)) fail(pos, close);
      if (text_[pos] == ']') break;
      const size_t lo_pos = pos;
      const uint32_t lo = parse_char(pos);
      uint32_t hi = lo;
      if (at(pos) == '-' && !at_end(pos + 1) && text_[pos + 1] != ']') {
        ++pos;
        hi = parse_char(pos);
        if (hi < lo) {
          fail(lo_pos, "expected a range whose end is not below its start, found " +
                           hex_codepoint(lo) + "-" + hex_codepoint(hi));
        }
      }
      ranges.push_back({lo, hi});
    }
    ++pos;
    ranges = normalize_ranges(std::move(ranges));
    if (negated) ranges = complement_ranges(ranges);
    if (ranges.empty()) fail(start, "expected a character class that matches some character");
    return ranges;
  }

  // <[id]>, <text>, !<[id]>, !<text>; pos at '<' or '!', left after '>'.
  GrammarSymbol parse_token_ref(size_t& pos) {
    const size_t start = pos;
    const bool negated = text_[pos] == '!';
    if (negated && at(++pos) != '<') fail(pos, "expected '<' after '!', " + found(pos));
    const size_t open = pos++;
    int64_t id = -1;
    if (at(pos) == '[') {
      ++pos;
      if (!is_digit(at(pos))) fail(pos, "expected a token id after '<[', " + found(pos));
      uint64_t value = 0;
      pos = parse_count(pos, value);
      if (at(pos) != ']') fail(pos, "expected ']' after the token id, " + found(pos));
      if (at(++pos) != '>') fail(pos, "expected '>' after ']', " + found(pos));
      ++pos;
      id = static_cast<int64_t>(value);
      if (vocab_ != nullptr && id >= vocab_->n_vocab()) {
        fail(start, "expected a token id below the vocabulary size " +
                        std::to_string(vocab_->n_vocab()) + ", found " + std::to_string(id));
      }
      if (id > INT32_MAX) fail(start, "expected a token id that fits in 32 bits");
    } else {
      while (!at_end(pos) && text_[pos] != '>') ++pos;
      if (at_end(pos)) fail(pos, "expected '>' to close the token that starts at " + where(open));
      ++pos;
      const std::string_view token_text = text_.substr(open, pos - open);
      if (vocab_ == nullptr) {
        fail(open, "token " + std::string(token_text) +
                       " needs a vocabulary: expected <[id]>, or a TokenTrie for Grammar::parse");
      }
      id = vocab_->find_exact(token_text);
      if (id < 0) {
        fail(open, "expected a single token whose text is " + std::string(token_text) +
                       ", found none in the vocabulary");
      }
    }
    return ref_symbol(negated ? GrammarSymbol::Kind::kTokenNot : GrammarSymbol::Kind::kToken,
                      static_cast<uint32_t>(id));
  }

  // One character of a literal or class: an escape or a UTF-8 sequence.
  uint32_t parse_char(size_t& pos) {
    const size_t start = pos;
    if (text_[pos] == '\\') {
      if (at_end(pos + 1)) fail(pos, "expected an escaped character after '\\'");
      const char e = text_[pos + 1];
      pos += 2;
      switch (e) {
        case 'x': return parse_hex(pos, 2, start);
        case 'u': return parse_hex(pos, 4, start);
        case 'U': return parse_hex(pos, 8, start);
        case 't': return '\t';
        case 'r': return '\r';
        case 'n': return '\n';
        case '\\': case '"': case '[': case ']': case '-': return static_cast<uint8_t>(e);
        default:
          fail(start, "unknown escape '\\" + std::string(1, e) +
                          "': expected \\x \\u \\U \\t \\r \\n \\\\ \\\" \\[ \\] or \\-");
      }
    }
    return decode_utf8(pos);
  }

  uint32_t parse_hex(size_t& pos, int n_digits, size_t start) {
    uint32_t value = 0;
    for (int i = 0; i < n_digits; ++i, ++pos) {
      const char c = at(pos);
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        fail(pos, "expected " + std::to_string(n_digits) + " hex digits in the escape, " +
                      found(pos));
      }
      value = value * 16 + digit;
    }
    if (value > kMaxCodepoint) {
      fail(start, "expected a code point up to U+10FFFF, found U+" +
                      hex_codepoint(value).substr(2));
    }
    return value;
  }

  uint32_t decode_utf8(size_t& pos) {
    const size_t start = pos;
    const auto lead = static_cast<uint8_t>(text_[pos++]);
    if (lead < 0x80) return lead;
    int n_more = 0;
    uint32_t cp = 0;
    if ((lead & 0xE0) == 0xC0) {
      n_more = 1, cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      n_more = 2, cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      n_more = 3, cp = lead & 0x07;
    } else {
      fail(start, "expected UTF-8 text, found the byte " + std::to_string(lead));
    }
    for (int i = 0; i < n_more; ++i, ++pos) {
      const auto b = static_cast<uint8_t>(at(pos));
      if (at_end(pos) || (b & 0xC0) != 0x80) fail(start, "expected UTF-8 text (a cut sequence)");
      cp = (cp << 6) | (b & 0x3Fu);
    }
    static const uint32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[n_more] || cp > kMaxCodepoint || is_surrogate(cp)) {
      fail(start, "expected UTF-8 text (an invalid sequence)");
    }
    return cp;
  }
};

}  // namespace

GrammarError grammar_error_at(std::string_view text, size_t offset, const std::string& message) {
  int line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line, column = 1;
    } else if ((static_cast<uint8_t>(text[i]) & 0xC0) != 0x80) {
      ++column;  // count code points, not continuation bytes
    }
  }
  return GrammarError(line, column, message);
}

ParsedGrammar parse_gbnf(std::string_view text, const TokenTrie* vocab,
                         std::string_view root_rule) {
  return Parser(text, vocab).run(root_rule);
}

}  // namespace runnel
