// The values a chat template computes with: Python/Jinja semantics for the subset
// GGUF chat templates use. Lists and dicts are shared (like Python objects), so
// `ns.x = ...` and `list.append(...)` are visible through every reference.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace runnel::jinja {

// Parse and render errors; messages name the construct and the template line.
class JinjaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value;
using List = std::vector<Value>;

// Insertion-ordered, like a Python dict.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;  // namespace(): attribute assignment allowed

  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value v);
};

// A macro or builtin: positional args, then keyword args.
using Callable = std::function<Value(std::vector<Value>& args,
                                     std::vector<std::pair<std::string, Value>>& kwargs)>;

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

  Value() = default;  // undefined
  static Value none() { Value v; v.kind_ = Kind::None; return v; }
  Value(bool b) : kind_(Kind::Bool), int_(b) {}
  Value(int64_t i) : kind_(Kind::Int), int_(i) {}
  Value(int i) : kind_(Kind::Int), int_(i) {}
  Value(double d) : kind_(Kind::Float), float_(d) {}
  Value(std::string s) : kind_(Kind::String), str_(std::make_shared<std::string>(std::move(s))) {}
  Value(const char* s) : Value(std::string(s)) {}
  Value(List l) : kind_(Kind::List), list_(std::make_shared<List>(std::move(l))) {}
  Value(Dict d) : kind_(Kind::Dict), dict_(std::make_shared<Dict>(std::move(d))) {}
  Value(Callable f) : kind_(Kind::Callable), fn_(std::make_shared<Callable>(std::move(f))) {}

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }
  double as_number() const { return kind_ == Kind::Float ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return *str_; }
  List& as_list() const { return *list_; }
  Dict& as_dict() const { return *dict_; }
  const Callable& as_callable() const { return *fn_; }

  // Python truthiness: undefined, none, false, 0, "", [], {} are false.
  bool truthy() const;
  // What {{ v }} prints: Python's str() (None, True, 1.5; undefined prints nothing).
  std::string to_output() const;
  // json.dumps(v, ensure_ascii=False) with HF's separators; indent < 0: one line.
  std::string to_json(int indent = -1) const;
  // Type name for messages ("string", "list", ...).
  std::string_view type_name() const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  Kind kind_ = Kind::Undefined;
  int64_t int_ = 0;
  double float_ = 0;
  std::shared_ptr<std::string> str_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Callable> fn_;
};

// Python's repr of a float ("0.1", "1.0", "1e+20").
std::string format_float(double d);

}  // namespace runnel::jinja
