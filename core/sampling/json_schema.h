// JSON Schema -> GBNF: the grammar that constrains generation to documents valid under
// a schema (`--json-schema`, the server's response_format json_schema / json_object).
// Supported keywords and where the grammar is narrower than the schema: README.md.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace runnel {

// A schema keyword or value the converter does not support (or a malformed schema):
// "json_schema /properties/a: 'patternProperties' is not supported".
class JsonSchemaError : public std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// GBNF text (root rule "root") accepting exactly the JSON documents valid under `schema`
// (whitespace as llama.cpp's converter allows). Throws JsonSchemaError naming the
// unsupported keyword / value and its JSON pointer.
std::string json_schema_to_grammar(const nlohmann::json& schema);

// The same grammar's rules with every rule name prefixed by `prefix` (its root is
// `<prefix>root`), to combine several schemas in one grammar (a tool call's arguments,
// one rule set per tool). `prefix` is made of [a-zA-Z0-9-].
std::string json_schema_rules(const nlohmann::json& schema, const std::string& prefix);

// The grammar of any JSON object (response_format {"type": "json_object"}).
std::string json_object_grammar();

}  // namespace runnel
