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

// Bounds on one render. Chat templates ship inside model files (untrusted) and messages
// come from clients, so `range(10**9)`, `"x" * 10**9`, `{% set s = s + s %}` in a loop,
// nested loops or a list that contains itself must end in a JinjaError, fast, instead
// of running for minutes or exhausting memory. Real templates stay far below each
// (core/chat/README.md gives the figures).
constexpr int64_t kMaxRangeLength = 100'000;      // items of one range()
constexpr size_t kMaxListItems = 100'000;         // items of one list built by the template
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
// Fuzz builds (ASan + coverage) run byte loops ~20x slower: smaller bounds keep any one
// render within libFuzzer's 1 s timeout.
constexpr size_t kMaxStringBytes = 1u << 20;
#else
constexpr size_t kMaxStringBytes = 16u << 20;     // one string value, and the rendered text
#endif
constexpr int kMaxValueNesting = 256;             // lists/dicts inside each other (str, tojson, ==)
constexpr int64_t kRenderBaseSteps = 200'000;    // Budget steps of any render...
constexpr int64_t kRenderStepsPerInput = 32;      // ...plus these per unit of its globals' weight
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr size_t kBytesPerStep = 8;
#else
constexpr size_t kBytesPerStep = 128;             // bytes copied or scanned per Budget step
#endif

// The work one render may still do, in steps: an expression evaluated, a statement run
// (a loop iteration: 10), a list item or kBytesPerStep bytes built, copied, compared or
// scanned (about as long as one expression, measured). A render gets kRenderBaseSteps
// plus kRenderStepsPerInput per unit of its input (deep_weight of the messages, tools...),
// so a long conversation may take as many passes over its text as a short one.
// charge() throws JinjaError once the steps are spent.
class Budget {
 public:
  explicit Budget(int64_t steps) : limit_(steps), left_(steps) {}
  void charge(int64_t steps) {
    left_ -= steps;
    if (left_ < 0) exhausted();
  }
  void charge_bytes(size_t n_bytes) { charge(static_cast<int64_t>(n_bytes / kBytesPerStep)); }
  int64_t limit() const { return limit_; }
  int64_t used() const { return limit_ - left_; }

 private:
  [[noreturn]] void exhausted() const;
  int64_t limit_;
  int64_t left_;
};

// Throws JinjaError unless `n` bytes / items are within kMaxStringBytes / kMaxListItems;
// `what` names the operation ("'*'", "filter 'join'", "the output").
void check_string_size(uint64_t n, std::string_view what);
void check_list_size(uint64_t n, std::string_view what);

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
  Value(const Value&) = default;
  Value(Value&&) noexcept = default;
  Value& operator=(const Value&) = default;
  Value& operator=(Value&&) noexcept = default;
  // Frees a chain of lists in lists ([[[...]]] built in a loop) without one stack frame
  // per level.
  ~Value();

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
  // Nesting beyond kMaxValueNesting (a list holding itself) or text beyond
  // kMaxStringBytes throws JinjaError; `budget` (optional) pays for the items visited.
  std::string to_output(Budget* budget = nullptr) const;
  // json.dumps(v, ensure_ascii=False) with HF's separators; indent < 0: one line.
  // Bounded as to_output.
  std::string to_json(int indent = -1, Budget* budget = nullptr) const;
  // A shallow size for charging a Budget: string bytes / kBytesPerStep, list or dict items.
  int64_t weight() const;
  // Type name for messages ("string", "list", ...).
  std::string_view type_name() const;

  friend bool operator==(const Value& a, const Value& b) { return equal(a, b, nullptr); }
  // Python's ==, bounded as to_output (a list holding itself throws instead of recursing).
  friend bool equal(const Value& a, const Value& b, Budget* budget);

 private:
  // Moves out the items that are non-empty lists or dicts of the list or dict only this
  // value holds, and empties it.
  void take_children(std::vector<Value>& out);

  Kind kind_ = Kind::Undefined;
  int64_t int_ = 0;
  double float_ = 0;
  std::shared_ptr<std::string> str_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Callable> fn_;
};

bool equal(const Value& a, const Value& b, Budget* budget);

// Whether `v` is `container` (a list or dict) or holds it at any depth. Lists and dicts
// are shared, so `l.append(l)` or `{% set ns.x = ns %}` would make a cycle, which
// reference counting never frees: the renderer refuses those instead. Each list or dict
// is visited once, paid from `budget`.
bool holds(const Value& v, const Value& container, Budget& budget);

// The weight of `v` and of everything it holds (each list or dict counted once): what a
// render's Budget grows by for its globals.
int64_t deep_weight(const Value& v);

// Python's repr of a float ("0.1", "1.0", "1e+20").
std::string format_float(double d);

}  // namespace runnel::jinja
