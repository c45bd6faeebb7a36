// The parsed form of a template: statements holding expressions. Built once by
// parse_template (jinja_parser.cpp), walked by the renderer (jinja_render.cpp).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/chat/jinja_value.h"

namespace runnel::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,  // literal
    Name,     // name
    Attr,     // args[0].name
    Index,    // args[0][args[1]]
    Slice,    // args[0][args[1]:args[2]:args[3]] (null parts are omitted)
    Call,     // args[0](args[1..], kwargs)
    Filter,   // args[0] | name(args[1..], kwargs)
    Test,     // args[0] is [not] name(args[1..])
    Unary,    // name ("not", "-", "+") args[0]
    Binary,   // args[0] name args[1] (and, or, ==, in, not in, +, ~, ...)
    Ternary,  // args[1] if args[0] else args[2] (args[2] may be null)
    ListLit,  // [args...]
    DictLit,  // {args[0]: args[1], args[2]: args[3], ...}
  };
  Kind kind = Kind::Literal;
  int line = 0;
  Value literal;
  std::string name;
  bool negated = false;  // Test: "is not"
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct Stmt {
  enum class Kind { Text, Output, If, For, Set, Macro, Break, Continue };
  Kind kind = Kind::Text;
  int line = 0;
  std::string text;  // Text: the characters; Set: variable; Macro: name
  std::string attr;  // Set: "ns.attr" target's attribute (empty: plain variable)
  ExprPtr expr;      // Output, Set (value), For (iterable)
  // If: (condition or null for else, body) in order.
  std::vector<std::pair<ExprPtr, Body>> branches;
  // For: loop variables (1 or 2), optional filter, body, else body.
  std::vector<std::string> vars;
  ExprPtr filter;
  Body body;
  Body else_body;
  // Macro: parameters with optional defaults.
  std::vector<std::pair<std::string, ExprPtr>> params;
};

// Parses `source` with HF transformers' settings (trim_blocks, lstrip_blocks).
// Throws JinjaError naming the construct and line for anything outside the subset.
Body parse_template(std::string_view source);

}  // namespace runnel::jinja
