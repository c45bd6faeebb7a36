// A small JSON Schema validator for the json_schema tests, written independently of the
// converter: standard semantics (additionalProperties defaults to true, oneOf means
// exactly one) for exactly the keywords the converter supports. Patterns go through
// std::wregex (ECMAScript) over the decoded code points.
#pragma once

#include <cmath>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

namespace runnel::json_schema_test {

using nlohmann::json;

inline std::wstring code_points(const std::string& s) {
  std::wstring out;
  for (size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    const int n = b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
    uint32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (int k = 1; k < n; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out += static_cast<wchar_t>(cp);
    i += n;
  }
  return out;
}

inline bool digits_at(const std::string& s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

inline int number_at(const std::string& s, size_t at, size_t n) { return std::stoi(s.substr(at, n)); }

inline bool valid_date(const std::string& s) {
  if (s.size() != 10 || !digits_at(s, 0, 4) || s[4] != '-' || !digits_at(s, 5, 2) || s[7] != '-' ||
      !digits_at(s, 8, 2)) {
    return false;
  }
  const int y = number_at(s, 0, 4), m = number_at(s, 5, 2), d = number_at(s, 8, 2);
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  const int days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m >= 1 && m <= 12 && d >= 1 && d <= days[m - 1];
}

inline bool valid_time(const std::string& s) {
  if (s.size() < 9 || !digits_at(s, 0, 2) || s[2] != ':' || !digits_at(s, 3, 2) || s[5] != ':' ||
      !digits_at(s, 6, 2)) {
    return false;
  }
  if (number_at(s, 0, 2) > 23 || number_at(s, 3, 2) > 59 || number_at(s, 6, 2) > 60) return false;
  size_t i = 8;
  if (s[i] == '.') {
    const size_t start = ++i;
    while (digits_at(s, i, 1)) ++i;
    if (i == start) return false;
  }
  const std::string zone = s.substr(i);
  if (zone == "Z" || zone == "z") return true;
  return zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && digits_at(zone, 1, 2) &&
         zone[3] == ':' && digits_at(zone, 4, 2) && number_at(zone, 1, 2) <= 23 &&
         number_at(zone, 4, 2) <= 59;
}

inline bool valid_format(const std::string& format, const std::string& s) {
  if (format == "date") return valid_date(s);
  if (format == "time") return valid_time(s);
  if (format == "date-time") {
    const size_t t = s.find_first_of("Tt");
    return t != std::string::npos && valid_date(s.substr(0, t)) && valid_time(s.substr(t + 1));
  }
  if (format == "uuid") {
    if (s.size() != 36) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash != (s[i] == '-')) return false;
      if (!dash && !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
    }
    return true;
  }
  return false;  // a format the tests do not use
}

inline bool has_type(const json& v, const std::string& type) {
  if (type == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

inline const json& resolve_ref(const json& root, const std::string& ref) {
  return ref == "#" ? root : root.at(json::json_pointer(ref.substr(1)));
}

inline bool validate(const json& root, const json& schema, const json& v) {
  if (schema.is_boolean()) return schema.get<bool>();
  if (schema.contains("$ref") && !validate(root, resolve_ref(root, schema["$ref"]), v)) return false;
  if (schema.contains("type")) {
    const json types = schema["type"].is_array() ? schema["type"] : json::array({schema["type"]});
    bool any = false;
    for (const json& t : types) any = any || has_type(v, t.get<std::string>());
    if (!any) return false;
  }
  if (schema.contains("const") && !(v == schema["const"])) return false;
  if (schema.contains("enum")) {
    bool any = false;
    for (const json& e : schema["enum"]) any = any || e == v;
    if (!any) return false;
  }
  if (schema.contains("anyOf")) {
    bool any = false;
    for (const json& s : schema["anyOf"]) any = any || validate(root, s, v);
    if (!any) return false;
  }
  if (schema.contains("oneOf")) {
    int n = 0;
    for (const json& s : schema["oneOf"]) n += validate(root, s, v) ? 1 : 0;
    if (n != 1) return false;
  }
  if (schema.contains("allOf")) {
    for (const json& s : schema["allOf"]) {
      if (!validate(root, s, v)) return false;
    }
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (schema.contains("minimum") && !(x >= schema["minimum"].get<double>())) return false;
    if (schema.contains("maximum") && !(x <= schema["maximum"].get<double>())) return false;
    if (schema.contains("exclusiveMinimum") && !(x > schema["exclusiveMinimum"].get<double>())) return false;
    if (schema.contains("exclusiveMaximum") && !(x < schema["exclusiveMaximum"].get<double>())) return false;
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    const std::wstring w = code_points(s);
    if (schema.contains("minLength") && w.size() < schema["minLength"].get<size_t>()) return false;
    if (schema.contains("maxLength") && w.size() > schema["maxLength"].get<size_t>()) return false;
    if (schema.contains("pattern")) {
      const std::wregex re(code_points(schema["pattern"].get<std::string>()), std::regex::ECMAScript);
      if (!std::regex_search(w, re)) return false;
    }
    if (schema.contains("format") && !valid_format(schema["format"], s)) return false;
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<size_t>()) return false;
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<size_t>()) return false;
    if (schema.contains("items")) {
      for (const json& item : v) {
        if (!validate(root, schema["items"], item)) return false;
      }
    }
  }
  if (v.is_object()) {
    const json props = schema.value("properties", json::object());
    if (schema.contains("required")) {
      for (const json& r : schema["required"]) {
        if (!v.contains(r.get<std::string>())) return false;
      }
    }
    for (const auto& [key, value] : v.items()) {
      if (props.contains(key)) {
        if (!validate(root, props[key], value)) return false;
      } else if (schema.contains("additionalProperties") &&
                 !validate(root, schema["additionalProperties"], value)) {
        return false;
      }
    }
  }
  return true;
}

inline bool validate(const json& schema, const json& v) { return validate(schema, schema, v); }

}  // namespace runnel::json_schema_test
