// Walks the parsed template (jinja_ast.h) and writes its output. Scoping follows
// Jinja: a for-loop body and a macro call get their own frame (a `set` inside them
// does not leak out, which is why templates use namespace()); `if` does not.
#include <algorithm>
#include <cmath>
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

class Renderer {
 public:
  Renderer(const Frame& globals, int64_t now) : now_(now) {
    frames_.push_back(globals);
    Frame builtins = builtin_globals(now_);
    for (auto& entry : builtins) frames_[0].push_back(std::move(entry));
  }

  void run(const Body& body, std::string& out) {
    if (exec(body, out) != Flow::Normal) throw JinjaError("chat template: 'break' or 'continue' outside a loop");
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

  Flow exec(const Stmt& s, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::Text: out += s.text; return Flow::Normal;
      case Stmt::Kind::Output: out += eval(*s.expr).to_output(); return Flow::Normal;
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
    List items;
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
        bind(item);
        if (eval(*s.filter).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    Flow result = Flow::Normal;
    for (int64_t i = 0; i < n; ++i) {
      bind(items[i]);
      Dict loop;
      loop.set("index", Value(i + 1));
      loop.set("index0", Value(i));
      loop.set("revindex", Value(n - i));
      loop.set("revindex0", Value(n - i - 1));
      loop.set("first", Value(i == 0));
      loop.set("last", Value(i == n - 1));
      loop.set("length", Value(n));
      loop.set("previtem", i > 0 ? items[i - 1] : Value());
      loop.set("nextitem", i + 1 < n ? items[i + 1] : Value());
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
        return apply_filter(e.name, input, args, kwargs, e.line, [](const std::string& test, const Value& v, std::vector<Value>& targs) {
          return apply_test(test, v, targs, 0);
        });
      }
      case Expr::Kind::Test: {
        // `x is defined` must not fail on undefined x.
        Value input = eval(*e.args[0]);
        auto [args, kwargs] = eval_args(e);
        const bool r = apply_test(e.name, input, args, e.line);
        return Value(e.negated ? !r : r);
      }
      case Expr::Kind::Unary: {
        Value v = eval(*e.args[0]);
        if (e.name == "not") return Value(!v.truthy());
        if (v.kind() == Value::Kind::Int) return Value(-v.as_int());
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
    List l;
    std::string s;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (obj.is_list()) l.push_back(obj.as_list()[i]);
      else s += obj.as_string()[i];
    }
    return obj.is_list() ? Value(std::move(l)) : Value(std::move(s));
  }

  Value call(const Expr& e) {
    auto [args, kwargs] = eval_args(e);
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::Attr) {
      Value obj = eval(*callee.args[0]);
      if (obj.is_string() || obj.is_list() || (obj.is_dict() && !obj.as_dict().find(callee.name))) {
        return call_method(obj, callee.name, args, kwargs, e.line);
      }
      Value fn = get_attr(obj, callee.name);
      if (!fn.is_callable()) fail(e, "'" + callee.name + "' is not callable");
      return fn.as_callable()(args, kwargs);
    }
    Value fn = eval(callee);
    if (!fn.is_callable()) {
      fail(e, callee.kind == Expr::Kind::Name ? "unknown function '" + callee.name + "'" : "calling a non-function");
    }
    return fn.as_callable()(args, kwargs);
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
    if (op == "==") return Value(a == b);
    if (op == "!=") return Value(!(a == b));
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.is_string()) {
        if (!a.is_string()) fail(e, "'in <string>' needs a string on the left");
        found = b.as_string().find(a.as_string()) != std::string::npos;
      } else if (b.is_list()) {
        found = std::find(b.as_list().begin(), b.as_list().end(), a) != b.as_list().end();
      } else if (b.is_dict()) {
        found = a.is_string() && b.as_dict().find(a.as_string()) != nullptr;
      } else if (!b.is_undefined() && !b.is_none()) {
        fail(e, "'in' needs a string, list or dict, got " + std::string(b.type_name()));
      }
      return Value(op == "in" ? found : !found);
    }
    if (op == "~") return Value(a.to_output() + b.to_output());
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
      if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
      if (a.is_list() && b.is_list()) {
        List l = a.as_list();
        l.insert(l.end(), b.as_list().begin(), b.as_list().end());
        return Value(std::move(l));
      }
    }
    if (op == "*" && a.is_string() && b.kind() == Value::Kind::Int) {
      std::string s;
      for (int64_t i = 0; i < b.as_int(); ++i) s += a.as_string();
      return Value(std::move(s));
    }
    if (!a.is_number() || !b.is_number()) {
      fail(e, "unsupported operand types for " + op + ": " + std::string(a.type_name()) + " and " +
                  std::string(b.type_name()));
    }
    const bool ints = a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int;
    const double x = a.as_number(), y = b.as_number();
    if (op == "+") return ints ? Value(a.as_int() + b.as_int()) : Value(x + y);
    if (op == "-") return ints ? Value(a.as_int() - b.as_int()) : Value(x - y);
    if (op == "*") return ints ? Value(a.as_int() * b.as_int()) : Value(x * y);
    if (op == "**") return ints && b.as_int() >= 0 ? Value(static_cast<int64_t>(std::pow(x, y))) : Value(std::pow(x, y));
    if (y == 0) fail(e, "division by zero");
    if (op == "/") return Value(x / y);
    if (op == "//") {
      return ints ? Value(static_cast<int64_t>(std::floor(x / y))) : Value(std::floor(x / y));
    }
    // % with Python's sign convention (result takes the divisor's sign).
    if (ints) {
      int64_t r = a.as_int() % b.as_int();
      if (r != 0 && ((r < 0) != (b.as_int() < 0))) r += b.as_int();
      return Value(r);
    }
    return Value(x - y * std::floor(x / y));
  }

  std::vector<Frame> frames_;
  int macro_depth_ = 0;  // macro calls in progress (kMaxMacroDepth)
  int64_t now_;
};

}  // namespace

Template::Template(std::string_view source) {
  auto body = std::make_shared<Body>(parse_template(source));
  check_names(*body);
  body_ = std::move(body);
}

std::string Template::render(const std::vector<std::pair<std::string, Value>>& globals, int64_t now) const {
  Renderer r(globals, now);
  std::string out;
  r.run(*body_, out);
  return out;
}

}  // namespace runnel::jinja
