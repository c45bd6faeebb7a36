// A JSON scanner for text that is still being generated: where a value ends, whether
// what is there so far can still become valid JSON, and the members of a (possibly
// unfinished) object. The tool-call parsers find calls in model output with it, and
// stream arguments as raw slices of the model's own text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace runnel::json_scan {

enum class State {
  Complete,    // a whole, valid value ends at `end`
  Incomplete,  // valid so far, the text ends inside the value (end == text size)
  Invalid,     // not JSON; `end` is where it went wrong
};

struct Scan {
  State state;
  size_t end;
};

// The value starting at `pos` (no leading whitespace skipped).
Scan scan_value(std::string_view text, size_t pos);

size_t skip_whitespace(std::string_view text, size_t pos);

struct Member {
  std::string key;
  size_t value_begin = 0, value_end = 0;  // [begin, end) of the raw value text
  bool complete = false;                  // false: the text ends inside this value
};

// An object starting at `pos` ('{'): its members so far. Complete: the object closes
// at `end`; Incomplete: the text ends inside it (the last member may be unfinished, and
// a key not yet followed by ':' is not listed).
struct ObjectScan {
  State state;
  size_t end;
  std::vector<Member> members;
  const Member* find(std::string_view key) const;
};
ObjectScan scan_object(std::string_view text, size_t pos);

// The string a complete JSON string literal holds; nullopt when it is not one.
std::optional<std::string> decode_string(std::string_view literal);

// `s` as the inside of a JSON string literal (no quotes), as Python's json.dumps with
// ensure_ascii=False writes it (tojson uses it too); byte by byte, so the escaping of a
// prefix is a prefix of the escaping.
std::string escape_string(std::string_view s);

}  // namespace runnel::json_scan
