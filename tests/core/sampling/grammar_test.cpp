// GBNF parsing, errors and byte-level matching (core/sampling/grammar*.h).
#include "core/sampling/grammar.h"

#include <catch2/catch.hpp>

#include "core/sampling/grammar_matcher.h"
#include "core/sampling/grammar_utf8.h"
#include "tests/core/sampling/grammar_test_util.h"

namespace runnel {
namespace {

using namespace std::string_literals;

using grammar_test::compile;
using grammar_test::matches;
using grammar_test::read_grammar;
using grammar_test::viable;

TEST_CASE("utf8_sequences cover exactly the encodings of a code-point set", "[grammar]") {
  // Check every scalar value against a direct membership test, for a few sets.
  const std::vector<std::vector<CodepointRange>> sets = {
      {{0, kMaxCodepoint}},
      {{'a', 'z'}, {0xE9, 0xE9}, {0x3041, 0x309F}},
      complement_ranges(normalize_ranges({{'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}, {0, 0x1F}})),
      {{0x7FF, 0x801}, {0xFFFF, 0x10000}, {0x10FFFF, 0x10FFFF}},
  };
  for (const auto& raw : sets) {
    const auto ranges = normalize_ranges(raw);
    const auto seqs = utf8_sequences(ranges);
    auto in_set = [&](uint32_t cp) {
      for (const auto& r : ranges) {
        if (cp >= r.lo && cp <= r.hi) return true;
      }
      return false;
    };
    auto n_matching = [&](const std::string& bytes) {
      int n = 0;
      for (const auto& seq : seqs) {
        if (seq.size() != bytes.size()) continue;
        bool ok = true;
        for (size_t i = 0; i < seq.size(); ++i) ok = ok && seq[i].test(uint8_t(bytes[i]));
        n += ok;
      }
      return n;
    };
    for (uint32_t cp = 0; cp <= kMaxCodepoint; cp += (cp < 0x20000 ? 1 : 97)) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      INFO("U+" << std::hex << cp);
      REQUIRE(n_matching(encode_utf8(cp)) == (in_set(cp) ? 1 : 0));
    }
    // Surrogates' would-be encodings and overlong forms never match.
    CHECK(n_matching("\xED\xA0\x80") == 0);
    CHECK(n_matching("\xC0\xAF") == 0);
    CHECK(n_matching("\xE0\x80\xAF") == 0);
  }
  CHECK(utf8_sequences(normalize_ranges({{0, kMaxCodepoint}})).size() == 8);
}

TEST_CASE("llama.cpp's example grammars parse", "[grammar]") {
  for (const char* name : {"arithmetic.gbnf", "c.gbnf", "chess.gbnf", "english.gbnf",
                           "japanese.gbnf", "json.gbnf", "json_arr.gbnf", "list.gbnf"}) {
    INFO(name);
    const Grammar g = Grammar::parse(read_grammar(name));
    CHECK(g.rules()[g.root()].name == "root");
    CHECK_FALSE(g.has_token_refs());
  }
}

TEST_CASE("json.gbnf accepts JSON and rejects the rest", "[grammar]") {
  const auto g = compile(read_grammar("json.gbnf"));
  for (const char* ok : {
           "{}", "{ }", "{\"a\": 1}", "{\"a\":[1, 2.5, -3e+7, true, false, null]}",
           "{\"k\": {\"n\": {\"m\": []}}}", "{\"s\": \"caf\xC3\xA9 \\u00e9 \\n \\\" \\\\\"}",
           "{\"x\": \"\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\"}", "{\"a\": 0}\n",
           "{\n  \"a\": 1,\n  \"b\": \"c\"\n}"}) {
    INFO(ok);
    CHECK(matches(g, ok));
  }
  for (const char* bad : {"", "[]", "{", "{\"a\"}", "{\"a\": 01}", "{\"a\": 1,}", "{'a': 1}",
                          "{\"a\": tru}", "{\"a\": \"\x01\"}", "{\"a\": \"\\x\"}",
                          "{\"a\": \"\\u12g4\"}", "{\"a\": \"\xFF\"}", "{\"a\": \"\xC3\"}",
                          "{\"a\": \"\xED\xA0\x80\"}", "{} {}", "{\"a\": 1}  "}) {
    INFO(bad);
    CHECK_FALSE(matches(g, bad));
  }
  // Prefixes: still viable, not yet accepting.
  CHECK(viable(g, "{\"a\": [1, {\"b"));
  CHECK(viable(g, "{\"a\": \"\xE6\x97"));  // inside a 3-byte character
  CHECK_FALSE(viable(g, "{\"a\": \"\xE6\x41"));
  CHECK_FALSE(matches(g, "{\"a\": [1, {\"b"));
}

TEST_CASE("arithmetic.gbnf and list.gbnf", "[grammar]") {
  const auto arith = compile(read_grammar("arithmetic.gbnf"));
  // root ::= (expr "=" ws term "\n")+ : an expression on the left, one term on the right.
  CHECK(matches(arith, "1+2 = x\n"));
  CHECK(matches(arith, "(b *3) -c1 = (d)\ne = 4\n"));
  CHECK_FALSE(matches(arith, "x = 1+2\n"));
  CHECK_FALSE(matches(arith, "x = 1+\n"));
  CHECK_FALSE(matches(arith, "X = 1\n"));
  CHECK_FALSE(matches(arith, "x = 1"));

  const auto list = compile(read_grammar("list.gbnf"));
  CHECK(matches(list, "- milk\n- eggs\n"));
  CHECK_FALSE(matches(list, "- milk\r\n"));
  CHECK_FALSE(matches(list, "- a\xE2\x80\xA8z\n"));  // U+2028 is excluded
  CHECK_FALSE(matches(list, "- \n"));
  CHECK_FALSE(matches(list, "-milk\n"));
}

TEST_CASE("chess.gbnf and c.gbnf", "[grammar]") {
  const auto chess = compile(read_grammar("chess.gbnf"));
  CHECK(matches(chess, "1. e4 e5\n2. Nf3 Nc6\n"));
  CHECK(matches(chess, "1. e4 e5\n2. O-O-O Qxd8#\n"));
  CHECK_FALSE(matches(chess, "1. e4 e5\n"));  // needs at least one more move line
  CHECK_FALSE(matches(chess, "1. e9 e5\n2. d4 d5\n"));

  const auto c = compile(read_grammar("c.gbnf"));
  CHECK(matches(c, "int main(){return 0;}"));
  CHECK(matches(c, "int f(int x){while(x<10){x = x+1;}return x;}"));
  CHECK_FALSE(matches(c, "int main(){return 0}"));
}

TEST_CASE("japanese.gbnf matches multi-byte text byte by byte", "[grammar]") {
  const auto g = compile(read_grammar("japanese.gbnf"));
  CHECK(matches(g, "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF"));  // こんにちは
  CHECK(matches(g, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xE3\x82\xAB\xE3\x83\x8A"));  // 日本語 カナ
  CHECK_FALSE(matches(g, "hello"));
  CHECK_FALSE(matches(g, "\xE3\x81"));  // a cut character is not accepted...
  CHECK(viable(g, "\xE3\x81"));         // ...but may go on
  CHECK_FALSE(viable(g, "\xE3\x80\x80"));  // U+3000 (ideographic space) is in no class

  GrammarMatcher m(g);
  for (char c : std::string("\xE6\x97\xA5")) {
    CHECK_FALSE(m.is_accepting());
    REQUIRE(m.accept_byte(static_cast<uint8_t>(c)));
  }
  CHECK(m.is_accepting());
  CHECK_FALSE(m.accept_byte('a'));
  CHECK(m.n_steps() == 3);
}

TEST_CASE("repetition bounds", "[grammar]") {
  const auto exact = compile("root ::= \"ab\"{3}");
  CHECK(matches(exact, "ababab"));
  CHECK_FALSE(matches(exact, "abab"));
  CHECK_FALSE(matches(exact, "abababab"));

  const auto at_least = compile("root ::= [0-9]{2,}");
  CHECK_FALSE(matches(at_least, "1"));
  CHECK(matches(at_least, "12"));
  CHECK(matches(at_least, "123456789012345678901234567890"));

  const auto range = compile("root ::= x{2,4}\nx ::= [a-c]");
  CHECK_FALSE(matches(range, "a"));
  CHECK(matches(range, "ab"));
  CHECK(matches(range, "abca"));
  CHECK_FALSE(matches(range, "abcab"));

  const auto at_most = compile("root ::= \"x\" ( \"y\" | \"z\" ){,2} \"!\"");
  CHECK(matches(at_most, "x!"));
  CHECK(matches(at_most, "xyz!"));
  CHECK_FALSE(matches(at_most, "xyzy!"));

  const auto zero = compile("root ::= \"a\" \"b\"{0} \"c\"");
  CHECK(matches(zero, "ac"));
  CHECK_FALSE(matches(zero, "abc"));

  const auto ops = compile("root ::= \"a\"? \"b\"+ \"c\"* ( \"d\" \"e\" )?");
  CHECK(matches(ops, "b"));
  CHECK(matches(ops, "abbbccde"));
  CHECK_FALSE(matches(ops, "ac"));
  CHECK_FALSE(matches(ops, "abd"));

  // A repeated literal repeats the whole literal, as in llama.cpp.
  CHECK(matches(compile("root ::= \"ab\"+"), "abab"));
  CHECK_FALSE(matches(compile("root ::= \"ab\"+"), "abb"));
  // Above 2000, a maximum means "no maximum" (llama.cpp's rule).
  CHECK(matches(compile("root ::= \"a\"{1,5000}"), std::string(6000, 'a')));
  // Spaces inside the braces.
  CHECK(matches(compile("root ::= \"a\"{ 1 , 2 }"), "aa"));
}

TEST_CASE("character classes, negation, any character and escapes", "[grammar]") {
  const auto neg = compile("root ::= [^a-z\\n]+");
  CHECK(matches(neg, "ABC 123"));
  CHECK(matches(neg, "\xC3\xA9\xF0\x9F\x98\x80"));  // é and an emoji are not in a-z
  CHECK_FALSE(matches(neg, "ABc"));
  CHECK_FALSE(matches(neg, "A\n"));
  CHECK_FALSE(matches(neg, "\xED\xA0\x80"));  // an encoded surrogate is not a character
  CHECK_FALSE(matches(neg, "\xC0\x80"));      // nor an overlong NUL

  const auto any = compile("root ::= . . \"!\"");
  CHECK(matches(any, "a\xE2\x82\xAC!"));  // a €
  CHECK(matches(any, "\n\x00!"s));
  CHECK_FALSE(matches(any, "a!"));

  const auto esc = compile(R"(root ::= "\x41\u00e9\U0001F600\t\r\n\\\"\[\]\-" [\]\-\[] [\x30-\x39])");
  CHECK(matches(esc, "A\xC3\xA9\xF0\x9F\x98\x80\t\r\n\\\"[]-]7"));
  CHECK(matches(esc, "A\xC3\xA9\xF0\x9F\x98\x80\t\r\n\\\"[]--0"));
  CHECK_FALSE(matches(esc, "A\xC3\xA9\xF0\x9F\x98\x80\t\r\n\\\"[]-a0"));

  // \xXX is a code point (U+0080..U+00FF become two bytes), as in llama.cpp.
  const auto latin1 = compile("root ::= [\\x80-\\xFF]");
  CHECK(matches(latin1, "\xC3\xBF"));
  CHECK_FALSE(matches(latin1, "\xFF"));

  // A trailing '-' is literal; ranges may list several pieces.
  const auto dash = compile("root ::= [a-c-]+ [+#]?");
  CHECK(matches(dash, "a-b#"));
  CHECK_FALSE(matches(dash, "d"));

  const auto hira = compile("root ::= [ぁ-ゟ]{2}");
  CHECK(matches(hira, "\xE3\x81\x82\xE3\x82\x9F"));  // あゟ
  CHECK_FALSE(matches(hira, "\xE3\x82\xA2\xE3\x81\x82"));  // ア is katakana
}

TEST_CASE("spacing, comments, line breaks and rule names", "[grammar]") {
  const auto g = compile(
      "# leading comment\r\n"
      "root ::= item-1 (\n"
      "    \",\" item-1   # a comment inside a group\n"
      "  )* |\n"
      "  \"none\"\r\n"
      "\n"
      "item-1 ::= camelCase2\n"
      "camelCase2::=[0-9]+\n");
  CHECK(matches(g, "1,22,333"));
  CHECK(matches(g, "none"));
  CHECK_FALSE(matches(g, "1,"));
  // An empty alternative, and an empty rule.
  CHECK(matches(compile("root ::= | \"a\""), ""));
  CHECK(matches(compile("root ::= e \"a\" e\ne ::="), "a"));
  CHECK(matches(compile("root ::= \"\" \"a\""), "a"));
  // Another start rule.
  const Grammar other = Grammar::parse("a ::= \"x\"\nb ::= \"y\"", nullptr, "b");
  CHECK(other.rules()[other.root()].name == "b");
}

struct BadGrammar {
  const char* text;
  int line, column;
  const char* message;  // a part of the error message
};

TEST_CASE("malformed grammars are refused with the line, column and what was expected",
          "[grammar]") {
  const BadGrammar cases[] = {
      {"root ::= foo", 1, 10, "rule 'foo' is not defined"},
      {"item ::= \"a\"", 1, 1, "expected a rule named 'root'"},
      {"", 1, 1, "expected a rule named 'root'"},
      {"root ::= \"a\"\nx ::= [a-", 2, 10, "expected ']' to close the character class"},
      {"root ::= ( \"a\" | \"b\"\n", 2, 1, "expected ')' to close the group that starts at line 1, column 10"},
      {"root ::= \"a\" )", 1, 14, "unexpected ')'"},
      {"root ::= \"abc\n\ndef", 3, 4, "expected '\"' to end the string that starts at line 1, column 10"},
      {"root ::= \"\\q\"", 1, 11, "unknown escape '\\q'"},
      {"root ::= \"\\x4\"", 1, 14, "expected 2 hex digits"},
      {"root ::= \"\\U00110000\"", 1, 11, "expected a code point up to U+10FFFF"},
      {"root ::= [z-a]", 1, 11, "expected a range whose end is not below its start"},
      {"root ::= []", 1, 11, "expected a character in the class"},
      {"root ::= [^\\x00-\\U0010FFFF]", 1, 10, "matches some character"},
      {"root ::= \"a\"{3,2}", 1, 13, "expected {m,n} with m <= n"},
      {"root ::= \"a\"{x}", 1, 14, "expected a number after '{'"},
      {"root ::= \"a\"{2", 1, 15, "expected ',' or '}'"},
      {"root ::= \"a\"{1,2", 1, 17, "expected '}' to close the repetition"},
      {"root ::= \"a\"{2001}", 1, 13, "expected at most 2000 repetitions"},
      {"root ::= * \"a\"", 1, 10, "expected an item before '*'"},
      {"root ::= \"a\"\n  | \"b\"", 2, 3, "expected a rule name"},
      {"root = \"a\"", 1, 6, "expected '::=' after the rule name 'root'"},
      {"root ::= \"a\"\nroot ::= \"b\"", 2, 1, "rule 'root' is defined twice (first at line 1, column 1)"},
      {"root ::= \"a\" \"b\" ]", 1, 18, "expected a line break or the end of the grammar"},
      {"root ::= <think>", 1, 10, "needs a vocabulary"},
      {"root ::= <[12x]>", 1, 14, "expected ']' after the token id"},
      {"root ::= !\"a\"", 1, 11, "expected '<' after '!'"},
      {"root ::= \"\xC3\"", 1, 11, "expected UTF-8 text"},
      {"root ::= \"\\uD800\"", 1, 11, "surrogate"},
      {"root ::= x\n\n# comment\nx ::= y \"a\"\ny ::= [a] | x", 4, 1, "left recursion (x -> y -> x)"},
  };
  for (const BadGrammar& c : cases) {
    INFO(c.text);
    try {
      (void)Grammar::parse(c.text);
      FAIL("accepted");
    } catch (const GrammarError& e) {
      INFO(e.what());
      CHECK(e.line() == c.line);
      CHECK(e.column() == c.column);
      CHECK_THAT(e.what(), Catch::Contains(c.message));
      CHECK_THAT(e.what(), Catch::StartsWith("line " + std::to_string(c.line) + ", column " +
                                             std::to_string(c.column) + ": "));
    }
  }
}

TEST_CASE("left recursion is refused, also through rules that may match nothing",
          "[grammar]") {
  CHECK_THROWS_WITH(Grammar::parse("root ::= root \"a\" | \"b\""),
                    Catch::Contains("left recursion (root -> root)"));
  CHECK_THROWS_WITH(Grammar::parse("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]"),
                    Catch::Contains("line 2, column 1: left recursion (expr -> expr)"));
  // b may be empty, so root can begin with root.
  CHECK_THROWS_AS(Grammar::parse("root ::= b root \"x\" | \"y\"\nb ::= | \"z\""), GrammarError);
  // ...also when the empty rule is two references away (llama.cpp misses this one).
  CHECK_THROWS_AS(Grammar::parse("root ::= c root \"x\" | \"y\"\nc ::= b\nb ::= \"z\"?"),
                  GrammarError);
  // Through a group and a repetition.
  CHECK_THROWS_AS(Grammar::parse("root ::= (\"a\"* root) | \"b\""), GrammarError);
  // Right recursion and recursion after a terminal are fine.
  const auto right = compile("root ::= \"(\" root \")\" | \"x\" root | \"\"");
  CHECK(matches(right, "((x))"));
  CHECK(matches(right, "xx(x)"));
  CHECK_FALSE(matches(right, "(()"));
}

// Found by fuzzing (tests/fuzz/corpus/grammar/regression-nullable-repetition): copies of
// an item that may match nothing kept the matcher busy for seconds per token.
TEST_CASE("several copies of an item that may match nothing are refused", "[grammar]") {
  const std::pair<const char*, const char*> refused[] = {
      {"root ::= ([a-z]?){1,400}", "line 1, column 18: expected an item that cannot match the empty string before {1,400}"},
      {"root ::= [a-z]{0,5}{1,100}", "line 1, column 20: expected an item that cannot match the empty string before {1,100}"},
      {"root ::= x{2}\nx ::= \"a\"?", "before {2}:"},
      {"root ::= (\"a\"* \"b\"?){3,}", "before {3,}:"},
      {"root ::= (x y){2,3}\nx ::= | \"a\"\ny ::= x x", "before {2,3}:"},
  };
  for (const auto& [text, message] : refused) {
    INFO(text);
    CHECK_THROWS_WITH(Grammar::parse(text), Catch::Contains(message));
  }
  // One copy, and items that always match something, stay accepted ((x?)* is refused as
  // left recursion, above).
  CHECK(matches(compile("root ::= (\"a\"?){0,1} \"b\""), "ab"));
  CHECK(matches(compile("root ::= (\"a\"? \"c\")+ \"b\""), "cacb"));
  CHECK(matches(compile("root ::= ([a-z]? \"-\"){1,3}"), "a-b--"));
  CHECK(matches(compile("root ::= [a-z]{0,500}"), std::string(500, 'q')));
}

TEST_CASE("stacked repetitions end matching with a clear error, not an exponential wait", "[grammar]") {
  // Each stacked + doubles the parses open after a letter: 24 of them took minutes a
  // token before the cap on open parses.
  const auto g = compile("root ::= [a-z]{2,100}" + std::string(24, '+') + " \"x\"?");
  GrammarMatcher m(g);
  CHECK_THROWS_AS(
      [&] {
        for (int i = 0; i < 64; ++i) m.accept_byte('a');
      }(),
      GrammarLimitError);
  try {
    GrammarMatcher again(g);
    for (int i = 0; i < 64; ++i) again.accept_byte('a');
  } catch (const GrammarLimitError& e) {
    CHECK_THAT(e.what(), Catch::Contains("too ambiguous") && Catch::Contains("x{2,100}++"));
  }
  // A few stacked operators stay matchable.
  CHECK(matches(compile("root ::= [a-z]{2,100}++ \"x\""), "abcx"));
}

}  // namespace
}  // namespace runnel
