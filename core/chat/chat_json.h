// JSON text <-> Jinja values, for what reaches a template as JSON (tool schemas, tool
// call arguments). Key order is kept, as Python's json.loads keeps it, so `tojson`
// prints a schema in the order the client sent it.
#pragma once

#include <optional>
#include <string_view>

#include "core/chat/jinja_value.h"

namespace runnel::chat_json {

// The Jinja value of a JSON text; nullopt when it is not valid JSON.
std::optional<jinja::Value> parse(std::string_view text);

}  // namespace runnel::chat_json
