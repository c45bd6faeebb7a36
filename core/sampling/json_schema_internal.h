// Pieces of the JSON Schema converter (json_schema.cpp) that produce GBNF text for one
// kind of value: number ranges (json_schema_numbers.cpp), string patterns and formats
// (json_schema_strings.cpp). Internal to core/sampling.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace runnel::json_schema_detail {

// Sorted, disjoint, inclusive code-point ranges.
using CodeRanges = std::vector<std::pair<uint32_t, uint32_t>>;

// "..." with the GBNF escapes for quote, backslash and control bytes.
std::string gbnf_literal(std::string_view bytes);
// [...] over the ranges (non-empty), or [^...] when `negate`.
std::string gbnf_class(const CodeRanges& ranges, bool negate = false);

// Integers in [lo, hi] (either bound optional) written without leading zeros or
// exponent; an unbounded side is limited to kMaxIntegerDigits digits.
inline constexpr int kMaxIntegerDigits = 16;
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

// Numbers between integral bounds (each optional, exclusive or not), written as
// -?int(.frac)? with at most kMaxRangedFractionDigits fraction digits.
inline constexpr int kMaxRangedFractionDigits = 6;
struct NumberBound {
  int64_t value;
  bool exclusive;
};
// Empty when no number lies in the range.
std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

// The content of a JSON string (between its quotes) whose decoded text matches the
// ECMAScript regex `pattern` (search semantics: unanchored sides match anything).
// `json_char` is the rule of one JSON-encoded character. Throws std::invalid_argument
// naming the unsupported construct.
std::string pattern_gbnf(std::string_view pattern, const std::string& json_char);

// The content of a JSON string in one of the formats "date", "time", "date-time",
// "uuid"; empty for other formats.
std::string format_gbnf(std::string_view format);

}  // namespace runnel::json_schema_detail
