#include "core/chat/jinja_value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/chat/json_scan.h"

namespace runnel::jinja {

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

std::string Value::to_output() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return int_ ? "True" : "False";
    case Kind::Int: return std::to_string(int_);
    case Kind::Float: return format_float(float_);
    case Kind::String: return *str_;
    case Kind::List: {
      // Python's str(list) uses repr of the items.
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        const Value& v = (*list_)[i];
        out += v.is_string() ? "'" + v.as_string() + "'" : v.to_output();
      }
      return out + "]";
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : dict_->items) {
        if (!first) out += ", ";
        first = false;
        out += "'" + k + "': " + (v.is_string() ? "'" + v.as_string() + "'" : v.to_output());
      }
      return out + "}";
    }
    case Kind::Callable: return "<function>";
  }
  return "";
}

namespace {

void json_string(const std::string& s, std::string& out) {
  out += '"';
  out += json_scan::escape_string(s);
  out += '"';
}

void json_value(const Value& v, int indent, int depth, std::string& out) {
  // Python's json.dumps: ", " / ": " on one line; "," + newline + indent otherwise.
  const auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
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
    case Value::Kind::String: json_string(v.as_string(), out); return;
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
        json_value(l[i], indent, depth + 1, out);
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
        json_value(item, indent, depth + 1, out);
      }
      newline(depth);
      out += '}';
      return;
    }
    case Value::Kind::Callable: throw JinjaError("tojson: a function cannot be serialized");
  }
}

}  // namespace

std::string Value::to_json(int indent) const {
  std::string out;
  json_value(*this, indent, 0, out);
  return out;
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_number() == b.as_number();
  if (a.kind_ == Value::Kind::Bool && b.kind_ == Value::Kind::Bool) return a.int_ == b.int_;
  // Python: True == 1, but templates never rely on it; mixed kinds compare unequal.
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return *a.str_ == *b.str_;
    case Value::Kind::List: return *a.list_ == *b.list_;
    case Value::Kind::Dict: {
      if (a.dict_->items.size() != b.dict_->items.size()) return false;
      for (const auto& [k, v] : a.dict_->items) {
        const Value* other = b.dict_->find(k);
        if (!other || !(*other == v)) return false;
      }
      return true;
    }
    case Value::Kind::Callable: return a.fn_ == b.fn_;
    default: return false;
  }
}

}  // namespace runnel::jinja
