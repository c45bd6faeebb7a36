// Walks the parsed template (jinja_ast.h) and writes its output. Scoping follows
// Jinja: a for-loop body and a macro call get their own frame (a `set` inside them
// does not leak out, which is why templates use namespace()); `if` does not.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "core/chat/jinja.h"
#include "core/chat/jinja_ast.h"
#include "core/chat/jinja_builtins.h"

namespace runnel::jinja {
namespace {

using Frame = std::vector<std::pair<std::string, Value>>;

enum class Flow { Normal, Break, Continue };

// Macro calls nested deeper than this fail with an error, as Python's Jinja fails with a
// RecursionError: a recursive macro (Hermes' json_to_python_type walks a tool's schema)
// that never ends would otherwise overflow the stack (found by fuzzing:
// tests/fuzz/corpus/chat_messages/regression-macro-recursion). Real schemas nest a few levels.
constexpr int kMaxMacroDepth = 64;

// What one loop iteration costs in Budget steps: binding the variables and building the
// `loop` dict (nine entries) is about as much work as ten small expressions.
constexpr int64_t kLoopIterationSteps = 10;

// Throws JinjaError where integer arithmetic would go past 64 bits: Python's ints do not
// overflow, and ours must not either (signed overflow is undefined behaviour).
void check_overflow(bool overflowed, const std::string& op) {
  if (overflowed) throw JinjaError("chat template: integer overflow in '" + op + "' (more than 64 bits)");
}

class Renderer {
 public:
  Renderer(const Frame& globals, int64_t now) : budget_(budget_for(globals)), now_(now) {
    frames_.push_back(globals);
    Frame builtins = builtin_globals(now_);
    for (auto& entry : builtins) frames_[0].push_back(std::move(entry));
  }

  void run(const Body& body, std::string& out) {
    if (exec(body, out) != Flow::Normal) throw JinjaError("chat template: 'break' or 'continue' outside a loop");
  }

  const Budget& budget() const { return budget_; }

  static Budget budget_for(const Frame& globals) {
    int64_t weight = 0;
    for (const auto& [name, v] : globals) weight += deep_weight(v);
    return Budget(kRenderBaseSteps + kRenderStepsPerInput * weight);
  }

 private:
  [[noreturn]] static void fail(const Expr& e, const std::string& what) {
    throw JinjaError("chat template: " + what + " at line " + std::to_string(e.line));
  }

  Value lookup(const std::string& name) const {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f) {
      for (auto it = f->rbegin(); it != f->rend(); ++it) {
        if (it->first == name) return it->second;
      }
    }
    return Value();
  }

  void assign(const std::string& name, Value v) {
    Frame& f = frames_.back();
    for (auto& [k, old] : f) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    f.emplace_back(name, std::move(v));
  }

  Flow exec(const Body& body, std::string& out) {
    for (const Stmt& s : body) {
      const Flow flow = exec(s, out);
      if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
  }

  // Appends to the rendered text (or a macro's), which may not outgrow kMaxStringBytes.
  void emit(std::string& out, const std::string& text) {
    check_string_size(out.size() + text.size(), "the rendered text");
    budget_.charge_bytes(text.size());
    out += text;
  }

  Flow exec(const Stmt& s, std::string& out) {
    budget_.charge(1);
    switch (s.kind) {
      case Stmt::Kind::Text: emit(out, s.text); return Flow::Normal;
      case Stmt::Kind::Output: emit(out, eval(*s.expr).to_output(&budget_)); return Flow::Normal;
      case Stmt::Kind::If:
        for (const auto& [cond, body] : s.branches) {
          if (!cond || eval(*cond).truthy()) return exec(body, out);
        }
        return Flow::Normal;
      case Stmt::Kind::For: return exec_for(s, out);
      case Stmt::Kind::Set: {
        Value v = eval(*s.expr);
        if (s.attr.empty()) {
          assign(s.text, std::move(v));
          return Flow::Normal;
        }
        Value target = lookup(s.text);
        if (!target.is_dict() || !target.as_dict().is_namespace) {
          fail(*s.expr, "'set " + s.text + "." + s.attr + "' needs a namespace() object, got " +
                            std::string(target.type_name()));
        }
        if (holds(v, target, budget_)) {
          fail(*s.expr, "'set " + s.text + "." + s.attr + "' would put the namespace inside itself");
        }
        target.as_dict().set(s.attr, std::move(v));
        return Flow::Normal;
      }
      case Stmt::Kind::Macro: assign(s.text, make_macro(s)); return Flow::Normal;
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  }

  Flow exec_for(const Stmt& s, std::string& out) {
    const Value seq = eval(*s.expr);
    budget_.charge(seq.weight());
    List items;
    if (seq.is_string()) check_list_size(seq.as_string().size(), "looping over a string");
    if (seq.is_list()) {
      items = seq.as_list();
    } else if (seq.is_dict()) {
      for (const auto& [k, v] : seq.as_dict().items) items.emplace_back(k);  // iterating a dict: keys
    } else if (seq.is_string()) {
      for (char c : seq.as_string()) items.emplace_back(std::string(1, c));
    } else if (!seq.is_undefined() && !seq.is_none()) {
      fail(*s.expr, "cannot loop over a " + std::string(seq.type_name()));
    }
    frames_.emplace_back();
    const auto bind = [&](const Value& item) {
      if (s.vars.size() == 1) {
        assign(s.vars[0], item);
        return;
      }
      if (!item.is_list() || item.as_list().size() != 2) {
        fail(*s.expr, "cannot unpack a " + std::string(item.type_name()) + " into two loop variables");
      }
      assign(s.vars[0], item.as_list()[0]);
      assign(s.vars[1], item.as_list()[1]);
    };
    if (s.filter) {
      List kept;
      for (const Value& item : items) {
        budget_.charge(1);
        bind(item);
        if (eval(*s.filter).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    Flow result = Flow::Normal;
    for (int64_t i = 0; i < n; ++i) {
      budget_.charge(kLoopIterationSteps);
      bind(items[i]);
      Dict loop;  // distinct keys: appended without Dict::set's search
      loop.items = {{"index", Value(i + 1)},
                    {"index0", Value(i)},
                    {"revindex", Value(n - i)},
                    {"revindex0", Value(n - i - 1)},
                    {"first", Value(i == 0)},
                    {"last", Value(i == n - 1)},
                    {"length", Value(n)},
                    {"previtem", i > 0 ? items[i - 1] : Value()},
                    {"nextitem", i + 1 < n ? items[i + 1] : Value()}};
      assign("loop", Value(std::move(loop)));
      const Flow flow = exec(s.body, out);
      if (flow == Flow::Break) break;
    }
    frames_.pop_back();
    if (n == 0) result = exec(s.else_body, out);
    return result;
  }

  Value make_macro(const Stmt& s) {
    const Stmt* macro = &s;
    return Value(Callable([this, macro](std::vector<Value>& args, std::vector<std::pair<std::string, Value>>& kwargs) {
      if (args.size() > macro->params.size()) {
        throw JinjaError("chat template: macro '" + macro->text + "' takes " +
                         std::to_string(macro->params.size()) + " arguments, got " + std::to_string(args.size()));
      }
      if (macro_depth_ >= kMaxMacroDepth) {
        throw JinjaError("chat template: macro '" + macro->text + "' calls nest deeper than " +
                         std::to_string(kMaxMacroDepth) + " (endless recursion?)");
      }
      ++macro_depth_;
      struct DepthGuard {
        int& depth;
        ~DepthGuard() { --depth; }
      } guard{macro_depth_};
      // Macros see the template's globals, not the caller's locals.
      std::vector<Frame> saved;
      saved.swap(frames_);
      frames_.push_back(saved[0]);
      frames_.emplace_back();
      for (size_t i = 0; i < macro->params.size(); ++i) {
        const auto& [name, def] = macro->params[i];
        Value v;
        if (i < args.size()) {
          v = args[i];
        } else {
          bool found = false;
          for (auto& [k, kv] : kwargs) {
            if (k == name) {
              v = kv;
              found = true;
            }
          }
          if (!found && def) v = eval(*def);
        }
        assign(name, std::move(v));
      }
      std::string out;
      try {
        exec(macro->body, out);
      } catch (...) {
        frames_.swap(saved);
        throw;
      }
      saved[0] = frames_[0];
      frames_.swap(saved);
      return Value(std::move(out));
    }));
  }

  Value eval(const Expr& e) {
    budget_.charge(1);
    switch (e.kind) {
      case Expr::Kind::Literal: return e.literal;
      case Expr::Kind::Name: return lookup(e.name);
      case Expr::Kind::Attr: return get_attr(eval(*e.args[0]), e.name);
      case Expr::Kind::Index: return get_item(e, eval(*e.args[0]), eval(*e.args[1]));
      case Expr::Kind::Slice: return slice(e);
      case Expr::Kind::Call: return call(e);
      case Expr::Kind::Filter: {
        Value input = eval(*e.args[0]);
        auto [args, kwargs] = eval_args(e);
        // A filter reads its input (and may copy it): paid by its size, as is its result;
        // those that look at one item or none read nothing.
        static constexpr std::string_view kConstantTime[] = {"length", "count", "default", "d", "safe", "first", "last"};
        if (std::find(std::begin(kConstantTime), std::end(kConstantTime), e.name) == std::end(kConstantTime)) {
          budget_.charge(input.weight());
        }
        Value result = apply_filter(e.name, input, args, kwargs, e.line, budget_,
                                    [this](const std::string& test, const Value& v, std::vector<Value>& targs) {
                                      return apply_test(test, v, targs, 0, budget_);
                                    });
        budget_.charge(result.weight());
        return result;
      }
      case Expr::Kind::Test: {
        // `x is defined` must not fail on undefined x.
        Value input = eval(*e.args[0]);
        auto [args, kwargs] = eval_args(e);
        const bool r = apply_test(e.name, input, args, e.line, budget_);
        return Value(e.negated ? !r : r);
      }
      case Expr::Kind::Unary: {
        Value v = eval(*e.args[0]);
        if (e.name == "not") return Value(!v.truthy());
        if (v.kind() == Value::Kind::Int) {
          int64_t r = 0;
          check_overflow(__builtin_sub_overflow(int64_t{0}, v.as_int(), &r), "-");
          return Value(r);
        }
        if (v.kind() == Value::Kind::Float) return Value(-v.as_number());
        fail(e, "cannot negate a " + std::string(v.type_name()));
      }
      case Expr::Kind::Binary: return binary(e);
      case Expr::Kind::Ternary: {
        if (eval(*e.args[0]).truthy()) return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2]) : Value();
      }
      case Expr::Kind::ListLit: {
        List l;
        for (const auto& a : e.args) l.push_back(eval(*a));
        budget_.charge(static_cast<int64_t>(l.size()));
        return Value(std::move(l));
      }
      case Expr::Kind::DictLit: {
        Dict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value k = eval(*e.args[i]);
          if (!k.is_string()) fail(e, "dict keys must be strings, got " + std::string(k.type_name()));
          d.set(k.as_string(), eval(*e.args[i + 1]));
        }
        return Value(std::move(d));
      }
    }
    return Value();
  }

  std::pair<std::vector<Value>, std::vector<std::pair<std::string, Value>>> eval_args(const Expr& e) {
    std::vector<Value> args;
    std::vector<std::pair<std::string, Value>> kwargs;
    for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i]));
    for (const auto& [k, v] : e.kwargs) kwargs.emplace_back(k, eval(*v));
    return {std::move(args), std::move(kwargs)};
  }

  static Value get_attr(const Value& obj, const std::string& name) {
    if (obj.is_dict()) {
      const Value* v = obj.as_dict().find(name);
      return v ? *v : Value();
    }
    return Value();  // undefined (chainable: undefined.x is undefined too)
  }

  Value get_item(const Expr& e, const Value& obj, const Value& key) {
    if (obj.is_dict()) {
      if (!key.is_string()) return Value();
      const Value* v = obj.as_dict().find(key.as_string());
      return v ? *v : Value();
    }
    if (obj.is_list() || obj.is_string()) {
      if (key.kind() != Value::Kind::Int) fail(e, "list indices must be integers, got " + std::string(key.type_name()));
      const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.as_list().size())
                                      : static_cast<int64_t>(obj.as_string().size());
      int64_t i = key.as_int();
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value();
      return obj.is_list() ? obj.as_list()[i] : Value(std::string(1, obj.as_string()[i]));
    }
    if (obj.is_undefined() || obj.is_none()) return Value();
    fail(e, "cannot index a " + std::string(obj.type_name()));
  }

  Value slice(const Expr& e) {
    const Value obj = eval(*e.args[0]);
    const auto part = [&](size_t k, int64_t fallback) {
      if (!e.args[k]) return fallback;
      const Value v = eval(*e.args[k]);
      if (v.is_none()) return fallback;
      if (v.kind() != Value::Kind::Int) fail(e, "slice bounds must be integers");
      return v.as_int();
    };
    if (!obj.is_list() && !obj.is_string()) {
      if (obj.is_undefined() || obj.is_none()) return Value();
      fail(e, "cannot slice a " + std::string(obj.type_name()));
    }
    const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.as_list().size())
                                    : static_cast<int64_t>(obj.as_string().size());
    const int64_t step = part(3, 1);
    if (step == 0) fail(e, "slice step cannot be zero");
    const auto clamp = [&](int64_t i, bool is_stop) {
      if (i < 0) i += n;
      if (step > 0) return std::clamp<int64_t>(i, 0, n);
      return std::clamp<int64_t>(i, -1, n - 1) + (is_stop ? 0 : 0);
    };
    const int64_t start = e.args[1] ? clamp(part(1, 0), false) : (step > 0 ? 0 : n - 1);
    const int64_t stop = e.args[2] ? clamp(part(2, n), true) : (step > 0 ? n : -1);
    if (obj.is_string() && step == 1) {  // s[a:b]: one copy
      const std::string& text = obj.as_string();
      const size_t from = static_cast<size_t>(start), n_bytes = static_cast<size_t>(std::max<int64_t>(0, stop - start));
      budget_.charge_bytes(n_bytes);
      return Value(text.substr(from, n_bytes));
    }
    List l;
    std::string s;
    // i stays within [-1, n]: a step beyond that ends the loop without overflowing.
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
      budget_.charge(1);
      if (obj.is_list()) l.push_back(obj.as_list()[i]);
      else s += obj.as_string()[i];
      if (step > 0 ? step >= stop - i : step <= stop - i) break;
      i += step;
    }
    return obj.is_list() ? Value(std::move(l)) : Value(std::move(s));
  }

  Value call(const Expr& e) {
    auto [args, kwargs] = eval_args(e);
    const Expr& callee = *e.args[0];
    Value result;
    if (callee.kind == Expr::Kind::Attr) {
      Value obj = eval(*callee.args[0]);
      if (obj.is_string() || obj.is_list() || (obj.is_dict() && !obj.as_dict().find(callee.name))) {
        // A method reads its object (str.find, list.index ...): paid by its size;
        // list.append only adds to it.
        if (callee.name != "append") budget_.charge(obj.weight());
        result = call_method(obj, callee.name, args, kwargs, e.line, budget_);
      } else {
        Value fn = get_attr(obj, callee.name);
        if (!fn.is_callable()) fail(e, "'" + callee.name + "' is not callable");
        result = fn.as_callable()(args, kwargs);
      }
    } else {
      Value fn = eval(callee);
      if (!fn.is_callable()) {
        fail(e, callee.kind == Expr::Kind::Name ? "unknown function '" + callee.name + "'" : "calling a non-function");
      }
      result = fn.as_callable()(args, kwargs);
    }
    budget_.charge(result.weight());
    return result;
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value a = eval(*e.args[0]);
      return a.truthy() ? eval(*e.args[1]) : a;
    }
    if (op == "or") {
      Value a = eval(*e.args[0]);
      return a.truthy() ? a : eval(*e.args[1]);
    }
    const Value a = eval(*e.args[0]);
    const Value b = eval(*e.args[1]);
    if (op == "==") return Value(equal(a, b, &budget_));
    if (op == "!=") return Value(!equal(a, b, &budget_));
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.is_string()) {
        if (!a.is_string()) fail(e, "'in <string>' needs a string on the left");
        budget_.charge(b.weight());
        found = b.as_string().find(a.as_string()) != std::string::npos;
      } else if (b.is_list()) {
        for (const Value& item : b.as_list()) {
          if ((found = equal(item, a, &budget_))) break;
        }
      } else if (b.is_dict()) {
        found = a.is_string() && b.as_dict().find(a.as_string()) != nullptr;
      } else if (!b.is_undefined() && !b.is_none()) {
        fail(e, "'in' needs a string, list or dict, got " + std::string(b.type_name()));
      }
      return Value(op == "in" ? found : !found);
    }
    if (op == "~") {
      std::string s = a.is_string() ? a.as_string() : a.to_output(&budget_);
      const std::string right = b.is_string() ? b.as_string() : b.to_output(&budget_);
      check_string_size(s.size() + right.size(), "'~'");
      budget_.charge_bytes(s.size() + right.size());
      s += right;
      return Value(std::move(s));
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int cmp = 0;
      if (a.is_number() && b.is_number()) {
        cmp = a.as_number() < b.as_number() ? -1 : (a.as_number() > b.as_number() ? 1 : 0);
      } else if (a.is_string() && b.is_string()) {
        cmp = a.as_string().compare(b.as_string());
      } else {
        fail(e, "cannot compare " + std::string(a.type_name()) + " and " + std::string(b.type_name()));
      }
      if (op == "<") return Value(cmp < 0);
      if (op == "<=") return Value(cmp <= 0);
      if (op == ">") return Value(cmp > 0);
      return Value(cmp >= 0);
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        check_string_size(a.as_string().size() + b.as_string().size(), "'+'");
        budget_.charge(a.weight() + b.weight());
        return Value(a.as_string() + b.as_string());
      }
      if (a.is_list() && b.is_list()) {
        check_list_size(a.as_list().size() + b.as_list().size(), "'+'");
        budget_.charge(a.weight() + b.weight());
        List l = a.as_list();
        l.insert(l.end(), b.as_list().begin(), b.as_list().end());
        return Value(std::move(l));
      }
    }
    if (op == "*" && a.is_string() && b.kind() == Value::Kind::Int) {
      // Checked before building: "x" * 10**12 must not start allocating.
      const size_t n_bytes = a.as_string().size();
      const int64_t times = n_bytes == 0 ? 0 : std::max<int64_t>(0, b.as_int());  // "" * 10**18: no loop
      if (n_bytes > 0 && static_cast<uint64_t>(times) > kMaxStringBytes / n_bytes) {
        fail(e, "'*' would make a string of " + std::to_string(n_bytes) + " x " + std::to_string(times) +
                    " bytes; at most " + std::to_string(kMaxStringBytes) + " are allowed");
      }
      budget_.charge_bytes(n_bytes * static_cast<size_t>(times));
      // By doubling: "x" * 10**7 is a few copies, not ten million appends.
      const size_t total = n_bytes * static_cast<size_t>(times);
      if (total == 0) return Value(std::string());
      std::string s;
      s.reserve(total);
      s = a.as_string();
      while (s.size() * 2 <= total) s += s;
      s.append(s, 0, total - s.size());
      return Value(std::move(s));
    }
    if (!a.is_number() || !b.is_number()) {
      fail(e, "unsupported operand types for " + op + ": " + std::string(a.type_name()) + " and " +
                  std::string(b.type_name()));
    }
    const bool ints = a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int;
    const double x = a.as_number(), y = b.as_number();
    const int64_t i = a.as_int(), j = b.as_int();
    int64_t r = 0;
    if (ints && (op == "+" || op == "-" || op == "*")) {
      const bool overflowed = op == "+"   ? __builtin_add_overflow(i, j, &r)
                              : op == "-" ? __builtin_sub_overflow(i, j, &r)
                                          : __builtin_mul_overflow(i, j, &r);
      check_overflow(overflowed, op);
      return Value(r);
    }
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "**") {
      if (!ints || j < 0) return Value(std::pow(x, y));
      const double p = std::pow(x, y);  // exact below 2**53; beyond, 64 bits are the bound
      check_overflow(!(p >= -9.2233720368547758e18 && p < 9.2233720368547758e18), op);
      return Value(static_cast<int64_t>(p));
    }
    if (y == 0) fail(e, "division by zero");
    if (op == "/") return Value(x / y);
    check_overflow(ints && j == -1 && i == INT64_MIN, op);  // the one quotient past 64 bits
    if (op == "//") {
      if (ints) return Value(i / j - ((i % j != 0) && ((i < 0) != (j < 0))));  // floor, as Python
      return Value(std::floor(x / y));
    }
    // % with Python's sign convention (result takes the divisor's sign).
    if (ints) {
      r = i % j;
      if (r != 0 && ((r < 0) != (j < 0))) r += j;
      return Value(r);
    }
    return Value(x - y * std::floor(x / y));
  }

  std::vector<Frame> frames_;
  Budget budget_;
  int macro_depth_ = 0;  // macro calls in progress (kMaxMacroDepth)
  int64_t now_;
};

}  // namespace

Template::Template(std::string_view source) {
  auto body = std::make_shared<Body>(parse_template(source));
  check_names(*body);
  body_ = std::move(body);
}

std::string Template::render(const std::vector<std::pair<std::string, Value>>& globals, int64_t now,
                             int64_t* steps_used) const {
  Renderer r(globals, now);
  std::string out;
  r.run(*body_, out);
  if (steps_used) *steps_used = r.budget().used();
  return out;
}

}  // namespace runnel::jinja
