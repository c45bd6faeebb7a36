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

// The grammar of any JSON object (response_format {"type": "json_object"}).
std::string json_object_grammar();

}  // namespace runnel
