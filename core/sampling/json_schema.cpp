// JSON Schema -> GBNF. One pass over the schema: every schema object becomes a rule,
// named after where it sits (root-properties-name-item, ref-defs-node), shared primitive
// rules (value, string, char, space) are added on first use. Every keyword is either
// honoured or refused by name; see README.md for the list and the narrowing choices.
#include "core/sampling/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/sampling/grammar.h"
#include "core/sampling/json_schema_internal.h"

namespace runnel {
namespace {

using nlohmann::json;
using namespace json_schema_detail;

constexpr int kMaxCount = 2000;  // the GBNF engine's largest repetition bound
constexpr int64_t kMaxBound = 1'000'000'000'000'000;  // 10^15

// Keywords that describe a schema without constraining it.
const std::set<std::string> kAnnotations = {"title",    "description", "$schema", "$id",
                                            "examples", "default",     "$comment", "$defs",
                                            "definitions"};
// The keywords each type honours.
const std::map<std::string, std::set<std::string>> kTypeKeywords = {
    {"string", {"minLength", "maxLength", "pattern", "format"}},
    {"integer", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
    {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
    {"object", {"properties", "required", "additionalProperties"}},
    {"array", {"items", "minItems", "maxItems"}},
    {"boolean", {}},
    {"null", {}},
};

// Primitive rules, added with their dependencies on first use. Whitespace is
// llama.cpp's: at most two newlines and 20 indentation characters between tokens.
// Unranged numbers keep 16 integer digits, 16 fraction digits and a two-digit exponent
// (nothing that overflows a double); \u escapes exclude surrogates, so every string
// decodes to valid Unicode.
const std::map<std::string, std::pair<std::string, std::vector<std::string>>> kPrimitives = {
    {"space", {"| \" \" | \"\\n\"{1,2} [ \\t]{0,20}", {}}},
    {"hex", {"[0-9a-fA-F]", {}}},
    {"char",
     {"[^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-CeEfF] hex{3} | "
      "[dD] [0-7] hex{2}))",
      {"hex"}}},
    {"string", {"\"\\\"\" char* \"\\\"\"", {"char"}}},
    {"integral-part", {"[0] | [1-9] [0-9]{0,15}", {}}},
    {"integer", {"\"-\"? integral-part", {"integral-part"}}},
    {"number",
     {"\"-\"? integral-part (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?", {"integral-part"}}},
    {"key-char", {"[^\"\\\\\\x7F\\x00-\\x1F]", {}}},
    {"boolean", {"\"true\" | \"false\"", {}}},
    {"null", {"\"null\"", {}}},
    {"object",
     {"\"{\" space (string space \":\" space value (\",\" space string space \":\" space value)*)? "
      "space \"}\"",
      {"space", "string", "value"}}},
    {"array", {"\"[\" space (value (\",\" space value)*)? space \"]\"", {"space", "value"}}},
    {"value",
     {"object | array | string | number | boolean | null",
      {"object", "array", "string", "number", "boolean", "null"}}},
};

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (const char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

class Converter {
 public:
  explicit Converter(const json& root) : root_(root) {}

  std::string convert() {
    reserve("root");
    visit(root_, "", "root");
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

  std::string primitive(const std::string& name) {
    if (!rules_.count(name)) {
      const auto& [body, deps] = kPrimitives.at(name);
      rules_[name] = body;
      for (const std::string& dep : deps) primitive(dep);
    }
    return name;
  }

 private:
  const json& root_;
  std::map<std::string, std::string> rules_;          // name -> body ("" while reserved)
  std::map<std::string, std::string> ref_rules_;      // "#/..." -> rule name

  [[noreturn]] static void fail(const std::string& ptr, const std::string& what) {
    throw JsonSchemaError(std::string("json_schema ") + (ptr.empty() ? std::string("/") : ptr) + ": " + what);
  }

  // A rule name from a hint, unique among the rules (and the primitives' names).
  std::string reserve(const std::string& hint) {
    std::string base;
    for (const char c : hint) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      base += ok ? c : '-';
    }
    std::string name = base;
    for (int n = 1; rules_.count(name) || (name != "root" && kPrimitives.count(name)); ++n) {
      name = base + "-" + std::to_string(n);
    }
    rules_[name] = "";
    return name;
  }

  // The rule for a sub-schema: a fresh rule named after `hint`.
  std::string sub(const json& schema, const std::string& ptr, const std::string& hint) {
    const std::string name = reserve(hint);
    visit(schema, ptr, name);
    return name;
  }

  void define(const std::string& name, const std::string& body) { rules_[name] = body; }

  static void check_keys(const json& schema, const std::string& ptr,
                         const std::set<std::string>& allowed, const std::string& context) {
    for (const auto& [key, value] : schema.items()) {
      if (kAnnotations.count(key) || allowed.count(key)) continue;
      bool known = key == "type" || key == "enum" || key == "const" || key == "anyOf" ||
                   key == "oneOf" || key == "allOf" || key == "$ref";
      for (const auto& [type, keys] : kTypeKeywords) known = known || keys.count(key);
      if (!known) fail(ptr, std::string("'") + key + "' is not supported");
      fail(ptr, std::string("'") + key + "' " + context + " is not supported");
    }
  }

  static int count(const json& schema, const std::string& ptr, const char* key, int fallback) {
    if (!schema.contains(key)) return fallback;
    const json& v = schema.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      fail(ptr, std::string("'") + key + "' must be a non-negative integer, not " + v.dump());
    }
    if (v.get<int64_t>() > kMaxCount) {
      fail(ptr, std::string("'") + key + "' above " + std::to_string(kMaxCount) + " is not supported");
    }
    return v.get<int>();
  }

  void visit(const json& schema, const std::string& ptr, const std::string& name) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(ptr, "the schema 'false' is not supported");
      return define(name, primitive("value"));
    }
    if (!schema.is_object()) fail(ptr, std::string("a schema must be an object or a boolean, not ") + schema.dump());
    if (schema.contains("$ref")) return visit_ref(schema, ptr, name);
    if (schema.contains("anyOf") || schema.contains("oneOf")) return visit_any_of(schema, ptr, name);
    if (schema.contains("allOf")) return visit_all_of(schema, ptr, name);
    if (schema.contains("enum") || schema.contains("const")) return visit_values(schema, ptr, name);
    const std::vector<std::string> types = types_of(schema, ptr);
    std::set<std::string> allowed = {"type"};
    for (const std::string& t : types) {
      if (t == "any") continue;
      allowed.insert(kTypeKeywords.at(t).begin(), kTypeKeywords.at(t).end());
    }
    check_keys(schema, ptr, allowed, std::string("for type ") + json(types).dump());
    std::vector<std::string> alts;
    for (const std::string& t : types) {
      alts.push_back(types.size() == 1 ? visit_type(schema, ptr, name, t)
                                       : rule_for_type(schema, ptr, name + "-" + t, t));
    }
    std::string body;
    for (size_t i = 0; i < alts.size(); ++i) body += (i > 0 ? " | " : "") + alts[i];
    define(name, body);
  }

  std::string rule_for_type(const json& schema, const std::string& ptr, const std::string& hint,
                            const std::string& type) {
    const std::string name = reserve(hint);
    define(name, visit_type(schema, ptr, name, type));
    return name;
  }

  // The listed types, or the one the type-specific keywords present imply (as
  // llama.cpp: {"properties": ...} is an object); none: any value ("value").
  std::vector<std::string> types_of(const json& schema, const std::string& ptr) {
    if (schema.contains("type")) {
      const json& t = schema.at("type");
      std::vector<std::string> types;
      for (const json& one : t.is_array() ? t : json::array({t})) {
        if (!one.is_string() || !kTypeKeywords.count(one.get<std::string>())) {
          fail(ptr, std::string("the type ") + one.dump() + " is not supported");
        }
        types.push_back(one.get<std::string>());
      }
      if (types.empty()) fail(ptr, "'type' must not be empty");
      return types;
    }
    std::vector<std::string> implied;
    for (const auto& [type, keys] : kTypeKeywords) {
      if (type == "integer") continue;  // "number" covers the numeric keywords
      for (const std::string& key : keys) {
        if (schema.contains(key)) {
          implied.push_back(type);
          break;
        }
      }
    }
    if (implied.size() > 1) {
      fail(ptr, std::string("keywords of the types ") + json(implied).dump() + " without 'type' are not supported");
    }
    return implied.empty() ? std::vector<std::string>{"any"} : implied;
  }

  std::string visit_type(const json& schema, const std::string& ptr, const std::string& name,
                         const std::string& type) {
    if (type == "any") return primitive("value");
    if (type == "string") return string_rule(schema, ptr);
    if (type == "integer" || type == "number") return number_rule(schema, ptr, type == "integer");
    if (type == "object") return object_rule(schema, ptr, name);
    if (type == "array") return array_rule(schema, ptr, name);
    return primitive(type);  // boolean, null
  }

  void visit_ref(const json& schema, const std::string& ptr, const std::string& name) {
    check_keys(schema, ptr, {"$ref"}, "beside '$ref'");
    const json& ref = schema.at("$ref");
    if (!ref.is_string()) fail(ptr, "'$ref' must be a string");
    const std::string target = ref.get<std::string>();
    if (target != "#" && target.rfind("#/", 0) != 0) {
      fail(ptr, std::string("the $ref '") + target + "' is not supported (only '#/...' within the schema)");
    }
    auto it = ref_rules_.find(target);
    if (it == ref_rules_.end()) {
      // Named before visiting, so a recursive reference finds it.
      const std::string rule = reserve(std::string("ref") + target.substr(1));
      it = ref_rules_.emplace(target, rule).first;
      visit(resolve(target, ptr), target.substr(1), rule);
    }
    define(name, it->second);
  }

  const json& resolve(const std::string& target, const std::string& ptr) const {
    const json* node = &root_;
    size_t pos = 1;
    while (pos < target.size()) {
      const size_t end = std::min(target.find('/', pos + 1), target.size());
      std::string token;  // ~1 is '/', ~0 is '~'
      for (size_t k = pos + 1; k < end; ++k) {
        const bool escape = target[k] == '~' && k + 1 < end;
        token += escape ? (target[k + 1] == '1' ? '/' : '~') : target[k];
        k += escape ? 1 : 0;
      }
      if (node->is_object() && node->contains(token)) {
        node = &node->at(token);
      } else if (node->is_array() && !token.empty() &&
                 token.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(token) < node->size()) {
        node = &node->at(std::stoul(token));
      } else {
        fail(ptr, std::string("the $ref '") + target + "' does not resolve");
      }
      pos = end;
    }
    return *node;
  }

  void visit_any_of(const json& schema, const std::string& ptr, const std::string& name) {
    const char* key = schema.contains("anyOf") ? "anyOf" : "oneOf";
    check_keys(schema, ptr, {key}, std::string("beside '") + key + "'");
    const json& alts = schema.at(key);
    if (!alts.is_array() || alts.empty()) fail(ptr, std::string("'") + key + "' must be a non-empty array");
    std::string body;
    for (size_t i = 0; i < alts.size(); ++i) {
      body += (i > 0 ? " | " : "") +
              sub(alts[i], ptr + "/" + key + "/" + std::to_string(i), name + "-" + std::to_string(i));
    }
    // The grammar takes any branch; "exactly one" holds only where no value matches two.
    if (std::string_view(key) == "oneOf") {
      for (size_t i = 0; i < alts.size(); ++i) {
        for (size_t j = i + 1; j < alts.size(); ++j) {
          if (!disjoint(alts[i], alts[j], 0)) {
            fail(ptr, "'oneOf' branches " + std::to_string(i) + " and " + std::to_string(j) +
                          " may both match one value, which oneOf forbids and a grammar cannot exclude: make "
                          "them disjoint (by type, or by the const / enum of a property both require) or use "
                          "'anyOf'");
          }
        }
      }
    }
    define(name, body);
  }

  // The kinds of JSON value a schema's documents may be (bits of kKinds), for oneOf.
  static constexpr unsigned kNull = 1, kBoolean = 2, kNumber = 4, kString = 8, kArray = 16, kObject = 32,
                            kAnyKind = 63;
  static unsigned kind_of_value(const json& v) {
    return v.is_null() ? kNull : v.is_boolean() ? kBoolean : v.is_number() ? kNumber : v.is_string() ? kString
           : v.is_array() ? kArray : kObject;
  }

  // `schema` with its $refs followed (the schema is visited first, so they resolve).
  const json& deref(const json& schema) const {
    const json* s = &schema;
    for (int hops = 0; hops < 64 && s->is_object() && s->contains("$ref") && s->at("$ref").is_string(); ++hops) {
      s = &resolve(s->at("$ref").get<std::string>(), "");
    }
    return *s;
  }

  // What kinds a (visited) schema's values have; kAnyKind where it cannot tell.
  unsigned kinds(const json& schema, int depth) {
    const json& s = deref(schema);
    if (depth > 32 || !s.is_object()) return s.is_boolean() && !s.get<bool>() ? 0 : kAnyKind;
    const auto values = [&](const json& list) {
      unsigned k = 0;
      for (const json& v : list) k |= kind_of_value(v);
      return k;
    };
    if (s.contains("const")) return kind_of_value(s.at("const"));
    if (s.contains("enum") && s.at("enum").is_array()) return values(s.at("enum"));
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      unsigned k = 0;
      for (const json& alt : s.at(key)) k |= kinds(alt, depth + 1);
      return k;
    }
    if (s.contains("allOf")) return kObject;
    unsigned k = 0;
    for (const std::string& t : types_of(s, "")) {
      k |= t == "any" ? kAnyKind : t == "null" ? kNull : t == "boolean" ? kBoolean : t == "string" ? kString
           : t == "array" ? kArray : t == "object" ? kObject : kNumber;
    }
    return k;
  }

  // Whether no value matches both schemas, as far as can be shown: their kinds differ,
  // their const / enum values differ, or (objects) a property both require has disjoint
  // schemas (a tagged union). False where it cannot tell.
  bool disjoint(const json& a_in, const json& b_in, int depth) {
    const json& a = deref(a_in);
    const json& b = deref(b_in);
    if (depth > 16) return false;
    if ((kinds(a, 0) & kinds(b, 0)) == 0) return true;
    const auto listed = [](const json& s) -> const json* {
      if (!s.is_object()) return nullptr;
      if (s.contains("enum") && s.at("enum").is_array()) return &s.at("enum");
      return nullptr;
    };
    const json const_a = a.is_object() && a.contains("const") ? json::array({a.at("const")}) : json();
    const json const_b = b.is_object() && b.contains("const") ? json::array({b.at("const")}) : json();
    const json* va = const_a.is_array() ? &const_a : listed(a);
    const json* vb = const_b.is_array() ? &const_b : listed(b);
    if (va && vb) {
      for (const json& x : *va) {
        for (const json& y : *vb) {
          if (x == y) return false;
        }
      }
      return true;
    }
    if (kinds(a, 0) != kObject || kinds(b, 0) != kObject || !a.is_object() || !b.is_object()) return false;
    if (!a.contains("required") || !b.contains("required") || !a.contains("properties") ||
        !b.contains("properties")) {
      return false;
    }
    for (const json& key : a.at("required")) {
      if (!key.is_string()) continue;
      const std::string k = key.get<std::string>();
      const bool both = std::find(b.at("required").begin(), b.at("required").end(), key) != b.at("required").end();
      if (both && a.at("properties").contains(k) && b.at("properties").contains(k) &&
          disjoint(a.at("properties").at(k), b.at("properties").at(k), depth + 1)) {
        return true;
      }
    }
    return false;
  }

  // allOf of objects: their properties merged (each declared once), required joined.
  // The schema's own object keywords take part as one more component.
  void visit_all_of(const json& schema, const std::string& ptr, const std::string& name) {
    const json& parts = schema.at("allOf");
    if (!parts.is_array() || parts.empty()) fail(ptr, "'allOf' must be a non-empty array");
    json rest = schema;
    rest.erase("allOf");
    bool rest_constrains = false;
    for (const auto& [key, value] : rest.items()) rest_constrains = rest_constrains || !kAnnotations.count(key);
    if (parts.size() == 1 && !rest_constrains) return visit(parts[0], ptr + "/allOf/0", name);
    json merged = {{"type", "object"}, {"properties", json::object()}, {"required", json::array()}};
    std::vector<std::pair<const json*, std::string>> components;
    for (size_t i = 0; i < parts.size(); ++i) components.emplace_back(&parts[i], ptr + "/allOf/" + std::to_string(i));
    if (rest_constrains) components.emplace_back(&rest, ptr);
    std::map<std::string, std::string> property_ptrs;
    for (const auto& [part, part_ptr] : components) merge_object(*part, part_ptr, merged, property_ptrs);
    define(name, object_rule(merged, ptr, name, property_ptrs));
  }

  void merge_object(const json& part, const std::string& ptr, json& merged,
                    std::map<std::string, std::string>& property_ptrs) {
    const json* p = &part;
    std::string p_ptr = ptr;
    while (p->is_object() && p->contains("$ref")) {  // follow references to the object
      check_keys(*p, p_ptr, {"$ref"}, "beside '$ref'");
      const std::string target = p->at("$ref").is_string() ? p->at("$ref").get<std::string>() : "";
      if (target != "#" && target.rfind("#/", 0) != 0) fail(p_ptr, std::string("the $ref ") + p->at("$ref").dump() + " is not supported");
      p = &resolve(target, p_ptr);
      p_ptr = target.substr(1);
    }
    if (!p->is_object()) fail(p_ptr, "'allOf' of a non-object schema is not supported");
    check_keys(*p, p_ptr, {"type", "properties", "required"}, "in an 'allOf' part");
    if (p->contains("type") && p->at("type") != "object") fail(p_ptr, "'allOf' of non-object types is not supported");
    if (p->contains("properties")) {
      if (!p->at("properties").is_object()) fail(p_ptr, "'properties' must be an object");
      for (const auto& [key, value] : p->at("properties").items()) {
        if (merged["properties"].contains(key)) fail(p_ptr, std::string("'allOf' declaring the property '") + key + "' twice is not supported");
        merged["properties"][key] = value;
        property_ptrs[key] = p_ptr + "/properties/" + escape_pointer_token(key);
      }
    }
    if (p->contains("required")) {
      if (!p->at("required").is_array()) fail(p_ptr, "'required' must be an array");
      for (const json& r : p->at("required")) merged["required"].push_back(r);
    }
  }

  void visit_values(const json& schema, const std::string& ptr, const std::string& name) {
    check_keys(schema, ptr, {"enum", "const", "type"}, "beside 'enum' / 'const'");
    if (schema.contains("enum") && schema.contains("const")) fail(ptr, "'enum' beside 'const' is not supported");
    json values = schema.contains("const") ? json::array({schema.at("const")}) : schema.at("enum");
    if (!values.is_array() || values.empty()) fail(ptr, "'enum' must be a non-empty array");
    std::vector<std::string> types;
    if (schema.contains("type")) types = types_of(schema, ptr);
    std::string body;
    for (const json& v : values) {
      if (!types.empty() && !has_any_type(v, types)) continue;  // the type rules it out
      body += (body.empty() ? "" : " | ") + gbnf_literal(v.dump());
    }
    if (body.empty()) fail(ptr, std::string("no 'enum' value has the type ") + json(types).dump());
    define(name, body);
  }

  static bool has_any_type(const json& v, const std::vector<std::string>& types) {
    for (const std::string& t : types) {
      const bool integral = v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())));
      if ((t == "string" && v.is_string()) || (t == "number" && v.is_number()) ||
          (t == "integer" && v.is_number() && integral) || (t == "object" && v.is_object()) ||
          (t == "array" && v.is_array()) || (t == "boolean" && v.is_boolean()) ||
          (t == "null" && v.is_null())) {
        return true;
      }
    }
    return false;
  }

  std::string string_rule(const json& schema, const std::string& ptr) {
    const int min_length = count(schema, ptr, "minLength", 0);
    const int max_length = count(schema, ptr, "maxLength", -1);
    const bool has_length = schema.contains("minLength") || schema.contains("maxLength");
    if (schema.contains("pattern") + schema.contains("format") + has_length > 1) {
      fail(ptr, "combining 'pattern', 'format' and 'minLength' / 'maxLength' is not supported");
    }
    if (schema.contains("pattern")) {
      const json& pattern = schema.at("pattern");
      if (!pattern.is_string()) fail(ptr, "'pattern' must be a string");
      try {
        return std::string("\"\\\"\" ") + pattern_gbnf(pattern.get<std::string>(), primitive("char")) + " \"\\\"\"";
      } catch (const std::invalid_argument& e) {
        fail(ptr, std::string("'pattern' ") + pattern.dump() + ": " + e.what() + " is not supported");
      }
    }
    if (schema.contains("format")) {
      const json& format = schema.at("format");
      const std::string content = format.is_string() ? format_gbnf(format.get<std::string>()) : "";
      if (content.empty()) fail(ptr, std::string("'format' ") + format.dump() + " is not supported");
      return std::string("\"\\\"\" ") + content + " \"\\\"\"";
    }
    if (!has_length) return primitive("string");
    if (max_length >= 0 && max_length < min_length) fail(ptr, "'maxLength' is below 'minLength'");
    const std::string bounds = max_length < 0 ? std::to_string(min_length) + ","
                                              : std::to_string(min_length) + "," + std::to_string(max_length);
    return std::string("\"\\\"\" ") + primitive("char") + "{" + bounds + "} \"\\\"\"";
  }

  static std::optional<double> bound(const json& schema, const std::string& ptr, const char* key) {
    if (!schema.contains(key)) return std::nullopt;
    const json& v = schema.at(key);
    if (!v.is_number()) fail(ptr, std::string("'") + key + "' must be a number, not " + v.dump());
    const double d = v.get<double>();
    if (d > static_cast<double>(kMaxBound) || d < -static_cast<double>(kMaxBound)) {
      fail(ptr, std::string("'") + key + "' beyond +-10^15 is not supported");
    }
    return d;
  }

  std::string number_rule(const json& schema, const std::string& ptr, bool integer) {
    const auto min = bound(schema, ptr, "minimum"), max = bound(schema, ptr, "maximum");
    const auto xmin = bound(schema, ptr, "exclusiveMinimum"), xmax = bound(schema, ptr, "exclusiveMaximum");
    if (!min && !max && !xmin && !xmax) return primitive(integer ? "integer" : "number");
    if (integer) {
      // The integers the bounds admit: [ceil(min), floor(max)], open ends moved inwards.
      std::optional<int64_t> lo, hi;
      const auto raise = [&](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
      const auto lower = [&](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
      if (min) raise(static_cast<int64_t>(std::ceil(*min)));
      if (xmin) raise(static_cast<int64_t>(std::floor(*xmin)) + 1);
      if (max) lower(static_cast<int64_t>(std::floor(*max)));
      if (xmax) lower(static_cast<int64_t>(std::ceil(*xmax)) - 1);
      if (lo && hi && *lo > *hi) fail(ptr, "the range admits no integer");
      return std::string("(") + integer_range_gbnf(lo, hi) + ")";
    }
    const auto integral = [&](std::optional<double> v, const char* key) {
      if (v && *v != std::floor(*v)) fail(ptr, std::string("a fractional '") + key + "' for a number is not supported");
    };
    integral(min, "minimum"), integral(max, "maximum"), integral(xmin, "exclusiveMinimum"), integral(xmax, "exclusiveMaximum");
    std::optional<NumberBound> lo, hi;
    if (min) lo = NumberBound{static_cast<int64_t>(*min), false};
    if (xmin && (!lo || *xmin >= lo->value)) lo = NumberBound{static_cast<int64_t>(*xmin), true};
    if (max) hi = NumberBound{static_cast<int64_t>(*max), false};
    if (xmax && (!hi || *xmax <= hi->value)) hi = NumberBound{static_cast<int64_t>(*xmax), true};
    const std::string body = number_range_gbnf(lo, hi);
    if (body.empty()) fail(ptr, "the range admits no number");
    return std::string("(") + body + ")";
  }

  std::string array_rule(const json& schema, const std::string& ptr, const std::string& name) {
    const int min_items = count(schema, ptr, "minItems", 0);
    const int max_items = count(schema, ptr, "maxItems", -1);
    if (max_items >= 0 && max_items < min_items) fail(ptr, "'maxItems' is below 'minItems'");
    std::string item = primitive("value");
    if (schema.contains("items")) {
      if (schema.at("items").is_array()) fail(ptr, "'items' as an array (tuples) is not supported");
      item = sub(schema.at("items"), ptr + "/items", name + "-item");
    }
    primitive("space");
    if (max_items == 0) return "\"[\" space \"]\"";
    const std::string more = std::string("(\",\" space ") + item + ")";
    const std::string rest_bounds = std::to_string(std::max(min_items - 1, 0)) + "," +
                                    (max_items < 0 ? "" : std::to_string(max_items - 1));
    std::string list = max_items == 1 ? item : item + " " + more + "{" + rest_bounds + "}";
    if (min_items == 0) list = std::string("(") + list + ")?";
    return std::string("\"[\" space ") + list + " space \"]\"";
  }

  // Required properties first, in the order of 'required'; then the optional ones (in
  // nlohmann::json's key order), each may be left out; then additional ones.
  std::string object_rule(const json& schema, const std::string& ptr, const std::string& name,
                          const std::map<std::string, std::string>& property_ptrs = {}) {
    primitive("space");
    const json props = schema.contains("properties") ? schema.at("properties") : json::object();
    if (!props.is_object()) fail(ptr, "'properties' must be an object");
    std::vector<std::string> required;
    if (schema.contains("required")) {
      if (!schema.at("required").is_array()) fail(ptr, "'required' must be an array");
      for (const json& r : schema.at("required")) {
        if (!r.is_string()) fail(ptr, std::string("'required' must list strings, not ") + r.dump());
        if (std::find(required.begin(), required.end(), r.get<std::string>()) == required.end()) {
          required.push_back(r.get<std::string>());
        }
      }
    }
    // llama.cpp's default: no additional properties once 'properties' are given.
    const json additional = schema.contains("additionalProperties") ? schema.at("additionalProperties")
                                                                    : json(props.empty());
    if (!additional.is_boolean() && !additional.is_object()) {
      fail(ptr, "'additionalProperties' must be a boolean or a schema");
    }
    const bool any_additional = additional == true || additional == json::object();
    if (props.empty() && required.empty() && any_additional) return primitive("object");

    std::map<std::string, std::string> kv;  // property -> its key-value rule
    std::vector<std::string> names;
    const auto add_kv = [&](const std::string& key, const json& value_schema) {
      const auto p = property_ptrs.find(key);
      const std::string value_ptr = p != property_ptrs.end() ? p->second : ptr + "/properties/" + escape_pointer_token(key);
      const std::string value = sub(value_schema, value_ptr, name + "-" + key);
      const std::string rule = reserve(name + "-" + key + "-kv");
      define(rule, gbnf_literal(json(key).dump()) + " space \":\" space " + value);
      kv[key] = rule;
      names.push_back(key);
    };
    for (const auto& [key, value] : props.items()) add_kv(key, value);
    for (const std::string& key : required) {
      if (!props.contains(key)) add_kv(key, json::object());  // required, any value
    }
    std::vector<std::string> optional;
    for (const auto& [key, value] : props.items()) {
      if (std::find(required.begin(), required.end(), key) == required.end()) optional.push_back(kv[key]);
    }
    std::string additional_kv;
    if (additional != false) {
      const std::string key_rule = names.empty() ? primitive("string") : additional_key_rule(names, name + "-additional-key");
      const std::string value = any_additional ? primitive("value")
                                               : sub(additional, ptr + "/additionalProperties", name + "-additional-value");
      additional_kv = reserve(name + "-additional-kv");
      define(additional_kv, key_rule + " space \":\" space " + value);
      optional.push_back(additional_kv);
    }
    if (required.empty() && optional.empty()) return "\"{\" space \"}\"";

    std::string body = "\"{\" space ";
    for (size_t i = 0; i < required.size(); ++i) body += (i > 0 ? " \",\" space " : "") + kv[required[i]];
    if (!optional.empty()) {
      // Optional i may start the optional part; each is followed by any of the later
      // ones (llama.cpp's "-rest" rules); additional properties repeat.
      std::vector<std::string> rest(optional.size() + 1);
      for (size_t i = optional.size(); i-- > 1;) {
        const bool repeats = optional[i] == additional_kv;
        std::string chain = std::string("(\",\" space ") + optional[i] + ")" + (repeats ? "*" : "?") + (rest[i + 1].empty() ? "" : std::string(" ") + rest[i + 1]);
        rest[i] = reserve(name + "-rest");
        define(rest[i], chain);
      }
      std::string alts;
      for (size_t i = 0; i < optional.size(); ++i) {
        const bool repeats = optional[i] == additional_kv;
        alts += (i > 0 ? " | " : "") + optional[i] + (repeats ? std::string(" (\",\" space ") + optional[i] + ")*" : "") +
                (rest[i + 1].empty() ? "" : std::string(" ") + rest[i + 1]);
      }
      body += required.empty() ? std::string("(") + alts + ")?" : std::string(" (\",\" space (") + alts + "))?";
    }
    return body + " space \"}\"";
  }

  // A JSON string that is none of `names`, spelt without escapes (so each key has one
  // spelling and comparing spellings compares keys): a trie of the names, leaving it at
  // any character that is not a child.
  std::string additional_key_rule(const std::vector<std::string>& names, const std::string& hint) {
    struct Node {
      std::map<uint32_t, size_t> children;
      bool terminal = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& key : names) {
      size_t node = 0;
      for (size_t i = 0; i < key.size();) {
        const auto b0 = static_cast<uint8_t>(key[i]);
        const int n = b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
        uint32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
        for (int k = 1; k < n && i + k < key.size(); ++k) cp = cp << 6 | (static_cast<uint8_t>(key[i + k]) & 0x3F);
        i += n;
        auto it = trie[node].children.find(cp);
        if (it == trie[node].children.end()) {
          it = trie[node].children.emplace(cp, trie.size()).first;
          trie.emplace_back();
        }
        node = it->second;
      }
      trie[node].terminal = true;
    }
    const std::string key_char = primitive("key-char");
    const auto visit_node = [&](auto&& self, size_t node) -> std::string {
      CodeRanges rejects = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}};
      std::string alts;
      for (const auto& [cp, child] : trie[node].children) {
        rejects.emplace_back(cp, cp);
        alts += gbnf_class({{cp, cp}}) + " " + self(self, child) + " | ";
      }
      std::sort(rejects.begin(), rejects.end());
      alts += gbnf_class(rejects, true) + " " + key_char + "*";
      return std::string("(") + alts + ")" + (trie[node].terminal ? "" : "?");
    };
    const std::string rule = reserve(hint);
    define(rule, std::string("\"\\\"\" ") + visit_node(visit_node, 0) + " \"\\\"\"");
    return rule;
  }
};

}  // namespace

std::string json_schema_to_grammar(const nlohmann::json& schema) {
  const std::string text = Converter(schema).convert();
  try {
    Grammar::parse(text);
  } catch (const GrammarError& e) {
    throw JsonSchemaError(std::string("json_schema: the schema's grammar is refused (") + e.what() + ")");
  }
  return text;
}

// Renames rule names: identifiers outside literals, classes, token references and
// repetition bounds (the converter's output has one rule per line).
std::string json_schema_rules(const nlohmann::json& schema, const std::string& prefix) {
  const std::string text = json_schema_to_grammar(schema);
  const auto is_name = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  };
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"' || c == '[' || c == '<' || c == '{') {
      const char close = c == '"' ? '"' : c == '[' ? ']' : c == '<' ? '>' : '}';
      size_t j = i + 1;
      while (j < text.size() && text[j] != close) j += text[j] == '\\' ? 2 : 1;
      out.append(text, i, j + 1 - i);
      i = j + 1;
    } else if (is_name(c)) {
      size_t j = i;
      while (j < text.size() && is_name(text[j])) ++j;
      out += prefix;
      out.append(text, i, j - i);
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string json_object_grammar() { return Converter(json{{"type", "object"}}).convert(); }

}  // namespace runnel
