#include "core/chat/jinja_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "core/chat/json_scan.h"

namespace runnel::jinja {

void Budget::exhausted() const {
  throw JinjaError("chat template: rendering takes more than " + std::to_string(limit_) +
                   " steps (a loop that runs too long, or values too large?)");
}

void check_string_size(uint64_t n, std::string_view what) {
  if (n > kMaxStringBytes) {
    throw JinjaError("chat template: " + std::string(what) + " would make a string of " + std::to_string(n) +
                     " bytes; at most " + std::to_string(kMaxStringBytes) + " are allowed");
  }
}

void check_list_size(uint64_t n, std::string_view what) {
  if (n > kMaxListItems) {
    throw JinjaError("chat template: " + std::string(what) + " would make a list of " + std::to_string(n) +
                     " items; at most " + std::to_string(kMaxListItems) + " are allowed");
  }
}

namespace {

void check_nesting(int depth, std::string_view what) {
  if (depth > kMaxValueNesting) {
    throw JinjaError("chat template: " + std::string(what) + " of a value nested deeper than " +
                     std::to_string(kMaxValueNesting) + " levels (a list that contains itself?)");
  }
}

}  // namespace

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(key, std::move(v));
}

Value::~Value() {
  if (!list_ && !dict_) return;
  std::vector<Value> pending;
  take_children(pending);
  while (!pending.empty()) {
    Value v = std::move(pending.back());
    pending.pop_back();
    v.take_children(pending);
  }
}

void Value::take_children(std::vector<Value>& out) {
  const auto take = [&](Value& child) {
    if ((child.list_ && !child.list_->empty()) || (child.dict_ && !child.dict_->items.empty())) {
      out.push_back(std::move(child));
    }
  };
  if (list_ && list_.use_count() == 1) {
    for (Value& child : *list_) take(child);
    list_->clear();
  }
  if (dict_ && dict_.use_count() == 1) {
    for (auto& [key, child] : dict_->items) take(child);
    dict_->items.clear();
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool:
    case Kind::Int: return int_ != 0;
    case Kind::Float: return float_ != 0;
    case Kind::String: return !str_->empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return !dict_->items.empty();
    case Kind::Callable: return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "none";
    case Kind::Bool: return "boolean";
    case Kind::Int: return "integer";
    case Kind::Float: return "float";
    case Kind::String: return "string";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Callable: return "callable";
  }
  return "?";
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest digits that read back as d, then Python's repr layout.
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf is "[-]d.ddde[+-]xx": collect the digits and the exponent.
  std::string out;
  std::string digits;
  const char* p = buf;
  if (*p == '-') {
    out.push_back('-');
    ++p;
  }
  for (; *p && *p != 'e'; ++p) {
    if (*p != '.') digits.push_back(*p);
  }
  const int exponent = *p == 'e' ? std::atoi(p + 1) : 0;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out.append("0.");
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out.append(digits);
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out.append(digits);
      out.append(static_cast<size_t>(exponent) + 1 - digits.size(), '0');
      out.append(".0");
    } else {
      out.append(digits, 0, static_cast<size_t>(exponent) + 1);
      out.push_back('.');
      out.append(digits, static_cast<size_t>(exponent) + 1, std::string::npos);
    }
    return out;
  }
  out.push_back(digits[0]);
  if (digits.size() > 1) {
    out.push_back('.');
    out.append(digits, 1, std::string::npos);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent) % 1000);
  out.append(exp_buf);
  return out;
}

int64_t Value::weight() const {
  switch (kind_) {
    case Kind::String: return static_cast<int64_t>(str_->size() / kBytesPerStep);
    case Kind::List: return static_cast<int64_t>(list_->size());
    case Kind::Dict: return static_cast<int64_t>(dict_->items.size());
    default: return 0;
  }
}

namespace {

// Python's str(v), appended to `out`; str(list) and str(dict) use repr of their strings.
void output_value(const Value& v, int depth, Budget* budget, std::string& out) {
  check_nesting(depth, "str()");
  check_string_size(out.size(), "str()");
  if (budget) budget->charge(1);
  const auto repr = [&](const Value& item) {
    if (!item.is_string()) return output_value(item, depth + 1, budget, out);
    if (budget) budget->charge_bytes(item.as_string().size());
    out += '\'';
    out += item.as_string();
    out += '\'';
  };
  switch (v.kind()) {
    case Value::Kind::Undefined: return;
    case Value::Kind::None: out += "None"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "True" : "False"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: out += format_float(v.as_number()); return;
    case Value::Kind::String:
      if (budget) budget->charge_bytes(v.as_string().size());
      out += v.as_string();
      return;
    case Value::Kind::List: {
      out += '[';
      const List& l = v.as_list();
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) out += ", ";
        repr(l[i]);
      }
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      out += '{';
      bool first = true;
      for (const auto& [k, item] : v.as_dict().items) {
        if (!first) out += ", ";
        first = false;
        out += '\'';
        out += k;
        out += "': ";
        repr(item);
      }
      out += '}';
      return;
    }
    case Value::Kind::Callable: out += "<function>"; return;
  }
}

}  // namespace

std::string Value::to_output(Budget* budget) const {
  if (kind_ == Kind::String) {
    if (budget) budget->charge_bytes(str_->size());
    return *str_;
  }
  std::string out;
  output_value(*this, 0, budget, out);
  check_string_size(out.size(), "str()");
  return out;
}

namespace {

void json_string(const std::string& s, std::string& out) {
  out += '"';
  out += json_scan::escape_string(s);
  out += '"';
}

void json_value(const Value& v, int indent, int depth, Budget* budget, std::string& out) {
  check_nesting(depth, "tojson");
  check_string_size(out.size(), "tojson");
  if (budget) budget->charge(1);
  // Python's json.dumps: ", " / ": " on one line; "," + newline + indent otherwise.
  const auto newline = [&](int d) {
    if (indent < 0) return;
    const size_t n_spaces = static_cast<size_t>(indent) * static_cast<size_t>(d);
    check_string_size(out.size() + n_spaces, "tojson");
    if (budget) budget->charge_bytes(n_spaces);
    out += '\n';
    out.append(n_spaces, ' ');
  };
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: {
      const double d = v.as_number();
      out += std::isfinite(d) ? format_float(d) : (std::isnan(d) ? "NaN" : (d < 0 ? "-Infinity" : "Infinity"));
      return;
    }
    case Value::Kind::String:
      if (budget) budget->charge_bytes(v.as_string().size());
      json_string(v.as_string(), out);
      return;
    case Value::Kind::List: {
      const List& l = v.as_list();
      if (l.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_value(l[i], indent, depth + 1, budget, out);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      const Dict& d = v.as_dict();
      if (d.items.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const auto& [k, item] : d.items) {
        if (!first) out += item_sep;
        first = false;
        newline(depth + 1);
        json_string(k, out);
        out += ": ";
        json_value(item, indent, depth + 1, budget, out);
      }
      newline(depth);
      out += '}';
      return;
    }
    case Value::Kind::Callable: throw JinjaError("tojson: a function cannot be serialized");
  }
}

}  // namespace

std::string Value::to_json(int indent, Budget* budget) const {
  std::string out;
  json_value(*this, indent, 0, budget, out);
  check_string_size(out.size(), "tojson");
  return out;
}

namespace {

bool equal_at(const Value& a, const Value& b, int depth, Budget* budget) {
  check_nesting(depth, "==");
  if (budget) budget->charge(1);
  if (a.is_number() && b.is_number()) return a.as_number() == b.as_number();
  if (a.kind() == Value::Kind::Bool && b.kind() == Value::Kind::Bool) return a.as_bool() == b.as_bool();
  // Python: True == 1, but templates never rely on it; mixed kinds compare unequal.
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String:
      if (budget) budget->charge_bytes(std::min(a.as_string().size(), b.as_string().size()));
      return a.as_string() == b.as_string();
    case Value::Kind::List: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (&x == &y) return true;  // as Python: the same list (even one holding itself)
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equal_at(x[i], y[i], depth + 1, budget)) return false;
      }
      return true;
    }
    case Value::Kind::Dict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (&x == &y) return true;
      if (x.items.size() != y.items.size()) return false;
      // Lookups are linear: a dict of n keys costs n * n / 2 steps.
      if (budget) budget->charge(static_cast<int64_t>(x.items.size() * x.items.size() / 2));
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (!other || !equal_at(*other, v, depth + 1, budget)) return false;
      }
      return true;
    }
    case Value::Kind::Callable: return &a.as_callable() == &b.as_callable();
    default: return false;
  }
}

}  // namespace

bool equal(const Value& a, const Value& b, Budget* budget) {
  return equal_at(a, b, 0, budget);
}

namespace {

const void* identity(const Value& x) {
  return x.is_list() ? static_cast<const void*>(&x.as_list())
                     : x.is_dict() ? static_cast<const void*>(&x.as_dict()) : nullptr;
}

// Calls visit(value) on `v` and everything it holds, each list or dict once, until
// visit returns false.
template <typename Visit>
void walk(const Value& v, Visit visit) {
  std::vector<const Value*> todo = {&v};
  std::unordered_set<const void*> seen;
  while (!todo.empty()) {
    const Value* x = todo.back();
    todo.pop_back();
    const void* id = identity(*x);
    if (id && !seen.insert(id).second) continue;
    if (!visit(*x)) return;
    if (x->is_list()) {
      for (const Value& item : x->as_list()) todo.push_back(&item);
    } else if (x->is_dict()) {
      for (const auto& [k, item] : x->as_dict().items) todo.push_back(&item);
    }
  }
}

}  // namespace

bool holds(const Value& v, const Value& container, Budget& budget) {
  const void* target = identity(container);
  bool found = false;
  if (!target) return false;
  walk(v, [&](const Value& x) {
    if (!identity(x)) return true;
    found = identity(x) == target;
    budget.charge(1 + x.weight());
    return !found;
  });
  return found;
}

int64_t deep_weight(const Value& v) {
  int64_t total = 0;
  walk(v, [&](const Value& x) {
    total += 1 + x.weight();
    return true;
  });
  return total;
}

}  // namespace runnel::jinja
