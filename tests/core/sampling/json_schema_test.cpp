// JSON Schema -> GBNF: grammars parse, accept and reject hand-written documents per
// keyword, refuse what is not supported by name, and random walks under 20+ schemas
// always produce documents that parse and validate (json_schema_validator.h).
#include "core/sampling/json_schema.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "tests/core/sampling/grammar_test_util.h"
#include "tests/core/sampling/json_schema_validator.h"

namespace runnel {
namespace {

using grammar_test::compile;
using grammar_test::matches;
using nlohmann::json;

std::shared_ptr<const Grammar> schema_grammar(const json& schema) {
  const std::string text = json_schema_to_grammar(schema);
  INFO(text);
  return compile(text);
}

std::string refusal(const json& schema) {
  try {
    json_schema_to_grammar(schema);
  } catch (const JsonSchemaError& e) {
    return e.what();
  }
  return "(accepted)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("json_schema: objects keep required keys in order, optional ones may follow", "[json-schema]") {
  const auto g = schema_grammar(json::parse(R"({"type": "object",
      "properties": {"b": {"type": "integer"}, "a": {"type": "string"}, "c": {"type": "boolean"}},
      "required": ["b", "a"]})"));
  CHECK(matches(g, R"({"b": 1, "a": "x"})"));
  CHECK(matches(g, "{\n  \"b\": -3,\n  \"a\": \"\",\n  \"c\": true\n}"));
  CHECK_FALSE(matches(g, R"({"a": "x", "b": 1})"));       // required order
  CHECK_FALSE(matches(g, R"({"b": 1})"));                 // missing a
  CHECK_FALSE(matches(g, R"({"b": 1, "a": "x", "d": 1})"));  // no additional properties by default
  CHECK_FALSE(matches(g, R"({"b": 1.5, "a": "x"})"));
  CHECK_FALSE(matches(g, R"({"b": 1, "a": "x", "c": true, "c": true})"));
}

TEST_CASE("json_schema: additionalProperties", "[json-schema]") {
  const auto open = schema_grammar(json::parse(R"({"properties": {"a": {"type": "integer"}, "ab": {"type": "null"}},
      "additionalProperties": true})"));
  CHECK(matches(open, R"({"a": 1, "x": [1, {"y": null}], "abc": 2, "": "s"})"));
  CHECK(matches(open, R"({"zz": 1})"));
  CHECK_FALSE(matches(open, R"({"b": 1, "a": 2})"));  // declared keys only in their place
  CHECK_FALSE(matches(open, R"({"a": 1, "ab": "no"})"));
  CHECK_FALSE(matches(open, R"({"a": 1, "a": 2})"));
  CHECK_FALSE(matches(open, R"({"x": 1, "ab": 2})"));
  const auto typed = schema_grammar(json::parse(R"({"type": "object", "additionalProperties": {"type": "integer"}})"));
  CHECK(matches(typed, R"({"k": 1, "l": 2})"));
  CHECK_FALSE(matches(typed, R"({"k": "1"})"));
  const auto closed = schema_grammar(json::parse(R"({"type": "object", "additionalProperties": false})"));
  CHECK(matches(closed, "{}"));
  CHECK_FALSE(matches(closed, R"({"k": 1})"));
  const auto any = schema_grammar(json::parse(R"({"type": "object"})"));
  CHECK(matches(any, R"({"k": {"n": [true, null, -1.5e3]}})"));
  CHECK_FALSE(matches(any, "[]"));
  const auto object = compile(json_object_grammar());
  CHECK(matches(object, R"({"a": 1, "b": "\u00e9"})"));
  CHECK_FALSE(matches(object, R"("a")"));
  CHECK_FALSE(matches(object, R"({"a": "\ud800"})"));  // lone surrogate escapes never parse
}

TEST_CASE("json_schema: enum, const, anyOf, type lists", "[json-schema]") {
  const auto e = schema_grammar(json::parse(R"({"enum": ["a\"b", 1, null, {"k": [true]}]})"));
  CHECK(matches(e, R"("a\"b")"));
  CHECK(matches(e, "1"));
  CHECK(matches(e, "null"));
  CHECK(matches(e, R"({"k":[true]})"));
  CHECK_FALSE(matches(e, "2"));
  const auto typed = schema_grammar(json::parse(R"({"type": "string", "enum": ["x", 1]})"));
  CHECK(matches(typed, R"("x")"));
  CHECK_FALSE(matches(typed, "1"));
  const auto c = schema_grammar(json::parse(R"({"const": 42})"));
  CHECK(matches(c, "42"));
  CHECK_FALSE(matches(c, "43"));
  const auto u = schema_grammar(json::parse(R"({"anyOf": [{"type": "string"}, {"type": "integer", "maximum": 3}]})"));
  CHECK(matches(u, R"("s")"));
  CHECK(matches(u, "-7"));
  CHECK_FALSE(matches(u, "4"));
  const auto t = schema_grammar(json::parse(R"({"type": ["boolean", "null"]})"));
  CHECK(matches(t, "false"));
  CHECK(matches(t, "null"));
  CHECK_FALSE(matches(t, "0"));
}

TEST_CASE("json_schema: oneOf only where no value can match two branches", "[json-schema]") {
  // Disjoint by kind, by const / enum values, by a tagged property both require (through $refs).
  const auto kinds = schema_grammar(json::parse(R"({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})"));
  CHECK(matches(kinds, R"("s")"));
  CHECK(matches(kinds, "3"));
  CHECK(matches(kinds, "null"));
  CHECK(contains(json_schema_to_grammar(json::parse(R"({"oneOf": [{"enum": ["a", 1]}, {"const": "b"}, {"enum": [2, null]}]})")),
                 "root"));
  const auto tagged = schema_grammar(json::parse(R"({"$defs": {
      "circle": {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]},
      "rect": {"type": "object", "properties": {"kind": {"enum": ["rect", "square"]}, "w": {"type": "integer"}}, "required": ["w", "kind"]}},
      "oneOf": [{"$ref": "#/$defs/circle"}, {"$ref": "#/$defs/rect"}]})"));
  CHECK(matches(tagged, R"({"kind": "circle", "r": 1})"));
  CHECK(matches(tagged, R"({"w": 2, "kind": "square"})"));
  // Overlaps that a grammar cannot exclude are refused, naming the branches.
  const std::string numbers = refusal(json::parse(R"({"type": "array", "items": {"oneOf": [
      {"type": "integer", "minimum": 0, "maximum": 5}, {"type": "number", "minimum": 3, "maximum": 8}]}})"));
  CHECK(contains(numbers, "json_schema /items: 'oneOf' branches 0 and 1 may both match one value"));
  CHECK(contains(numbers, "'anyOf'"));
  CHECK(contains(refusal(json::parse(R"({"oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "pattern": "^[a-z]+$"}]})")),
                 "branches 0 and 1"));
  CHECK(contains(refusal(json::parse(R"({"oneOf": [{"const": 1}, {"type": "string"}, {"enum": ["x", 1]}]})")),
                 "branches 0 and 2"));
  CHECK(contains(refusal(json::parse(R"({"oneOf": [{"type": "object", "properties": {"t": {"const": "a"}}, "required": ["t"]},
      {"type": "object", "properties": {"t": {"const": "b"}}}]})")), "branches 0 and 1"));  // t optional in one
  CHECK(contains(refusal(json::parse(R"({"oneOf": [{}, {"type": "null"}]})")), "branches 0 and 1"));
  // anyOf may overlap.
  CHECK(contains(json_schema_to_grammar(json::parse(R"({"anyOf": [{"type": "integer"}, {"type": "number"}]})")), "root"));
}

TEST_CASE("json_schema: $ref, $defs and recursion; allOf of objects", "[json-schema]") {
  const auto g = schema_grammar(json::parse(R"({"$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
      "required": ["v", "next"]}}, "$ref": "#/$defs/node"})"));
  CHECK(matches(g, R"({"v": 1, "next": {"v": 2, "next": {"v": 3, "next": null}}})"));
  CHECK_FALSE(matches(g, R"({"v": 1, "next": {"v": 2}})"));
  const auto self = schema_grammar(json::parse(R"({"type": "array", "items": {"$ref": "#"}, "maxItems": 2})"));
  CHECK(matches(self, "[[], [[]]]"));
  CHECK_FALSE(matches(self, "[[], [], []]"));
  const auto all = schema_grammar(json::parse(R"({"allOf": [{"$ref": "#/definitions/base"},
      {"properties": {"x": {"type": "string"}}, "required": ["x"]}],
      "definitions": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}})"));
  CHECK(matches(all, R"({"id": 1, "x": "y"})"));
  CHECK_FALSE(matches(all, R"({"id": 1})"));
  CHECK_FALSE(matches(all, R"({"x": "y"})"));
}

TEST_CASE("json_schema: arrays with items and bounds", "[json-schema]") {
  const auto g = schema_grammar(json::parse(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 3})"));
  CHECK(matches(g, "[true]"));
  CHECK(matches(g, "[ true, false ,true ]") == false);  // no space before ','
  CHECK(matches(g, "[true, false, true]"));
  CHECK_FALSE(matches(g, "[]"));
  CHECK_FALSE(matches(g, "[true, true, true, true]"));
  const auto one = schema_grammar(json::parse(R"({"type": "array", "maxItems": 1})"));
  CHECK(matches(one, "[]"));
  CHECK(matches(one, R"([{"a": 1}])"));
  CHECK_FALSE(matches(one, "[1, 2]"));
}

TEST_CASE("json_schema: string lengths, patterns and formats", "[json-schema]") {
  const auto len = schema_grammar(json::parse(R"({"type": "string", "minLength": 2, "maxLength": 3})"));
  CHECK(matches(len, R"("ab")"));
  CHECK(matches(len, R"("\n\u00e9é")"));  // escapes and UTF-8 count as one character
  CHECK_FALSE(matches(len, R"("a")"));
  CHECK_FALSE(matches(len, R"("abcd")"));
  const auto p = schema_grammar(json::parse(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}(x|yz)?$"})"));
  CHECK(matches(p, R"("AB-123")"));
  CHECK(matches(p, R"("AB-123yz")"));
  CHECK_FALSE(matches(p, R"("AB-12")"));
  CHECK_FALSE(matches(p, R"("ab-123")"));
  const auto search = schema_grammar(json::parse(R"({"type": "string", "pattern": "b+c"})"));
  CHECK(matches(search, R"("abbcd")"));
  CHECK_FALSE(matches(search, R"("ac")"));
  const auto quote = schema_grammar(json::parse(R"({"pattern": "^[\"\\\\]\\n.$"})"));
  CHECK(matches(quote, R"("\"\nx")"));
  CHECK(matches(quote, R"("\\\n\"")"));
  CHECK_FALSE(matches(quote, R"("\"\n\n")"));  // '.' is not a line break
  const auto date = schema_grammar(json::parse(R"({"type": "string", "format": "date"})"));
  CHECK(matches(date, R"("2024-02-29")"));
  CHECK(matches(date, R"("2000-02-29")"));
  CHECK_FALSE(matches(date, R"("1900-02-29")"));
  CHECK_FALSE(matches(date, R"("2023-04-31")"));
  CHECK_FALSE(matches(date, R"("2023-13-01")"));
  const auto dt = schema_grammar(json::parse(R"({"format": "date-time"})"));
  CHECK(matches(dt, R"("2023-01-31T23:59:59.123+05:30")"));
  CHECK_FALSE(matches(dt, R"("2023-01-31T24:00:00Z")"));
  const auto uuid = schema_grammar(json::parse(R"({"type": "string", "format": "uuid"})"));
  CHECK(matches(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  CHECK_FALSE(matches(uuid, R"("123e4567e89b12d3a456426614174000")"));
}

TEST_CASE("json_schema: integer and number ranges", "[json-schema]") {
  const auto i = schema_grammar(json::parse(R"({"type": "integer", "minimum": -15, "maximum": 230})"));
  for (int v = -40; v <= 300; ++v) {
    INFO(v);
    CHECK(matches(i, std::to_string(v)) == (v >= -15 && v <= 230));
  }
  CHECK_FALSE(matches(i, "007"));
  CHECK_FALSE(matches(i, "-0"));
  const auto x = schema_grammar(json::parse(R"({"type": "integer", "exclusiveMinimum": 9.5})"));
  CHECK(matches(x, "10"));
  CHECK(matches(x, "123456"));
  CHECK_FALSE(matches(x, "9"));
  CHECK_FALSE(matches(x, "-10"));
  const auto n = schema_grammar(json::parse(R"({"type": "number", "exclusiveMinimum": -1, "maximum": 2})"));
  for (const char* ok : {"-0.999", "0", "0.5", "1.999999", "2", "2.000", "-0.1"}) CHECK(matches(n, ok));
  for (const char* no : {"-1", "-1.0", "2.001", "3", "-2", "2.1"}) {
    INFO(no);
    CHECK_FALSE(matches(n, no));
  }
  // At most 6 fraction digits, next to an open bound too.
  const auto positive = schema_grammar(json::parse(R"({"type": "number", "exclusiveMinimum": 0, "maximum": 1})"));
  CHECK(matches(positive, "0.000001"));
  CHECK(matches(positive, "0.900001"));
  CHECK_FALSE(matches(positive, "0.0009000001"));
  CHECK_FALSE(matches(positive, "0.000900000"));
  CHECK_FALSE(matches(positive, "0.000000"));
  const auto open = schema_grammar(json::parse(R"({"type": "number", "exclusiveMaximum": 0})"));
  CHECK(matches(open, "-0.001"));
  CHECK(matches(open, "-12"));
  CHECK_FALSE(matches(open, "0"));
  CHECK_FALSE(matches(open, "-0"));
  CHECK_FALSE(matches(open, "-0.000"));
}

TEST_CASE("json_schema: what is not supported is refused by name", "[json-schema]") {
  CHECK(refusal(json::parse(R"({"type": "object", "properties": {"a": {"type": "object", "patternProperties": {}}}})")) ==
        "json_schema /properties/a: 'patternProperties' is not supported");
  CHECK(contains(refusal(json::parse(R"({"type": "object", "minProperties": 1})")), "'minProperties'"));
  CHECK(contains(refusal(json::parse(R"({"type": "number", "multipleOf": 2})")), "'multipleOf'"));
  CHECK(contains(refusal(json::parse(R"({"type": "array", "uniqueItems": true})")), "'uniqueItems'"));
  CHECK(contains(refusal(json::parse(R"({"not": {"type": "null"}})")), "'not'"));
  CHECK(contains(refusal(json::parse(R"({"if": {}, "then": {}})")), "'if'"));
  CHECK(contains(refusal(json::parse(R"({"type": "string", "format": "email"})")), "'format' \"email\""));
  CHECK(contains(refusal(json::parse(R"({"type": "string", "pattern": "^(?=a)b$"})")), "lookaround"));
  CHECK(contains(refusal(json::parse(R"({"type": "string", "pattern": "(a)\\1"})")), "backreference"));
  CHECK(contains(refusal(json::parse(R"({"type": "string", "pattern": "a\\bc"})")), "word boundary"));
  CHECK(contains(refusal(json::parse(R"({"type": "string", "pattern": "a^b"})")), "anchor"));
  CHECK(contains(refusal(json::parse(R"({"$ref": "https://example.com/s.json"})")), "$ref 'https://"));
  CHECK(contains(refusal(json::parse(R"({"$ref": "#/$defs/missing"})")), "does not resolve"));
  CHECK(contains(refusal(json::parse(R"({"$ref": "#", "type": "object"})")), "'type' beside '$ref'"));
  CHECK(contains(refusal(json::parse(R"({"anyOf": [{}], "properties": {}})")), "'properties' beside 'anyOf'"));
  CHECK(contains(refusal(json::parse(R"({"type": "object", "items": {}})")), "'items' for type [\"object\"]"));
  CHECK(contains(refusal(json::parse(R"({"type": "number", "minimum": 0.5})")), "fractional 'minimum'"));
  CHECK(contains(refusal(json::parse(R"({"type": "array", "items": [{}]})")), "tuples"));
  CHECK(contains(refusal(json::parse(R"({"type": "array", "maxItems": 5000})")), "'maxItems' above 2000"));
  CHECK(contains(refusal(json::parse(R"({"type": "string", "minLength": 1, "pattern": "a"})")), "combining"));
  CHECK(contains(refusal(json::parse(R"({"type": "integer", "minimum": 5, "maximum": 4})")), "no integer"));
  CHECK(contains(refusal(json::parse(R"({"type": "date"})")), "the type \"date\""));
  CHECK(contains(refusal(json::parse(R"({"allOf": [{"type": "string"}, {"type": "object"}]})")), "allOf"));
  CHECK(contains(refusal(json::parse(R"({"properties": {"a": false}})")), "/properties/a: the schema 'false'"));
  // Annotations are accepted.
  CHECK(refusal(json::parse(R"({"title": "t", "description": "d", "$schema": "s", "$id": "i",
      "examples": [1], "default": 1, "$comment": "c", "type": "integer"})")) == "(accepted)");
}

// ---- random walks: every finished document parses and validates

constexpr int32_t kEos = 0;

std::shared_ptr<const TokenTrie> walk_vocab() {
  std::vector<std::string> texts = {"</s>"};
  for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"{\"", "\": ", "\", \"", "true", "false", "null", "12", "-3", ".5", "e+7", ", ",
                        "\n  ", "\\u00e9", "\\n", "é", "2024-02-29", "T12:00:00Z", "ab", "\"}", "]}"}) {
    texts.push_back(t);
  }
  return grammar_test::make_vocab(texts, {kEos});
}

void check_walks(const json& schema, int n_walks = 40, int max_steps = 240) {
  const std::string text = json_schema_to_grammar(schema);
  INFO("schema " << schema.dump() << "\ngrammar\n" << text);
  const auto g = compile(text);
  static const auto vocab = walk_vocab();
  const std::vector<std::string> closers = {"\"", "}", "]", "0", "1", "a", "A", "-", "x", "y",
                                            "T", "Z", ":", ",", "[", "{", "b", "c", "n", "t"};
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(schema.dump())));
  int n_finished = 0;
  for (int walk = 0; walk < n_walks; ++walk) {
    GrammarMatcher m(g, vocab);
    std::string doc;
    TokenMask mask;
    for (int step = 0; step < max_steps && !m.is_finished(); ++step) {
      m.allowed_tokens(mask);
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < mask.size(); ++id) {
        if (mask.test(id)) allowed.push_back(id);
      }
      REQUIRE_FALSE(allowed.empty());  // a live state always has a way forward
      int32_t pick = allowed[rng() % allowed.size()];
      if (step > max_steps / 4 || (walk % 2 == 1 && step > 8)) {
        if (mask.test(kEos)) {
          pick = kEos;
        } else if (rng() % 10 < 9) {
          // Mostly the first allowed closer, sometimes another one.
          std::vector<int32_t> allowed_closers;
          for (const std::string& c : closers) {
            const int32_t id = static_cast<unsigned char>(c[0]) + 1;
            if (mask.test(id)) allowed_closers.push_back(id);
          }
          if (!allowed_closers.empty()) {
            pick = rng() % 10 < 7 ? allowed_closers[0] : allowed_closers[rng() % allowed_closers.size()];
          }
        }
      }
      REQUIRE(m.accept_token(pick));
      if (pick != kEos) doc += vocab->bytes(pick);
    }
    if (!m.is_finished()) continue;
    ++n_finished;
    INFO("document " << doc);
    json value;
    REQUIRE_NOTHROW(value = json::parse(doc));
    CHECK(json_schema_test::validate(schema, value));
  }
  CHECK(n_finished >= n_walks / 2);
}

TEST_CASE("json_schema: random walks always parse and validate", "[json-schema]") {
  const char* schemas[] = {
      R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 10},
          "age": {"type": "integer", "minimum": 0, "maximum": 150}}, "required": ["name", "age"]})",
      R"({"type": "object", "properties": {"a": {"type": "object", "properties": {"x": {"type": "number"},
          "y": {"type": "boolean"}}, "required": ["x"]}, "b": {"type": "null"}, "c": {"type": "string"}}})",
      R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4})",
      R"({"enum": ["red", "gr\"een", 1, null, {"a": [1, 2]}]})",
      R"({"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "exclusiveMinimum": 0}},
          "required": ["kind", "r"]})",
      R"({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": -5, "maximum": 5}, {"type": "null"}]})",
      R"({"oneOf": [{"type": "object", "properties": {"t": {"const": "a"}}, "required": ["t"]},
          {"type": "object", "properties": {"t": {"const": "b"}, "v": {"type": "integer"}}, "required": ["t", "v"]}]})",
      R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
          "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}}, "required": ["value"]}},
          "$ref": "#/$defs/node"})",
      R"({"type": "object", "properties": {"d": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "time"},
          "dt": {"type": "string", "format": "date-time"}, "u": {"type": "string", "format": "uuid"}},
          "required": ["d", "t", "dt", "u"]})",
      R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3,5}$"})",
      R"({"type": "string", "pattern": "\\d"})",
      R"({"type": "string", "pattern": "x$"})",
      R"({"type": "string", "pattern": "^(foo|ba[rz])(\\.[a-z]+)*\\/?$"})",
      R"({"type": "string", "pattern": "^[\"\\\\\\n a]{1,4}$"})",
      R"({"type": "string", "pattern": "^x.{0,3}y$|^\\w+$"})",
      R"({"type": "array", "items": {"type": "integer", "minimum": -123, "maximum": 4567}})",
      R"({"type": "array", "items": {"anyOf": [{"type": "integer", "exclusiveMinimum": 99}, {"type": "integer", "maximum": -10}]}})",
      R"({"type": "array", "items": {"type": "number", "minimum": -2, "exclusiveMaximum": 3}})",
      R"({"type": "array", "items": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, "maxItems": 3})",
      R"({"type": "string", "minLength": 2, "maxLength": 5})",
      R"({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
          "additionalProperties": {"type": "string", "maxLength": 3}})",
      R"({"type": "object", "properties": {"a": {"type": "boolean"}, "ab": {"type": "boolean"}}, "additionalProperties": true})",
      R"({"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"extra": {"type": "string"}}, "required": ["extra"]}],
          "$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}})",
      R"({"type": ["string", "null"], "maxLength": 2})",
      R"({})",
      R"({"type": "object"})",
      R"({"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 1})",
      R"({"type": "object", "properties": {"n": {"type": "number"}, "b": {"type": "boolean"}, "s": {"type": "string"}},
          "required": ["s", "n", "b"]})",
  };
  for (const char* s : schemas) check_walks(json::parse(s));
}

TEST_CASE("json_schema: json_object_grammar walks give objects", "[json-schema]") {
  const auto g = compile(json_object_grammar());
  CHECK(matches(g, "{}"));
  check_walks(json::parse(R"({"type": "object"})"));
}

}  // namespace
}  // namespace runnel

namespace runnel {

TEST_CASE("json_schema: prefixed rules combine several schemas in one grammar", "[json-schema]") {
  const json a = json::parse(R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}},
      "required": ["n"]})");
  const json b = json::parse(R"({"type": "array", "items": {"type": "string", "enum": ["x", "y"]}})");
  const std::string rules_a = json_schema_rules(a, "t0-");
  const std::string rules_b = json_schema_rules(b, "t1-");
  // Every rule is renamed; literals and classes are untouched.
  for (const std::string* rules : {&rules_a, &rules_b}) {
    size_t line = 0;
    while (line < rules->size()) {
      CHECK(rules->compare(line, 1, "t") == 0);
      line = rules->find('\n', line) + 1;
    }
  }
  CHECK(rules_a.find("t0-root ::= ") != std::string::npos);
  CHECK(rules_b.find("\"\\\"x\\\"\"") != std::string::npos);
  const auto g = compile("root ::= t0-root | \"L\" t1-root\n" + rules_a + rules_b);
  CHECK(matches(g, R"({"n": 4})"));
  CHECK(matches(g, R"(L["x", "y"])"));
  CHECK_FALSE(matches(g, R"({"n": 2})"));
  CHECK_FALSE(matches(g, R"(["x"])"));
  CHECK_FALSE(matches(g, R"(L{"n": 4})"));
  // The unprefixed grammar is unchanged.
  CHECK(json_schema_to_grammar(a).find("root ::= ") == 0);
}

}  // namespace runnel
