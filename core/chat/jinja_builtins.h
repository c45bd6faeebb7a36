// The filters, tests, methods and global functions of the supported Jinja subset.
// check_names() runs at load time so an unsupported filter or test is refused by name
// before anything renders.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/chat/jinja_ast.h"

namespace runnel::jinja {

using KwArgs = std::vector<std::pair<std::string, Value>>;
using TestFn = std::function<bool(const std::string& test, const Value& v, std::vector<Value>& args)>;

// range (at most kMaxRangeLength items), namespace, raise_exception, strftime_now
// (formats `now`, Unix seconds, UTC), dict.
std::vector<std::pair<std::string, Value>> builtin_globals(int64_t now);

// Each pays into `budget` for the work that grows beyond its arguments' size (joins,
// replacements, comparisons, sorting) and refuses strings and lists beyond
// kMaxStringBytes / kMaxListItems before building them (jinja_value.h).
Value apply_filter(const std::string& name, const Value& input, std::vector<Value>& args, KwArgs& kwargs,
                   int line, Budget& budget, const TestFn& test);
bool apply_test(const std::string& name, const Value& v, std::vector<Value>& args, int line, Budget& budget);
Value call_method(const Value& obj, const std::string& name, std::vector<Value>& args, KwArgs& kwargs,
                  int line, Budget& budget);

// Throws JinjaError naming the first unknown filter or test in `body`.
void check_names(const Body& body);

// strftime for the formats templates use (%d %m %Y %y %b %B %a %A %H %M %S %j %%).
std::string format_time(const std::string& format, int64_t unix_seconds);

}  // namespace runnel::jinja
