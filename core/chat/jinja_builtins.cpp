#include "core/chat/jinja_builtins.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace runnel::jinja {
namespace {

constexpr std::string_view kFilters[] = {
    "trim", "tojson", "length", "count", "upper", "lower", "capitalize", "title", "replace", "first",
    "last", "join", "default", "d", "string", "int", "float", "list", "items", "selectattr",
    "rejectattr", "select", "reject", "map", "safe", "escape", "e", "abs", "unique", "reverse",
    "dictsort", "sort", "indent", "round", "sum", "min", "max", "keys", "values"};
constexpr std::string_view kTests[] = {
    "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "mapping",
    "iterable", "sequence", "callable", "true", "false", "equalto", "eq", "ne", "odd", "even",
    "divisibleby", "lower", "upper", "in", "sameas", "gt", "lt", "ge", "le"};

[[noreturn]] void fail(int line, const std::string& what) {
  throw JinjaError("chat template: " + what + (line > 0 ? " at line " + std::to_string(line) : ""));
}

constexpr std::string_view kWhitespace = " \t\n\r\f\v";  // Python's str.split() / strip()

// A byte table: true for the bytes of `set`.
std::array<bool, 256> byte_set(std::string_view set) {
  std::array<bool, 256> in{};
  for (const unsigned char c : set) in[c] = true;
  return in;
}

// Python's str.strip(chars): a table of the characters to drop (whitespace when `chars`
// is not a string), so that a long `chars` costs one pass, not one pass per character.
std::string strip(const std::string& s, const Value* chars, bool left, bool right, Budget& budget) {
  static const std::array<bool, 256> kWhitespaceSet = byte_set(kWhitespace);
  const bool given = chars && chars->is_string();
  if (given) budget.charge_bytes(chars->as_string().size());
  const std::array<bool, 256> drop = given ? byte_set(chars->as_string()) : kWhitespaceSet;
  const auto dropped = [&](char c) { return drop[static_cast<unsigned char>(c)]; };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && dropped(s[b])) ++b;
  }
  if (right) {
    while (e > b && dropped(s[e - 1])) --e;
  }
  budget.charge_bytes(b + (s.size() - e));  // the characters scanned and dropped
  return s.substr(b, e - b);
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count,
                        std::string_view what, Budget& budget) {
  if (from.empty()) return s;
  std::string out;
  size_t i = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t j = s.find(from, i);
    if (j == std::string::npos) break;
    // Each replacement may grow the text: a 1-byte match replaced by a long string.
    check_string_size(out.size() + (j - i) + to.size(), what);
    budget.charge(1 + static_cast<int64_t>(to.size() / kBytesPerStep));
    out.append(s, i, j - i);
    out += to;
    i = j + from.size();
    ++done;
  }
  check_string_size(out.size() + (s.size() - i), what);
  return out + s.substr(i);
}

std::string title_case(const std::string& s) {
  std::string out = s;
  bool start = true;
  for (char& c : out) {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      c = static_cast<char>(start ? std::toupper(static_cast<unsigned char>(c))
                                  : std::tolower(static_cast<unsigned char>(c)));
      start = false;
    } else {
      start = true;
    }
  }
  return out;
}

std::string map_chars(std::string s, int (*fn)(int)) {
  for (char& c : s) c = static_cast<char>(fn(static_cast<unsigned char>(c)));
  return s;
}

const Value* kwarg(const KwArgs& kwargs, std::string_view name) {
  for (const auto& [k, v] : kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

const Value* arg(const std::vector<Value>& args, const KwArgs& kwargs, size_t i, std::string_view name) {
  if (i < args.size()) return &args[i];
  return kwarg(kwargs, name);
}

List as_items(const Value& v, int line, std::string_view what) {
  if (v.is_string()) check_list_size(v.as_string().size(), what);
  if (v.is_list()) return v.as_list();
  if (v.is_dict()) {
    List keys;
    for (const auto& [k, item] : v.as_dict().items) keys.emplace_back(k);
    return keys;
  }
  if (v.is_string()) {
    List chars;
    for (char c : v.as_string()) chars.emplace_back(std::string(1, c));
    return chars;
  }
  if (v.is_undefined() || v.is_none()) return {};
  fail(line, std::string(what) + " needs a list, got " + std::string(v.type_name()));
}

// Attribute path "a.b" on dicts.
Value attribute(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    const std::string key = path.substr(start, dot - start);
    if (!cur.is_dict()) return Value();
    const Value* next = cur.as_dict().find(key);
    if (!next) return Value();
    cur = *next;
    start = dot + 1;
  }
  return cur;
}

int compare_values(const Value& a, const Value& b, int line) {
  if (a.is_number() && b.is_number()) return a.as_number() < b.as_number() ? -1 : a.as_number() > b.as_number();
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string());
  fail(line, "cannot compare " + std::string(a.type_name()) + " and " + std::string(b.type_name()));
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (out.size() > kMaxStringBytes) check_string_size(out.size(), "filter 'escape'");
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

void check_expr(const Expr& e) {
  if (e.kind == Expr::Kind::Filter &&
      std::find(std::begin(kFilters), std::end(kFilters), e.name) == std::end(kFilters)) {
    fail(e.line, "unsupported filter '" + e.name + "'");
  }
  if (e.kind == Expr::Kind::Test &&
      std::find(std::begin(kTests), std::end(kTests), e.name) == std::end(kTests)) {
    fail(e.line, "unsupported test '" + e.name + "'");
  }
  for (const auto& a : e.args) {
    if (a) check_expr(*a);
  }
  for (const auto& [k, v] : e.kwargs) check_expr(*v);
}

}  // namespace

void check_names(const Body& body) {
  for (const Stmt& s : body) {
    if (s.expr) check_expr(*s.expr);
    if (s.filter) check_expr(*s.filter);
    for (const auto& [cond, b] : s.branches) {
      if (cond) check_expr(*cond);
      check_names(b);
    }
    for (const auto& [name, def] : s.params) {
      if (def) check_expr(*def);
    }
    check_names(s.body);
    check_names(s.else_body);
  }
}

std::string format_time(const std::string& format, int64_t unix_seconds) {
  static constexpr const char* kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                            "July",    "August",   "September", "October", "November", "December"};
  static constexpr const char* kDays[] = {"Thursday", "Friday",  "Saturday", "Sunday",
                                          "Monday",   "Tuesday", "Wednesday"};
  int64_t days = unix_seconds >= 0 ? unix_seconds / 86400 : -((-unix_seconds + 86399) / 86400);
  const int64_t secs = unix_seconds - days * 86400;
  const int weekday = static_cast<int>(((days % 7) + 7) % 7);  // 0 = Thursday (1970-01-01)
  // Days since 1970-01-01 -> civil date (proleptic Gregorian), via 400-year eras.
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  const int64_t year = yoe + era * 400 + (month <= 2);
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  static constexpr int kCumulative[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  const int yday = kCumulative[month - 1] + day + (leap && month > 2);
  std::string out;
  char buf[32];
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 == format.size()) {
      out += format[i];
      continue;
    }
    const char c = format[++i];
    switch (c) {
      case 'd': std::snprintf(buf, sizeof buf, "%02d", day); out += buf; break;
      case 'm': std::snprintf(buf, sizeof buf, "%02d", month); out += buf; break;
      case 'Y': out += std::to_string(year); break;
      case 'y': std::snprintf(buf, sizeof buf, "%02d", static_cast<int>(year % 100)); out += buf; break;
      case 'B': out += kMonths[month - 1]; break;
      case 'b': out += std::string(kMonths[month - 1]).substr(0, 3); break;
      case 'A': out += kDays[weekday]; break;
      case 'a': out += std::string(kDays[weekday]).substr(0, 3); break;
      case 'H': std::snprintf(buf, sizeof buf, "%02d", static_cast<int>(secs / 3600)); out += buf; break;
      case 'M': std::snprintf(buf, sizeof buf, "%02d", static_cast<int>(secs / 60 % 60)); out += buf; break;
      case 'S': std::snprintf(buf, sizeof buf, "%02d", static_cast<int>(secs % 60)); out += buf; break;
      case 'j': std::snprintf(buf, sizeof buf, "%03d", yday); out += buf; break;
      case '%': out += '%'; break;
      default: fail(0, std::string("strftime_now: unsupported format '%") + c + "'");
    }
  }
  return out;
}

std::vector<std::pair<std::string, Value>> builtin_globals(int64_t now) {
  std::vector<std::pair<std::string, Value>> g;
  g.emplace_back("raise_exception", Value(Callable([](std::vector<Value>& args, KwArgs&) -> Value {
    throw JinjaError(args.empty() ? "chat template raised an exception" : args[0].to_output());
  })));
  g.emplace_back("range", Value(Callable([](std::vector<Value>& args, KwArgs&) -> Value {
    int64_t start = 0, stop = 0, step = 1;
    for (const Value& a : args) {
      if (a.kind() != Value::Kind::Int) fail(0, "range() needs integers");
    }
    if (args.size() == 1) stop = args[0].as_int();
    else if (args.size() >= 2) {
      start = args[0].as_int();
      stop = args[1].as_int();
      if (args.size() == 3) step = args[2].as_int();
    } else {
      fail(0, "range() needs 1 to 3 arguments");
    }
    if (step == 0) fail(0, "range() step cannot be zero");
    // The item count, in unsigned arithmetic: stop - start may not fit in 64 signed bits.
    uint64_t n = 0;
    if (step > 0 && stop > start) {
      n = (static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) / static_cast<uint64_t>(step) + 1;
    } else if (step < 0 && start > stop) {
      const uint64_t down = static_cast<uint64_t>(-(step + 1)) + 1;  // |step|, also for INT64_MIN
      n = (static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) / down + 1;
    }
    if (n > static_cast<uint64_t>(kMaxRangeLength)) {
      fail(0, "range() would make " + std::to_string(n) + " items; at most " + std::to_string(kMaxRangeLength) +
                  " are allowed");
    }
    List l;
    l.reserve(n);
    for (uint64_t k = 0; k < n; ++k) {
      l.emplace_back(static_cast<int64_t>(static_cast<uint64_t>(start) + k * static_cast<uint64_t>(step)));
    }
    return Value(std::move(l));
  })));
  g.emplace_back("namespace", Value(Callable([](std::vector<Value>& args, KwArgs& kwargs) -> Value {
    Dict d;
    d.is_namespace = true;
    for (const Value& a : args) {
      if (!a.is_dict()) fail(0, "namespace() takes keyword arguments or a dict");
      for (const auto& [k, v] : a.as_dict().items) d.set(k, v);
    }
    for (auto& [k, v] : kwargs) d.set(k, v);
    return Value(std::move(d));
  })));
  g.emplace_back("dict", Value(Callable([](std::vector<Value>&, KwArgs& kwargs) -> Value {
    Dict d;
    for (auto& [k, v] : kwargs) d.set(k, v);
    return Value(std::move(d));
  })));
  g.emplace_back("strftime_now", Value(Callable([now](std::vector<Value>& args, KwArgs&) -> Value {
    if (args.size() != 1 || !args[0].is_string()) fail(0, "strftime_now() takes one format string");
    return Value(format_time(args[0].as_string(), now));
  })));
  return g;
}

bool apply_test(const std::string& name, const Value& v, std::vector<Value>& args, int line, Budget& budget) {
  const auto need = [&](size_t n) {
    if (args.size() < n) fail(line, "test '" + name + "' needs an argument");
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == Value::Kind::Int;
  if (name == "float") return v.kind() == Value::Kind::Float;
  if (name == "boolean") return v.kind() == Value::Kind::Bool;
  if (name == "mapping") return v.is_dict();
  if (name == "iterable" || name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "callable") return v.is_callable();
  if (name == "true") return v.kind() == Value::Kind::Bool && v.as_bool();
  if (name == "false") return v.kind() == Value::Kind::Bool && !v.as_bool();
  if (name == "odd" || name == "even") {
    if (v.kind() != Value::Kind::Int) fail(line, "test '" + name + "' needs an integer");
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    const std::string s = v.as_string();
    return s == map_chars(s, name == "lower" ? ::tolower : ::toupper);
  }
  need(1);
  const Value& other = args[0];
  if (name == "equalto" || name == "eq" || name == "sameas") return equal(v, other, &budget);
  if (name == "ne") return !equal(v, other, &budget);
  if (name == "divisibleby") {
    if (v.kind() != Value::Kind::Int || other.kind() != Value::Kind::Int || other.as_int() == 0) {
      fail(line, "test 'divisibleby' needs non-zero integers");
    }
    return other.as_int() == -1 || v.as_int() % other.as_int() == 0;  // INT64_MIN % -1 overflows
  }
  if (name == "in") {
    budget.charge(other.weight());
    if (other.is_string()) return v.is_string() && other.as_string().find(v.as_string()) != std::string::npos;
    if (other.is_list()) {
      for (const Value& item : other.as_list()) {
        if (equal(item, v, &budget)) return true;
      }
      return false;
    }
    if (other.is_dict()) return v.is_string() && other.as_dict().find(v.as_string());
    return false;
  }
  const int c = compare_values(v, other, line);
  if (name == "gt") return c > 0;
  if (name == "lt") return c < 0;
  if (name == "ge") return c >= 0;
  if (name == "le") return c <= 0;
  fail(line, "unsupported test '" + name + "'");
}

Value apply_filter(const std::string& name, const Value& input, std::vector<Value>& args, KwArgs& kwargs,
                   int line, Budget& budget, const TestFn& test) {
  // Jinja's string filters take str() of anything (soft_str): undefined|trim is "".
  const auto need_string = [&]() -> std::string {
    return input.is_string() ? input.as_string() : input.to_output(&budget);
  };
  if (name == "trim") return Value(strip(need_string(), arg(args, kwargs, 0, "chars"), true, true, budget));
  if (name == "upper") return Value(map_chars(need_string(), ::toupper));
  if (name == "lower") return Value(map_chars(need_string(), ::tolower));
  if (name == "title") return Value(title_case(need_string()));
  if (name == "capitalize") {
    std::string s = map_chars(need_string(), ::tolower);
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return Value(std::move(s));
  }
  if (name == "replace") {
    if (args.size() < 2 || !args[0].is_string() || !args[1].is_string()) {
      fail(line, "filter 'replace' needs two strings");
    }
    const int64_t count = args.size() > 2 && args[2].kind() == Value::Kind::Int ? args[2].as_int() : -1;
    return Value(replace_all(need_string(), args[0].as_string(), args[1].as_string(), count, "filter 'replace'",
                             budget));
  }
  if (name == "safe") return input;
  if (name == "escape" || name == "e") return Value(html_escape(input.to_output(&budget)));
  if (name == "string") return Value(input.to_output(&budget));
  if (name == "tojson") {
    const Value* indent = arg(args, kwargs, 0, "indent");
    // Beyond the longest string any indent fails anyway; clamped so the int holds it.
    const int64_t width = indent && indent->kind() == Value::Kind::Int
                              ? std::clamp<int64_t>(indent->as_int(), -1, int64_t{kMaxStringBytes} + 1)
                              : -1;
    return Value(input.to_json(static_cast<int>(width), &budget));
  }
  if (name == "default" || name == "d") {
    const Value* fallback = arg(args, kwargs, 0, "default_value");
    const Value* boolean = arg(args, kwargs, 1, "boolean");
    const bool use = boolean && boolean->truthy() ? !input.truthy() : input.is_undefined();
    return use ? (fallback ? *fallback : Value(std::string())) : input;
  }
  if (name == "length" || name == "count") {
    if (input.is_string()) return Value(static_cast<int64_t>(input.as_string().size()));
    if (input.is_list()) return Value(static_cast<int64_t>(input.as_list().size()));
    if (input.is_dict()) return Value(static_cast<int64_t>(input.as_dict().items.size()));
    if (input.is_undefined()) return Value(int64_t{0});
    fail(line, "filter 'length' needs a string, list or dict, got " + std::string(input.type_name()));
  }
  if (name == "int") {
    if (input.kind() == Value::Kind::Int) return input;
    if (input.is_number()) {
      // Python's int() of a float beyond 64 bits is a big int; ours refuses it (and nan).
      const double d = input.as_number();
      if (!(d > -9.2233720368547758e18 && d < 9.2233720368547758e18)) {
        fail(line, "filter 'int': " + format_float(d) + " does not fit in 64 bits");
      }
      return Value(static_cast<int64_t>(d));
    }
    if (input.is_string()) return Value(static_cast<int64_t>(std::strtoll(input.as_string().c_str(), nullptr, 10)));
    if (input.kind() == Value::Kind::Bool) return Value(static_cast<int64_t>(input.as_bool()));
    return Value(int64_t{0});
  }
  if (name == "float") {
    if (input.is_number()) return Value(input.as_number());
    if (input.is_string()) return Value(std::strtod(input.as_string().c_str(), nullptr));
    return Value(0.0);
  }
  if (name == "abs") {
    if (input.kind() == Value::Kind::Int) {
      if (input.as_int() == INT64_MIN) fail(line, "filter 'abs': integer overflow (more than 64 bits)");
      return Value(input.as_int() < 0 ? -input.as_int() : input.as_int());
    }
    if (input.is_number()) return Value(std::fabs(input.as_number()));
    fail(line, "filter 'abs' needs a number");
  }
  if (name == "round") {
    if (!input.is_number()) fail(line, "filter 'round' needs a number");
    const Value* precision = arg(args, kwargs, 0, "precision");
    const double scale = std::pow(10.0, precision && precision->kind() == Value::Kind::Int ? precision->as_int() : 0);
    return Value(std::round(input.as_number() * scale) / scale);
  }
  if (name == "indent") {
    const Value* width = arg(args, kwargs, 0, "width");
    const Value* first = arg(args, kwargs, 1, "first");
    const int64_t n_pad = width && width->kind() == Value::Kind::Int ? std::max<int64_t>(0, width->as_int()) : 4;
    check_string_size(static_cast<uint64_t>(n_pad), "filter 'indent'");  // before allocating
    const std::string pad(static_cast<size_t>(n_pad), ' ');
    const std::string& s = need_string();
    std::string out = first && first->truthy() ? pad : "";
    for (size_t i = 0; i < s.size(); ++i) {
      out += s[i];
      if (s[i] == '\n' && i + 1 < s.size() && s[i + 1] != '\n') {
        check_string_size(out.size() + pad.size(), "filter 'indent'");
        budget.charge_bytes(pad.size());
        out += pad;
      }
    }
    return Value(std::move(out));
  }
  if (name == "items") {
    if (input.is_undefined() || input.is_none()) return Value(List{});
    if (!input.is_dict()) fail(line, "filter 'items' needs a dict, got " + std::string(input.type_name()));
    List l;
    for (const auto& [k, v] : input.as_dict().items) l.emplace_back(List{Value(k), v});
    return Value(std::move(l));
  }
  if (name == "keys" || name == "values") {
    if (!input.is_dict()) fail(line, "filter '" + name + "' needs a dict");
    List l;
    for (const auto& [k, v] : input.as_dict().items) l.push_back(name == "keys" ? Value(k) : v);
    return Value(std::move(l));
  }
  if (name == "dictsort") {
    if (!input.is_dict()) fail(line, "filter 'dictsort' needs a dict");
    auto items = input.as_dict().items;
    std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    List l;
    for (const auto& [k, v] : items) l.emplace_back(List{Value(k), v});
    return Value(std::move(l));
  }
  // Without copying the list (or splitting a long string into a list of characters).
  if ((name == "first" || name == "last") && input.is_list()) {
    const List& l = input.as_list();
    return l.empty() ? Value() : (name == "first" ? l.front() : l.back());
  }
  if ((name == "first" || name == "last") && input.is_string()) {
    const std::string& text = input.as_string();
    return text.empty() ? Value() : Value(std::string(1, name == "first" ? text.front() : text.back()));
  }
  if (name == "reverse" && input.is_string()) {
    return Value(std::string(input.as_string().rbegin(), input.as_string().rend()));
  }
  List items = as_items(input, line, "filter '" + name + "'");
  if (name == "list") return Value(std::move(items));
  if (name == "first") return items.empty() ? Value() : items.front();
  if (name == "last") return items.empty() ? Value() : items.back();
  if (name == "reverse") {
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "join") {
    const Value* sep = arg(args, kwargs, 0, "d");
    const Value* attr = kwarg(kwargs, "attribute");
    const std::string separator = sep ? sep->to_output(&budget) : "";
    const std::string path = attr ? attr->to_output(&budget) : "";
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += separator;
      out += (attr ? attribute(items[i], path) : items[i]).to_output(&budget);
      check_string_size(out.size(), "filter 'join'");
      budget.charge_bytes(separator.size());
    }
    return Value(std::move(out));
  }
  if (name == "unique") {
    List out;
    for (const Value& v : items) {
      // Quadratic: every item is compared with those kept, each comparison paid for.
      bool seen = false;
      for (const Value& kept : out) {
        if ((seen = equal(kept, v, &budget))) break;
      }
      if (!seen) out.push_back(v);
    }
    return Value(std::move(out));
  }
  if (name == "sort") {
    const Value* reverse = arg(args, kwargs, 0, "reverse");
    const Value* attr = kwarg(kwargs, "attribute");
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      budget.charge(1);
      const Value x = attr ? attribute(a, attr->to_output()) : a;
      const Value y = attr ? attribute(b, attr->to_output()) : b;
      return compare_values(x, y, line) < 0;
    });
    if (reverse && reverse->truthy()) std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "sum" || name == "min" || name == "max") {
    if (items.empty()) return name == "sum" ? Value(int64_t{0}) : Value();
    Value acc = items[0];
    for (size_t i = 1; i < items.size(); ++i) {
      const Value& v = items[i];
      if (name == "sum") {
        if (!acc.is_number() || !v.is_number()) fail(line, "filter 'sum' needs numbers");
        int64_t r = 0;
        if (acc.kind() == Value::Kind::Int && v.kind() == Value::Kind::Int) {
          if (__builtin_add_overflow(acc.as_int(), v.as_int(), &r)) fail(line, "filter 'sum': integer overflow (more than 64 bits)");
          acc = Value(r);
        } else {
          acc = Value(acc.as_number() + v.as_number());
        }
      } else if ((compare_values(v, acc, line) < 0) == (name == "min")) {
        acc = v;
      }
    }
    return acc;
  }
  if (name == "map") {
    const Value* attr = kwarg(kwargs, "attribute");
    List out;
    for (const Value& v : items) {
      if (attr) {
        out.push_back(attribute(v, attr->to_output()));
      } else if (!args.empty() && args[0].is_string()) {
        std::vector<Value> rest(args.begin() + 1, args.end());
        KwArgs none;
        budget.charge(1 + v.weight());
        out.push_back(apply_filter(args[0].as_string(), v, rest, none, line, budget, test));
      } else {
        fail(line, "filter 'map' needs attribute= or a filter name");
      }
    }
    return Value(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    const bool by_attr = name == "selectattr" || name == "rejectattr";
    const bool keep_if = name == "select" || name == "selectattr";
    size_t next = 0;
    std::string attr;
    if (by_attr) {
      if (args.empty() || !args[0].is_string()) fail(line, "filter '" + name + "' needs an attribute name");
      attr = args[next++].as_string();
    }
    std::string test_name;
    if (next < args.size()) {
      if (!args[next].is_string()) fail(line, "filter '" + name + "' needs a test name");
      test_name = args[next++].as_string();
      if (std::find(std::begin(kTests), std::end(kTests), test_name) == std::end(kTests)) {
        fail(line, "unsupported test '" + test_name + "'");
      }
    }
    std::vector<Value> test_args(args.begin() + static_cast<std::ptrdiff_t>(next), args.end());
    List out;
    for (const Value& v : items) {
      const Value subject = by_attr ? attribute(v, attr) : v;
      const bool pass = test_name.empty() ? subject.truthy() : test(test_name, subject, test_args);
      if (pass == keep_if) out.push_back(v);
    }
    return Value(std::move(out));
  }
  fail(line, "unsupported filter '" + name + "'");
}

Value call_method(const Value& obj, const std::string& name, std::vector<Value>& args, KwArgs& kwargs, int line,
                  Budget& budget) {
  if (obj.is_string()) {
    const std::string& s = obj.as_string();
    const Value* a0 = arg(args, kwargs, 0, "");
    if (name == "strip") return Value(strip(s, a0, true, true, budget));
    if (name == "lstrip") return Value(strip(s, a0, true, false, budget));
    if (name == "rstrip") return Value(strip(s, a0, false, true, budget));
    if (name == "upper") return Value(map_chars(s, ::toupper));
    if (name == "lower") return Value(map_chars(s, ::tolower));
    if (name == "title") return Value(title_case(s));
    if (name == "capitalize") {
      std::vector<Value> none;
      KwArgs nokw;
      return apply_filter("capitalize", obj, none, nokw, line, budget, nullptr);
    }
    if (name == "startswith" || name == "endswith") {
      if (!a0 || !a0->is_string()) fail(line, "str." + name + "() needs a string");
      const std::string& p = a0->as_string();
      if (p.size() > s.size()) return Value(false);
      return Value(name == "startswith" ? s.compare(0, p.size(), p) == 0
                                        : s.compare(s.size() - p.size(), p.size(), p) == 0);
    }
    if (name == "replace") {
      if (args.size() < 2 || !args[0].is_string() || !args[1].is_string()) fail(line, "str.replace() needs two strings");
      const int64_t count = args.size() > 2 && args[2].kind() == Value::Kind::Int ? args[2].as_int() : -1;
      return Value(replace_all(s, args[0].as_string(), args[1].as_string(), count, "str.replace()", budget));
    }
    if (name == "find") {
      if (!a0 || !a0->is_string()) fail(line, "str.find() needs a string");
      const size_t at = s.find(a0->as_string());
      return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(at));
    }
    if (name == "count") {
      if (!a0 || !a0->is_string() || a0->as_string().empty()) fail(line, "str.count() needs a non-empty string");
      int64_t n = 0;
      for (size_t at = s.find(a0->as_string()); at != std::string::npos; at = s.find(a0->as_string(), at + a0->as_string().size())) ++n;
      return Value(n);
    }
    if (name == "split") {
      const Value* maxsplit = arg(args, kwargs, 1, "maxsplit");
      const int64_t max_splits = maxsplit && maxsplit->kind() == Value::Kind::Int ? maxsplit->as_int() : -1;
      if (a0 && !a0->is_none() && (!a0->is_string() || a0->as_string().empty())) {
        fail(line, "str.split() needs a non-empty separator");
      }
      // Calls part(begin, length) for each part, as Python's split does.
      const auto each_part = [&](const auto& part) {
        int64_t left = max_splits;
        if (!a0 || a0->is_none()) {
          // Python: split on runs of whitespace, dropping empty parts.
          for (size_t i = s.find_first_not_of(kWhitespace); i != std::string::npos;) {
            if (left == 0) {
              part(i, s.find_last_not_of(kWhitespace) + 1 - i);
              return;
            }
            const size_t j = std::min(s.find_first_of(kWhitespace, i), s.size());
            part(i, j - i);
            --left;
            i = s.find_first_not_of(kWhitespace, j);
          }
          return;
        }
        const std::string& sep = a0->as_string();
        for (size_t i = 0;;) {
          const size_t j = left == 0 ? std::string::npos : s.find(sep, i);
          if (j == std::string::npos) {
            part(i, s.size() - i);
            return;
          }
          part(i, j - i);
          i = j + sep.size();
          --left;
        }
      };
      // Counted first, so that a string of a million separators fails before building;
      // each of the two passes scans the whole string.
      budget.charge_bytes(2 * s.size());
      size_t n_parts = 0;
      each_part([&](size_t, size_t) { ++n_parts; });
      check_list_size(n_parts, "str.split()");
      budget.charge(static_cast<int64_t>(n_parts));
      List parts;
      parts.reserve(n_parts);
      each_part([&](size_t begin, size_t length) { parts.emplace_back(s.substr(begin, length)); });
      return Value(std::move(parts));
    }
    if (name == "join") {
      if (!a0) fail(line, "str.join() needs a list");
      std::string out;
      const List items = as_items(*a0, line, "str.join()");
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += s;
        out += items[i].to_output(&budget);
        check_string_size(out.size(), "str.join()");
        budget.charge_bytes(s.size());
      }
      return Value(std::move(out));
    }
    fail(line, "unsupported string method '" + name + "'");
  }
  if (obj.is_dict()) {
    const Dict& d = obj.as_dict();
    if (name == "items" || name == "keys" || name == "values") {
      List l;
      for (const auto& [k, v] : d.items) {
        if (name == "items") l.emplace_back(List{Value(k), v});
        else l.push_back(name == "keys" ? Value(k) : v);
      }
      return Value(std::move(l));
    }
    if (name == "get") {
      if (args.empty() || !args[0].is_string()) fail(line, "dict.get() needs a string key");
      const Value* v = d.find(args[0].as_string());
      return v ? *v : (args.size() > 1 ? args[1] : Value::none());
    }
    fail(line, "unsupported dict method '" + name + "'");
  }
  if (obj.is_list()) {
    if (name == "append") {
      if (args.size() != 1) fail(line, "list.append() takes one argument");
      check_list_size(obj.as_list().size() + 1, "list.append()");
      if (holds(args[0], obj, budget)) fail(line, "list.append() would put the list inside itself");
      obj.as_list().push_back(args[0]);
      return Value::none();
    }
    if (name == "index") {
      if (args.size() != 1) fail(line, "list.index() takes one argument");
      const List& l = obj.as_list();
      for (size_t i = 0; i < l.size(); ++i) {
        if (equal(l[i], args[0], &budget)) return Value(static_cast<int64_t>(i));
      }
      fail(line, "list.index(): value not in list");
    }
    fail(line, "unsupported list method '" + name + "'");
  }
  fail(line, "'" + name + "' is not a method of " + std::string(obj.type_name()));
}

}  // namespace runnel::jinja
